"""A Client dropped without close() must not hang the process at garbage collection."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.helpers import DaemonProcess


def test_a_leaked_client_does_not_hang_gc(daemon: DaemonProcess) -> None:
    code = textwrap.dedent(f"""
        import gc
        from nexus_client import connect
        from nexusd import paths
        for _ in range(20):
            c = connect(paths.dirs({{"NEXUS_HOME": {str(daemon.home)!r}}}))
            c.request("ping")
            c.self_ref = c  # a cycle: only the collector frees it
            del c
        gc.collect()
        print("collected")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "collected" in out.stdout, out.stderr
