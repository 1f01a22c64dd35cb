"""CLI commands for extraction on commit: ``git-hooks install|uninstall`` (the post-commit and post-rewrite hooks
in code repositories) and ``extract`` (decisions and constraints from code commits into memories)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from gitmem.cli.app import State, cli, emit_json, json_option, pass_state
from gitmem.errors import GitmemError
from gitmem.learn.oncommit import CHAINED_SUFFIX, HOOK_NAMES, MAX_FINDINGS, install_hooks, set_deadline, uninstall_hooks
from gitmem.text.counted import counted


def _gitmem_executable() -> str:
    import shutil

    argv0 = Path(sys.argv[0])
    if argv0.name == "gitmem" and argv0.exists():
        return str(argv0.resolve())
    return shutil.which("gitmem") or "gitmem"


def _code_root(code_dir: Path | None) -> Path:
    from gitmem.git.coderepo import code_repo_root

    root = code_repo_root(code_dir or Path.cwd())
    if root is None:
        raise GitmemError(f"{(code_dir or Path.cwd())} is not inside a git repository", "pass --repo DIR")
    return root


@cli.group("git-hooks")
def git_hooks() -> None:
    """The hooks that learn decisions from code commits (post-commit; post-rewrite for amends and rebases)."""


@git_hooks.command("install")
@click.option("--repo", "code_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Code repository (default: the one containing the working directory).")
def git_hooks_install(code_dir: Path | None) -> None:
    """Install the post-commit and post-rewrite hooks (respects core.hooksPath; chains existing hooks;
    idempotent)."""
    from gitmem.git.coderepo import hooks_dir, tracks_files_in
    from gitmem.learn.oncommit import is_husky

    root = _code_root(code_dir)
    hooks = hooks_dir(root)
    exe = _gitmem_executable()
    lines = (f"post-commit: {exe} extract --commit HEAD --deadline 60 --quiet >/dev/null 2>&1 &  "
             f"post-rewrite: printf '%s\\n' \"$(cat)\" | {exe} extract --rewritten \"$1\" --deadline 60 --quiet "
             ">/dev/null 2>&1 &")
    if tracks_files_in(root, hooks):
        # core.hooksPath names a folder of the project's tracked files (husky, a team's hooks): installing would
        # change them, commit gitmem's paths into them and leave the team's hook as an untracked copy
        raise GitmemError(f"git runs this repository's hooks from {hooks}, a folder of the project's own files "
                          "(core.hooksPath); gitmem leaves it alone",
                          f"add these lines to the hooks of that name in {hooks} yourself: {lines}")
    if is_husky(hooks):
        # husky 9 runs the project's .husky/<hook> from a script named after the hook: renamed to chain it, it
        # looked for .husky/<hook>.pre-gitmem and the team's hook stopped running; `husky` also rewrites the folder
        raise GitmemError(f"husky manages the hooks in {hooks}; gitmem leaves them alone",
                          f"add these lines to the hooks of that name in {hooks.parent} yourself: {lines}")
    for name, action in install_hooks(hooks, exe).items():
        click.echo(f"{action} {hooks / name}")


@git_hooks.command("uninstall")
@click.option("--repo", "code_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Code repository (default: the one containing the working directory).")
def git_hooks_uninstall(code_dir: Path | None) -> None:
    """Remove gitmem's hooks and restore the hooks they chained."""
    from gitmem.git.coderepo import hooks_dir

    hooks = hooks_dir(_code_root(code_dir))
    removed, stranded = uninstall_hooks(hooks)
    for name in removed:
        click.echo(f"removed {hooks / name}")
    for copy in stranded:
        name = copy.name.removesuffix(CHAINED_SUFFIX)
        click.echo(f"left {copy}: {hooks / name} is no longer gitmem's hook (another tool wrote over it); merge the "
                   f"two by hand, then delete {copy.name}", err=True)
    if not removed and not stranded:
        click.echo(f"gitmem's hooks ({', '.join(HOOK_NAMES)}) are not installed in {hooks}")


