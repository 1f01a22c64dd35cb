"""Essentials: what a session in a project must know whatever it does — the project's constraints and
corrections, and the user's global must-follow memories (importance 5, directives, hard rules).

They come from two folders only (``memories/<project>/`` and ``memories/global/``), not from a search, so a
rule is there even when nothing about the session's branch or commits mentions it. The list is ordered by
importance, then recency; the same rule written twice appears once; when a correction says "not X" (or "不要
X"), older memories of the same scope that recommend X are left out, and so is a line of the scanned project
summary that names X (the correction is the user's word, the summary a guess from files).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from gitmem import documents as docs
from gitmem.briefing.conflicts import names_any, negated_terms
from gitmem.directives import detect_directives, directive_key
from gitmem.documents import Memory
from gitmem.errors import DocumentError

#: tag of the standing instructions stated in prompts (:mod:`gitmem.hooks`)
DIRECTIVE_TAG = "directive"
#: categories of a project's memories that are always essential
RULES = ("constraint", "correction")
#: lowest importance of an essential project rule (below it a constraint is a hint, found by search if needed)
PROJECT_MIN = 3
#: lowest importance of an essential global rule; importance 5 is essential in any category
GLOBAL_MIN = 4
#: at most this many essentials (the rest are counted in the block's "more" line)
LIMIT = 24

def folder_memories(repo_path: Path, project: str) -> list[Memory]:
    """The active memories in one folder of the memory repository ("" is the global folder); unreadable files
    are skipped (``gitmem doctor`` reports them)."""
    folder = repo_path / docs.MEMORIES_DIR / docs.project_dir(project)
    now = datetime.now(UTC)
    found: list[Memory] = []
    try:
        paths = sorted(folder.glob("*.md"))
    except OSError:
        return []
    for path in paths:
        if "-conflict-" in path.name:
            continue
        try:
            memory = docs.loads(path.read_text("utf-8"), str(path))
        except (OSError, UnicodeDecodeError, DocumentError):
            continue
        if not memory.deprecated and (memory.expires is None or memory.expires > now):
            found.append(memory)
    return found


def is_essential(memory: Memory) -> bool:
    """The rule of :mod:`gitmem.briefing.essentials`: project rules from importance 3, global rules from 4,
    anything of importance 5, and every directive. A rule is a constraint or a correction, or a memory whose
    text reads as a standing instruction ("never use unittest", 不要…) whatever its category says: many are
    remembered with the default category."""
    if DIRECTIVE_TAG in memory.tags or memory.importance >= 5:
        return True
    floor = PROJECT_MIN if memory.project else GLOBAL_MIN
    if memory.importance < floor:
        return False
    return memory.category in RULES or bool(detect_directives(memory.text))


def settle(memories: Iterable[Memory]) -> list[Memory]:
    """Order by importance then recency, drop repeats of the same rule, and drop what a newer correction
    overrides (an older memory of the same scope that names a word the correction says not to use)."""
    ordered = sorted(memories, key=lambda m: (m.importance, m.updated), reverse=True)
    corrections = [(m, negated_terms(m.text)) for m in ordered if m.category == "correction"]
    kept: list[Memory] = []
    keys: set[str] = set()
    for memory in ordered:
        key = directive_key(memory.text)
        if key in keys:
            continue
        overridden = any(
            other.id != memory.id and other.project == memory.project and other.updated >= memory.updated
            and names_any(memory.text, terms - negated_terms(memory.text))
            for other, terms in corrections)
        if overridden:
            continue
        keys.add(key)
        kept.append(memory)
    return kept


def essentials(repo_path: Path, project: str) -> tuple[list[Memory], int]:
    """(the essentials of ``project`` plus the global ones, how many other memories those two folders hold)."""
    pool = folder_memories(repo_path, "") + (folder_memories(repo_path, project) if project else [])
    chosen = settle(m for m in pool if is_essential(m))[:LIMIT]
    return chosen, len(pool) - len(chosen)
