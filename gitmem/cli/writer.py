"""``gitmem writer ...``: writer memory (characters, relationships, scenes, world rules of a work); parsing and
printing only, the work is in :mod:`gitmem.writer`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from gitmem.cli.app import State, cli, emit_json, json_option, pass_state
from gitmem.cli.wiki import warn_skipped

_WORK = click.option("--work", required=True, metavar="W", help="The work (novel, story) it belongs to.")
_NOTES = click.option("--notes", default=None, help="Free notes (the body of the file).")
#: per kind: the options of add/update, as (option, field, help)
_OPTIONS: dict[str, list[tuple[str, str, str]]] = {
    "character": [("--voice", "voice", "How the character speaks, in words."),
                  ("--register", "register", "formal, neutral or casual (also archaic, slang, ...)."),
                  ("--length", "sentence_length", "Usual sentence length: short, medium or long."),
                  ("--tics", "tics", "Comma-separated verbal tics."),
                  ("--keywords", "keywords", "Comma-separated words typical of the character."),
                  ("--taboo", "taboo", "Comma-separated words the character never says."),
                  ("--arc", "arc", "Comma-separated emotional arc, e.g. 'ch1: guarded, ch9: open'.")],
    "relationship": [("--kind", "kind", "What they are to each other (rivals, siblings, ...)."),
                     ("--changes", "changes", "Comma-separated changes, e.g. 'ch4: allies'.")],
    "scene": [("--chapter", "chapter", "Chapter number."),
              ("--shots", "shots", "Comma-separated shots or beats."),
              ("--mood", "mood", "Comma-separated mood tags."),
              ("--characters", "characters", "Comma-separated characters present.")],
    "world": [("--tags", "tags", "Comma-separated tags.")],
}
_ARGS = {"relationship": ("a", "b")}


def _writer(state: State, work: str) -> Any:
    from gitmem.writer.store import Writer

    return Writer(state.open(), work)


@cli.group()
def writer() -> None:
    """Writer memory for fiction: characters (voice, register, keywords, taboo, arc), relationships, scenes and
    world rules of a work. Used only through these commands, never by the coding hooks."""


def _print_entity(entity: Any, as_json: bool) -> None:
    if as_json:
        emit_json(entity.to_dict())
        return
    click.echo(f"{entity.kind}: {entity.title} ({entity.name})")
    for key, value in entity.fields.items():
        click.echo(f"  {key}: {', '.join(map(str, value)) if isinstance(value, list) else value}")
    if entity.body:
        click.echo(entity.body)


def _save_command(kind: str, update: bool) -> Callable[..., None]:
    def command(state: State, work: str, notes: str | None, as_json: bool, **values: Any) -> None:
        fields = {field: values.pop(option) for option, field in
                  ((o.lstrip("-").replace("-", "_"), f) for o, f, _h in _OPTIONS[kind])}
        if kind == "relationship":
            fields.update(a=values["a"], b=values["b"])
            title = f"{values['a']} & {values['b']}"
        else:
            title = values["title"]
        entity, sha = _writer(state, work).save(kind, title, notes=notes, update=update, **fields)
        if as_json:
            emit_json({**entity.to_dict(), "commit": sha})
        else:
            click.echo(f"{'updated' if update else 'added'} {kind} {entity.name}" + (f" [{sha[:8]}]" if sha else ""))

    command.__doc__ = f"{'Change' if update else 'Add'} a {kind} (one commit)."
    for option, _field, help_text in reversed(_OPTIONS[kind]):
        command = click.option(option, default=None, help=help_text)(command)
    for name in reversed(_ARGS.get(kind, ("title",))):
        command = click.argument(name)(command)
    return pass_state(json_option(_NOTES(_WORK(command))))


def _list_command(kind: str) -> Callable[..., None]:
    def command(state: State, work: str, as_json: bool) -> None:
        notes = _writer(state, work)
        found = notes.list(kind)
        warn_skipped(notes.warnings)
        if as_json:
            emit_json([e.to_dict() for e in found])
            return
        for entity in found:
            click.echo(f"{entity.name}  {entity.title}")

    command.__doc__ = f"List the {kind} entries of a work."
    return pass_state(json_option(_WORK(command)))


def _show_command(kind: str) -> Callable[..., None]:
    def command(state: State, name: str, work: str, as_json: bool) -> None:
        _print_entity(_writer(state, work).show(kind, name), as_json)

    command.__doc__ = f"Show one {kind} (by name or title)."
    return pass_state(json_option(_WORK(click.argument("name")(command))))


for _kind in _OPTIONS:
    _group = writer.group(_kind, help=f"The {_kind} entries of a work: add, update, list, show.")(lambda: None)
    _group.command("add")(_save_command(_kind, False))
    _group.command("update")(_save_command(_kind, True))
    _group.command("list")(_list_command(_kind))
    _group.command("show")(_show_command(_kind))


@writer.command("search")
@click.argument("query")
@_WORK
@click.option("--kind", type=click.Choice(list(_OPTIONS)), help="Only this kind.")
@click.option("-k", "--limit", default=10, show_default=True, type=click.IntRange(1, 100))
@json_option
@pass_state
def writer_search(state: State, query: str, work: str, kind: str | None, limit: int, as_json: bool) -> None:
    """Search a work's characters, relationships, scenes and world rules (English and Chinese): by keywords,
    and by meaning too once `gitmem reindex` or the warm-up has embedded them."""
    hits = _writer(state, work).search(query, k=limit, kind=kind)
    if as_json:
        emit_json([{**h.to_dict(), "kind": h.category} for h in hits])
        return
    for hit in hits:
        click.echo(f"{hit.score:7.3f}  {hit.category:12} {hit.title}\n         {hit.snippet}")
    if not hits:
        click.echo("nothing matches", err=True)


@writer.command("check-line")
@click.argument("character")
@click.argument("line")
@_WORK
@json_option
@pass_state
def writer_check_line(state: State, character: str, line: str, work: str, as_json: bool) -> None:
    """Score LINE against CHARACTER's voice (taboo words, register, length, keywords) and explain each finding."""
    result = _writer(state, work).check_line(character, line)
    if as_json:
        emit_json(result.to_dict())
        return
    click.echo(f"{'in voice' if result.ok else 'out of voice'} (score {result.score:.2f})")
    for finding in result.findings:
        click.echo(f"  {finding['kind']}: {finding['detail']}")
    if result.matched:
        click.echo(f"  in voice: {', '.join(result.matched)}")
