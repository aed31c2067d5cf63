"""Shared by the benchmarks: a real daemon in a temp NEXUS_HOME, timing helpers, and JSON results."""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nexusd import paths

RESULTS = Path(__file__).resolve().parent / "results"


class BenchDaemon:
    def __init__(self, env: dict[str, str] | None = None):
        self.home = Path(tempfile.mkdtemp(prefix="nxb-"))
        self.env = {**os.environ, "NEXUS_HOME": str(self.home), **(env or {})}
        self.dirs = paths.dirs({"NEXUS_HOME": str(self.home)})
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> BenchDaemon:
        self.start()
        return self

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nexusd", "run"], env=self.env, stderr=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(str(self.dirs.socket))
                return
            except OSError:
                time.sleep(0.02)
            finally:
                s.close()
        raise RuntimeError("daemon did not start")

    def stop(self, timeout: float = 900) -> float | None:
        """SIGTERM and wait; the seconds the daemon took to exit (None when it was not running). A daemon that
        holds a kernel-sized graph takes minutes (its last checkpoint), so the wait is long."""
        if self.proc and self.proc.poll() is None:
            t0 = time.perf_counter()
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout)
            return time.perf_counter() - t0
        return None

    def rss_mb(self) -> float:
        assert self.proc is not None
        with open(f"/proc/{self.proc.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def __exit__(self, *exc: Any) -> None:
        self.stop()
        keep = os.environ.get("NEXUS_BENCH_KEEP_LOG")  # a path: the daemon's log is copied there before cleanup
        if keep:
            # The log rotates at 5 MB (two backups): oldest segment first.
            segments = [Path(f"{self.dirs.log}.{n}") for n in (2, 1)] + [self.dirs.log]
            with open(keep, "wb") as out:
                for seg in segments:
                    if seg.exists():
                        out.write(seg.read_bytes())
        shutil.rmtree(self.home, ignore_errors=True)


def percentiles(samples_s: list[float]) -> dict[str, float]:
    """p50/p95/p99/max in milliseconds."""
    xs = sorted(samples_s)
    if not xs:
        return {}

    def pick(q: float) -> float:
        return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 4)

    return {"p50_ms": pick(0.50), "p95_ms": pick(0.95), "p99_ms": pick(0.99), "max_ms": round(xs[-1] * 1000, 4),
            "mean_ms": round(statistics.fmean(xs) * 1000, 4), "n": len(xs)}


def write_result(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    data = {
        "benchmark": name,
        "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        **data,
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path
