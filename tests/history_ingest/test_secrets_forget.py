"""No planted secret reaches the graph from any source; `forget` deletes and keeps values out on re-ingest."""

from __future__ import annotations

import json
from pathlib import Path

from nexusd.history.transcripts import encode_project_dir
from tests.helpers import DaemonProcess, git
from tests.history.test_redact import corpus

from .conftest import Factory, commit, register


def all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def write_transcript(claude: Path, repo: Path, lines: list[str]) -> None:
    project = claude / "projects" / encode_project_dir(repo)[0]
    project.mkdir(parents=True, exist_ok=True)
    records = []
    for i, text in enumerate(lines):
        role = "user" if i % 2 == 0 else "assistant"
        records.append({"type": role, "sessionId": "sess-1", "cwd": str(repo), "timestamp": "2025-01-01T00:00:00Z",
                        "message": {"role": role, "content": text}})  # fmt: skip
    (project / "sess-1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_planted_secrets_never_reach_the_graph(tmp_path: Path, new_repo: Factory) -> None:
    cases = corpus()
    marker = "plantedmarkerzqx"  # a non-secret that must be found: proves the bytes are stored readably
    repo = new_repo()
    for name, text, _ in cases:
        commit(repo, f"chore: {marker} {name}\n\n{text}", {f"cfg/{name}.env": f"{marker}\n{text}\n"})
    (repo / "docs.md").write_text("# Secrets\n\n" + "\n\n".join(t for _, t, _ in cases) + f"\n{marker}\n")
    commit(repo, "docs: add secrets page")
    claude = tmp_path / "claude"
    write_transcript(claude, repo, [f"{marker} {t}" for _, t, _ in cases])
    home = tmp_path / "nxhome"
    # The daemon reads a claudeDir only under the home, a registered repository or the configured CLAUDE_CONFIG_DIR.
    daemon = DaemonProcess(home=home, env={"CLAUDE_CONFIG_DIR": str(claude)})
    try:
        daemon.start()
        with daemon.client() as c:
            register(c, repo)
            daemon.dirs.spool.parent.mkdir(parents=True, exist_ok=True)
            with open(daemon.dirs.spool, "a") as fh:
                for _, text, _ in cases:
                    escaped = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
                    fh.write(f"N1\tbash\t1700000000\t1700000001\t1\t{repo}\techo {marker} {escaped}\n")
            r = c.request(
                "history.sync",
                {"repo": str(repo), "transcripts": True, "claudeDir": str(claude)},
                timeout=300,
            )
            assert r["counts"]["Commit"] == len(cases) + 2
            assert r["counts"]["ShellCommand"] == len(cases)
            assert r["counts"]["ConversationTurn"] >= len(cases)
            assert r["counts"]["DocSection"] >= 1
        daemon.stop()
        stored = all_bytes(home)
        assert marker.encode() in stored
        leaked = [name for name, _, secret in cases if secret.encode() in stored]
        assert leaked == []
    finally:
        daemon.cleanup()


def test_forget_deletes_and_survives_reingest(daemon: DaemonProcess, new_repo: Factory) -> None:
    repo = new_repo()
    commit(repo, "feat: talk to the internal host zebra-cluster-77", {"a.py": "HOST = 'zebra-cluster-77'\n"})
    commit(repo, "fix: retry budget for the upstream", {"b.py": "RETRIES = 5\n"})
    with daemon.client() as c:
        register(c, repo)
        with open(daemon.dirs.spool, "a") as fh:
            fh.write(f"N1\tbash\t1700000000\t1700000001\t1\t{repo}\tssh zebra-cluster-77\n")
        c.request("history.sync", {"repo": str(repo)})
        hits = c.request("query", {"repo": str(repo), "text": "zebra cluster"})["results"]
        assert {h["kind"] for h in hits} >= {"commit", "shell"}
        assert any(h["kind"] == "commit" and h.get("evidencePath") == "a.py" for h in hits)  # its change, folded in
        changes = c.request("query", {"repo": str(repo), "text": "zebra cluster", "kinds": ["change"]})["results"]
        assert [h["path"] for h in changes] == ["a.py"]
        out = daemon.cli("-C", str(repo), "forget", "--value", "Zebra-Cluster-77", "--json")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["total"] >= 3
        # Re-ingest from scratch: the repository's graph and history dropped and re-read from git, a new
        # command spooled; the value stays out.
        c.request("repo.forget", {"repo": str(repo)})
        register(c, repo)
        with open(daemon.dirs.spool, "a") as fh:
            fh.write(f"N1\tbash\t1700000009\t1700000010\t1\t{repo}\tping zebra-cluster-77\n")
        assert c.request("history.sync", {"repo": str(repo), "limit": 100})["counts"]["Commit"] == 2
        git(repo, "commit", "-q", "--allow-empty", "-m", "chore: mention ZEBRA-cluster-77 again")
        c.request("history.sync", {"repo": str(repo)})
        text = json.dumps(c.request("query", {"repo": str(repo), "text": "zebra cluster 77", "limit": 50}))
        assert "zebra-cluster-77" not in text.lower()
        assert c.request("query", {"repo": str(repo), "text": "retry budget upstream"})["results"]
    archive = daemon.dirs.state / "shell.archive"
    assert archive.exists() and b"zebra-cluster-77" not in archive.read_bytes().lower()
