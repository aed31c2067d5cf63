"""History commands: `nexus history sync`, `nexus history SYMBOL|FILE`, `nexus query TEXT`, and the dry runs
`nexus scan git|diff|shell|docs|transcripts`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from ..app import App, find_repo_root, json_option, pass_app

SCAN_KINDS = ("git", "diff", "shell", "docs", "transcripts")


def register(main: click.Group) -> None:
    main.add_command(history)
    main.add_command(query)
    main.add_command(scan)


def history_files() -> list[dict[str, str]]:
    """The bash and zsh history files of this user, for the scraped fallback (only those that exist)."""
    home = Path.home()
    candidates = [
        (os.environ.get("HISTFILE") or str(home / ".bash_history"), "bash"),
        (str(Path(os.environ.get("ZDOTDIR") or home) / ".zsh_history"), "zsh"),
    ]
    out: list[dict[str, str]] = []
    for path, shell in candidates:
        if os.path.isfile(path) and not any(o["path"] == path for o in out):
            kind = "zsh" if path.endswith("zsh_history") else shell
            out.append({"path": path, "shell": kind})
    return out


def _flush_spool(app: App) -> None:
    """Commands typed a moment ago are still in the spool: have the daemon take them in before a read."""
    try:
        if app.dirs.spool.stat().st_size > 0:
            app.call("shell.ingest", {})
    except OSError:
        pass


class _HistoryGroup(click.Group):
    """`nexus history sync` is a subcommand; anything else is `nexus history TARGET`."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            return "show", self.commands["show"], args
        return super().resolve_command(ctx, args)


@click.group(cls=_HistoryGroup)
def history() -> None:
    """What changed in a symbol or file, when and why (`nexus history TARGET`); `nexus history sync` ingests."""


