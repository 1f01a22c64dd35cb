"""A block of memories for an agent's context: bullets grouped by category under a title, cut to a token budget.
Shared by the session-start recall (:mod:`gitmem.recall`) and each prompt's recall
(:mod:`gitmem.briefing.prompt`), which must not load what the first needs (the code repository, the Essentials)."""

from __future__ import annotations

from gitmem.store.memory import CATEGORY_ORDER, bullet

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the prompt hook avoids importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from gitmem.search.hit import Hit

HEADINGS = {
    "constraint": "Constraints",
    "correction": "Corrections",
    "decision": "Decisions",
    "preference": "Preferences",
    "background": "Background",
}


def left_out_hint(project: str) -> str:
    """How to find the memories a session's block left out (the project's and the global ones): a search by the
    words of the task, or the lists. A search by the block's own query may find none of them: in a new code project
    that query is the project's name alone."""
    listed = f"gitmem list --project {project} (global ones: --project \"\")" if project else "gitmem list"
    return f'gitmem search "<words>" or {listed}'


def render(groups: dict[str, list[str]], title: str) -> str:
    parts = [title]
    for category in CATEGORY_ORDER:
        lines = groups.get(category)
        if lines:
            parts.append(f"### {HEADINGS[category]}")
            parts.extend(lines)
    return "\n".join(parts) + "\n"


def build_block(hits: Iterable[Hit], budget: int, title: str,
                count: Callable[[str], int] | None = None) -> tuple[str, list[Hit], int, int]:
    """Add memories in score order while the rendered block stays within ``budget`` tokens.

    The block's lines are joined by newlines, and the tokenizer splits at whitespace, so the block's count is
    the sum of its lines' counts: each line is counted once (``count`` may answer from a cache).
    ``count`` defaults to the tokenizer's count (:func:`gitmem.text.tokens.count_tokens`, loaded then).
    Returns (text, hits used, tokens, number left out)."""
    if count is None:
        from gitmem.text.tokens import count_tokens

        count = count_tokens
    groups: dict[str, list[str]] = {}
    used: list[Hit] = []
    left_out = 0
    tokens = count(title)
    texts: set[str] = set()
    for hit in hits:
        passage = hit.passage
        # the same text stored twice (two imports, two machines) says nothing the second time: given once, and
        # counted as given, so a later prompt does not bring the copy either
        same = " ".join(hit.memory.text.split()).casefold() if passage is None else ""
        if same and same in texts:
            used.append(hit)
            continue
        line = bullet(hit.memory, passage)  # a long memory: the part the search matched
        category = hit.memory.category
        extra = count(line) + (0 if category in groups else count(f"### {HEADINGS[category]}"))
        if tokens + extra > budget:
            left_out += 1
            continue
        groups.setdefault(category, []).append(line)
        tokens += extra
        used.append(hit)
        texts.add(same)
    if not groups:
        return "", [], 0, left_out
    return render(groups, title), used, tokens, left_out


def given(hits: Iterable[Hit]) -> tuple[list[str], list[tuple[str, int]]]:
    """What a context was given by ``hits``: the ids of the memories shown whole, and ``(id, n)`` of the long
    memories shown by their part ``n`` (:attr:`Hit.passage`), which a later prompt may show another part of."""
    whole: list[str] = []
    parts: list[tuple[str, int]] = []
    for hit in hits:
        passage = hit.passage
        if passage is None:
            whole.append(hit.id)
        else:
            parts.append((hit.id, passage[1]))
    return whole, parts
