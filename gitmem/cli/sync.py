"""CLI commands for syncing the memory repository: ``sync``, ``status`` and ``resolve`` (review mode is in
:mod:`gitmem.cli.review`, extraction on commit in :mod:`gitmem.cli.githooks`)."""

from __future__ import annotations

import shlex
import sys
from typing import Any

import click

from gitmem.cli.app import State, cli, emit_json, json_option, pass_state
from gitmem.errors import GitmemError, NotFoundError, ValidationError
from gitmem.text.counted import counted
from gitmem.text.records import replace

#: the seconds a command's network step (fetch, push) may take when no ``--timeout`` is given: without a limit, a
#: remote that took the connection and never answered held ``gitmem sync`` (and every sync waiting on it) for good
NETWORK_TIMEOUT = 300.0


def _refresh_index(repo: Any) -> None:
    """Bring the search index up to the new HEAD now (it would also catch up on the next search)."""
    try:
        from gitmem.search.index import open_index

        open_index(repo).refresh()
    except Exception:  # the index is derived state: never fail a sync because of it
        pass


def _regenerate_wiki_indexes(repo: Any, changed: list[str]) -> bool:
    """Rebuild the index of each project wiki whose pages a merge changed: a merged index took the newer side's,
    which lacks the pages only the other side added (the session start's wiki overview reads it). True when a
    commit was made."""
    from gitmem.store.wikipage import RESERVED_PAGES
    from gitmem.wiki.store import Wiki

    projects = sorted({parts[1] for parts in (path.split("/") for path in changed)
                       if len(parts) == 3 and parts[0] == "wiki" and parts[2].removesuffix(".md") not in
                       RESERVED_PAGES})
    return any([bool(Wiki(repo, project).regenerate(source="sync")) for project in projects])


def _sync_json(result: Any) -> dict[str, Any]:
    return {"action": result.action, "remote": result.remote, "branch": result.branch, "head": result.head,
            "merge_commit": result.merge_commit, "pushed": result.pushed, "changed": result.changed,
            "conflicts": result.conflicts, "conflicted_ids": result.conflicted_ids, "warnings": result.warnings,
            "seconds": round(result.seconds, 3)}


def _print_sync(result: Any) -> None:
    words = {
        "up-to-date": "already up to date",
        "pushed": "pushed local changes",
        "fast-forward": f"pulled {counted(len(result.changed), 'changed file')}",
        "merged": f"merged {counted(len(result.changed), 'changed file')}",
        "proposed": f"pushed local changes to branch {result.branch} for review",
    }
    line = f"{words.get(result.action, result.action)} ({result.remote}, {result.seconds:.2f} s)"
    if result.action == "merged" and result.pushed:
        line += ", pushed the merge"
    click.echo(line)
    for conflict in result.conflicts:
        click.echo(f"conflict: {conflict}")
    if result.conflicted_ids:
        click.echo("both versions are kept; see gitmem status, settle with gitmem resolve ID")
    if any(conflict.startswith("wiki/") for conflict in result.conflicts):
        click.echo("settle a page with: gitmem wiki edit PAGE --project P (see gitmem status)")


@cli.command("sync")
@click.option("--timeout", type=click.FloatRange(0.1), default=NETWORK_TIMEOUT, show_default=True,
              help="Give up on a network step (fetch, push) after this many seconds.")
@click.option("--review", is_flag=True, help="Push local changes to a review branch (same as sync.mode = review).")
@click.option("--no-push", is_flag=True, help="Only fetch and merge.")
@json_option
@pass_state
def sync_command(state: State, timeout: float, review: bool, no_push: bool, as_json: bool) -> None:
    """Fetch, merge (never rebase) and push the memory repository."""
    from gitmem.cli.review import _print_pr_hint  # here, not at the top: cli_review imports this module
    from gitmem.sync.round import sync

    repo = state.open()
    config = repo.config
    mode = "review" if review else config.sync.mode
    result = sync(repo.git, author=repo.git.author(config.author), branch=config.sync.branch, mode=mode,
                  timeout=timeout, push_changes=not no_push)
    if result.action == "merged" and _regenerate_wiki_indexes(repo, result.changed) and result.pushed:
        again = sync(repo.git, author=repo.git.author(config.author), branch=config.sync.branch, mode=mode,
                     timeout=timeout, push_changes=True)  # the regenerated indexes follow the merge
        result.head = again.head or result.head
    if result.changed:
        _refresh_index(repo)
    if mode == "review" and result.pushed:
        _print_pr_hint(repo.git.remote_url(), config.sync.branch, result.branch)
    for warning in result.warnings:
        click.echo(f"gitmem: warning: {warning}", err=True)
    if as_json:
        emit_json(_sync_json(result))
    else:
        _print_sync(result)


# -- status / resolve ---------------------------------------------------------------------------------
def conflicts_of(repo: Any) -> list[tuple[Any, list[Any]]]:
    """Conflicted memories with their sibling versions."""
    from gitmem.sync.merge import conflicts

    return conflicts(repo.list(deprecated=True))


