"""Standing instructions and preferences stated earlier come up when the user asks for help on their subject."""

from __future__ import annotations

from datetime import UTC, datetime

from gitmem.search.index import Index
from gitmem.search.scoring import Tuning
from gitmem.search.standing import asks_help, stands
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


def _index(repo: MemoryRepo) -> Index:
    repo.import_records([{"id": i, "text": t, "created": f"2024-05-{n + 1:02d}T10:00:00Z", "source": "chat"}
                         for n, (i, t) in enumerate(CHAT)])
    return Index(repo, embedder=None)


def _ids(index: Index, question: str, k: int = 3, **tuning: float) -> list[str]:
    return [h.id for h in index.search(question, k=k, now=NOW, tuning=Tuning(**tuning) if tuning else None)]


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
    index = _index(repo)
    question = "Which libraries would you suggest for the charts?"
    assert "rule" in _ids(index, question)
    # without the standing memories' share the long messages about libraries fill the first places
    assert "rule" not in _ids(index, question, standing_weight=0.0)


def test_a_preference_comes_up_for_a_request_on_its_subject(repo: MemoryRepo) -> None:
    index = _index(repo)
    question = "Can you recommend dependencies for the analytics page?"
    assert "pref" in _ids(index, question)
    assert "pref" not in _ids(index, question, standing_weight=0.0)


def test_a_question_about_what_was_done_is_ranked_by_its_words(repo: MemoryRepo) -> None:
    index = _index(repo)
    question = "Which charting libraries did we compare?"
    assert _ids(index, question) == _ids(index, question, standing_weight=0.0)
    assert "rule" not in _ids(index, question)


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
