"""CLI commands for git-native workflows: ``sync``, ``status``, ``resolve``, ``propose``, ``review``,
``git-hooks install|uninstall`` and ``extract``."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from gitmem.cli import State, cli, emit_json, json_option, pass_state
from gitmem.errors import GitmemError, NotFoundError, ValidationError
from gitmem.fileio import atomic_write


def _refresh_index(repo: Any) -> None:
    """Bring the search index up to the new HEAD now (it would also catch up on the next search)."""
    try:
        from gitmem.index import open_index

        open_index(repo).refresh()
    except Exception:  # the index is derived state: never fail a sync because of it
        pass


def _sync_json(result: Any) -> dict[str, Any]:
    return {"action": result.action, "remote": result.remote, "branch": result.branch, "head": result.head,
            "merge_commit": result.merge_commit, "pushed": result.pushed, "changed": result.changed,
            "conflicts": result.conflicts, "conflicted_ids": result.conflicted_ids,
            "seconds": round(result.seconds, 3)}


def _print_sync(result: Any) -> None:
    words = {
        "up-to-date": "already up to date",
        "pushed": "pushed local changes",
        "fast-forward": f"pulled {len(result.changed)} changed files",
        "merged": f"merged {len(result.changed)} changed files",
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


@cli.command("sync")
@click.option("--timeout", type=click.FloatRange(0.1), help="Give up on the network after this many seconds.")
@click.option("--review", is_flag=True, help="Push local changes to a review branch (same as sync.mode = review).")
@click.option("--no-push", is_flag=True, help="Only fetch and merge.")
@json_option
@pass_state
def sync_command(state: State, timeout: float | None, review: bool, no_push: bool, as_json: bool) -> None:
    """Fetch, merge (never rebase) and push the memory repository."""
    from gitmem.sync import sync

    repo = state.open()
    config = repo.config
    mode = "review" if review else config.sync.mode
    result = sync(repo.git, author=repo.git.author(config.author), branch=config.sync.branch, mode=mode,
                  timeout=timeout, push_changes=not no_push)
    if result.changed:
        _refresh_index(repo)
    if mode == "review" and result.pushed:
        _print_pr_hint(repo.git.remote_url(), config.sync.branch, result.branch)
    if as_json:
        emit_json(_sync_json(result))
    else:
        _print_sync(result)


# -- status / resolve ---------------------------------------------------------------------------------
def conflicts_of(repo: Any) -> list[tuple[Any, list[Any]]]:
    """Conflicted memories with their sibling versions."""
    from gitmem.merge import conflicts

    return conflicts(repo.list(deprecated=True))


@cli.command("status")
@click.option("--fetch", "do_fetch", is_flag=True, help="Fetch first, so ahead/behind is current.")
@json_option
@pass_state
def status_command(state: State, do_fetch: bool, as_json: bool) -> None:
    """Ahead/behind the remote, conflicted memories, and changes not yet committed."""
    from gitmem import remote, sync

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
    if as_json:
        emit_json({"remote": info.remote, "branch": info.branch, "ahead": info.ahead, "behind": info.behind,
                   "pending": list(info.pending), "fetch_error": fetch_error,
                   "conflicts": [{"id": m.id, "path": m.path, "versions": [v.id for v in vs]}
                                 for m, vs in conflicts]})
        return
    if info.remote:
        click.echo(f"remote {info.remote} ({info.branch}): {info.ahead} ahead, {info.behind} behind"
                   + ("" if do_fetch else " (as of the last sync; --fetch to check now)"))
    else:
        click.echo("no remote (add one with: gitmem init PATH --remote URL)")
    if fetch_error:
        click.echo(f"fetch failed: {fetch_error}")
    if conflicts:
        click.echo(f"{len(conflicts)} conflicted memories (settle with: gitmem resolve ID [--take VERSION]):")
        for memory, versions in conflicts:
            click.echo(f"  {memory.id}  {memory.title}")
            for version in versions:
                click.echo(f"    version {version.id}  {version.title}")
    else:
        click.echo("no conflicts")
    if info.pending:
        click.echo(f"{len(info.pending)} files changed but not committed:")
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
    from gitmem import documents as docs
    from gitmem.merge import CONFLICT_OF, CONFLICT_WITH, resolve

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
            raise ValidationError(f"memory '{main.id}' is not conflicted", "nothing to resolve (see gitmem status)")
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
                 f"{len(versions)} other versions removed (history keeps them).")
        resolved = written[0]
    _refresh_index(repo)
    if as_json:
        emit_json({"id": resolved.id, "commit": sha, "removed": [v.id for v in versions]})
    else:
        click.echo(f"resolved {resolved.id} ({len(versions)} versions removed)")


# -- review mode --------------------------------------------------------------------------------------
def pull_request_url(remote: str, base: str, branch: str) -> str:
    """Where to open a pull (merge) request for ``branch`` on GitHub or GitLab, else ""."""
    from gitmem.codebase import normalise_remote

    host_path = normalise_remote(remote)
    if "/" not in host_path:
        return ""
    host, path = host_path.split("/", 1)
    if "github" in host:
        return f"https://{host}/{path}/compare/{base}...{branch}?expand=1"
    if "gitlab" in host:
        return (f"https://{host}/{path}/-/merge_requests/new?merge_request[source_branch]={branch}"
                f"&merge_request[target_branch]={base}")
    return ""


def _print_pr_hint(remote: str, base: str, branch: str) -> None:
    url = pull_request_url(remote, base, branch)
    if url:
        click.echo(f"open the pull request: {url}", err=True)


@cli.command("propose")
@click.option("--branch", "target", help="Branch to push to (default: gitmem/<machine>/<date>).")
@click.option("--timeout", type=click.FloatRange(0.1), help="Give up on the network after this many seconds.")
@click.option("--no-gh", is_flag=True, help="Do not open the pull request with the gh CLI.")
@json_option
@pass_state
def propose_command(state: State, target: str | None, timeout: float | None, no_gh: bool, as_json: bool) -> None:
    """Review mode: pull the main branch, push local changes to a review branch, print where to open the PR."""
    from gitmem.sync import sync

    repo = state.open()
    config = repo.config
    base = config.sync.branch
    summary = review_markdown(repo, f"refs/remotes/origin/{base}", "HEAD") if _has_tracking(repo, base) else ""
    result = sync(repo.git, author=repo.git.author(config.author), branch=base, mode="review", timeout=timeout,
                  review_target=target or "")
    if result.changed:
        _refresh_index(repo)
    url = pull_request_url(repo.git.remote_url(), base, result.branch) if result.pushed else ""
    opened = ""
    if result.pushed and not no_gh:
        opened = _open_with_gh(repo.path, base, result.branch, summary)
    if as_json:
        emit_json({**_sync_json(result), "pull_request_url": url, "opened": opened})
        return
    if not result.pushed:
        click.echo("nothing to propose: the remote branch already has every local change")
        return
    click.echo(f"pushed local changes to {result.branch} on {result.remote}")
    if opened:
        click.echo(f"opened {opened}")
    elif url:
        click.echo(f"open the pull request: {url}")


def _has_tracking(repo: Any, branch: str) -> bool:
    from gitmem.remote import remote_branches

    return branch in remote_branches(repo.git, branch)


def _open_with_gh(path: Path, base: str, branch: str, body: str) -> str:
    """Open the pull request with the gh CLI when it is installed and logged in; its URL, or ""."""
    import shutil
    import subprocess

    gh = shutil.which("gh")
    if not gh:
        return ""
    try:
        proc = subprocess.run([gh, "pr", "create", "--base", base, "--head", branch, "--title",
                               f"gitmem: memory changes from {branch}", "--body", body or "Memory changes."],
                              cwd=path, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip().splitlines()[-1] if proc.returncode == 0 and proc.stdout.strip() else ""


def _parse_any(path: str, data: bytes | None) -> Any:
    """A memory, or the frontmatter dict of another document (instincts), or None."""
    if data is None:
        return None
    from gitmem import documents as docs
    from gitmem.errors import DocumentError
    from gitmem.merge import is_memory_path

    text = data.decode("utf-8", "replace")
    if is_memory_path(path):
        try:
            return docs.loads(text, path)
        except DocumentError:
            return None
    import frontmatter

    try:
        return dict(frontmatter.loads(text).metadata)
    except Exception:
        return None


def review_markdown(repo: Any, base: str, head: str) -> str:
    """A Markdown summary of the memory changes in ``base..head`` for a pull-request description."""
    from gitmem import documents as docs
    from gitmem.gitstore import parse_trailers
    from gitmem.remote import changes_between, commits_between

    changes = changes_between(repo.git, base, head)
    commits = commits_between(repo.git, base, head)
    origin: dict[str, list[str]] = {}
    for _sha, message in commits:
        trailers = parse_trailers(message)
        for mid in trailers.get("Gitmem-Id", []):
            for source in trailers.get("Gitmem-Source", []):
                if source not in origin.setdefault(mid, []):
                    origin[mid].append(source)
    sections: dict[str, list[str]] = {k: [] for k in ("Added", "Changed", "Deprecated", "Superseded", "Restored",
                                                      "Removed", "Conflicts", "Instincts", "Other files")}

    def where(memory: docs.Memory) -> str:
        sources = origin.get(memory.id) or [f"{memory.source}:{memory.source_ref}" if memory.source_ref
                                            else memory.source]
        return "from " + ", ".join(f"`{s}`" for s in sources)

    def label(memory: docs.Memory) -> str:
        scope = f", project `{memory.project}`" if memory.project else ""
        return f"**{memory.title}** (`{memory.id}`; {memory.category}, importance {memory.importance}{scope})"

    for path, (old_data, new_data) in sorted(changes.items()):
        old, new = _parse_any(path, old_data), _parse_any(path, new_data)
        if isinstance(new, docs.Memory) or isinstance(old, docs.Memory):
            if not isinstance(old, docs.Memory):
                assert isinstance(new, docs.Memory)
                section = "Conflicts" if new.extra.get("conflict_of") else "Added"
                sections[section].append(f"- {label(new)}: {new.text.splitlines()[0][:200]} — {where(new)}")
            elif not isinstance(new, docs.Memory):
                sections["Removed"].append(f"- {label(old)} — {where(old)}")
            elif new.deprecated and not old.deprecated:
                key = "Superseded" if new.superseded_by else "Deprecated"
                extra = f" by `{new.superseded_by}`" if new.superseded_by else ""
                sections[key].append(f"- {label(new)}{extra}: {new.deprecated_reason} — {where(new)}")
            elif old.deprecated and not new.deprecated:
                sections["Restored"].append(f"- {label(new)} — {where(new)}")
            else:
                sections["Changed"].append(f"- {label(new)}: {_what_changed(old, new)} — {where(new)}")
        elif path.startswith("instincts/") and isinstance(new, dict):
            before = old.get("confidence") if isinstance(old, dict) else None
            after = new.get("confidence")
            move = f"confidence {before} → {after}" if before is not None else f"new, confidence {after}"
            sections["Instincts"].append(f"- `{new.get('id', path)}` ({new.get('trigger', '')}): {move}")
        else:
            sections["Other files"].append(f"- `{path}` {'removed' if new_data is None else 'changed'}")
    counts = ", ".join(f"{len(v)} {k.lower()}" for k, v in sections.items() if v)
    lines = [f"## Memory changes ({len(commits)} commits)", "", counts or "no memory changes", ""]
    for name, items in sections.items():
        if items:
            lines += [f"### {name}", "", *items, ""]
    return "\n".join(lines).rstrip() + "\n"


def _what_changed(old: Any, new: Any) -> str:
    parts: list[str] = []
    if old.text != new.text:
        parts.append("text edited")
    for name in ("category", "type", "importance", "scope", "project", "why", "how"):
        if getattr(old, name) != getattr(new, name):
            parts.append(f"{name} {getattr(old, name) or '∅'} → {getattr(new, name) or '∅'}")
    added = [t for t in new.tags if t not in old.tags]
    removed = [t for t in old.tags if t not in new.tags]
    if added or removed:
        parts.append("tags " + " ".join([*(f"+{t}" for t in added), *(f"−{t}" for t in removed)]))
    if new.conflicted and not old.conflicted:
        parts.append("conflicted (both versions kept)")
    if old.conflicted and not new.conflicted:
        parts.append("conflict resolved")
    return "; ".join(parts) or "metadata updated"


@cli.command("review")
@click.argument("rev_range", metavar="[BASE..HEAD]", required=False)
@pass_state
def review_command(state: State, rev_range: str | None) -> None:
    """Markdown summary of memory changes (default: what the remote branch does not have yet)."""
    repo = state.open()
    branch = repo.config.sync.branch
    if rev_range:
        base, sep, head = rev_range.partition("..")
        if not sep:
            raise ValidationError(f"{rev_range!r} is not a range", "use BASE..HEAD, e.g. origin/main..HEAD")
        head = head or "HEAD"
    else:
        if not _has_tracking(repo, branch):
            raise GitmemError(f"no remote branch origin/{branch} to compare with",
                              "run gitmem sync, or give BASE..HEAD")
        base, head = f"refs/remotes/origin/{branch}", "HEAD"
    click.echo(review_markdown(repo, base, head), nl=False)


# -- extraction on commit -----------------------------------------------------------------------------
#: the hook installed into code repositories; ``git-hooks/post-commit`` in the source tree is this text
HOOK_SCRIPT = r"""#!/bin/sh
# gitmem post-commit hook: installed by `gitmem git-hooks install`, removed by `gitmem git-hooks uninstall`.
# Runs the post-commit hook that was here before (kept as post-commit.pre-gitmem), then learns decisions from
# the new commit and warms the next session's recall block in the background: this script returns at once; both
# steps are detached and time-limited.
if [ -x "$0.pre-gitmem" ]; then
    "$0.pre-gitmem" "$@"
