"""Extraction on commit, the library side: the post-commit hook script a code repository runs, its install and
uninstall (chaining a hook that was there), which commits are skipped, storing a commit's findings as memories, and
the deadline a background run keeps. ``gitmem git-hooks`` and ``gitmem extract`` print around these."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitmem.errors import GitmemError
from gitmem.files.atomic import atomic_write

#: the hook installed into code repositories: ships once, as package data (``git-hooks/post-commit`` in the
#: source tree is a copy that a test keeps identical)
HOOK_SCRIPT = (Path(__file__).parents[1] / "data" / "post-commit").read_text(encoding="utf-8")
HOOK_MARKER = "# gitmem post-commit hook"
CHAINED_SUFFIX = ".pre-gitmem"
_BIN_LINE = 'GITMEM_BIN="${GITMEM_BIN:-gitmem}"'


def hook_text(executable: str) -> str:
    """The post-commit hook script, running ``executable`` (a bare ``gitmem`` is looked up on PATH)."""
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


def skip_reason(commit: Any) -> str:
    """Why a code commit is not read for findings ("" when it is): merges and gitmem's own commits."""
    if commit.parents > 1:
        return "merge commit"
    if "Gitmem-Op:" in commit.message:
        return "made by gitmem"
    return ""


def store_findings(repo: Any, project: str, commit: Any, findings: list[Any], known: set[str]) -> list[Any]:
    """Commit the new findings of one code commit as memories of ``project`` (one memory-repo commit);
    findings whose text is already known for the project are skipped. Returns the memories added."""
    from gitmem.learn.extract import normalise
    from gitmem.redact.engine import redact
    from gitmem.store import document as docs

    patterns = repo.config.redaction.extra_patterns
    memories = []
    for finding in findings:
        # compared as it is stored: the known texts are the memories' own, secrets redacted
        text = redact(finding.text, extra_patterns=patterns).text
        key = normalise(text)
        if not key or key in known:
            continue
        known.add(key)
        memory = docs.make_memory(text, category=finding.category, importance=finding.importance,
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
