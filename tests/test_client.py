"""The thin client: fails fast without a daemon, stays thin, and the CLI speaks --json everywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

from nexusd.errors import Unavailable
from tests.helpers import DaemonProcess


def test_no_daemon_no_autostart_fails_fast_naming_the_fix() -> None:
    home = tempfile.mkdtemp(prefix="nx-")
    env = {**os.environ, "NEXUS_HOME": home}
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "nexus_client.cli_main", "--no-autostart", "status"],
        env=env, capture_output=True, text=True, timeout=30,
    )
    elapsed = time.monotonic() - t0
    assert out.returncode == Unavailable.exit_code
    assert "not running" in out.stderr and "nexus daemon start" in out.stderr
    assert elapsed < 5.0, f"took {elapsed:.2f}s"  # fails at once, not after the request timeout


def test_library_raises_unavailable_without_daemon() -> None:
    from nexus_client import connect

    from nexusd import paths

    dirs = paths.dirs({"NEXUS_HOME": tempfile.mkdtemp(prefix="nx-")})
    t0 = time.monotonic()
    with pytest.raises(Unavailable):
        connect(dirs)
    assert time.monotonic() - t0 < 5.0


def test_importing_the_client_loads_no_heavy_module() -> None:
    code = (
        "import sys, nexus_client, nexus_client.cli\n"
        "heavy = [m for m in ('kuzu', 'tree_sitter', 'tree_sitter_language_pack', 'watchdog', 'jsonschema')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.strip() == ""


def test_cli_autostarts_and_daemon_commands() -> None:
    d = DaemonProcess()  # not started: the CLI starts it
    try:
        out = d.cli("--json", "status")
        assert out.returncode == 0, out.stderr
        status = json.loads(out.stdout)
        assert status["daemon"]["pid"] > 0
        out = d.cli("daemon", "status", "--json")
        assert json.loads(out.stdout)["running"] is True
        out = d.cli("daemon", "logs", "-n", "5")
        assert out.returncode == 0 and "serving on" in d.dirs.log.read_text()
        out = d.cli("daemon", "restart", "--json")
        new_pid = json.loads(out.stdout)["pid"]
        assert new_pid != status["daemon"]["pid"]
        out = d.cli("daemon", "stop")
        assert out.returncode == 0 and "stopped" in out.stdout
        out = d.cli("daemon", "status", "--json")
        assert json.loads(out.stdout)["running"] is False
    finally:
        d.cli("daemon", "stop")
        d.cleanup()


def test_daemon_install_writes_unit(tmp_path) -> None:
    d = DaemonProcess()
    d.env["XDG_CONFIG_HOME"] = str(tmp_path)
    out = d.cli("daemon", "install", "--no-enable", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    unit = (tmp_path / "systemd" / "user" / "nexusd.service").read_text()
    assert "ExecStart=" in unit and unit.split("ExecStart=")[1].split()[0].endswith("nexusd")
    assert "@NEXUSD@" not in unit and result["enabled"] is False
    d.cleanup()


def all_commands():  # type: ignore[no-untyped-def]
    """(path, command) for every leaf command, through the lazy group like the CLI itself."""
    import click
    from nexus_client.cli import main

    ctx = click.Context(main)

    def walk(group, prefix=()):  # type: ignore[no-untyped-def]
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            assert cmd is not None, f"{' '.join(prefix + (name,))} is listed but cannot be loaded"
            if isinstance(cmd, click.Group):
                yield from walk(cmd, prefix + (name,))
            else:
                yield prefix + (name,), cmd

    return list(walk(main))


def test_every_command_takes_json() -> None:
    missing = [" ".join(path) for path, cmd in all_commands() if not any(p.name == "json_flag" for p in cmd.params)]
    assert not missing, f"commands without --json: {missing}"


def test_lazy_command_map_matches_the_modules() -> None:
    import importlib

    import click
    from nexus_client.commands import COMMANDS, MODULES

    registered: dict[str, str] = {}
    for module_name in MODULES:
        scratch = click.Group()
        importlib.import_module(f"nexus_client.commands.{module_name}").register(scratch)
        for name in scratch.commands:
            registered.setdefault(name, module_name)
    # `forget` is registered by memory too, but the forget module's dispatcher is the one the CLI uses.
    registered["forget"] = "forget"
    assert registered == COMMANDS


def test_status_imports_only_its_own_command_module() -> None:
    code = (
        "import sys\n"
        "from nexus_client.cli import main\n"
        "try:\n    main.main(['status', '--help'], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('nexus_client.commands.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.strip().splitlines()[-1] == "['nexus_client.commands.status']"
