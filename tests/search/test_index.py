"""The search index on real repositories: tantivy BM25 with CJK text, the packaged ONNX model, refresh from git
(gitmem commits, hand edits, pulls, a deleted cache), the embedding cache, filters, locking and bad input."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock
from hypothesis import given
from hypothesis import strategies as st

from gitmem.config import Config, EmbeddingConfig, RankingConfig
from gitmem.errors import SearchError, ValidationError
from gitmem.search import scoring as ranking
from gitmem.search.analysis import analyze_query, build_analyzer
from gitmem.search.index import Index, open_index
from gitmem.search.scoring import DEFAULT_TUNING, snippet
from gitmem.search.timeexpr import parse_time_expression
from gitmem.store.memories import MemoryRepo
from gitmem.text.records import replace
from tests.helpers import ROOT, CountingEmbedder, FakeEmbedder, assert_clean, git

PG = "我们决定使用 PostgreSQL 而不是 MySQL，因为 JSON 查询更快"
FILLER = [
    "Run the test suite with pytest -x before every commit", "Use tabs for Makefiles and four spaces for Python",
    "The staging server lives at staging.example.com", "Prefer dataclasses over dicts for structured records",
    "部署前需要运维审批", "日志统一输出为 JSON 格式", "前端使用 React 和 TypeScript", "代码评审至少需要两个人批准",
    "Redis is used as a cache only, never as the source of truth", "CI runs on GitHub Actions with two workers",
    "每周五下午不发布新版本", "The API is versioned under /v2 since the spring release",
    "Name branches feature/<ticket> or fix/<ticket>", "接口超时时间设置为三十秒", "使用 UTC 存储所有时间",
    "Secrets come from the vault, never from .env files", "Docker images are built with multi-stage builds",
    "团队使用飞书沟通", "Migrations run with alembic upgrade head", "The mobile app talks to the BFF, not the API",
    "错误信息要写清楚下一步怎么做", "Benchmarks live in bench/ and are not run in CI",
    "Avoid global state in request handlers", "用户密码使用 bcrypt 哈希", "The design doc template is in docs/adr",
    "Commit messages use the imperative mood", "监控告警发到值班群", "Keep functions under fifty lines",
    "Feature flags are managed in LaunchDarkly", "缓存过期时间默认五分钟", "Logs are shipped to Loki",
    "Do not mock the database in integration tests", "Pin dependency versions in requirements.txt",
    "图片上传到对象存储", "Use ruff for linting and formatting", "Retry network calls with exponential backoff",
    "Time zones are converted only at the edges", "版本号遵循语义化版本", "The on-call rotation changes on Monday",
    "Write docstrings for every public function", "所有接口都要有单元测试", "Prefer composition over inheritance",
    "The data team owns the warehouse schema", "新人入职第一周先读架构文档", "Use UUIDv7 for primary keys",
    "Never force-push to main", "服务之间用 gRPC 通信", "Dashboards are in Grafana under the team folder",
    "Release notes are generated from PR titles", "Support tickets are triaged every morning",
]


@pytest.fixture
def filled(repo: MemoryRepo) -> tuple[MemoryRepo, str]:
    records = [{"text": t, "id": f"m{i:02d}"} for i, t in enumerate(FILLER)]
    records.insert(17, {"text": PG, "id": "pg-decision", "category": "decision", "importance": 4})
    repo.import_records(records)
    return repo, "pg-decision"


def ids(hits: Sequence[Any]) -> list[str]:
    return [h.id for h in hits]


# -- language ------------------------------------------------------------------------------------------

def test_chinese_and_mixed_questions_find_the_decision(filled: tuple[MemoryRepo, str], model: Any) -> None:
    repo, pg = filled
    index = Index(repo, embedder=model)
    for query in ("数据库 PostgreSQL", "为什么不用 MySQL", "why did we drop MySQL?", "JSON 查询"):
        for mode in ("hybrid", "bm25"):
            assert ids(index.search(query, k=3, mode=mode))[0] == pg, (query, mode)
    assert ids(index.search("部署审批", k=3, mode="bm25"))[0] == "m04"
    assert ids(index.search("哈希密码", k=3, mode="bm25"))[0] == "m23"  # characters in another order
    assert ids(index.search("how do we store passwords? bcrypt", k=3))[0] == "m23"  # English words, Chinese text
    assert "m08" in ids(index.search("what is Redis for", k=3, mode="hybrid"))


def test_japanese_and_korean_words_are_found_inside_longer_words(repo: MemoryRepo) -> None:
    """Korean glues particles to its words and Japanese writes no spaces: a question's word must still find the
    memory that has it with a particle or inside a longer run."""
    texts = ["データベースはPostgreSQLを使う", "デプロイの前に承認が必要", "데이터베이스는 PostgreSQL을 사용한다",
             "배포 전에 승인이 필요하다", "部署前需要运维审批"]
    repo.import_records([{"id": f"d{i}", "text": t} for i, t in enumerate(texts)])
    index = Index(repo, embedder=None)
    for query, expected in (("データベース", "d0"), ("承認", "d1"), ("데이터베이스를", "d2"), ("승인", "d3"),
                            ("审批", "d4"), ("PostgreSQL을 쓰나요", "d2")):
        assert ids(index.search(query, k=3))[0] == expected, query


def test_a_chinese_utterance_finds_a_memory_sharing_single_characters(repo: MemoryRepo) -> None:
    """Chit-chat names what a remembered fact is about with other words: "老是和狗打架" shares no pair of characters
    with "一条狗", only the character 狗. Such a memory must still be found, after those sharing pairs."""
    texts = ["我有孩子，还有一条狗", "我在IT部门工作", "我喜欢运动", "部署前需要运维审批", "我家的猫很淘气"]
    repo.import_records([{"id": f"p{i}", "text": t} for i, t in enumerate(texts)])
    index = Index(repo, embedder=None)
    assert ids(index.search("才上三年级，老是和狗打架", k=3))[0] == "p0"
    assert ids(index.search("孩子们的狗", k=3))[0] == "p0"  # the pair 孩子 and the character 狗 add up
    assert analyze_query("狗打架", build_analyzer()).chars.keys() == {"狗", "打", "架"}


def test_a_chinese_rule_s_time_marker_is_no_topic(repo: MemoryRepo) -> None:
    """"以后不要用 npm" ranked "以后的事以后再说" and another memory holding 以后 above the pnpm rule (11th)."""
    texts = ["以后的事以后再说", "我们决定以后查询关联数据都用 selectinload", "前端包管理用 pnpm，不要用 npm 或 yarn",
             "部署前需要运维审批"]
    repo.import_records([{"id": f"p{i}", "text": t} for i, t in enumerate(texts)])
    index = Index(repo, embedder=None)
    for query in ("以后不要用 npm", "今后不要用 npm，谢谢"):
        found = ids(index.search(query, k=3))
        assert found[0] == "p2" and "p0" not in found, query


def test_traditional_and_simplified_characters_find_each_other(repo: MemoryRepo) -> None:
    """A team writing traditional characters (Taiwan, Hong Kong) and a question in simplified ones, or the other way
    round: the same words in two forms shared no token, and the memory was not found at all."""
    texts = ["上線前必須經過運維審批", "数据库连接池设为 20", "我家的猫很淘气", "部署前先跑测试"]
    repo.import_records([{"id": f"p{i}", "text": t} for i, t in enumerate(texts)])
    index = Index(repo, embedder=None)
    assert ids(index.search("运维审核", k=2))[0] == "p0"  # simplified question, traditional memory
    assert ids(index.search("數據庫", k=2))[0] == "p1"  # traditional question, simplified memory
    (hit,) = index.search("運維", k=1)
    assert hit.memory.text == texts[0]  # the memory is stored and shown as it was written


def test_an_english_model_stays_out_of_chinese(filled: tuple[MemoryRepo, str], model: Any) -> None:
    """The packaged model reads Latin script only: for a Chinese question, and for a memory written in Chinese, its
    cosines are noise, so BM25 alone ranks them (found on DuLeMon: hybrid fell ~0.2 below BM25 before)."""
    repo, _pg = filled
    index = Index(repo, embedder=model)
    for query in ("部署审批", "哈希密码", "为什么不用 MySQL"):
        hybrid, bm25 = index.search(query, k=5), index.search(query, k=5, mode="bm25")
        assert ids(hybrid) == ids(bm25), query
        assert all(h.parts.vector is None for h in hybrid)
    # a memory with no Latin word at all has a zero vector: never a vector candidate, whatever the question
    assert "m04" not in ids(index.search("deployment approval", k=30, mode="vector"))


def test_a_search_nothing_is_about_finds_nothing(filled: tuple[MemoryRepo, str], model: Any) -> None:
    """Scores are relative: the nearest of unrelated memories scores like a perfect match. With ``related_only``
    (what ``gitmem search``, MCP and HTTP show) a memory found by its vector alone needs the model's floor, so a
    made-up or off-topic query finds nothing, while a paraphrase sharing no word still finds its memory."""
    repo, _pg = filled
    index = Index(repo, embedder=model)
    for query in ("zzzqqq", "quantum chromodynamics lattice", "kubernetes helm chart rollback"):
        assert index.search(query, k=5), query  # the plain ranking lists the nearest anyway
        assert index.search(query, k=5, related_only=True) == [], query
    found = index.search("credentials storage", k=5, related_only=True)
    assert ids(found)[:1] == ["m15"] and found[0].parts.bm25 == 0  # "Secrets come from the vault": no shared word
    # a shared word is enough, whatever the cosine
    assert "m08" in ids(index.search("Redis", k=5, related_only=True))
    # the library's verb (the packaged model, as configured by default) shows related memories only, like the CLI
    from gitmem.api import Repository

    assert Repository(repo.config).search("zzzqqq", k=5) == []
    assert ids(Repository(repo.config).search("zzzqqq", k=5, related_only=False))


def test_a_made_up_query_does_not_find_a_memory_of_one_word(repo: MemoryRepo, model: Any) -> None:
    """Near-empty texts lie near each other in the model's space: "zzzqqq" and a memory that reads "x" or "ok" had
    cosines of 0.29-0.34, over the search floor, with nothing in common. The floor reads the cosine beyond the
    empty text's direction, which leaves a real paraphrase where it was."""
    texts = ["x", "ok", "b2", "Secrets come from the vault, never from .env files", "I have a dog named Rex"]
    repo.import_records([{"id": f"w{i}", "text": t} for i, t in enumerate(texts)])
    index = Index(repo, embedder=model)
    for query in ("zzzqqq", "asdf qwer", "hello"):
        assert {"w0", "w1"} & set(ids(index.search(query, k=5))), query  # the plain ranking has them first
        assert index.search(query, k=5, related_only=True) == [], query
    assert ids(index.search("credentials storage", k=5, related_only=True)) == ["w3"]
    assert ids(index.search("my pet", k=5, related_only=True))[:1] == ["w4"]

