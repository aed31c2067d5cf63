"""`nexus mcp` (the MCP server over stdio) and `nexus agent` (the reference agent, an MCP client of it).

Both import the `mcp` SDK only when they run: `import nexus_client.cli` must stay free of mcp and pydantic.
"""

from __future__ import annotations

import json
import sys

import click

from ..app import App, json_option, pass_app


def register(main: click.Group) -> None:
    main.add_command(mcp)
    main.add_command(agent)


@click.group(invoke_without_command=True)
@pass_app
@click.pass_context
def mcp(ctx: click.Context, app: App) -> None:
    """Serve the NEXUS tools to an editor or agent over MCP (stdio); starts the daemon if it is down.

    `nexus mcp install --client C` writes that editor's configuration instead."""
    if ctx.invoked_subcommand is not None:
        return
    from ..mcp_bridge import serve

    serve(app.dirs, cwd=app.cwd, user=app.user, autostart=app.autostart)


@mcp.command("install")
@click.option("--client", "client_name", required=True,
              type=click.Choice(["claude-code", "cursor", "vscode", "opencode"]),
              help="The editor or agent to configure.")  # fmt: skip
@click.option("--project", is_flag=True,
              help="Write the repository's own config file (e.g. .mcp.json) instead of the user-wide one.")
@click.option("--print", "print_only", is_flag=True, help="Print the entry to add; write nothing.")
@json_option
@pass_app
def mcp_install(app: App, client_name: str, project: bool, print_only: bool) -> None:
    """Write (merge) an editor's MCP config so it runs this `nexus mcp`, by absolute path."""
    from pathlib import Path

    from .. import mcp_install as mi

    where = Path(app.repo) if project else None
    if print_only:
        from nexusd.errors import BadRequest

        try:
            p = mi.plan(client_name, where)
        except BadRequest as exc:  # an unreadable file: still print the entry to merge by hand
            click.echo(f"# note: {exc.message}", err=True)
            p = mi.plan(client_name, where, ignore_existing=True)
        if app.json:
            app.emit({k: v for k, v in p.items() if k != "merged"})
        else:
            click.echo(json.dumps(p["entry"], indent=2))
            click.echo(f"# merge into {p['file']}", err=True)
        return
    p = mi.install(client_name, where)

    def render(r: dict) -> str:  # type: ignore[type-arg]
        if not r["written"]:
            return f"{r['file']} already runs {' '.join(r['command'])} (unchanged)"
        lines = [f"wrote {r['file']}: server `nexus` runs {' '.join(r['command'])}"]
        if r.get("backup"):
            lines.append(f"  previous file kept as {r['backup']}")
        if r["otherServers"]:
            lines.append(f"  other servers kept: {', '.join(r['otherServers'])}")
        lines.append("  restart the editor (or reload its MCP servers) to pick it up")
        return "\n".join(lines)

    app.emit({k: v for k, v in p.items() if k != "merged"}, render)


@click.command()
@click.option("--symbol", required=True, help="The symbol to investigate (a name, qualified name or id).")
@click.option("--question", default=None, help="What to find out (default: who is affected by changing it).")
@click.option("--provider", type=click.Choice(["claude", "stub"]), default="claude", show_default=True,
              help="The model: Claude (needs ANTHROPIC_API_KEY and the `claude` extra) or the scripted stub.")
@click.option("--model", default=None, help="Claude model name (default: the provider's default).")
@click.option("--max-steps", default=12, show_default=True, help="Upper bound on model turns.")
@click.option("--handoff", is_flag=True, help="Leave a handoff for the next session at the end (off by default).")
@json_option
@pass_app
def agent(app: App, symbol: str, question: str | None, provider: str, model: str | None, max_steps: int,
          handoff: bool) -> None:  # fmt: skip
    """Run the reference agent: it talks to `nexus mcp` as an outside MCP client and ends with a cited report."""
    from ..agent import AgentConfig, run_agent
    from ..agent.report import render_report

    config = AgentConfig(
        symbol=symbol, question=question, provider=provider, model=model, repo=app.repo,
        max_steps=max_steps, user=app.user, handoff=handoff,
    )
    outcome = run_agent(config)
    if app.json:
        click.echo(json.dumps(outcome, indent=2, default=str))
    else:
        click.echo(render_report(outcome))
    if outcome.get("error"):
        sys.exit(1)
