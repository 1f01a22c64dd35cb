"""What a code commit's message says beyond its own findings; used by :mod:`gitmem.learn.extract` and ``gitmem
extract``.

- **Reverts**: a commit in git's revert form (``Revert "<subject>"`` or ``Reapply "<subject>"``, with ``This
  reverts commit <sha>.``) teaches nothing of its own: :func:`reverted_sha` names the commit it takes back and
  :func:`take_back` deprecates the memories extracted from that commit (a revert of a revert restores what the
  first revert deprecated), in one memory-repo commit. :class:`KnownTexts` lets a later commit that lands the
  reverted change again learn it anew.
- **Rewrites**: ``git commit --amend`` and ``git rebase`` replace commits; :mod:`gitmem.learn.rewrites` moves
  what a replaced commit taught to the commit that replaced it; the reasons it deprecates with are here, as
  :class:`KnownTexts` reads them.
- **Folding**: :func:`owners` decides which file findings a message finding explains. Besides a package the
  message names, a dependency finding is folded when its package name holds a word of the message (``memcached``
  → ``pymemcache``), or when it is the one package added to a manifest beside the one removed from it and the
  message says "from <removed> to …".
- **Wording**: :func:`restates` (a BREAKING CHANGE footer saying all a ``!`` subject says) and :func:`sentence`
  (a finding starts with a capital, as conventional-commit subjects do not).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from gitmem.text.records import replace

if TYPE_CHECKING:
    from gitmem.learn.extract import Finding

# -- reverts --------------------------------------------------------------------------------------------
# git writes ``Revert "<subject>"`` (``Reapply "<subject>"`` since 2.43 for a revert of a revert) and the full sha;
# a conventional-commit ``revert: <subject>`` and an abbreviated sha (7 digits or more), from an edited message,
# are taken too: the "This reverts commit" line is what says it
_REVERT_SUBJECT = re.compile(r'^(?:(?:Revert|Reapply) ".*"|revert(?:\([^)]*\))?!?:\s*\S.*)$')
_REVERTS = re.compile(r"^This reverts commit ([0-9a-f]{7,64})\b", re.MULTILINE | re.IGNORECASE)
#: how :func:`take_back` words a deprecation; a later revert of the revert finds its memories by it
REVERT_REASON = "reverted by commit "
#: how :func:`carry_over` words a deprecation; such a text is not known to later commits (an amend back to it)
REWRITE_REASON = "rewritten as commit "
#: ... and that of a memory whose commit a rebase dropped
DROP_REASON = "its commit was dropped by git "
_REVERTED_BY = re.compile(re.escape(REVERT_REASON) + r"([0-9a-f]{7,64})")


def reverted_sha(message: str) -> str:
    """The commit that a commit in git's revert form reverts ("" for any other message)."""
    lines = message.strip().splitlines()
    if not lines or not _REVERT_SUBJECT.match(lines[0].strip()):
        return ""
    match = _REVERTS.search(message)
    return match.group(1).lower() if match else ""


def same_commit(one: str, other: str) -> bool:
    """Whether two shas, either possibly abbreviated, name the same commit."""
    return bool(one) and bool(other) and (one.startswith(other) or other.startswith(one))


def revert_chain(reverted: str, read: Callable[[str], Any]) -> tuple[Any, bool]:
    """Where a revert of ``reverted`` leads: follows reverts of reverts (``read(sha)`` gives a commit or None) to
    the first commit that is not one, the origin. Returns (the origin commit, or None when it cannot be read;
    whether the revert undoes the origin: True after an odd number of reverts, False when it brings the origin
    back)."""
    undo, sha, seen = True, reverted, set()
    while sha not in seen:
        seen.add(sha)
        commit = read(sha)
        if commit is None:
            return None, undo
        before = reverted_sha(commit.message)
        if not before:
            return commit, undo
        undo, sha = not undo, before
    return None, undo


def reverted_origins(reverted: str, read: Callable[[str], Any], between: Callable[[str, str], list[Any]]
                     ) -> tuple[list[Any], bool]:
    """The commits a revert of ``reverted`` is about, and whether it undoes them (:func:`revert_chain`): the
    origin, or for a merge (``git revert -m 1``) the commits it brought in (``between(first parent, second
    parent)``); [] when the origin cannot be read."""
    origin, undo = revert_chain(reverted, read)
    if origin is None:
        return [], undo
    if len(origin.parent_ids) == 2:
        return between(*origin.parent_ids), undo
    return [origin], undo


