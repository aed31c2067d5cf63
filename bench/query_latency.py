"""Latency and answer size of the code-graph questions on the standard-library graph.

    .venv/bin/python bench/query_latency.py [--n 300] [--stdlib PATH]

Indexes the running Python's standard library (its .py files outside site-packages; see `stdlib_copy`) in a
fresh daemon, warms the query snapshot, then for each operation sends a fixed rotation of requests and reports
p50/p99 twice: in the daemon (`tookMs`, measured inside the handler) and through the client library (the
round trip a caller sees). Answer size is the JSON of the result in tokens, estimated as characters / 4.

Targets (issue: questions the code graph answers): locate p50 <= 2 ms and impact at depth 3 p50 <= 30 ms,
both through the client library.
"""

from __future__ import annotations

import argparse
import json
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
from bench.memory_bench import quiesce  # noqa: E402


def stdlib_copy(src: str, dst: Path) -> dict[str, Any]:
    """The stdlib's .py files, copied: in place is not possible on this interpreter.

    A pyenv stdlib holds site-packages (11k more files: not the standard library), and two indexer bugs found
    here stop a cold index of it: the File CSV COPY fails once a row carries diagnostics JSON after rows without
    (Kuzu's CSV sniffing; `auto_detect=false` in store.py fixes it), which binary test data and the three files
    with deliberate syntax errors trigger. So: .py only, files the parser flags left out (counted below).
    """
    from nexusd.parse.extract import extract

    copied = dropped = 0
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d not in ("site-packages", "__pycache__"))
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, src)
            data = Path(full).read_bytes()
            if extract(rel, data).diagnostics:
                dropped += 1
                continue
            out = dst / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
            copied += 1
    return {"source": src, "pyFiles": copied, "droppedWithDiagnostics": dropped}


def pick_targets(c: Any, repo: str) -> dict[str, list[Any]]:
    """A fixed, varied set of arguments (chosen by name, so every run asks the same questions)."""
    return {
        "locate": ["urlopen", "normalize path", "HTTPConn", "get", "json dumps", "ArgumentParser", "parse_args",
                   "read config", "Thread", "zzz_no_such_name"],  # fmt: skip
        # locate with the asker's file and line: same-named names (a test module's many classes `C`, `get`, `run`)
        "locate_near": [("get", "urllib/request.py", 1000), ("join", "shutil.py", 400), ("C", "test/test_descr.py", 1000),
                        ("run", "test/test_threading.py", 300), ("parse_args", "argparse.py", 1800),
                        ("Thread", "concurrent/futures/thread.py", 150), ("dumps", "json/tool.py", None),
                        ("read", "configparser.py", 700)],  # fmt: skip
        "symbols": [
            "py:function:urllib/request.py:urlopen",
            "py:method:argparse.py:ArgumentParser.parse_known_args",
            "py:class:json/decoder.py:JSONDecoder",
            "py:function:posixpath.py:join",
            "py:method:logging/__init__.py:Logger.info",
            "py:function:os.py:makedirs",
            "py:method:threading.py:Thread.start",
            "py:function:shutil.py:copyfile",
        ],
        "files": ["argparse.py", "os.py", "json/__init__.py", "logging/__init__.py", "urllib/request.py"],
        "pairs": [
            ("py:function:shutil.py:copytree", "py:function:os.py:makedirs"),
            ("py:method:argparse.py:ArgumentParser.parse_args", "py:method:argparse.py:ArgumentParser.error"),
            ("py:function:json/__init__.py:dumps", "py:method:json/encoder.py:JSONEncoder.encode"),
        ],
    }


def requests(t: dict[str, list[Any]]) -> dict[str, list[dict[str, Any]]]:
    syms = t["symbols"]
    return {
        "locate": [{"query": x, "limit": 20} for x in t["locate"]],
        "locate_near": [{"query": q, "limit": 20, "near": f, **({"nearLine": ln} if ln else {})} for q, f, ln in t["locate_near"]],
        "show": [{"symbol": s} for s in syms],
        "show_snippet": [{"symbol": s, "snippet": True} for s in syms],
        "context": [{"symbol": s, "depth": 1} for s in syms],
        "neighbors": [{"node": s, "depth": 1} for s in syms],
        "impact_d3": [{"symbol": s, "depth": 3} for s in syms],
        "paths": [{"from": a, "to": b, "maxDepth": 4, "maxPaths": 5} for a, b in t["pairs"]],
        "imports": [{"path": f} for f in t["files"]],
        "importers": [{"path": f} for f in t["files"]],
    }


OPS = {"show_snippet": "show", "impact_d3": "impact", "locate_near": "locate"}


