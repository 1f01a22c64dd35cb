"""Recall: the context block a session gets, built from the code project, cut to a token budget.

The block has two parts. **Essentials** (:mod:`gitmem.briefing.essentials`): the project's constraints and
corrections and the user's must-follow memories, always present. **Relevant**: memories found by a search for
what the session is likely to touch (the project name, the branch, the last commit subjects, the files used most
lately), admitted only past the absolute relevance gate (:mod:`gitmem.briefing.gate`) and while their ``expires``
has not passed (both parts leave an expired memory out; ``gitmem search`` still finds it), grouped by category and
added in score order until the next one would break the budget. Every recall bumps local usage counters
(``local/usage.json``: last used, count) without making a commit, so ``gc`` can tell what is never used.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from gitmem.briefing.block import build_block, given
from gitmem.briefing.essentials import essentials as find_essentials
from gitmem.briefing.gate import relevant_hits
from gitmem.errors import ValidationError
from gitmem.projects.identity import CodeContext, code_context
from gitmem.search.hit import Hit
from gitmem.search.index import open_index
from gitmem.search.schema import opening
from gitmem.store.document import Memory, bullet
from gitmem.store.memories import MemoryRepo
from gitmem.store.usage import bump_usage
from gitmem.text.tokens import TokenCounter, count_tokens

#: tokens the Relevant part may use at most (the Essentials come first and are always shown)
RELEVANT_BUDGET = 450


@dataclass
class RecallResult:
    """The injected block and how it was made."""

    text: str
    hits: list[Hit]
    tokens: int
    budget: int
    query: str
    project: str
    notice: str = ""
    left_out: int = 0
    """memories chosen for the block that did not fit the budget: Essentials and ranked hits"""
    context: CodeContext | None = field(default=None, repr=False)
    essentials: list[Memory] = field(default_factory=list)
    """the Essentials part (its memories come before the hits in :attr:`text`)"""
    more: int = 0
    """memories of the project and global ones the block does not show"""
    vectors_missing: int = 0
    """memories ranked without a vector because ``embed_missing=False`` left them to the warm-up"""
    opened: list[str] = field(default_factory=list)
    """ids of the Essentials shown by their first part only (too long for the budget whole)"""

    @property
    def ids(self) -> list[str]:
        """Every memory id in the block."""
        return [m.id for m in self.essentials] + [h.id for h in self.hits]

    def given(self) -> tuple[list[str], list[tuple[str, int]]]:
        """What the block gives a session (:func:`gitmem.briefing.block.given`): ids of the memories shown
        whole, ``(id, n)`` of the long ones shown by their part ``n``."""
        whole, parts = given(self.hits)
        opened = set(self.opened)
        return ([m.id for m in self.essentials if m.id not in opened] + whole,
                [(m.id, 1) for m in self.essentials if m.id in opened] + parts)


def effective_budget(repo: MemoryRepo, query: str, budget: int | None) -> int:
    """The budget to use: the one asked for (or the configured one), scaled by query complexity when the
    dynamic budget is on, never above the hard cap."""
    settings = repo.config.recall
    if budget is not None and budget <= 0:
        raise ValidationError(f"budget {budget} is not positive", "give a number of tokens, e.g. --budget 2000")
    wanted = budget if budget is not None else settings.budget
    if budget is None and settings.dynamic_budget:
        terms = {w for w in query.lower().split() if len(w) > 2}
        complexity = min(1.0, len(terms) / 12)
        wanted = int(settings.min_budget + (settings.budget - settings.min_budget) * complexity)
    return max(1, min(wanted, settings.max_budget))


def render_essentials(memories: list[Memory], project: str, count: Callable[[str], int] = count_tokens,
                      budget: int = 10**9) -> tuple[str, list[Memory], int, list[str]]:
    """The Essentials part: one bullet per memory, in the given order, within ``budget`` tokens. A memory that
    does not fit whole is shown by its first part when it is long (the bullet says which part, and the id
    fetches the rest), else left out; the memories after it still come (a long rules document ahead of the
    others no longer takes their place). Returns (text, memories shown, tokens, ids of those shown by their
    first part)."""
    title = f"## Essentials ({project}): rules to follow in this project"
    lines: list[str] = []
    shown: list[Memory] = []
    opened: list[str] = []
    tokens = count(title)
    for memory in memories:
        line = bullet(memory)
        if tokens + count(line) > budget:
            first = opening(memory)
            line = bullet(memory, first) if first is not None else ""
            if not line or tokens + count(line) > budget:
                continue
            opened.append(memory.id)
        lines.append(line)
        shown.append(memory)
        tokens += count(line)
    return ("\n".join([title, *lines]) + "\n", shown, tokens, opened) if lines else ("", [], 0, [])


def recall(
    repo: MemoryRepo,
    *,
    cwd: Path,
    query: str | None = None,
    budget: int | None = None,
    k: int | None = None,
    now: datetime | None = None,
    project: str = "",
    record_usage: bool = True,
    paths: Iterable[str] = (),
    embed_missing: bool = True,
) -> RecallResult:
    """The context block for a session working in ``cwd``: Essentials, then Relevant memories.

    ``query`` replaces the one built from the code project (branch, recent commits, and the file names in
    ``paths``: hot paths, open files); ``budget`` (tokens) and ``k`` (memories) default to the configuration's
    ``recall`` section. ``embed_missing=False`` (the session-start hook): embed only the query and leave the
    memories without a vector to the background warm-up (counted in :attr:`RecallResult.vectors_missing`)."""
    context = code_context(cwd, project or repo.config.project)
    files = " ".join(dict.fromkeys(Path(p).stem.replace("_", " ") for p in paths))
    text_query = query or " ".join(p for p in (context.query(), files) if p)
    limit = k if k is not None else repo.config.recall.top_k
    if limit <= 0:
        raise ValidationError(f"k={limit} is not positive", "ask for at least one memory, e.g. --k 5")
    tokens_allowed = effective_budget(repo, text_query, budget)
    derived = Path(repo.config.derived_dir)  # .cache, if this user can write it
    counter = TokenCounter(derived / "token-counts.json")
    chosen, more = find_essentials(repo.path, context.project, derived)
    first, rules, rule_tokens, opened = render_essentials(chosen, context.project, counter, tokens_allowed)
    index = open_index(repo, embed_missing=embed_missing)
    hits = relevant_hits(index, text_query, project=context.project, k=limit, now=now,
                         exclude={m.id for m in rules})
    title = f"## Relevant memories (for: {query})" if query else \
        "## Relevant memories (from the branch, recent commits and files)"
    room = min(RELEVANT_BUDGET, tokens_allowed - rule_tokens)
    second, used, tokens, left_out = build_block(hits, room, title, counter) if room > 0 else ("", [], 0, len(hits))
    counter.save()
    if record_usage and (used or rules):
        # a repository this user cannot write: the recall stands, uncounted (the counters only guide gc)
        with contextlib.suppress(OSError):
            bump_usage(repo.path, [m.id for m in rules] + [h.id for h in used], now)
    text = "\n".join(part for part in (first, second) if part)
    # the query names the last commit subjects, which may hold a secret: what the result shows and caches (the
    # hooks' footer, .cache/recall-cache.json, --json) is redacted; the search had the words as they are
    from gitmem.redact.engine import redact

    shown_query = redact(text_query, extra_patterns=repo.config.redaction.extra_patterns).text
    return RecallResult(text=text, hits=used, tokens=rule_tokens + tokens, budget=tokens_allowed, query=shown_query,
                        project=context.project, notice=index.notice or "",
                        left_out=left_out + len(chosen) - len(rules), context=context,
                        essentials=rules, more=max(0, more - len(used)), vectors_missing=index.vectors_missing,
                        opened=opened)
