"""Wiki pages broken by hand: list names them, lint reports them as ``unreadable`` (and a link to one is not a
broken link), doctor reports what is wrong, and ingest still refuses to write over one."""

from __future__ import annotations

import json
from pathlib import Path

from gitmem.store.memories import MemoryRepo
from gitmem.wiki.store import Wiki
from tests.helpers import git, run_cli

BROKEN = "wiki/shop/deploy.md"


def _wiki_with_a_broken_page(repo_path: Path) -> dict[str, str]:
    env = {"GITMEM_REPO": str(repo_path)}
    for title, text in (("Deploy", "Deploys go through the pipeline."), ("Runbook", "See [[deploy]] first.")):
        assert run_cli("wiki", "ingest", "--title", title, "--project", "shop", text, env=env).code == 0
    path = repo_path / BROKEN
    path.write_text(path.read_text("utf-8").replace("category: reference", "category: [reference"), "utf-8")
    git(repo_path, "commit", "-qam", "hand edit")
    return env


def test_list_and_lint_name_a_broken_page(repo_path: Path) -> None:
    env = _wiki_with_a_broken_page(repo_path)
    listed = run_cli("wiki", "list", "--project", "shop", env=env)
    assert listed.code == 0 and listed.out.startswith("runbook  [reference, medium]  Runbook")
    assert f"gitmem: warning: skipped {BROKEN}: broken YAML frontmatter" in listed.err
    assert "(run gitmem doctor)" in listed.err
    linted = run_cli("wiki", "lint", "--project", "shop", "--json", env=env)
    assert linted.code == 0
    findings = json.loads(linted.out)
    [unreadable] = [f for f in findings if f["kind"] == "unreadable"]
    assert unreadable["page"] == "deploy" and unreadable["detail"].startswith("broken YAML frontmatter")
    assert "fix the file or restore it with git" in unreadable["detail"]
    assert not [f for f in findings if f["kind"] == "broken-link"]  # runbook's [[deploy]] names a page that exists
    text = run_cli("wiki", "lint", "--project", "shop", env=env).out
    assert text.splitlines()[0].startswith("unreadable      deploy: broken YAML frontmatter")
    # ingest reads the page it adds to: it refuses, naming the file, and writes nothing
    head = git(repo_path, "rev-parse", "HEAD")
    refused = run_cli("wiki", "ingest", "--title", "Deploy", "--project", "shop", "Blue-green now.", env=env)
    assert refused.code != 0 and f"{BROKEN}: broken YAML frontmatter" in refused.err
    assert git(repo_path, "rev-parse", "HEAD") == head


def test_doctor_reports_an_unreadable_wiki_page(repo: MemoryRepo, repo_path: Path) -> None:
    env = _wiki_with_a_broken_page(repo_path)
    bad_field = repo_path / "wiki" / "shop" / "notes.md"
    bad_field.write_text("---\ntitle: Notes\ncategory: gossip\n---\nHearsay.\n", "utf-8")
    doctor = run_cli("doctor", env=env)
    assert doctor.code == 1
    assert f"error   {BROKEN}: broken YAML frontmatter" in doctor.out
    assert "error   wiki/shop/notes.md: unknown category 'gossip' (use one of: architecture," in doctor.out
    assert "ok      wiki/: 2 wiki pages readable" in doctor.out  # runbook and the generated index
    book = Wiki(repo, "shop")
    assert [p.name for p in book.pages()] == ["runbook"]
    assert sorted(book.unreadable) == ["deploy", "notes"]