@cli.command("extract")
@click.option("--range", "rev_range", metavar="A..B", help="Backfill: every commit in A..B (or all up to B).")
@click.option("--commit", "rev", metavar="REV", help="One commit (default: HEAD when --range is not given).")
@click.option("--repo", "code_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Code repository (default: the one containing the working directory).")
@click.option("--rewritten", type=click.Choice(["amend", "rebase"]),
              help="Read git's post-rewrite input ('OLD NEW' commit lines) on stdin: what the old commits taught "
                   "moves to the new ones, or is deprecated when they no longer say it.")
@click.option("--orig-head", metavar="REV",
              help="With --rewritten rebase: the branch's tip before the rebase (ORIG_HEAD); memories of the "
                   "commits it reached that no branch or tag reaches now (dropped) are deprecated.")
@click.option("--onto", metavar="REV",
              help="With --rewritten rebase: the commit the rebase put the branch onto; every commit it made is "
                   "learned, those git names no pair for too (an edit or break stop, --exec).")
@click.option("--project", default="", help="Project id (default: from the code repository's remote).")
@click.option("--dry-run", is_flag=True, help="Print the findings, store nothing.")
@click.option("--deadline", type=click.FloatRange(0.1), help="Stop after this many seconds (the hook uses 60).")
@click.option("--quiet", is_flag=True, help="No output (the hook's background run).")
@json_option
@pass_state
def extract_command(state: State, rev_range: str | None, rev: str | None, rewritten: str | None,
                    orig_head: str | None, onto: str | None, code_dir: Path | None, project: str, dry_run: bool,
                    deadline: float | None, quiet: bool, as_json: bool) -> None:
    """Learn decisions and constraints from code commits (message and diff) into memories of that project."""
    # the hooks' background run: nobody sees its stderr, `gitmem doctor` reads the log, which says how to catch up
    again = f"; to learn it later: gitmem extract --commit {rev} --repo {code_dir or Path.cwd()}" if rev else ""
    try:
        _extract(state, rev_range, rev, rewritten, orig_head, onto, code_dir, project, dry_run, deadline, quiet,
                 as_json)
    except (GitmemError, click.UsageError) as exc:
        if quiet:
            told = exc.format_message() if isinstance(exc, click.UsageError) else str(exc)
            _log_background(state, f"extract: {told}{again}")
        raise
    except SystemExit as exc:
        if quiet and exc.code == 3:  # set_deadline's exit
            _log_background(state, f"extract: stopped at its {deadline or 0:.0f} s deadline{again}")
        raise


def _log_background(state: State, message: str) -> None:
    import os

    from gitmem.agents.claude.context import append_log
    from gitmem.store.local import now_iso

    repo = state.repo_path
    where = str(repo) if repo is not None and (repo / ".git").is_dir() else None
    append_log(where, os.environ, str(Path.home()), f"{now_iso()} git hook: {' '.join(message.split())}")


