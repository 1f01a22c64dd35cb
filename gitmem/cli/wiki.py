"""``gitmem wiki ...``: the project wiki (``wiki/<project-id>/*.md``); parsing and printing only, the work is in
:mod:`gitmem.wiki`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from gitmem.cli.app import State, cli, emit_json, json_option, pass_state, read_text, report_redaction
from gitmem.errors import DocumentError, GitmemError, NotFoundError

F = TypeVar("F", bound=Callable[..., Any])
CATEGORIES = ("architecture", "decision", "pattern", "debugging", "environment", "session-log", "reference",
              "convention")


def _project_option(func: F) -> F:
    return click.option("--project", "project", default="", metavar="P",
                        help="Project id (default: the project of the working directory).")(func)


def project_of(state: State, project: str) -> str:
    """``--project``, else the configured project, else the id of the code project in the working directory."""
    if project:
        return project
    from gitmem.projects.identity import code_context

    return code_context(Path.cwd().resolve(), state.config.project).project


def warn_skipped(problems: Iterable[DocumentError]) -> None:
    """One line on stderr for each file a listing left out because it cannot be read, as ``gitmem list`` says it
    for memories: the file, what is wrong, and where to look."""
    for problem in problems:
        hint = "" if "gitmem doctor" in str(problem) else " (run gitmem doctor)"
        click.echo(f"gitmem: warning: skipped {problem}{hint}", err=True)


def _wiki(state: State, project: str) -> Any:
    from gitmem.wiki.store import Wiki

    return Wiki(state.open(), project_of(state, project))


@cli.group()
def wiki() -> None:
    """Project wiki: curated pages per project (architecture, decisions, debugging notes, session logs)."""


def _page_options(func: F) -> F:
    decorators: list[Callable[[Any], Any]] = [
        click.argument("text", required=False),
        click.option("--title", required=True, help="Page title; its slug is the page name."),
        click.option("--category", type=click.Choice(CATEGORIES), help="Kind of page (default: reference)."),
        click.option("--tags", default="", help="Comma-separated tags."),
        click.option("--confidence", type=click.Choice(["high", "medium", "low"]), help="How sure (default: medium)."),
        click.option("--file", "file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                     help="Read the text from a Markdown file."),
        click.option("--source", "sources", default="", help="Comma-separated sources (session ids, commit SHAs)."),
        _project_option,
        json_option,
        pass_state,
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def _page_text(text: str | None, file: Path | None) -> str:
    if file is not None:
        if text is not None:
            raise GitmemError("both TEXT and --file given", "pass one of them")
        try:
            raw = file.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise GitmemError(f"{file} is not UTF-8 text", "convert it to UTF-8 first") from None
        if raw.startswith("---\n") and "\n---" in raw[4:]:  # a page exported with frontmatter: keep the body
            raw = raw[4:].split("\n---", 1)[1].lstrip("-").lstrip("\n")
        return raw
    return read_text(text)


def _print_write(result: Any, as_json: bool) -> None:
    report_redaction(list(result.redacted))
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(result.page)


@wiki.command("ingest")
@_page_options
def wiki_ingest(state: State, text: str | None, title: str, category: str | None, tags: str,
                confidence: str | None, file: Path | None, sources: str, project: str, as_json: bool) -> None:
    """Add TEXT (or --file, or stdin) to the page for --title: a new page, or a new timestamped section of the
    existing page with the same name. One commit."""
    result = _wiki(state, project).ingest(title, _page_text(text, file), category=category, tags=tags,
                                          confidence=confidence, sources=sources)
    _print_write(result, as_json)


@wiki.command("add")
@_page_options
def wiki_add(state: State, text: str | None, title: str, category: str | None, tags: str, confidence: str | None,
             file: Path | None, sources: str, project: str, as_json: bool) -> None:
    """Create a page with TEXT (or --file, or stdin) as its body, as written. Refused if the page exists."""
    result = _wiki(state, project).add(title, _page_text(text, file), category=category, tags=tags,
                                       confidence=confidence, sources=sources)
    _print_write(result, as_json)


@wiki.command("query")
@click.argument("query")
@click.option("--tag", "tags", multiple=True, help="Only pages with this tag (repeatable).")
@click.option("--category", type=click.Choice(CATEGORIES), help="Only pages of this category.")
@click.option("-k", "--limit", default=10, show_default=True, type=click.IntRange(1, 100), help="Most results.")
@_project_option
@json_option
@pass_state
def wiki_query(state: State, query: str, tags: tuple[str, ...], category: str | None, limit: int, project: str,
               as_json: bool) -> None:
    """Search the wiki's pages (English and Chinese), best first: by keywords, and by meaning too once
    `gitmem reindex` or the warm-up has embedded them."""
    hits = _wiki(state, project).query(query, k=limit, category=category, tags=tags)
    if as_json:
        emit_json([h.to_dict() for h in hits])
        return
    for hit in hits:
        click.echo(f"{hit.score:7.3f}  {hit.name}  {hit.title}\n         {hit.snippet}")
    if not hits:
        click.echo("no page matches", err=True)


@wiki.command("lint")
@click.option("--fix", is_flag=True, help="Regenerate the index and environment pages (removes nothing written).")
@_project_option
@json_option
@pass_state
def wiki_lint(state: State, fix: bool, project: str, as_json: bool) -> None:
    """Conflicted pages after a sync, orphans, stale pages, broken [[links]], oversized and low-confidence pages,
    contradictions. Exits 0."""
    book = _wiki(state, project)
    fixed = book.regenerate() if fix else ""
    findings = book.lint()
    if as_json:
        emit_json([f.to_dict() for f in findings])
        return
    if fixed:
        click.echo(f"regenerated the index and environment pages [{fixed[:8]}]", err=True)
    for finding in findings:
        click.echo(f"{finding.kind:15} {finding.page}: {finding.detail}")
    if not findings:
        click.echo(f"no problems in the wiki of {book.project}", err=True)


@wiki.command("list")
@click.option("--category", type=click.Choice(CATEGORIES), help="Only pages of this category.")
@_project_option
@json_option
@pass_state
def wiki_list(state: State, category: str | None, project: str, as_json: bool) -> None:
    """The wiki's pages, by name."""
    book = _wiki(state, project)
    pages = [p for p in book.pages() if category is None or p.category == category]
    warn_skipped(book.unreadable.values())
    if as_json:
        emit_json([{k: v for k, v in p.to_dict().items() if k != "body"} for p in pages])
        return
    for page in pages:
        tags = f"  #{' #'.join(page.tags)}" if page.tags else ""
        click.echo(f"{page.name}  [{page.category}, {page.confidence}]  {page.title}{tags}")
    if not pages:
        click.echo("no pages", err=True)