@cli.command("status")
@click.option("--fetch", "do_fetch", is_flag=True, help="Fetch first, so ahead/behind is current.")
@json_option
@pass_state
def status_command(state: State, do_fetch: bool, as_json: bool) -> None:
    """Ahead/behind the remote, conflicted memories and wiki pages, and changes not yet committed."""
    from gitmem.git import remote
    from gitmem.sync import round as sync
    from gitmem.sync.sidecars import conflict_files, original_path
    from gitmem.wiki.store import conflicted_pages

    repo = state.open()
    branch = repo.config.sync.branch
    fetch_error = ""
    if do_fetch and repo.git.remote_url():
        try:
            remote.fetch(repo.git, branch, timeout=repo.config.sync.timeout)
        except GitmemError as exc:
            fetch_error = str(exc)
    info = sync.status(repo.git, branch)
    conflicts = conflicts_of(repo)
    kept = conflict_files(repo.path)  # files a sync could not merge: the other side's version, read by nothing
    pages = conflicted_pages(repo)
    if as_json:
        emit_json({"remote": info.remote, "branch": info.branch, "ahead": info.ahead, "behind": info.behind,
                   "pending": list(info.pending), "fetch_error": fetch_error,
                   "conflicts": [{"id": m.id, "path": m.path, "versions": [v.id for v in vs]}
                                 for m, vs in conflicts],
                   "conflicted_pages": [{"project": project, "page": page.name, "title": page.title}
                                        for project, page in pages],
                   "kept_versions": [{"path": rel, "of": original_path(rel)} for rel in kept]})
        return
    if info.remote:
        click.echo(f"remote {info.remote} ({info.branch}): {info.ahead} ahead, {info.behind} behind"
                   + ("" if do_fetch else " (as of the last sync; --fetch to check now)"))
    else:
        click.echo(f"no remote (add one with: gitmem init {shlex.quote(str(repo.path))} --remote URL)")
    if fetch_error:
        click.echo(f"fetch failed: {fetch_error}")
    if conflicts:
        click.echo(f"{counted(len(conflicts), 'conflicted memory')} (settle with: gitmem resolve ID "
                   "[--take VERSION]):")
        for memory, versions in conflicts:
            click.echo(f"  {memory.id}  {memory.title}")
            for version in versions:
                click.echo(f"    version {version.id}  {version.title}")
    if pages:
        click.echo(f"{counted(len(pages), 'conflicted wiki page')} (settle with: gitmem wiki edit PAGE --project P):")
        for project, page in pages:
            click.echo(f"  {page.name} --project {project}  {page.title}")
    if kept:
        click.echo(f"{counted(len(kept), 'version')} of files a sync could not merge, kept beside them and read by "
                   "nothing (gitmem doctor says how to settle each):")
        for rel in kept:
            click.echo(f"  {rel}  (of {original_path(rel)})")
    if not conflicts and not kept and not pages:
        click.echo("no conflicts")
    if info.pending:
        click.echo(f"{counted(len(info.pending), 'file')} changed but not committed:")
        for path in info.pending:
            click.echo(f"  {path}")


@cli.command("resolve")
@click.argument("memory_id", metavar="ID")
@click.option("--take", "take_id", metavar="VERSION", help="Keep this version's text (a version id or ID itself).")
@click.option("--text", help="The settled text instead ('-' reads stdin).")
@json_option
@pass_state
def resolve_command(state: State, memory_id: str, take_id: str | None, text: str | None, as_json: bool) -> None:
    """Settle a conflicted memory: keep its text (default), another version's (--take) or new text (--text);
    the versions are deleted in the same commit (history keeps them)."""
    from gitmem.store import document as docs
    from gitmem.sync.merge import CONFLICT_OF, CONFLICT_WITH, resolve

    repo = state.open()
    with repo.git.locked():
        memory = repo.get(memory_id)
        owner = memory.extra.get(CONFLICT_OF)
        if owner:
            try:
                main = repo.get(str(owner))
            except NotFoundError:
                main = replace(memory, id=str(owner))  # the original is gone: the version takes its place
        else:
            main = memory
        if not main.conflicted and not owner:
            raise ValidationError(f"memory '{main.id}' is not conflicted",
                                  "nothing to resolve; gitmem status lists the conflicted ones")
        versions = []
        for vid in main.extra.get(CONFLICT_WITH) or ([memory.id] if owner else []):
            try:
                versions.append(repo.get(str(vid)))
            except NotFoundError:
                continue
        take = None
        if take_id is not None:
            candidates = {m.id: m for m in (main, *versions)}
            if take_id not in candidates:
                raise ValidationError(f"'{take_id}' is not a version of '{main.id}'",
                                      f"use one of: {', '.join(candidates)}")
            take = candidates[take_id]
        if text == "-":
            text = sys.stdin.read()
        resolved = replace(resolve(main, versions, take, text), updated=docs.utcnow())
        sha, written = repo.commit_batch(
            [resolved], subject=f"resolve: {resolved.title}", op="resolve", source="cli",
            remove=[v for v in versions if v.path != resolved.path], merge=lambda _old, new: new,
            body=f"Kept the text of {take.id if take else ('new text' if text else resolved.id)}; "
                 f"{counted(len(versions), 'other version')} removed (history keeps them).")
        resolved = written[0]
    _refresh_index(repo)
    if as_json:
        emit_json({"id": resolved.id, "commit": sha, "removed": [v.id for v in versions]})
    else:
        click.echo(f"resolved {resolved.id} ({counted(len(versions), 'version')} removed)")
