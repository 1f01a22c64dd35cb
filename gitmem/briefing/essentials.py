"""Essentials: what a session in a project must know whatever it does — the project's constraints and
corrections, the user's standing preferences, and the user's global must-follow memories (importance 5,
directives, hard rules).

They come from two folders only (``memories/<project>/`` and ``memories/global/``), not from a search, so a
rule is there even when nothing about the session's branch or commits mentions it. The list is ordered by
importance, then recency; the same rule written twice appears once, and so does a rule written again in nearly
the same words (a cosine of 0.8 over their words, the bar at which capture merges two statements: the first in
that order is shown); when two memories of the same scope contradict each other (one says "not X" or "不要 X",
the other names X), the correction is kept, else the newer, and the other is left out; so is a line of the
scanned project summary that names what a kept rule says not to use (the rule is the user's word, the summary a
guess from files).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gitmem.briefing.conflicts import names_any, negated_terms
from gitmem.errors import DocumentError
from gitmem.files.atomic import settled
from gitmem.files.places import CACHE
from gitmem.search.schema import memory_from_json, memory_json
from gitmem.store import document as docs
from gitmem.store.document import Memory
from gitmem.store.local import read_json, write_json
from gitmem.text.directives import detect_directives, directive_key
from gitmem.text.overlap import similarity

#: tag of the standing instructions stated in prompts (:mod:`gitmem.agents.claude.handlers`)
DIRECTIVE_TAG = "directive"
#: categories of a project's memories that are always essential
RULES = ("constraint", "correction")
#: the category of the user's standing preferences: essential from :data:`GLOBAL_MIN` in either scope ("keep
#: answers short", "改动较大时先说明思路" at importance 4 hold in every session, as a rule does)
PREFERENCE = "preference"
#: lowest importance of an essential project rule (below it a constraint is a hint, found by search if needed)
PROJECT_MIN = 3
#: lowest importance of an essential global rule; importance 5 is essential in any category
GLOBAL_MIN = 4
#: at most this many essentials (the rest are counted in the block's "more" line)
LIMIT = 24
#: longest text taken as a rule by its wording alone: a longer note (a runbook of 2.5k characters with one "never
#: hotfix in production" in it) is background, found by search and shown by its part, not given whole as a rule
RULE_CHARS = 500
#: the version of :func:`is_essential` the cached verdicts were taken by: raised whenever the rule changes, so a
#: verdict of the old rule is not kept until its file changes
RULE_VERSION = 3
#: two rules whose words are this similar (:func:`gitmem.text.overlap.similarity`) say the same thing: one is shown
NEAR_DUPLICATE = 0.8

def folder_memories(repo_path: Path, project: str, wanted: Callable[[Memory], bool] = lambda m: True,
                    cache_dir: Path | None = None) -> tuple[list[Memory], int]:
    """(the active memories of one folder of the memory repository that ``wanted`` keeps, how many active
    memories the folder holds); "" is the global folder. Unreadable files are skipped and not counted (``gitmem
    doctor`` reports them), nor are deprecated or expired memories.

    A folder of 10k memories takes seconds to parse, so what ``wanted`` said of each file is kept in
    ``essentials.json`` of ``cache_dir`` (the repository's ``.cache`` unless given) with the file's mtime and size:
    a file it turned down is not read again until it changes (a verdict taken too soon after the file's mtime is
    not trusted, :func:`gitmem.files.atomic.settled`); a kept one is stored as the search index stores memories, so
    no file is parsed while nothing changed."""
    folder = repo_path / docs.MEMORIES_DIR / docs.project_dir(project)
    cache_file = (cache_dir or repo_path / CACHE) / "essentials.json"
    cache = read_json(cache_file)
    # verdicts of another rule: every file is judged again ("/rule": a key no folder name can be)
    if cache.get("/rule") != RULE_VERSION:
        cache = {"/rule": RULE_VERSION}
    known = cache.get(folder.name, {})
    known = known if isinstance(known, dict) else {}
    seen: dict[str, Any] = {}
    found: list[Memory] = []
    active = 0
    now = datetime.now(UTC)
    try:
        entries = [e for e in os.scandir(folder) if e.name.endswith(".md") and "-conflict-" not in e.name]
    except OSError:
        return [], 0
    for entry in entries:
        try:
            info = entry.stat()
        except OSError:
            continue
        verdict = known.get(entry.name)
        read = _cached(verdict, info.st_mtime_ns, info.st_size)
        if read is not None:
            seen[entry.name] = verdict
        else:
            read_at = time.time_ns()
            try:
                parsed = docs.loads(Path(entry.path).read_text("utf-8"), entry.path)
            except (OSError, UnicodeDecodeError, DocumentError):
                continue
            keep = not parsed.deprecated and wanted(parsed)
            ends = -1 if parsed.deprecated else parsed.expires.timestamp() if parsed.expires is not None else 0
            seen[entry.name] = [info.st_mtime_ns, info.st_size, read_at,
                                memory_json(parsed).decode() if keep else "", ends]
            read = (parsed if keep else None, ends)
        memory, ends = read
        live = ends == 0 or ends > now.timestamp()
        active += live
        if memory is not None and live:
            found.append(memory)
    if seen != known:
        with contextlib.suppress(OSError):  # a cache that cannot be written only costs time
            write_json(cache_file, {**cache, folder.name: seen})
    return found, active


def _cached(verdict: Any, mtime_ns: int, size: int) -> tuple[Memory | None, float] | None:
    """(the kept memory or None when turned down, when it stops being active) from a cached verdict on a file,
    None when the verdict is missing, stale or damaged. A verdict: [mtime, size, when read, the memory as the index
    stores it or "" when turned down, the time it stops being active: 0 never, -1 deprecated, else its expiry in
    seconds]."""
    if not (isinstance(verdict, list) and len(verdict) == 5 and verdict[:2] == [mtime_ns, size]
            and isinstance(verdict[2], int) and settled(mtime_ns, verdict[2])
            and isinstance(verdict[3], str) and isinstance(verdict[4], int | float)):
        return None
    try:  # kept: no YAML to parse
        return (memory_from_json(verdict[3].encode("utf-8")) if verdict[3] else None), float(verdict[4])
    except (ValueError, TypeError, KeyError):  # a damaged cache entry: read the file again
        return None


def is_essential(memory: Memory) -> bool:
    """The rule of :mod:`gitmem.briefing.essentials`: project rules from importance 3, global rules and
    preferences from 4, anything of importance 5, and every directive. A rule is a constraint or a correction, or
    a memory whose text reads as a standing instruction ("never use unittest", 不要…) whatever its category says:
    many are remembered with the default category. A long note (over :data:`RULE_CHARS`) is no rule by its
    wording."""
    if DIRECTIVE_TAG in memory.tags or memory.importance >= 5:
        return True
    if memory.category == PREFERENCE and memory.importance >= GLOBAL_MIN:
        return True
    floor = PROJECT_MIN if memory.project else GLOBAL_MIN
    if memory.importance < floor:
        return False
    return memory.category in RULES or (len(memory.text) <= RULE_CHARS and bool(detect_directives(memory.text)))


def settle(memories: Iterable[Memory], limit: int | None = None) -> list[Memory]:
    """Order by importance then recency, drop repeats of the same rule (written again, or in nearly the same
    words: :data:`NEAR_DUPLICATE`), and resolve contradictions; at most ``limit`` memories (all when None).

    Two memories of the same scope contradict when one says not to use a word that the other names (and does not
    itself rule out). The memories are weighed in order of precedence (corrections first, then the newer; at the
    same time, the one that says what not to use), and each is kept only if it contradicts none kept before it:
    so "use yarn, not npm", then "we are back on npm", then "install with yarn, never npm" keeps the first and
    the last."""
    ordered = sorted(memories, key=lambda m: (m.importance, m.updated), reverse=True)
    negated = {m.id: negated_terms(m.text) for m in ordered}

    def contradict(a: Memory, b: Memory) -> bool:
        if a.project != b.project or not (negated[a.id] or negated[b.id]):
            return False
        return names_any(b.text, negated[a.id] - negated[b.id]) or names_any(a.text, negated[b.id] - negated[a.id])

    # only memories of one scope can contradict, and only when one of them says "not": a memory saying no "not"
    # is weighed against the winners that do (thousands of rules of importance 5 are otherwise millions of pairs)
    winners: dict[str, list[Memory]] = {}
    negating: dict[str, list[Memory]] = {}
    for memory in sorted(ordered, key=lambda m: (m.category == "correction", m.updated, bool(negated[m.id])),
                         reverse=True):
        rivals = (winners if negated[memory.id] else negating).get(memory.project, [])
        if not any(contradict(memory, winner) for winner in rivals):
            winners.setdefault(memory.project, []).append(memory)
            if negated[memory.id]:
                negating.setdefault(memory.project, []).append(memory)
    standing = {m.id for scope in winners.values() for m in scope}
    kept: list[Memory] = []
    keys: set[str] = set()
    for memory in ordered:
        if len(kept) == limit:  # the near-duplicate check compares pairs: never past what is shown
            break
        key = directive_key(memory.text)
        if key in keys or memory.id not in standing:
            continue
        keys.add(key)
        if any(similarity(memory.text, other.text) >= NEAR_DUPLICATE for other in kept):
            continue
        kept.append(memory)
    return kept


def essentials(repo_path: Path, project: str, cache_dir: Path | None = None) -> tuple[list[Memory], int]:
    """(the essentials of ``project`` plus the global ones, how many other memories those two folders hold);
    ``cache_dir``: where the verdicts on the files are kept (:func:`folder_memories`)."""
    pool, total = folder_memories(repo_path, "", is_essential, cache_dir)
    if project:
        mine, count = folder_memories(repo_path, project, is_essential, cache_dir)
        pool, total = pool + mine, total + count
    chosen = settle(pool, LIMIT)
    return chosen, total - len(chosen)