@history.command("sync")
@click.argument("path", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--limit", type=int, help="Commits to read on a first sync (default the whole history, NEXUS_HISTORY_COMMITS).")
@click.option("--patches", type=int, help="Latest non-merge commits read with diffs (default 5000, NEXUS_HISTORY_PATCHES).")
@click.option("--no-git", is_flag=True, help="Skip git commits.")
@click.option("--no-docs", is_flag=True, help="Skip Markdown/RST docs.")
@click.option("--transcripts", is_flag=True, help="Opt in: also ingest Claude Code transcripts of this repository.")
@click.option("--claude-dir", type=click.Path(file_okay=False), help="Claude config dir (default ~/.claude).")
@click.option("--scrape-shell", is_flag=True, help="Fallback: also scrape ~/.bash_history / ~/.zsh_history (labelled).")
@json_option
@pass_app
def history_sync(
    app: App, path: str | None, limit: int | None, patches: int | None, no_git: bool, no_docs: bool, transcripts: bool,
    claude_dir: str | None, scrape_shell: bool,
) -> None:  # fmt: skip
    """Ingest new commits (first sync: the latest N; later: only new ones), docs, the shell spool."""
    args: dict[str, Any] = {"repo": str(find_repo_root(Path(path))) if path else app.repo, "user": app.user}
    if limit:
        args["limit"] = limit
    if patches is not None:
        args["patches"] = patches
    if no_git:
        args["git"] = False
    if no_docs:
        args["docs"] = False
    if transcripts:
        args["transcripts"] = True
    if claude_dir:
        args["claudeDir"] = str(Path(claude_dir).absolute())
    if scrape_shell:
        args["scrape"] = history_files()

    def render(r: dict[str, Any]) -> str:
        lines = [f"history of {r['repo']}"]
        g = r.get("git")
        if isinstance(g, dict) and "error" not in g:
            lines.append(
                f"  git: {g['commits']} new commits, {g['changes']} changes"
                + (f", pruned {g['pruned']} rewritten" if g.get("pruned") else "")
                + (f", {g['denied']} forgotten" if g.get("denied") else "")
            )
        elif isinstance(g, dict):
            lines.append(f"  git: {g['error']}")
        d = r.get("docs")
        if d:
            lines.append(f"  docs: {d['sections']} sections (+{d['added']} -{d['removed']})")
        s = r.get("shell")
        if s:
            lines.append(f"  shell: {s['stored']} commands from the spool" + (f", {s['scraped']} scraped" if s.get("scraped") else ""))
        t = r.get("transcripts")
        lines.append(f"  transcripts: {t['stored']} new turns" if isinstance(t, dict) else f"  transcripts: {t}")
        lines.append("  stored: " + ", ".join(f"{k} {v}" for k, v in r.get("counts", {}).items()))
        return "\n".join(lines)

    app.emit(app.call("history.sync", args, label="history", timeout=1800), render)


@history.command("show", hidden=True)
@click.argument("target")
@click.option("--limit", type=int, help="At most this many commits (default 20).")
@click.option("--no-patch", is_flag=True, help="Leave the patches out.")
@json_option
@pass_app
def history_show(app: App, target: str, limit: int | None, no_patch: bool) -> None:
    """What changed in TARGET (a symbol name, qualified name or id, or a file path), when and why."""
    if os.path.exists(target):
        target = os.path.abspath(target)
    args: dict[str, Any] = {"repo": app.repo, "user": app.user, "target": target}
    if limit is not None:
        args["limit"] = limit
    if no_patch:
        args["patch"] = False
    r = app.call("history", args)

    def change_lines(changes: list[dict[str, Any]]) -> list[str]:
        out = []
        for c in changes:
            subject = (c.get("message") or "").split("\n", 1)[0]
            out.append(f"  {c['sha'][:10]}  {c.get('kind') or '':8} {subject}  ({c['path']} +{c['additions']} -{c['deletions']})")
            if c.get("patch"):
                out.extend("      " + line for line in c["patch"].split("\n")[:12])
        return out or ["  no recorded changes (run `nexus history sync`)"]

    def render(r: dict[str, Any]) -> str:
        if r["kind"] == "file":
            return "\n".join([f"{r['path']}:", *change_lines(r["changes"])])
        lines = []
        for s in r["symbols"]:
            lines.append(f"{s['kind']} {s['qualifiedName']}  {s['path']}:{s['startLine']}-{s['endLine']}")
            lines.extend(change_lines(s["changes"]))
        return "\n".join(lines)

    app.emit(r, render)


def render_query(r: dict[str, Any]) -> str:
    from ..style import dim

    lines = []
    for i, item in enumerate(r["results"], 1):
        lines.append(f"{i}. [{item['kind']}] score {item['score']:.4f}")
        lines.extend("   " + line for line in item["text"].split("\n"))
        lines.extend("   " + line for line in fix_lines(item.get("fix")))
    lines.append(dim("-- " + query_footer(r)))
    return "\n".join(lines)


def fix_lines(fix: dict[str, Any] | None) -> list[str]:
    """What fixed a failed command: the commit that changed its files, the same command passing later."""
    if not fix:
        return []
    out = []
    if fix.get("commit"):
        c = fix["commit"]
        files = f" ({', '.join(c['files'][:3])})" if c.get("files") else ""
        out.append(f"fixed by commit {c['sha'][:10]}: {c['subject']}{files}")
    if fix.get("command"):
        out.append(f"passed later: $ {fix['command']['command']}")
    return out


def query_footer(r: dict[str, Any]) -> str:
    """"2 of 13 candidates shown, 24 of 1500 tokens; left out: 11 beyond 2 per parent" in words, not a dict."""
    cut = r.get("cut") or {}
    why = []
    if cut.get("parentCap"):
        why.append(f"{cut['parentCap']} beyond 2 per commit/session")
    if cut.get("limit"):
        why.append(f"{cut['limit']} past --limit")
    if cut.get("budget"):
        why.append(f"{cut['budget']} over the budget (~{cut.get('budgetTokens', 0)} tokens)")
    if cut.get("shortened"):
        why.append(f"{cut['shortened']} shortened to fit")
    text = (f"{len(r.get('results') or [])} of {r.get('candidates', 0)} candidates shown, "
            f"{cut.get('tokensUsed', 0)} of {r.get('budget')} tokens")  # fmt: skip
    if why:
        text += "; left out: " + ", ".join(why)
    if r.get("freshness") and r["freshness"] != "fresh":
        text += f"; graph {r['freshness']}"
    return text


@click.command()
@click.argument("text", nargs=-1, required=True)
@click.option("--budget", type=int, help="Token budget for the answer (tokens ~ characters / 4; default 1500).")
@click.option("--limit", type=int, help="At most this many results (default 10).")
@click.option("--all-repos", is_flag=True, help="Search all your repositories, fused per repository.")
@click.option("--kind", "kinds", multiple=True,
              type=click.Choice(["commit", "change", "shell", "doc", "turn", "fact", "procedure", "handoff"]),
              help="Only these kinds (repeatable).")  # fmt: skip
@json_option
@pass_app
def query(app: App, text: tuple[str, ...], budget: int | None, limit: int | None, all_repos: bool, kinds: tuple[str, ...]) -> None:
    """Ask history and memory: commits, failed commands, docs, transcripts, facts, within a token budget."""
    _flush_spool(app)
    args: dict[str, Any] = {"text": " ".join(text), "user": app.user}
    if all_repos:
        args["allRepos"] = True
    else:
        args["repo"] = app.repo
    if budget:
        args["budget"] = budget
    if limit:
        args["limit"] = limit
    if kinds:
        args["kinds"] = list(kinds)
    app.emit(app.call("query", args), render_query)


@click.command()
@click.argument("kind", type=click.Choice(SCAN_KINDS))
@click.option("--limit", type=int, help="Show at most this many items (default 50).")
@click.option("--claude-dir", type=click.Path(file_okay=False), help="Claude config dir (default ~/.claude).")
@click.option("--scrape-shell", is_flag=True, help="With `shell`: also preview the scraped history files.")
@json_option
@pass_app
def scan(app: App, kind: str, limit: int | None, claude_dir: str | None, scrape_shell: bool) -> None:
    """Dry run: what `nexus history sync` would store from one source, with its signal. Writes nothing."""
    args: dict[str, Any] = {"kind": kind, "repo": app.repo, "user": app.user}
    if limit:
        args["limit"] = limit
    if claude_dir:
        args["claudeDir"] = str(Path(claude_dir).absolute())
    if scrape_shell:
        args["scrape"] = history_files()

    def render(r: dict[str, Any]) -> str:
        lines = [f"scan {r['kind']} (dry run, nothing written)"]
        for item in r.get("items", []):
            if r["kind"] == "git":
                lines.append(f"  {item['sha'][:10]} {item['signal']:.2f} {item['kind']:8} {item['subject']}")
            elif r["kind"] == "diff":
                what = item["skipped"] or f"+{item['additions']} -{item['deletions']}"
                lines.append(f"  {item['sha'][:10]} {item['signal']:.2f} {item['status']} {item['path']} ({what})")
            elif r["kind"] == "shell":
                lines.append(f"  {item['signal']:.2f} exit {item['exitCode']}  {item['command']}  [{item['repo']}]")
            elif r["kind"] == "docs":
                lines.append(f"  {item['path']}:{item['line']} {' > '.join(item['headingPath'])} ({item['chars']} chars)")
            else:
                lines.append(f"  {item['sessionId'][:8]} #{item['ordinal']} {item['role']}: {item['text'][:80]!r}")
        for item in r.get("scraped", []):
            lines.append(f"  scraped ({item['shell']}): {item['command']}")
        if "total" in r:
            lines.append(f"  total {r['total']}" + (f", {r['denied']} forgotten" if r.get("denied") else ""))
        if r["kind"] == "shell":
            lines.append(f"  {r['pending']} pending in {r['spool']}, {r['outsideRepos']} outside registered repositories")
        return "\n".join(lines)

    app.emit(app.call("scan", args), render)
