"""The hooks ask a running ``gitmem serve`` for their memory blocks and inject the same text as without it; a
wrong token or a server that died without removing its record costs one log line and the in-process path."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitmem.api import Repository
from gitmem.config import Config
from tests.helpers import PROJECT, bm25_only, code_repo, context_of, hook, hook_env, payload
from tests.serve.live import running_server

TOKEN = "s3cret-token"
PROMPT = "Fix the Stripe webhook verification failing in production"


@pytest.fixture
def code(tmp_path: Path) -> Path:
    return code_repo(tmp_path, "Start")


@pytest.fixture
def memories(repo_path: Path) -> Path:
    bm25_only(repo_path)  # a quick server start
    repo = Repository(Config(repo=repo_path))
    repo.remember("This project runs its tests with pytest -x; never use unittest", project=PROJECT,
                  category="constraint", importance=5)
    repo.remember("Stripe webhooks are verified with the signing secret from settings.STRIPE_WEBHOOK_KEY",
                  project=PROJECT, category="decision")
    repo.remember("Docker images are tagged with the short commit id", project=PROJECT, category="decision")
    return repo_path


@pytest.fixture
def server(memories: Path) -> Iterator[subprocess.Popen[bytes]]:
    with running_server(memories, env={"GITMEM_TOKEN": TOKEN}, token=TOKEN) as (proc, _):
        yield proc


def _session(session: str, code: Path, env: dict[str, str], repo_path: Path) -> tuple[str, str]:
    """(what session start injects, what the prompt brings) for a fresh session, the recall cache emptied."""
    (repo_path / "local" / "recall-cache.json").unlink(missing_ok=True)
    start = hook("session-start", payload("SessionStart", code, session, source="startup"), env, cwd=code)
    assert start.returncode == 0, start.stderr
    prompt = hook("user-prompt-submit", payload("UserPromptSubmit", code, session, prompt=PROMPT), env, cwd=code)
    assert prompt.returncode == 0, prompt.stderr
    return context_of(start.stdout), context_of(prompt.stdout, "UserPromptSubmit")


def _log(repo_path: Path) -> list[str]:
    path = repo_path / "local" / "gitmem.log"
    return [line for line in path.read_text("utf-8").splitlines() if "working in-process" in line] \
        if path.exists() else []


def test_the_hooks_inject_the_same_with_and_without_a_running_server(
        memories: Path, code: Path, server: subprocess.Popen[bytes]) -> None:
    # a busy test machine must not turn the served path into a fallback
    base = hook_env(memories, GITMEM_SERVER_TIMEOUT="10")
    record = memories / "local" / "server.json"
    served = _session("served", code, {**base, "GITMEM_TOKEN": TOKEN}, memories)
    assert _log(memories) == []  # the server answered both hooks
    assert "pytest -x" in served[0] and "gitmem search" in served[0]
    assert "signing secret" in served[1] and "Docker" not in served[1]

    no_token = _session("no-token", code, base, memories)  # the server refuses: in-process, one line per hook
    assert no_token == served
    refused = _log(memories)
    assert len(refused) == 2 and all("HTTP 401" in line for line in refused)

    kept = record.read_text("utf-8")
    server.terminate()
    server.wait(timeout=20)
    record.write_text(kept, "utf-8")  # as a server killed before it could remove its record leaves it
    stale = _session("stale", code, {**base, "GITMEM_TOKEN": TOKEN}, memories)
    assert stale == served
    lines = _log(memories)[2:]
    assert len(lines) == 2 and all("ProcessLookupError" in line for line in lines)
    assert json.loads(kept)["pid"] == server.pid

    record.unlink()
    assert _session("no-server", code, base, memories) == served
    assert len(_log(memories)) == 4  # no record, no server: not worth a line
