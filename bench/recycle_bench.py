"""The daemon after a cold index, as a user meets it: the restart in place that gives back what the index
fragmented, with the symbol table rebuilt at once (`recycle.Recycler`, `LiveSync.rebuild_tables`).

    .venv/bin/python bench/recycle_bench.py [--corpus stdlib] [--out recycle_bench]
    .venv/bin/python bench/recycle_bench.py --tree /tmp/kernel/linux-source-6.1 --edit kernel/sys.c \
        --quiet 10 --watch 150 --out recycle_bench_kernel

One daemon with the defaults but the quiet period `--quiet` (`NEXUS_RECYCLE_QUIET_S`, 30 s by default; with a
table of over 10,000 files held the daemon waits 10x that), the standard library (a copy) or `--tree` (used in
place; the edited file is put back) indexed and queried, then sampled every 5 s for `--watch` seconds: RSS and
anonymous RSS before and after the restart in place, when it came, how long the table's rebuild took (from the
daemon's log), the RSS after the next query, the next edit's time (no rebuild left to pay) and the RSS settled
after it (the snapshot's compaction included). RSS counts the query snapshot's file pages a query or an edit
read (the snapshot is its saved file, mapped); anonymous RSS does not.
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


def run(root: Path, watch_s: float, edit: str = "json/decoder.py", quiet_s: float = 30.0) -> dict[str, Any]:
    out: dict[str, Any] = {"files": None}
    with BenchDaemon(env={"NEXUS_RECYCLE_QUIET_S": str(quiet_s)}) as d:
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
            mem = mem_mb(pid)
            samples.append((round(time.monotonic() - t0), mem["rss"], mem["anon"]))
        out["rss_anon_every_5s_after_the_queries"] = samples
        out["rss_settled_before_restart"] = samples[0][1]
        out["anon_settled_before_restart"] = samples[0][2]
        with connect(d.dirs, timeout=600) as c:
            st = c.request("status", {"repo": str(root)}, timeout=600)
            out["restarts_in_place"] = st["daemon"]["restartsInPlace"]
            out["symbol_table"] = st["repos"][0]["symbolTable"]
            out["rss_after_restart"], out["anon_after_restart"] = mem_mb(pid)["rss"], mem_mb(pid)["anon"]
            t = time.perf_counter()
            c.request("locate", {"repo": str(root), "query": "main", "limit": 5}, timeout=600)
            out["next_query_s"] = round(time.perf_counter() - t, 3)
            out["rss_after_next_query"], out["anon_after_next_query"] = mem_mb(pid)["rss"], mem_mb(pid)["anon"]
            target = root / edit
            before = target.read_text()
            added = ("\n/* recycle_bench */\nstatic int recycle_bench_edit(void) { return 1; }\n" if edit.endswith(".c")
                     else "\n\ndef recycle_bench_edit(x):\n    return x\n")  # fmt: skip
            try:
                target.write_text(before + added)
                t = time.perf_counter()
                c.request("sync", {"repo": str(root)}, timeout=600)
                out["next_edit_s"] = round(time.perf_counter() - t, 3)
                after = settled(pid, since=time.monotonic())
                out["rss_settled_after_edit"], out["anon_settled_after_edit"] = after["rss"], after["anon"]
            finally:
                target.write_text(before)
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
    ap.add_argument("--tree", help="index this tree in place instead of a copy of the standard library")
    ap.add_argument("--edit", default="json/decoder.py", help="the file the edit goes to, relative to the tree")
    ap.add_argument("--quiet", type=float, default=30.0, help="NEXUS_RECYCLE_QUIET_S of the daemon")
    ap.add_argument("--out", default="recycle_bench")
    args = ap.parse_args()
    if args.tree:
        result = run(Path(args.tree), args.watch, args.edit, args.quiet)
        corpus = args.tree
    else:
        with tempfile.TemporaryDirectory(prefix="nxrec-") as tmp:
            root = copy_stdlib(Path(tmp) / "stdlib")
            result = run(root, args.watch, args.edit, args.quiet)
        corpus = args.corpus
    print(result, flush=True)
    print(f"wrote {write_result(args.out, {'corpus': corpus, 'quiet_s': args.quiet, **result})}")


if __name__ == "__main__":
    main()
