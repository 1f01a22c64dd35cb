"""The cheap checks that keep a search from compiling the time-expression and order patterns: they may say yes
to a question that names no time or order, never no to one the full parsers understand."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gitmem.search import order, timeexpr
from gitmem.search.index import open_index
from gitmem.store.memories import MemoryRepo

NOW = datetime(2026, 12, 1, 15, 30, tzinfo=UTC)

# pieces the parsers' patterns are made of, so that random questions often hold a real expression
_TIME_PIECES = ["in", "may", "March", "sept.", "8th", "of", "2023", "12", "3", "-", ",", "ago", "days", "weeks",
                "a few", "last", "this", "week", "weekend", "month", "year", "yesterday", "day before", "today",
                "tonight", "this morning", "recently", "lately", "these days", "monday", "Friday", "年", "月",
                "日", "号", "上", "个", "周", "週", "星期", "礼拜", "前", "天", "去", "今", "昨", "最近", "近来",
                "近期", "这", "這", "本", "三", "两", "２０２３", "Ｍａｙ", " ", "  ", "?", "task3", "topic"]
_ORDER_PIECES = ["before", "after", "prior to", "first", "earliest", "initially", "originally", "at the start",
                 "at the beginning", "to begin with", "started with", "start out", "latest", "most recent",
                 "most recently", "newest", "current", "currently", "now", "nowadays", "these days", "last", "week",
                 "最早", "最初", "第一次", "一开始", "起初", "当初", "最近", "最新", "最后", "目前", "现在", "如今",
                 "之前", "以前", "之后", "以后", "上线", "数据库", "Kafka", "May", "2023", "the", " ", "?",
                 "BEFORE", "Prıor to", "ſtart", "İnitially"]


def _questions(pieces: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(st.sampled_from(pieces), st.text(max_size=4)), max_size=8).map(" ".join) | \
        st.lists(st.sampled_from(pieces), max_size=8).map("".join)


@settings(max_examples=400)
@given(_questions(_TIME_PIECES))
@example("last week")
@example("上周")
@example("這週")
@example("2023年5月")
@example("3 days ago")
@example("8 May, 2023")
def test_the_time_check_never_hides_an_expression(question: str) -> None:
    found = timeexpr._period(timeexpr._lower(question), NOW)
    assert found is None or timeexpr.names_time(question), (question, found)


@settings(max_examples=400)
@given(_questions(_ORDER_PIECES))
@example("What did we use before Nuxt?")
@example("上线之后改了什么")
@example("what did we use prıor to kafka")
def test_the_order_check_never_hides_an_order(question: str) -> None:
    found = order._order(question)
    assert found is None or order.asks_order(question), (question, found)


def test_numbers_alone_name_no_time_and_ask_no_order() -> None:
    """A prompt such as "which tool for task3 and topic 3" compiles none of the patterns; four digits may be a
    year, so they pass the check, and the parser decides."""
    for question in ("which tool for task3 and topic 3", "数据库用的是什么"):
        assert not timeexpr.names_time(question)
        assert not order.asks_order(question)
    assert timeexpr.names_time("fix issue 1234 in the parser")
    assert timeexpr.parse_time_expression("fix issue 1234 in the parser", NOW) is None
    assert timeexpr.parse_time_expression("what changed in 2024", NOW) is not None


def test_a_bm25_search_loads_nothing_of_the_vector_side(repo: MemoryRepo, tmp_path: Path) -> None:
    """A BM25 search in a fresh interpreter (the prompt hook's) imports neither the model runtime nor the
    second-stage ranker, the vector cache, numpy, onnxruntime, typing or hashlib (OpenSSL) — beyond what opening
    the repository itself imported."""
    repo.import_records([{"text": "Run the test suite with pytest -x before every commit", "id": "tests"},
                         {"text": "Use ruff for linting and formatting", "id": "lint"}])
    open_index(repo, embedder=None).refresh()  # a refresh that writes the index may import more
    lazy = ["numpy", "onnxruntime", "gitmem.embeddings.runtime", "gitmem.search.rerank", "gitmem.search.vectors",
            "typing", "hashlib"]
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from gitmem.config import Config\n"
        "from gitmem.store.base import StoredRepo\n"
        f"repo = StoredRepo(Config(repo=Path({str(repo.path)!r}), author='t <t@x>'))\n"
        "before = set(sys.modules)\n"
        "from gitmem.search.index import open_index\n"
        "hits = open_index(repo, embedder=None).search('which test command for task3 and topic 3', mode='bm25')\n"
        "print([h.id for h in hits], hits[0].snippet if hits else '')\n"
        f"print(sorted(m for m in {lazy!r} if m in sys.modules and m not in before))\n")
    env = {k: v for k, v in os.environ.items() if k != "GITMEM_REPO"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                         cwd=tmp_path).stdout.splitlines()
    assert out[0].startswith("['tests']") and "pytest -x" in out[0]
    assert out[1] == "[]"