def test_a_made_up_query_does_not_find_a_memory_in_another_script(repo: MemoryRepo, model: Any) -> None:
    """A memory mostly in Chinese gets the English model's vector of its few Latin words ("alembic"), a near-empty
    text: "zzzqqq" and "kubernetes helm chart rollback" found it by that vector alone."""
    texts = ["数据库迁移必须用 alembic，不要手写 SQL 迁移脚本。", "前端用 Vite 构建，别再用 webpack",
             "Secrets come from the vault, never from .env files"]
    repo.import_records([{"id": f"z{i}", "text": t} for i, t in enumerate(texts)])
    index = Index(repo, embedder=model)
    for query in ("zzzqqq", "kubernetes helm chart rollback", "quantum chromodynamics lattice"):
        assert not {"z0", "z1"} & set(ids(index.search(query, k=5, related_only=True))), query
    assert ids(index.search("alembic migrations", k=5, related_only=True))[:1] == ["z0"]  # a shared word still finds it
    assert ids(index.search("credentials storage", k=5, related_only=True))[:1] == ["z2"]


def test_a_query_or_a_memory_of_no_word_is_no_vector(repo: MemoryRepo, model: Any) -> None:
    """Emoji and dashes are unknown tokens to the model, so "🙂" and "🚀🚀🚀" had the same vector: a search for "🙂"
    or "—" listed "🚀🚀🚀" at a cosine of 1.0, and "🐍 python" put it above the memory about Python."""
    texts = ["🚀🚀🚀", "Python 3.12 is the minimum for the shop service", "x5"]
    repo.import_records([{"id": f"e{i}", "text": t} for i, t in enumerate(texts)])
    index = Index(repo, embedder=model)
    for query in ("🙂", "—", "🎉🎉"):
        with pytest.raises(SearchError, match="nothing to search for"):
            index.search(query, k=5, related_only=True)
    assert ids(index.search("🐍 python", k=5, related_only=True)) == ["e1"]
    assert "e0" not in ids(index.search("rocket launch", k=5, mode="vector"))  # no vector at all