def take_back(repo: Any, project: str, commit: Any, reverted: str, *, origins: Sequence[Any] = (),
              restore: bool = False) -> tuple[list[Any], list[Any]]:
    """What ``commit`` (a code commit in git's revert form, reverting ``reverted``) undoes in ``project``'s
    memories. ``origins`` are the commits it is about (:func:`reverted_origins`; ``reverted`` alone when none
    could be read): a memory was taught by an origin when it was extracted from it (``source_ref``
    ``<project>@<sha>``) or from another commit saying the same (a cherry-pick of it is skipped as known: the
    memory names the first). Those memories are deprecated with a reason naming the revert, or, when ``restore``
    (a revert of a revert of it), the ones a revert deprecated are restored. What a ``gitmem compact`` summary
    holds of an origin is taken out of it: the summary is rewritten from its other members, or retired with its
    one member left active again. One memory-repo commit (``Gitmem-Commit: <revert sha>``, ``Gitmem-Reverts:
    <reverted sha>``). Returns (deprecated, restored)."""
    from gitmem.learn.extract import normalise
    from gitmem.store import document as docs
    from gitmem.store.lifecycle import compacted_members, refold
    from gitmem.text.counted import counted

    subject = commit.message.strip().splitlines()[0].strip()
    reason = f"{REVERT_REASON}{commit.sha[:12]} ({subject[:150]})"
    now = docs.utcnow()
    changed = []
    everything = repo.list(project=project, deprecated=True)
    by_id = {m.id: m for m in everything}
    taught_by = [c.sha for c in origins] or [reverted]
    keys = {key for c in origins for key in finding_keys(repo, c)}

    def taught_by_reverted(memory: Any) -> bool:
        ref_project, _, ref_sha = memory.source_ref.rpartition("@")
        return memory.source == "commit" and ref_project == project and (
            any(same_commit(ref_sha, origin) for origin in taught_by) or normalise(memory.text) in keys)

    for memory in everything:
        if not taught_by_reverted(memory):
            continue
        if not restore and not memory.deprecated:
            changed.append(replace(memory, deprecated=True, deprecated_reason=reason, updated=now))
        elif restore and memory.deprecated and _REVERTED_BY.match(memory.deprecated_reason or ""):
            changed.append(replace(memory, deprecated=False, deprecated_reason="", superseded_by="", updated=now))
    # what a compaction summary holds of the reverted commit: taken out of the summary (rewritten with the rest of
    # its members), or, when one member or none is left, the summary retired and that member active again
    exact: dict[str, Any] = {}  # id → the memory as read: written only if unchanged under the lock
    for summary_id, members in compacted_members(everything).items():
        taken = [m for m in members if taught_by_reverted(m)]
        summary = by_id.get(summary_id)
        if restore or not taken or summary is None or summary.deprecated:
            continue
        left = [m for m in members if not taught_by_reverted(m)]
        rewritten = refold(summary, left, now=now)
        updates = [replace(m, deprecated_reason=reason, superseded_by="", updated=now) for m in taken]
        if rewritten is not None:
            updates.append(rewritten)
        else:
            updates.append(replace(summary, deprecated=True, updated=now,
                                   deprecated_reason=f"what it held was taken back ({reason})"))
            updates += [replace(m, deprecated=False, deprecated_reason="", superseded_by="", updated=now)
                        for m in left]
        exact.update((m.id, by_id[m.id]) for m in updates)
        changed += updates
    if not changed or repo.log(source=f"commit:{project}@{commit.sha}", limit=1):
        return [], []  # nothing to undo, or undone already: a backfill run twice commits nothing twice

    def merge(old: Any, new: Any) -> Any:
        # applied to the file as it is under the lock: only the deprecation moves, and not if it moved meanwhile
        if new.id in exact:
            return new if old == exact[new.id] else None
        if old.deprecated == new.deprecated:
            return None
        return replace(old, deprecated=new.deprecated, deprecated_reason=new.deprecated_reason,
                       superseded_by=new.superseded_by, updated=new.updated)

    gone = [m for m in changed if m.deprecated]
    title = changed[0].title if len(changed) == 1 else f"{counted(len(changed), 'memory')} of {reverted[:10]}"
    _sha, written = repo.commit_batch(
        changed, subject=f"{'revert' if gone else 'reapply'}: {title}", op="deprecate" if gone else "restore",
        source=f"commit:{project}@{commit.sha}", trailers={"Gitmem-Commit": commit.sha, "Gitmem-Reverts": reverted},
        body=f"From {project}@{commit.sha[:10]}: {subject}", merge=merge)
    return ([m for m in written if m.deprecated],  # a rewritten summary (active before and after): neither
            [m for m in written if not m.deprecated and by_id[m.id].deprecated])


