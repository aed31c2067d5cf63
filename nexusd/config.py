"""Every NEXUS_* setting in one place: its type, default and meaning, read from a TOML file and the environment.

Where a value comes from, later winning:

    default      the `default` below
    file         `config.toml`: $NEXUS_CONFIG, else $NEXUS_HOME/config.toml, else the user's config directory
                 (`~/.config/nexus/config.toml` on Linux); keys are the names without the prefix, lower-case
                 (`settle_ms = 40`, `embed_url = "http://..."`)
    env          the environment variable (`NEXUS_SETTLE_MS=40`)

NEXUS_HOME and NEXUS_CONFIG are read from the environment only, since they decide where the file is. A value
that does not parse as its type is reported by `nexus config` and the default is used instead; nothing fails
to start because of a typo in a setting. This module is pure data plus a file read: clients import it.
`nexus config` (client/commands/config.py) shows every setting, its value and its source; the README's
"Configuration" section lists them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

PREFIX = "NEXUS_"


class Setting(NamedTuple):  # not a dataclass: every client start imports this, and dataclasses costs ~5 ms
    name: str
    type: type
    default: Any
    doc: str
    read_by: str  # "daemon", "client" or "both": which process acts on it
    env_only: bool = False

    @property
    def key(self) -> str:
        """The key in config.toml."""
        return self.name[len(PREFIX):].lower()


SETTINGS: tuple[Setting, ...] = (
    Setting("NEXUS_HOME", str, None, "One folder for data/, state/ and run/ (default: the platform's directories).", "both", env_only=True),
    Setting("NEXUS_CONFIG", str, None, "The settings file (default: $NEXUS_HOME/config.toml, else ~/.config/nexus/config.toml).", "both", env_only=True),
    Setting("NEXUS_USER", str, None, "Memory owner (default: the OS user).", "both"),
    Setting("NEXUS_SESSION", str, None, "Memory session id used by `turn`, `remember`, ... when --session is not given.", "client",
            env_only=True),
    Setting("NEXUS_NO_AUTOSTART", bool, False, "Fail instead of starting the daemon when it is down.", "client"),
    Setting("NEXUS_START_TIMEOUT", float, 30.0, "Seconds a client waits for a daemon it started to answer.", "client"),
    Setting("NEXUS_SHELL_RC", str, None, "The rc file `nexus hook install --shell` edits (default ~/.bashrc or ~/.zshrc).", "client"),
    Setting("NEXUS_AGENT_MODEL", str, None, "Claude model of `nexus agent --provider claude`.", "client"),
    Setting("NEXUS_ALLOW_TESTS", bool, False, "Let `nexus agent` run the repository's test files.", "client"),
    Setting("NEXUS_LOG_LEVEL", str, "INFO", "Daemon log level (DEBUG, INFO, WARNING, ERROR).", "daemon"),
    Setting("NEXUS_BUFFER_POOL_MB", int, 384, "Kuzu buffer pool of the daemon, in MB.", "daemon"),
    Setting("NEXUS_STOP_WAIT_S", float, 30.0, "Seconds a stopping daemon waits for the requests in progress (a write commits or rolls back); past it, it exits without closing the database, whose log the next start replays.", "daemon"),
    Setting("NEXUS_HEARTBEAT_S", float, 10.0, "A long request (index, sync, history ingest) that sent its client nothing for this long gets a progress frame saying it is still running (clients give up on silence), in seconds.", "daemon"),
    Setting("NEXUS_MAX_FILE_BYTES", int, 2_000_000, "Files larger than this are skipped with a diagnostic.", "daemon"),
    Setting("NEXUS_PARSE_TIMEOUT", float, 10.0, "Wall-clock limit for parsing one file, in seconds.", "daemon"),
    Setting("NEXUS_PARSE_IDLE_S", float, 30.0, "Parser workers idle this long exit (down to NEXUS_PARSE_WARM of them); the next batch starts them again.", "daemon"),
    Setting("NEXUS_PARSE_WARM", int, 0, "Parser workers kept warm when idle.", "daemon"),
    Setting("NEXUS_RESOLVE_APART_FILES", int, 400, "A resolution of at least this many files (a cold index, a project file changed) is shared with a forked copy of the daemon on a second core, when the system has the memory for it (0: never).", "daemon"),
    Setting("NEXUS_MAX_FILES", int, 200_000, "A first index of a tree with more files than this is refused (0: no cap).", "daemon"),
    Setting("NEXUS_COMPACT_MIN_MB", int, 128, "The database file is rebuilt compact (in a child process, while the daemon runs) once it is larger than this, in MB, and NEXUS_COMPACT_RATIO times its live data, unless its live data is more than the buffer pool can export (0: never).", "daemon"),
    Setting("NEXUS_COMPACT_RATIO", float, 4.0, "How many times its live data the database file may grow to before it is rebuilt compact.", "daemon"),
    Setting("NEXUS_REOPEN_CHECKPOINTS", int, 200, "The daemon closes and reopens its database after this many checkpoints (Kuzu keeps ~0.3 MB per checkpoint until it closes; 0: never).", "daemon"),
    Setting("NEXUS_REOPEN_GROWTH_MB", int, 64, "The daemon also reopens its database at a checkpoint once its anonymous memory is this many MB above what it was after the last reopen (Kuzu's buffer pool gives its pages back only when the database closes; 0: never).", "daemon"),
    Setting("NEXUS_DAEMON_ALLOCATOR", str, "pymalloc", "The daemon's Python allocator: pymalloc (Python's own, faster) or malloc (glibc's, which gives back what a cold index fragmented: 21 % less memory settled on the standard library, but more on repositories of many small symbols and on the kernel, and a cold index 20-30 % slower). PYTHONMALLOC, when set, wins.", "daemon"),
    Setting("NEXUS_MALLOC_ARENAS", int, 2, "glibc malloc arenas the daemon may use (fewer arenas, less free memory held resident; 0: glibc's default of 8 per core; MALLOC_ARENA_MAX, when set, wins).", "daemon"),
    Setting("NEXUS_GRAPH_CHECK_S", float, 60.0, "After a checkpoint that folded in deletes, the idle writer checks every graph's invariant counts, at most this often, in seconds (Kuzu can damage relationship storage there).", "daemon"),
    Setting("NEXUS_DAMAGE_REPEAT_S", float, 600.0, "A daemon that began by setting a damaged database aside does not set it aside again before it has been up this long, in seconds (damage so soon points at the write itself; a loop would never end).", "daemon"),
    Setting("NEXUS_MIN_FREE_MB", int, 64, "Writes are refused (`no_space`) while the data disk has less free space than this, in MB.", "daemon"),
    Setting("NEXUS_SYNC_IDLE_S", float, 600.0, "A repository no sync needed for this long lets its symbol table go (its queries are unaffected; its next edit rebuilds the table from the facts cache, ~1.5 s for the standard library), in seconds (0: never).", "daemon"),
    Setting("NEXUS_RECYCLE_MB", int, 32, "A daemon that holds no worktree view and had no request nor write for NEXUS_RECYCLE_QUIET_S (10x that with a symbol table of over 10,000 files held) restarts itself in place (same pid, lock and socket; a client waiting on it sends its request again; the symbol tables and query snapshots it held are rebuilt and loaded at once) once Python's allocator keeps this many MB it freed but cannot give back to the system (or, on a small daemon, 15 % of its anonymous memory and 8 MB at least), in MB (0: never).", "daemon"),
    Setting("NEXUS_RECYCLE_QUIET_S", float, 30.0, "Seconds without a client request or a write before the daemon may restart itself in place (NEXUS_RECYCLE_MB).", "daemon"),
    Setting("NEXUS_RECYCLE_AFTER_INDEX_S", float, 5.0, "The same quiet, in seconds, for a daemon that has indexed a repository whole since it started (a first index fragments the most: the standard library's left 34 MB freed but held; NEXUS_RECYCLE_QUIET_S when that is shorter; with a symbol table of over 10,000 files held, 10x NEXUS_RECYCLE_QUIET_S still).", "daemon"),
    Setting("NEXUS_SETTLE_MS", float, 40.0, "Quiet period after file events before a live sync, in ms.", "daemon"),
    Setting("NEXUS_SLOW_SYNC_MS", float, 1000.0, "A sync (with its listeners) slower than this is logged at INFO with its phases, in ms (0: every sync).", "daemon"),
    Setting("NEXUS_SNAPSHOT_SAVE_S", float, 30.0, "Seconds without a new batch before a repository's query snapshot is compacted again (in a forked process, which saves it; the daemon reads the file back) and saved beside the graph (0: never saved, compacted in the daemon; a restart then reads the graph).", "daemon"),
    Setting("NEXUS_DB_IDLE_S", float, 120.0, "The daemon closes its database once no statement used it for this long, in seconds, and the next statement opens it again (~0.1 s): an open database holds ~85 MB of Kuzu's own plus the pages it read (0: never).", "daemon"),
    Setting("NEXUS_SNAPSHOT_IDLE_S", float, 0.0, "A repository whose query snapshot no query needed for this long lets it go once it is saved (the next query loads the file again, ~0.06 s for the standard library), in seconds (0, the default for now: never).", "daemon"),
    Setting("NEXUS_NO_WATCH", bool, False, "Do not watch registered repositories (sync only on request).", "daemon"),
    Setting("NEXUS_SPOOL_INTERVAL", float, 30.0, "Seconds between ingests of the shell and git-hook spools.", "daemon"),
    Setting("NEXUS_SPOOL_REST_S", float, 600.0, "While the database rests (NEXUS_DB_IDLE_S), shell commands wait in the spool up to this long before an ingest opens it again; sooner once anything else opens it; `nexus query` has them taken in first (the shell.ingest op), in seconds (0: every NEXUS_SPOOL_INTERVAL as when it is open).", "daemon"),
    Setting("NEXUS_HISTORY_COMMITS", int, 100_000, "Commits whose messages the first `history sync` reads (default: the whole history).", "daemon"),
    Setting("NEXUS_HISTORY_PATCHES", int, 5000, "The latest non-merge commits whose diffs are read; older commits keep their message.", "daemon"),
    Setting("NEXUS_QUERY_EXPAND", bool, False, "`query` adds terms from its first pass's best commits and docs (pseudo-relevance feedback) and ranks again.", "daemon"),
    Setting("NEXUS_HISTORY_TRANSCRIPTS", bool, False, "Ingest Claude Code transcripts on every `history sync`.", "daemon"),
    Setting("NEXUS_EMBED_URL", str, None, "OpenAI-style embeddings endpoint; with NEXUS_EMBED_MODEL, `query` adds vectors.", "daemon"),
    Setting("NEXUS_EMBED_MODEL", str, None, "Model name sent to NEXUS_EMBED_URL.", "daemon"),
    Setting("NEXUS_EMBED_TIMEOUT", float, 2.0, "Seconds to wait for the embeddings endpoint.", "daemon"),
    Setting("NEXUS_SHARED_REPOS", bool, False, "Every user of this daemon may read every repository's code graph.", "daemon"),
    Setting("NEXUS_DEBUG_OPS", bool, False, "Register test-only operations (tests only).", "daemon"),
    Setting("NEXUS_FAULT_EXTRACT", str, None, "Glob of paths whose extraction raises (fault injection, tests only).", "daemon"),
    Setting("NEXUS_FAULT_HANG", str, None, "Glob of paths whose extraction hangs (fault injection, tests only).", "daemon"),
)
BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}
BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}
TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off", ""}


def config_file(environ: dict[str, str] | os._Environ[str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("NEXUS_CONFIG"):
        return Path(env["NEXUS_CONFIG"]).expanduser()
    if env.get("NEXUS_HOME"):
        return Path(env["NEXUS_HOME"]).expanduser() / "config.toml"
    base = env.get("XDG_CONFIG_HOME", "").strip()
    if sys.platform.startswith("linux"):  # the XDG rule, as in paths.user_dir (this module imports no other)
        root = Path(base) if base and os.path.isabs(base) else Path(os.path.expanduser("~")) / ".config"
        return root / "nexus" / "config.toml"
    import platformdirs

    return Path(platformdirs.user_config_dir("nexus")) / "config.toml"


def _parse(setting: Setting, raw: Any) -> Any:
    if setting.type is bool:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in TRUE:
            return True
        if text in FALSE:
            return False
        raise ValueError(f"expected 1/0, true/false, yes/no or on/off, got {raw!r}")
    if setting.type in (int, float):
        if isinstance(raw, bool):
            raise ValueError(f"expected a number, got {raw!r}")
        return setting.type(raw)
    return str(raw)


def _read_file(path: Path) -> tuple[dict[str, Any], str | None]:
    if not path.is_file():
        return {}, None
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh), None
    except (OSError, ValueError) as exc:
        return {}, f"{path}: {exc}"


class Value:
    __slots__ = ("setting", "value", "source", "problem")

    def __init__(self, setting: Setting, value: Any, source: str, problem: str | None = None):
        self.setting = setting
        self.value = value
        self.source = source  # default | file | env
        self.problem = problem


class Config:
    """The settings in force: resolved once from the defaults, the file and an environment."""

    def __init__(self, environ: dict[str, str] | os._Environ[str] | None = None):
        env = os.environ if environ is None else environ
        self._env = dict(env)
        self.file = config_file(env)
        data, self.file_error = _read_file(self.file)
        self.unknown_keys = sorted(k for k in data if k not in BY_KEY)
        self.values: dict[str, Value] = {}
        for s in SETTINGS:
            v = Value(s, s.default, "default")
            candidates: list[tuple[str, Any]] = []
            if s.key in data and not s.env_only:
                candidates.append(("file", data[s.key]))
            if env.get(s.name) is not None:
                candidates.append(("env", env[s.name]))
            for source, raw in candidates:
                try:
                    v = Value(s, _parse(s, raw), source)
                except (TypeError, ValueError) as exc:
                    v.problem = f"{source} value ignored: {exc}"
            self.values[s.name] = v

    def get(self, name: str) -> Any:
        return self.values[name].value

    def environ(self) -> dict[str, str]:
        """The settings that came from the file or the environment, as environment strings (for a child)."""
        out = {}
        for v in self.values.values():
            if v.source != "default" and v.value is not None:
                out[v.setting.name] = ("1" if v.value else "0") if v.setting.type is bool else str(v.value)
        return out

    def from_env(self) -> dict[str, str]:
        """The settings this environment sets, as given (what a service unit must carry over)."""
        return {v.setting.name: str(self._env[v.setting.name]) for v in self.values.values() if v.source == "env"}

    def explain(self) -> list[dict[str, Any]]:
        rows = []
        for v in self.values.values():
            s = v.setting
            row = {"name": s.name, "key": s.key, "value": v.value, "source": v.source, "default": s.default,
                   "type": s.type.__name__, "readBy": s.read_by, "doc": s.doc}  # fmt: skip
            if v.problem:
                row["problem"] = v.problem
            rows.append(row)
        return rows


_CURRENT: Config | None = None


def current() -> Config:
    """The process's settings (read once; `reload()` after changing the environment)."""
    global _CURRENT
    if _CURRENT is None:
        _CURRENT = Config()
    return _CURRENT


def reload() -> Config:
    global _CURRENT
    _CURRENT = None
    return current()


def get(name: str) -> Any:
    """The value in force of one setting (`get("NEXUS_SETTLE_MS")`)."""
    return current().get(name)