def test_query_analysis() -> None:
    analyzer = build_analyzer()
    terms = analyze_query("为什么不用 MySQL?", analyzer)
    assert set(terms.words) == {"mysql"} and set(terms.bigrams) == {("不", "用")}
    terms = analyze_query("Why did we drop the commits?", analyzer)
    assert set(terms.words) == {"drop", "commit"}  # stopwords gone, English stemmed
    assert set(analyze_query("what is it", analyzer).words) == {"what", "is", "it"}  # only stopwords: keep them
    assert analyze_query('"foo AND ( -bar:[', analyzer).words.keys() == {"foo", "bar"}
    assert analyze_query("ＭｙＳＱＬ　数据库", analyzer).words.keys() == {"mysql"}  # full-width folded
    assert analyze_query("?!", analyzer).empty


def test_snippet_highlights_are_character_ranges() -> None:
    analyzer = build_analyzer()
    text, marks = snippet(PG, {"postgresql", "查", "询"}, analyzer)
    assert [text[a:b] for a, b in marks] == ["PostgreSQL", "查询"]
    long = "filler words here. " * 30 + "the needle sits here " + "more filler text. " * 30
    text, marks = snippet(long, {"needl"}, analyzer, width=80)
    assert len(text) <= 82 and text.startswith("…") and [text[a:b] for a, b in marks] == ["needle"]


def test_a_snippet_goes_where_a_rare_term_is_not_where_the_text_s_subject_repeats() -> None:
    """The article's subject stands everywhere; the one sentence naming the rarer word is the answer."""
    analyzer = build_analyzer()
    text = ("The Panthers opened at home. The Panthers won again. The Panthers rested starters. " * 2
            + "Filler about the stadium and the weather and the crowd. " * 3
            + "Kawann Short led the Panthers in sacks with eleven. "
            + "More filler about the stadium, the tickets and the parking. " * 3)
    terms = set(analyze_query("Who led the Panthers in sacks?", analyzer).highlight_terms())
    cut, marks = snippet(text, terms, analyzer)
    assert "Kawann Short led the Panthers in sacks" in cut
    assert {cut[a:b].lower() for a, b in marks} >= {"sacks", "panthers"}


