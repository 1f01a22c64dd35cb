"""Essentials: what a session in a project must know whatever it does — the project's constraints and
corrections, and the user's global must-follow memories (importance 5, directives, hard rules).

They come from two folders only (``memories/<project>/`` and ``memories/global/``), not from a search, so a
rule is there even when nothing about the session's branch or commits mentions it. The list is ordered by
importance, then recency; the same rule written twice appears once; when a correction says "not X" (or "不要
X"), older memories of the same scope that recommend X are left out, and so is a line of the scanned project
summary that names X (the correction is the user's word, the summary a guess from files).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from gitmem import documents as docs
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

_NEGATED = re.compile(
    r"(?:\b(?:not|never|no\s+longer|don'?t|do\s+not|instead\s+of|rather\s+than|avoid|stop)\s+"
    r"(?:(?:use|using|run|running|call|calling|with|the|a)\s+)?|(?:不要|别|不用|不再|而不是|禁止|不能)(?:用|使用|运行)?\s*)"
    r"[`'\"]?([\w@./+-]*\w)", re.IGNORECASE)
_FILLER = frozenset(["a", "an", "the", "it", "this", "that", "to", "be", "in", "on", "of", "for", "and", "or",
                     "any", "anything", "so"])


def negated_terms(text: str) -> set[str]:
    """The words a rule says not to use ("use pnpm, not npm" → {"npm"}; "不要用 yarn" → {"yarn"})."""
    return {m.group(1).lower() for m in _NEGATED.finditer(text) if m.group(1).lower() not in _FILLER}


def names(text: str, term: str) -> bool:
    """Whether ``text`` mentions ``term`` as a whole word (case-insensitive)."""
    return re.search(rf"(?<![\w@./+-]){re.escape(term)}(?![\w@+-])", text, re.IGNORECASE) is not None


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
            and any(names(memory.text, t) and t not in negated_terms(memory.text) for t in terms)
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


def contradicted(line: str, rules: Iterable[Memory]) -> bool:
    """Whether a line (of the scanned project summary) names a word one of ``rules`` says not to use."""
    return any(names(line, term) for rule in rules for term in negated_terms(rule.text))