def measure_restart(d: BenchDaemon, repo: str) -> dict[str, Any]:
    """The first question after a daemon restart: the engine holds no facts until a sync needs them, so the
    snapshot is loaded from the graph (Kuzu reads) by the first reader."""
    d.stop()
    d.start()
    with connect(d.dirs) as c:
        c.request("sync", {"repo": repo}, timeout=600)  # the catch-up: nothing changed, so a no-op
        t0 = time.perf_counter()
        c.request("locate", {"repo": repo, "query": "warm"}, timeout=600)
        first = time.perf_counter() - t0
    return {"first_query_s": round(first, 3), "daemon_rss_mb": round(d.rss_mb(), 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300, help="requests per operation")
    ap.add_argument("--stdlib", default=sysconfig.get_paths()["stdlib"])
    ap.add_argument("--no-restart", dest="restart", action="store_false", help="skip the restart measurement")
    opts = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nxq-stdlib-"))
    try:
        corpus = stdlib_copy(opts.stdlib, work / "stdlib")
        repo = str(work / "stdlib")
        with BenchDaemon() as d, connect(d.dirs) as c:
            t0 = time.perf_counter()
            built = c.request("index", {"repo": repo}, timeout=1800)
            index_s = time.perf_counter() - t0
            rss_indexed = d.rss_mb()
            # The first question after a cold index: the snapshot is built from the sync engine's facts in the
            # background as the index returns; this waits for whatever of that build is left.
            t0 = time.perf_counter()
            c.request("locate", {"repo": repo, "query": "warm"}, timeout=600)
            snapshot_s = time.perf_counter() - t0
            rss_loaded = d.rss_mb()
            # The snapshot is compacted into arrays in the background right after (query/compact.py): the
            # latencies below are those of the resident form, so wait for it.
            assert d.proc is not None
            compact_wait_s = quiesce(d.proc.pid)
            rss_compacted = d.rss_mb()
            reqs = requests(pick_targets(c, repo))
            out: dict[str, Any] = {}
            for name, variants in reqs.items():
                op = OPS.get(name, name)
                for args in variants:  # warm each request once
                    c.request(op, {"repo": repo, **args})
                lib: list[float] = []
                daemon: list[float] = []
                sizes: list[int] = []
                for i in range(opts.n):
                    args = {"repo": repo, **variants[i % len(variants)]}
                    t = time.perf_counter()
                    r = c.request(op, args)
                    lib.append(time.perf_counter() - t)
                    daemon.append(r["tookMs"] / 1000)
                    if i < len(variants):
                        sizes.append((len(json.dumps(r, separators=(",", ":"))) + 3) // 4)
                out[name] = {
                    "op": op,
                    "library": percentiles(lib),
                    "daemon": percentiles(daemon),
                    "tokens": {"min": min(sizes), "median": sorted(sizes)[len(sizes) // 2], "max": max(sizes)},
                }
                print(f"{name:13} lib p50 {out[name]['library']['p50_ms']:8.3f} p99 {out[name]['library']['p99_ms']:8.3f}"
                      f" | daemon p50 {out[name]['daemon']['p50_ms']:8.3f} p99 {out[name]['daemon']['p99_ms']:8.3f}"
                      f" | tokens median {out[name]['tokens']['median']}")  # fmt: skip
            restart = measure_restart(d, repo) if opts.restart else None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "corpus": corpus,
        "graph": {k: built.get("written", {}).get(k) for k in ("files", "symbols", "calls", "imports")},
        "index_s": round(index_s, 2),
        "first_query_after_cold_index_s": round(snapshot_s, 3),
        "daemon_rss_mb_after_index": round(rss_indexed, 1),
        "daemon_rss_mb_after_snapshot": round(rss_loaded, 1),
        "daemon_rss_mb_after_compaction": round(rss_compacted, 1),
        "compaction_wait_s": compact_wait_s,
        "after_restart": restart,
        "requests_per_op": opts.n,
        "token_estimate": "characters / 4 of the compact JSON answer",
        "targets": {"locate_p50_ms_library": 2.0, "impact_d3_p50_ms_library": 30.0},
        "met": {
            "locate": out["locate"]["library"]["p50_ms"] <= 2.0,
            "impact_d3": out["impact_d3"]["library"]["p50_ms"] <= 30.0,
        },
        "ops": out,
    }
    path = write_result("query_latency", result)
    keys = ("graph", "index_s", "first_query_after_cold_index_s", "daemon_rss_mb_after_snapshot", "after_restart", "met")
    print(json.dumps({k: result[k] for k in keys}), "->", path)


if __name__ == "__main__":
    main()
