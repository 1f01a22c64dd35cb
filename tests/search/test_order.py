"""Questions about order ("first", "now", "before X") ranked by the memories' dates among those on the subject."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.search import schema as idoc
from gitmem.search.index import Index
from gitmem.search.order import Order, parse_order
from gitmem.search.scoring import DEFAULT_TUNING
from gitmem.store.memories import MemoryRepo
from gitmem.store.memory import Memory
from tests.helpers import FakeEmbedder

LOG = [
    ("2024-01-10", "db1", "We picked MySQL for the shop database because the team knows it"),
    ("2024-02-15", "db2", "Switched the shop database from MySQL to PostgreSQL for JSONB product attributes"),
    ("2024-03-01", "fe1", "The frontend is written in Vue 2 with Vuex for state"),
    ("2024-04-20", "fe2", "The frontend was migrated from Vue 2 to Vue 3 with Pinia replacing Vuex"),
    ("2024-07-01", "fe3", "The frontend moved from Vue 3 to Nuxt for server-side rendering"),
    ("2024-08-05", "db3", "The shop database gets nightly backups to S3 with pgBackRest"),
]


def test_parse_order() -> None:
    assert parse_order("Which database did we choose first?") == Order(kind="first")
    assert parse_order("What is the latest deployment setup?") == Order(kind="last")
    assert parse_order("What do we use now for emails?") == Order(kind="last")
    assert parse_order("What did we use before Nuxt?") == Order(kind="before", anchor="nuxt")
    assert parse_order("上线之后改了什么") == Order(kind="after", anchor="上线")
    assert parse_order("数据库最早用的是什么？") == Order(kind="first")
    # periods are the time parser's, not an order: last week, before May 2023, two weeks after 8 May
    for question in ("What did we decide last week?", "What changed before May 2023?",
                     "What happened after 8 May?", "What changed after 2023-05?", "What did we ship before the 3rd?",
                     "What broke after 10am?", "What ran before 9:30?", "What changed after the 1990s?",
                     "5号之后改了什么", "下午3点之后谁部署了", "What did we cut after Q3?",
                     "How long did it take after I had saved $1,200 by June?", "What fails after 3 retries?",
                     "Why did we drop MySQL?"):
        assert parse_order(question) is None, question
    # a number alone is a version, not a date
    assert parse_order("What did we use for the frontend after Vue 2?") == Order(kind="after", anchor="vue 2")
    assert parse_order("What did we run before Python 3.11?") == Order(kind="before", anchor="python 3.11")
    # "first," opening a sentence orders the work or the questions, not the memories; 首先 is "first of all" too
    for question in ("First, what frontend framework do we use?", "First, fix the db config", "Firstly: the tests.",
                     "Run the tests. First, fix the db config!", "First of all, which queue do we use?",
                     "首先，修复数据库配置"):
        assert parse_order(question) is None, question
    # a before/after clause opening an instruction is its condition, not a question about order
    for prompt in ("Before you commit, run the tests", "After you push, open a PR and ask for a review first",
                   "before deploying, check the latest migration", "提交之前，先跑测试"):
        assert parse_order(prompt) is None, prompt
    for question in ("Before we moved to Postgres, what did we use?", "Before we moved to Postgres, what did we use",
                     "before we moved to postgres, which database did we use"):
        assert parse_order(question) == Order(kind="before", anchor="we moved to postgres"), question
    assert parse_order("迁移到Postgres之前，我们用的什么数据库") == Order(kind="before", anchor="迁移到Postgres")
    assert parse_order("Before you commit，run the tests") is None  # a full-width comma ends the clause too
    # an instruction may open with a word that can also ask: only a question about the past makes it one
    for prompt in ("Before you deploy, do a dry run", "After the build passes, do a release",
                   "Before merging, have someone review it", "Before you answer, tell me which DB we use",
                   "Before merging, what do I need to check", "Run the tests before you commit",
                   "Can you run the tests before you commit?", "上线之前，几乎所有测试都要跑",
                   "提交之前，先跑测试，然后告诉我有几个失败"):
        assert parse_order(prompt) is None, prompt
    for question in ("Before we moved to Postgres, what's the DB we used", "After the outage, what did we change"):
        assert parse_order(question) is not None and parse_order(question).kind in ("before", "after"), question
    # "before you <do>" is skipped, and the question after it is read
    assert parse_order("Before you commit, run the tests. What did we use before Postgres?") == Order(
        kind="before", anchor="postgres")
    assert parse_order("What did we use before you suggested Redis?") == Order(kind="before",
                                                                               anchor="you suggested redis")
    assert parse_order("First, which database did we choose first?") == Order(kind="first")
    assert parse_order("Which came first, MySQL or Postgres?") == Order(kind="first")


def _index(repo: MemoryRepo) -> Index:
    repo.import_records([{"id": i, "text": t, "created": f"{d}T10:00:00Z"} for d, i, t in LOG])
    return Index(repo, embedder=None)


def test_first_latest_and_before_use_the_dates(repo: MemoryRepo) -> None:
    index = _index(repo)
    now = datetime(2024, 9, 1, tzinfo=UTC)
    assert index.search("Which frontend framework did we use first?", k=3, now=now)[0].id == "fe1"
    assert index.search("What is the latest frontend framework?", k=3, now=now)[0].id == "fe3"
    assert index.search("What did we use for the frontend before Nuxt?", k=3, now=now)[0].id in ("fe2", "fe3")
    # the dates decide among memories on the subject only: "first" does not pull in the oldest memory of all
    assert "db1" not in [h.id for h in index.search("What was the first frontend?", k=3, now=now)]


def test_without_the_order_bonus_similarity_alone_decides(repo: MemoryRepo) -> None:
    index = _index(repo)
    now = datetime(2024, 9, 1, tzinfo=UTC)
    plain = index.search("Which frontend framework did we use first?", k=3, now=now,
                         tuning=DEFAULT_TUNING.__class__(order_weight=0.0))
    assert plain[0].id != "fe1"  # the newest memory repeats "frontend" and Vue: text alone ranks it higher


_QUESTION_PIECES = st.sampled_from([
    "before", "After", "prior to", "first", "earliest", "initially", "originally", "at the start", "at the beginning",
    "to begin with", "started with", "start out", "latest", "most recent", "newest", "currently", "now", "nowadays",
    "these days", "last", "last week", "what", "did we", "use", "kafka", "rabbitmq", "the", "deploy", "May 2023", " ",
    "?", ",", "s", "x", "ly",
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_QUESTION_PIECES, max_size=10).map("".join))
def test_the_order_word_scan_never_hides_an_order(question: str) -> None:
    """The word scan that spares most questions the order patterns' compilation answers as the patterns do."""
    from gitmem.search import order

    words = order._ORDER_WORDS
    try:
        order._ORDER_WORDS = ("",)  # every text "holds" the empty word: the patterns decide
        expected = parse_order(question)
    finally:
        order._ORDER_WORDS = words
    assert parse_order(question) == expected


