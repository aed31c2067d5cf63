"""What a chunked cold write leaves in the daemon's heap, with and without a heap trim after each transaction.
-> bench/results/cold_write_trim.json.

    python bench/cold_write_trim.py [--tree DIR] [--limit N] [--rounds 2] [--buffer-pool-mb 384]

The files of `--tree` (the standard library by default) that NEXUS parses are extracted once (two processes),
pickled, and each round runs two fresh processes, one per mode, in alternating order: each loads the facts,
resolves them, and writes them cold (`graphwrite.write_cold`) into a new Kuzu database with the daemon's buffer
pool and malloc arena limit. Its RSS is read before the write, after the rows are made (before the first COPY),
after the write, and its peak sampled every 50 ms. "trim" is the code as it is (`gcpause.trim_heap` after each
transaction of `_write_cold_chunked`); "no-trim" makes that call a no-op. The write's seconds are reported too
(a trim walks the heap).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import write_result  # noqa: E402
from bench.memory_bench import mem_mb  # noqa: E402


def rss_mb() -> float:
    return mem_mb(os.getpid())["rss"]


def _extract(args: tuple[str, str]) -> Any:
    from nexusd.parse.extract import extract

    root, rel = args
    with open(os.path.join(root, rel), "rb") as f:
        return extract(rel, f.read())


def collect(root: str, limit: int) -> list[str]:
    from nexusd.parse.languages import parsed_language

    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in {"site-packages", "__pycache__", ".git"})
        for name in sorted(filenames):
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            if parsed_language(rel) is not None:
                out.append(rel)
    return out[:limit] if limit else out


def child(facts_path: str, mode: str, pool_mb: int) -> dict[str, Any]:
    """One cold write in this process (see the module docstring)."""
    from nexusd.parse import gcpause

    gcpause.limit_arenas(2)
    import gc

    from nexusd.resolve import RepoIndex
    from nexusd.store import Store
    from nexusd.sync import graphwrite
    from nexusd.sync.indexer import intern_facts

    with open(facts_path, "rb") as f:
        facts = {facts.path: intern_facts(facts) for facts in pickle.load(f)}
    index = RepoIndex("r", Path("/nonexistent"))
    for one in facts.values():
        index.set_file(one)
    resolutions = {path: index.resolve_file(path) for path in sorted(facts)}
    index.release_memo()
    gc.collect()
    gc.freeze()
    if mode == "no-trim":
        gcpause.trim_heap = lambda: None  # type: ignore[assignment]
    marks: dict[str, float] = {}
    close = graphwrite.ColdRows.close

    def closing(self: Any) -> None:
        marks.setdefault("rows_made", rss_mb())
        close(self)

    graphwrite.ColdRows.close = closing  # type: ignore[method-assign]
    peak = [0.0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mb())
            time.sleep(0.05)

    with tempfile.TemporaryDirectory() as work:
        store = Store(Path(work) / "db.kz", buffer_pool_mb=pool_mb)
        store.ensure_schema()
        conn = store.connect()
        conn.execute("CREATE (:Repository {id: 'r'})")
        batch = graphwrite.Batch("r", changed=facts, resolutions=resolutions, facts=facts)
        threading.Thread(target=sample, daemon=True).start()
        before = rss_mb()
        t0 = time.perf_counter()
        counts = graphwrite.write_cold(conn, batch)
        seconds = time.perf_counter() - t0
        stop.set()
        after = rss_mb()
        store.close()
    return {"mode": mode, "rss_before_mb": round(before, 1), "rss_rows_made_mb": round(marks.get("rows_made", 0), 1),
            "rss_after_mb": round(after, 1), "rss_peak_mb": round(max(peak[0], after), 1),
            "grew_mb": round(after - before, 1), "peak_over_before_mb": round(max(peak[0], after) - before, 1),
            "write_s": round(seconds, 2), "counts": counts}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", default=sysconfig.get_paths()["stdlib"])
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--buffer-pool-mb", type=int, default=384)
    ap.add_argument("--out", default="cold_write_trim")
    ap.add_argument("--child", nargs=2, metavar=("FACTS", "MODE"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.buffer_pool_mb)))
        return
    root = os.path.abspath(args.tree)
    files = collect(root, args.limit)
    with Pool(2) as pool:
        facts = list(pool.imap_unordered(_extract, [(root, rel) for rel in files], chunksize=32))
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as work:
        facts_path = os.path.join(work, "facts.pkl")
        with open(facts_path, "wb") as f:
            pickle.dump(facts, f, protocol=5)
        del facts
        for r in range(args.rounds):
            for mode in ("trim", "no-trim") if r % 2 == 0 else ("no-trim", "trim"):
                proc = subprocess.run(
                    [sys.executable, __file__, "--buffer-pool-mb", str(args.buffer_pool_mb), "--child", facts_path, mode],
                    capture_output=True, text=True, check=True,
                )
                run = json.loads(proc.stdout.strip().splitlines()[-1])
                run["round"] = r
                runs.append(run)
                print(json.dumps(run), flush=True)
    summary: dict[str, Any] = {}
    for mode in ("trim", "no-trim"):
        mine = [run for run in runs if run["mode"] == mode]
        summary[mode] = {key: {"min": min(run[key] for run in mine), "median": statistics.median(run[key] for run in mine)}
                         for key in ("grew_mb", "peak_over_before_mb", "write_s")}  # fmt: skip
    path = write_result(args.out, {"tree": root, "files": len(files), "buffer_pool_mb": args.buffer_pool_mb,
                                   "runs": runs, "summary": summary})  # fmt: skip
    print(json.dumps(summary, indent=1))
    print(f"-> {path}")


if __name__ == "__main__":
    main()
