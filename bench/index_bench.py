"""Indexing cost: cold index, no-op sync, one-file change to queryable, against tree-sitter alone.

    .venv/bin/python bench/index_bench.py [--corpus this|stdlib|gen1k|gen5k|gen20k ...]

Corpora: this repository; the standard library of the running Python (copied without site-packages, which
pyenv and venvs keep inside it); generated Python repositories of 1k, 5k and 20k files (to show how the
cost grows). For each: the time tree-sitter alone needs to parse the parseable files (one process, the
floor the extraction sits on), the cold `nexus index` through the client library (a fresh daemon; two parser
processes), a no-op `sync` with a full stat walk (watcher off: the catch-up a restart does), the latency of a
one-file edit until `sync` returns with it in the graph, and the daemon's resident memory.

Targets (issue: the code graph): stdlib cold index <= 3x parse-only; no-op sync <= 50 ms; one-file change to
queryable <= 100 ms; cost no worse than linear in files; daemon memory <= 600 MB with the stdlib indexed.
"""

from __future__ import annotations

import argparse
import os
import shutil
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", action="append", choices=["this", "stdlib", "gen1k", "gen5k", "gen20k"])
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
            results.append(bench_corpus(name, root))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    gens = [r for r in results if r["corpus"].startswith("gen")]
    growth = None
    if len(gens) >= 2:
        per_file = [r["cold"]["seconds"] / r["cold"]["files"] * 1000 for r in gens]
        growth = {r["corpus"]: round(v, 3) for r, v in zip(gens, per_file, strict=True)}
        print(f"cold index ms per file: {growth}")
    path = write_result("index_bench", {"corpora": results, "cold_ms_per_file": growth,
                                        "targets": {"cold_vs_parse_only": 3.0, "noop_sync_ms": 50, "one_file_ms": 100, "rss_mb": 600}})
    print(f"wrote {path}")


if __name__ == "__main__":
    os.environ.setdefault("NEXUS_LOG_LEVEL", "WARNING")
    main()
