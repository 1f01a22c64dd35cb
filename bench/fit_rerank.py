"""Fit the second stage's weights (:data:`gitmem.search.rerank.MODEL_WEIGHTS`) once, on the pooled development
data of several sets, and read them on questions they never saw.

    python bench/fit_rerank.py [--sets locomo,beam,xquad/en] [--work DIR] [--cache DIR] [--l2 1e-5[,1e-4...]]
                               [--balance question|set] [--hard 40] [--recapture] [--model auto --models-dir DIR]

The defaults give the packaged model's weights in :data:`gitmem.search.rerank.WEIGHTS`.

1. **Capture** (once; kept in ``--cache``): every development question of each set is searched in hybrid mode by
   the product (``Index.search``, as ``bench/locomo.py`` does), and for each the second stage's candidates are
   kept with their eight signals exactly as :func:`gitmem.search.rerank.signals` computed them, what the search
   added after the model (the order and standing bonuses: the final similarity less
   :func:`~gitmem.search.rerank.combine`), and which of them are evidence. ``--work`` keeps the repositories
   and their vector caches (the same layout as ``bench/sets/run.py --work``: ``DIR/<set>/conv<n>``).
2. **Fit**: one weight vector by pairwise logistic regression with an L2 penalty (numpy, Newton's method): every
   (evidence, other candidate) pair of a question is one example, ``w · (x_evidence - x_other)`` its margin. Each
   question weighs the same within its set; ``--balance set`` gives each set the same total weight (otherwise each
   question counts once, and XQuAD en's 632 and LoCoMo's 383 questions outweigh BEAM's 72). ``--hard N`` pairs
   the evidence only with the N other candidates ranked first (three rounds, each ranking by the last fit): the
   ones that compete for the top 10.
3. **Read** R@10 by replaying the capture (the candidates re-ranked by ``combine`` with the new weights plus the
   captured bonuses): on the data fitted, on LoCoMo conversations 3-4 (never fitted), and on each BEAM chat left
   out of its own fit in turn (leave-one-chat-out). Columns: ``captured`` what the search gave at capture,
   ``product`` the replay with the product's weights now (the same, unless they changed since), ``refit`` the new
   weights. The order bonus depends on the similarities it is added to, so with other weights
   the replay's captured bonus is an approximation for the few questions that ask about order (35 of LoCoMo's);
   the product's run of the adopted weights gave the replay's figures.

Fitted on: LoCoMo conversations 0-2 (categories 1-4), the four BEAM development chats and XQuAD en dev (``--sets``
may add ``dulemon`` or ``xquad/zh``; with the packaged English model a Chinese question's cosine signals are the
candidates' mean, so DuLeMon and XQuAD zh can only teach the BM25 and word signals).
"""

from __future__ import annotations

import argparse
import pickle
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo

from gitmem.config import RankingConfig
from gitmem.search import rerank
from gitmem.search import scoring as ranking
from gitmem.search.index import Index
from gitmem.search.scoring import DEFAULT_TUNING

#: the signals in a fixed order (the columns of a capture's matrix)
NAMES: tuple[str, ...] = tuple(rerank.WEIGHTS)
SETS = Path(__file__).resolve().parent / "sets"
#: conversations whose questions are fitted, per set (the others of its development part are held out)
FITTED: dict[str, set[int] | None] = {"locomo": {0, 1, 2}}


@dataclass
class Question:
    """One question's capture: its evidence, the product's top 10, and (when the second stage ran) every
    candidate with its signals and the bonus added after the model."""

    set: str
    conv: int
    kind: str
    evidence: list[str]
    top: list[str]
    ids: list[str] = field(default_factory=list)
    signals: Any = None
    """(candidates, len(NAMES)) float64, or None: the second stage did not run"""
    extra: Any = None
    """(candidates,) what the search added to the model's score (order, standing)"""
    question: str = ""
    model: str = ""
    """the question and the model id: the search adjusts the weights to the question's script"""


