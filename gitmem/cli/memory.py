"""The memory verbs: ``init``, ``config``, ``remember``, ``show``, ``list``, ``edit``, ``forget``, ``restore``,
``move``, ``log``, ``import``, ``export``, ``doctor`` and ``purge-secrets``."""


import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from gitmem.cli.app import State, cli, emit_json, json_option, pass_state, read_text, report_redaction
from gitmem.errors import GitmemError, ValidationError
from gitmem.store.document import CATEGORIES, SCOPES, TYPES
from gitmem.text.counted import counted


# -- init / config ---------------------------------------------------------------------------------------
@cli.command()
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--remote", default="", metavar="URL", help="Remote to clone from (if it has memories) or push to.")
@json_option
@pass_state
def init(state: State, path: Path | None, remote: str, as_json: bool) -> None:
    """Create the memory repository (or clone it from --remote). Running it again changes nothing."""
    from gitmem.store.layout import init_repo

    target = path or state.config.repo
    result = init_repo(target, remote=remote or state.config.remote, author=state.config.author)
    if as_json:
        emit_json({"path": str(result.path), "action": result.action, "remote": result.remote})
        return
    words = {"created": "Created", "cloned": "Cloned", "exists": "Already initialised:", "adopted": "Initialised"}
    click.echo(f"{words[result.action]} memory repository {result.path}"
               + (f" (remote {result.remote})" if result.remote else ""))


@cli.command("config")
@json_option
@pass_state
def show_config(state: State, as_json: bool) -> None:
    """Show the configuration in force and the files it came from, in gitmem.toml's syntax (any part of it can be
    copied into gitmem.toml or the user config)."""
    from gitmem.config import as_dict

    data = as_dict(state.config)
    if as_json:
        emit_json(data)
        return
    sources = data.pop("sources", [])
    cache_home = data.pop("cache_home", "")  # the environment's (XDG_CACHE_HOME), not a setting a file holds
    ignored = data.pop("ignored", [])
    click.echo("# in force; read from: " + (", ".join(sources) if sources else "the built-in defaults only"))
    for key in ignored:
        click.echo(f"# ignored, unknown to this version (a newer gitmem's setting, or a typo): {key}")
    if cache_home:
        click.echo(f"# the search index of a memory repository you cannot write goes under: {cache_home}")
    origin = _origin(state)
    if origin and origin != state.config.remote:  # "remote" is what init clones from; sync uses the repo's origin
        click.echo(f"# the memory repository syncs with its git remote origin: {origin}")
    for key, value in data.items():
        if not isinstance(value, dict):
            click.echo(f"{key} = {_toml_value(value)}")
    for key, value in data.items():
        if isinstance(value, dict):
            click.echo(f"\n[{key}]")
            for name, item in value.items():
                click.echo(f"{name} = {_toml_value(item)}")


def _origin(state: State) -> str:
    """The memory repository's ``origin`` URL as it may be shown (no password), "" when there is none."""
    from gitmem.git.remote import display_url
    from gitmem.git.store import GitStore

    try:
        url = GitStore(state.config.repo).remote_url()
    except GitmemError:
        return ""
    return display_url(url) if url else ""


