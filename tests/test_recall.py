"""Recall: the block a session gets, built from the code project, grouped, within its token budget."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gitmem.api import Repository
from gitmem.config import Config, EmbeddingConfig, RecallConfig
from gitmem.recall import recall
from gitmem.store.layout import init_repo
from gitmem.store.usage import read_usage
from gitmem.text.records import replace
from gitmem.text.tokens import count_tokens
from tests.helpers import design_note, git, run_cli

PROJECT = "github.com-acme-shop"


@pytest.fixture
def code(tmp_path: Path) -> Path:
    path = tmp_path / "shop"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "remote", "add", "origin", "git@github.com:acme/shop.git")
    for subject in ("Add payment retries", "Use PostgreSQL for orders", "Fix flaky checkout test"):
        git(path, "commit", "-q", "--allow-empty", "-m", subject)
    return path


@pytest.fixture
def mem(tmp_path: Path) -> Repository:
    path = tmp_path / "mem"
    init_repo(path)
    return Repository(Config(repo=path, embedding=EmbeddingConfig(model="none")))


def test_block_groups_by_category_with_type_tags(mem: Repository, code: Path) -> None:
    mem.remember("Orders live in PostgreSQL, not MySQL", project=PROJECT, category="decision", importance=4)
    mem.remember("Never retry payments more than 3 times", project=PROJECT, category="constraint", importance=5)
    mem.remember("Checkout tests are flaky under load; rerun with pytest -x", project=PROJECT)
    mem.remember("Payment retries for another project", project="github.com-other-thing", category="decision")
    gone = mem.remember("Orders used to live in MySQL", project=PROJECT, category="decision")
    mem.forget(gone.id, "moved to PostgreSQL")
    result = recall(mem, cwd=code, k=10)
    assert result.project == PROJECT
    assert result.query.startswith("shop Fix flaky checkout test")
    text = result.text
    # the constraint is an essential (always there, first); the rest is relevant to the commits, by category
    assert text.index("## Essentials") < text.index("Never retry payments") < text.index("## Relevant")
    assert text.index("## Relevant") < text.index("### Decisions") < text.index("### Background")
    assert "- [project, github.com-acme-shop] Never retry payments more than 3 times" in text
    assert "another project" not in text and "used to live in MySQL" not in text


def test_budget_is_never_exceeded_and_capped(mem: Repository, code: Path) -> None:
    mem.import_records([*({"text": f"Payment rule {i}: retries, PostgreSQL orders and checkout tests need care "
                                   f"in module {i}", "project": PROJECT} for i in range(60)),
                        *({"text": f"Unrelated note {i} about gardening and tomatoes"} for i in range(140))])
    sizes = []
    for budget in (150, 400, 900):
        result = recall(mem, cwd=code, k=60, budget=budget)
        assert result.hits and result.tokens <= budget and count_tokens(result.text) <= budget
        assert result.left_out > 0
        sizes.append(len(result.hits))
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    tiny = recall(mem, cwd=code, k=60, budget=20)  # not even one memory fits: nothing, rather than too much
    assert tiny.text == "" and tiny.tokens == 0
    assert recall(mem, cwd=code, k=5, budget=100_000).budget == 3000  # the hard cap


def test_a_long_rules_document_does_not_take_the_other_essentials_place(mem: Repository, code: Path) -> None:
    """A must-follow memory too long for the budget is shown by its first part (the id fetches the rest); the
    essentials after it still come. Whole when it fits."""
    guide = mem.remember(design_note() * 3, project=PROJECT, category="constraint", importance=5)
    mem.remember("Never retry payments more than 3 times", project=PROJECT, category="constraint", importance=5)
    result = recall(mem, cwd=code, budget=500)
    assert "Never retry payments" in result.text and result.tokens <= 500
    line = next(line for line in result.text.splitlines() if guide.id in line)
    assert re.search(rf"\(id: {re.escape(guide.id)}, part 1 of \d+\)$", line)
    assert "billing subsystem" in line and "refunds subsystem" not in line
    whole, parts = result.given()  # what a session records: the guide by its part, the other rule whole
    assert parts == [(guide.id, 1)] and guide.id not in whole and len(whole) == 1
    printed = run_cli("--repo", str(mem.path), "recall", "--cwd", str(code), "--budget", "500", "--json")
    assert json.loads(printed.out)["parts"] == [[guide.id, 1]], printed.err
    roomy = recall(mem, cwd=code, budget=3000)  # the hard cap: the guide (~1,900 tokens) fits whole
    assert "part 1 of" not in roomy.text and " ".join((design_note() * 3).split()) in roomy.text


def test_dynamic_budget_scales_with_the_query(mem: Repository, code: Path) -> None:
    dynamic = Repository(replace(mem.config, recall=RecallConfig(dynamic_budget=True)))
    short = recall(dynamic, cwd=code, query="orders")
    long = recall(dynamic, cwd=code, query=" ".join(f"topic{i}" for i in range(20)))
    assert short.budget == 500 + (2000 - 500) // 12 and long.budget == 2000


def test_recall_counts_usage_without_committing(mem: Repository, code: Path) -> None:
    memory = mem.remember("Orders live in PostgreSQL", project=PROJECT, category="decision")
    head = git(mem.path, "rev-parse", "HEAD")
    recall(mem, cwd=code)
    recall(mem, cwd=code)
    assert read_usage(mem.path)[memory.id]["count"] == 2
    assert git(mem.path, "rev-parse", "HEAD") == head
    assert git(mem.path, "status", "--porcelain") == ""


def test_recall_command(mem: Repository, code: Path) -> None:
    mem.remember("Orders live in PostgreSQL", project=PROJECT, category="decision")
    result = run_cli("--repo", str(mem.path), "recall", "--cwd", str(code), "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["project"] == PROJECT and "Orders live in PostgreSQL" in data["text"] and data["tokens"] <= 2000
    bad = run_cli("--repo", str(mem.path), "recall", "--budget", "0")
    assert bad.code != 0 and "Traceback" not in bad.err
    asked = run_cli("--repo", str(mem.path), "recall", "--cwd", str(code), "--query", "orders database")
    assert "## Relevant memories (for: orders database)" in asked.out


def test_recall_says_how_many_rules_it_left_out_and_how_to_find_them(mem: Repository, code: Path) -> None:
    for i in range(30):
        mem.remember(f"Rule {i}: never deploy service {i} on a Friday without a rollback plan", project=PROJECT,
                     category="constraint", importance=5)
    result = run_cli("--repo", str(mem.path), "recall", "--cwd", str(code), "--budget", "300")
    more = json.loads(run_cli("--repo", str(mem.path), "recall", "--cwd", str(code), "--budget", "300",
                              "--json").out)["more"]
    assert more > 0 and f"{more} more memories of this project and global ones left out; find them with: " \
        f'gitmem search "<words>" or gitmem list --project {PROJECT}' in result.err
    # the lists it names show them (a search by the block's own query, the project's name here, found none)
    listed = run_cli("--repo", str(mem.path), "list", "--project", PROJECT, "--json")
    assert len(json.loads(listed.out)) == 30


def test_a_secret_in_a_commit_subject_is_not_in_the_query_shown_or_cached(mem: Repository, code: Path) -> None:
    """The recall query names the last commit subjects: one holding a key went as it was into `recall --json` and
    the hooks' cache (.cache/recall-cache.json)."""
    key = "AKIAIOSFODNN7EXAMPLE"
    git(code, "commit", "-q", "--allow-empty", "-m", f"Rotate the leaked key {key}")
    mem.remember("Payment retries back off exponentially", project=PROJECT)
    shown = json.loads(run_cli("--repo", str(mem.path), "recall", "--cwd", str(code), "--json").out)
    assert key not in shown["query"] and "[REDACTED:aws-access-key]" in shown["query"]
    assert "checkout" in shown["query"]  # the other subjects as they are