def _dev_queries(name: str) -> tuple[dict[int, list[dict[str, Any]]], dict[int, list[dict[str, Any]]]]:
    """A set's memories and development questions (LoCoMo: categories 1-4 of its five conversations)."""
    turns, queries = locomo.load(locomo.DATA if name == "locomo" else SETS / name)
    keep = {1, 2, 3, 4} if name == "locomo" else {1}
    kept = {c: [q for q in qs if int(q["category"]) in keep] for c, qs in queries.items()}
    kept = {c: qs for c, qs in kept.items() if qs}
    return {c: t for c, t in turns.items() if c in kept}, kept


def capture(name: str, work: Path, embedder: Any) -> list[Question]:
    """Search every development question of set ``name`` through the product, keeping the second stage's inputs."""
    import numpy as np

    from gitmem.search.build import ID, SHA, load_state
    from gitmem.search.schema import sha64

    model = rerank.weights_for(embedder.model_id)
    if model is None:
        raise SystemExit(f"no second-stage weights for {embedder.model_id}: nothing to refit against")
    turns, queries = _dev_queries(name)
    seen: list[tuple[list[Any], dict[Any, float], dict[str, list[float]], list[int]]] = []
    score = ranking.score

    def recording(keys: Any, fused: Any, columns: Any, *args: Any, **kwargs: Any) -> Any:
        signals = kwargs.get("signals")
        if signals:
            seen.append((list(keys), dict(fused), dict(signals), [int(v or 0) for v in columns["sha64"]]))
        return score(keys, fused, columns, *args, **kwargs)

    weights = RankingConfig(w_sim=1.0, w_imp=0.0, w_rec=0.0)
    out: list[Question] = []
    ranking.score = recording  # the search calls ``ranking.score``: every call passes through here
    try:
        for conv in sorted(turns):
            repo = locomo.build_repo(work, conv, turns[conv], weights)
            index = Index(repo, embedder=embedder, tuning=DEFAULT_TUNING)
            index.refresh()
            now = max(locomo.parse_date(t["date"]) for t in turns[conv]) + timedelta(days=1)
            loaded = load_state(index)
            id_of = {sha64(e[SHA]): e[ID] for e in (loaded[0] if loaded else {}).values()}
            for q in queries[conv]:
                seen.clear()
                hits = index.search(q["question"], k=10, mode="hybrid", now=now)
                row = Question(name, conv, str(q.get("kind", q["category"])), list(q["evidence"]),
                               [h.id for h in hits], question=q["question"], model=embedder.model_id)
                if seen:
                    keys, fused, signals, codes = seen[-1]
                    matrix = np.array([signals[n] for n in NAMES], dtype=np.float64).T
                    base = np.array(rerank.combine(signals, rerank.for_question(model, embedder.model_id,
                                                                                q["question"])))
                    row.ids = [id_of.get(c, "") for c in codes]
                    row.signals = matrix
                    row.extra = np.array([fused[k] for k in keys]) - base
                out.append(row)
            print(f"  {name} conv {conv}: {len(queries[conv])} questions", file=sys.stderr, flush=True)
    finally:
        ranking.score = score
    if out and all(q.signals is None for q in out):
        raise SystemExit("the second stage was never seen: does the search still call gitmem.search.scoring.score?")
    return out


def _order(q: Question, weights: dict[str, float]) -> Any:
    """The candidates' positions, best first, as the search ranks them with ``weights`` (plus the captured bonuses)."""
    import numpy as np

    assert q.signals is not None
    values = {name: q.signals[:, j] for j, name in enumerate(NAMES)}
    asked = rerank.for_question(weights, q.model, q.question)  # as the search weighs this question
    return np.argsort(-(np.array(rerank.combine(values, asked)) + q.extra), kind="stable")


def replay(q: Question, weights: dict[str, float], k: int = 10) -> list[str]:
    """The question's top ``k`` with ``weights`` (the product's top when its second stage did not run)."""
    if q.signals is None:
        return q.top[:k]
    return [q.ids[i] for i in _order(q, weights)[:k].tolist()]


