"""The install path a newcomer follows: `pip install .` into a fresh virtualenv, then `nexus mcp install` for each
editor, and the configured command exists, is executable and runs.

The quick test installs this checkout (non-editable, through the real build backend) into a fresh virtualenv and
borrows the already installed third-party dependencies through a `.pth` line, so it needs no registry; the slow
one installs everything from the package index as a user would.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ("claude-code", "cursor", "vscode", "opencode")


def _venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, capture_output=True, timeout=120)
    return where / "bin"


def _pip_install(bindir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q", *args, str(ROOT)],
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _check_configs(bindir: Path, home: Path, project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEXUS_") and k not in ("VIRTUAL_ENV",)}
    env.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "PATH": "/usr/bin:/bin"})
    nexus = bindir / "nexus"
    assert nexus.is_file()
    for client in CLIENTS:
        printed = subprocess.run([str(nexus), "mcp", "install", "--client", client, "--print", "--json"],
                                 capture_output=True, text=True, env=env, cwd=project, timeout=60)  # fmt: skip
        assert printed.returncode == 0, printed.stderr
        command = json.loads(printed.stdout)["command"]
        written = subprocess.run([str(nexus), "mcp", "install", "--client", client, "--project", "--json"],
                                 capture_output=True, text=True, env=env, cwd=project, timeout=60)  # fmt: skip
        assert written.returncode == 0, written.stderr
        result = json.loads(written.stdout)
        config = json.loads(Path(result["file"]).read_text())
        assert Path(result["file"]).is_relative_to(project)
        key = {"vscode": "servers", "opencode": "mcp"}.get(client, "mcpServers")
        server = config[key]["nexus"]
        argv = server["command"] if client == "opencode" else [server["command"], *server["args"]]
        assert argv == command and argv[-1] == "mcp"
        exe = Path(argv[0])
        assert exe.is_absolute() and exe.is_file() and os.access(exe, os.X_OK), exe
        assert exe.parent == bindir  # the installed one, not whatever was on the developer's PATH
        # It runs without the virtualenv on PATH, as an editor would start it.
        ran = subprocess.run([*argv[:-1], "--version"], capture_output=True, text=True, env=env, timeout=60)
        assert ran.returncode == 0 and "nexus" in ran.stdout, ran.stderr


def test_pip_install_then_mcp_install_for_every_client() -> None:
    with tempfile.TemporaryDirectory(prefix="nx-install-") as tmp:
        base = Path(tmp)
        bindir = _venv(base / "venv")
        # Third-party dependencies from this environment, our own code from the fresh build only.
        purelib = Path(subprocess.check_output([str(bindir / "python"), "-c",
                                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                               text=True).strip())  # fmt: skip
        (purelib / "borrowed_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
        proc = _pip_install(bindir, "--no-deps")
        assert "SetuptoolsDeprecationWarning" not in proc.stderr and "absent from the `packages`" not in proc.stderr
        origin = subprocess.check_output([str(bindir / "python"), "-c", "import nexusd; print(nexusd.__file__)"],
                                         text=True, cwd=base).strip()  # fmt: skip
        assert Path(origin).is_relative_to(purelib), origin  # the built wheel, not the editable checkout
        (base / "proj" / ".git").mkdir(parents=True)
        _check_configs(bindir, base / "home", base / "proj")


@pytest.mark.slow
def test_fresh_virtualenv_from_the_index() -> None:
    """Everything from the package index, as in the README (about 1.5 min here)."""
    with tempfile.TemporaryDirectory(prefix="nx-install-") as tmp:
        base = Path(tmp)
        bindir = _venv(base / "venv")
        _pip_install(bindir)
        (base / "proj" / ".git").mkdir(parents=True)
        _check_configs(bindir, base / "home", base / "proj")
