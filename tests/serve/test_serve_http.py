"""The HTTP API in-process (ASGI test client), once against a real uvicorn process, and fuzzed from its OpenAPI
document by schemathesis: the contract of ``gitmem serve``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi.testclient import TestClient

from gitmem.errors import ValidationError
from gitmem.serve.http import create_app
from gitmem.serve.service import MemoryService
from gitmem.store.memories import MemoryRepo
from tests.helpers import assert_clean, design_note, git, run_cli
from tests.serve.live import free_port, running_server

PROBLEM = "application/problem+json"


@pytest.fixture
def client(repo: MemoryRepo) -> Iterator[TestClient]:
    with TestClient(create_app(MemoryService(repo))) as test_client:  # type: ignore[arg-type]
        yield test_client


def store(client: TestClient, text: str, **fields: Any) -> dict[str, Any]:
    response = client.post("/memory/store", json={"text": text, **fields})
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_health_says_ok_and_names_the_repository(client: TestClient, repo_path: Path) -> None:
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert response.json()["repo"] == str(repo_path.resolve())


def test_store_commits_one_memory_with_secrets_redacted(client: TestClient, repo_path: Path) -> None:
    before = git(repo_path, "rev-list", "--count", "HEAD").strip()
    body = store(client, "Deploy key is ghp_abcdefghijklmnopqrstuvwxyz0123456789, deploy with make ship",
                 category="constraint", importance=5, tags=["deploy"], why="the CI user has no rights")
    assert body["redacted"] == ["github-token"]
    assert git(repo_path, "rev-parse", "HEAD").strip() == body["commit"]
    assert int(git(repo_path, "rev-list", "--count", "HEAD")) == int(before) + 1
    assert "Gitmem-Op: add" in git(repo_path, "log", "-1", "--format=%B")
    stored = (repo_path / body["path"]).read_text()
    assert "ghp_" not in stored and "make ship" in stored and "importance: 5" in stored
    assert_clean(repo_path)


def test_store_refuses_unknown_fields_and_bad_values_as_problem_details(client: TestClient) -> None:
    unknown = client.post("/memory/store", json={"text": "x", "colour": "blue"})
    assert unknown.status_code == 422 and unknown.headers["content-type"] == PROBLEM
    assert "colour" in unknown.json()["detail"]
    empty = client.post("/memory/store", json={"text": "   "})
    assert empty.status_code == 422
    problem = empty.json()
    assert problem["status"] == 422 and problem["title"] == "Unprocessable Entity"
    cli = run_cli("remember", "   ")
    assert f"gitmem: error: {problem['detail']} ({problem['hint']})" in cli.err  # the CLI's message, word for word


@pytest.mark.parametrize("field", ["tags", "why", "how", "name"])
def test_a_lone_surrogate_in_any_field_is_a_422_naming_it(client: TestClient, repo_path: Path, field: str) -> None:
    """Half of a cut emoji in ``text`` was refused with 422; in the other fields it failed at the commit: 500, a
    traceback logged twice."""
    head = git(repo_path, "rev-parse", "HEAD").strip()
    value = '["\\ud83d"]' if field == "tags" else '"\\udfff"'  # JSON escapes: json= would refuse to encode them
    raw = '{"text": "ok", "' + field + '": ' + value + "}"
    bad = client.post("/memory/store", content=raw.encode(), headers={"content-type": "application/json"})
    assert bad.status_code == 422 and bad.headers["content-type"] == PROBLEM, bad.text
    assert f"'{field}' is not valid Unicode text" in bad.json()["detail"]
    assert git(repo_path, "rev-parse", "HEAD").strip() == head


def test_the_list_refuses_a_project_that_is_a_path_as_every_route_does(client: TestClient) -> None:
    bad = client.get("/memory", params={"project": "../.."})
    assert bad.status_code == 422 and "path separator" in bad.json()["detail"]  # it answered 200 []
    assert client.get("/memory", params={"project": "shop"}).status_code == 200


def test_store_refuses_a_project_that_is_a_path_as_the_wiki_does(client: TestClient, repo_path: Path) -> None:
    head = git(repo_path, "rev-parse", "HEAD").strip()
    bad = client.post("/memory/store", json={"text": "Use ruff", "project": "../../evil"})
    assert bad.status_code == 422 and bad.headers["content-type"] == PROBLEM
    assert bad.json()["detail"].startswith("project '../../evil' contains a path separator")
    assert git(repo_path, "rev-parse", "HEAD").strip() == head
    assert store(client, "Use ruff", project="shop-api")["path"].startswith("memories/shop-api/")


def test_store_refuses_a_global_scope_with_a_project_as_every_door_does(client: TestClient, repo: MemoryRepo,
                                                                         repo_path: Path) -> None:
    """The CLI refuses --scope global --project; the API used to store a global memory and drop the project."""
    head = git(repo_path, "rev-parse", "HEAD").strip()
    both = client.post("/memory/store", json={"text": "Use ruff", "scope": "global", "project": "shop"})
    assert both.status_code == 422 and both.headers["content-type"] == PROBLEM
    assert both.json()["detail"] == "scope global and project contradict each other"
    assert both.json()["hint"] == "pass only one of them"
    assert git(repo_path, "rev-parse", "HEAD").strip() == head
    with pytest.raises(ValidationError, match="contradict"):  # the service both the API and MCP call
        MemoryService(repo).remember("Use ruff", scope="global", project="shop", reuse_same_text=True)
    assert store(client, "Use ruff", scope="global", project="  ")["path"].startswith("memories/global/")


@pytest.mark.parametrize("importance", [True, False, "3", 3.5, "high"])
def test_store_takes_importance_as_a_json_integer_only(client: TestClient, repo_path: Path, importance: Any) -> None:
    head = git(repo_path, "rev-parse", "HEAD").strip()
    refused = client.post("/memory/store", json={"text": "Pin the CI image", "importance": importance})
    assert refused.status_code == 422 and refused.headers["content-type"] == PROBLEM
    assert refused.json()["detail"].startswith("importance: ")
    assert git(repo_path, "rev-parse", "HEAD").strip() == head


def test_retrieve_ranks_and_cuts_to_the_token_budget(client: TestClient) -> None:
    store(client, "Use PostgreSQL for every new service database; MySQL is not allowed", category="decision")
    store(client, "The database backups run nightly at 02:00 UTC from the ops host", category="background")
    store(client, "Prefer tabs over spaces in Makefiles", category="preference")
    full = client.get("/memory/retrieve", params={"query": "which database should a new service use",
                                                  "top_k": 3, "explain": True}).json()
    assert "PostgreSQL" in full["memories"][0]["text"]
    assert full["tokens"] == sum(m["tokens"] for m in full["memories"])
    assert all("explanation" in m and "bm25" in m["explanation"] for m in full["memories"])
    scores = [m["score"] for m in full["memories"]]
    assert scores == sorted(scores, reverse=True)
    first = full["memories"][0]["tokens"]
    cut = client.get("/memory/retrieve", params={"query": "which database should a new service use",
                                                 "top_k": 3, "token_budget": first}).json()
    assert cut["tokens"] <= first and cut["left_out"] >= 1
    assert [m["id"] for m in cut["memories"]][:1] == [full["memories"][0]["id"]]
    assert "explanation" not in cut["memories"][0]
    # a project no write accepts is refused here too (it found nothing, with no word why)
    odd = client.get("/memory/retrieve", params={"query": "database", "project": "../../x"})
    assert odd.status_code == 422 and "path separator" in odd.json()["detail"]



def test_retrieve_says_what_replaced_a_past_state(client: TestClient, repo: MemoryRepo) -> None:
    """A question about the past brings back a replaced memory: the row says what replaced it, so a client does
    not take it for the current state."""
    old = store(client, "The shop database is MySQL 5.7")["id"]
    new = store(client, "The shop database moved from MySQL to PostgreSQL 16")["id"]
    repo.forget(old, f"superseded by {new}", superseded_by=new)
    rows = client.get("/memory/retrieve", params={"query": "which database did the shop use first"}).json()["memories"]
    by_id = {row["id"]: row for row in rows}
    assert by_id[old]["superseded_by"] == new
    assert "superseded_by" not in by_id[new]

def test_get_history_and_deprecate_through_the_api(client: TestClient, repo_path: Path) -> None:
    memory_id = store(client, "Release branches are cut on Mondays")["id"]
    assert client.get(f"/memory/{memory_id}").json()["text"] == "Release branches are cut on Mondays"
    refused = client.delete(f"/memory/{memory_id}")
    assert refused.status_code == 422 and "reason" in refused.json()["detail"]
    done = client.delete(f"/memory/{memory_id}", params={"reason": "we release continuously now"})
    assert done.status_code == 200 and done.json()["deprecated"] is True
    assert "Gitmem-Op: deprecate" in git(repo_path, "log", "-1", "--format=%B")
    assert "we release continuously now" in git(repo_path, "log", "-1", "--format=%B")
    history = client.get(f"/memory/{memory_id}/history").json()["history"]
    assert [h["op"] for h in history] == ["deprecate", "add"]
    assert history[0]["source"] == "api" and history[0]["commit"] == done.json()["commit"]
    assert "+deprecated: true" in history[0]["diff"] and "-deprecated: false" in history[0]["diff"]
    again = client.delete(f"/memory/{memory_id}", params={"reason": "twice"})
    assert again.status_code == 422 and "already deprecated" in again.json()["detail"]
    assert client.post(f"/memory/{memory_id}/restore").json()["deprecated"] is False
    assert_clean(repo_path)


def test_an_id_with_a_slash_or_a_space_is_served_as_stored(client: TestClient) -> None:
    """Ids are any printable text (an import keeps its source's ids): every route of one memory finds them."""
    for memory_id in ("team/deploy window", "mem0:4f2a/7"):
        assert store(client, "Deploys happen on Thursdays", id=memory_id)["id"] == memory_id
        path = "/memory/" + quote(memory_id)
        assert client.get(path).json()["id"] == memory_id
        assert [h["op"] for h in client.get(path + "/history").json()["history"]] == ["add"]
        assert client.delete(path, params={"reason": "moved"}).json()["deprecated"] is True
        assert client.post(path + "/restore").json()["deprecated"] is False


def test_an_id_ending_in_a_verb_is_the_memory_not_the_verb(client: TestClient, repo: MemoryRepo) -> None:
    """Ids may hold "/": q/history and r/restore are memories, read as such, and their verbs still work."""
    store(client, "The q queue drains nightly", id="q/history")
    store(client, "Restore drills run monthly", id="r/restore")
    client.delete("/memory/r%2Frestore", params={"reason": "moved to the ops wiki"})
    for encoded in ("q%2Fhistory", "q%2fhistory", "q/history"):  # the slash sent encoded, or not
        got = client.get(f"/memory/{encoded}")
        assert got.status_code == 200, got.text
        assert got.json()["id"] == "q/history" and got.json()["text"] == "The q queue drains nightly"
    assert [h["op"] for h in client.get("/memory/q%2Fhistory/history").json()["history"]] == ["add"]
    assert [h["op"] for h in client.get("/memory/q/history/history").json()["history"]] == ["add"]
    missing = client.get("/memory/z%2Fhistory")  # encoded: the whole is the id, not the history of "z"
    assert missing.status_code == 404 and missing.json()["detail"] == "no memory with id 'z/history'"

    assert client.get("/memory/r%2Frestore").json()["deprecated"] is True
    refused = client.post("/memory/r%2Frestore")  # a memory takes no POST; "r" is not restored
    assert refused.status_code == 405 and refused.headers["content-type"] == PROBLEM
    assert refused.headers["allow"] == "GET, DELETE"
    assert refused.json()["hint"] == "to restore it: POST /memory/r%2Frestore/restore"
    assert repo.get("r/restore").deprecated
    assert client.post("/memory/r%2Frestore/restore").json() == {
        "id": "r/restore", "deprecated": False, "reason": "", "commit": git(repo.path, "rev-parse", "HEAD").strip()}
    plain = store(client, "Plain memory", id="r")["id"]  # a literal /restore after an id is the verb
    client.delete(f"/memory/{plain}", params={"reason": "x"})
    assert client.post("/memory/r/restore").json()["id"] == "r" and not repo.get("r").deprecated


def test_unknown_ids_are_404_problems_with_the_cli_message(client: TestClient) -> None:
    missing = client.get("/memory/no-such-memory")
    assert missing.status_code == 404 and missing.headers["content-type"] == PROBLEM
    assert missing.json()["detail"] == "no memory with id 'no-such-memory'"
    assert missing.json()["hint"] == "list ids with: gitmem list"
    assert client.get("/memory/no-such-memory/history").status_code == 404


def test_recall_returns_the_session_block(client: TestClient, tmp_path: Path) -> None:
    made = store(client, "Always run the linters before pushing", category="constraint", importance=5)
    project = tmp_path / "code"
    project.mkdir()
    block = client.get("/recall", params={"cwd": str(project), "query": "linters pushing"}).json()
    # a rule of importance 5 is among the essentials a session in any project starts with
    assert block["text"].startswith("## Essentials") and f"Always run the linters before pushing (id: {made['id']})" \
        in block["text"]
    assert block["tokens"] > 0
    assert made["id"] in block["ids"]  # the Essentials are in the block, so in its ids (only the hits were)
    assert client.get("/recall", params={"cwd": str(tmp_path / "nowhere")}).status_code == 422


def test_the_prompt_block_says_which_part_of_a_long_memory_it_showed(client: TestClient, repo: MemoryRepo) -> None:
    """``/hook/prompt`` answers with the part of a long memory it showed, and shows it no more once told the
    session has it (``seen_parts``), as the prompt hook does in-process."""
    note = repo.remember(design_note(), project="shop", category="decision")
    ask = {"prompt": "Fix the Stripe webhook verification", "project": "shop"}
    first = client.post("/hook/prompt", json=ask).json()
    assert first["ids"] == [] and len(first["parts"]) == 1 and first["parts"][0][0] == note.id
    assert "signing secret" in first["text"] and f"part {first['parts'][0][1]} of" in first["text"]
    again = client.post("/hook/prompt", json={**ask, "seen_parts": first["parts"]}).json()
    assert again == {"text": "", "ids": [], "parts": []}


def test_a_token_is_required_on_every_request_when_set(repo: MemoryRepo) -> None:
    client = TestClient(create_app(MemoryService(repo), token="s3cret"))  # type: ignore[arg-type]
    denied = client.get("/health")
    assert denied.status_code == 401 and denied.headers["www-authenticate"] == "Bearer"
    assert client.get("/health", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/health", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert client.post("/memory/store", json={"text": "x"}).status_code == 401


def test_big_bodies_are_refused_with_413(repo: MemoryRepo, repo_path: Path) -> None:
    client = TestClient(create_app(MemoryService(repo), max_body=4096))  # type: ignore[arg-type]
    before = git(repo_path, "rev-parse", "HEAD")
    response = client.post("/memory/store", json={"text": "x" * 10_000})
    assert response.status_code == 413 and response.headers["content-type"] == PROBLEM

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit applies while the body streams in
        yield b'{"text": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    streamed = client.post("/memory/store", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413
    assert git(repo_path, "rev-parse", "HEAD") == before


def test_no_cors_headers_and_no_cdn_docs(client: TestClient) -> None:
    response = client.get("/health", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in response.headers
    assert client.get("/docs").status_code == 404
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/memory/store", "/memory/retrieve", "/memory/{memory_id}", "/memory/{memory_id}/history",
            "/recall", "/health"} <= set(paths)
    assert "delete" in paths["/memory/{memory_id}"]


def test_schemathesis_finds_no_server_error(repo: MemoryRepo) -> None:
    """Every operation of the OpenAPI document, with valid and invalid inputs: never a 5xx."""
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from schemathesis import GenerationMode

    repo.remember("Use PostgreSQL for new services", id="use-postgresql")
    app = create_app(MemoryService(repo))  # type: ignore[arg-type]
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    failures: list[str] = []
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        @settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(case=schema.as_strategy(generation_mode=mode))
        def check(case: Any) -> None:
            response = case.call()
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} {case.query} -> {response.status_code}: "
                                f"{response.text[:200]}")

        check()
    assert not failures, "\n".join(failures[:5])


def test_a_real_server_on_a_loopback_port(repo_path: Path) -> None:
    with running_server(repo_path) as (proc, base):
        marker = json.loads((repo_path / "local" / "server.json").read_text())
        assert marker["url"] == base and marker["pid"] == proc.pid
        created = httpx.post(f"{base}/memory/store", json={"text": "Staging runs on port 8443"}).json()
        assert git(repo_path, "rev-parse", "HEAD").strip() == created["commit"]
        found = httpx.get(f"{base}/memory/retrieve", params={"query": "staging port"}).json()
        assert found["memories"][0]["id"] == created["id"]
    assert not (repo_path / "local" / "server.json").exists()
    out = (proc.stderr.read() if proc.stderr else b"").decode()
    assert "Staging runs" not in out  # memory text is never logged


def test_serving_beyond_loopback_needs_a_token(repo_path: Path) -> None:
    result = run_cli("--repo", str(repo_path), "serve", "--host", "0.0.0.0", "--port", str(free_port()))
    assert result.code != 0
    assert "refusing to serve on 0.0.0.0 without a token" in result.err and "Traceback" not in result.err
