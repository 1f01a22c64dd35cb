"""Extraction on commit, the library side: the hook scripts a code repository runs (post-commit, and post-rewrite
after an amend or a rebase), their install and uninstall (chaining a hook that was there), which commits are
skipped, storing a commit's findings as memories, and the deadline a background run keeps. ``gitmem git-hooks``
and ``gitmem extract`` print around these."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gitmem.errors import GitmemError
from gitmem.files.atomic import atomic_write

#: the hooks installed into code repositories: post-commit learns from each new commit, post-rewrite carries what
#: an amended or rebased commit taught over to the commit that replaced it. Each ships once, as package data
#: (``git-hooks/`` in the source tree holds copies that a test keeps identical)
HOOK_NAMES = ("post-commit", "post-rewrite")
CHAINED_SUFFIX = ".pre-gitmem"
#: the scripts' line naming the executable they run, as shipped (a bare ``gitmem``) and as written at install
_BIN_START, _BIN_END = 'GITMEM_BIN="${GITMEM_BIN:-', '}"'
_BIN_LINE = f"{_BIN_START}gitmem{_BIN_END}"


def hook_script(name: str) -> str:
    """The packaged script of hook ``name`` (one of :data:`HOOK_NAMES`)."""
    return (Path(__file__).parents[1] / "data" / name).read_text(encoding="utf-8")


def hook_marker(name: str) -> str:
    """The line that says a hook file is gitmem's."""
    return f"# gitmem {name} hook"


def hook_text(executable: str, name: str = "post-commit") -> str:
    """The script of hook ``name``, running ``executable`` (a bare ``gitmem`` is looked up on PATH)."""
    import shlex

    script = hook_script(name)
    return script.replace(_BIN_LINE, f"{_BIN_START}{shlex.quote(executable)}{_BIN_END}")


def _is_ours(path: Path, name: str) -> bool:
    return path.is_file() and hook_marker(name) in path.read_text("utf-8", "replace")


def _present(path: Path) -> bool:
    """Whether something is at ``path``, a dangling symlink included."""
    return path.exists() or path.is_symlink()


def is_husky(hooks: Path) -> bool:
    """Whether husky manages the hooks folder ``hooks`` (husky 9's ``.husky/_``, with its ``h`` runner; earlier
    versions' ``husky.sh``)."""
    return (hooks / "husky.sh").is_file() or (hooks.name == "_" and (hooks / "h").is_file())


def install_hooks(hooks: Path, executable: str) -> dict[str, str]:
    """Install gitmem's hooks in ``hooks``; an existing foreign hook is kept and chained (renamed with
    :data:`CHAINED_SUFFIX`, run first by gitmem's). Nothing is changed when one of them cannot be installed.

    Returns hook name → ``installed``, ``updated`` or ``unchanged``."""
    import os

    for name in HOOK_NAMES:  # check every hook before changing any
        target, chained = hooks / name, hooks / (name + CHAINED_SUFFIX)
        if not _is_ours(target, name) and _present(target) and _present(chained):
            raise GitmemError(f"both {target} and {chained} exist", f"remove or merge {chained} first")
    hooks.mkdir(parents=True, exist_ok=True)
    actions: dict[str, str] = {}
    for name in HOOK_NAMES:
        target, chained = hooks / name, hooks / (name + CHAINED_SUFFIX)
        text = hook_text(executable, name)
        if _is_ours(target, name):
            if target.read_text("utf-8", "replace") == text:
                actions[name] = "unchanged"
                continue
            actions[name] = "updated"
        else:
            if _present(target):
                os.rename(target, chained)
            actions[name] = "installed"
        atomic_write(target, text.encode("utf-8"), mode=0o755)
    return actions


def refresh_hooks(hooks: Path) -> dict[str, str]:
    """Bring gitmem's hooks in ``hooks`` up to this version when an earlier one installed them (its post-commit
    is there): a hook added since (post-rewrite) is installed, a script that changed is rewritten, and the
    executable the earlier install named is kept. Returns hook name → ``installed`` or ``updated`` ({} when
    gitmem's hooks are not there, are current, or cannot be installed beside another tool's)."""
    import shlex

    target = hooks / "post-commit"
    if not _is_ours(target, "post-commit"):
        return {}
    executable = "gitmem"
    for line in target.read_text("utf-8", "replace").splitlines():
        if line.startswith(_BIN_START) and line.endswith(_BIN_END):
            named = line[len(_BIN_START):-len(_BIN_END)]
            try:
                executable = shlex.split(named)[0] if named else executable
            except (ValueError, IndexError):
                return {}
            break
    if all(_is_ours(hooks / name, name) and (hooks / name).read_text("utf-8", "replace") == hook_text(executable, name)
           for name in HOOK_NAMES):
        return {}
    try:
        return {name: action for name, action in install_hooks(hooks, executable).items() if action != "unchanged"}
    except GitmemError:
        return {}