# -- following the repository --------------------------------------------------------------------------

def test_refresh_follows_commits_and_does_nothing_when_unchanged(repo: MemoryRepo) -> None:
    index = Index(repo, embedder=None)
    first = repo.remember("The deploy script lives in ops/deploy.sh")
    assert ids(index.search("deploy script", mode="bm25")) == [first.id]
    second = repo.remember("Deploys need an approval from the on-call engineer")
    stats = index.refresh()
    assert stats.indexed == 1 and not stats.rebuilt
    assert set(ids(index.search("deploy", mode="bm25"))) == {first.id, second.id}
    assert index.refresh().indexed == 0
    started = time.perf_counter()
    for _ in range(20):
        index.refresh()
    assert (time.perf_counter() - started) / 20 < 0.02  # the "nothing changed" check is a ref read
    assert_clean(repo.path)


def test_hand_edit_committed_with_git_is_picked_up(repo: MemoryRepo) -> None:
    memory = repo.remember("Use MySQL for the orders service")
    index = Index(repo, embedder=None)
    assert ids(index.search("MySQL orders", mode="bm25")) == [memory.id]
    path = repo.path / memory.path
    path.write_text(path.read_text("utf-8").replace("Use MySQL", "Use CockroachDB"), "utf-8")
    assert ids(index.search("CockroachDB", mode="bm25")) == []  # uncommitted: the index follows git
    git(repo.path, "commit", "-qam", "hand edit")
    assert ids(index.search("CockroachDB", mode="bm25")) == [memory.id]
    assert ids(index.search("MySQL", mode="bm25")) == []
    git(repo.path, "rm", "-q", memory.path)
    git(repo.path, "commit", "-qm", "hand delete")
    assert ids(index.search("CockroachDB", mode="bm25")) == []


def test_pull_from_another_clone_is_picked_up(repo: MemoryRepo, tmp_path: Path) -> None:
    repo.remember("The first machine knows about Kafka")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(repo.path, "remote", "add", "origin", str(remote))
    git(repo.path, "push", "-q", "origin", "main")
    index = Index(repo, embedder=None)
    assert len(index.search("Kafka", mode="bm25")) == 1
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    added = MemoryRepo(Config(repo=other)).remember("The second machine learned about Zookeeper")
    git(other, "push", "-q", "origin", "main")
    git(repo.path, "pull", "-q", "origin", "main")
    assert ids(index.search("Zookeeper", mode="bm25")) == [added.id]
    git(repo.path, "checkout", "-q", "-b", "old", "HEAD~1")  # a branch switch follows too
    assert ids(index.search("Zookeeper", mode="bm25")) == []
    git(repo.path, "checkout", "-q", "main")
    assert ids(index.search("Zookeeper", mode="bm25")) == [added.id]


def test_deleting_the_cache_rebuilds_it(filled: tuple[MemoryRepo, str]) -> None:
    repo, pg = filled
    import shutil

    assert ids(Index(repo, embedder=None).search("PostgreSQL", mode="bm25"))[0] == pg
    index = Index(repo, embedder=None)
    index.search("PostgreSQL", mode="bm25")
    shutil.rmtree(repo.path / ".cache")
    assert ids(index.search("PostgreSQL", mode="bm25"))[0] == pg  # same object
    shutil.rmtree(repo.path / ".cache")
    assert ids(Index(repo, embedder=None).search("PostgreSQL", mode="bm25"))[0] == pg  # new process
    assert index.rebuild(vectors=False).indexed == len(FILLER) + 1
    assert_clean(repo.path)


def test_unreadable_file_is_skipped_and_reported(repo: MemoryRepo) -> None:
    good = repo.remember("Readable memory about Terraform")
    bad = repo.path / "memories" / "global" / "broken.md"
    bad.write_text("---\nid: [unclosed\n---\nTerraform text\n", "utf-8")
    git(repo.path, "add", ".")
    git(repo.path, "commit", "-qm", "broken file")
    index = Index(repo, embedder=None)
    assert ids(index.search("Terraform", mode="bm25")) == [good.id]
    assert any("broken.md" in w for w in index.warnings)


