"""MCP bridge start-up: time from spawning `nexus mcp` to a successful initialize + tools/list (target: < 1 s).

The daemon is already running (an editor's bridge meets a warm daemon); each trial spawns a fresh bridge with
the MCP SDK's own stdio client. For context it also times the bare SDK import, the floor under any bridge built
on it. Writes bench/results/mcp_startup.json; always exits 0 (it measures, CI decides).

    python bench/mcp_startup.py [--trials N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.harness import RESULTS, BenchDaemon  # noqa: E402

TARGET_S = 1.0


async def one(env: dict[str, str], cwd: str) -> tuple[float, float, int]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "nexus_client.cli_main", "mcp"], env=env, cwd=cwd)
    started = time.monotonic()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            initialized = time.monotonic() - started
            tools = await session.list_tools()
            return initialized, time.monotonic() - started, len(tools.tools)


def sdk_import_s() -> float:
    code = "import time; t=time.perf_counter(); import mcp.server.lowlevel, mcp.server.stdio; print(time.perf_counter()-t)"
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def main() -> None:
    import anyio

    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=7)
    ns = parser.parse_args()
    with BenchDaemon() as daemon:
        env = {**os.environ, "NEXUS_HOME": str(daemon.home)}
        anyio.run(one, env, str(HERE.parent))  # warm the page cache once; not counted
        trials = [anyio.run(one, env, str(HERE.parent)) for _ in range(ns.trials)]
    ready = [t[1] for t in trials]
    result: dict[str, Any] = {
        "what": "spawn `nexus mcp` -> initialize -> tools/list, daemon already running",
        "trials": ns.trials,
        "tools": trials[0][2],
        "initializeMedianS": round(statistics.median(t[0] for t in trials), 3),
        "readyMedianS": round(statistics.median(ready), 3),
        "readyMinS": round(min(ready), 3),
        "readyMaxS": round(max(ready), 3),
        "sdkImportS": round(statistics.median(sdk_import_s() for _ in range(3)), 3),
        "targetS": TARGET_S,
        "meetsTarget": statistics.median(ready) < TARGET_S,
        "loadAverage": os.getloadavg()[0],
        "cpus": os.cpu_count(),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mcp_startup.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
