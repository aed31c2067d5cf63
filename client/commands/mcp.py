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


@click.command()
@json_option
@pass_app
def mcp(app: App) -> None:
    """Serve the NEXUS tools to an editor or agent over MCP (stdio); starts the daemon if it is down."""
    from ..mcp_bridge import serve

    serve(app.dirs, cwd=app.cwd, user=app.user, autostart=app.autostart)


@click.command()
@click.option("--symbol", required=True, help="The symbol to investigate (a name, qualified name or id).")
@click.option("--question", default=None, help="What to find out (default: who is affected by changing it).")
@click.option("--provider", type=click.Choice(["claude", "stub"]), default="claude", show_default=True,
              help="The model: Claude (needs ANTHROPIC_API_KEY and the `claude` extra) or the scripted stub.")
@click.option("--model", default=None, help="Claude model name (default: the provider's default).")
@click.option("--max-steps", default=12, show_default=True, help="Upper bound on model turns.")
@json_option
@pass_app
def agent(app: App, symbol: str, question: str | None, provider: str, model: str | None, max_steps: int) -> None:
    """Run the reference agent: it talks to `nexus mcp` as an outside MCP client and ends with a cited report."""
    from ..agent import AgentConfig, run_agent
    from ..agent.report import render_report

    config = AgentConfig(
        symbol=symbol, question=question, provider=provider, model=model, repo=app.repo,
        max_steps=max_steps, user=app.user,
    )
    outcome = run_agent(config)
    if app.json:
        click.echo(json.dumps(outcome, indent=2, default=str))
    else:
        click.echo(render_report(outcome))
    if outcome.get("error"):
        sys.exit(1)
