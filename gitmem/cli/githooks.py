"""CLI commands for extraction on commit: ``git-hooks install|uninstall`` (the post-commit and post-rewrite hooks
in code repositories) and ``extract`` (decisions and constraints from code commits into memories)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import click

from gitmem.cli.app import State, cli, emit_json, json_option, pass_state
from gitmem.errors import GitmemError
from gitmem.learn.oncommit import (
    CHAINED_SUFFIX,
    HOOK_NAMES,
    MAX_FINDINGS,
    extracting,
    install_hooks,
    set_deadline,
    skip_reason,
    store_findings,
    uninstall_hooks,
)
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
    from gitmem.errors import RepoError
    from gitmem.git.coderepo import arrived, code_commit, code_range, count_range, left_behind, rebasing
    from gitmem.learn.commits import KnownTexts, reverted_origins, reverted_sha, take_back
    from gitmem.learn.extract import findings_for_commit, interesting, normalise
    from gitmem.learn.oncommit import new_findings
    from gitmem.learn.rewrites import carry_over, latest, note_rewritten, replacements
    from gitmem.projects.identity import code_context
    from gitmem.redact.engine import redact
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
    patterns = state.config.redaction.extra_patterns
    if repo is not None and Path(repo.path).resolve() == root.resolve():
        return
    rewrites = _rewrite_pairs() if rewritten else []
    # a rebase replaces each commit it makes at its end (a squash or fixup at once): its post-rewrite run learns the
    # result, so a run for one of its commits, or for an amend inside it, does nothing (a hand-added hook line too)
    during_rebase = not rev_range and rewritten != "rebase" and rebasing(root)
    report: list[dict[str, Any]] = []
    added = 0
    undone: dict[str, list[tuple[str, str]]] = {}  # commit → (deprecated | restored, text): what its revert undid
    moved: list[Any] = []
    dropped: list[Any] = []
    replaced: dict[str, str] = {}  # commits amends and rebases replaced, read under the extraction lock

    def read(sha: str) -> Any:
        try:
            return code_commit(root, sha, interesting)
        except RepoError:
            return None  # gone (gc) or never fetched

    def handle(commit: Any, known: KnownTexts | None) -> None:
        nonlocal added
        reason = skip_reason(commit) or ("made during a rebase" if during_rebase else "")
        if not reason and commit.sha in replaced:
            # amended or rebased away before this background run started: the rewrite's run learns the new commit
            reason = f"rewritten as {replaced[commit.sha][:10]}"
        # a revert teaches nothing of its own (its diff undoes the reverted one's): it takes back what that taught
        reverted = "" if reason else reverted_sha(commit.message)
        findings = [] if reason else findings_for_commit(commit.message, commit.files)  # [] for a revert
        over = max(0, len(findings) - MAX_FINDINGS)
        findings = findings[:MAX_FINDINGS]
        stored: list[Any] = []
        gone: list[Any] = []
        back: list[Any] = []
        new: set[str] = set()  # the texts stored (or, in a dry run, that would be)
        if known is not None and dry_run:
            new = {text for _f, text in new_findings(findings, known.for_commit(commit.sha), patterns)}
            known.texts.update(normalise(text) for text in new)  # as if stored: a later commit's copy is known
        elif known is not None:
            stored = store_findings(repo, project, commit, findings, known.for_commit(commit.sha)) if findings else []
            new = {m.text for m in stored}
            if reverted:
                taught, undo = reverted_origins(reverted, read,
                                                lambda a, b: code_range(root, f"{a}..{b}", interesting))
                gone, back = take_back(repo, project, commit, reverted, origins=taught, restore=not undo)
            known.update(stored, gone, back)
        added += len(stored)
        undone[commit.sha] = [("deprecated", m.text) for m in gone] + [("restored", m.text) for m in back]
        shown = [redact(f.text, extra_patterns=patterns).text for f in findings]
        report.append({"commit": commit.sha, "skipped": reason, "reverts": reverted, "left_out": over,
                       # printed: redacted like what is stored; "known": the project has it already, not stored
                       "findings": [{"text": text, "category": f.category,
                                     "why": redact(f.why, extra_patterns=patterns).text,
                                     **({} if known is None else {"known": text not in new})}
                                    for f, text in zip(findings, shown, strict=True)],
                       "added": [m.id for m in stored], "deprecated": [m.id for m in gone],
                       "restored": [m.id for m in back]})

    known: KnownTexts | None
    with contextlib.nullcontext() if repo is None or dry_run else extracting(repo):
        if rewritten and during_rebase:
            pass  # an amend inside a rebase: the rebase's own run sees the result
        elif rewritten:
            # the commits the rebase made, oldest first: those git names in its pairs, and those made at an edit or
            # break stop or by --exec, which it does not name
            made = code_range(root, f"{onto}..HEAD", interesting) if onto else []
            on_branch = {c.sha for c in made}
            # git pairs an edit stop's commit, still on the branch, with the HEAD it continued from: nothing replaced
            rewrites = [(old, new) for old, new in rewrites if old not in on_branch]
            replaced = note_rewritten(repo, rewrites)
            olds = [(old, read(old), read(latest(replaced, new)) or code_commit(root, new, interesting))
                    for old, new in rewrites]
            olds_named = {old for old, _new in rewrites}
            left = [sha for sha in left_behind(root, orig_head) if sha not in olds_named] if orig_head else []
            came = arrived(root, orig_head, interesting) if left and orig_head else []  # a dropped change upstream has
            moved, dropped = carry_over(repo, project, rewritten, olds, left, [*made, *came]) if olds or left \
                else ([], [])
            known = KnownTexts(repo, project)
            for new in {c.sha: c for c in [*made, *(new for _o, _old, new in olds)]}.values():
                handle(new, known)  # one amended again meanwhile is skipped: the run of that amend learns it
        elif rev_range:
            from tqdm import tqdm

            total = count_range(root, rev_range)
            known = KnownTexts(repo, project) if repo is not None else None
            with tqdm(total=total, desc="extract", unit="commit", file=sys.stderr, disable=quiet or None,
                      leave=False) as bar:
                for commit in code_range(root, rev_range, interesting):
                    handle(commit, known)
                    bar.update(1)
        else:
            replaced = replacements(repo) if repo is not None and rev else {}
            handle(code_commit(root, rev or "HEAD", interesting),
                   KnownTexts(repo, project) if repo is not None else None)
    if quiet:
        return
    if as_json:
        data: dict[str, Any] = {"project": project, "commits": len(report), "added": added,
                                "deprecated": sum(len(r["deprecated"]) for r in report),
                                "restored": sum(len(r["restored"]) for r in report), "results": report}
        if rewritten:
            data.update(rewritten=rewritten, moved=[{"id": m.id, "source_ref": m.source_ref} for m in moved],
                        dropped=[m.id for m in dropped])
        emit_json(data)
        return
    for memory in moved:
        click.echo(f"moved       {memory.id}  {memory.text}  → {memory.source_ref.rpartition('@')[2][:10]}")
    for memory in dropped:
        click.echo(f"deprecated  {memory.id}  {memory.text}")
    for item in report:
        if item["reverts"]:
            click.echo(f"{item['commit'][:10]}  {'reverts':10} {item['reverts'][:10]}")
        for what, text in undone[item["commit"]]:  # stored texts: redacted already
            click.echo(f"{item['commit'][:10]}  {what:10} {text}")
        for finding in item["findings"]:
            click.echo(f"{item['commit'][:10]}  {finding['category']:10} {finding['text']}"
                       + ("  (known)" if finding.get("known") else ""))
        if item["left_out"]:
            click.echo(f"{item['commit'][:10]}  {item['left_out']} more findings left out (at most {MAX_FINDINGS} "
                       "a commit)", err=True)
    undid = [what for pairs in undone.values() for what, _text in pairs]
    click.echo(f"{counted(len(report), 'commit')}, {counted(added, 'memory')} added"
               + "".join(f", {undid.count(w)} {w}" for w in ("deprecated", "restored") if w in undid)
               + f" to project {project}"
               + (f"; {counted(len(rewrites), 'commit')} rewritten by {rewritten}: {counted(len(moved), 'memory')} "
                  f"moved, {len(dropped)} deprecated" if rewritten else "")
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
