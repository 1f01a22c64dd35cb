"""CLI commands for extraction on commit: ``git-hooks install|uninstall`` (the post-commit hook in code
repositories) and ``extract`` (decisions and constraints from code commits into memories)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from gitmem.cli import State, cli, emit_json, json_option, pass_state
from gitmem.errors import GitmemError
from gitmem.fileio import atomic_write

#: the hook installed into code repositories: ships once, as package data (``git-hooks/post-commit`` in the
#: source tree is a copy that a test keeps identical)
HOOK_SCRIPT = (Path(__file__).parent / "data" / "post-commit").read_text(encoding="utf-8")
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
    from gitmem.redact import redact

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
        report.append({"commit": commit.sha, "skipped": reason,  # printed: redacted like what is stored
                       "findings": [{"text": redact(f.text).text, "category": f.category, "why": redact(f.why).text}
                                    for f in findings],
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