@wiki.command("read")
@click.argument("page")
@_project_option
@json_option
@pass_state
def wiki_read(state: State, page: str, project: str, as_json: bool) -> None:
    """Print one page."""
    from gitmem.store.wikipage import dumps

    found = _wiki(state, project).read(page)
    if as_json:
        emit_json(found.to_dict())
    else:
        click.echo(dumps(found), nl=False)


@wiki.command("edit")
@click.argument("page")
@click.option("--draft", "draft_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Go on editing a draft that an earlier edit kept (it says where) instead of the stored page.")
@_project_option
@json_option
@pass_state
def wiki_edit(state: State, page: str, draft_path: Path | None, project: str, as_json: bool) -> None:
    """Edit a page in $EDITOR (frontmatter and body); it is validated before anything is committed. A page a sync
    left conflicted is settled here: keep what holds and remove the '## Conflicting version' section."""
    from gitmem.cli.editing import again, check_unchanged, discard, edit_draft
    from gitmem.store import wikipage as wp

    store = _wiki(state, project)
    current = store.read(page)
    result = edit_draft(wp.dumps(current), draft_path)
    if result is None:
        if as_json:
            emit_json({"page": current.name, "commit": "", "conflicted": current.conflicted})
        else:
            click.echo("no changes")
        return
    text, draft = result
    with store.repo.git.locked():  # nothing else writes between the check and the save
        check_unchanged(draft, wp.dumps(store.read(current.name)))
        try:
            written = store.edit(current.name, text)
        except GitmemError as exc:
            retry = again(["gitmem", "wiki", "edit", current.name, "--project", store.project], draft)
            raise GitmemError(f"not saved: {exc.message}", retry) from None
    discard(draft)
    report_redaction(list(written.redacted))
    conflicted = store.read(current.name).conflicted
    if as_json:
        emit_json({"page": written.page, "commit": written.commit, "conflicted": conflicted})
        return
    click.echo(f"saved {written.page}" if written.commit else "no changes")
    if conflicted:
        click.echo(f"still conflicted: keep what holds and remove the '## {wp.CONFLICT_HEADING}' section",
                   err=True)


@wiki.command("delete")
@click.argument("page")
@click.option("--reason", required=True, help="Why the page goes (kept in the commit message).")
@_project_option
@json_option
@pass_state
def wiki_delete(state: State, page: str, reason: str, project: str, as_json: bool) -> None:
    """Delete a page: a commit with the reason; the history keeps every version."""
    book = _wiki(state, project)
    sha = book.delete(page, reason)
    if as_json:
        emit_json({"page": page, "commit": sha, "reason": reason})
    else:
        click.echo(f"deleted {page} [{sha[:8]}]")


@wiki.command("log")
@click.argument("page", required=False)
@click.option("-n", "--limit", type=click.IntRange(1), help="At most this many entries.")
@_project_option
@json_option
@pass_state
def wiki_log(state: State, page: str | None, limit: int | None, project: str, as_json: bool) -> None:
    """The audit trail of a page (or of the whole wiki), read from git."""
    from gitmem.store.wikipage import check_page_name

    book = _wiki(state, project)
    entries = book.log(page, limit=limit)
    if page and not entries and not book.exists(check_page_name(page)):  # a deleted page keeps its history
        raise NotFoundError(f"no wiki page '{check_page_name(page)}' in the history of project {book.project}",
                            f"list pages with: gitmem wiki list --project {book.project}")
    if as_json:
        emit_json([{"sha": e.sha, "time": datetime.fromtimestamp(e.time, UTC).isoformat(), "subject": e.subject,
                    "op": e.op, "source": e.source, "pages": e.trailers.get("Gitmem-Page", [])} for e in entries])
        return
    for e in entries:
        when = datetime.fromtimestamp(e.time, UTC).strftime("%Y-%m-%d %H:%M")
        click.echo(f"{e.sha[:10]}  {when}  {e.op or '-':9} {e.source or '-':12} {e.subject}")
