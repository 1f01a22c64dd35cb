"""``gitmem remember --auto`` (the remember router) and ``gitmem notepad ...`` (the session notepad); the work is
in :mod:`gitmem.router`."""

from __future__ import annotations

from pathlib import Path

import click

from gitmem.cli.app import State, cli, emit_json, json_option, pass_state, read_text
from gitmem.cli.wiki import project_of
from gitmem.text.counted import counted

#: what ``--supersede`` stores in place of a conflicting stored memory (:meth:`gitmem.router.route.Router.remember`)
SUPERSEDES = ("memory", "directive", "project")


def remember_auto(state: State, text: str, project: str, *, supersede: bool, dry_run: bool, as_json: bool) -> None:
    """Route ``text`` and print the decision (JSON: surface, reason, and id/page or duplicate_of/conflict)."""
    from gitmem.router.route import auto_remember

    repo = state.open()
    # a memory or directive goes where ``remember`` would put it (global outside a code project); the wiki, the
    # project notes and the notepad go by the folder's name there, as ``gitmem wiki`` and the hooks do
    result = auto_remember(repo, text, project=project_of(state, project), supersede=supersede, dry_run=dry_run,
                           memory_project=project or state.project_here())
    if as_json:
        emit_json(result.to_dict())
        return
    click.echo(f"{result.surface}: {result.reason}")
    if result.duplicate_of:
        click.echo(f"duplicate of {result.duplicate_of}: nothing stored")
    if result.conflict:
        held = result.conflict.get("id") or result.conflict.get("note", "")
        click.echo(f"conflicts with {held}: {result.conflict['text']}")
        if dry_run and supersede and "id" in result.conflict and result.surface in SUPERSEDES:
            click.echo(f"dry run, nothing stored: without --dry-run it would be stored as a {result.surface} and "
                       f"{held} deprecated (superseded by it)")
        elif not result.superseded:
            click.echo("nothing stored (store it anyway with --supersede)" if not supersede else
                       f"nothing stored (--supersede replaces only a stored memory, and only with a memory, "
                       f"directive or project note: settle the conflict with {held} by hand)")
    if result.superseded:
        click.echo(f"superseded {result.superseded}")
    if result.stored and result.id:
        project_of_it = repo.get(result.id).project
        click.echo(f"stored {result.id} in " + (f"project {project_of_it}" if project_of_it
                                                else "global memory (every project)"))
    elif result.stored:
        click.echo(f"stored {result.page or result.surface}")


@cli.group()
def notepad() -> None:
    """Session notepad: scratch notes on this machine only (local/, never committed); priority notes go into
    the next prompts."""


def _where(state: State, project: str) -> tuple[Path, str]:
    return state.open().path / "local", project_of(state, project) or "global"


@notepad.command("show")
@click.option("--project", default="", help="Project id (default: the project of the working directory).")
@json_option
@pass_state
def notepad_show(state: State, project: str, as_json: bool) -> None:
    """The live notes of both sections."""
    from gitmem.router import notepad as pad

    local, pid = _where(state, project)
    notes = pad.read(local, pid)
    if as_json:
        emit_json({"project": pid, **notes})
        return
    for section, items in notes.items():
        click.echo(f"## {section}")
        for item in items:
            click.echo(f"- {item['text']}")


@notepad.command("add")
@click.argument("text", required=False)
@click.option("--section", type=click.Choice(["priority", "working"]), default="working", show_default=True)
@click.option("--project", default="", help="Project id (default: the project of the working directory).")
@pass_state
def notepad_add(state: State, text: str | None, section: str, project: str) -> None:
    """Add TEXT (or stdin) to the notepad."""
    from gitmem.router import notepad as pad

    local, pid = _where(state, project)
    patterns = state.config.redaction.extra_patterns
    added, kinds = pad.add(local, pid, read_text(text), section, extra_patterns=patterns)
    if kinds:
        click.echo(f"gitmem: redacted secrets before saving the note: {', '.join(kinds)}", err=True)
    click.echo(f"added to {section}" if added else f"already in {section}")


@notepad.command("clear")
@click.option("--section", type=click.Choice(["priority", "working"]), help="Only this section.")
@click.option("--project", default="", help="Project id (default: the project of the working directory).")
@pass_state
def notepad_clear(state: State, section: str | None, project: str) -> None:
    """Remove the notes (of one section)."""
    from gitmem.router import notepad as pad

    local, pid = _where(state, project)
    click.echo(f"removed {counted(pad.clear(local, pid, section), 'note')}")
