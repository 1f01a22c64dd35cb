"""Standing instructions and preferences stated earlier come up when the user asks for help on their subject."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gitmem.search.build import ID, SHA, load_state
from gitmem.search.index import Index
from gitmem.search.scoring import Tuning
from gitmem.search.semantic import store
from gitmem.search.standing import alternatives, asks_help, condition, stands
from gitmem.store.document import make_memory
from gitmem.store.memories import MemoryRepo

NOW = datetime(2024, 6, 1, tzinfo=UTC)
# a chat about a Flask app: many long messages about libraries, one short standing instruction, one preference
CHAT = [
    ("m1", "We are building the budget tracker with Flask and SQLite; the libraries so far are Flask, "
           "Werkzeug and Jinja, and the dashboard uses Chart.js for the analytics page."),
    ("m2", "For the analytics page the libraries to compare are Pandas, NumPy and Chart.js; Pandas makes the "
           "monthly grouping of expenses easy, Chart.js draws the charts in the browser."),
    ("m3", "The login uses Flask-Login and Werkzeug password hashing; the libraries keep sessions in a cookie "
           "and the hashes use pbkdf2 with a salt per user."),
    ("m4", "Testing libraries: pytest with the Flask test client, coverage for the report, and factory data "
           "for transactions so each test builds its own expenses."),
    ("rule", "Always include version numbers when I ask about libraries."),
    ("m5", "The deployment runs Gunicorn behind Nginx on a small VM, with the libraries pinned in a lock file."),
    ("pref", "I'm trying to keep the app small, so I prefer minimal dependencies, how do I keep it lean?"),
    ("m6", "Charts: the libraries Chart.js and Plotly both draw the expense charts; Chart.js is lighter."),
]


def _indexed(repo: MemoryRepo, rows: list[tuple[str, str]]) -> Index:
    """A BM25 index over ``rows`` imported into ``repo``."""
    _import(repo, rows)
    return Index(repo, embedder=None)


def _import(repo: MemoryRepo, chat: list[tuple[str, str]], day: int = 1) -> None:
    """The messages of ``chat`` as memories of one source, a day apart from ``2024-05-<day>``."""
    repo.import_records([{"id": i, "text": t, "created": f"2024-05-{n + day:02d}T10:00:00Z", "source": "chat"}
                         for n, (i, t) in enumerate(chat)])


def _ids(index: Index, question: str, k: int = 3, mode: str = "hybrid", tags: list[str] | None = None,
         **tuning: float) -> list[str]:
    return [h.id for h in index.search(question, k=k, now=NOW, mode=mode, tags=tags,
                                       tuning=Tuning(**tuning) if tuning else None)]


def test_asks_help() -> None:
    for question in ("What libraries would you suggest for the analytics page?", "Could you show me the login?",
                     "How should I structure the tests?", "What are some good charting libraries?",
                     "Any tips for the deployment?", "数据库怎么备份？", "推荐一个图表库"):
        assert asks_help(question), question
    # questions about what was said or done are not requests the user's rules govern
    for question in ("What libraries did we pick?", "Can you summarize how the project progressed?",
                     "Can you walk me through the order in which I brought up the features?",
                     "What advice does Caroline give about adoption?", "When does the first sprint end?"):
        assert not asks_help(question), question


def test_which_memories_stand() -> None:
    for text in ("Always include version numbers when I ask about libraries.", "Never use unittest here.",
                 "I'm keeping the app small, so I'd rather avoid heavy frameworks, how do I start?",
                 "以后都用中文回答", "我更喜欢用 pytest 写测试"):
        assert stands(make_memory(text)), text
    # a liking, a plain fact, and advice given on the way in a long answer are not rules
    for text in ("我喜欢猫", "The login uses Flask-Login.", "Here is the plan. " * 40 + "Always validate the input."):
        assert not stands(make_memory(text)), text
    assert stands(make_memory("Type hints on public functions", category="constraint"))


def test_a_standing_instruction_comes_up_for_a_request_on_its_subject(repo: MemoryRepo) -> None:
    index = _indexed(repo, CHAT)
    question = "Which libraries would you suggest for the charts?"
    assert "rule" in _ids(index, question)
    # without the standing memories' share the long messages about libraries fill the first places
    assert "rule" not in _ids(index, question, standing_weight=0.0)


def test_a_preference_comes_up_for_a_request_on_its_subject(repo: MemoryRepo) -> None:
    index = _indexed(repo, CHAT)
    question = "Can you recommend dependencies for the analytics page?"
    assert "pref" in _ids(index, question)
    assert "pref" not in _ids(index, question, standing_weight=0.0)


def test_a_question_about_what_was_done_is_ranked_by_its_words(repo: MemoryRepo) -> None:
    """A preference is no request's subject: a factual question that shares its words is ranked as if it did not
    stand (a rule that names its subject, "when I ask about libraries", is the tests below)."""
    index = _indexed(repo, CHAT)
    question = "Which dependencies did we keep for the app?"
    assert "pref" in _ids(index, question, k=8)
    assert _ids(index, question, k=8) == _ids(index, question, k=8, standing_weight=0.0)


def test_a_memory_stored_as_a_constraint_stands_without_rule_words(repo: MemoryRepo) -> None:
    """A directive the prompt hook stored (category preference or constraint) stands whatever its wording."""
    rule = repo.remember("Type hints on every public function", category="constraint")
    for n in range(4):
        repo.remember(f"The export function {n} of the budget tracker writes the monthly expenses to CSV; the "
                      f"export function is public and the function reads the transactions table.")
    index = Index(repo, embedder=None)
    question = "How should I write the public export function?"
    assert _ids(index, question, k=1) == [rule.id]
    assert _ids(index, question, k=1, standing_weight=0.0) != [rule.id]


# a chat about a personal statement: the submission discussed at length, one rule naming its subject ("deadlines")
STATEMENT = [
    ("s1", "I've completed three full drafts of my personal statement and had two peer reviews; the final version "
           "goes in for submission with the application portal in May."),
    ("s2", "The final submission needs the statement, two recommendation letters and the transcript uploaded to "
           "the portal, and the portal closes at noon on the last day."),
    ("s3", "For the final draft I cut the opening anecdote and moved the research project to the second "
           "paragraph, so the submission reads better."),
    ("rule", "Always format dates in the month-day-year style when I ask about deadlines."),
    ("s4", "The writing workshop at the library meets on Thursdays; the tutor reads one statement per session "
           "and gives written feedback before the final submission."),
    ("s5", "My recommendation letters come from Professor Hale and my lab supervisor; both promised them a "
           "week before the submission."),
    ("s6", "The statement is 980 words now and the limit for the final submission is 1,000 words, so there "
           "is little room left for the conclusion."),
]


def test_the_subject_a_rule_names() -> None:
    subjects = {
        "Always format dates in MM/DD/YYYY when I ask about scheduling details.": "scheduling details",
        "Whenever we talk about deployment, list the rollback steps first": "deployment",
        "If I ask you for a summary, keep it under five bullets.": "a summary",
        "When it comes to tests, always use pytest.": "tests",
        "When I ask about deadlines: always format dates as MM/DD/YYYY.": "deadlines",
        "Anytime I ask you about deadlines always use MM/DD/YYYY": "deadlines",
        "When I ask about the response format, reply in JSON": "the response format",
        "When I ask about how to write tests, show pytest examples.": "how to write tests",
        "When I ask questions about billing, cite the invoice.": "billing",
        "If asked about pricing, quote the current plan.": "pricing",
        "When I\u2019m asking about flights or hotels, compare prices.": "flights or hotels",
        "When I ask about UI, keep it short": "UI",
        "When I ask about Node.js releases, give the LTS line.": "Node.js releases",
        "When I talk with you about money, be precise.": "money",
        "If I need help with SQL, show the query plan.": "SQL",
        "当我问到部署的时候，先列出回滚步骤": "部署",
        "每次我问起预算时，请给出具体数字。": "预算",
        "每次我问你预算的时候，给出数字": "预算",
        "每次我问起关于预算的问题时，请给出具体数字。": "预算",
    }
    for text, subject in subjects.items():
        assert condition(text) == subject, text
        # a rule that opens with its subject stands like one that ends with it
        assert stands(make_memory(text)), text
    # a subject in a question, or "when it comes to" without a rule word, makes no rule
    for text in ("Got any favs when it comes to dairy-free desserts?", "When I ask about pricing, what do you say?"):
        assert condition(text) and not stands(make_memory(text)), text
    assert alternatives("flights or hotels") == ["flights", "hotels"]
    assert alternatives("software dependencies or libraries used") == ["software dependencies", "libraries used"]
    assert alternatives("预算或者开销") == ["预算", "开销"]
    for text in ("Never use unittest.", "Always include version numbers.", "I always ask about it later.",
                 "我提到的时间要换算成北京时间", "每次我问你的时候都要简短"):
        assert condition(text) == "", text


def test_a_rule_comes_up_for_a_question_on_the_subject_it_names(repo: MemoryRepo, model: Any) -> None:
    """"When is it due?" shares no word with "deadlines" and asks for no help: the rule's subject, embedded
    alone, is near it in meaning."""
    _import(repo, STATEMENT)
    index = Index(repo, embedder=model)
    question = "When is the final submission due?"
    assert not asks_help(question)
    assert "rule" in _ids(index, question)
    assert "rule" not in _ids(index, question, standing_weight=0.0)
    assert "rule" not in _ids(index, question, mode="bm25")  # no word of "deadlines" in the question
    # the filters hold for a rule brought by meaning too
    assert "rule" not in _ids(index, question, tags=["taxes"])
    # a question on another subject leaves the rule where its words and meaning put it
    assert "rule" not in _ids(index, "Who writes my recommendation letters?")
    # the subject is embedded once, beside the memory vectors, keyed by the rule's blob
    loaded = load_state(index)
    assert loaded is not None
    rule_sha = next(e[SHA] for e in loaded[0].values() if e[ID] == "rule")
    keys, matrix = store(index, model.model_id, "conditions").load()
    assert keys == [rule_sha] and matrix is not None and matrix.shape == (1, model.dim)
    # a forgotten rule does not come
    repo.forget("rule", reason="no longer wanted")
    assert "rule" not in _ids(index, question, k=7)


FINANCES = [
    ("f1", "My financial goals for this year: an emergency fund of six months, the car loan paid off by October, "
           "and 15% of the salary into the retirement account."),
    ("f2", "We reviewed the financial goals again after the raise: the emergency fund target went up and the "
           "holiday budget stays at 2,000."),
    ("f3", "The financial goals spreadsheet has a tab per goal and a chart of the progress each month."),
    ("rule", "Always highlight changes in budget allocations when I ask about financial goals."),
    ("f4", "Groceries and dining out are the two budget lines that grew most this spring."),
    ("f5", "Current financial goals this year, in order: the emergency fund, then the loan, then the current "
           "account buffer; the financial goals are checked at the end of the year."),
    ("f6", "This year the financial goals changed twice: current goals are the fund and the loan."),
    ("zh1", "今年的预算：房租每月四千，伙食两千，旅行预算一年一万。"),
    ("zh2", "预算表按月记账，超出预算的项目标红。"),
    ("zh3", "上个月的预算超了五百，主要是聚餐。"),
    ("zhrule", "每次我问起预算时，请给出具体数字。"),
    ("trips", "When I ask about flights or hotels, compare at least three prices."),
    ("t1", "We booked the hotel in Lisbon near the river for the May conference, four nights."),
]


def test_a_rule_comes_up_for_a_question_holding_the_words_of_its_subject(repo: MemoryRepo) -> None:
    """Without a model too: a factual question that holds the subject's words brings the rule, in English and in
    Chinese; one that holds only part of the subject does not."""
    index = _indexed(repo, FINANCES)
    question = "What are my current financial goals for this year?"
    assert not asks_help(question)
    assert _ids(index, question, k=1, mode="bm25") == ["rule"]
    assert _ids(index, question, k=1, mode="bm25", standing_weight=0.0) != ["rule"]
    assert "rule" not in _ids(index, "Which goals did we set for the retirement account?", k=1, mode="bm25")
    assert _ids(index, "今年的预算是多少？", k=1, mode="bm25") == ["zhrule"]
    assert _ids(index, "今年的预算是多少？", k=1, mode="bm25", standing_weight=0.0) != ["zhrule"]
    assert "zhrule" not in _ids(index, "今年的房租是多少？", k=1, mode="bm25")
    # 算 alone is in the subject's field, but not the pair 预算
    assert "zhrule" not in _ids(index, "我算了一下房租", k=2, mode="bm25")
    # one of the subjects a rule lists is enough
    assert _ids(index, "Which hotels did we book in Lisbon?", k=1, mode="bm25") == ["trips"]


def test_a_rule_that_names_the_subject_is_scored_by_its_text_like_any_candidate(repo: MemoryRepo) -> None:
    """Brought in by its subject from outside the BM25 candidates, the rule keeps its text's BM25 (the scale the
    others are fused on and the relevance gate reads), not its subject field's."""
    index = _indexed(repo, FINANCES)
    question = "What are my current financial goals for this year?"
    plain = {h.id: h.parts.bm25 for h in index.search(question, k=20, now=NOW, mode="bm25",
                                                        tuning=Tuning(standing_weight=0.0))}
    assert sorted(plain, key=plain.__getitem__, reverse=True).index("rule") >= 3
    few = index.search(question, k=1, now=NOW, mode="bm25", tuning=Tuning(candidates=2))  # 3 BM25 candidates
    assert few[0].id == "rule"
    assert few[0].parts.bm25 == plain["rule"]


