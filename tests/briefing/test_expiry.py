"""An expired memory (its ``expires`` has passed, ``gc`` has not deprecated it yet) is never injected: not by the
session start's Relevant memories, not by a prompt, not by ``gitmem recall``; ``gitmem search`` still finds it."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path

import pytest

from gitmem.api import Repository
from gitmem.config import Config
from gitmem.store import document as docs
from tests.helpers import PROJECT, bm25_only, code_repo, context_of, hook, hook_env, payload, run_cli

EXPIRED = "Staging kiwi freeze: no kiwi deploys while the kiwi migration runs"
LIVE = "Kiwi deploys go through the kiwi pipeline with a canary first"


def _when(days: float) -> str:
    return docs.format_time(docs.utcnow() + timedelta(days=days))


@pytest.fixture
def code(tmp_path: Path) -> Path:
    return code_repo(tmp_path, "Kiwi deploy pipeline")


@pytest.fixture
def mem(repo_path: Path) -> Repository:
    bm25_only(repo_path)
    repo = Repository(Config(repo=repo_path))
    repo.import_records([
        {"id": "kiwi-freeze", "text": EXPIRED, "project": PROJECT, "category": "decision", "expires": _when(-1)},
        {"id": "kiwi-pipeline", "text": LIVE, "project": PROJECT, "category": "decision", "expires": _when(30)},
    ])
    return repo


def test_recall_leaves_out_an_expired_memory(mem: Repository, code: Path) -> None:
    result = mem.recall(cwd=code, query="kiwi deploys kiwi migration")
    assert [h.id for h in result.hits] == ["kiwi-pipeline"]
    assert EXPIRED not in result.text and LIVE in result.text
    # with an earlier ``now``, the same memory has not expired yet and comes back
    earlier = mem.recall(cwd=code, query="kiwi deploys kiwi migration", now=docs.utcnow() - timedelta(days=2))
    assert "kiwi-freeze" in [h.id for h in earlier.hits]


def test_the_recall_command_and_the_hooks_inject_no_expired_memory_but_search_finds_it(
        mem: Repository, code: Path) -> None:
    env = hook_env(mem.path)
    shown = run_cli("recall", "--cwd", str(code), "--query", "kiwi deploys kiwi migration", "--json", env=env)
    assert shown.code == 0, shown.err
    data = json.loads(shown.out)
    assert LIVE in data["text"] and EXPIRED not in data["text"]
    started = hook("session-start", payload("SessionStart", code, source="startup"), env, cwd=code)
    assert EXPIRED not in context_of(started.stdout) and LIVE in context_of(started.stdout)
    # another session, so that what the session start showed is not left out as seen
    asked = hook("user-prompt-submit", payload("UserPromptSubmit", code, "sess-2", prompt="the kiwi migration and "
                                               "kiwi deploys"), env, cwd=code)
    assert asked.returncode == 0, asked.stderr
    prompt_text = context_of(asked.stdout, "UserPromptSubmit")
    assert LIVE in prompt_text and EXPIRED not in prompt_text
    # plain search is no injection: it still finds the memory until gc deprecates it (docs/store.md, expires)
    found = run_cli("search", "kiwi migration", "--json", env=env)
    assert found.code == 0, found.err
    assert "kiwi-freeze" in found.out


def test_expired_memories_ranked_first_do_not_take_the_places_of_live_ones(repo_path: Path, code: Path) -> None:
    bm25_only(repo_path)
    repo = Repository(Config(repo=repo_path))
    repo.import_records([
        *({"id": f"old-{i}", "text": f"Kiwi migration kiwi deploys kiwi freeze rule {i}", "project": PROJECT,
           "importance": 5, "category": "background", "expires": _when(-1)} for i in range(8)),
        {"id": "kiwi-pipeline", "text": LIVE, "project": PROJECT, "category": "decision"},
    ])
    result = repo.recall(cwd=code, query="kiwi migration kiwi deploys kiwi freeze", k=1)
    assert [h.id for h in result.hits] == ["kiwi-pipeline"]


def test_a_cached_block_and_a_directive_stop_at_expiry(repo_path: Path, tmp_path: Path) -> None:
    """The session start's cached block is keyed on the repositories' HEADs, which do not move when a time passes:
    a block cached before a memory in it expired was served again, and a directive's expiry was never read."""
    code = code_repo(tmp_path, "Kiwi deploy pipeline")
    bm25_only(repo_path)
    repo = Repository(Config(repo=repo_path))
    soon = docs.format_time(docs.utcnow() + timedelta(seconds=4))
    repo.import_records([
        {"id": "kiwi-freeze", "text": "Kiwi deploy pipeline freeze this week", "project": PROJECT,
         "category": "decision", "expires": soon},
        {"id": "directive-kiwi", "text": "Always answer about kiwi in French", "project": PROJECT,
         "tags": ["directive"], "expires": soon},
    ])
    env = hook_env(repo_path)
    first = context_of(hook("session-start", payload("SessionStart", code, source="startup"), env, cwd=code).stdout)
    assert "freeze this week" in first and "in French" in first
    time.sleep(5)
    later = hook("session-start", payload("SessionStart", code, "sess-2", source="startup"), env, cwd=code).stdout
    text = context_of(later) if later else ""
    assert "freeze this week" not in text and "in French" not in text