def uninstall_hooks(hooks: Path) -> tuple[list[str], list[Path]]:
    """Remove gitmem's hooks and put back the ones they chained. Returns the names of the hooks removed (none
    when gitmem's hooks are not installed) and the chained copies left where they are: a hook another tool wrote
    over gitmem's stands in their place, and only the user can merge the two."""
    import os

    removed: list[str] = []
    stranded: list[Path] = []
    for name in HOOK_NAMES:
        target, chained = hooks / name, hooks / (name + CHAINED_SUFFIX)
        if not _is_ours(target, name):
            if _present(chained) and _present(target):
                stranded.append(chained)
            elif _present(chained):
                os.rename(chained, target)  # gitmem's hook was deleted by hand: the chained one goes back
                removed.append(name)
            continue
        target.unlink()
        if _present(chained):
            os.rename(chained, target)
        removed.append(name)
    return removed, stranded


#: the most findings one code commit gives: a generated changelog or release notes as a message (3,000 rule-like
#: lines) became 3,000 memories and held the extraction lock for half a minute; the first ones are kept
MAX_FINDINGS = 50


def skip_reason(commit: Any) -> str:
    """Why a code commit is not read for findings ("" when it is): merges and gitmem's own commits."""
    if commit.parents > 1:
        return "merge commit"
    if "Gitmem-Op:" in commit.message:
        return "made by gitmem"
    return ""


def new_findings(findings: list[Any], known: set[str], patterns: Any = ()) -> list[tuple[Any, str]]:
    """The findings whose text (secrets redacted, as it would be stored) ``known`` does not hold yet, each with that
    text; their normalised texts are added to ``known``, so a finding said twice is new once."""
    from gitmem.learn.extract import normalise
    from gitmem.redact.engine import redact

    fresh = []
    for finding in findings:
        # compared as it is stored: the known texts are the memories' own, secrets redacted
        text = redact(finding.text, extra_patterns=patterns).text
        key = normalise(text)
        if not key or key in known:
            continue
        known.add(key)
        fresh.append((finding, text))
    return fresh


def store_findings(repo: Any, project: str, commit: Any, findings: list[Any], known: set[str]) -> list[Any]:
    """Commit the new findings of one code commit as memories of ``project`` (one memory-repo commit);
    findings whose text is already known for the project are skipped. Returns the memories added."""
    from gitmem.store import document as docs

    memories = [docs.make_memory(text, category=finding.category, importance=finding.importance,
                                 tags=list(finding.tags)[: docs.MAX_TAGS], project=project, scope="project",
                                 type="project", source="commit", source_ref=f"{project}@{commit.sha}",
                                 why=finding.why)
                for finding, text in new_findings(findings, known, repo.config.redaction.extra_patterns)]
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


def set_deadline(seconds: float | None) -> None:
    """End the process with exit status 3 after ``seconds`` (where SIGALRM exists): a background extraction
    never outlives the commit that started it by much."""
    import signal

    if not seconds or not hasattr(signal, "SIGALRM"):
        return

    def stop(_signum: int, _frame: Any) -> None:
        raise SystemExit(3)

    signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)


# -- one extraction at a time -----------------------------------------------------------------------------
#: how long an extraction waits for another one to finish: less than the hooks' background runs' 60 s deadline,
#: so a run that cannot start says so in the log rather than being ended by its deadline
EXTRACT_WAIT = 45.0
@contextlib.contextmanager
def extracting(repo: Any, timeout: float = EXTRACT_WAIT) -> Iterator[None]:
    """Hold the extraction lock of ``repo``'s machine-local state: the hooks start one background run for each
    commit and one after each amend or rebase, and they must not interleave. Each run reads what the project
    already knows under the lock, so two runs do not both store the same finding, and a revert or a rewrite sees
    what the run before it stored (a summary two reverts rewrite, a memory an amend must move)."""
    from gitmem.files.locks import LockTimeout, file_lock
    from gitmem.store.local import local_dir

    folder = local_dir(Path(repo.path))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with file_lock(str(folder / "extract.lock"), timeout):
            yield
    except LockTimeout:
        raise GitmemError(f"another gitmem extract has run for {timeout:.0f} s in {repo.path}",
                          "wait for it to finish, then run gitmem extract again") from None
