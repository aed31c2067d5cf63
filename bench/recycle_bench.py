"""The daemon after a cold index, as a user meets it: the restart in place that gives back what the index
fragmented, with the symbol table rebuilt at once (`recycle.Recycler`, `LiveSync.rebuild_tables`).

    .venv/bin/python bench/recycle_bench.py [--corpus stdlib] [--out recycle_bench]

One daemon with the defaults but a 30 s quiet period (`NEXUS_RECYCLE_QUIET_S`, its default), the standard library
(a copy) indexed and queried, then sampled every 5 s for `--watch` seconds: RSS before and after the restart in
place, when it came, how long the table's rebuild took (from the daemon's log), the RSS after the next query, the
next edit's time (no rebuild left to pay) and the RSS settled after it (the snapshot's compaction included).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexus_client import connect  # noqa: E402

from bench.harness import BenchDaemon, write_result  # noqa: E402
from bench.index_bench import copy_stdlib  # noqa: E402
from bench.memory_bench import QUERIES, mem_mb, settled  # noqa: E402


def run(root: Path, watch_s: float) -> dict[str, Any]:
    out: dict[str, Any] = {"files": None}
    with BenchDaemon(env={"NEXUS_RECYCLE_QUIET_S": "30"}) as d:
        assert d.proc is not None
        pid = d.proc.pid
        with connect(d.dirs, timeout=3600) as c:
            r = c.request("index", {"repo": str(root)}, timeout=3600)
            out["files"], out["symbols"] = r["written"].get("files"), r["written"].get("symbols")
            for q in QUERIES:
                c.request("locate", {"repo": str(root), "query": q, "limit": 20}, timeout=600)
        t0 = time.monotonic()
        samples = []
        while time.monotonic() - t0 < watch_s:
            time.sleep(5)
            samples.append((round(time.monotonic() - t0), mem_mb(pid)["rss"]))
        out["rss_every_5s_after_the_queries"] = samples
        out["rss_settled_before_restart"] = samples[0][1]
        with connect(d.dirs, timeout=600) as c:
            st = c.request("status", {"repo": str(root)}, timeout=600)
            out["restarts_in_place"] = st["daemon"]["restartsInPlace"]
            out["symbol_table"] = st["repos"][0]["symbolTable"]
            out["rss_after_restart"] = mem_mb(pid)["rss"]
            c.request("locate", {"repo": str(root), "query": "main", "limit": 5}, timeout=600)
            out["rss_after_next_query"] = mem_mb(pid)["rss"]
            target = root / "json" / "decoder.py"
            target.write_text(target.read_text() + "\n\ndef recycle_bench_edit(x):\n    return x\n")
            t = time.perf_counter()
            c.request("sync", {"repo": str(root)}, timeout=600)
            out["next_edit_s"] = round(time.perf_counter() - t, 3)
            out["rss_settled_after_edit"] = settled(pid, since=time.monotonic())["rss"]
        log = d.dirs.log.read_text()
        found = re.search(r"rebuilt the symbol table of .* after the restart in place \(\d+ files, ([\d.]+) s\)", log)
        out["table_rebuild_s"] = float(found.group(1)) if found else None
        out["restart_reason"] = next((line.split(": ", 1)[1] for line in log.splitlines()
                                      if "restarting in place" in line), None)  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", choices=["stdlib"], default="stdlib")
    ap.add_argument("--watch", type=float, default=90.0, help="seconds sampled after the queries")
    ap.add_argument("--out", default="recycle_bench")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nxrec-") as tmp:
        root = copy_stdlib(Path(tmp) / "stdlib")
        result = run(root, args.watch)
    print(result, flush=True)
    print(f"wrote {write_result(args.out, {'corpus': args.corpus, **result})}")


if __name__ == "__main__":
    main()
