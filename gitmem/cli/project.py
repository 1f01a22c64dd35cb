"""``gitmem project scan`` and ``gitmem project show``: the project memory (``projects/<project-id>.md``)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import click

from gitmem.cli.app import State, cli, emit_json, json_option, pass_state
from gitmem.errors import GitmemError
from gitmem.text.counted import counted


@cli.group()
def project() -> None:
    """Project memory: stack, commands, conventions and structure of a code project, plus learned notes."""


_CWD = click.option("--cwd", "cwd", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
                    help="A directory of the code project (default: the current directory).")


@project.command("scan")
@_CWD
@click.option("--project", "project_id", default="", help="Project id to use (default: from the code repo).")
@click.option("--force", is_flag=True, help="Scan even when the last scan is younger than 24 hours.")
@click.option("--timeout", type=float, default=0.0, help="End after this many seconds (0: no limit).")
@click.option("--warm", is_flag=True, hidden=True,
              help="After a commit, compute the next session's recall block for the directory (the hooks' scan).")
@json_option
@pass_state
def project_scan(state: State, cwd: Path | None, project_id: str, force: bool, timeout: float, warm: bool,
                 as_json: bool) -> None:
    """Scan the code project (read its files, run nothing) and commit projects/<id>.md when it changed."""
    from gitmem.projects.memory import scan_and_write

    if timeout > 0 and hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, lambda *_: os._exit(0))  # bounded: never outlive the deadline
        signal.alarm(max(1, int(timeout)))
    repo = state.open()
    where = (cwd or Path.cwd()).resolve()
    result = scan_and_write(repo, where, project=project_id or state.config.project, force=force)
    refreshed = _refresh_git_hooks(where)
    if warm and result.changed:
        # the commit moved HEAD, which the cached session block depends on: the next session start in this
        # directory would compute it in its own time (1-2 s with the model to load); the alarm still bounds this
        from gitmem.cli.hooks import warm_directory

        warm_directory(state, where, 0)
    if as_json:
        emit_json(result.to_dict())
        return
    for path, action in refreshed:
        click.echo(f"{action} {path} (gitmem's git hook, from an earlier version)")
    if result.scan is None:
        click.echo(f"{result.path} is up to date (scanned within 24 h; --force scans again)")
        return
    took = f"{counted(result.scan.files, 'file')} in {result.scan.seconds * 1000:.0f} ms"
    if result.changed:
        click.echo(f"Scanned {result.scan.root} ({took}); committed {result.path} [{result.sha[:8]}]")
    else:
        click.echo(f"Scanned {result.scan.root} ({took}); {result.path} unchanged, nothing committed")


def _refresh_git_hooks(where: Path) -> list[tuple[Path, str]]:
    """gitmem's git hooks in the code repository around ``where``, brought up to this version when an earlier one
    installed them (the scan runs in the background at a session start, at most daily: an upgrade reaches every
    repository the agent works in). Never fails the scan."""
    from gitmem.git.coderepo import code_repo_root, hooks_dir
    from gitmem.learn.oncommit import refresh_hooks

    try:
        root = code_repo_root(where)
        if root is None:
            return []
        hooks = hooks_dir(root)
        return [(hooks / name, action) for name, action in refresh_hooks(hooks).items()]
    except (GitmemError, OSError):
        return []


@project.command("show")
@_CWD
@click.option("--project", "project_id", default="", help="Project id (default: from the code repo).")
@json_option
@pass_state
def project_show(state: State, cwd: Path | None, project_id: str, as_json: bool) -> None:
    """Print the project file and the summary injected at session start."""
    from gitmem.errors import NotFoundError
    from gitmem.projects.identity import code_context
    from gitmem.projects.memory import needs_scan, project_path, project_summary, read

    repo = state.open()
    pid = project_id or code_context((cwd or Path.cwd()).resolve(), state.config.project).project
    pf = read(repo.path, pid)
    if pf is None:
        raise NotFoundError(f"no project memory for {pid} ({project_path(pid)})",
                            "create it with: gitmem project scan")
    if as_json:
        emit_json({"project": pid, "path": project_path(pid), "meta": pf.meta, "sections": pf.sections,
                   "summary": project_summary(repo.path, pid), "stale": needs_scan(repo.path, pid)})
        return
    click.echo((repo.path / project_path(pid)).read_text("utf-8"), nl=False)
