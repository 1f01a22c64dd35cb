"""The web viewer in headless Chromium against a real ``gitmem serve --ui``: list, search, open a memory, see its
history, deprecate it and see the commit; the review and wiki pages. Screenshots of every page go to
``test-artifacts/ui/`` for a person to look at."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.helpers import assert_clean, git, run_cli
from tests.serve.live import running_server

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "ui"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
PHONE = {"width": 390, "height": 844}

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="the browser test needs Debian's chromium package "
                                "(apt-get install chromium); .ci/run installs it")


def _learn_an_instinct(repo_path: Path) -> None:
    """One instinct confirmed in three sessions: three commits, confidence rising."""
    from gitmem.config import Config
    from gitmem.learn import instincts
    from gitmem.store.memories import MemoryRepo

    repo = MemoryRepo(Config(repo=repo_path))
    item = None
    for day in (1, 2, 3):
        when = datetime(2026, 11, day, tzinfo=UTC)
        change = instincts.apply_finding(item, pattern="test-before-commit", trigger="before git commit",
                                         action="run the tests", domain="workflow", project="", when=when,
                                         support=2, line=f"session {day}")
        instincts.commit_changes(repo, [change], f"instincts: session {day}", "learn", "hook")
        item = change.instinct


@pytest.fixture
def server(repo_path: Path) -> Iterator[str]:
    for args in (["Use PostgreSQL for every new service database", "--category", "decision", "--importance", "5",
                  "--why", "JSON queries are faster and the team knows it", "--tags", "database,backend"],
                 ["Release branches are cut on Mondays", "--category", "background"],
                 ["用中文写提交说明时保持一句话", "--category", "preference", "--tags", "git"]):
        assert run_cli("--repo", str(repo_path), "remember", *args).code == 0
    _learn_an_instinct(repo_path)
    assert run_cli("--repo", str(repo_path), "wiki", "ingest", "--project", "shop", "--title", "Deploy runbook",
                   "--category", "debugging", "Roll back with make rollback, then check [[Canary checks]].").code == 0
    with running_server(repo_path, "--ui") as (_, base):
        yield base


def test_browse_search_open_and_deprecate_in_a_phone_sized_browser(server: str, repo_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport=PHONE, device_scale_factor=2)
        page.goto(f"{server}/ui/")
        assert page.locator("ul.memories li").count() == 3
        assert page.get_by_text("用中文写提交说明时保持一句话").is_visible()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # no sideways scroll
        page.screenshot(path=ARTIFACTS / "1-list.png", full_page=True)

        page.fill("input[name=q]", "which database should a new service use")
        page.press("input[name=q]", "Enter")
        page.wait_for_url("**/ui/?q=*")
        first = page.locator("ul.memories li .title").first
        assert "PostgreSQL" in first.inner_text()
        page.screenshot(path=ARTIFACTS / "2-search.png", full_page=True)

        first.click()
        page.wait_for_url("**/ui/memory/*")
        assert page.locator("h1").inner_text() == "Use PostgreSQL for every new service database"
        assert "JSON queries are faster" in page.inner_text("article")
        assert page.locator(".history li").count() == 1 and page.locator(".history .op").first.inner_text() == "add"
        page.screenshot(path=ARTIFACTS / "3-memory.png", full_page=True)

        page.fill("input[name=reason]", "we moved to a managed database")
        page.click("button.danger")
        page.wait_for_selector(".history li:nth-child(2)")
        head = git(repo_path, "rev-parse", "HEAD").strip()
        assert page.locator(".history .op").first.inner_text() == "deprecate"
        assert page.locator(".history .commit code").first.inner_text() == head[:10]
        assert "deprecated: we moved to a managed database" in page.inner_text("article")
        assert "+deprecated: true" in page.inner_text(".history li:first-child pre.diff")
        page.screenshot(path=ARTIFACTS / "4-deprecated.png", full_page=True)

        page.goto(f"{server}/ui/instincts")
        assert page.get_by_text("before git commit").is_visible()
        points = page.get_attribute("svg.chart polyline", "points") or ""
        assert len(points.split()) == 3  # one point per commit that changed the instinct
        page.screenshot(path=ARTIFACTS / "5-instincts.png", full_page=True)

        page.goto(f"{server}/ui/review")  # this repository has no remote yet: the page says what to run
        assert "run gitmem sync" in page.inner_text("main")
        page.screenshot(path=ARTIFACTS / "6-review.png", full_page=True)

        page.goto(f"{server}/ui/wiki")
        page.click("text=shop")
        page.click("text=Deploy runbook")
        page.wait_for_url("**/ui/wiki/shop/deploy-runbook")
        assert "Roll back with make rollback" in page.inner_text("article")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.screenshot(path=ARTIFACTS / "7-wiki-page.png", full_page=True)
        browser.close()
    message = git(repo_path, "log", "-1", "--format=%B")
    assert "Gitmem-Op: deprecate" in message and "Gitmem-Source: ui" in message
    assert "we moved to a managed database" in message
    assert_clean(repo_path)