def test_an_essential_that_did_not_fit_the_budget_is_counted_as_left_out(mem: Repository, code: Path) -> None:
    """With one rule and a 10-token budget, recall printed "no memories for project …" and counted nothing."""
    mem.remember("Never deploy on a Friday without a rollback plan", project=PROJECT, category="constraint",
                 importance=4)
    shown = json.loads(run_cli("--repo", str(mem.path), "recall", "--cwd", str(code), "--budget", "10",
                               "--json").out)
    assert shown["ids"] == [] and shown["left_out"] == 1
    said = run_cli("--repo", str(mem.path), "recall", "--cwd", str(code), "--budget", "10")
    assert "nothing fit the 10-token budget: 1 memory" in said.err


def test_block_count_is_the_tokenizers_count_and_a_warm_cache_needs_no_tokenizer(mem: Repository,
                                                                                  tmp_path: Path) -> None:
    """The per-line sum equals counting the whole block; a second recall answers every count from the cache."""
    from gitmem.recall import build_block
    from gitmem.text.tokens import TokenCounter

    texts = ["Use pytest -x for the shop tests", "我们决定使用 PostgreSQL 而不是 MySQL", "Deploys go through fly.io"]
    for text in texts:
        mem.remember(text, category="decision" if "决定" in text else "background")
    hits = mem.search("shop tests PostgreSQL deploys 决定", k=10)
    cache = tmp_path / "counts.json"
    counter = TokenCounter(cache)
    text, used, tokens, _ = build_block(hits, 2000, "## Memories", counter)
    counter.save()
    assert len(used) == 3 and tokens == count_tokens(text)
    again = TokenCounter(cache)
    assert build_block(hits, 2000, "## Memories", again)[2] == tokens and not again.dirty
