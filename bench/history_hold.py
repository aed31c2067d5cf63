"""How long a first `history sync` holds the writer: an edit made while it runs waits for it.

    .venv/bin/python bench/history_hold.py --repo DIR [--patches N] [--edit PATH] [--out NAME]

DIR is a git clone (a working tree: its code is indexed first, and watched). The daemon runs `history.sync` with
the defaults (every message, diffs for the latest NEXUS_HISTORY_PATCHES non-merge commits; `--patches` overrides
them) on one connection; one second in, a function is appended to `--edit` (default: the largest tracked `.py`
file) as an editor saves it, and `locate` is asked for it every 50 ms on another connection. Printed and written
to bench/results/NAME.json: the history sync's wall time and the time from the save until `locate` found the
new function (what a user waits before the edit is queryable). The file is restored afterwards.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexus_client import connect  # noqa: E402

from bench.harness import BenchDaemon, write_result  # noqa: E402


def largest_py(root: Path) -> str:
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=root, capture_output=True, text=True, check=True)
    return max(files.stdout.split(), key=lambda p: (root / p).stat().st_size)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--patches", type=int, default=None)
    ap.add_argument("--edit", default="")
    ap.add_argument("--out", default="history_hold")
    a = ap.parse_args()
    root = Path(a.repo).resolve()
    rel = a.edit or largest_py(root)
    target = root / rel
    original = target.read_text()
    out: dict[str, Any] = {"repo": str(root), "patches": a.patches, "edited": rel}
    try:
        with BenchDaemon() as d, connect(d.dirs, timeout=1800) as c:
            c.request("index", {"repo": str(root)}, timeout=1800)
            args: dict[str, Any] = {"repo": str(root)}
            if a.patches is not None:
                args["patches"] = a.patches
            got: dict[str, Any] = {}

            def history() -> None:
                with connect(d.dirs, timeout=1800) as c2:
                    t = time.perf_counter()
                    got["counts"] = c2.request("history.sync", args, timeout=1800)["counts"]
                    got["seconds"] = time.perf_counter() - t

            thread = threading.Thread(target=history)
            thread.start()
            time.sleep(1.0)
            t = time.perf_counter()
            target.write_text(original + "\n\ndef history_hold_probe():\n    return 1\n")
            while not c.request("locate", {"repo": str(root), "query": "history_hold_probe", "limit": 1})["results"]:
                if time.perf_counter() - t > 600:
                    raise RuntimeError("the edit never became queryable")
                time.sleep(0.05)
            out["edit_waited_s"] = round(time.perf_counter() - t, 2)
            thread.join()
            out["history_sync_s"] = round(got["seconds"], 2)
            out["counts"] = got["counts"]
    finally:
        target.write_text(original)
    print(f"history.sync {out['history_sync_s']} s ({out['counts']}); an edit made 1 s into it waited "
          f"{out['edit_waited_s']} s", flush=True)
    print(f"-> {write_result(a.out, out)}")


if __name__ == "__main__":
    main()