def test_neighbours_of_the_same_session_give_context(repo: MemoryRepo) -> None:
    base = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
    repo.import_records([
        {"text": "Which database did we pick for the billing service?", "id": "s1", "source": "sess-1",
         "created": base.isoformat()},
        {"text": "We went with the managed one from the cloud vendor.", "id": "s2", "source": "sess-1",
         "created": (base + timedelta(seconds=1)).isoformat()},
        {"text": "We went with the blue design for the landing page.", "id": "o1", "source": "sess-2",
         "created": base.isoformat()},
    ])
    index = Index(repo, embedder=None)
    hits = index.search("managed database billing", k=3, mode="bm25")
    assert ids(hits)[:2] == ["s2", "s1"] or ids(hits)[:2] == ["s1", "s2"]
    hits = index.search("which vendor for billing", k=3, mode="bm25")
    assert "s2" in ids(hits) and "o1" not in ids(hits)
    assert hits[0].parts.context > 0 or hits[1].parts.context > 0
    # adding a memory to the session re-indexes its neighbours (their context changed), not the whole repo
    repo.import_records([{"text": "It is also cheaper.", "id": "s3", "source": "sess-1",
                          "created": (base + timedelta(seconds=2)).isoformat()}])
    stats = index.refresh()
    assert stats.indexed == 3
    assert "s3" in ids(index.search("billing database cheaper", k=3, mode="bm25"))


def test_an_index_built_for_another_context_window_is_rebuilt(repo: MemoryRepo, model: Any) -> None:
    base = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
    texts = ["Which database did we pick for the billing service?", "We went with the managed one.",
             "It is cheaper than running our own.", "The landing page got the blue design."]
    repo.import_records([{"text": t, "id": f"s{i}", "source": "sess-1",
                          "created": (base + timedelta(seconds=i)).isoformat()} for i, t in enumerate(texts)])
    assert "s1" in ids(Index(repo, embedder=model).search("which vendor runs the billing database", k=3))
    narrow = Index(repo, embedder=model, tuning=replace(DEFAULT_TUNING, context_window=1))
    assert narrow.refresh().rebuilt  # its ctx fields hold ±1 neighbours, not the ±2 on disk
    hits = narrow.search("which vendor runs the billing database", k=3)
    assert "s1" in ids(hits) and any(name == "model.neighbour" for name, _v in hits[0].parts.items())


def test_time_expressions(repo: MemoryRepo) -> None:
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)  # a Monday
    cases = {
        "what did we decide last week": ("2026-11-23", "2026-11-30"),
        "上周的决定": ("2026-11-23", "2026-11-30"),
        "yesterday": ("2026-11-29", "2026-11-30"),
        "in May": ("2026-05-01", "2026-06-01"),
        "2023 年的数据库选型": ("2023-01-01", "2024-01-01"),
        "2023年5月": ("2023-05-01", "2023-06-01"),
        "on 8 May, 2023": ("2023-05-08", "2023-05-09"),
        "in December": ("2025-12-01", "2026-01-01"),
        "last month": ("2026-10-01", "2026-11-01"),
        "去年": ("2025-01-01", "2026-01-01"),
    }
    for text, (start, end) in cases.items():
        found = parse_time_expression(text, now)
        assert found is not None, text
        assert (found.start.date().isoformat(), found.end.date().isoformat()) == (start, end), text
    assert parse_time_expression("may I use MySQL?", now) is None
    assert parse_time_expression("why did we drop MySQL", now) is None
    repo.import_records([
        {"text": "Chose Postgres for search", "id": "old", "created": "2026-05-12T10:00:00Z"},
        {"text": "Chose Postgres for billing", "id": "new", "created": "2026-11-25T10:00:00Z"},
    ])
    index = Index(repo, embedder=None)
    assert ids(index.search("Postgres in May", k=2, mode="bm25", now=now))[0] == "old"
    assert ids(index.search("Postgres last week", k=2, mode="bm25", now=now))[0] == "new"


# -- filters and ranking -------------------------------------------------------------------------------

def test_filters_and_deprecated(repo: MemoryRepo) -> None:
    a = repo.remember("Cache invalidation uses Redis pubsub", category="decision", tags="cache,redis",
                      project="shop", type="project")
    b = repo.remember("Redis runs with 2 GB of memory", category="constraint", tags="redis")
    c = repo.remember("Redis keys expire after a day", project="blog", tags="redis")
    d = repo.remember("Redis was version 6", tags="redis")
    repo.forget(d.id, "upgraded to 7")
    index = Index(repo, embedder=None)
    assert set(ids(index.search("redis", mode="bm25"))) == {a.id, b.id, c.id}
    assert d.id in ids(index.search("redis", mode="bm25", include_deprecated=True))
    assert ids(index.search("redis", mode="bm25", category="decision")) == [a.id]
    assert ids(index.search("redis", mode="bm25", type="project", tags=["cache"])) == [a.id]
    assert set(ids(index.search("redis", mode="bm25", tags="REDIS"))) == {a.id, b.id, c.id}
    assert set(ids(index.search("redis", mode="bm25", project="shop"))) == {a.id, b.id}  # plus global
    assert ids(index.search("redis", mode="bm25", project="")) == [b.id]
    with pytest.raises(ValidationError, match="use one of"):
        index.search("redis", category="nope")


