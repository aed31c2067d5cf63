"""Crash trials: kill -9 during a cold index, an incremental sync and a burst of memory writes; restart; check.

    .venv/bin/python bench/crash_trials.py [--trials 20] [--seed 7] [--files 300] [--kinds incremental_sync] [--name crash_trials]

For each trial the daemon is killed at a random moment (uniform over the operation's expected duration), started
again, and checked (tests/reliability/trials.py): it starts, the graph is consistent with a fresh extraction of
the files after the next sync, every file's symbols were its last good extraction even before that sync, and
every acknowledged memory write is present. Writes bench/results/crash_trials.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import write_result  # noqa: E402
from tests.reliability import trials  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--kinds", default=",".join(trials.KINDS), help="comma-separated: " + ", ".join(trials.KINDS))
    ap.add_argument("--name", default="crash_trials", help="result file name under bench/results/")
    opts = ap.parse_args()
    t0 = time.monotonic()
    kinds = tuple(k for k in opts.kinds.split(",") if k)
    results = trials.run_all(opts.trials, seed=opts.seed, files=opts.files, kinds=kinds)
    out = {kind: trials.summary(ts) for kind, ts in results.items()}
    for kind, ts in results.items():
        out[kind]["kill_after_s"] = [t.kill_after_s for t in ts]
        out[kind]["restart_s_max"] = max((t.restart_s for t in ts), default=0)
    data = {"trials_per_kind": opts.trials, "seed": opts.seed, "files": opts.files,
            "seconds": round(time.monotonic() - t0, 1), "results": out}  # fmt: skip
    path = write_result(opts.name, data)
    for kind, s in out.items():
        print(f"{kind:18} trials {s['trials']:3}  passed {s['passed']:3}  killed mid-op {s['killed_mid_operation']:3}  "
              f"moved aside {s['moved_aside']}  inconsistent {s['inconsistent']}  acked writes {s['acked_writes']}  "
              f"lost {s['lost_writes']}")  # fmt: skip
    print(f"wrote {path}")
    return 0 if all(s["passed"] == s["trials"] for s in out.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
