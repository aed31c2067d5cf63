"""`nexus mcp`: an MCP server over stdio that renders the daemon's tool catalogue and forwards calls.

The bridge owns no tools of its own. At start it asks the daemon (`hello`) for the catalogue and offers every
entry marked `tool` as an MCP tool, so the CLI, the daemon and the MCP tools can never drift: an operation
added to the daemon appears here without a change to this module. Per call it

- maps the tool name back to the op (`handoff_write` -> `handoff.write`: MCP names allow no dots),
- injects `repo` (the tool argument, else the client's first root, else the working directory; the daemon
  resolves a path to the deepest registered repository containing it) and `user` (NEXUS_USER or the OS user; hidden from the schema the model sees),
- forwards the request on a pooled daemon connection (blocking zmq, so on a worker thread),
- answers with `structuredContent` = the result, plus a compact text rendering for the model; every result
  carries graphVersion, indexedAt and freshness (added from `repos` when an op does not report them),
- turns a NexusError into a tool error (`isError`) whose text says what to do: "code: message (hint)".

Only this module and `client/agent/` import the `mcp` SDK, and only inside `serve()`: the SDK takes most of a
second to import, so the daemon connection (which may start the daemon) runs on a thread meanwhile, and
`import nexus_client.mcp_bridge` stays cheap for the agent, the benchmark and the tests.
"""

from __future__ import annotations

import copy
import getpass
import json
import logging
import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from nexusd import __version__, config, paths
from nexusd.errors import Internal, NexusError, Unavailable, UnknownOp

from .connection import Client, connect

if TYPE_CHECKING:
    import mcp.types as mt

log = logging.getLogger("nexus.mcp")

FRESHNESS_KEYS = ("graphVersion", "indexedAt", "freshness")
KEY_IMPLIED = {"id", "name", "kind", "path", "qualifiedName"}  # in a list item that has a semantic `key`
TEXT_LIMIT = 64_000  # characters of rendered text per result; structuredContent always has everything
LIST_LIMIT = 500  # list items rendered as text (the daemon pages at <= 500); one compact line each
CALL_TIMEOUT_S = 120.0  # bounds the daemon's silence; progress frames re-arm it
INSTRUCTIONS = (
    "NEXUS answers questions about this repository from a parsed code graph and remembers what earlier "
    "sessions learned. Find a symbol with `locate`, read it with `show`/`context`, see who depends on it with "
    "`impact` (callers within N hops, each edge with how it was resolved and its confidence) and `paths`. "
    "`recall` searches what earlier sessions concluded; `remember` stores a fact (about a symbol when you "
    "pass `about`); `handoff_write`/`handoff_read` pass work to the next session. Every result carries "
    "graphVersion, indexedAt and freshness: when freshness is `stale`, call `sync` first. `repo` defaults to "
    "the client's root, so it can usually be left out."
)


# -- names and schemas ------------------------------------------------------------------------------------


def tool_name(op: str) -> str:
    """MCP tool names are [a-zA-Z0-9_-]; op names use dots."""
    return op.replace(".", "_")


