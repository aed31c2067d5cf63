"""Round-trip latency through the client library, and whole-process `nexus status` wall time.

    .venv/bin/python bench/protocol_latency.py [--requests 10000]

Targets (issue: the daemon and its thin clients): p50 <= 0.3 ms and p99 <= 2 ms for a small request through
the library; `nexus status` <= 100 ms whole-process. `ping` is answered on the socket loop; `status` goes
through a reader thread and its Kuzu connection, so both paths are shown.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexus_client import connect  # noqa: E402

from bench.harness import BenchDaemon, percentiles, write_result  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=15)
    opts = ap.parse_args()
    with BenchDaemon() as d:
        with connect(d.dirs) as c:
            for _ in range(500):
                c.request("ping")
            out = {}
            for op in ("ping", "status"):
                samples = []
                n = opts.requests if op == "ping" else max(1000, opts.requests // 5)
                for _ in range(n):
                    t0 = time.perf_counter()
                    c.request(op)
                    samples.append(time.perf_counter() - t0)
                out[op] = percentiles(samples)
        nexus = shutil.which("nexus") or str(Path(sys.executable).with_name("nexus"))
        walls = []
        for _ in range(opts.runs):
            t0 = time.perf_counter()
            subprocess.run([nexus, "status"], env=d.env, check=True, capture_output=True)
            walls.append(time.perf_counter() - t0)
        py = []
        for _ in range(opts.runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            py.append(time.perf_counter() - t0)
    result = {
        "library": out,
        "cli_status_wall_ms": {"median": round(statistics.median(walls) * 1000, 1), "min": round(min(walls) * 1000, 1),
                               "runs": len(walls)},
        "python_startup_ms": round(statistics.median(py) * 1000, 1),
        "targets": {"p50_ms": 0.3, "p99_ms": 2.0, "cli_status_ms": 100},
    }
    path = write_result("protocol_latency", result)
    print(f"ping   p50 {out['ping']['p50_ms']:.3f} ms  p99 {out['ping']['p99_ms']:.3f} ms  (n={out['ping']['n']})")
    print(f"status p50 {out['status']['p50_ms']:.3f} ms  p99 {out['status']['p99_ms']:.3f} ms  (n={out['status']['n']})")
    print(f"`nexus status` whole process: median {result['cli_status_wall_ms']['median']} ms "
          f"(python -c pass: {result['python_startup_ms']} ms)")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
