"""Protocol fuzzing: random and mutated frames on raw DEALER sockets against a real daemon.

    .venv/bin/python bench/fuzz_protocol.py [--frames 100000] [--seed 11]

Frame kinds and the oracle are in tests/reliability/fuzz.py. Figures: frames sent, replies by code, daemon
crashes (0 expected), mismatches (messages without exactly one documented reply), RSS before/after.
Writes bench/results/fuzz_protocol.json.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import write_result  # noqa: E402
from tests.helpers import DaemonProcess, make_repo  # noqa: E402
from tests.reliability import fuzz  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=11)
    opts = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nx-fuzz-"))
    d = DaemonProcess(home=work / "home")
    try:
        repo = make_repo(work / "repo", {"pkg/mod.py": "def main():\n    return helper()\n\n\ndef helper():\n    return 1\n"}, commit=False)
        d.start()
        with d.client() as c:
            c.request("index", {"repo": str(repo)}, timeout=120)
            catalogue = c.catalogue
        result = fuzz.run(d.dirs.endpoint, d.pid, opts.frames, seed=opts.seed, repo=str(repo), catalogue=catalogue)
        assert d.proc is not None
        result["daemon_crashes"] = 0 if d.proc.poll() is None else 1
        result["seed"] = opts.seed
    finally:
        d.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    path = write_result("fuzz_protocol", result)
    rss = result["rss"]
    print(f"frames {result['frames']}  in {result['seconds']} s  crashes {result['daemon_crashes']}  "
          f"mismatches {result['mismatch_count']}  alive after {result['alive_after']}")
    print(f"replies {result['replies']}")
    print(f"RSS start {rss['start_kb'] // 1024} MB  after warm-up {rss['warm_kb'] // 1024} MB  end {rss['end_kb'] // 1024} MB")
    print(f"wrote {path}")
    ok = result["daemon_crashes"] == 0 and result["mismatch_count"] == 0 and result["alive_after"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