def test_importance_and_recency_weights(repo: MemoryRepo) -> None:
    now = datetime(2026, 11, 30, tzinfo=UTC)
    repo.import_records([
        {"text": "Use pnpm for the monorepo", "id": "low", "importance": 1, "created": "2026-11-29T00:00:00Z"},
        {"text": "Use pnpm for the monorepo workspace", "id": "high", "importance": 5,
         "created": "2024-01-01T00:00:00Z"},
    ])
    by_importance = MemoryRepo(replace(repo.config, ranking=RankingConfig(w_sim=0.1, w_imp=1.0, w_rec=0.0)))
    by_recency = MemoryRepo(replace(repo.config, ranking=RankingConfig(w_sim=0.1, w_imp=0.0, w_rec=1.0)))
    assert ids(Index(by_importance, embedder=None).search("pnpm", mode="bm25", now=now))[0] == "high"
    hits = Index(by_recency, embedder=None).search("pnpm", mode="bm25", now=now)
    assert ids(hits)[0] == "low"
    parts = hits[0].parts
    assert parts.importance == pytest.approx(0.2) and 0.97 < parts.recency <= 1.0
    assert hits[0].score == pytest.approx(0.1 * parts.similarity + parts.recency)
    assert dict(parts.items())["bm25"] > 0 and "vector" not in dict(parts.items())


def test_bad_queries(filled: tuple[MemoryRepo, str]) -> None:
    repo, pg = filled
    index = Index(repo, embedder=None)
    for query in ('"foo AND (', "title:(", "foo*", "AND OR NOT", "[1 TO", "PostgreSQL)))", "a\\b", "body:x^2~"):
        index.search(query, mode="bm25")  # query syntax is only punctuation here: never an error
    assert ids(index.search('"PostgreSQL AND (', mode="bm25"))[0] == pg
    for empty in ("", "   ", "\n"):
        with pytest.raises(SearchError, match="empty"):
            index.search(empty)
    for nothing in ("?!", "*", "\\"):
        with pytest.raises(SearchError, match="nothing to search"):
            index.search(nothing, mode="bm25")


# -- embeddings ----------------------------------------------------------------------------------------

def test_vectors_are_cached_by_blob_sha(filled: tuple[MemoryRepo, str], model: Any) -> None:
    repo, pg = filled
    first = CountingEmbedder(model)
    assert pg in ids(Index(repo, embedder=first).search("PostgreSQL or MySQL for JSON", k=3, mode="vector"))
    assert first.documents == len(FILLER) + 1
    second = CountingEmbedder(model)  # a second process: nothing to embed
    hits = Index(repo, embedder=second).search("which database do we use? PostgreSQL", k=5)
    assert second.documents == 0 and hits[0].id == pg and hits[0].parts.vector is not None
    repo.remember("Feature branches are deleted after merge")  # one new memory: one embedding
    index = Index(repo, embedder=second)
    index.search("branches")
    assert second.documents == 1
    memory = repo.get("m03")  # an edit: one embedding; deprecating it changes its blob too
    repo.save(replace(memory, text="Prefer attrs over dicts for structured records"))
    index.search("attrs")
    assert second.documents == 2
    stats = index.rebuild()
    assert stats.embedded == 0 and second.documents == 2
    vectors = list((repo.path / ".cache" / "vectors").iterdir())
    assert len(vectors) == 1 and vectors[0].name.startswith(model.model_id)
    assert_clean(repo.path)


def test_the_vectors_of_the_model_s_previous_id_go_once_the_new_ones_are_complete(repo: MemoryRepo,
                                                                                model: Any) -> None:
    from gitmem.search.vectors import REPLACED_UNUSED_DAYS

    if not model.int8_activations:
        pytest.skip("this onnxruntime runs the packaged model with float32 activations: no -a8 cache to replace")
    repo.remember("Deploys go through the staging cluster first")
    vectors = repo.path / ".cache" / "vectors"
    Index(repo, embedder=model).rebuild()
    (current,) = vectors.iterdir()
    recipe = current.name.rpartition(".r")[2]
    assert model.replaces == (model.model_id.removesuffix("r2"),)  # minilm-l6-int8-a8r2 replaces ...-a8
    old = vectors / f"{model.replaces[0]}.r{recipe}"
    kept = vectors / f"another-model.r{recipe}"
    unused = time.time() - REPLACED_UNUSED_DAYS * 86400 - 3600
    for folder in (old, kept):
        (folder / "sentences").mkdir(parents=True)
        for path in (folder / "COMPLETE", folder / "sentences" / "1.json"):
            path.write_text("abc")
            os.utime(path, (unused, unused))
        for path in (folder / "sentences", folder):
            os.utime(path, (unused, unused))
    repo.remember("Feature flags live in LaunchDarkly")
    Index(repo, embedder=model).search("feature flags")  # embeds the new memory: the cache is complete again
    assert sorted(p.name for p in vectors.iterdir()) == sorted([current.name, kept.name])
    assert_clean(repo.path)


def test_progress_is_reported_while_embedding(repo: MemoryRepo) -> None:
    repo.import_records({"text": f"memory number {i} about topic {i % 7}"} for i in range(150))
    fake = FakeEmbedder()
    seen: list[int] = []
    totals: list[int] = []
    stats = Index(repo, embedder=fake).rebuild(progress=seen.append, total=totals.append)
    assert stats.embedded == 150 and sum(seen) == 150 and len(seen) > 1 and totals == [150]


