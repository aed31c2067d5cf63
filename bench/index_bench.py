"""Indexing cost: cold index, no-op sync, one-file change to queryable, against tree-sitter alone.

    .venv/bin/python bench/index_bench.py [--corpus this|stdlib|gen1k|gen5k|gen20k ...]
    .venv/bin/python bench/index_bench.py --cold-only --repeat 5 --corpus stdlib --corpus gen1k [--out NAME]

Corpora: this repository; the standard library of the running Python (copied without site-packages, which
pyenv and venvs keep inside it); generated Python repositories of 1k, 5k and 20k files (to show how the
cost grows). For each: the time tree-sitter alone needs to parse the parseable files (one process, the
floor the extraction sits on), the cold `nexus index` through the client library (a fresh daemon; two parser
processes), a no-op `sync` with a full stat walk (watcher off: the catch-up a restart does), the latency of a
one-file edit until `sync` returns with it in the graph, and the daemon's resident memory.

`--cold-only` measures only the cold index against parse-only, `--repeat` times per corpus, the two
interleaved (parse-only, then a fresh daemon's cold index, then again), and reports the minimum and median of
each, wall and CPU (the daemon and its parser processes, from /proc: CPU seconds are what a loaded machine
distorts least). `cpu_until_snapshot_s` adds what the daemon spends until the first query is answered (the
query snapshot is built in the background after a cold index).

Targets (issue: the code graph): stdlib cold index <= 3x parse-only; no-op sync <= 50 ms; one-file change to
queryable <= 100 ms; cost no worse than linear in files; daemon memory <= 600 MB with the stdlib indexed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexus_client import connect  # noqa: E402

from bench.harness import BenchDaemon, percentiles, write_result  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def copy_stdlib(dest: Path) -> Path:
    src = Path(sysconfig.get_paths()["stdlib"])
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("site-packages", "__pycache__", "*.pyc"), symlinks=True)
    return dest


def generate(dest: Path, files: int) -> Path:
    """A synthetic package tree: every module imports two others and calls into them and itself."""
    per_pkg = 50
    for i in range(files):
        pkg = dest / f"pkg{i // per_pkg}"
        pkg.mkdir(parents=True, exist_ok=True)
        if i % per_pkg == 0:
            (pkg / "__init__.py").write_text("")
        a, b = (i * 7 + 3) % files, (i * 13 + 5) % files
        body = [
            f"from pkg{a // per_pkg}.m{a} import func_{a}_0",
            f"from pkg{b // per_pkg} import m{b}",
            "",
            "",
            f"class Service{i}:",
            f'    """Service number {i}."""',
            "",
            "    def run(self, x):",
            "        return self.step(x) + helper_0(x)",
            "",
            "    def step(self, x):",
            f"        return func_{a}_0(x) + m{b}.func_{b}_1(x)",
            "",
        ]
        for k in range(4):
            body += ["", f"def func_{i}_{k}(x):", f"    return helper_{k % 2}(x) + {k}", ""]
        body += ["", "def helper_0(x):", "    return x", "", "def helper_1(x):", "    return helper_0(x)", ""]
        (pkg / f"m{i}.py").write_text("\n".join(body))
    return dest


def parse_only(root: Path) -> dict[str, Any]:
    """tree-sitter alone over the files the indexer would parse (one process)."""
    from tree_sitter_language_pack import get_parser

    from nexusd.parse.languages import parsed_language
    from nexusd.sync.walk import WalkRules

    parsers: dict[str, Any] = {}
    total = 0
    files = 0
    t0 = time.perf_counter()
    for entry in WalkRules(root).walk():
        lang = parsed_language(entry.path)
        if lang is None:
            continue
        data = (root / entry.path).read_bytes()
        parser = parsers.get(lang) or parsers.setdefault(lang, get_parser(lang))  # type: ignore[arg-type]
        parser.parse(data)
        total += len(data)
        files += 1
    secs = time.perf_counter() - t0
    return {"files": files, "mb": round(total / 1e6, 2), "seconds": round(secs, 3), "mb_per_s": round(total / 1e6 / secs, 2)}


def one_file_edits(client: Any, root: Path, n: int = 20) -> dict[str, Any]:
    target = next(p for p in sorted(root.rglob("*.py")) if p.stat().st_size > 200 and "test" not in p.name)
    original = target.read_text(errors="replace")
    samples = []
    try:
        for i in range(n):
            target.write_text(original + f"\n\ndef bench_edit_{i}(x):\n    return x\n")
            t0 = time.perf_counter()
            client.request("sync", {"repo": str(root)}, timeout=120)
            samples.append(time.perf_counter() - t0)
            hits = client.request("locate", {"repo": str(root), "query": f"bench_edit_{i}", "limit": 1})
            assert hits["results"], f"edit {i} not queryable after sync"
    finally:
        target.write_text(original)
    return {"file": str(target.relative_to(root)), **percentiles(samples)}


def bench_corpus(name: str, root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"corpus": name, "parse_only": parse_only(root)}
    print(f"[{name}] parse only: {out['parse_only']}", flush=True)
    with BenchDaemon() as d:
        with connect(d.dirs, timeout=1800) as c:
            t0 = time.perf_counter()
            r = c.request("index", {"repo": str(root)}, timeout=1800)
            cold = time.perf_counter() - t0
            out["cold"] = {"seconds": round(cold, 3), "files": r["written"].get("files"), "symbols": r["written"].get("symbols"),
                           "calls": r["written"].get("calls"), "phases": r["seconds"]}
            out["cold_vs_parse_only"] = round(cold / out["parse_only"]["seconds"], 2)
            print(f"[{name}] cold index {cold:.2f}s ({out['cold_vs_parse_only']}x parse-only) {out['cold']}", flush=True)
            c.request("locate", {"repo": str(root), "query": "main", "limit": 1}, timeout=600)  # warm the snapshot
            out["rss_mb_after_index"] = round(d.rss_mb(), 1)
            out["one_file_change"] = one_file_edits(c, root)
            print(f"[{name}] one-file change to queryable: {out['one_file_change']}", flush=True)
    # No-op sync after a restart, as a full stat walk (watcher off, so nothing is known to be clean).
    with BenchDaemon(env={"NEXUS_NO_WATCH": "1"}) as d2:
        with connect(d2.dirs, timeout=1800) as c:
            c.request("index", {"repo": str(root)}, timeout=1800)
            d2.stop()
            d2.start()
            c.close()
        with connect(d2.dirs, timeout=600) as c:
            c.request("sync", {"repo": str(root)}, timeout=600)  # the catch-up after the restart
            samples = []
            for _ in range(15):
                t0 = time.perf_counter()
                r = c.request("sync", {"repo": str(root)}, timeout=600)
                samples.append(time.perf_counter() - t0)
                assert r["mode"] == "noop", r["mode"]
            out["noop_sync_full_walk"] = percentiles(samples)
            print(f"[{name}] no-op sync (full stat walk): {out['noop_sync_full_walk']}", flush=True)
    return out


def cold_round(root: Path) -> dict[str, Any]:
    """One fresh daemon's cold index of `root`: wall, CPU (daemon + parser processes), and the CPU until the
    first query after it is answered."""
    from bench.memory_bench import tree_cpu_s, wait_builder

    with BenchDaemon() as d:
        assert d.proc is not None
        pid = d.proc.pid
        # A first start builds the database in a child process, which may not have started yet: wait for the
        # file itself, so that building it is never counted in the index.
        deadline = time.monotonic() + 120
        while not d.dirs.db.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        wait_builder(pid)
        with connect(d.dirs, timeout=1800) as c:
            cpu0 = tree_cpu_s(pid)
            t0 = time.perf_counter()
            r = c.request("index", {"repo": str(root)}, timeout=1800)
            wall = time.perf_counter() - t0
            cpu = tree_cpu_s(pid) - cpu0
            c.request("locate", {"repo": str(root), "query": "main", "limit": 1}, timeout=600)
            cpu_snap = tree_cpu_s(pid) - cpu0
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 2), "cpu_until_snapshot_s": round(cpu_snap, 2),
            "files": r["written"].get("files"), "symbols": r["written"].get("symbols"), "phases": r["seconds"]}


def cold_only(name: str, root: Path, repeat: int) -> dict[str, Any]:
    floors: list[dict[str, Any]] = []
    colds: list[dict[str, Any]] = []
    for i in range(repeat):
        c0 = time.process_time()
        floor = parse_only(root)
        floor["cpu_s"] = round(time.process_time() - c0, 3)
        floors.append(floor)
        colds.append(cold_round(root))
        print(f"[{name}] round {i + 1}: parse-only {floor['seconds']}s wall {floor['cpu_s']} CPU-s; cold {colds[-1]}",
              flush=True)

    def stats(xs: list[float]) -> dict[str, float]:
        return {"min": round(min(xs), 3), "median": round(statistics.median(xs), 3)}

    po_wall, po_cpu = stats([f["seconds"] for f in floors]), stats([f["cpu_s"] for f in floors])
    wall, cpu = stats([c["wall_s"] for c in colds]), stats([c["cpu_s"] for c in colds])
    snap = stats([c["cpu_until_snapshot_s"] for c in colds])
    out = {
        "corpus": name, "rounds": repeat, "files": floors[0]["files"], "mb": floors[0]["mb"],
        "parse_only": {"wall_s": po_wall, "cpu_s": po_cpu}, "cold": {"wall_s": wall, "cpu_s": cpu,
                                                                     "cpu_until_snapshot_s": snap},
        "wall_vs_parse_only": {k: round(wall[k] / po_wall[k], 2) for k in wall},
        "cpu_vs_parse_only": {k: round(cpu[k] / po_cpu[k], 2) for k in cpu},
        "cpu_until_snapshot_vs_parse_only": {k: round(snap[k] / po_cpu[k], 2) for k in snap},
        "samples": {"parse_only": floors, "cold": colds},
    }  # fmt: skip
    print(f"[{name}] wall x{out['wall_vs_parse_only']} cpu x{out['cpu_vs_parse_only']} "
          f"(until snapshot x{out['cpu_until_snapshot_vs_parse_only']})", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", action="append", choices=["this", "stdlib", "gen1k", "gen5k", "gen20k"])
    ap.add_argument("--cold-only", action="store_true", help="only the cold index against parse-only, --repeat times")
    ap.add_argument("--repeat", type=int, default=3, help="rounds per corpus with --cold-only")
    ap.add_argument("--out", default="index_bench", help="result name under bench/results/")
    opts = ap.parse_args()
    chosen = opts.corpus or ["this", "stdlib", "gen1k", "gen5k", "gen20k"]
    results = []
    work = Path(tempfile.mkdtemp(prefix="nxbench-"))
    try:
        for name in chosen:
            if name == "this":
                root = work / "this"
                shutil.copytree(REPO, root, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info", "results"))
            elif name == "stdlib":
                root = copy_stdlib(work / "stdlib")
            else:
                root = generate(work / name, {"gen1k": 1000, "gen5k": 5000, "gen20k": 20000}[name])
            results.append(cold_only(name, root, opts.repeat) if opts.cold_only else bench_corpus(name, root))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if opts.cold_only:
        print(f"wrote {write_result(opts.out, {'corpora': results, 'targets': {'stdlib_cpu_vs_parse_only': 2.5, 'stdlib_wall_vs_parse_only': 2.0, 'gen1k_wall_vs_parse_only': 4.0}})}")
        return
    gens = [r for r in results if r["corpus"].startswith("gen")]
    growth = None
    if len(gens) >= 2:
        per_file = [r["cold"]["seconds"] / r["cold"]["files"] * 1000 for r in gens]
        growth = {r["corpus"]: round(v, 3) for r, v in zip(gens, per_file, strict=True)}
        print(f"cold index ms per file: {growth}")
    path = write_result(opts.out, {"corpora": results, "cold_ms_per_file": growth,
                                        "targets": {"cold_vs_parse_only": 3.0, "noop_sync_ms": 50, "one_file_ms": 100, "rss_mb": 600}})
    print(f"wrote {path}")


if __name__ == "__main__":
    os.environ.setdefault("NEXUS_LOG_LEVEL", "WARNING")
    main()
