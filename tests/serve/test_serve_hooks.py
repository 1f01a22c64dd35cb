"""The hooks ask a running ``gitmem serve`` for their memory blocks and inject the same text as without it; a
wrong token or a server that died without removing its record costs one log line and the in-process path."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitmem.api import Repository
from gitmem.config import Config
from tests.helpers import PROJECT, bm25_only, code_repo, context_of, design_note, hook, hook_env, payload
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
    (repo_path / ".cache" / "recall-cache.json").unlink(missing_ok=True)
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


def test_the_parts_of_a_long_memory_a_session_was_shown_go_through_a_running_server(repo_path: Path,
                                                                                    code: Path) -> None:
    """Served, as in-process: session start records the part of a long rule it showed, a prompt brings another
    part and records it, the same prompt again brings nothing of the note; ids a hand-edited sessions file holds
    that the server would refuse are left out of the request rather than costing the prompt its memories."""
    bm25_only(repo_path, "[recall]\nbudget = 500\n")  # a small session-start budget
    guide = Repository(Config(repo=repo_path)).remember(design_note(), project=PROJECT, category="constraint",
                                                        importance=5)
    env = {**hook_env(repo_path, GITMEM_SERVER_TIMEOUT="10"), "GITMEM_TOKEN": TOKEN}
    sessions = repo_path / "local" / "sessions.json"

    def entry() -> dict[str, Any]:
        found: dict[str, Any] = json.loads(sessions.read_text("utf-8"))["sessions"]["sess-1"]
        return found

    def ask() -> str:
        done = hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt=PROMPT), env, cwd=code)
        assert done.returncode == 0, done.stderr
        return context_of(done.stdout, "UserPromptSubmit") if done.stdout else ""

    with running_server(repo_path, env={"GITMEM_TOKEN": TOKEN}, token=TOKEN):
        hook("session-start", payload("SessionStart", code, source="startup"), env, cwd=code)
        assert entry()["parts"] == [[guide.id, 1]] and guide.id not in entry().get("recalled", [])
        junk = json.loads(sessions.read_text("utf-8"))
        junk["sessions"]["sess-1"]["recalled"] = ["x" * 300, 5]
        junk["sessions"]["sess-1"]["parts"] += [[1, 2], ["y" * 300, 1], [guide.id, True], [guide.id, 0]]
        sessions.write_text(json.dumps(junk), "utf-8")
        first = ask()
        shown = re.findall(rf"\(id: {guide.id}, part (\d+) of", first)
        assert "signing secret" in first and len(shown) == 1 and shown[0] != "1"
        assert [guide.id, int(shown[0])] in entry()["parts"]
        assert guide.id not in ask()
    assert _log(repo_path) == []  # every hook was answered by the server


def test_a_second_server_that_stops_puts_the_first_ones_record_back(repo_path: Path) -> None:
    """Two servers of one repository: the second overwrote the first's ``local/server.json`` and deleted it when it
    stopped, so the hooks quietly stopped using the first, still running. A record whose server is gone is not put
    back."""
    import sys

    from gitmem.serve.runner import forget_record, record

    first = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        path = repo_path / "local" / "server.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps({"url": "http://127.0.0.1:1111", "pid": first.pid}))
        marker, before = record(repo_path, "http://127.0.0.1:2222")
        assert json.loads(path.read_text())["url"] == "http://127.0.0.1:2222"
        forget_record(marker, before)
        assert json.loads(path.read_text()) == {"url": "http://127.0.0.1:1111", "pid": first.pid}
    finally:
        first.kill()
        first.wait()
    marker, before = record(repo_path, "http://127.0.0.1:3333")
    forget_record(marker, before)  # the first server is gone: nothing to put back
    assert not path.exists()