def tool_specs(catalogue: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The catalogue's `tool` entries as MCP tool dicts (name, description, inputSchema, readOnly, op)."""
    specs = []
    for entry in catalogue:
        if not entry.get("tool"):
            continue
        schema = copy.deepcopy(entry.get("inputSchema") or {"type": "object"})
        props: dict[str, Any] = schema.setdefault("properties", {})
        props.pop("user", None)  # the bridge speaks for its user; a model must not choose another
        if "repo" in props:
            props["repo"] = {
                "type": "string",
                "description": "Repository path (optional: defaults to the client's root, else the working directory).",
            }
        schema["required"] = [r for r in schema.get("required", []) if r not in ("user", "repo")]
        specs.append(
            {
                "name": tool_name(entry["name"]),
                "op": entry["name"],
                "description": entry.get("description", ""),
                "inputSchema": schema,
                "readOnly": bool(entry.get("readOnly")),
                "injects": [k for k in ("repo", "user") if k in (entry.get("inputSchema") or {}).get("properties", {})],
            }
        )
    return specs


# -- rendering --------------------------------------------------------------------------------------------


def _scalar(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:.0f}"
    if isinstance(value, str):
        return value if len(value) <= 300 else value[:297] + "..."
    return json.dumps(value, default=str)


def _inline(item: Any) -> str:
    """One line for a list item: a dict's scalar fields as k=v, nested values summarised."""
    if not isinstance(item, dict):
        return _scalar(item) if not isinstance(item, list) else ", ".join(_inline(x) for x in item[:10])
    parts = []
    for k, v in item.items():
        if v is None or v == "" or v == [] or v == {}:
            continue
        if item.get("key") and k in KEY_IMPLIED:
            continue  # the semantic key (lang:kind:path:qualifiedName) already says these, and tools accept it
        if k == "callPath" and isinstance(v, list) and len(v) <= 2:
            continue  # a one-hop path says nothing the item and its `via` do not
        if isinstance(v, dict):
            parts.append(f"{k}={{{_inline(v)}}}")
        elif isinstance(v, list):
            shown = ", ".join(_inline(x) for x in v[:5])
            parts.append(f"{k}=[{shown}{', ...' if len(v) > 5 else ''}]")
        else:
            parts.append(f"{k}={_scalar(v)}")
    return "; ".join(parts)


def _render(value: Any, indent: int, lines: list[str]) -> None:
    pad = "  " * indent
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, dict) and v:
                if indent >= 2:
                    lines.append(f"{pad}{k}: {_inline(v)}")
                else:
                    lines.append(f"{pad}{k}:")
                    _render(v, indent + 1, lines)
            elif isinstance(v, list) and v:
                lines.append(f"{pad}{k} ({len(v)}):")
                for item in v[:LIST_LIMIT]:
                    lines.append(f"{pad}  - {_inline(item)}")
                if len(v) > LIST_LIMIT:
                    lines.append(f"{pad}  ... {len(v) - LIST_LIMIT} more (see structuredContent)")
            elif v is not None and v != [] and v != {}:
                lines.append(f"{pad}{k}: {_scalar(v)}")
    elif isinstance(value, list):
        for item in value[:LIST_LIMIT]:
            lines.append(f"{pad}- {_inline(item)}")
    else:
        lines.append(f"{pad}{_scalar(value)}")


def render(result: Any, limit: int = TEXT_LIMIT) -> str:
    """A compact, readable rendering of a result for a model: scalars as `key: value`, list items one per line."""
    lines: list[str] = []
    _render(result, 0, lines)
    text = "\n".join(lines)
    if len(text) > limit:
        text = text[: limit - 60].rsplit("\n", 1)[0] + "\n... (text cut; structuredContent has the full result)"
    return text


def error_text(error: NexusError) -> str:
    text = f"{error.code}: {error.message}"
    if error.hint:
        text += f" ({error.hint})"
    candidates = (error.data or {}).get("candidates")
    if candidates:
        text += "\ncandidates:\n" + "\n".join(f"  - {_inline(c)}" for c in candidates[:10])
    return text


# -- the daemon side --------------------------------------------------------------------------------------


