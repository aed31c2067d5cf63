"""Live sync: how long from saving a file until a query sees it, and what the git hooks add to a commit.

    .venv/bin/python bench/live_sync.py [--edits 30] [--commits 15]

Save-to-queryable: an edit adds a function to one file of a copy of this repository; the clock runs from the
write until `locate` finds the new name. No `sync` is sent: the watcher sees the write, waits for the settle
period (NEXUS_SETTLE_MS, default 40 ms), and syncs the file on its own. Hook cost: median wall time of
`git commit` in a temp repository with and without `nexus hook install --git`.

Targets (issue: live sync): save-to-queryable p50 under 150 ms including the settle period; the hook adds
under 20 ms to `git commit`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexus_client import connect, githooks  # noqa: E402

from bench.harness import BenchDaemon, percentiles, write_result  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@e", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@e"}


def save_to_queryable(d: BenchDaemon, root: Path, edits: int) -> dict[str, float]:
    target = root / "nexusd" / "errors.py"
    original = target.read_text()
    samples = []
    with connect(d.dirs, timeout=600) as c:
        c.request("index", {"repo": str(root)}, timeout=600)
        c.request("locate", {"repo": str(root), "query": "NexusError", "limit": 1})
        try:
            for i in range(edits):
                name = f"live_bench_fn_{i}"
                t0 = time.perf_counter()
                target.write_text(original + f"\n\ndef {name}():\n    return {i}\n")
                while True:
                    hits = c.request("locate", {"repo": str(root), "query": name, "limit": 1})["results"]
                    if hits and hits[0]["name"] == name:
                        break
                    time.sleep(0.002)
                samples.append(time.perf_counter() - t0)
                time.sleep(0.2)  # let the next edit start from a quiet watcher
        finally:
            target.write_text(original)
    return percentiles(samples)


def commit_times(repo: Path, n: int) -> list[float]:
    out = []
    for i in range(n):
        (repo / f"f{i % 3}.py").write_text(f"def f():\n    return {time.time()}\n")
        subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=GIT_ENV)
        t0 = time.perf_counter()
        subprocess.run(["git", "commit", "-q", "-m", f"c{i}"], cwd=repo, check=True, env=GIT_ENV)
        out.append(time.perf_counter() - t0)
    return out


def hook_cost(d: BenchDaemon, commits: int) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix="nxhook-"))
    try:
        repo = work / "r"
        repo.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        (repo / "a.py").write_text("def a():\n    return 1\n")
        subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=GIT_ENV)
        subprocess.run(["git", "commit", "-q", "-m", "init"], cwd=repo, check=True, env=GIT_ENV)
        with connect(d.dirs) as c:
            c.request("index", {"repo": str(repo)})
        without = commit_times(repo, commits)
        githooks.install(repo, d.dirs.hook_spool)
        with_hooks = commit_times(repo, commits)
        return {
            "without_ms": round(statistics.median(without) * 1000, 2),
            "with_ms": round(statistics.median(with_hooks) * 1000, 2),
            "added_ms": round((statistics.median(with_hooks) - statistics.median(without)) * 1000, 2),
            "commits": commits,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--edits", type=int, default=30)
    ap.add_argument("--commits", type=int, default=15)
    opts = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nxlive-"))
    try:
        root = work / "repo"
        shutil.copytree(REPO, root, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info", "results"))
        with BenchDaemon() as d:
            latency = save_to_queryable(d, root, opts.edits)
            print(f"save -> queryable: p50 {latency['p50_ms']:.1f} ms, p95 {latency['p95_ms']:.1f} ms (n={latency['n']})")
            hooks = hook_cost(d, opts.commits)
            print(f"git commit: {hooks['without_ms']} ms without hooks, {hooks['with_ms']} ms with (+{hooks['added_ms']} ms)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    path = write_result("live_sync", {
        "save_to_queryable": latency, "settle_ms": float(os.environ.get("NEXUS_SETTLE_MS", "40")),
        "git_hook": hooks, "targets": {"save_to_queryable_p50_ms": 150, "hook_added_ms": 20},
    })
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
