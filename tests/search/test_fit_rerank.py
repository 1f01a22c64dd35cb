"""bench/fit_rerank.py: the pairwise fit recovers a known ordering, and its replay ranks as the product's combine."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

BENCH = Path(__file__).resolve().parents[2] / "bench" / "fit_rerank.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fit_rerank", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fit_rerank"] = module  # dataclasses look their module up while building the class
    spec.loader.exec_module(module)
    return module


def _questions(tool: ModuleType, truth: np.ndarray, n: int, seed: int) -> list[object]:
    """Questions of 30 candidates with random signals in [0, 1]; the evidence is the candidate ``truth`` ranks
    first (ties aside), as if the right answer were what those weights say."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        signals = rng.random((30, len(tool.NAMES)))
        best = int(np.argmax(signals @ truth + rng.normal(0, 0.05, 30)))
        ids = [f"m{j}" for j in range(30)]
        out.append(tool.Question(set="synthetic", conv=i % 3, kind="k", evidence=[ids[best]], top=ids[:10],
                                 ids=ids, signals=signals, extra=np.zeros(30)))
    return out


def test_the_fit_recovers_which_signals_matter_and_ranks_unseen_questions() -> None:
    tool = _tool()
    truth = np.zeros(len(tool.NAMES))
    truth[tool.NAMES.index("bm25")], truth[tool.NAMES.index("sentence")] = 1.0, 3.0
    weights = tool.fit(*tool.pairs(_questions(tool, truth, 120, seed=1), "question"), l2=1e-3)
    assert weights["bm25"] == 1.0  # scaled to the product's convention
    assert 2.0 < weights["sentence"] < 4.5  # three times BM25, as the evidence was drawn
    assert all(abs(weights[n]) < 0.6 for n in tool.NAMES if n not in ("bm25", "sentence"))  # signals of chance
    unseen = _questions(tool, truth, 60, seed=2)
    found = np.mean([tool.recall(q, tool.replay(q, weights, k=1)) for q in unseen])
    chance = np.mean([tool.recall(q, tool.replay(q, {n: 1.0 for n in tool.NAMES}, k=1)) for q in unseen])
    assert found > 0.8 > chance  # the fitted weights put the evidence first; equal weights mostly do not


def test_a_bonus_added_after_the_model_stays_in_the_replay() -> None:
    """The order and standing bonuses come after the model's min-max scaling: the replay adds them back."""
    tool = _tool()
    ids = ["a", "b", "c"]
    signals = np.zeros((3, len(tool.NAMES)))
    signals[:, tool.NAMES.index("bm25")] = [1.0, 0.5, 0.0]
    q = tool.Question(set="s", conv=0, kind="k", evidence=["c"], top=ids, ids=ids, signals=signals,
                      extra=np.array([0.0, 0.0, 0.0]))
    assert tool.replay(q, {n: 1.0 for n in tool.NAMES}) == ["a", "b", "c"]
    q.extra = np.array([0.0, 0.0, 1.5])  # c's bonus lifts it above the model's best (1.0)
    assert tool.replay(q, {n: 1.0 for n in tool.NAMES}) == ["c", "a", "b"]
    assert tool.recall(q, tool.replay(q, {n: 1.0 for n in tool.NAMES}, k=1)) == 1.0


def test_hard_pairs_set_the_evidence_against_the_candidates_ranked_first() -> None:
    """``--hard N`` pairs the evidence with the N other candidates the ranking puts first, not any N."""
    tool = _tool()
    ids = ["a", "b", "c", "d", "e"]
    signals = np.zeros((5, len(tool.NAMES)))
    signals[:, tool.NAMES.index("bm25")] = [1.0, 0.8, 0.6, 0.4, 0.2]
    q = tool.Question(set="s", conv=0, kind="k", evidence=["c"], top=ids, ids=ids, signals=signals,
                      extra=np.zeros(5))
    by_bm25 = {n: (1.0 if n == "bm25" else 0.0) for n in tool.NAMES}
    diffs, _weights = tool.pairs([q], "question", hard=2, ranked_by=by_bm25)
    assert np.array_equal(diffs, signals[2] - signals[[0, 1]])  # c against a and b, the two ranked above it
