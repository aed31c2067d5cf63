"""`python -m nexus_client.notify EVENT`: what the git hooks run, in the background.

It tells a running daemon that the repository in the working directory changed and exits 0 whatever
happens: no daemon, a slow daemon, an error. It never starts the daemon (a git command must not) — changes
made while it is down are caught up when it starts.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    try:
        from nexusd import paths

        from .app import find_repo_root
        from .connection import Client, socket_alive

        dirs = paths.dirs()
        if not socket_alive(str(dirs.socket)):
            return 0
        client = Client(dirs, timeout=2.0)
        try:
            client.open(handshake=False)
            event = argv[0] if argv else "hook"
            client.request("hook.notify", {"repo": str(find_repo_root(os.getcwd())), "event": event}, timeout=2.0)
        finally:
            client.close()
    except Exception:  # a hook never fails and never prints
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