class DaemonLink:
    """Pooled daemon connections (a zmq socket is not thread-safe) plus the catalogue.

    `start()` connects on a thread — starting the daemon when it is down — so the caller can import the MCP
    SDK meanwhile; `wait()` joins it and raises what went wrong.
    """

    def __init__(self, dirs: paths.Dirs | None = None, *, autostart: bool = True):
        self.dirs = dirs or paths.dirs()
        self.autostart = autostart
        self.catalogue: list[dict[str, Any]] = []
        self._idle: list[Client] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def start(self) -> DaemonLink:
        self._thread = threading.Thread(target=self._open_first, name="nexus-mcp-connect", daemon=True)
        self._thread.start()
        return self

    def _open_first(self) -> None:
        try:
            client = connect(self.dirs, autostart=self.autostart, timeout=CALL_TIMEOUT_S)
            self.catalogue = list(getattr(client, "catalogue", []))
            self._release(client)
        except BaseException as exc:  # reported by wait(), on the thread that can answer the client
            self._error = exc

    def wait(self, timeout: float = 60.0) -> list[dict[str, Any]]:
        if self._thread is None:
            self.start()
        assert self._thread is not None
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise Unavailable("nexusd did not answer in time", hint="check `nexus daemon logs`")
        if self._error is not None:
            if isinstance(self._error, NexusError):
                raise self._error
            raise Unavailable(f"cannot reach nexusd: {self._error}", hint="check `nexus daemon logs`")
        return self.catalogue

    def _acquire(self) -> Client:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return connect(self.dirs, autostart=self.autostart, timeout=CALL_TIMEOUT_S)

    def _release(self, client: Client) -> None:
        with self._lock:
            self._idle.append(client)

    def request(self, op: str, args: dict[str, Any], *, timeout: float = CALL_TIMEOUT_S,
                progress: Callable[[dict[str, Any]], None] | None = None) -> Any:
        """One request on a pooled connection; a dead daemon is restarted (when allowed) and asked once more.

        The retry is safe: reads are pure and every memory write is idempotent (content-addressed ids).
        """
        for attempt in (1, 2):
            client = self._acquire()
            try:
                result = client.request(op, args, timeout=timeout, progress=progress)
            except Unavailable:
                client.close()
                if attempt == 2 or not self.autostart:
                    raise
                continue
            except NexusError:
                self._release(client)
                raise
            except BaseException:
                client.close()
                raise
            self._release(client)
            return result
        raise AssertionError("unreachable")

    def refresh_catalogue(self) -> list[dict[str, Any]]:
        info = self.request("hello", {"client": f"nexus_mcp/{__version__}"}, timeout=5.0)
        self.catalogue = list(info.get("catalogue", []))
        return self.catalogue

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for client in idle:
            client.close()


