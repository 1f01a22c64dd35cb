"""What an amend or a rebase does to the memories extracted from the commits it replaced (``gitmem extract
--rewritten``, run by the post-rewrite hook): :func:`carry_over` moves a memory to the commit that replaced its own
(``source_ref`` re-pointed, so a later revert of the new commit finds it) when the new commit still says it, and
deprecates it when the new commit no longer does (an amended message that dropped or changed the statement, a
commit squashed into another, a commit the rebase dropped). The commits replaced are remembered in the memory
repository's machine-local ``local/rewritten.json`` (:func:`note_rewritten`, :func:`replacements`): a background
run for an old commit that starts after the rewrite was handled stores nothing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gitmem.learn.commits import DROP_REASON, REWRITE_REASON, finding_keys, same_commit
from gitmem.text.records import replace


def carry_over(repo: Any, project: str, kind: str, rewrites: Sequence[tuple[str, Any, Any]],
               dropped: Iterable[str] = (), arrived: Sequence[Any] = ()) -> tuple[list[Any], list[Any]]:
    """After ``git commit --amend`` or ``git rebase`` (``kind``): for each (old sha, old commit or None when git
    no longer has it, new commit), ``project``'s active memories extracted from the old commit move to the new
    one (``source_ref`` re-pointed) when the new commit's findings still say them, or when the memory no longer
    reads as the old commit's finding (edited by hand: the user's wording is kept); the others are deprecated
    with a reason naming the new commit. Memories of the ``dropped`` commits (a rebase's ``drop``: git names no
    pair for them, and a commit whose change the upstream already has) move to a commit that says them, among the
    new ones and those that ``arrived`` on the branch, or are deprecated. One memory-repo commit (``Gitmem-Commit``
    trailers naming the new commits). Returns (moved, deprecated)."""
    from gitmem.learn.extract import normalise
    from gitmem.store import document as docs
    from gitmem.text.counted import counted

    dropped_shas = list(dropped)
    says: dict[str, set[str]] = {}  # commit sha → keys of its findings, read once

    def said(commit: Any) -> set[str]:
        if commit.sha not in says:
            says[commit.sha] = finding_keys(repo, commit)
        return says[commit.sha]

    now = docs.utcnow()
    changed = []
    read_from: dict[str, str] = {}  # memory id → its source_ref when read
    for memory in repo.list(project=project):
        ref_project, _, ref_sha = memory.source_ref.rpartition("@")
        if memory.source != "commit" or ref_project != project:
            continue
        key = normalise(memory.text)
        pair = next(((old, new) for old_sha, old, new in rewrites if same_commit(old_sha, ref_sha)), None)
        if pair is None and any(same_commit(sha, ref_sha) for sha in dropped_shas):
            saying = next((c for c in [*(new for _o, _old, new in rewrites), *arrived] if key in said(c)), None)
            read_from[memory.id] = memory.source_ref
            changed.append(replace(memory, source_ref=f"{project}@{saying.sha}") if saying is not None else
                           replace(memory, deprecated=True, updated=now, deprecated_reason=f"{DROP_REASON}{kind}"))
            continue
        if pair is None or same_commit(pair[1].sha, ref_sha):
            continue
        old, new = pair
        read_from[memory.id] = memory.source_ref
        if key in said(new) or (old is not None and key not in said(old)):
            changed.append(replace(memory, source_ref=f"{project}@{new.sha}"))
        else:
            subject = new.message.strip().splitlines()[0].strip() if new.message.strip() else ""
            changed.append(replace(memory, deprecated=True, updated=now,
                                   deprecated_reason=f"{REWRITE_REASON}{new.sha[:12]} ({kind}: {subject[:150]})"))
    if not changed:
        return [], []

    def merge(current: Any, wanted: Any) -> Any:
        # applied to the file as it is under the lock: not if it was deprecated or moved meanwhile
        if current.deprecated or current.source_ref != read_from[wanted.id]:
            return None
        return replace(current, source_ref=wanted.source_ref, deprecated=wanted.deprecated,
                       deprecated_reason=wanted.deprecated_reason, updated=wanted.updated)

    gone = [m for m in changed if m.deprecated]
    news = sorted({new.sha for _o, _old, new in rewrites}) or sorted(dropped_shas)[:1]
    title = changed[0].title if len(changed) == 1 else counted(len(changed), "memory")
    _sha, written = repo.commit_batch(
        changed, subject=f"{kind}: {title}", op="deprecate" if gone else "update",
        source=f"commit:{project}@{news[0]}", trailers={"Gitmem-Commit": news},
        body=f"{counted(len(rewrites), 'commit')} of {project} rewritten by git {kind}", merge=merge)
    return [m for m in written if not m.deprecated], [m for m in written if m.deprecated]


#: rewritten commits remembered (old sha → new sha), the newest kept
_REWRITES_KEPT = 2000


def _rewrites_file(repo: Any) -> Path:
    from gitmem.store.local import local_dir

    return local_dir(Path(repo.path)) / "rewritten.json"


def replacements(repo: Any) -> dict[str, str]:
    """The commits amends and rebases replaced: old sha → the sha that replaced it."""
    import json

    try:
        data = json.loads(_rewrites_file(repo).read_bytes())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def note_rewritten(repo: Any, pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Remember that the commits ``pairs`` name were replaced (old sha, new sha); returns every replacement
    remembered (:func:`replacements`, these included)."""
    import json

    from gitmem.files.atomic import atomic_write

    known = replacements(repo)
    known.update(pairs)
    kept = dict(list(known.items())[-_REWRITES_KEPT:])
    atomic_write(_rewrites_file(repo), json.dumps(kept).encode("utf-8"))
    return kept


def latest(replaced: Mapping[str, str], sha: str) -> str:
    """``sha``, or the commit that replaced it when it was amended again since (a later amend's run finished
    first), or the one that replaced that..."""
    seen = {sha}
    while (later := replaced.get(sha, "")) and later not in seen:
        seen.add(later)
        sha = later
    return sha