def _toml_value(value: Any) -> str:
    """A setting as TOML writes it: booleans in lower case, strings and lists of strings quoted as JSON quotes them
    (a TOML basic string accepts every JSON escape)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


# -- remember / show / list ----------------------------------------------------------------------------
@cli.command()
@click.argument("text", required=False)
@click.option("--type", "type_", type=click.Choice(TYPES),
              help="Kind of memory (default: project when it belongs to a project, inside a code project or with "
                   "--project; else user).")
@click.option("--category", default="background", show_default=True,
              type=click.Choice(CATEGORIES))
@click.option("--importance", default=3, show_default=True, type=click.IntRange(1, 5), help="1 (trivia) to 5.")
@click.option("--tags", default="", help="Comma-separated tags.")
@click.option("--scope", type=click.Choice(SCOPES),
              help="project (default inside a code project), global (default elsewhere) or session (expires after "
                   "a day).")
@click.option("--project", default="", help="Project id (default: the code project around the working directory).")
@click.option("--name", default="", help="Short title (default: the first line).")
@click.option("--why", default="", help="Why this holds.")
@click.option("--how", default="", help="How to apply it.")
@click.option("--id", "memory_id", default=None, help="Use this id instead of a generated one.")
@click.option("--auto", is_flag=True, help="Decide where TEXT belongs (memory, project, wiki, directive or "
              "notepad), say why, and store nothing when it is a duplicate or a conflict.")
@click.option("--supersede", is_flag=True, help="With --auto: store a conflicting fact, deprecating the old one.")
@click.option("--dry-run", is_flag=True, help="With --auto: decide and check, store nothing.")
@json_option
@pass_state
def remember(state: State, text: str | None, type_: str | None, category: str, importance: int, tags: str,
             scope: str | None, project: str, name: str, why: str, how: str, memory_id: str | None,
             auto: bool, supersede: bool, dry_run: bool, as_json: bool) -> None:
    """Remember TEXT (or stdin): one new memory, one commit (with --auto: wherever it belongs). Inside a code
    project the memory belongs to that project unless --scope global says it holds everywhere; where it went is
    said on stderr."""
    if scope == "global" and project:
        raise ValidationError("--scope global and --project contradict each other", "pass only one of them")
    if project:
        from gitmem.store.document import check_name

        project = check_name(project, "project")  # "../../x" is a mistake, not a project: refused as the wiki does
    if auto or supersede or dry_run:  # the remember router: gitmem/router, printed by gitmem/cli/router.py
        from gitmem.cli.router import remember_auto

        return remember_auto(state, read_text(text), project, supersede=supersede, dry_run=dry_run,
                             as_json=as_json)
    repo = state.open()
    if scope != "global" and not project:
        project = state.project_here()
    memory = repo.remember(read_text(text), type=type_, category=category, importance=importance, tags=tags,
                           scope=scope, project=project, name=name, why=why, how=how, id=memory_id)
    report_redaction(repo.last_redaction)
    if as_json:
        emit_json({"id": memory.id, "path": memory.path, "scope": memory.scope, "project": memory.project,
                   "commit": (repo.git.head() or b"").decode(), "redacted": repo.last_redaction})
    else:
        click.echo(memory.id)
        click.echo(f"gitmem: remembered in {_where(memory)} ({memory.path})"
                   + ("; gitmem move ID --global makes it hold everywhere" if memory.project else ""), err=True)


def _where(memory: Any) -> str:
    return f"project {memory.project}" if memory.project else "global memory (every project)"


@cli.command()
@click.argument("memory_id", metavar="ID")
@json_option
@pass_state
def show(state: State, memory_id: str, as_json: bool) -> None:
    """Show one memory."""
    from gitmem.store.document import dumps

    memory = state.open().get(memory_id)
    if as_json:
        emit_json(memory.to_dict())
    else:
        click.echo(dumps(memory), nl=False)


def _one_line(memory: Any) -> str:
    flag = " [deprecated]" if memory.deprecated else ""
    tags = f"  #{' #'.join(memory.tags)}" if memory.tags else ""
    return f"{memory.id}  {memory.type}/{memory.category} {memory.importance}★  {memory.title}{tags}{flag}"


@cli.command("list")
@click.option("--type", "type_", help="Only this type.")
@click.option("--category", help="Only this category.")
@click.option("--tag", help="Only memories with this tag.")
@click.option("--project", default=None, help="Only this project's memories.")
@click.option("--deprecated", is_flag=True, help="Include deprecated memories.")
@json_option
@pass_state
def list_(state: State, type_: str | None, category: str | None, tag: str | None, project: str | None,
          deprecated: bool, as_json: bool) -> None:
    """List memories, newest first."""
    repo = state.open()
    memories = repo.list(type=type_, category=category, tag=tag, project=project, deprecated=deprecated)
    for warning in repo.warnings:
        hint = "" if "gitmem doctor" in str(warning) else " (run gitmem doctor)"
        click.echo(f"gitmem: warning: skipped {warning}{hint}", err=True)
    if as_json:
        emit_json([m.to_dict() for m in memories])
        return
    for memory in memories:
        click.echo(_one_line(memory))
    if not memories:
        click.echo("no memories match", err=True)


# -- edit / forget / restore ---------------------------------------------------------------------------
@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--draft", "draft_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Go on editing a draft that an earlier edit kept (it says where) instead of the stored memory.")
@pass_state
def edit(state: State, memory_id: str, draft_path: Path | None) -> None:
    """Edit a memory in $EDITOR; it is validated before anything is committed."""
    from gitmem.cli.editing import again, check_unchanged, discard, edit_draft
    from gitmem.errors import DocumentError
    from gitmem.store.document import Memory, dumps, loads
    from gitmem.text.records import replace

    repo = state.open()
    try:
        memory: Memory | None = repo.get(memory_id)
    except DocumentError as exc:  # a file doctor names: opened as it is, to be mended, and checked before saving
        repo.raw(memory_id)  # unless it is no text at all (not UTF-8, a link): that error stands
        click.echo(f"gitmem: {exc.message}: the file is opened as it is, to be mended", err=True)
        memory = None

    def current() -> str:
        return dumps(repo.get(memory_id)) if memory is not None else repo.raw(memory_id)

    result = edit_draft(current(), draft_path)
    if result is None:
        click.echo("no changes")
        return
    edited, draft = result
    retry = again(["gitmem", "edit", memory.id if memory else memory_id], draft)
    try:
        changed = loads(edited, str(draft))
    except DocumentError as exc:
        raise GitmemError(f"not saved: {exc.message}", retry) from None
    if changed.id != (memory.id if memory else memory_id):
        raise GitmemError("not saved: the id cannot be changed", retry)
    if memory is not None and not memory.name and changed.name == memory.title:
        # the name was the text's first line, written for readers: it follows the text, as it did before the edit
        changed = replace(changed, name="")
    with repo.git.locked():  # nothing else writes between the check and the save
        check_unchanged(draft, current())
        saved = repo.save(changed)
    discard(draft)
    report_redaction(repo.last_redaction)
    click.echo(f"saved {saved.id}")


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--reason", required=True, help="Why this memory is wrong or obsolete.")
@click.option("--purge", is_flag=True, help="Delete the file (history keeps it; gitmem restore brings it back).")
@json_option
@pass_state
def forget(state: State, memory_id: str, reason: str, purge: bool, as_json: bool) -> None:
    """Deprecate a memory (a commit; the file stays with deprecated: true)."""
    repo = state.open()
    memory = repo.forget(memory_id, reason, purge=purge)
    back = [m.id for m in repo.last_unfolded]
    if as_json:
        emit_json({"id": memory.id, "purged": purge, "reason": memory.deprecated_reason, "restored": back})
    else:
        click.echo(f"{'purged' if purge else 'deprecated'} {memory.id}")
        if back:
            click.echo(f"restored {counted(len(back), 'memory')} it summarised: {', '.join(back)}")


@cli.command()
@click.argument("memory_id", metavar="ID")
@pass_state
def restore(state: State, memory_id: str) -> None:
    """Undo forget: make a deprecated or purged memory active again."""
    memory = state.open().restore(memory_id)
    click.echo(f"restored {memory.id}")


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--project", default="", help="Move it to this project (project scope).")
@click.option("--global", "to_global", is_flag=True, help="Make it global: it holds in every project.")
@json_option
@pass_state
def move(state: State, memory_id: str, project: str, to_global: bool, as_json: bool) -> None:
    """Move a memory to another project or make it global (one commit)."""
    if project and to_global:
        raise ValidationError("--project and --global cannot be combined", "pass either --project ID or --global")
    if not project and not to_global:
        raise ValidationError("say where to move the memory", "pass either --project ID or --global")
    memory = state.open().move(memory_id, "" if to_global else project)
    if as_json:
        emit_json({"id": memory.id, "path": memory.path, "scope": memory.scope, "project": memory.project})
    else:
        click.echo(f"moved {memory.id} to {_where(memory)} ({memory.path})")


# -- log / import / export / doctor --------------------------------------------------------------------
@cli.command()
@click.argument("memory_id", metavar="[ID]", required=False)
@click.option("--op", help="Only this operation (add, update, deprecate, restore, purge, ingest, ...).")
@click.option("--source", help="Only this source (cli, hook, commit, import, or a full source such as import:s1).")
@click.option("-n", "--limit", type=click.IntRange(1), help="At most this many entries.")
@json_option
@pass_state
def log(state: State, memory_id: str | None, op: str | None, source: str | None, limit: int | None,
        as_json: bool) -> None:
    """The audit trail: what changed, when, why and from where (read from git)."""
    repo = state.open()
    entries = repo.log(memory_id, op=op, source=source, limit=limit)
    if not entries and op:
        # ops are whatever the history's commits say (Gitmem-Op): a misspelt one is told apart from an absent one
        ops = sorted({e.op for e in repo.log() if e.op})
        if op not in ops:
            raise ValidationError(f"no commit of this repository has the op {op!r}",
                                  f"its ops are: {', '.join(ops) or 'none yet'}")
    if as_json:
        emit_json([{"sha": e.sha, "time": datetime.fromtimestamp(e.time, UTC).isoformat(), "author": e.author,
                    "subject": e.subject, "op": e.op, "source": e.source, "ids": e.ids,
                    "trailers": e.trailers} for e in entries])
        return
    for e in entries:
        when = datetime.fromtimestamp(e.time, UTC).strftime("%Y-%m-%d %H:%M")
        source = e.source or "-"
        source = source if len(source) <= 24 else source[:23] + "…"  # a commit's source names a 40-hex SHA
        click.echo(f"{e.sha[:10]}  {when}  {e.op or '-':9} {source:24} {e.subject}")
    if not entries:
        click.echo("no commits match", err=True)


@cli.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@json_option
@pass_state
def import_(state: State, file: Path, as_json: bool) -> None:
    """Import memories from a JSONL file (one object a line, "text" required) as one commit."""
    from tqdm import tqdm

    from gitmem.store.importing import read_jsonl

    repo = state.open()
    if not file.is_file():
        raise GitmemError(f"{file} does not exist", "give the path of a .jsonl file")
    records = list(read_jsonl(file))
    with tqdm(total=len(records), desc="import", unit="mem", file=sys.stderr, disable=None, leave=False) as bar:
        result = repo.import_records(records, origin=file.name, progress=bar.update)
    data = {"added": result.added, "updated": result.updated, "unchanged": result.unchanged,
            "commit": result.commit, "redacted": result.redacted}
    if as_json:
        emit_json(data)
    else:
        click.echo(f"imported {file.name}: {result.added} added, {result.updated} updated, "
                   f"{result.unchanged} unchanged" + (f" (commit {result.commit[:10]})" if result.commit else ""))


@cli.command()
@click.option("--active", is_flag=True, help="Leave out deprecated memories.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write to a file.")
@pass_state
def export(state: State, active: bool, output: Path | None) -> None:
    """Export memories as JSONL (what gitmem import reads back). A file that cannot be read is named on stderr and
    the exit status is 1: the export is not the whole repository."""
    repo = state.open()

    def lines() -> Iterator[str]:
        for record in repo.export(deprecated=not active):
            yield json.dumps(record, ensure_ascii=False) + "\n"

    if output and (output.is_symlink() or (output.exists() and not output.is_file())):
        # a device, a pipe or a link (``-o /dev/null``, ``-o /dev/stdout``): written to as it is; the temporary
        # file renamed over it replaced /dev/null itself with a regular file
        try:
            with output.open("w", encoding="utf-8") as fh:
                fh.writelines(lines())
        except OSError as exc:
            raise GitmemError(f"cannot write {output}: {exc.strerror}", "give a file path") from None
    elif output:
        tmp = output.with_name(f".{output.name}.tmp")
        try:
            with tmp.open("w", encoding="utf-8") as fh:
                fh.writelines(lines())
            tmp.replace(output)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise GitmemError(f"cannot write {output}: {exc.strerror}",
                              "check that its folder exists and is writable") from None
    else:
        for line in lines():
            click.echo(line, nl=False)
    if repo.warnings:
        for warning in repo.warnings:
            click.echo(f"gitmem: warning: not exported: {warning}", err=True)
        raise GitmemError(f"the export leaves out {counted(len(repo.warnings), 'memory file')} that cannot be read",
                          "fix or restore them (gitmem doctor says how), then export again")


def _hook_issues(repo_path: Path) -> list[Any]:
    """Whether Claude Code runs gitmem's hooks (user or project settings) and the last hook errors."""
    from gitmem.agents.claude.context import recent_errors
    from gitmem.agents.claude.settings import installed_events, settings_path
    from gitmem.store.layout import Issue

    found = []
    # in the home folder, the project's settings file is the user's: named once
    paths = dict.fromkeys(settings_path(scope, home=Path.home(), cwd=Path.cwd()) for scope in ("user", "project",
                                                                                              "local"))
    for path in paths:
        events = installed_events(path)
        if events:
            found.append(Issue("ok", str(path), f"gitmem hooks installed for {', '.join(sorted(events))}"))
    if not found:
        found.append(Issue("warning", "~/.claude/settings.json", "gitmem's Claude Code hooks are not installed "
                           "(run: gitmem install claude)"))
    for line in recent_errors(repo_path):
        # "<time> hook <event> …" or "<time> hook: …" from a hook; "<time> gitmem <args>" from a command that failed
        kind = "hook error" if line.split(" ", 2)[1:2] in (["hook"], ["hook:"]) else "command error"
        found.append(Issue("warning", "local/gitmem.log", f"recent {kind}: {line[:200]}"))
    return found