def recall(q: Question, ranked: list[str]) -> float:
    gold = set(q.evidence)
    return len(gold & set(ranked[:10])) / len(gold)


def pairs(questions: list[Question], balance: str, hard: int = 0,
          ranked_by: dict[str, float] | None = None) -> tuple[Any, Any]:
    """(differences, weights) of every (evidence, other) candidate pair of the fitted questions; with ``hard``,
    only the ``hard`` other candidates that ``ranked_by`` puts first (the ones that compete for the top 10)."""
    import numpy as np

    diffs, weights = [], []
    fitted: list[tuple[Question, Any]] = []
    for q in questions:
        if q.signals is None:
            continue
        gold = np.array([i in q.evidence for i in q.ids])
        if gold.any() and not gold.all():  # else no evidence among the candidates, or no other: nothing to order
            fitted.append((q, gold))
    per_set = defaultdict(int)
    for q, _gold in fitted:
        per_set[q.set] += 1
    for q, gold in fitted:
        assert q.signals is not None
        pos, neg = q.signals[gold], q.signals[~gold]
        if hard and ranked_by is not None:
            neg = q.signals[[i for i in _order(q, ranked_by).tolist() if not gold[i]][:hard]]
        d = (pos[:, None, :] - neg[None, :, :]).reshape(-1, len(NAMES))
        share = 1.0 / len(d) / (per_set[q.set] if balance == "set" else 1.0)
        diffs.append(d)
        weights.append(np.full(len(d), share))
    return np.concatenate(diffs), np.concatenate(weights)


def fit(diffs: Any, weights: Any, l2: float, iterations: int = 50) -> dict[str, float]:
    """The weight vector minimising ``sum(weights · log(1 + exp(-diffs @ w))) / sum(weights) + l2/2 · |w|²``
    (Newton's method: eight unknowns), scaled so that ``bm25`` weighs 1 like the product's, rounded to two
    significant digits. The model's score is min-max scaled per question, so the scale changes no ranking."""
    import numpy as np

    c = weights / weights.sum()
    w = np.zeros(diffs.shape[1])
    for _ in range(iterations):
        margin = diffs @ w
        p = 1.0 / (1.0 + np.exp(np.clip(margin, -50, 50)))  # the probability the pair is ordered wrongly
        grad = -(diffs * (c * p)[:, None]).sum(axis=0) + l2 * w
        hess = (diffs * (c * p * (1 - p))[:, None]).T @ diffs + l2 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    scale = w[NAMES.index("bm25")] if w[NAMES.index("bm25")] > 0 else np.abs(w).max()
    return {name: float(f"{value / scale:.2g}") for name, value in zip(NAMES, w.tolist(), strict=True)}


def refit(questions: list[Question], balance: str, l2: float, hard: int) -> dict[str, float]:
    """:func:`fit` on every pair of ``questions``; with ``hard``, three more rounds, each pairing the evidence with
    the ``hard`` others the last fit ranks first (so the result does not depend on the weights of the capture)."""
    weights = fit(*pairs(questions, balance), l2)
    for _ in range(3 if hard else 0):
        weights = fit(*pairs(questions, balance, hard, weights), l2)
    return weights


