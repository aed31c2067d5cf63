"""The shell hook in real bash and zsh, the spool while the daemon is down, install/remove of the rc block."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import DaemonProcess, wait_for
from tests.history.test_shell import SHELLS

from .conftest import Factory, register


def run_interactive(shell: str, rc: Path, cwd: Path, commands: list[str], env: dict[str, str]) -> None:
    """Feed commands to a real interactive shell that sources `rc` the way a login terminal would."""
    script = "\n".join([*commands, "exit 0"]) + "\n"
    if shell == "bash":
        argv = ["bash", "--noprofile", "--rcfile", str(rc), "-i"]
        extra = {"HISTFILE": str(rc.parent / ".bash_history_test")}
    else:
        argv = ["zsh", "-i"]
        extra = {"ZDOTDIR": str(rc.parent), "HISTFILE": str(rc.parent / ".zsh_history_test")}
    subprocess.run(argv, input=script, text=True, cwd=cwd, env={**env, **extra}, capture_output=True, timeout=30)


@pytest.mark.parametrize("shell", SHELLS)
def test_hook_records_exit_codes_in_a_real_shell(daemon: DaemonProcess, new_repo: Factory, tmp_path: Path, shell: str) -> None:
    repo = new_repo()
    rc_dir = tmp_path / f"rc-{shell}"
    rc_dir.mkdir()
    rc = rc_dir / (".bashrc" if shell == "bash" else ".zshrc")
    rc.write_text("# the user's own settings\nexport NEXUS_TEST_RC=1\n")
    original = rc.read_text()
    install = daemon.cli("hook", "install", "--shell", shell, "--rc", str(rc), "--json")
    assert install.returncode == 0, install.stderr
    assert daemon.cli("hook", "install", "--shell", shell, "--rc", str(rc)).returncode == 0  # idempotent
    assert rc.read_text().count("nexus shell hook") == 2  # one block: a start and an end marker
    with daemon.client() as c:
        register(c, repo)
        run_interactive(shell, rc, repo, ["true", "false", "(exit 3)", "echo retry budget probe"], daemon.env)
        c.request("shell.ingest", {})

        def stored() -> list[dict]:  # type: ignore[type-arg]
            r = c.request("query", {"repo": str(repo), "text": "exit true false echo retry budget probe", "kinds": ["shell"], "limit": 20})
            return r["results"] if len(r["results"]) >= 4 else []

        results = wait_for(stored, 20, what="shell commands ingested")
        codes = {r["command"]: r["exitCode"] for r in results}
        assert codes["true"] == 0 and codes["false"] == 1 and codes["(exit 3)"] == 3
        assert all(r["cwd"] == str(repo) for r in results)
        # Failed commands rank above successful ones at equal relevance.
        order = [r["command"] for r in results]
        assert order.index("false") < order.index("true")
    status = daemon.cli("hook", "status", "--rc", str(rc), "--json")
    assert '"installed": true' in status.stdout
    assert daemon.cli("hook", "remove", "--shell", shell, "--rc", str(rc)).returncode == 0
    assert rc.read_text() == original


def test_spool_survives_a_stopped_daemon(tmp_path: Path, new_repo: Factory) -> None:
    repo = new_repo()
    home = tmp_path / "nxhome"
    daemon = DaemonProcess(home=home, env={"NEXUS_SPOOL_INTERVAL": "0.5"})
    try:
        daemon.start()
        with daemon.client() as c:
            register(c, repo)
        daemon.stop()
        spool = daemon.dirs.spool
        spool.parent.mkdir(parents=True, exist_ok=True)
        # What the hook appends while nobody listens (one line per command, tab-separated, escaped).
        with open(spool, "a") as fh:
            fh.write(f"N1\tbash\t1700000000.5\t1700000002.0\t2\t{repo}\tpytest tests/test_retry.py -k budget\n")
            fh.write("N1\tzsh\t1700000003\t1700000004\t0\t/somewhere/else\tls -la\n")
            fh.write(f"N1\tbash\t1700000005\t1700000006\t0\t{repo}\tpartial line without newline")
        daemon.start()
        with daemon.client() as c:

            def ingested() -> list[dict]:  # type: ignore[type-arg]
                r = c.request("query", {"repo": str(repo), "text": "pytest retry budget", "kinds": ["shell"]})
                return r["results"]

            results = wait_for(ingested, 20, what="the spool ingested after a restart")
            assert results[0]["exitCode"] == 2 and results[0]["durationMs"] == 1500
            assert not spool.exists() or b"pytest" not in spool.read_bytes()
            assert "ls -la" not in str(c.request("query", {"repo": str(repo), "text": "ls la", "kinds": ["shell"]}))
    finally:
        daemon.cleanup()