def test_the_latest_in_a_named_period_is_taken_among_that_periods_memories(repo: MemoryRepo) -> None:
    # two dozen January notes repeat the question's words more than March's two notes do: by similarity alone
    # neither March note is among the 20 most similar, yet the question asks for the latest of March
    notes = [{"id": f"jan{day:02d}", "text": f"Deploy log {day}: the deploy setup ran the deploy script on staging",
              "created": f"2024-01-{day:02d}T10:00:00Z"} for day in range(1, 25)]
    notes += [{"id": "jenkins", "created": "2024-03-02T10:00:00Z",
               "text": "Early this month the deploy setup still used Jenkins on the old build server in the basement"},
              {"id": "actions", "created": "2024-03-20T10:00:00Z",
               "text": "Since the move to GitHub Actions the deploy setup builds the image, runs the checks and ships "
                       "every merge to production"}]
    repo.import_records(notes)
    hits = Index(repo, embedder=None).search("What is our current deploy setup in March 2024?", k=5, mode="bm25",
                                             now=datetime(2024, 6, 1, tzinfo=UTC))
    assert [h.id for h in hits[:2]] == ["actions", "jenkins"], [(h.id, round(h.score, 3)) for h in hits]


def _chained(repo: MemoryRepo, embedder: FakeEmbedder | None = None) -> Index:
    """The log with its supersede chains recorded as ``gitmem remember --auto --supersede`` records them, and an
    early frontend note forgotten as wrong (deprecated, replaced by nothing)."""
    repo.import_records([{"id": i, "text": t, "created": f"{d}T10:00:00Z"} for d, i, t in LOG]
                        + [{"id": "fe0", "text": "The frontend framework was jQuery on a static page",
                            "created": "2024-01-01T10:00:00Z"}])
    for old, new in (("db1", "db2"), ("fe1", "fe2"), ("fe2", "fe3")):
        repo.forget(old, f"superseded by {new}", superseded_by=new)
    repo.forget("fe0", "never true: the prototype was not ours")
    return Index(repo, embedder=embedder)


