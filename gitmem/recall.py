"""Recall: the context block a session gets, built from the code project, cut to a token budget.

The query is the project name, the current branch and the last three commit subjects of the code repository;
the best memories for it (the project's and the global ones) are grouped by category, each with its type tag,
and added in score order until the next one would break the budget. Every recall bumps local usage counters
(``local/usage.json``: last used, count) without making a commit, so ``gc`` can tell what is never used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from gitmem.codebase import CodeContext, code_context
from gitmem.documents import CATEGORIES, bullet
from gitmem.errors import ValidationError
from gitmem.index import Hit, open_index
from gitmem.observe import bump_usage
from gitmem.store import MemoryRepo
from gitmem.tokens import TokenCounter, count_tokens

HEADINGS = {
    "constraint": "Constraints",
    "correction": "Corrections",
    "decision": "Decisions",
    "preference": "Preferences",
    "background": "Background",
}
#: categories in the order a reader should see them: what must not be violated first
ORDER = ("constraint", "correction", "decision", "preference", "background")
assert set(ORDER) == set(CATEGORIES)


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
    context: CodeContext | None = field(default=None, repr=False)


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


def render(groups: dict[str, list[str]], title: str) -> str:
    parts = [title]
    for category in ORDER:
        lines = groups.get(category)
        if lines:
            parts.append(f"### {HEADINGS[category]}")
            parts.extend(lines)
    return "\n".join(parts) + "\n"


def build_block(hits: Iterable[Hit], budget: int, title: str,
                count: Callable[[str], int] = count_tokens) -> tuple[str, list[Hit], int, int]:
    """Add memories in score order while the rendered block stays within ``budget`` tokens.

    The block's lines are joined by newlines, and the tokenizer splits at whitespace, so the block's count is
    the sum of its lines' counts: each line is counted once (``count`` may answer from a cache).
    Returns (text, hits used, tokens, number left out)."""
    groups: dict[str, list[str]] = {}
    used: list[Hit] = []
    left_out = 0
    tokens = count(title)
    for hit in hits:
        line = bullet(hit.memory)
        category = hit.memory.category
        extra = count(line) + (0 if category in groups else count(f"### {HEADINGS[category]}"))
        if tokens + extra > budget:
            left_out += 1
            continue
        groups.setdefault(category, []).append(line)
        tokens += extra
        used.append(hit)
    if not used:
        return "", [], 0, left_out
    return render(groups, title), used, tokens, left_out


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
) -> RecallResult:
    """The context block for a session working in ``cwd``.

    ``query`` replaces the one built from the code project; ``budget`` (tokens) and ``k`` (memories) default to
    the configuration's ``recall`` section."""
    context = code_context(cwd, project or repo.config.project)
    text_query = query or context.query()
    limit = k if k is not None else repo.config.recall.top_k
    if limit <= 0:
        raise ValidationError(f"k={limit} is not positive", "ask for at least one memory, e.g. --k 5")
    tokens_allowed = effective_budget(repo, text_query, budget)
    index = open_index(repo)
    hits = index.search(text_query, k=limit, project=context.project, now=now) if text_query.strip() else []
    title = f"## Memories from gitmem ({context.project})"
    counter = TokenCounter(repo.path / ".cache" / "token-counts.json")
    text, used, tokens, left_out = build_block(hits, tokens_allowed, title, counter)
    counter.save()
    if record_usage and used:
        bump_usage(repo.path, [h.id for h in used], now)
    return RecallResult(text=text, hits=used, tokens=tokens, budget=tokens_allowed, query=text_query,
                        project=context.project, notice=index.notice or "", left_out=left_out, context=context)