def test_a_rule_that_names_its_subject_keeps_to_the_filters_and_goes_when_forgotten(repo: MemoryRepo) -> None:
    index = _indexed(repo, FINANCES)
    question = "What are my current financial goals for this year?"
    assert "rule" not in _ids(index, question, tags=["taxes"], mode="bm25")
    repo.forget("rule", reason="no longer wanted")
    assert "rule" not in _ids(index, question, k=8, mode="bm25")


def test_a_request_that_holds_the_subject_lifts_the_rule_once(repo: MemoryRepo) -> None:
    """A request ("can you…") that matches the rule's words and names its subject: one bonus, not two."""
    index = _indexed(repo, FINANCES)
    question = "Can you show me my financial goals?"
    assert asks_help(question)

    def score(weight: float) -> float:
        hits = index.search(question, k=8, now=NOW, mode="bm25", tuning=Tuning(standing_weight=weight))
        return next(h.score for h in hits if h.id == "rule")

    assert abs((score(0.8) - score(0.0)) - repo.config.ranking.w_sim * 0.8) < 1e-6


def test_a_rule_embedded_by_another_process_comes_up_in_a_running_index(repo: MemoryRepo, model: Any) -> None:
    """A server's index sees the subject vectors the warm-up or a CLI process wrote after it loaded its own."""
    _import(repo, [(i, t) for i, t in STATEMENT if i != "rule"])
    server = Index(repo, embedder=model)
    question = "When is the final submission due?"
    assert "rule" not in _ids(server, question)
    _import(repo, [("rule", dict(STATEMENT)["rule"])], day=20)
    Index(repo, embedder=model).refresh()
    other = Index(repo, embedder=model)
    assert "rule" in _ids(other, question)  # embeds what is missing
    assert "rule" in _ids(server, question)


def test_no_subject_is_embedded_or_compared_for_a_model_without_a_floor(repo: MemoryRepo, model: Any,
                                                                         monkeypatch: Any) -> None:
    from gitmem.search import rerank

    monkeypatch.setattr(rerank, "CONDITION_MATCH", {})
    _import(repo, STATEMENT)
    index = Index(repo, embedder=model)
    assert "rule" not in _ids(index, "When is the final submission due?")
    assert store(index, model.model_id, "conditions").load() == ([], None)
