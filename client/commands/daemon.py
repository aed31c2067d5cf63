"""`nexus daemon start|stop|status|restart|logs|install`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

import click

from nexusd.errors import Unavailable

from .. import launcher
from ..app import App, json_option, pass_app
from ..connection import socket_alive

NOT_RUNNING = 3  # LSB: "program is not running"


def register(main: click.Group) -> None:
    main.add_command(daemon)


@click.group()
def daemon() -> None:
    """Start, stop and inspect the nexusd daemon."""


def _state(app: App) -> dict[str, Any]:
    pid = launcher.daemon_pid(app.dirs)
    return {
        "running": pid is not None,
        "pid": pid,
        "answering": socket_alive(str(app.dirs.socket)),
        "socket": str(app.dirs.socket),
        "data": str(app.dirs.data),
        "log": str(app.dirs.log),
    }


def _render_state(s: dict[str, Any]) -> str:
    if not s["running"]:
        return f"nexusd is not running (socket {s['socket']})"
    answering = "answering" if s["answering"] else "not answering yet"
    return f"nexusd is running (pid {s['pid']}, {answering})\n  socket {s['socket']}\n  data   {s['data']}\n  log    {s['log']}"


@daemon.command()
@json_option
@pass_app
def start(app: App) -> None:
    """Start the daemon in the background (no-op when it runs)."""
    if socket_alive(str(app.dirs.socket)):
        app.emit({**_state(app), "started": False}, _render_state)
        return
    launcher.start_daemon(app.dirs)
    app.emit({**_state(app), "started": True}, _render_state)


@daemon.command()
@json_option
@pass_app
def stop(app: App) -> None:
    """Stop the daemon cleanly (SIGTERM; the write in progress finishes)."""
    pid = launcher.stop_daemon(app.dirs)
    result = {"stopped": pid is not None, "pid": pid}
    app.emit(result, lambda r: f"nexusd (pid {r['pid']}) stopped" if r["stopped"] else "nexusd was not running")


@daemon.command()
@json_option
@pass_app
def restart(app: App) -> None:
    """Stop the daemon if it runs, then start it."""
    launcher.stop_daemon(app.dirs)
    launcher.start_daemon(app.dirs)
    app.emit({**_state(app), "started": True}, _render_state)


@daemon.command("status")
@json_option
@pass_app
def daemon_status(app: App) -> None:
    """Is the daemon running, and where are its socket, data and log? Never starts it.

    Exits 0 when it runs, 3 when it does not (the LSB convention for `status`)."""
    s = _state(app)
    app.emit(s, _render_state)
    if not s["running"]:
        sys.exit(NOT_RUNNING)


@daemon.command()
@click.option("-n", "--lines", default=50, show_default=True, help="How many lines from the end.")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines (Ctrl-C to stop).")
@json_option
@pass_app
def logs(app: App, lines: int, follow: bool) -> None:
    """Print the end of the daemon's log."""
    path = app.dirs.log
    if not path.exists():
        raise Unavailable(f"no log at {path} yet", hint="start the daemon: `nexus daemon start`")
    tail = path.read_text(errors="replace").splitlines()[-lines:]
    if app.json:
        app.emit({"log": str(path), "lines": tail})
        return
    click.echo("\n".join(tail))
    if follow:
        with open(path, errors="replace") as fh:
            fh.seek(0, os.SEEK_END)
            try:
                while True:
                    line = fh.readline()
                    if line:
                        click.echo(line, nl=False)
                    else:
                        time.sleep(0.2)
            except KeyboardInterrupt:
                pass


def _quote_env(name: str, value: str) -> str:
    """One systemd `Environment=` line (quoted, with the characters systemd treats specially escaped)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return f'Environment="{name}={escaped}"'


def unit_text(nexusd_path: str, env: dict[str, str] | None = None) -> str:
    """The unit with ExecStart filled in and the NEXUS_* settings of this environment carried over, so the
    service uses the same data directory and settings as the shell that installed it."""
    template = resources.files("nexus_client.systemd").joinpath("nexusd.service").read_text()
    lines = "\n".join(_quote_env(k, v) for k, v in sorted((env or {}).items()))
    return template.replace("@NEXUSD@", nexusd_path).replace("@ENVIRONMENT@\n", lines + "\n" if lines else "")


@daemon.command()
@click.option("--no-enable", is_flag=True, help="Write the unit file only.")
@json_option
@pass_app
def install(app: App, no_enable: bool) -> None:
    """Install and enable the systemd user unit that starts nexusd at login."""
    nexusd_bin = shutil.which("nexusd") or str(Path(sys.executable).with_name("nexusd"))
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    unit_path = config / "systemd" / "user" / "nexusd.service"
    unit_path.parent.mkdir(parents=True, exist_ok=True)
    from nexusd import config as settings

    env = {k: v for k, v in settings.current().from_env().items() if k != "NEXUS_NO_AUTOSTART"}
    unit_path.write_text(unit_text(nexusd_bin, env))
    result: dict[str, Any] = {"unit": str(unit_path), "execStart": f"{nexusd_bin} run", "enabled": False,
                              "environment": env}  # fmt: skip
    if not no_enable:
        systemctl = shutil.which("systemctl")
        if systemctl is None:
            result["warning"] = "systemctl not found: enable the unit by hand where systemd runs"
        else:
            steps = [[systemctl, "--user", "daemon-reload"], [systemctl, "--user", "enable", "--now", "nexusd.service"]]
            for step in steps:
                proc = subprocess.run(step, capture_output=True, text=True, timeout=30)
                if proc.returncode != 0:
                    result["warning"] = f"`{' '.join(step[1:])}` failed: {proc.stderr.strip() or proc.returncode}"
                    break
            else:
                result["enabled"] = True

    def render(r: dict[str, Any]) -> str:
        lines = [f"wrote {r['unit']} (ExecStart={r['execStart']})"]
        for k, v in r["environment"].items():
            lines.append(f"  Environment {k}={v}")
        lines.append("enabled and started" if r["enabled"] else f"not enabled: {r.get('warning', '--no-enable')}")
        return "\n".join(lines)

    app.emit(result, render)
    if not no_enable and not result["enabled"]:
        sys.exit(1)  # the unit is written but not running: a script must not take that for success
