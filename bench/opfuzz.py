"""Operation-sequence fuzzing figures (tests/reliability/opfuzz.py) -> bench/results/opfuzz.json.

    python bench/opfuzz.py [--sequences 20000] [--seconds 0] [--seed 20000] [--flooder] [--out opfuzz.json]

Counts sequences, requests, daemon deaths, hangs (no `ping` answer within 1 s after a sequence), `internal`
replies and every error code, and samples the daemon's RSS every 200 sequences."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.reliability.opfuzz import OpFuzzer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sequences", type=int, default=20_000)
    ap.add_argument("--seconds", type=float, default=0.0, help="stop after this long (0: no bound)")
    ap.add_argument("--seed", type=int, default=20_000)
    ap.add_argument("--repos", type=int, default=4)
    ap.add_argument("--flooder", action="store_true", help="keep a client connected that never reads")
    ap.add_argument("--out", default="opfuzz.json", help="result file name under bench/results/")
    args = ap.parse_args()
    fz = OpFuzzer(repos=args.repos)
    t0 = time.monotonic()
    out_path = Path(__file__).resolve().parent / "results" / args.out

    def write(out: object) -> None:
        summary = out.summary()  # type: ignore[attr-defined]
        summary.update(seconds=round(time.monotonic() - t0, 1), seed=args.seed, flooder=args.flooder)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(summary, indent=1, default=str))

    try:
        if args.flooder:
            fz.connect_flooder()
        out = fz.campaign(args.sequences, args.seed, time_budget_s=args.seconds or None, on_progress=write)
        write(out)
        print(json.dumps({k: v for k, v in out.summary().items() if k != "failures"}))
    finally:
        fz.close()


if __name__ == "__main__":
    main()
