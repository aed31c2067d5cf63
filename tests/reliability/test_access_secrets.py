"""Secrets in source and in memory writes never reach agents: a key in a default argument and a token in a
docstring are redacted (history/redact.py's rules) before the symbol is stored, so `locate`, `show` (also the
snippet) and the files under the home (database, facts cache, journal) never hold them; the same for facts,
procedures, handoffs, turns and session titles."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import DaemonProcess, make_repo

KEY = "zq8Kd93jfLqp02mXv7TtY1"
TOKEN = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PASSWORD = "hunter2-correct-horse"
SECRETS = (KEY, TOKEN, PASSWORD)
MARKER = "readablemarkerqx"  # not a secret: proves the stored bytes are searchable at all

SOURCE = f'''def connect(url, api_key="{KEY}", region="{MARKER}"):
    """Connect to the service. Use token {TOKEN} in CI ({MARKER})."""
    return url


class Client:
    def auth(self, password="{PASSWORD}"):
        """{MARKER}"""
        return connect(self)
'''


def _all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_socket())


def test_secrets_in_source_and_memory_are_redacted_before_storing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"pkg/svc.py": SOURCE})
    home = tmp_path / "nxhome"
    d = DaemonProcess(home=home).start()
    scope = {"repo": str(repo), "user": "alice"}
    try:
        with d.client() as c:
            c.request("index", scope, timeout=120)
            answers = [
                c.request("locate", {**scope, "query": "connect"}),
                c.request("locate", {**scope, "query": "auth"}),
                c.request("show", {**scope, "symbol": "connect", "snippet": True}),
                c.request("show", {**scope, "symbol": "Client.auth", "snippet": True}),
                c.request("show", {**scope, "path": "pkg/svc.py", "snippet": True}),
                c.request("context", {**scope, "symbol": "connect"}),
            ]
            text = json.dumps(answers)
            assert MARKER in text and "[REDACTED:" in text
            assert [s for s in SECRETS if s in text] == []
            sig = c.request("debug.cypher", {"query": "MATCH (s:Symbol {name: 'connect'}) RETURN s.signature, s.doc"})["rows"]
            assert "[REDACTED:api-key]" in sig[0][0] and "[REDACTED:github-token]" in sig[0][1], sig

            session = c.request("session.start", {**scope, "title": f"deploy with {TOKEN}"})["session"]
            c.request("turn", {**scope, "session": session, "text": f"the password={PASSWORD!r} {MARKER}"})
            c.request("remember", {**scope, "text": f"CI uses {TOKEN} ({MARKER})", "about": "connect"})
            c.request("procedure", {**scope, "title": "rotate", "steps": [f"export API_KEY='{KEY}'", "run it"]})
            c.request("handoff.write", {**scope, "done": f"set token {TOKEN}", "next": f"password: '{PASSWORD}'"})
            c.request("session.end", {**scope, "session": session, "summary": f"used {TOKEN}"})
            c.request(
                "memory.import",
                {**scope, "records": [{"type": "Fact", "id": "f-imported", "userId": "alice", "repoId": "x",
                                       "text": f"imported {TOKEN}", "createdAt": 1.0}]},
            )  # fmt: skip
            memory = json.dumps(
                [c.request("recall", {**scope, "query": MARKER}), c.request("memory.export", scope)]
            )
            assert MARKER in memory
            assert [s for s in SECRETS if s in memory] == []
        d.stop()
        stored = _all_bytes(home)
        assert MARKER.encode() in stored
        assert [s for s in SECRETS if s.encode() in stored] == []
    finally:
        d.cleanup()