def _fitted(q: Question) -> bool:
    convs = FITTED.get(q.set)
    return convs is None or q.conv in convs


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def report(questions: list[Question], l2: float, balance: str, product: dict[str, float],
           hard: int = 0) -> dict[str, float]:
    """Fit on the pooled data, print R@10 per set (fitted / held out), and return the fitted weights."""
    train = [q for q in questions if _fitted(q)]
    weights = refit(train, balance, l2, hard)
    sets = sorted({q.set for q in questions})
    print(f"fitted on {', '.join(f'{s} {sum(q.set == s for q in train)}' for s in sets)} questions "
          f"(l2 {l2}, balance {balance}, {f'the {hard} hardest others' if hard else 'every other candidate'})")
    print("weights: " + ", ".join(f"{n} {v:g}" for n, v in weights.items()))
    print(f"{'set, part':28} {'n':>4} {'captured':>8} {'product':>8} {'refit':>7}")
    for s in sets:
        for part, chosen in (("fitted", True), ("held out", False)):
            group = [q for q in questions if q.set == s and _fitted(q) == chosen]
            if not group:
                continue
            now = mean([recall(q, q.top) for q in group])
            again = mean([recall(q, replay(q, product)) for q in group])
            new = mean([recall(q, replay(q, weights)) for q in group])
            print(f"{s + ', ' + part:28} {len(group):4d} {now:8.3f} {again:8.3f} {new:7.3f}")
        group = [q for q in questions if q.set == s]
        if any(not _fitted(q) for q in group):
            print(f"{s + ', all':28} {len(group):4d} {mean([recall(q, q.top) for q in group]):8.3f} "
                  f"{mean([recall(q, replay(q, product)) for q in group]):8.3f} "
                  f"{mean([recall(q, replay(q, weights)) for q in group]):7.3f}")
    # a set fitted whole is also read one conversation (a BEAM chat) at a time, left out of its own fit
    for s in sets:
        if FITTED.get(s) is not None:
            continue
        convs = sorted({q.conv for q in questions if q.set == s})
        if len(convs) < 2:
            continue
        held: list[float] = []
        base: list[float] = []
        by_kind: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for c in convs:
            rest = [q for q in train if not (q.set == s and q.conv == c)]
            w = refit(rest, balance, l2, hard)
            for q in questions:
                if q.set == s and q.conv == c:
                    held.append(recall(q, replay(q, w)))
                    base.append(recall(q, replay(q, product)))
                    by_kind[q.kind].append((base[-1], held[-1]))
        print(f"{s + ', leave one conv out':28} {len(held):4d} {'':8} {mean(base):8.3f} {mean(held):7.3f}")
        for kind, values in sorted(by_kind.items()):
            print(f"  {kind[:26]:26} {len(values):4d} {'':8} {mean([a for a, _ in values]):8.3f} "
                  f"{mean([b for _, b in values]):7.3f}")
    return weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="locomo,beam,xquad/en",
                        help="comma-separated: locomo, beam, xquad/en, dulemon…")
    parser.add_argument("--work", type=Path, default=None, help="keep the repositories and vectors here")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "gitmem-fit-rerank")
    parser.add_argument("--recapture", action="store_true",
                        help="search again even when a capture is cached (after any change to the search)")
    parser.add_argument("--l2", default="1e-5", help="the L2 penalty (several, comma-separated: one report each)")
    parser.add_argument("--balance", choices=("question", "set"), default="question")
    parser.add_argument("--hard", type=int, default=40, metavar="N",
                        help="pair the evidence only with the N others ranked first (three rounds)")
    parser.add_argument("--model", default="auto")
    parser.add_argument("--models-dir", type=Path, default=None)
    args = parser.parse_args()
    embedder = locomo.load_model(False, args.model, args.models_dir)
    if embedder is None:
        raise SystemExit("no embedding model: the second stage needs one")
    product = rerank.weights_for(embedder.model_id)
    assert product is not None
    work = args.work or Path(tempfile.mkdtemp(prefix="gitmem-fit-"))
    args.cache.mkdir(parents=True, exist_ok=True)
    questions: list[Question] = []
    for name in [s for s in args.sets.split(",") if s]:
        cached = args.cache / f"{name.replace('/', '-')}.{embedder.model_id}.pickle"
        if cached.exists() and not args.recapture:
            questions += [Question(**fields) for fields in pickle.loads(cached.read_bytes())]
            continue
        got = capture(name, work / name.replace("/", "-"), embedder)
        cached.write_bytes(pickle.dumps([vars(q) for q in got]))  # plain fields: loadable from any module
        questions += got
    for l2 in args.l2.split(","):
        report(questions, float(l2), args.balance, product, args.hard)


if __name__ == "__main__":
    main()