def test_a_supersede_chain_answers_first_and_before(repo: MemoryRepo) -> None:
    index = _chained(repo)
    now = datetime(2024, 9, 1, tzinfo=UTC)

    def ids(question: str) -> list[str]:
        return [h.id for h in index.search(question, k=5, now=now)]

    # the replaced states answer "first" and "before X", though a search leaves deprecated memories out
    assert ids("Which frontend framework did we use first?")[0] == "fe1"
    assert ids("Which database did we choose first for the shop?")[0] == "db1"
    # the chain says what Nuxt replaced: Vue 3, not the Nuxt memory that names both
    assert ids("What did we use for the frontend before Nuxt?")[0] == "fe2"
    # "after X" finds X among the replaced states, and the chain gives what replaced it
    assert ids("What did we use for the shop database after MySQL?")[0] == "db2"
    # and when that successor was itself replaced since, it is still what came right after X
    assert ids("What did we use for the frontend after Vuex?")[0] == "fe2"
    assert ids("What did we use for the frontend after Vue 2?")[0] == "fe2"  # a version, not a date
    # "the latest" and plain questions still meet the current states only; a forgotten memory never comes back
    assert ids("What is the latest frontend framework?")[0] == "fe3"
    for question in ("What is the latest frontend framework?", "Which frontend framework do we use?",
                     "First, which frontend framework do we use?",
                     "Which frontend framework did we use first?"):
        found = ids(question)
        assert "fe0" not in found, question
        assert question.endswith("first?") or not {"fe1", "fe2"} & set(found), (question, found)