def test_no_model_means_bm25_with_one_notice(filled: tuple[MemoryRepo, str], tmp_path: Path) -> None:
    repo, pg = filled
    none = MemoryRepo(replace(repo.config, embedding=EmbeddingConfig(model="none")))
    index = open_index(none)
    assert ids(index.search("PostgreSQL"))[0] == pg and index.notices == []  # asked for none: nothing to say
    missing = MemoryRepo(replace(repo.config, embedding=EmbeddingConfig(model="no-such-model",
                                                                                models_dir=str(tmp_path / "models"))))
    index = open_index(missing)
    assert ids(index.search("PostgreSQL"))[0] == pg
    assert ids(index.search("PostgreSQL", mode="vector"))[0] == pg
    assert len(index.notices) == 1 and "BM25 only" in index.notice and "no-such-model" in index.notice
    corrupt_dir = tmp_path / "corrupt"
    corrupt_dir.mkdir()
    (corrupt_dir / "model.onnx").write_bytes(b"not an onnx model at all")
    import gzip

    tokenizer = ROOT / "gitmem" / "data" / "all-MiniLM-L6-v2.tokenizer.json.gz"
    (corrupt_dir / "tokenizer.json").write_bytes(gzip.decompress(tokenizer.read_bytes()))
    corrupt = MemoryRepo(replace(repo.config, embedding=EmbeddingConfig(path=str(corrupt_dir))))
    index = open_index(corrupt)
    assert ids(index.search("为什么不用 MySQL"))[0] == pg
    assert "corrupt" in index.notice and "BM25 only" in index.notice


def test_hybrid_fusion_with_a_fake_embedder(repo: MemoryRepo) -> None:
    repo.import_records([{"text": "zzzz qqqq", "id": "letters"}, {"text": "alpha beta", "id": "words"},
                         {"text": "gamma delta", "id": "other"}])
    index = Index(repo, embedder=FakeEmbedder())
    assert ids(index.search("zzqq", k=1, mode="vector")) == ["letters"]  # no shared word, same letters
    hits = index.search("alpha", k=3, mode="hybrid")
    assert hits[0].id == "words" and hits[0].parts.bm25 > 0 and hits[0].parts.vector is not None
    assert all(0.0 <= h.parts.similarity <= 1.0 + 1e-9 for h in hits)


def test_vector_search_honours_filters_and_follows_changes(repo: MemoryRepo) -> None:
    # the weakest cosine among the candidates is not a result: a far-off memory in each set takes that place
    repo.remember("zzzz qqqq xxxx", category="decision")
    repo.remember("zzzz qqqq jjjj")
    a = repo.remember("Redis cache invalidation", category="decision", tags="cache")
    b = repo.remember("Redis memory limit", category="constraint")
    c = repo.remember("Redis version six")
    index = Index(repo, embedder=FakeEmbedder())
    assert {a.id, b.id, c.id} <= set(ids(index.search("redis", mode="vector")))
    assert ids(index.search("redis", mode="vector", category="decision")) == [a.id]
    assert ids(index.search("redis", mode="vector", tags="cache")) == [a.id]
    repo.forget(c.id, "upgraded")
    found = ids(index.search("redis", mode="vector"))  # the same Index object, after a commit
    assert c.id not in found and {a.id, b.id} <= set(found)
    assert c.id in ids(index.search("redis", mode="vector", include_deprecated=True))
    d = repo.remember("Redis cluster has three nodes", category="decision")
    assert {a.id, d.id} <= set(ids(index.search("redis", mode="vector", category="decision")))


@given(st.lists(st.tuples(st.sampled_from([0, 1, 2]), st.integers(0, 8), st.floats(0, 1)), max_size=30),
       st.integers(1, 3))
def test_neighbour_context_is_the_best_similarity_within_the_window(
        rows: list[tuple[int, int, float]], window: int) -> None:
    grp, seq, sims = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    got = ranking._context(sims, grp, seq, window, 0.5)
    for i, (g, s, _sim) in enumerate(rows):
        near = [sims[j] for j, (h, t, _x) in enumerate(rows) if g and h == g and 0 < abs(t - s) <= window]
        assert got[i] == pytest.approx(0.5 * max(near, default=0.0))


# -- concurrency and cost ------------------------------------------------------------------------------

def test_locked_index_searches_without_writing_or_waits(repo: MemoryRepo) -> None:
    first = repo.remember("Ansible manages the bare-metal hosts")
    Index(repo, embedder=None).refresh()
    lock = FileLock(str(repo.path / ".cache" / "search.lock"), thread_local=False)  # released by a timer thread
    lock.acquire()
    try:
        second = repo.remember("Ansible inventory is generated from NetBox")
        index = Index(repo, embedder=None, lock_wait=0.2)
        started = time.perf_counter()
        hits = index.search("Ansible", mode="bm25")
        assert time.perf_counter() - started < 2
        assert ids(hits) == [first.id] and index.stale and "another gitmem process" in index.notice
        waiting = Index(repo, embedder=None, lock_wait=10)
        threading.Timer(0.3, lock.release).start()
        assert set(ids(waiting.search("Ansible", mode="bm25"))) == {first.id, second.id}
        assert not waiting.stale
    finally:
        if lock.is_locked:
            lock.release()


