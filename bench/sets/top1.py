"""The small sets, where R@10 says little (every answer is in the top 10 of 14-48 memories): R@1, R@10, and for
long documents whether the snippet shows the answer.

    python bench/sets/top1.py [longdoc/en longdoc/zh order] [--modes bm25,hybrid] [--split dev|test] [--no-model]
                              [--set KEY=VALUE]

``longdoc/``: which of 48 encyclopedia articles (one memory each, 2-10k characters; XQuAD's, see ``convert.py
longdoc``) answers a question; ``conv`` 0 holds the development questions, ``conv`` 1 the test ones, each over the
same 48 articles. ``snippet`` is the share of questions answered by the top hit whose snippet holds at least half
of the answering sentence's words (or CJK characters); ``block``, the share whose answering sentence reaches the
agent when a prompt recalls the top 5 hits into a block of the prompt's token budget
(``RecallConfig.prompt_budget``): the right memory is in the block, and its line holds at least half of that
sentence's words; ``session`` (``longdoc/``), the share whose answering sentence has reached the agent by the time
it is asked when the questions on one article are the prompts of one session (in the set's order, each prompt's
block as the prompt hook makes it: the relevance gate, the previous prompts as context, the memories and the parts
of long ones the session was given left out), and ``whole``, the same when a long memory shown by one part counts
as given whole (no later prompt brings another part of it), each with the tokens a prompt's block adds on
average. ``order/``: questions about order ("first", "now", "before X") over two dated decision logs (dev: a shop,
test: a data pipeline; see its README). ``--chains`` imports each log with its supersede chains recorded, as
``gitmem remember --auto --supersede`` records them: the memories a turn ``supersedes`` are deprecated, superseded
by it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import locomo  # noqa: E402

from gitmem.agents.claude.handlers import PROMPT_CONTEXT  # noqa: E402
from gitmem.briefing.block import build_block, given  # noqa: E402
from gitmem.briefing.prompt import PROMPT_K, estimate_tokens, prompt_recall_in  # noqa: E402
from gitmem.config import RankingConfig, RecallConfig  # noqa: E402
from gitmem.search.index import Index  # noqa: E402
from gitmem.store.memory import bullet  # noqa: E402

SETS = Path(__file__).resolve().parent
_UNIT = re.compile(r"[\u4e00-\u9fff]|\w+")


def covered(snippet: str, sentence: str) -> bool:
    want = set(_UNIT.findall(sentence.lower()))  # no sentence (the order set): 0
    return bool(want) and len(want & set(_UNIT.findall(snippet.lower()))) >= len(want) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="*", default=["longdoc/en", "longdoc/zh", "order"])
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--modes", default="bm25,hybrid")
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--no-model", action="store_true")
    parser.add_argument("--chains", action="store_true", help="deprecate what a turn supersedes (the order set)")
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    embedder = locomo.load_model(args.no_model or modes == ["bm25"])
    if embedder is None:
        modes = ["bm25"]
    conv = 0 if args.split == "dev" else 1
    weights = RankingConfig(w_sim=1.0, w_imp=0.0, w_rec=0.0)
    print(f"model {getattr(embedder, 'model_id', 'none')}, split {args.split}")
    tuning = locomo.parse_set(args.set) if args.set else locomo.DEFAULT_TUNING
    for name in args.sets:
        turns, queries = locomo.load(SETS / name)
        work = Path(tempfile.mkdtemp(prefix="gitmem-longdoc-"))
        started = time.perf_counter()
        try:
            repo = locomo.build_repo(work, conv, turns[conv], weights, memories=chained(turns[conv]), origin="order") \
                if args.chains else locomo.build_repo(work, conv, turns[conv], weights)
            index = Index(repo, embedder=embedder, tuning=tuning)
            index.refresh()
            now = max(locomo.parse_date(t["date"]) for t in turns[conv]) + timedelta(days=1)
            for mode in modes:
                r1 = r10 = shown = reached = 0
                for q in queries[conv]:
                    hits = index.search(q["question"], k=10, mode=mode, now=now)
                    ranked = [h.id for h in hits]
                    gold = q["evidence"][0]
                    r1 += bool(ranked) and ranked[0] == gold
                    r10 += gold in ranked
                    shown += bool(ranked) and ranked[0] == gold and covered(hits[0].snippet, q.get("sentence", ""))
                    _text, used, _tokens, _left = build_block(hits[:PROMPT_K], RecallConfig().prompt_budget, "",
                                                              estimate_tokens)
                    reached += any(h.id == gold and covered(bullet(h.memory, h.passage), q.get("sentence", ""))
                                   for h in used)
                n = len(queries[conv])
                sessions = ""
                if name.startswith("longdoc"):
                    (by_parts, spent), (by_whole, spent_whole) = (
                        sessions_reached(index, queries[conv], mode, whole=w) for w in (False, True))
                    sessions = (f"  session {by_parts / n:.3f} ({spent / n:.0f} tokens a prompt)"
                                f"  whole {by_whole / n:.3f} ({spent_whole / n:.0f})")
                print(f"{name:10} {mode:7} n {n:4d}  R@1 {r1 / n:.3f}  R@10 {r10 / n:.3f}  snippet {shown / n:.3f}"
                      f"  block {reached / n:.3f}{sessions}"
                      f"   ({time.perf_counter() - started:.0f} s)", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def sessions_reached(index: Index, queries: list[dict[str, Any]], mode: str, *, whole: bool) -> tuple[int, int]:
    """How many questions' answering sentences have reached the agent by the time they are asked, the questions on
    one article being the prompts of one session (``session`` and ``whole`` in the module's docstring; each block is
    the prompt hook's, :func:`gitmem.briefing.prompt.prompt_recall_in`), and the tokens the blocks add in all."""
    by_article: dict[str, list[dict[str, Any]]] = {}
    for q in queries:
        by_article.setdefault(q["evidence"][0], []).append(q)
    reached = spent = 0
    for article, asked in by_article.items():
        seen: set[str] = set()
        seen_parts: set[tuple[str, int]] = set()
        previous: list[str] = []
        lines: list[str] = []  # what the session's context holds of the article
        for q in asked:
            text, used = prompt_recall_in(index, q["question"], project="", budget=RecallConfig().prompt_budget,
                                          mode=mode, seen=seen, previous=previous, seen_parts=seen_parts)
            spent += estimate_tokens(text)
            lines += [bullet(h.memory, h.passage) for h in used if h.id == article]
            ids, parts = given(used)
            seen.update(ids)
            if whole:
                seen.update(memory_id for memory_id, _n in parts)
            else:
                seen_parts.update(parts)
            previous = [*previous, q["question"]][-PROMPT_CONTEXT:]
            reached += any(covered(line, q.get("sentence", "")) for line in lines)
    return reached, spent


def chained(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``locomo.records`` with the turns' supersede chains: what a turn ``supersedes`` is deprecated, superseded by
    it (what ``gitmem remember --auto --supersede`` writes)."""
    replaced = {old: turn["id"] for turn in turns for old in turn.get("supersedes", ())}
    return [{**r, "deprecated": True, "superseded_by": replaced[r["id"]],
             "deprecated_reason": f"superseded by {replaced[r['id']]}"} if r["id"] in replaced else r
            for r in locomo.records(turns)]


if __name__ == "__main__":
    main()
