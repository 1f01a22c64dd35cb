"""The web viewer in-process (no browser): pages, forms, the token login, and what it refuses."""

from __future__ import annotations

from pathlib import Path

from conftest import git
from fastapi.testclient import TestClient

from gitmem.serve.http import create_app
from gitmem.serve.service import MemoryService
from gitmem.serve.ui import sparkline
from gitmem.store import MemoryRepo


def test_pages_and_the_deprecate_form(repo: MemoryRepo, repo_path: Path) -> None:
    memory = repo.remember("Never force-push to main", category="constraint", importance=5)
    client = TestClient(create_app(MemoryService(repo), ui=True))  # type: ignore[arg-type]
    assert client.get("/", follow_redirects=False).headers["location"] == "/ui/"
    listing = client.get("/ui/", params={"category": "constraint"})
    assert listing.status_code == 200 and "Never force-push to main" in listing.text
    assert "Never force-push" not in client.get("/ui/", params={"category": "preference"}).text
    assert client.get("/ui/static/style.css").headers["content-type"].startswith("text/css")
    assert "<script" not in listing.text and "://" not in listing.text  # no script, nothing from another host
    refused = client.post(f"/ui/memory/{memory.id}/deprecate", data={"reason": " "})
    assert refused.status_code == 422 and "a reason is required" in refused.text
    done = client.post(f"/ui/memory/{memory.id}/deprecate", data={"reason": "we use merge queues"},
                       follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == f"/ui/memory/{memory.id}"
    page = client.get(done.headers["location"]).text
    assert "deprecated: we use merge queues" in page and git(repo_path, "rev-parse", "HEAD")[:10] in page
    assert client.get("/ui/memory/nothing-here").status_code == 404


def test_cross_origin_posts_and_missing_tokens_are_refused(repo: MemoryRepo) -> None:
    memory = repo.remember("Use ruff for linting")
    client = TestClient(create_app(MemoryService(repo), ui=True))  # type: ignore[arg-type]
    evil = client.post(f"/ui/memory/{memory.id}/deprecate", data={"reason": "x"},
                       headers={"Origin": "https://evil.example"})
    assert evil.status_code == 403 and not repo.get(memory.id).deprecated
    locked = TestClient(create_app(MemoryService(repo), ui=True, token="t0ken"))  # type: ignore[arg-type]
    assert locked.get("/ui/", follow_redirects=False).headers["location"] == "/ui/login"
    assert locked.get("/ui/login").status_code == 200
    signed_in = locked.post("/ui/login", data={"token": "t0ken"})
    assert signed_in.status_code == 200 and "Use ruff for linting" in signed_in.text
    rebound = TestClient(create_app(MemoryService(repo), hosts=frozenset({"127.0.0.1"})))  # type: ignore[arg-type]
    assert rebound.get("/health", headers={"Host": "attacker.example:8765"}).status_code == 421
    assert rebound.get("/health", headers={"Host": "127.0.0.1:8765"}).status_code == 200


def test_the_confidence_chart_spans_the_values() -> None:
    rising = [tuple(map(float, p.split(","))) for p in sparkline([0.5, 0.55, 0.6]).split()]
    assert [x for x, _ in rising] == [0.0, 60.0, 120.0]
    assert rising[0][1] > rising[1][1] > rising[2][1]  # higher confidence, higher on the chart
    assert sparkline([]) == "" and len(sparkline([0.7]).split()) == 2