class KnownTexts:
    """The normalised texts of a project's memories, whose findings extraction does not store again.

    A text whose memories a revert deprecated (and nothing else holds) is known only to the commit it was extracted
    from: a backfill run twice stores nothing twice, and a later commit that lands the reverted change again (a
    cherry-pick, the same change redone) is learned anew rather than skipped as known. A text whose memories an
    amend or rebase deprecated is not known at all: the commit it came from is gone from the branch."""

    def __init__(self, repo: Any, project: str) -> None:
        self.texts: set[str] = set()  # what every commit skips
        self._holders: Counter[str] = Counter()  # text → memories holding it that no revert deprecated
        self._reverted: dict[str, set[str]] = {}  # commit sha → texts of its memories that a revert deprecated
        self.update(added=repo.list(project=project, deprecated=True))

    def for_commit(self, sha: str) -> set[str]:
        """The texts ``sha``'s findings are checked against (the set to give ``store_findings``, which adds what
        it stores to it)."""
        mine = self._reverted.get(sha)
        return self.texts | mine if mine else self.texts

    def update(self, added: Iterable[Any] = (), deprecated: Iterable[Any] = (), restored: Iterable[Any] = ()) -> None:
        """Take in memories stored, and memories a revert deprecated or restored."""
        from gitmem.learn.extract import normalise

        def revert_deprecated(memory: Any) -> bool:
            return bool(memory.deprecated) and memory.deprecated_reason.startswith(REVERT_REASON)

        for memory in added:
            key = normalise(memory.text)
            if revert_deprecated(memory):
                self._reverted.setdefault(memory.source_ref.rpartition("@")[2], set()).add(key)
            elif memory.deprecated and memory.deprecated_reason.startswith((REWRITE_REASON, DROP_REASON)):
                continue  # its commit is gone from the branch: the next commit saying it again is learned anew
            elif key:
                self._holders[key] += 1
                self.texts.add(key)
        for memory in deprecated:
            key = normalise(memory.text)
            self._holders[key] -= 1
            if self._holders[key] <= 0:
                self.texts.discard(key)
            self._reverted.setdefault(memory.source_ref.rpartition("@")[2], set()).add(key)
        for memory in restored:
            key = normalise(memory.text)
            self._holders[key] += 1
            self.texts.add(key)


# -- rewrites -------------------------------------------------------------------------------------------


def finding_keys(repo: Any, commit: Any) -> set[str]:
    """The normalised texts ``commit``'s findings are stored with (secrets redacted); none for a merge, a revert
    or gitmem's own commit."""
    from gitmem.learn.extract import findings_for_commit, normalise
    from gitmem.learn.oncommit import skip_reason
    from gitmem.redact.engine import redact

    if skip_reason(commit) or reverted_sha(commit.message):
        return set()
    patterns = repo.config.redaction.extra_patterns
    return {normalise(redact(f.text, extra_patterns=patterns).text) for f in findings_for_commit(commit.message,
                                                                                                   commit.files)}


# -- folding --------------------------------------------------------------------------------------------
#: words too common in commit messages, and package name parts too generic, to relate a package to a message
_GENERIC = frozenset({
    "python", "python3", "nodejs", "javascript", "typescript", "golang", "types", "typing", "plugin", "plugins",
    "client", "server", "utils", "tools", "common", "testing", "tests", "config", "extra", "extras",
    "switch", "switched", "replace", "replaced", "migrate", "migrated", "migration", "adopt", "adopted", "introduce",
    "introduced", "deprecate", "instead", "remove", "removed", "dependency", "dependencies", "support", "using",
    "never", "always", "should", "required", "forbid",
})
_MIN_WORD = 5  # shorter words ("http", "json", "test") are inside too many unrelated package names
_MAX_AFFIX = 4  # what a package name may add around the message's word ("py" + "memcache")


def mentions(names: Iterable[str], text: str) -> bool:
    """Whether ``text`` names one of ``names`` as a whole word."""
    return any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text, re.IGNORECASE) for n in names if n)


def _variants(word: str) -> set[str]:
    """A word and its forms without an English ending (``memcached`` → ``memcache``, ``sessions`` → ``session``)."""
    forms = {word}
    for ending in ("ing", "es", "ed", "s", "d", "e"):
        if word.endswith(ending):
            forms.add(word[: -len(ending)])
    return forms