def _extract(state: State, rev_range: str | None, rev: str | None, rewritten: str | None, orig_head: str | None,
             onto: str | None, code_dir: Path | None, project: str, dry_run: bool, deadline: float | None,
             quiet: bool, as_json: bool) -> None:
    from gitmem.learn.extraction import extract_commits
    from gitmem.projects.identity import code_context
    from gitmem.store.base import is_memory_repo

    if sum(bool(x) for x in (rev, rev_range, rewritten)) > 1:
        # one would be ignored: say so rather than extract something the user did not ask for
        raise click.UsageError("--commit, --range and --rewritten cannot be combined", click.get_current_context())
    if rewritten and dry_run:
        raise click.UsageError("--rewritten changes memories; it has no dry run", click.get_current_context())
    if (orig_head or onto) and not rewritten:
        raise click.UsageError("--orig-head and --onto go with --rewritten", click.get_current_context())
    set_deadline(deadline)
    root = _code_root(code_dir)
    if is_memory_repo(root):
        if not quiet:
            click.echo(f"{root} is a gitmem memory repository: nothing to extract", err=True)
        return
    project = project or code_context(root).project
    # a dry run reads the memory repository when there is one (to mark what is known) and creates none
    repo = state.open() if not dry_run or is_memory_repo(state.config.repo) else None
    if repo is not None and Path(repo.path).resolve() == root.resolve():
        return
    bars: list[Any] = []

    def progress(total: int) -> Any:
        from tqdm import tqdm

        bars.append(tqdm(total=total, desc="extract", unit="commit", file=sys.stderr, disable=quiet or None,
                         leave=False))
        return bars[-1].update

    try:
        run = extract_commits(root, repo, project, rev=rev, rev_range=rev_range, rewritten=rewritten,
                              rewrites=_rewrite_pairs() if rewritten else [], orig_head=orig_head, onto=onto,
                              dry_run=dry_run, patterns=state.config.redaction.extra_patterns, progress=progress)
    finally:
        for bar in bars:
            bar.close()
    if quiet:
        return
    if as_json:
        data: dict[str, Any] = {"project": project, "commits": len(run.results), "added": run.added,
                                "deprecated": sum(len(r.deprecated) for r in run.results),
                                "restored": sum(len(r.restored) for r in run.results),
                                "results": [r.as_dict() for r in run.results]}
        if rewritten:
            data.update(rewritten=rewritten, moved=[{"id": m.id, "source_ref": m.source_ref} for m in run.moved],
                        dropped=[m.id for m in run.dropped])
        emit_json(data)
        return
    for memory in run.moved:
        click.echo(f"moved       {memory.id}  {memory.text}  → {memory.source_ref.rpartition('@')[2][:10]}")
    for memory in run.dropped:
        click.echo(f"deprecated  {memory.id}  {memory.text}")
    for item in run.results:
        if item.reverts:
            click.echo(f"{item.commit[:10]}  {'reverts':10} {item.reverts[:10]}")
        for what, undone in (("deprecated", item.deprecated), ("restored", item.restored)):
            for memory in undone:  # stored texts: redacted already
                click.echo(f"{item.commit[:10]}  {what:10} {memory.text}")
        for finding in item.findings:
            click.echo(f"{item.commit[:10]}  {finding['category']:10} {finding['text']}"
                       + ("  (known)" if finding.get("known") else ""))
        if item.left_out:
            click.echo(f"{item.commit[:10]}  {item.left_out} more findings left out (at most {MAX_FINDINGS} "
                       "a commit)", err=True)
    undid = {"deprecated": sum(len(r.deprecated) for r in run.results),
             "restored": sum(len(r.restored) for r in run.results)}
    click.echo(f"{counted(len(run.results), 'commit')}, {counted(run.added, 'memory')} added"
               + "".join(f", {n} {w}" for w, n in undid.items() if n)
               + f" to project {project}"
               + (f"; {counted(run.rewrites, 'commit')} rewritten by {rewritten}: {counted(len(run.moved), 'memory')} "
                  f"moved, {len(run.dropped)} deprecated" if rewritten else "")
               + (" (dry run)" if dry_run else ""), err=True)


def _rewrite_pairs() -> list[tuple[str, str]]:
    """git's post-rewrite lines on stdin: (old sha, new sha) pairs."""
    pairs = []
    for number, line in enumerate(sys.stdin.read().splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 2 or not all(_is_sha(f) for f in fields[:2]):
            raise GitmemError(f"line {number} of the input is not 'OLD NEW' commit SHAs: {line[:80]!r}",
                              "give the lines git passes to a post-rewrite hook")
        pairs.append((fields[0].lower(), fields[1].lower()))
    return pairs


def _is_sha(text: str) -> bool:
    return 7 <= len(text) <= 64 and all(c in "0123456789abcdefABCDEF" for c in text)
