"""CLI commands for Claude Code: ``hook <event>``, ``install claude``, ``uninstall claude``."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from gitmem.cli.app import F, State, cli, emit_json, json_option, pass_state


@cli.command("hook", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("event", required=False, default="")
@pass_state
def hook(state: State, event: str) -> None:
    """Handle one Claude Code hook event (its JSON on stdin). Always exits 0.

    EVENT is one of session-start, user-prompt-submit, pre-tool-use, post-tool-use, pre-compact, stop,
    session-end. The installed hooks run the faster ``gitmem-hook EVENT`` (or
    ``python -m gitmem.agents.claude.entry``)."""
    from gitmem.agents.claude.entry import read_input, run

    data = read_input(event)
    try:
        cwd = Path.cwd()
    except OSError:
        cwd = Path.home()
    run(event, data, env=dict(os.environ), cwd=cwd, home=Path.home(), repo_option=state.repo_option)
    sys.exit(0)


@cli.command("warm", hidden=True)
@click.option("--cwd", "directory", type=click.Path(path_type=Path, file_okay=False, exists=True), required=True)
@click.option("--timeout", type=float, default=60.0)
@pass_state
def warm(state: State, directory: Path, timeout: float) -> None:
    """Compute and cache the session-start recall block for DIRECTORY (run detached after gitmem's commits)."""
    warm_directory(state, directory, timeout)


def warm_directory(state: State, directory: Path, timeout: float) -> None:
    """Warm the recall block of ``directory`` within ``timeout`` seconds (the process ends itself after that)."""
    import signal

    from gitmem.agents.claude.context import make_context
    from gitmem.agents.claude.inputs import warm_recall

    if timeout > 0 and hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, lambda *_: os._exit(0))  # bounded: never outlive the deadline
        signal.alarm(max(1, int(timeout)))
    ctx = make_context({"cwd": str(directory)}, env=dict(os.environ), home=Path.home(), cwd=directory,
                       repo_option=state.repo_option)
    warm_recall(ctx)


def default_hook_command() -> str:
    """The command Claude Code should run: ``gitmem-hook`` next to this Python if it is installed (a plain script,
    ``hooks/gitmem-hook``, that imports nothing but the hook entry), else this Python with ``-m
    gitmem.agents.claude.entry`` (absolute paths, so the hooks work whatever Claude Code's PATH is)."""
    bindir = Path(sys.executable).parent
    script = shutil.which("gitmem-hook", path=str(bindir))
    if script:
        return shlex.quote(str(Path(script)))
    return f"{shlex.quote(sys.executable)} -m gitmem.agents.claude.entry"


def _scope_option(func: F) -> F:
    func = click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")(func)
    return click.option("--scope", type=click.Choice(["user", "project", "local"]), default="user",
                        show_default=True,
                        help="user: ~/.claude/settings.json; project: .claude/settings.json; "
                             "local: .claude/settings.local.json")(func)


@cli.group()
def install() -> None:
    """Connect gitmem to a coding agent."""


@cli.group()
def uninstall() -> None:
    """Disconnect gitmem from a coding agent."""


def _report(change: object, dry_run: bool, as_json: bool) -> None:
    from gitmem.agents.claude.settings import Change

    assert isinstance(change, Change)
    if as_json:
        emit_json({"path": str(change.path), "changed": change.changed, "dry_run": dry_run, "added": change.added,
                   "updated": change.updated, "removed": change.removed,
                   "backup": str(change.backup) if change.backup else None, "restored": change.restored,
                   "file_removed": change.file_removed})
        return
    if not change.changed:
        click.echo(f"nothing to change in {change.path}")
        return
    parts = [f"{label}: {', '.join(events)}" for label, events in
             (("added", change.added), ("updated", change.updated), ("removed", change.removed)) if events]
    if dry_run:
        if change.file_removed:
            click.echo(f"would remove {change.path} ({'; '.join(parts)}): it holds nothing but gitmem's entries")
            return
        click.echo(f"would change {change.path} ({'; '.join(parts)}); the file would read:")
        click.echo(change.text, nl=False)
        return
    click.echo(f"{done(change, 'updated')} {change.path} ({'; '.join(parts)}){kept(change)}")


def done(change: Any, verb: str) -> str:
    """What an install or uninstall did to the file: ``verb``, unless it gave back the pre-install bytes or
    removed a file gitmem had made."""
    return "restored" if change.restored else "removed" if change.file_removed else verb


def kept(change: Any) -> str:
    """Where the file's bytes from before gitmem's first change are, when a backup holds them."""
    if change.restored:
        return "; its bytes from before gitmem's first change are back (the backup is removed)"
    return f"; previous file kept as {change.backup}" if change.backup else ""


def _mcp_option(func: F) -> F:
    return click.option("--mcp", is_flag=True, help="Instead of the hooks, add (or remove) gitmem's MCP server "
                        "(user: ~/.claude.json; project: .mcp.json; local is not supported).")(func)


@install.command("claude")
@_scope_option
@_mcp_option
@json_option
@pass_state
def install_claude(state: State, scope: str, dry_run: bool, mcp: bool, as_json: bool) -> None:
    """Add gitmem's hooks to Claude Code's settings (other hooks and settings stay as they are)."""
    from gitmem.agents.claude.settings import install as do_install
    from gitmem.agents.claude.settings import settings_path

    if mcp:
        from gitmem.cli.serve import mcp_change

        return mcp_change("claude", scope, dry_run, as_json)

    path = settings_path(scope, home=Path.home(), cwd=Path.cwd())
    change = do_install(path, default_hook_command(), dry_run=dry_run)
    _report(change, dry_run, as_json)
    repo = state.repo_path
    if not as_json and repo is not None and not (repo / ".git").is_dir():
        click.echo(f"gitmem: no memory repository at {repo} yet; create it with: gitmem init", err=True)


@uninstall.command("claude")
@_scope_option
@_mcp_option
@json_option
def uninstall_claude(scope: str, dry_run: bool, mcp: bool, as_json: bool) -> None:
    """Remove exactly gitmem's hooks from Claude Code's settings."""
    from gitmem.agents.claude.settings import settings_path
    from gitmem.agents.claude.settings import uninstall as do_uninstall

    if mcp:
        from gitmem.cli.serve import mcp_change

        return mcp_change("claude", scope, dry_run, as_json, remove=True)

    path = settings_path(scope, home=Path.home(), cwd=Path.cwd())
    change = do_uninstall(path, dry_run=dry_run)
    _report(change, dry_run, as_json)