@cli.command()
@json_option
@pass_state
def doctor(state: State, as_json: bool) -> None:
    """Check the memory repository and report every problem with its path and reason."""
    repo = state.open()
    from gitmem.cli.search import reading_issues

    issues = repo.doctor() + _hook_issues(repo.path) + reading_issues(state, repo)
    if as_json:
        emit_json([vars(i) for i in issues])
    else:
        for issue in issues:
            click.echo(f"{issue.level:7} {issue.path}: {issue.message}")
    if any(i.level == "error" for i in issues):
        sys.exit(1)


# Hidden until the README's command list names it (tests/test_docs.py); docs/store.md documents it, and doctor
# tells the user to run it when history holds a secret.
@cli.command("purge-secrets")
@click.option("--yes", is_flag=True, help="Rewrite history (without it, only the plan is printed).")
@json_option
@pass_state
def purge_secrets(state: State, yes: bool, as_json: bool) -> None:
    """Rewrite history without the secrets it holds (prints the plan; changes nothing without --yes)."""
    from gitmem.leaks import purge, scan

    repo = state.open()
    patterns = repo.config.redaction.extra_patterns
    found = scan(repo.git, extra_patterns=patterns)
    push = f"git -C {repo.path} push --force origin main"
    if not found.leaks:
        if as_json:
            emit_json({"leaks": [], "rewritten": 0})
        else:
            click.echo(f"no secret in {counted(found.commits, 'commit')} and "
                       f"{counted(found.blobs, 'file version')}: nothing to purge")
        return
    if not yes:
        if as_json:
            emit_json({"leaks": [{"place": leak.place, "path": leak.path, "commit": leak.commit,
                                  "kinds": list(leak.kinds)} for leak in found.leaks], "refs": list(found.refs)})
            return
        holds = "holds a secret" if len(found.leaks) == 1 else "hold secrets"
        click.echo(f"{counted(len(found.leaks), 'place')} in history {holds}:")
        for leak in found.leaks:
            click.echo(f"  {leak}")
        click.echo("With --yes, gitmem will:\n"
                   f"  1. rewrite {', '.join(r for r in found.refs if not r.startswith('refs/remotes/'))}: each "
                   "secret becomes [REDACTED:kind] (redacted-kind in file names and ids); dates, authors and "
                   "the shape of history are kept, commits before the first secret keep their SHA\n"
                   "  2. delete the remote-tracking refs and the reflogs, remove the old objects and rebuild "
                   "the search index\n"
                   f"Then replace the remote's history ({push}), have every other clone cloned again (a sync "
                   "from an old clone would bring the secrets back), and rotate the secrets: they were exposed.")
        return
    with repo.git.locked():
        result = purge(repo.git, found, extra_patterns=patterns)
    repo.reindex()
    if as_json:
        emit_json({"rewritten": result.rewritten, "refs": result.refs, "dropped": result.dropped,
                   "pruned": result.pruned})
        return
    click.echo(f"rewrote {counted(result.rewritten, 'commit')}; "
               f"{counted(len(result.dropped), 'remote-tracking ref')} deleted; "
               f"{counted(result.pruned, 'old object')} removed")
    for ref, (old, new) in result.refs.items():
        click.echo(f"  {ref}: {old[:10]} -> {new[:10]}")
    click.echo(f"next: {push}; clone again on every other machine; rotate the secrets")
