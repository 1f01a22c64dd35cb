"""CLI commands that serve memory to other programs: ``mcp``, ``serve``, and ``install``/``uninstall`` of the
MCP server into Codex, Gemini CLI, OpenCode and Claude Code."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from gitmem.cli.app import State, cli, emit_json, json_option, pass_state
from gitmem.cli.hooks import install, kept, uninstall
from gitmem.errors import GitmemError

SERVE_EXTRA = 'install them with: pip install "gitmem-memory[serve]"'


def _service(state: State, project: str = "") -> Any:
    from gitmem.serve.service import MemoryService

    return MemoryService(state.open(), project=project)


def _require(*modules: str) -> None:
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise GitmemError(f"the serve packages are missing ({', '.join(missing)})", SERVE_EXTRA)


@cli.command()
@pass_state
def mcp(state: State) -> None:
    """Serve the memory over MCP on stdin/stdout (what an agent's MCP configuration starts).

    Tools: memory_search, memory_get, memory_history, memory_remember, memory_forget, wiki_query, wiki_ingest,
    instincts_list. The wiki tools default to the project of the working directory."""
    _require("mcp")
    from gitmem.cli.wiki import project_of
    from gitmem.serve.mcp import run_stdio

    run_stdio(_service(state, project_of(state, "")))


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but loopback needs --token.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@click.option("--token", envvar="GITMEM_TOKEN", metavar="T",
              help="Require 'Authorization: Bearer T' on every request (default: GITMEM_TOKEN).")
@click.option("--ui", is_flag=True, help="Also serve the web viewer at /ui/.")
@click.option("--max-body", default=256 * 1024, show_default=True, type=click.IntRange(1024),
              help="Largest request body in bytes (larger ones get 413).")
@click.option("-v", "--verbose", is_flag=True, help="Log one line per request on stderr (never memory text).")
@pass_state
def serve(state: State, host: str, port: int, token: str | None, ui: bool, max_body: int, verbose: bool) -> None:
    """Serve the HTTP API (and with --ui the web viewer) from one warm process; local only by default.

    Endpoints: POST /memory/store, GET /memory/retrieve, GET /memory/{id}, GET /memory/{id}/history,
    DELETE /memory/{id}?reason=, GET /recall?cwd=, GET /health; the OpenAPI document is /openapi.json."""
    if not token and not is_loopback(host):
        raise GitmemError(f"refusing to serve on {host} without a token",
                          "pass --token (or set GITMEM_TOKEN), or bind to 127.0.0.1")
    _require("fastapi", "uvicorn", *(["jinja2"] if ui else []))
    import logging

    from gitmem.serve.runner import run_server

    logging.basicConfig(stream=sys.stderr, level=logging.INFO if verbose else logging.WARNING,
                        format="gitmem: %(message)s")
    run_server(_service(state), host=host, port=port, token=token or None, ui=ui, max_body=max_body,
               announce=lambda url: click.echo(f"gitmem: serving {state.config.repo} at {url}"
                                               + (f" (web viewer: {url}/ui/)" if ui else ""), err=True))


# -- install <agent> --mcp ------------------------------------------------------------------------------
def _mcp_scope_option(func: Any) -> Any:
    func = click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")(func)
    func = click.option("--mcp", "mcp_flag", is_flag=True, default=True,
                        help="Write the MCP server entry (the only way this agent connects; implied).")(func)
    return click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True,
                        help="user: the agent's file in your home; project: the one in this folder.")(func)


def mcp_change(agent: str, scope: str, dry_run: bool, as_json: bool, *, remove: bool = False) -> None:
    """Install (or remove) gitmem's MCP server in ``agent``'s configuration and report what changed."""
    from gitmem.serve.agents import config_path, install_server, server_command, uninstall_server

    path = config_path(agent, scope, home=Path.home(), cwd=Path.cwd())
    if remove:
        change = uninstall_server(agent, path, dry_run=dry_run)
    else:
        change = install_server(agent, path, server_command(), dry_run=dry_run)
    if as_json:
        emit_json({"agent": agent, "path": str(change.path), "changed": change.changed, "dry_run": dry_run,
                   "action": change.action, "backup": str(change.backup) if change.backup else None})
        return
    if not change.changed:
        click.echo(f"nothing to change in {change.path}")
    elif dry_run and change.file_removed:
        click.echo(f"would remove {change.path}: it holds nothing but gitmem's MCP server")
    elif dry_run:
        verb = {"added": "add", "updated": "update", "removed": "remove"}[change.action]
        click.echo(f"would {verb} the gitmem MCP server in {change.path}; the file would read:")
        click.echo(change.text, nl=False)
    elif change.file_removed:
        click.echo(f"removed {change.path}: it held nothing but gitmem's MCP server")
    else:
        click.echo(f"{change.action} the gitmem MCP server in {change.path}{kept(change)}")


def _agent_commands(agent: str, title: str) -> None:
    @install.command(agent, help=f"Add gitmem's MCP server to {title}'s configuration (other entries stay).")
    @_mcp_scope_option
    @json_option
    def install_agent(scope: str, mcp_flag: bool, dry_run: bool, as_json: bool) -> None:
        mcp_change(agent, scope, dry_run, as_json)

    @uninstall.command(agent, help=f"Remove exactly gitmem's MCP server from {title}'s configuration.")
    @_mcp_scope_option
    @json_option
    def uninstall_agent(scope: str, mcp_flag: bool, dry_run: bool, as_json: bool) -> None:
        mcp_change(agent, scope, dry_run, as_json, remove=True)


for _agent, _title in (("codex", "Codex"), ("gemini", "Gemini CLI"), ("opencode", "OpenCode")):
    _agent_commands(_agent, _title)
