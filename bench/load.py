"""Load: concurrent clients mixing queries and memory writes while another repository keeps syncing.

    .venv/bin/python bench/load.py [--clients 50] [--seconds 60]

Workload and checks in tests/reliability/load.py. Figures: requests, throughput, errors, p50/p99 latency
(overall and per operation), acknowledged and lost writes, background syncs completed.
Writes bench/results/load.json.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import write_result  # noqa: E402
from tests.helpers import DaemonProcess  # noqa: E402
from tests.reliability import load  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60.0)
    opts = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nx-load-"))
    d = DaemonProcess(home=work / "home")
    try:
        d.start()
        result = load.run(d, work, opts.clients, opts.seconds)
    finally:
        d.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    path = write_result("load", result)
    lat = result["latency"]
    print(f"{result['clients']} clients x {result['seconds']:g} s: {result['requests']} requests, "
          f"{result['throughput_rps']} req/s, errors {result['errors']}")
    print(f"latency p50 {lat.get('p50_ms')} ms  p99 {lat.get('p99_ms')} ms  max {lat.get('max_ms')} ms")
    for op, p in result["latency_by_op"].items():
        print(f"  {op:10} p50 {p['p50_ms']:9} ms  p99 {p['p99_ms']:9} ms  n {p['n']}")
    print(f"acknowledged writes {result['acknowledged_writes']}  lost {result['lost_writes']}  "
          f"background syncs {result['background_syncs']}")
    print(f"wrote {path}")
    return 0 if result["lost_writes"] == 0 and result["alive_after"] else 1


if __name__ == "__main__":
    sys.exit(main())
