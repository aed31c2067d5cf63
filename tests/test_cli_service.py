"""The service: `nexus daemon status` follows LSB (3 = not running), `nexus daemon install` keeps the NEXUS_*
settings in the unit and fails when enabling failed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import DaemonProcess


def test_daemon_status_exit_codes() -> None:
    d = DaemonProcess()
    try:
        out = d.cli("daemon", "status", "--json")
        assert out.returncode == 3, (out.returncode, out.stdout, out.stderr)
        assert json.loads(out.stdout)["running"] is False
        out = d.cli("daemon", "status")
        assert out.returncode == 3 and "not running" in out.stdout
        d.start()
        out = d.cli("daemon", "status", "--json")
        assert out.returncode == 0 and json.loads(out.stdout)["running"] is True
    finally:
        d.cleanup()


def test_daemon_install_keeps_settings_in_the_unit(tmp_path: Path) -> None:
    d = DaemonProcess(env={"XDG_CONFIG_HOME": str(tmp_path), "NEXUS_SETTLE_MS": "80", "NEXUS_EMBED_MODEL": "m 1%"})
    try:
        out = d.cli("daemon", "install", "--no-enable", "--json")
        assert out.returncode == 0, out.stderr
        unit = (tmp_path / "systemd" / "user" / "nexusd.service").read_text()
        assert f'Environment="NEXUS_HOME={d.home}"' in unit
        assert 'Environment="NEXUS_SETTLE_MS=80"' in unit and 'Environment="NEXUS_EMBED_MODEL=m 1%%"' in unit
        assert "@ENVIRONMENT@" not in unit and "@NEXUSD@" not in unit
        assert json.loads(out.stdout)["environment"]["NEXUS_HOME"] == str(d.home)
    finally:
        d.cleanup()


def test_daemon_install_fails_when_enabling_fails(tmp_path: Path) -> None:
    """A systemctl that refuses (as on a machine without a user systemd) makes install exit non-zero."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    systemctl = bindir / "systemctl"
    systemctl.write_text("#!/bin/sh\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n")
    systemctl.chmod(0o755)
    d = DaemonProcess(env={"XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    d.env["PATH"] = f"{bindir}:{d.env.get('PATH', '')}"
    try:
        out = d.cli("daemon", "install", "--json")
        assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
        r = json.loads(out.stdout)
        assert r["enabled"] is False and "No medium found" in r["warning"]
        assert (tmp_path / "cfg" / "systemd" / "user" / "nexusd.service").exists()
        out = d.cli("daemon", "install")
        assert out.returncode == 1 and "not enabled" in out.stdout
    finally:
        d.cleanup()


def test_autostart_ignores_a_nexusd_folder_in_the_working_directory(tmp_path: Path) -> None:
    """`python -m nexusd` would import ./nexusd first: started inside another checkout it ran that code."""
    decoy = tmp_path / "work"
    (decoy / "nexusd").mkdir(parents=True)
    (decoy / "nexusd" / "__init__.py").write_text("raise SystemExit('the decoy nexusd package was imported')\n")
    (decoy / "nexusd" / "__main__.py").write_text("raise SystemExit(42)\n")
    nexus = Path(sys.executable).with_name("nexus")  # the console script, as a user runs it (not `python -m`)
    d = DaemonProcess()
    try:
        out = subprocess.run([str(nexus), "daemon", "start", "--json"], cwd=decoy, env=d.env, capture_output=True,
                             text=True, timeout=120)  # fmt: skip
        assert out.returncode == 0, (out.stdout, out.stderr)
        assert json.loads(out.stdout)["running"] is True
        assert os.readlink(f"/proc/{json.loads(out.stdout)['pid']}/cwd") == "/"
    finally:
        d.cli("daemon", "stop")
        d.cleanup()
