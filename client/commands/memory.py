"""Memory commands: `nexus session start|end|list`, `nexus turn`, `nexus remember`, `nexus procedure`,
`nexus recall`, `nexus handoff write|read`, `nexus memory export|import`, `nexus forget --memory`.

Every command speaks for `app.user` (--user, NEXUS_USER or the OS user) in `app.repo` (-C or the git root).
A session id can come from --session or NEXUS_SESSION; without one the daemon uses the latest open session.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ..app import App, json_option, pass_app

IMPORT_CHUNK = 1000


def register(main: click.Group) -> None:
    main.add_command(session)
    main.add_command(turn)
    main.add_command(remember)
    main.add_command(procedure)
    main.add_command(recall)
    main.add_command(handoff)
    main.add_command(memory)
    main.add_command(forget)


def _args(app: App, **extra: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"user": app.user, "repo": app.repo}
    args.update({k: v for k, v in extra.items() if v not in (None, (), [], False)})
    return args


def _text(value: str) -> str:
    return sys.stdin.read() if value == "-" else value


session_option = click.option("--session", envvar="NEXUS_SESSION", help="Session id (env NEXUS_SESSION).")


# -- sessions -------------------------------------------------------------------------------------------


@click.group()
def session() -> None:
    """Memory sessions: start, end, list."""


@session.command("start")
@click.option("--title", help="What the session is about.")
@click.option("--id", "sid", help="Your own session id (re-sending it is a no-op).")
@json_option
@pass_app
def session_start(app: App, title: str | None, sid: str | None) -> None:
    """Start a session; prints its id (export it as NEXUS_SESSION)."""
    r = app.call("session.start", _args(app, title=title, id=sid, client="nexus-cli"))
    app.emit(r, lambda r: r["session"])


@session.command("end")
@session_option
@click.option("--summary", help="A one-paragraph summary of the session.")
@json_option
@pass_app
def session_end(app: App, session: str | None, summary: str | None) -> None:
    """End a session (default: the latest open one)."""
    r = app.call("session.end", _args(app, session=session, summary=summary))
    app.emit(r, lambda r: f"ended {r['session']} ({r['turns']} turns)")


@session.command("list")
@click.option("--limit", type=int, help="At most this many sessions (default 20).")
@json_option
@pass_app
def session_list(app: App, limit: int | None) -> None:
    """This user's sessions in this repository, newest first."""
    r = app.call("session.list", _args(app, limit=limit))
    app.emit(
        r,
        lambda r: "\n".join(
            f"{s['id']}  {'open' if s['endedAt'] is None else 'ended'}  {s['turns'] or 0} turns  {s['title'] or ''}"
            for s in r["sessions"]
        )
        or "no sessions",
    )


@click.command()
@click.argument("text")
@click.option("--role", type=click.Choice(["user", "assistant", "tool", "system", "note"]), help="Who spoke (default user).")
@session_option
@click.option("--id", "tid", help="Your own turn id (default: derived from session, role and text).")
@json_option
@pass_app
def turn(app: App, text: str, role: str | None, session: str | None, tid: str | None) -> None:
    """Append a turn (TEXT, or - for stdin) to a session."""
    r = app.call("turn", _args(app, text=_text(text), role=role, session=session, id=tid))
    app.emit(r, lambda r: f"turn {r['ordinal']} of {r['session']}" + ("" if r["created"] else " (already recorded)"))


# -- facts and procedures ---------------------------------------------------------------------------------


@click.command()
@click.argument("text")
@click.option("--about", help="The symbol the fact is about: id, key, qualified name or name.")
@session_option
@click.option("--evidence", multiple=True, help="A turn id the fact rests on (repeatable).")
@json_option
@pass_app
def remember(app: App, text: str, about: str | None, session: str | None, evidence: tuple[str, ...]) -> None:
    """Remember a fact (TEXT, or - for stdin), optionally about a symbol."""
    r = app.call("remember", _args(app, text=_text(text), about=about, session=session, evidence=list(evidence)))

    def show(r: dict[str, Any]) -> str:
        about_text = f" about {r['symbol']['key']}" if r.get("symbol") else ""
        return f"{'remembered' if r['created'] else 'already remembered'} {r['id']}{about_text}"

    app.emit(r, show)


@click.command()
@click.argument("title")
@click.option("--step", "steps", multiple=True, required=True, help="One step, in order (repeatable).")
@click.option("--file", "files", multiple=True, help="A file the procedure applies to (repeatable).")
@session_option
@json_option
@pass_app
def procedure(app: App, title: str, steps: tuple[str, ...], files: tuple[str, ...], session: str | None) -> None:
    """Remember a procedure: TITLE, --step ... in order, --file ... it applies to."""
    r = app.call("procedure", _args(app, title=title, steps=list(steps), files=list(files), session=session))
    app.emit(r, lambda r: f"{'remembered' if r['created'] else 'already remembered'} {r['id']}")


# -- recall ---------------------------------------------------------------------------------------------


def render_recall(r: dict[str, Any]) -> str:
    lines = []
    for item in r["items"]:
        head = f"[{item['type']}] {item['id']}  used {item['usedCount']}x"
        if item.get("status"):
            head += f"  ({item['status']})"
        if r.get("repos") and len(r["repos"]) > 1:
            head += f"  {item.get('repo') or item.get('repoId')}"
        lines.append(head)
        lines.extend(f"    {line}" for line in item["text"].splitlines())
    cut = r["cut"]
    lines.append(f"{r['tokens']}/{r['budget']} tokens (~{r['tokenEstimate']})"
                 + (f"; cut {cut['items']} items, {cut['tokens']} tokens" if cut["items"] else ""))
    return "\n".join(lines) if r["items"] else "nothing recalled\n" + lines[-1]


