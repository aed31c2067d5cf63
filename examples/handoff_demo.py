"""The handoff demo: two separate processes share what one of them learned, through one daemon.

    python examples/handoff_demo.py               # self-contained: temp repo, temp NEXUS_HOME, both steps
    python examples/handoff_demo.py write REPO    # process one: index, remember, procedure, handoff
    python examples/handoff_demo.py read REPO     # process two: recall all three, read the handoff

Process one indexes the repository, records a fact about the symbol `normalizeParams`, a procedure for
checking a change to it, and a handoff; process two, a separate run against the same daemon, recalls all three.
Each step prints one JSON object. The daemon is found (or started) the usual way: NEXUS_HOME or XDG dirs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from nexus_client import connect

SYMBOL = "normalizeParams"
USER = os.environ.get("NEXUS_USER") or "demo"
SOURCE = {
    "pkg/__init__.py": "",
    "pkg/params.py": (
        "def normalizeParams(params):\n"
        "    \"\"\"Drop None values so the API never sees them.\"\"\"\n"
        "    return {k: v for k, v in params.items() if v is not None}\n"
    ),
    "tests/test_params.py": (
        "from pkg.params import normalizeParams\n\n\n"
        "def test_drops_none():\n"
        "    assert normalizeParams({'a': None, 'b': 0}) == {'b': 0}\n"
    ),
}


def write(repo: str) -> dict[str, Any]:
    scope = {"user": USER, "repo": repo}
    with connect(autostart=True, timeout=120) as c:
        c.request("index", {"repo": repo, "user": USER}, timeout=600)
        session = c.request("session.start", {**scope, "title": "handoff demo, process one"})["session"]
        turn = c.request("turn", {**scope, "session": session, "text": "normalizeParams keeps 0 and False on purpose"})
        fact = c.request("remember", {
            **scope, "session": session, "about": SYMBOL, "evidence": [turn["turn"]],
            "text": "normalizeParams drops only None: falsy values such as 0 and False are kept on purpose",
        })
        procedure = c.request("procedure", {
            **scope, "session": session, "title": "Check a change to normalizeParams",
            "steps": ["run pytest tests/test_params.py", "check that 0 and False survive normalizeParams"],
            "files": ["pkg/params.py", "tests/test_params.py"],
        })
        handoff = c.request("handoff.write", {
            **scope, "session": session, "evidence": [turn["turn"]],
            "done": "documented why normalizeParams keeps falsy values",
            "open": "normalizeParams does not recurse into nested dicts",
            "next": "decide whether normalizeParams should recurse",
        })
        c.request("session.end", {**scope, "session": session})
    return {"pid": os.getpid(), "session": session, "fact": fact["id"], "procedure": procedure["id"],
            "handoff": handoff["id"], "symbol": fact["symbol"]["key"]}


def read(repo: str) -> dict[str, Any]:
    scope = {"user": USER, "repo": repo}
    with connect(autostart=True, timeout=120) as c:
        recalled = c.request("recall", {**scope, "query": SYMBOL, "budget": 1000})
        handoff = c.request("handoff.read", scope)
    return {
        "pid": os.getpid(),
        "recalled": [
            {"type": i["type"], "id": i["id"], "status": i.get("status"), "usedCount": i["usedCount"], "text": i["text"]}
            for i in recalled["items"]
        ],
        "handoff": handoff["handoff"],
        "alreadyAcknowledged": handoff["acknowledged"],
    }


def self_contained() -> int:
    """Both steps as separate processes against one daemon, in a temp home; the daemon is stopped at the end."""
    with tempfile.TemporaryDirectory(prefix="nexus-demo-") as tmp:
        root = Path(tmp) / "repo"
        for rel, text in SOURCE.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        env = {**os.environ, "NEXUS_HOME": str(Path(tmp) / "home")}
        try:
            for step in ("write", "read"):
                out = subprocess.run([sys.executable, __file__, step, str(root)], env=env, capture_output=True,
                                     text=True, timeout=600)
                if out.returncode != 0:
                    print(out.stderr, file=sys.stderr)
                    return out.returncode
                print(f"--- process {step}:\n{out.stdout}")
        finally:
            from nexusd import paths

            try:
                with connect(paths.dirs(env), timeout=10) as c:
                    c.request("shutdown")
            except Exception:
                pass
    return 0


def main(argv: list[str]) -> int:
    if not argv:
        return self_contained()
    if len(argv) != 2 or argv[0] not in ("write", "read"):
        print(__doc__, file=sys.stderr)
        return 2
    repo = str(Path(argv[1]).resolve())
    print(json.dumps(write(repo) if argv[0] == "write" else read(repo), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