fi
[ -n "$GITMEM_NO_EXTRACT" ] && exit 0
GITMEM_BIN="${GITMEM_BIN:-gitmem}"
command -v "$GITMEM_BIN" >/dev/null 2>&1 || exit 0
top=$(git rev-parse --show-toplevel 2>/dev/null) || exit 0
sha=$(git rev-parse -q --verify HEAD 2>/dev/null) || exit 0
detach=nohup
command -v setsid >/dev/null 2>&1 && detach=setsid  # own session: no terminal signal reaches it
# extract, then warm the recall block the next session here will get (its query names the last commits)
warm=1
[ "$GITMEM_WARM" = "0" ] && warm=0
GITMEM_NO_EXTRACT=1 $detach sh -c '"$1" extract --commit "$2" --repo "$3" --deadline 60 --quiet
    [ "$4" = 1 ] && cd "$3" && "$1" warm --cwd "$3" --timeout 60' \
    gitmem-post-commit "$GITMEM_BIN" "$sha" "$top" "$warm" </dev/null >/dev/null 2>&1 &
exit 0
"""
HOOK_MARKER = "# gitmem post-commit hook"
CHAINED_SUFFIX = ".pre-gitmem"
_BIN_LINE = 'GITMEM_BIN="${GITMEM_BIN:-gitmem}"'


def _gitmem_executable() -> str:
    import shutil

    argv0 = Path(sys.argv[0])
    if argv0.name == "gitmem" and argv0.exists():
        return str(argv0.resolve())
    return shutil.which("gitmem") or "gitmem"


def hook_text(executable: str) -> str:
    import shlex

    return HOOK_SCRIPT.replace(_BIN_LINE, f'GITMEM_BIN="${{GITMEM_BIN:-{shlex.quote(executable)}}}"'
                               if executable != "gitmem" else _BIN_LINE)


def install_hook(hooks: Path, executable: str) -> str:
    """Install the post-commit hook in ``hooks``; an existing foreign hook is kept and chained.

    Returns ``installed``, ``updated`` or ``unchanged``."""
    import os

    hooks.mkdir(parents=True, exist_ok=True)
    target = hooks / "post-commit"
    chained = hooks / ("post-commit" + CHAINED_SUFFIX)
    text = hook_text(executable)
    if target.is_file() and HOOK_MARKER in target.read_text("utf-8", "replace"):
        if target.read_text("utf-8", "replace") == text:
            return "unchanged"
        action = "updated"
    else:
        if target.exists() or target.is_symlink():
            if chained.exists() or chained.is_symlink():
                raise GitmemError(f"both {target} and {chained} exist", f"remove or merge {chained} first")
            os.rename(target, chained)
        action = "installed"
    atomic_write(target, text.encode("utf-8"), mode=0o755)
    return action


def uninstall_hook(hooks: Path) -> bool:
    """Remove gitmem's hook and put back the one it chained. False when gitmem's hook is not installed."""
    import os

    target = hooks / "post-commit"
    chained = hooks / ("post-commit" + CHAINED_SUFFIX)
    if not target.is_file() or HOOK_MARKER not in target.read_text("utf-8", "replace"):
        return False
    target.unlink()
    if chained.exists() or chained.is_symlink():
        os.rename(chained, target)
    return True


def _code_root(code_dir: Path | None) -> Path:
    from gitmem.codegit import code_repo_root

    root = code_repo_root(code_dir or Path.cwd())
    if root is None:
        raise GitmemError(f"{(code_dir or Path.cwd())} is not inside a git repository", "pass --repo DIR")
    return root


@cli.group("git-hooks")
def git_hooks() -> None:
    """The post-commit hook that learns decisions from code commits."""


@git_hooks.command("install")
@click.option("--repo", "code_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Code repository (default: the one containing the working directory).")
def git_hooks_install(code_dir: Path | None) -> None:
    """Install the post-commit hook (respects core.hooksPath; chains an existing hook; idempotent)."""
    from gitmem.codegit import hooks_dir

    hooks = hooks_dir(_code_root(code_dir))
    action = install_hook(hooks, _gitmem_executable())
    click.echo(f"{action} {hooks / 'post-commit'}")


@git_hooks.command("uninstall")
@click.option("--repo", "code_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Code repository (default: the one containing the working directory).")
def git_hooks_uninstall(code_dir: Path | None) -> None:
    """Remove the post-commit hook and restore the hook it chained."""
    from gitmem.codegit import hooks_dir

    hooks = hooks_dir(_code_root(code_dir))
    if uninstall_hook(hooks):
        click.echo(f"removed {hooks / 'post-commit'}")
    else:
        click.echo(f"gitmem's post-commit hook is not installed in {hooks}")


def _skip_commit(commit: Any) -> str:
    if commit.parents > 1:
        return "merge commit"
    if "Gitmem-Op:" in commit.message:
        return "made by gitmem"
    return ""


def store_findings(repo: Any, project: str, commit: Any, findings: list[Any], known: set[str]) -> list[Any]:
    """Commit the new findings of one code commit as memories of ``project`` (one memory-repo commit);
    findings whose text is already known for the project are skipped. Returns the memories added."""
    from gitmem import documents as docs
    from gitmem.extract import normalise

    memories = []
    for finding in findings:
        key = normalise(finding.text)
        if not key or key in known:
            continue
        known.add(key)
        memory = docs.make_memory(finding.text, category=finding.category, importance=finding.importance,
                                  tags=list(finding.tags)[: docs.MAX_TAGS], project=project, scope="project",
                                  type="project", source="commit", source_ref=f"{project}@{commit.sha}",
                                  why=finding.why)
        memories.append(memory)
    if not memories:
        return []
    subject = (f"extract: {memories[0].title}" if len(memories) == 1
               else f"extract: {len(memories)} findings from {commit.sha[:10]}")
    first = commit.message.strip().splitlines()[0] if commit.message.strip() else ""
    _sha, written = repo.commit_batch(
        memories, subject=subject, op="extract", source=f"commit:{project}@{commit.sha}",
        trailers={"Gitmem-Commit": commit.sha}, body=f"From {project}@{commit.sha[:10]}: {first}",
        merge=lambda old, new: None,  # generated ids: an existing file is someone else's memory, keep it
    )
    return list(written)


def _known(repo: Any, project: str) -> set[str]:
    from gitmem.extract import normalise

    return {normalise(m.text) for m in repo.list(project=project, deprecated=True)}


def _set_deadline(seconds: float | None) -> None:
    import signal

    if not seconds or not hasattr(signal, "SIGALRM"):
        return

    def stop(_signum: int, _frame: Any) -> None:
        raise SystemExit(3)

    signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)


@cli.command("extract")
@click.option("--range", "rev_range", metavar="A..B", help="Backfill: every commit in A..B (or all up to B).")
@click.option("--commit", "rev", metavar="REV", help="One commit (default: HEAD when --range is not given).")
@click.option("--repo", "code_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Code repository (default: the one containing the working directory).")
@click.option("--project", default="", help="Project id (default: from the code repository's remote).")
@click.option("--dry-run", is_flag=True, help="Print the findings, store nothing.")
@click.option("--deadline", type=click.FloatRange(0.1), help="Stop after this many seconds (the hook uses 60).")
@click.option("--quiet", is_flag=True, help="No output (the hook's background run).")
@json_option
@pass_state
def extract_command(state: State, rev_range: str | None, rev: str | None, code_dir: Path | None, project: str,
                    dry_run: bool, deadline: float | None, quiet: bool, as_json: bool) -> None:
    """Learn decisions and constraints from code commits (message and diff) into memories of that project."""
    from gitmem.codebase import code_context
    from gitmem.codegit import code_commit, code_range, count_range
    from gitmem.extract import findings_for_commit, interesting
    from gitmem.layout import is_memory_repo

    _set_deadline(deadline)
    root = _code_root(code_dir)
    if is_memory_repo(root):
        if not quiet:
            click.echo(f"{root} is a gitmem memory repository: nothing to extract", err=True)
        return
    project = project or code_context(root).project
    repo = None if dry_run else state.open()
    if repo is not None and Path(repo.path).resolve() == root.resolve():
        return
    known = _known(repo, project) if repo is not None else set()
    report: list[dict[str, Any]] = []
    added = 0

    def handle(commit: Any) -> None:
        nonlocal added
        reason = _skip_commit(commit)
        findings = [] if reason else findings_for_commit(commit.message, commit.files)
        stored = store_findings(repo, project, commit, findings, known) if repo is not None and findings else []
        added += len(stored)
        report.append({"commit": commit.sha, "skipped": reason,
                       "findings": [{"text": f.text, "category": f.category, "why": f.why} for f in findings],
                       "added": [m.id for m in stored]})

    if rev_range:
        from tqdm import tqdm

        total = count_range(root, rev_range)
        with tqdm(total=total, desc="extract", unit="commit", file=sys.stderr, disable=quiet or None,
                  leave=False) as bar:
            for commit in code_range(root, rev_range, interesting):
                handle(commit)
                bar.update(1)
    else:
        handle(code_commit(root, rev or "HEAD", interesting))
    if quiet:
        return
    if as_json:
        emit_json({"project": project, "commits": len(report), "added": added, "results": report})
        return
    for item in report:
        for finding in item["findings"]:
            click.echo(f"{item['commit'][:10]}  {finding['category']:10} {finding['text']}")
    click.echo(f"{len(report)} commits, {added} memories added to project {project}"
               + (" (dry run)" if dry_run else ""), err=True)
