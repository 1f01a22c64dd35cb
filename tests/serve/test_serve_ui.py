"""The web viewer in-process (no browser): pages, forms, the token login, and what it refuses."""

from __future__ import annotations

import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from gitmem.config import Config
from gitmem.errors import ValidationError
from gitmem.serve.http import create_app
from gitmem.serve.service import MemoryService
from gitmem.serve.ui import page_blocks, sparkline
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.sync import round as sync
from tests.helpers import git, run_cli


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


def test_the_pending_review_is_what_gitmem_review_prints(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    init_repo(tmp_path / "mem", remote=str(remote))
    repo = MemoryRepo(Config(repo=tmp_path / "mem"))
    client = TestClient(create_app(MemoryService(repo), ui=True))  # type: ignore[arg-type]
    gone = repo.remember("Deploy with Fabric <fab>")
    sync.sync(repo.git, author="Test User <test@example.com>")
    assert "0 commits: no memory changes" in client.get("/ui/review").text
    added = repo.remember("Review every memory change in a pull request", category="constraint")
    repo.forget(gone.id, reason="we deploy with Kubernetes now")
    page = client.get("/ui/review").text
    printed = run_cli("--repo", str(repo.path), "review").out
    assert "2 commits: 1 added, 1 deprecated" in page and "(2 commits)\n\n1 added, 1 deprecated" in printed
    assert f"<strong>Review every memory change in a pull request</strong> (<code>{added.id}</code>" in page
    assert "Deprecated (1)" in page and "we deploy with Kubernetes now" in page
    assert "Deploy with Fabric &lt;fab&gt;" in page and "<fab>" not in page  # memory text is escaped


def test_wiki_pages_by_project(repo: MemoryRepo) -> None:
    repo.wiki("shop").ingest("Deploy runbook", "Roll back with make rollback. See [[Canary checks]].",
                             category="debugging", tags="deploy")
    repo.wiki("shop").ingest("Canary checks", "Watch the error rate for ten minutes.")
    repo.wiki("billing").ingest("Invoices", "Invoices close on the 3rd <b>sharp</b>.")
    client = TestClient(create_app(MemoryService(repo), ui=True))  # type: ignore[arg-type]
    projects = client.get("/ui/wiki").text
    assert 'href="/ui/wiki/billing"' in projects and "1 page<" in projects
    assert 'href="/ui/wiki/shop"' in projects and "2 pages" in projects  # the generated index is not counted
    shop = client.get("/ui/wiki/shop").text
    assert 'href="/ui/wiki/shop/deploy-runbook">Deploy runbook</a>' in shop and "#deploy" in shop
    assert "Invoices" not in shop
    page = client.get("/ui/wiki/shop/deploy-runbook")
    assert page.status_code == 200 and "Roll back with make rollback" in page.text and "debugging" in page.text
    assert 'href="/ui/wiki/shop/canary-checks">canary-checks</a>' in page.text
    assert "&lt;b&gt;sharp&lt;/b&gt;" in client.get("/ui/wiki/billing/invoices").text
    missing = client.get("/ui/wiki/shop/no-such-page")
    assert missing.status_code == 404 and "no wiki page &#39;no-such-page&#39; in project shop" in missing.text
    assert "gitmem wiki ingest --project nowhere" in client.get("/ui/wiki/nowhere").text
    alone = client.get("/ui/review").text  # this repository has no remote to compare with
    assert "no remote branch origin/main to compare with" in alone and "run gitmem sync" in alone


def test_a_wiki_page_reads_as_sections() -> None:
    body = "Intro line\n\n## 2026-12-01 10:00:00 UTC\n\nRoll back\n```sh\n# not a heading\n```\n### Notes ##\nmore"
    assert page_blocks(body) == [("text", "Intro line"), ("heading", "2026-12-01 10:00:00 UTC"),
                                 ("text", "Roll back\n```sh\n# not a heading\n```"), ("heading", "Notes"),
                                 ("text", "more")]


def test_a_value_that_does_not_fit_a_page_is_answered_with_a_page(repo: MemoryRepo) -> None:
    client = TestClient(create_app(MemoryService(repo), ui=True))  # type: ignore[arg-type]
    for params in ({"deprecated": "maybe"}, {"type": "bogus"}):
        answer = client.get("/ui/", params=params)
        assert answer.status_code == 422 and answer.headers["content-type"].startswith("text/html"), params
        assert '<p class="error"' in answer.text and "<header>" in answer.text
    assert "deprecated: Input should be a valid boolean" in client.get("/ui/?deprecated=maybe").text
    api = client.get("/memory", params={"deprecated": "maybe"})  # the API's answers stay problem details
    assert api.status_code == 422 and api.headers["content-type"] == "application/problem+json"


def test_a_link_to_an_id_with_dot_segments_opens_that_memory(repo: MemoryRepo) -> None:
    """The list linked "../../escape" as /ui/memory/../../escape, which a browser resolves to another page."""
    repo.remember("with id dots", id="../../escape")
    repo.remember("with a slash", id="/etc/x")
    client = TestClient(create_app(MemoryService(repo), ui=True))  # type: ignore[arg-type]
    listing = client.get("/ui/").text
    for memory_id, text in (("../../escape", "with id dots"), ("/etc/x", "with a slash")):
        link = f'/ui/memory/{quote(memory_id, safe="")}'
        assert f'href="{link}"' in listing
        assert text in client.get(link).text
    with pytest.raises(ValidationError):
        repo.remember("a dot", id="..")


def test_a_form_post_to_an_id_ending_in_a_verb_changes_nothing(repo: MemoryRepo) -> None:
    """Ids may hold "/": /ui/memory/r%2Frestore names memory "r/restore" and must not act on memory "r"."""
    for memory_id in ("r", "r/restore", "q", "q/deprecate"):
        repo.remember(f"Memory {memory_id}", id=memory_id)
    repo.forget("r", "old")
    client = TestClient(create_app(MemoryService(repo), ui=True))  # type: ignore[arg-type]
    for path in ("/ui/memory/r%2Frestore", "/ui/memory/q%2Fdeprecate"):
        refused = client.post(path, data={"reason": "gone"}, follow_redirects=False)
        assert refused.status_code == 405 and refused.headers["content-type"].startswith("text/html"), path
        assert refused.headers["allow"] == "GET"
    assert repo.get("r").deprecated and not repo.get("q").deprecated
    shown = client.get("/ui/memory/r%2Frestore")
    assert shown.status_code == 200 and "Memory r/restore" in shown.text
    # the forms of the memories' pages still work, those of the ids with a slash too
    page = client.get("/ui/memory/q/deprecate").text
    assert 'action="/ui/memory/q%2Fdeprecate/deprecate"' in page
    done = client.post("/ui/memory/q/deprecate/deprecate", data={"reason": "gone"}, follow_redirects=False)
    assert done.status_code == 303 and repo.get("q/deprecate").deprecated and not repo.get("q").deprecated
    assert client.post("/ui/memory/r/restore", follow_redirects=False).status_code == 303
    assert not repo.get("r").deprecated and not repo.get("r/restore").deprecated