def related(names: Iterable[str], text: str) -> bool:
    """Whether a part of a package name holds a word of ``text`` (not a generic one) with at most a short affix:
    ``pymemcache`` and "memcached", ``urllib3`` and "urllib", ``pydantic-settings`` and "pydantic"."""
    words = {form for word in re.findall(r"[a-z][a-z0-9]*", text.lower()) if word not in _GENERIC
             for form in _variants(word) if len(form) >= _MIN_WORD and form not in _GENERIC}
    parts = {part for name in names for part in re.split(r"[^a-z0-9]+", name.lower())
             if len(part) >= _MIN_WORD and part not in _GENERIC}
    return any(word in part and len(part) - len(word) <= _MAX_AFFIX for part in parts for word in words)


_SWITCHED_FROM = (
    re.compile(r"\bfrom\s+(?P<old>.+?)\s+to\b", re.IGNORECASE),
    re.compile(r"\breplac(?:e|ed|es|ing)\s+(?P<old>.+?)\s+(?:with|by)\b", re.IGNORECASE),
    re.compile(r"\binstead of\s+(?P<old>.+)$", re.IGNORECASE),
    re.compile(r"(?P<old>[\w.@/-]+)\s*(?:->|→|=>)\s*\S"),
    re.compile(r"从\s*(?P<old>.+?)\s*(?:迁移|切换|换|改)到"),
    re.compile(r"用\s*.+?\s*替换\s*(?P<old>.+)$"),
)


def switched_from(text: str) -> str:
    """What a message says was switched away from ("from X to Y", "replace X with Y", "Y instead of X", "X → Y",
    从X迁移到Y, 用Y替换X); "" when it says no such thing."""
    for pattern in _SWITCHED_FROM:
        match = pattern.search(text)
        if match:
            return match.group("old")
    return ""


def _manifest(finding: Finding) -> str:
    return finding.why.split(": ", 1)[0]


def owners(said: Sequence[Finding], found: Sequence[Finding]) -> list[int | None]:
    """For each file finding of ``found``, the index in ``said`` (the message's findings) of the one it is folded
    into, or None when it stays a memory of its own.

    In order: the first message finding that names the package (tool, image); for a dependency, the first whose
    words the package name holds (:func:`related`); for the one dependency added to a manifest beside the one
    removed from it, the message finding the removed one went to when that finding says it switched away from it
    ("from redis to memcached" adding ``pymemcache``)."""
    result: list[int | None] = []
    for finding in found:
        owner = next((i for i, m in enumerate(said) if finding.names and mentions(finding.names, m.text)), None)
        if owner is None and finding.key.startswith("dep:"):
            owner = next((i for i, m in enumerate(said) if related(finding.names, m.text)), None)
        result.append(owner)
    paths: dict[str, list[int]] = {}
    for n, finding in enumerate(found):
        if finding.key.startswith(("dep:add:", "dep:remove:")):
            paths.setdefault(_manifest(finding), []).append(n)
    for members in paths.values():
        added = [n for n in members if found[n].key.startswith("dep:add:")]
        removed = [n for n in members if found[n].key.startswith("dep:remove:")]
        if len(added) != 1 or len(removed) != 1 or result[added[0]] is not None:
            continue
        owner = result[removed[0]]
        old = switched_from(said[owner].text) if owner is not None else ""
        if owner is not None and old and (mentions(found[removed[0]].names, old)
                                          or related(found[removed[0]].names, old)):
            result[added[0]] = owner
    return result


# -- wording --------------------------------------------------------------------------------------------
def _stem(word: str) -> str:
    """A crude English stem, enough to compare two wordings of one statement (``dropped`` and ``drop``)."""
    if len(word) > 4:
        for ending in ("ing", "ed", "es", "s", "e"):
            if word.endswith(ending):
                word = word[: -len(ending)]
                break
        if len(word) > 3 and word[-1] == word[-2]:
            word = word[:-1]
    return word


def _stems(text: str) -> set[str]:
    return {_stem(word) for word in re.findall(r"\w+", text.lower())}


def restates(statement: str, text: str) -> bool:
    """Whether ``statement`` says everything ``text`` says: each of its words is among the statement's."""
    words = _stems(text)
    return bool(words) and words <= _stems(statement)


_PLAIN_WORD = re.compile(r"[a-z]+(?=[\s,;:]|$)")


def sentence(text: str) -> str:
    """``text`` with a capital first letter when its first word is a plain lower-case word (a conventional-commit
    subject: "drop Python 3.9" → "Drop Python 3.9"); identifiers such as ``iOS``, ``npm@9``, ``.env`` or
    ```uv``` are left as written."""
    return text[0].upper() + text[1:] if _PLAIN_WORD.match(text) else text