def test_the_anchor_of_after_x_is_read_once(repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    # each stored document read costs a search time (a JSON parse): X's memory, found among the replaced states,
    # is read once to follow its chain
    index = _chained(repo)
    read: list[str] = []

    def reading(text: str) -> Memory:
        memory = from_json(text)
        read.append(memory.id)
        return memory

    from_json = idoc.memory_from_json
    monkeypatch.setattr(idoc, "memory_from_json", reading)
    hits = index.search("What did we use for the frontend after Vuex?", k=5, now=datetime(2024, 9, 1, tzinfo=UTC))
    assert hits[0].id == "fe2"
    assert read.count("fe1") == 1, read  # Vue 2 with Vuex, replaced by fe2


def test_forgotten_memories_do_not_crowd_the_past_states_out(repo: MemoryRepo) -> None:
    # thirty notes forgotten as wrong, each naming the frontend framework more often than the chain's states do:
    # they are not past states, and the first frontend is still found among those
    repo.import_records([{"id": f"wrong{i}", "text": f"Frontend framework draft {i}: which frontend framework?",
                          "created": "2024-05-01T10:00:00Z", "deprecated": True,
                          "deprecated_reason": "never true"} for i in range(30)])
    hits = _chained(repo).search("Which frontend framework did we use first?", k=5,
                                 now=datetime(2024, 9, 1, tzinfo=UTC))
    assert hits[0].id == "fe1", [(h.id, round(h.score, 3)) for h in hits]


def test_a_chain_answers_before_and_after_when_deprecated_memories_are_searched_too(repo: MemoryRepo) -> None:
    index = _chained(repo)  # ``gitmem search --include-deprecated``: the chain still says what came right before/after

    def top(question: str) -> str:
        return index.search(question, k=5, now=datetime(2024, 9, 1, tzinfo=UTC), include_deprecated=True)[0].id

    assert top("What did we use for the frontend before Nuxt?") == "fe2"
    assert top("What did we use for the frontend after Vuex?") == "fe2"


def test_a_chain_answers_first_in_a_hybrid_search_too(repo: MemoryRepo) -> None:
    index = _chained(repo, embedder=FakeEmbedder())
    hits = index.search("Which frontend framework did we use first?", k=5, now=datetime(2024, 9, 1, tzinfo=UTC))
    assert hits[0].id == "fe1", [(h.id, round(h.score, 3)) for h in hits]
    assert hits[0].memory.superseded_by == "fe2"  # shown as what it is: a past state, replaced by fe2


def test_a_replaced_state_reaches_a_prompt_marked_as_replaced(repo: MemoryRepo) -> None:
    from gitmem.briefing.block import build_block

    hits = _chained(repo).search("Which frontend framework did we use first?", k=3,
                                 now=datetime(2024, 9, 1, tzinfo=UTC))
    text, _used, _tokens, _left = build_block(hits, 500, "## Memories", count=lambda line: len(line.split()))
    # the agent is told it was replaced, and by what: it must not take Vue 2 for the current frontend
    assert "The frontend is written in Vue 2 with Vuex for state (id: fe1, replaced by fe2)" in text


@pytest.mark.parametrize("indexed_before", [False, True])
def test_a_compaction_summary_is_no_chain_of_changes(repo: MemoryRepo, indexed_before: bool) -> None:
    # compaction replaces a cluster at once (each member superseded by the summary): the members are past facts,
    # not successive states, so the earliest of them is not "the first" of whatever the nearest one is about;
    # so too when the summary was indexed before its members were replaced (the member's own reason says so)
    members = [("2024-01-05", "c1", "Backups of the database run nightly to S3 with pgBackRest, kept thirty days and "
                                    "restored once a month as a drill"),
               ("2024-03-01", "c2", "We picked MySQL for the shop database because the team knows it")]
    compacted = {"deprecated": True, "superseded_by": "sum1", "deprecated_reason": "compacted into sum1"}
    repo.import_records([{"id": i, "text": t, "created": f"{d}T10:00:00Z", **({} if indexed_before else compacted)}
                         for d, i, t in members]
                        + [{"id": "sum1", "text": "Shop database notes: MySQL; nightly backups to S3",
                            "tags": ["summary"], "created": "2024-04-01T10:00:00Z"}])
    index = Index(repo, embedder=None)
    question, now = "Which database did we pick first for the shop?", datetime(2024, 9, 1, tzinfo=UTC)
    if indexed_before:
        index.search(question, k=3, now=now)
        for member in ("c1", "c2"):
            repo.forget(member, "compacted into sum1", superseded_by="sum1")
    hits = index.search(question, k=3, now=now)
    assert hits[0].id == "c2", [(h.id, round(h.score, 3)) for h in hits]


def test_after_a_compacted_memory_the_summary_is_no_next_state(repo: MemoryRepo) -> None:
    """"After X" follows X's supersede link only to a later state of the fact, not to a compaction's summary."""
    repo.import_records([
        {"id": "o1", "text": "The cache moved from Redis to Valkey when the licence changed",
         "created": "2024-05-01T10:00:00Z"},
        {"id": "r1", "text": "The cache is Redis on a single node", "created": "2024-02-01T10:00:00Z",
         "deprecated": True, "superseded_by": "sum1", "deprecated_reason": "compacted into sum1"},
        {"id": "sum1", "text": "Notes on the servers: one node, its cache and its backups", "tags": ["summary"],
         "created": "2024-06-01T10:00:00Z"}])
    index = Index(repo, embedder=None)
    question, now = "What cache did we use after Redis?", datetime(2024, 9, 1, tzinfo=UTC)
    hits = index.search(question, k=3, now=now)
    assert hits[0].id == "o1", [(h.id, round(h.score, 3)) for h in hits]