def root_path(uri: str) -> str | None:
    """A `file://` root URI as a local path; other schemes are not repositories we can read."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return unquote(parsed.path) or None


def freshness_of(repos: list[dict[str, Any]], path: str | None) -> dict[str, Any]:
    """graphVersion, indexedAt and freshness of the registered repository containing `path`, and the view
    (the worktree of that repository) holding it."""
    if path:
        real = os.path.realpath(path)
        best: dict[str, Any] | None = None
        view: dict[str, Any] | None = None
        best_len = -1
        for repo in repos:
            views = repo.get("views") or [{"root": repo.get("root") or ""}]
            for v in views:
                root = v.get("root") or ""
                if root and (real == root or real.startswith(root.rstrip(os.sep) + os.sep)) and len(root) > best_len:
                    best, view, best_len = repo, v, len(root)
        if best is not None:
            out = {k: best.get(k) for k in FRESHNESS_KEYS}
            if best.get("views") and view is not None:
                out["view"] = view
            return out
    return {"graphVersion": None, "indexedAt": None, "freshness": "unknown"}


class Bridge:
    """What the MCP handlers call: tool listing and forwarding, free of the SDK so it can be tested directly."""

    def __init__(self, link: DaemonLink, *, cwd: Path | None = None, user: str | None = None):
        self.link = link
        self.cwd = Path(cwd or Path.cwd())
        self.user = user or config.get("NEXUS_USER") or getpass.getuser()
        self.specs: dict[str, dict[str, Any]] = {}

    def tools(self, refresh: bool = False) -> list[dict[str, Any]]:
        catalogue = self.link.refresh_catalogue() if refresh else self.link.wait()
        specs = tool_specs(catalogue)
        self.specs = {s["name"]: s for s in specs}
        return specs

    def default_repo(self) -> str:
        # The directory itself, not its git root: the daemon picks the deepest registered root containing it,
        # so a registered subfolder of a git repository is found too.
        return str(self.cwd.absolute())

    def arguments(self, spec: dict[str, Any], given: dict[str, Any], root: str | None) -> dict[str, Any]:
        args = {k: v for k, v in given.items() if k != "user"}
        if "repo" in spec["injects"]:
            repo = args.get("repo")
            base = Path(root) if root else Path(self.default_repo())
            if not repo:
                args["repo"] = str(base)
            elif not os.path.isabs(repo):
                args["repo"] = str((base / repo).resolve())
        if "user" in spec["injects"]:
            args["user"] = self.user
        return args

    def call(self, name: str, given: dict[str, Any], root: str | None = None) -> tuple[bool, Any, str]:
        """(is_error, structured, text) for one tool call."""
        if not self.specs:
            self.tools()
        spec = self.specs.get(name)
        if spec is None:
            self.tools(refresh=True)  # the daemon may have been upgraded under us
            spec = self.specs.get(name)
        if spec is None:
            unknown = UnknownOp(f"no tool named {name!r}", hint="list the tools again (tools/list)")
            return True, {"error": unknown.to_wire()}, error_text(unknown)
        args = self.arguments(spec, given, root)
        try:
            result = self.link.request(spec["op"], args)
            if not isinstance(result, dict):
                result = {"result": result}
            if any(k not in result for k in FRESHNESS_KEYS):
                repos = self.link.request("repos", {"user": self.user}, timeout=10.0).get("repos", [])
                for k, v in freshness_of(repos, args.get("repo") or self.default_repo()).items():
                    result.setdefault(k, v)
        except NexusError as exc:
            return True, {"error": exc.to_wire()}, error_text(exc)
        except Exception as exc:  # never drop the client's session over a bug here
            log.exception("tool %s failed", name)
            err = Internal(f"{type(exc).__name__}: {exc}", hint="see the bridge's stderr; retry")
            return True, {"error": err.to_wire()}, error_text(err)
        result = json.loads(json.dumps(result, default=str))
        return False, result, render(result)


# -- the MCP server ---------------------------------------------------------------------------------------


def serve(dirs: paths.Dirs | None = None, *, cwd: Path | None = None, user: str | None = None,
          autostart: bool = True) -> None:
    """Run the MCP server on stdin/stdout until the client closes it."""
    logging.basicConfig(level=logging.WARNING, format="nexus mcp: %(message)s")
    link = DaemonLink(dirs, autostart=autostart).start()  # connects while the SDK imports
    bridge = Bridge(link, cwd=cwd, user=user)

    import anyio
    import mcp.types as mt
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.shared.exceptions import MCPDeprecationWarning

    # Roots are deprecated in the 2026-07-28 protocol but are how today's editors say where they work.
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    roots: dict[str, Any] = {"known": False, "path": None}

    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        specs = await anyio.to_thread.run_sync(lambda: bridge.tools(refresh=bool(bridge.specs)))
        return mt.ListToolsResult(tools=[_tool(mt, s) for s in specs])

    async def client_root(ctx: Any) -> str | None:
        if roots["known"]:
            return roots["path"]
        path = None
        caps = ctx.session.client_capabilities
        if caps is not None and caps.roots is not None:
            try:
                with anyio.fail_after(5):
                    listed = await ctx.session.list_roots()
                for root in listed.roots:
                    path = root_path(str(root.uri))
                    if path:
                        break
            except Exception as exc:  # a client that cannot answer: fall back to the working directory
                log.warning("roots/list failed (%s); using the working directory", exc)
        roots.update(known=True, path=path)
        return roots["path"]

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        given = dict(params.arguments or {})
        spec = bridge.specs.get(params.name)
        root = None
        if not given.get("repo") and (spec is None or "repo" in spec["injects"]):
            root = await client_root(ctx)
        is_error, structured, text = await anyio.to_thread.run_sync(lambda: bridge.call(params.name, given, root))
        return mt.CallToolResult(
            content=[mt.TextContent(type="text", text=text)], structured_content=structured, is_error=is_error
        )

    async def roots_changed(ctx: Any, params: Any) -> None:
        roots.update(known=False, path=None)

    server: Server[Any] = Server(
        "nexus", version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool
    )
    server.add_notification_handler("notifications/roots/list_changed", mt.NotificationParams, roots_changed)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        link.close()


def _tool(mt: Any, spec: dict[str, Any]) -> mt.Tool:
    return mt.Tool(
        name=spec["name"],
        title=spec["op"],
        description=spec["description"],
        input_schema=spec["inputSchema"],
        annotations=mt.ToolAnnotations(
            title=spec["op"], read_only_hint=spec["readOnly"], open_world_hint=False,
            destructive_hint=False if not spec["readOnly"] else None,
        ),
    )
