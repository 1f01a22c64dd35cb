"""The second stage of hybrid search: its signals, its scaling, and what it finds with the packaged model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitmem.config import Config, EmbeddingConfig
from gitmem.search.index import Index
from gitmem.search.neighbourhood import Neighbourhood
from gitmem.search.rerank import best_part, combine, sentences, weights_for
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from tests.helpers import CountingEmbedder, run_cli


def test_sentences_worth_their_own_vector() -> None:
    assert sentences("Use pytest -x for the shop.") == []  # one sentence: its memory vector covers it
    assert sentences("Melanie: Thanks! We went camping with the kids last week. They loved the lake a lot.") == [
        "Melanie: We went camping with the kids last week.", "Melanie: They loved the lake a lot."]
    assert sentences("我们决定使用 PostgreSQL 数据库。因为 JSON 查询更快而且更稳定。") == [
        "我们决定使用 PostgreSQL 数据库。", "因为 JSON 查询更快而且更稳定。"]


def test_combine_scales_every_candidate_into_a_positive_range() -> None:
    values = {name: [0.0, 0.5, 1.0] for name in ("bm25", "cosine", "context_cosine", "neighbour", "time",
                                                    "coverage", "context_coverage", "sentence")}
    scores = combine(values)
    assert scores[0] == pytest.approx(0.01) and scores[2] == pytest.approx(1.0) and scores[0] < scores[1] < scores[2]
    assert combine({name: [0.3] for name in values}) == [1.0]


def test_the_best_of_many_chunks_is_discounted_by_what_chance_gives() -> None:
    """A long reply on the question's topic in all eight chunks no longer outranks the short message whose
    sentence answers it (before: 0.50 against 0.49); a passage that stands out from its page keeps its cosine."""
    import numpy as np

    reply = [0.50, 0.47, 0.49, 0.46, 0.48, 0.45, 0.49, 0.47]  # chunks, each touching the topic
    message = [0.49, 0.30]  # a short memory's sentences: its best as it is
    page = [0.62, 0.10, 0.11, 0.09, 0.10]  # chunks, one of them about the question
    single = [0.40]
    cosines = np.array(reply + message + page + single, dtype=np.float32)
    starts = np.array([0, 8, 10, 15])
    best = best_part(cosines, starts, np.array([True, False, True, True])).tolist()
    assert best[1] == pytest.approx(0.49) and best[3] == pytest.approx(0.40)
    assert best[0] < best[1] < max(reply)
    assert best[2] == pytest.approx(0.62, abs=0.02)
    assert best_part(cosines, starts, np.zeros(4, dtype=bool)).tolist() == pytest.approx([0.50, 0.49, 0.62, 0.40])


def test_neighbours_are_the_same_sources_nearest_positions() -> None:
    hood = Neighbourhood([(1, 7, 0, "a"), (2, 7, 1, "b x"), (3, 7, 2, "c"), (4, 7, 3, "d x"),
                          (5, 0, 0, "e"), (6, 9, 1, "")], window=2)

    def at(sha: int) -> int:
        return int(hood.positions([sha])[0])

    def around(sha: int) -> set[int]:
        return {hood.shas[j] for j in hood.near[at(sha)].tolist() if j >= 0}

    assert around(1) == {2, 3} and around(3) == {1, 2, 4}
    assert around(5) == set() and around(6) == set()  # no source, or alone in its source: no neighbours
    assert hood.having("x").tolist() == [at(2), at(4)] and hood.having("d").tolist() == [at(4)]
    assert hood.positions([99, 2**64 - 1, 0]).tolist() == [6, 6, 6]  # not in the state: one past the end
    assert hood.having("c").tolist() == [at(3)] and hood.having("zz").tolist() == [] == hood.having("b x").tolist()
    rows = hood.vector_rows({1: 10, 2: 11, 4: 13})  # memory 3 has no vector
    assert rows[at(3)].tolist()[0] == -1 and sorted(rows[at(2)].tolist()) == [-1, -1, 10, 11, 13]


def test_a_source_that_is_no_conversation_lends_its_memories_no_words() -> None:
    """One person's facts in a row ("I have a dog", "I work in IT") are no nearer each other than any two
    memories are: their neighbours' words and first stage stop counting for them, while a conversation's turns,
    each near the next, keep theirs."""
    import numpy as np

    rng = np.random.default_rng(7)
    topic = rng.normal(size=16)
    talk = [topic + 0.4 * rng.normal(size=16) for _ in range(6)]  # each turn near the conversation's topic
    facts = [rng.normal(size=16) for _ in range(6)]  # unrelated to one another
    loose = [rng.normal(size=16) for _ in range(8)]  # memories without a source
    matrix = np.array(talk + facts + loose, dtype=np.float32)
    entries = [(100 + i, 1, i, "") for i in range(6)] + [(200 + i, 2, i, "") for i in range(6)] \
        + [(300 + i, 0, 0, "") for i in range(8)]
    row_of = {sha: row for row, (sha, _g, _s, _w) in enumerate(entries)}
    hood = Neighbourhood(entries, window=2)
    talk_at, facts_at, loose_at = (hood.positions([base + i for i in range(count)])
                                   for base, count in ((100, 6), (200, 6), (300, 8)))
    assert not hood.apart(talk_at, matrix, row_of).any() and not hood.apart(loose_at, matrix, row_of).any()
    assert hood.apart(facts_at, matrix, row_of).all()
    assert hood.apart(np.concatenate([facts_at[:1], talk_at[:1]]), matrix, row_of).tolist() == [True, False]
    # a fact in a script the model does not read (a zero vector), or a broken vector, is left out of the measure:
    # the other facts still tell the source apart, and the repository's average still holds
    for bad in (0.0, float("nan")):
        damaged = matrix.copy()
        damaged[8] = bad
        damaged[15] = bad  # a memory without a source
        assert Neighbourhood(entries, window=2).apart(facts_at, damaged, row_of).all()
    # every fact unreadable: nothing to measure, so the source keeps its neighbours
    blind = matrix.copy()
    blind[6:12] = 0.0
    assert not Neighbourhood(entries, window=2).apart(facts_at, blind, row_of).any()
    # other vectors for the same index state (a new model, a reload) are measured again, not read from before
    same_order = {sha: row for sha, row in row_of.items()}
    shuffled = matrix.copy()
    shuffled[6:12] = matrix[0:6]  # the facts now read as the conversation does
    assert not hood.apart(facts_at, shuffled, same_order).any()
    assert hood.apart(facts_at, matrix, row_of).all()


def test_a_list_of_facts_ranks_by_its_own_words(tmp_path: Path, model: Any) -> None:
    """Imported as one session, one person's facts would lend each other their words: "the kids" of the
    question reaches every fact beside "I have two kids" through its neighbours. Not a conversation: each fact
    keeps its own words (``--explain``'s ``model.context_coverage`` equals its ``model.coverage``), while a real
    conversation's turns keep their neighbours'."""
    repo = _repo(tmp_path)
    facts = ["I have two kids and a dog", "I work in the IT department", "I love watching old movies",
             "My favourite food is spicy hotpot", "I ran a marathon last spring", "I collect vintage stamps",
             "I grew up in a small coastal town", "I play the violin in an amateur orchestra"]
    talk = ["We should pick a database for the billing service", "Postgres fits the billing service best",
            "Then the billing service gets Postgres with nightly backups", "Backups of the billing database run "
            "at 2am", "The billing database backups are kept for 30 days", "Restores of the billing backups are "
            "tested monthly"]
    repo.import_records([{"text": t, "id": f"fact{i}", "source": "profile"} for i, t in enumerate(facts)]
                        + [{"text": t, "id": f"talk{i}", "source": "billing"} for i, t in enumerate(talk)])
    hits = {h.id: dict(h.parts.items()) for h in Index(repo).search("do the kids like the dog?", k=20)}
    for memory_id in ("fact1", "fact2"):  # the neighbours of "I have two kids and a dog"
        assert hits[memory_id]["model.context_coverage"] == hits[memory_id]["model.coverage"] == 0.0
        # the context cosine still reads every neighbour's vector
        assert hits[memory_id]["model.context_cosine"] != pytest.approx(hits[memory_id]["model.cosine"], abs=1e-4)
    turns = {h.id: dict(h.parts.items()) for h in Index(repo).search("when do billing backups run?", k=20)}
    assert turns["talk1"]["model.context_coverage"] > turns["talk1"]["model.coverage"]


@given(st.lists(st.tuples(st.sampled_from([0, 3, 8]), st.integers(0, 9),
                          st.lists(st.sampled_from(["a", "b", "数", "据"]), unique=True)), max_size=25),
       st.integers(1, 3), st.booleans())
def test_neighbourhood_matches_a_plain_lookup(rows: list[tuple[int, int, list[str]]], window: int,
                                              renumber: bool) -> None:
    if renumber:  # as the index numbers them: each source's memories 0, 1, 2 … (the vectorised path)
        last: dict[int, int] = {}
        renumbered = []
        for g, s, words in rows:
            if g:
                last[g] = last.get(g, -1) + 1
            renumbered.append((g, last[g] if g else s, words))
        rows = renumbered
    slots: dict[tuple[int, int], int] = {}
    entries = []
    for g, s, words in rows:
        if (g, s) in slots and g:
            continue  # one memory per position in a source, as the index numbers them
        slots[(g, s)] = len(entries)
        entries.append((len(entries) + 100, g, s, " ".join(words)))
    hood = Neighbourhood(entries, window)
    offsets = [d for d in range(-window, window + 1) if d]
    for i, (_sha, g, s, _words) in enumerate(entries):
        expected = [slots.get((g, s + d), -1) if g else -1 for d in offsets]
        assert hood.near[i].tolist() == expected
    for word in ("a", "b", "数", "据", "c"):
        assert hood.having(word).tolist() == [i for i, e in enumerate(entries) if word in e[3].split()]


def _repo(tmp_path: Path) -> MemoryRepo:
    init_repo(tmp_path / "mem")
    return MemoryRepo(Config(repo=tmp_path / "mem"))


def test_a_sentence_buried_in_a_long_memory_is_found(tmp_path: Path, model: Any) -> None:
    """The long memory's own vector is a blur of six topics; its sentence vector is not (the fused first
    stage alone ranks the restore-scripts memory above it)."""
    repo = _repo(tmp_path)
    long_one = ("Ops notes: the dashboards moved to the new Grafana folder. Alerts page the secondary engineer on "
                "weekends. The staging cluster is rebuilt from scratch monthly. Laptops get OS updates on the first "
                "Tuesday. We snapshot the billing data and practice bringing it back every Sunday. The office wifi "
                "password rotates quarterly.")
    others = ["The billing service is written in Go", "Database migrations run in CI before deploys",
              "We verify invoices against the ledger nightly", "Sunday is the quiet day for on-call",
              "Backups are encrypted with the team's KMS key", "Restore scripts live in ops/restore",
              "Billing exports go to the finance bucket", "How often is the test suite run? On every push"]
    repo.import_records([{"text": long_one, "id": "ops"}] + [{"text": t, "id": f"f{i}"} for i, t in enumerate(others)])
    counting = CountingEmbedder(model)
    hits = Index(repo, embedder=counting).search("when do we practice restoring billing snapshots", k=3)
    assert hits[0].id == "ops"
    assert counting.documents == 9 + 6 + 2  # nine memories, the long one's six sentences, the last one's two
    names = dict(hits[0].parts.items())
    assert {"model.sentence", "model.context_coverage", "model.bm25"} <= set(names)
    assert names["model.sentence"] > names["model.cosine"]
    again = CountingEmbedder(model)  # another process: sentence vectors are cached too
    assert Index(repo, embedder=again).search("restoring billing snapshots", k=1)[0].id == "ops"
    assert again.documents == 0


def test_explain_shows_the_models_inputs(tmp_path: Path, model: Any) -> None:
    repo = _repo(tmp_path)
    repo.remember("Backups are restored and verified every Sunday")
    result = run_cli("--repo", str(repo.path), "search", "when are backups verified", "--explain")
    assert result.code == 0 and "model.coverage" in result.out


def test_bm25_only_search_keeps_the_first_stage(tmp_path: Path) -> None:
    init_repo(tmp_path / "mem")
    repo = MemoryRepo(Config(repo=tmp_path / "mem", embedding=EmbeddingConfig(model="none")))
    repo.remember("Backups are restored and verified every Sunday")
    (hit,) = Index(repo, embedder=None).search("backups verified")
    assert not hit.parts.signals and hit.parts.vector is None


def test_a_model_without_fitted_weights_keeps_the_first_stage(tmp_path: Path) -> None:
    """Weights fitted on one model's cosines do not fit another's: such a model gets the fused first stage."""
    from tests.helpers import FakeEmbedder

    assert weights_for("minilm-l6-int8") is not None and weights_for("multilingual-e5-small-q4") is not None
    assert weights_for("fake-letters") is None
    repo = _repo(tmp_path)
    repo.remember("Backups are restored and verified every Sunday")
    (hit,) = Index(repo, embedder=FakeEmbedder()).search("backups verified", k=1)
    assert hit.parts.vector is not None and not hit.parts.signals


def test_a_cjk_question_weighs_bm25_less_with_a_model_that_reads_it(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    e5 = weights_for("multilingual-e5-small-q4")
    assert e5 is not None
    in_chinese = weights_for("multilingual-e5-small-q4", "我们最后用的是哪个数据库？")
    assert in_chinese == {**e5, "bm25": e5["bm25"] / 2}
    for japanese_or_korean in ("データベースはどれ？", "어떤 데이터베이스를 썼지?"):
        assert weights_for("multilingual-e5-small-q4", japanese_or_korean) == in_chinese
    assert weights_for("multilingual-e5-small-q4", "which database did we pick?") == e5
    # MiniLM never reads these scripts (BM25 alone ranks such a question): nothing to adjust
    assert weights_for("minilm-l6-int8-a8r2", "我们用哪个数据库") == weights_for("minilm-l6-int8-a8r2")

    # and the search weighs each question so: the weights that reach the second stage
    from gitmem.search import rerank
    from tests.helpers import FakeEmbedder

    class Multilingual(FakeEmbedder):
        model_id = "multilingual-e5-small-fake"

    used: list[float] = []

    def combine(values: Any, weights: Any = rerank.WEIGHTS) -> list[float]:
        used.append(weights["bm25"])
        return rerank_combine(values, weights)

    rerank_combine = rerank.combine
    monkeypatch.setattr(rerank, "combine", combine)
    repo = _repo(tmp_path)
    repo.remember("Backups are restored and verified every Sunday; 备份每周日恢复并校验")
    index = Index(repo, embedder=Multilingual())
    index.search("backups verified", k=1)
    index.search("备份 校验", k=1)
    assert used == [e5["bm25"], e5["bm25"] / 2]