@click.command()
@click.argument("query")
@click.option("--budget", type=int, help="Token budget (tokens ~ characters/4; default 2000).")
@click.option("--limit", type=int, help="At most this many items (default 20).")
@click.option("--all-repos", is_flag=True, help="Search every repository where you have memory.")
@click.option("--type", "types", multiple=True, type=click.Choice(["fact", "procedure", "handoff"]))
@click.option("--peek", is_flag=True, help="Look without counting a use of what is returned.")
@json_option
@pass_app
def recall(app: App, query: str, budget: int | None, limit: int | None, all_repos: bool, types: tuple[str, ...],
           peek: bool) -> None:  # fmt: skip
    """Recall facts, procedures and handoffs matching QUERY, within a token budget (each one returned counts a
    use, unless --peek)."""
    r = app.call("recall", _args(app, query=query, budget=budget, limit=limit, allRepos=all_repos, types=list(types),
                                 peek=peek))  # fmt: skip
    app.emit(r, render_recall)


# -- handoffs -------------------------------------------------------------------------------------------


@click.group()
def handoff() -> None:
    """Handoffs between sessions: write one, read the latest."""


@handoff.command("write")
@click.option("--done", required=True, help="What was done.")
@click.option("--open", "open_", help="What is still open.")
@click.option("--next", "next_", help="The next steps.")
@click.option("--evidence", multiple=True, help="A turn id that backs the handoff (repeatable).")
@session_option
@json_option
@pass_app
def handoff_write(app: App, done: str, open_: str | None, next_: str | None, evidence: tuple[str, ...], session: str | None) -> None:
    """Write a handoff for the next session."""
    r = app.call("handoff.write", _args(app, done=done, open=open_, next=next_, evidence=list(evidence), session=session))
    app.emit(r, lambda r: f"{'wrote' if r['created'] else 'already written'} {r['id']}")


def render_handoff(r: dict[str, Any]) -> str:
    h = r.get("handoff")
    if not h:
        return "no handoff"
    lines = [f"{h['id']}{'  (already acknowledged)' if r['acknowledged'] else ''}", f"done: {h['done']}"]
    if h.get("open"):
        lines.append(f"open: {h['open']}")
    if h.get("next"):
        lines.append(f"next: {h['next']}")
    for t in h.get("evidenceTurns") or []:
        lines.append(f"  evidence #{t['ordinal']} {t['role']}: {t['text'][:200]}")
    return "\n".join(lines)


@handoff.command("read")
@click.option("--peek", is_flag=True, help="Do not mark the handoff acknowledged.")
@json_option
@pass_app
def handoff_read(app: App, peek: bool) -> None:
    """The latest handoff here, and whether it was already acknowledged (reading acknowledges it)."""
    app.emit(app.call("handoff.read", _args(app, peek=peek)), render_handoff)


# -- export, import, forget -----------------------------------------------------------------------------


@click.group()
def memory() -> None:
    """Your memory as JSON lines: export and import."""


@memory.command("export")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="File (default: stdout).")
@click.option("--all-repos", is_flag=True, help="Every repository where you have memory.")
@json_option
@pass_app
def memory_export(app: App, output: str | None, all_repos: bool) -> None:
    """Write this repository's memory (yours only) as JSONL."""
    r = app.call("memory.export", _args(app, allRepos=all_repos), timeout=300)
    lines = "".join(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n" for rec in r["records"])
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(lines)
        app.emit({"exported": r["count"], "file": output}, lambda x: f"exported {x['exported']} records to {output}")
    else:
        click.echo(lines, nl=False)


@memory.command("import")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@json_option
@pass_app
def memory_import(app: App, file: Any) -> None:
    """Restore memory from a JSONL export (FILE, or - for stdin) into this repository. Idempotent."""
    records = [json.loads(line) for line in file if line.strip()]
    imported = existing = 0
    for i in range(0, len(records), IMPORT_CHUNK):
        r = app.call("memory.import", _args(app, records=records[i : i + IMPORT_CHUNK]), timeout=300)
        imported += r["imported"]
        existing += r["existing"]
    app.emit({"imported": imported, "existing": existing, "records": len(records)},
             lambda x: f"imported {x['imported']} records ({x['existing']} already present)")


@click.command()
@click.option("--memory", "memory_flag", is_flag=True, help="Forget memory (facts, procedures, handoffs, sessions).")
@click.option("--all", "all_", is_flag=True, help="With --memory: everything you have in this repository.")
@click.argument("ids", nargs=-1)
@json_option
@pass_app
def forget(app: App, memory_flag: bool, all_: bool, ids: tuple[str, ...]) -> None:
    """Delete memory: `nexus forget --memory ID...` or `nexus forget --memory --all`."""
    if not memory_flag:
        raise click.UsageError("say what to forget: --memory ID... or --memory --all")
    if not ids and not all_:
        raise click.UsageError("give memory ids, or --all")
    r = app.call("memory.forget", _args(app, ids=list(ids), all=all_))
    app.emit(r, lambda r: f"forgot {r['deleted']} nodes" + (f"; not found: {', '.join(r['missing'])}" if r["missing"] else ""))
