"""A daemon whose saved query snapshot is gone or stale: how long the first answer waits for the graph read, how
much it holds meanwhile, and whether the next start answers from the file that read saved.

    .venv/bin/python bench/snapshot_recovery.py --home H --tree /tmp/kernel/linux-source-6.1 \
        [--query kmalloc] [--out snapshot_recovery_kernel]

`--home` is a NEXUS_HOME that has `--tree` indexed already (a cold index of the kernel takes ~5 min; index it
once with any bench that keeps its home, or `NEXUS_HOME=H nexus index TREE`). The bench removes the home's saved
snapshot files (as a lost file, or one made for another graph version, leaves it: the daemon reads the graph),
starts a daemon on the home, times the first `locate` and samples RSS until the log says the snapshot was saved
(compacted in a forked process), stops it, starts another, and times its first `locate` (from the file). The
peak is the daemon's own high-water mark (`VmHWM`), not its forked compaction's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexus_client import connect  # noqa: E402

from bench.harness import write_result  # noqa: E402
from bench.memory_bench import mem_mb  # noqa: E402
from nexusd import paths  # noqa: E402


def _hwm_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _start(env: dict[str, str], dirs: paths.Dirs) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "nexusd", "run"], env=env, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while not dirs.socket.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return proc


def _locate(dirs: paths.Dirs, tree: Path, query: str) -> dict[str, Any]:
    with connect(dirs, timeout=3600) as c:
        t0 = time.perf_counter()
        r = c.request("locate", {"repo": str(tree), "query": query, "limit": 5}, timeout=3600)
        return {"seconds": round(time.perf_counter() - t0, 2), "snapshot": r.get("snapshot"),
                "top": [x.get("path") for x in r["results"][:3]]}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", required=True)
    ap.add_argument("--tree", required=True)
    ap.add_argument("--query", default="kmalloc")
    ap.add_argument("--wait", type=float, default=1800, help="at most this long for the save")
    ap.add_argument("--out", default="snapshot_recovery")
    o = ap.parse_args()
    home, tree = Path(o.home), Path(o.tree)
    env = {**os.environ, "NEXUS_HOME": str(home), "NEXUS_RECYCLE_MB": "0"}  # (no restart in place meanwhile)
    dirs = paths.dirs({"NEXUS_HOME": str(home)})
    log = dirs.state / "nexusd.log"
    removed = 0
    for f in (dirs.data / "snapshots").glob("*.snap"):
        f.unlink()
        removed += 1
    out: dict[str, Any] = {"tree": str(tree), "removedFiles": removed}
    proc = _start(env, dirs)
    try:
        mark = len(log.read_text().splitlines())
        first = _locate(dirs, tree, o.query)
        first["rssAfter"] = mem_mb(proc.pid)
        print("first locate, graph read:", first, flush=True)
        samples = []
        t0 = time.monotonic()
        saved = ""
        while time.monotonic() - t0 < o.wait:
            time.sleep(5)
            samples.append({"t": round(time.monotonic() - t0, 1), **mem_mb(proc.pid)})
            lines = [x for x in log.read_text().splitlines()[mark:] if "query snapshot of" in x and " saved: " in x]
            if lines:
                saved = lines[-1]
                break
        first["peakRssMb"] = _hwm_mb(proc.pid)
        out["graphRead"] = {**first, "saved": saved.split(" saved: ", 1)[-1] if saved else None,
                            "samples": samples}  # fmt: skip
        print("saved:", out["graphRead"]["saved"], "peak", first["peakRssMb"], flush=True)
    finally:
        proc.terminate()
        proc.wait(600)
    proc = _start(env, dirs)
    try:
        again = _locate(dirs, tree, o.query)
        again["rssAfter"] = mem_mb(proc.pid)
        out["nextStart"] = again
        print("next start, first locate:", again, flush=True)
    finally:
        proc.terminate()
        proc.wait(600)
    print("wrote", write_result(o.out, out))


if __name__ == "__main__":
    main()
