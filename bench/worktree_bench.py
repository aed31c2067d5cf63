"""Many checkouts, one daemon: what the 2nd..5th worktree of an indexed repository costs.

    .venv/bin/python bench/worktree_bench.py [--repo /work/.mirror/pallets+flask/repo] [--spacing 40] [--idle-pool]
        [--repeat 5] [--name worktree_bench_s9_spacing40]

A real repository's history: a clone of `--repo`, checked out at HEAD, and four `git worktree add` checkouts
on branches made at HEAD~spacing, HEAD~2*spacing, ... (different files, like task branches).
- one: a daemon that indexes the one checkout and answers a few `locate`s; its RSS (the parser processes are
  separate processes and not counted);
- five: a fresh daemon that indexes the same checkout, then registers the four worktrees (`index` in each:
  a view, baseline + overlay) and answers the same `locate`s and an `impact` in every view (so each view's
  snapshot is built); its RSS, and each registration's wall time beside the cold index's.
`--idle-pool`: the parser processes exit after 1 s idle and each registration waits 2 s first, as when a
worktree is added minutes after the index (the default registers right after it, with the processes warm).
Each view's `seconds` splits the scan (walk, hash, parse) from the overlay's resolution; `shared` counts the
differing files whose facts another view already held, `extracted` those of a language that is not parsed
(docs, data), both without a parser.
Time is measured twice: wall time, and CPU time of the daemon and its parser processes (`/proc`), which a
machine shared with other work disturbs much less.
`--repeat n` runs the five-worktree daemon n times (a fresh daemon and cold index each): the shares are the
median view's registration over that run's cold index, reported as min and median over the runs (`runs`).
Targets (the issue): RSS(five) <= 1.5 x RSS(one); registering an extra worktree <= 10 % of a cold index.
Results: bench/results/worktree_bench[_spacing<n>][_idlepool].json (spacing 5 has no suffix).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexus_client import connect  # noqa: E402

from bench.harness import BenchDaemon, write_result  # noqa: E402

QUERIES = ["Flask", "route", "render", "get", "request"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def checkouts(src: str, top: Path, spacing: int) -> tuple[Path, list[tuple[Path, str]]]:
    main = top / "main"
    subprocess.run(["git", "clone", "-q", "--shared", src, str(main)], check=True)
    wts = []
    for i in range(1, 5):
        wt = top / f"wt{i}"
        rev = git(main, "rev-parse", f"HEAD~{i * spacing}").strip()
        git(main, "worktree", "add", "-q", "-b", f"task{i}", str(wt), rev)
        wts.append((wt, rev))
    return main, wts


def _ticks(pid: int, with_children: bool) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    # fields[11:15]: utime, stime, cutime, cstime (children that exited and were waited for)
    return sum(int(x) for x in fields[11:15]) if with_children else int(fields[11]) + int(fields[12])


def cpu_s(pid: int) -> float:
    """CPU seconds of the daemon and its parser processes (live ones, and the ones that exited): on a shared,
    loaded machine wall time mostly measures the wait for a core, CPU time the work."""
    total = _ticks(pid, True)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                total += _ticks(int(entry), True)
        except (OSError, ValueError, IndexError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def answer(c: Any, root: Path) -> None:
    for q in QUERIES:
        c.request("locate", {"repo": str(root), "query": q}, timeout=120)
    hits = c.request("locate", {"repo": str(root), "query": QUERIES[0]}, timeout=120)["results"]
    if hits:
        c.request("impact", {"repo": str(root), "symbol": hits[0]["key"]}, timeout=120)


def one(main: Path) -> dict[str, Any]:
    with BenchDaemon() as d:
        c = connect(d.dirs, autostart=False)
        t0 = time.perf_counter()
        r = c.request("index", {"repo": str(main)}, timeout=3600)
        cold = time.perf_counter() - t0
        answer(c, main)
        time.sleep(1.0)
        rss = d.rss_mb()
        c.close()
    return {"coldIndexS": round(cold, 3), "rssMb": round(rss, 1), "files": r.get("parsed"), "mode": r["mode"]}


def five(main: Path, wts: list[tuple[Path, str]], idle_pool: bool) -> dict[str, Any]:
    with BenchDaemon({"NEXUS_PARSE_IDLE_S": "1"} if idle_pool else None) as d:
        c = connect(d.dirs, autostart=False)
        assert d.proc is not None
        pid = d.proc.pid
        t0, u0 = time.perf_counter(), cpu_s(pid)
        c.request("index", {"repo": str(main)}, timeout=3600)
        cold, cold_cpu = time.perf_counter() - t0, cpu_s(pid) - u0
        answer(c, main)
        views = []
        for wt, rev in wts:
            if idle_pool:
                time.sleep(2.0)
            t1, u1 = time.perf_counter(), cpu_s(pid)
            r = c.request("index", {"repo": str(wt)}, timeout=3600)
            took, took_cpu = time.perf_counter() - t1, cpu_s(pid) - u1
            t2 = time.perf_counter()
            answer(c, wt)
            views.append({"root": wt.name, "rev": rev[:10], "registerS": round(took, 3), "registerCpuS": round(took_cpu, 3),
                          "overlayFiles": r["view"]["overlayFiles"], "reResolved": r["overlay"]["reResolved"],
                          "firstAnswersS": round(time.perf_counter() - t2, 3), "mode": r["mode"],
                          "parsed": r["parsed"], "shared": r.get("shared"), "extracted": r.get("extracted"),
                          "notRead": r.get("notRead"),
                          "seconds": r["seconds"]})  # fmt: skip
        time.sleep(1.0)
        rss = d.rss_mb()
        listing = c.request("repos", {})["repos"]
        c.close()
    return {"coldIndexS": round(cold, 3), "coldIndexCpuS": round(cold_cpu, 3), "rssMb": round(rss, 1), "views": views,
            "repositories": len(listing), "viewsListed": len(listing[0].get("views", [])) if listing else 0}  # fmt: skip


def shares(many: dict[str, Any]) -> dict[str, float]:
    """One run's registration cost beside its cold index: the median view's wall and CPU time, as shares."""
    register = statistics.median(v["registerS"] for v in many["views"])
    register_cpu = statistics.median(v["registerCpuS"] for v in many["views"])
    return {"coldIndexS": many["coldIndexS"], "coldIndexCpuS": many["coldIndexCpuS"],
            "registerMedianS": round(register, 3), "registerCpuMedianS": round(register_cpu, 3),
            "share": round(register / many["coldIndexS"], 4),
            "shareCpu": round(register_cpu / many["coldIndexCpuS"], 4) if many["coldIndexCpuS"] else 0.0}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default="/work/.mirror/pallets+flask/repo")
    ap.add_argument("--spacing", type=int, default=40, help="commits between the worktrees' branches")
    ap.add_argument("--idle-pool", action="store_true", help="register each worktree with the parser processes stopped")
    ap.add_argument("--repeat", type=int, default=1, help="runs of the five-worktree daemon (min and median reported)")
    ap.add_argument("--name", help="result file name (default from the spacing and --idle-pool)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nxwt-") as tmp:
        top = Path(tmp)
        main_root, wts = checkouts(a.repo, top, a.spacing)
        single = one(main_root)
        print("one checkout:", single, flush=True)
        runs = []
        for n in range(max(1, a.repeat)):
            many = five(main_root, wts, a.idle_pool)
            runs.append((many, shares(many)))
            print(f"five worktrees, run {n + 1}:", many, flush=True)
    many = runs[0][0]
    ratio = many["rssMb"] / single["rssMb"]
    share = statistics.median(r["share"] for _, r in runs)
    share_cpu = statistics.median(r["shareCpu"] for _, r in runs)
    out = {
        "repo": a.repo, "spacing": a.spacing, "idlePool": a.idle_pool, "one": single, "five": many,
        "rssRatio": round(ratio, 3), "rssTarget": 1.5, "rssMet": ratio <= 1.5,
        "registerMedianS": runs[0][1]["registerMedianS"], "registerShareOfCold": round(share, 3),
        "registerTarget": 0.10,
        "firstRegisterShareOfCold": round(many["views"][0]["registerS"] / many["coldIndexS"], 3),
        "registerCpuMedianS": runs[0][1]["registerCpuMedianS"], "registerCpuShareOfCold": round(share_cpu, 3),
        "registerCpuMet": share_cpu <= 0.10,
        "registerMet": share <= 0.10,
        "repeat": len(runs), "runs": [r for _, r in runs],
        "registerShareOfColdMin": min(r["share"] for _, r in runs),
        "registerCpuShareOfColdMin": min(r["shareCpu"] for _, r in runs),
    }  # fmt: skip
    print(f"RSS five/one = {ratio:.2f} (target <= 1.5); extra worktree (median view, over {len(runs)} runs: "
          f"min / median) = {out['registerShareOfColdMin']:.1%} / {share:.1%} of a cold index's wall time, "
          f"{out['registerCpuShareOfColdMin']:.1%} / {share_cpu:.1%} of its CPU time (target <= 10%)")
    name = a.name or ("worktree_bench" + ("" if a.spacing == 5 else f"_spacing{a.spacing}")
                      + ("_idlepool" if a.idle_pool else ""))  # fmt: skip
    print(write_result(name, out))


if __name__ == "__main__":
    main()