def test_bm25_search_does_not_load_numpy(filled: tuple[MemoryRepo, str]) -> None:
    repo, _pg = filled
    code = ("import sys; from gitmem.config import Config; from gitmem.store.memories import MemoryRepo; "
            "from gitmem.search.index import open_index; from pathlib import Path; "
            f"i = open_index(MemoryRepo(Config(repo=Path({str(repo.path)!r}))), embedder='auto'); "
            "print(i.search('PostgreSQL', mode='bm25')[0].id); "
            "print(','.join(m for m in ('numpy', 'onnxruntime', 'tokenizers', 'dulwich.porcelain') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "pg-decision" and out[1] == ""


def test_deleting_a_memory_updates_its_neighbours_context(repo: MemoryRepo) -> None:
    base = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
    repo.import_records([{"text": text, "id": f"t{i}", "source": "sess", "created": (base + timedelta(seconds=i))
                          .isoformat()} for i, text in enumerate(["alpha one", "bravo two", "charlie three"])])
    index = Index(repo, embedder=None)
    assert set(ids(index.search("bravo", mode="bm25"))) == {"t0", "t1", "t2"}  # t0 and t2 hold bravo as context
    repo.forget("t1", "wrong", purge=True)
    assert index.refresh().indexed == 2  # both neighbours lost "bravo" from their context
    assert ids(index.search("bravo", mode="bm25")) == []


def test_a_hit_carries_the_memory_as_stored(filled: tuple[MemoryRepo, str]) -> None:
    """Hits are rebuilt from the index's stored JSON: they must equal what the repository holds."""
    repo, pg = filled
    (hit,) = Index(repo, embedder=None).search("PostgreSQL JSON", k=1, mode="bm25")
    assert hit.id == pg and hit.memory == repo.get(pg) and hit.memory.to_dict() == repo.get(pg).to_dict()
    assert replace(hit.memory, importance=5).importance == 5 and hit.memory.importance == 4


def test_a_settled_index_notices_every_kind_of_head_move(repo: MemoryRepo) -> None:
    """Once the files naming HEAD are older than a timestamp tick, a search only stats them; commits by git,
    a branch switch and a reset must still show at the next search."""
    import time

    first = repo.remember("Use MySQL for the orders service")
    index = Index(repo, embedder=None)
    assert ids(index.search("orders", mode="bm25")) == [first.id]
    time.sleep(0.1)
    assert ids(index.search("orders", mode="bm25")) == [first.id]  # settled: the cheap path from here on
    assert index._fresh is not None
    path = repo.path / first.path
    path.write_text(path.read_text("utf-8").replace("Use MySQL", "Use CockroachDB"), "utf-8")
    git(repo.path, "commit", "-qam", "hand edit")
    assert ids(index.search("CockroachDB", mode="bm25")) == [first.id]
    time.sleep(0.1)
    index.search("orders", mode="bm25")
    git(repo.path, "checkout", "-q", "-b", "other", "HEAD~1")  # HEAD now names another branch
    assert ids(index.search("CockroachDB", mode="bm25")) == [] and ids(index.search("MySQL", mode="bm25")) == [first.id]
    time.sleep(0.1)
    index.search("orders", mode="bm25")
    git(repo.path, "checkout", "-q", "main")
    git(repo.path, "reset", "-q", "--hard", "HEAD~1")
    assert ids(index.search("CockroachDB", mode="bm25")) == []


def test_a_search_that_must_not_embed_ranks_new_memories_by_bm25(repo: MemoryRepo) -> None:
    """The hooks' searches embed their question only: memories without a vector yet are still found (by BM25) and
    counted, and the warm-up's search, which may embed, gives them their vectors."""
    from gitmem.search.index import Index

    repo.import_records([*({"text": t, "id": f"m{i:02d}"} for i, t in enumerate(FILLER)),
                         {"text": "Releases deploy to fly.io with a blue-green switch", "id": "deploy"}])
    fake = FakeEmbedder()
    hook = Index(repo, embedder=fake, embed_missing=False)
    assert ids(hook.search("how do releases deploy", k=3))[0] == "deploy"
    assert fake.documents == 0 and hook.vectors_missing == len(FILLER) + 1
    warm = Index(repo, embedder=fake)  # the warm-up
    assert warm.embed() == len(FILLER) + 1 and warm.embed() == 0
    assert ids(warm.search("how do releases deploy", k=3))[0] == "deploy" and warm.vectors_missing == 0
    embedded = fake.documents
    later = Index(repo, embedder=fake, embed_missing=False)
    assert ids(later.search("how do releases deploy", k=3))[0] == "deploy"
    assert fake.documents == embedded and later.vectors_missing == 0
