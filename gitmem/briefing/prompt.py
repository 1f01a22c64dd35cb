"""Per-prompt recall: the memories a prompt brings in (``UserPromptSubmit``).

The prompt, with the previous prompt of the session as context, is searched over the project's and the global
memories; the hits that pass the relevance gate (:mod:`gitmem.briefing.gate`) and were not injected earlier in
the session are added, best first, within a small budget (``[recall] prompt_budget``, 600 tokens by default).
When nothing passes, nothing is injected. BM25 runs in the hook's process; the embedding model joins only with
``[recall] prompt_vectors = true`` (loading it costs far more than the search).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from gitmem.briefing.block import build_block
from gitmem.briefing.gate import relevant_hits
from gitmem.text import scripts

if TYPE_CHECKING:
    from gitmem.search.index import Hit
    from gitmem.store.memories import MemoryRepo

#: memories a prompt adds at most
PROMPT_K = 5
#: characters of the previous prompt added to the query as context
CONTEXT_CHARS = 300


def estimate_tokens(text: str) -> int:
    """A token count that errs high (about 3.6 characters a token in Latin text, one per CJK character and a
    fifth more): the hook never loads the tokenizer for it."""
    cjk = scripts.count_cjk(text)
    return int((len(text) - cjk) / 3.6 + cjk * 1.2) + 1


def prompt_query(prompt: str, previous: Iterable[str] = ()) -> str:
    """The search text: the prompt, then the end of the previous prompt of the session."""
    context = " ".join(p for p in previous if p)[-CONTEXT_CHARS:]
    return f"{prompt.strip()[:2000]} {context}".strip()


def prompt_recall(repo: MemoryRepo, prompt: str, *, project: str, seen: Iterable[str] = (),
                  previous: Iterable[str] = ()) -> tuple[str, list[Hit]]:
    """(the block to inject, its hits) for ``prompt``; ("", []) when no memory passes the gate."""
    from gitmem.search.index import open_index

    settings = repo.config.recall
    vectors = settings.prompt_vectors
    index = open_index(repo, embedder="auto" if vectors else None, embed_missing=False)  # the warm-up embeds them
    hits = relevant_hits(index, prompt_query(prompt, previous), project=project, k=PROMPT_K,
                         exclude=set(seen), mode="hybrid" if vectors else "bm25")
    if not hits:
        return "", []
    text, used, _tokens, _left = build_block(hits, settings.prompt_budget,
                                             "## Memories related to this prompt (gitmem)", estimate_tokens)
    return text, used
