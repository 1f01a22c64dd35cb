"""The remember router and the session notepad: where a finding goes and why, duplicates and conflicts, storage
on each surface, and the notepad's priority notes in the next prompts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitmem.router import notepad
from gitmem.router.route import Router, conflicts_with
from gitmem.router.rules import route
from gitmem.store.memories import MemoryRepo
from tests.helpers import assert_clean, context_of, git, hook, payload, run_cli

PROJECT = "github.com-acme-shop"


@pytest.mark.parametrize(("text", "surface"), [
    ("We decided to use PostgreSQL instead of MySQL for orders.", "memory"),
    ("客户数据不能离开中国大陆的机房。", "memory"),
    ("The API listens on port 8080.", "project"),
    ("测试命令是 make test。", "project"),
    ("Never push directly to main.", "directive"),
    ("以后提交信息一律用英文。", "directive"),
    ("Root cause: the retry middleware re-sent requests after a timeout; the handler is idempotent now.", "wiki"),
    ("排查结果：接口超时的根因是数据库连接池太小。", "wiki"),
    ("## Release\n\n1. Bump the version\n2. Tag it", "wiki"),
    ("Remind me to update the changelog before we push.", "notepad"),
    ("下一步：给导出任务加上重试。", "notepad"),
])
def test_rules_route_english_and_chinese_findings(text: str, surface: str) -> None:
    decided = route(text)
    assert decided.surface == surface and decided.reason


def test_conflicts_are_same_subject_with_another_value() -> None:
    assert conflicts_with("The API listens on port 9090.", "The API listens on port 8080.")
    assert conflicts_with("Use MySQL instead of PostgreSQL.", "Use PostgreSQL instead of MySQL.")
    assert conflicts_with("我们决定用 Memcached 做缓存，不用 Redis。", "我们决定用 Redis 做缓存，不用 Memcached。")
    assert not conflicts_with("The worker listens on port 9100 for metrics.", "The API listens on port 8080.")
    assert not conflicts_with("Invoices go out monthly.", "The API listens on port 8080.")


def test_remember_auto_cli_contract_duplicates_and_conflicts(repo_path: Path) -> None:
    env = {"GITMEM_REPO": str(repo_path)}
    stored = run_cli("remember", "--auto", "We decided to use PostgreSQL instead of MySQL.", "--project", "shop",
                     "--json", env=env)
    data = json.loads(stored.out)
    assert data["surface"] == "memory" and data["category"] == "decision" and data["stored"] and data["id"]
    assert "decision" in data["reason"]
    head = git(repo_path, "rev-parse", "HEAD")
    again = json.loads(run_cli("remember", "--auto", "we decided to use PostgreSQL instead of MySQL",
                               "--project", "shop", "--json", env=env).out)
    assert again["duplicate_of"] == data["id"] and not again["stored"] and "id" not in again
    clash = json.loads(run_cli("remember", "--auto", "We decided to use MySQL instead of PostgreSQL.",
                               "--project", "shop", "--json", env=env).out)
    assert clash["conflict"]["id"] == data["id"] and not clash["stored"]
    assert git(repo_path, "rev-parse", "HEAD") == head  # nothing stored for a duplicate or a conflict
    forced = json.loads(run_cli("remember", "--auto", "We decided to use MySQL instead of PostgreSQL.",
                                "--project", "shop", "--supersede", "--json", env=env).out)
    assert forced["stored"] and forced["superseded"] == data["id"]
    old = json.loads(run_cli("show", data["id"], "--json", env=env).out)
    assert old["deprecated"] and old["superseded_by"] == forced["id"]
    assert git(repo_path, "rev-list", "--count", f"{head.strip()}..HEAD").strip() == "1"  # one commit: both
    assert data["id"] in git(repo_path, "log", "-1", "--format=%B")


def test_a_replacement_holds_where_the_memory_it_replaces_held(repo_path: Path) -> None:
    """A project's decision superseded by a preference-like sentence stays the project's, not a global rule."""
    env = {"GITMEM_REPO": str(repo_path)}
    first = json.loads(run_cli("remember", "Use Redis for caching sessions", "--project", "shop", "--category",
                               "decision", "--importance", "4", "--json", env=env).out)
    forced = json.loads(run_cli("remember", "--auto", "Do not use Redis for caching sessions; use memcached",
                                "--project", "shop", "--supersede", "--json", env=env).out)
    assert forced["superseded"] == first["id"], forced
    new = json.loads(run_cli("show", forced["id"], "--json", env=env).out)
    old = json.loads(run_cli("show", first["id"], "--json", env=env).out)
    assert new["project"] == "shop" and new["scope"] == "project" and new["type"] == old["type"]
    assert new["path"].startswith("memories/shop/")
    assert_clean(repo_path)


def test_each_surface_stores_where_it_belongs(repo: MemoryRepo) -> None:
    router = Router(repo, "shop")
    directive = router.remember("Never commit generated files.")
    assert directive.surface == "directive" and directive.id.startswith("directive-")
    assert "directive" in repo.get(directive.id).tags and repo.get(directive.id).importance == 5
    assert router.remember("Never commit generated files!").duplicate_of == directive.id
    note = router.remember("Tests run with pytest -q.")
    assert note.surface == "project" and note.stored
    assert "Tests run with pytest -q." in (repo.path / "projects" / "shop.md").read_text()
    assert router.remember("Tests run with pytest -x.").conflict["text"] == "Tests run with pytest -q."
    page = router.remember("It turned out the leak came from an unbounded cache in the resizer; capping it fixed "
                           "it.")
    assert page.surface == "wiki" and page.page
    assert (repo.path / "wiki" / "shop" / f"{page.page}.md").is_file()
    scratch = router.remember("Next step: add the missing index on orders.created_at.")
    assert scratch.surface == "notepad" and scratch.stored
    assert router.remember("Next step: add the missing index on orders.created_at").duplicate_of == \
        "notepad:priority"
    assert "notepad" not in git(repo.path, "ls-files")  # never committed
    assert_clean(repo.path)


def test_remember_auto_outside_a_code_project_stores_where_remember_does(repo_path: Path, tmp_path: Path) -> None:
    """Outside a git repository (and inside the memory repository) ``remember`` makes a memory global; ``--auto``
    put its memories and directives in a project named after the folder, seen only from a folder of that name.
    The notepad keeps the folder's name, which the hooks read it by."""
    notes = tmp_path / "notes"
    notes.mkdir()
    env = {"GITMEM_REPO": str(repo_path)}
    directive = run_cli("remember", "--auto", "From now on always run the linter before committing.", env=env,
                        cwd=notes)
    assert directive.code == 0 and "in global memory" in directive.out
    fact = run_cli("remember", "--auto", "We decided to use PostgreSQL instead of MySQL for orders.", env=env,
                   cwd=repo_path)
    assert fact.code == 0 and "in global memory" in fact.out
    assert {p.parent.name for p in (repo_path / "memories").rglob("*.md")} == {"global"}
    run_cli("remember", "--auto", "Remind me to update the changelog before we push.", env=env, cwd=notes)
    assert "update the changelog" in notepad.prompt_context(repo_path / "local", "notes")
    assert_clean(repo_path)


def test_priority_notes_reach_the_next_prompts_only(repo_path: Path, tmp_path: Path) -> None:
    code = tmp_path / "shop"
    code.mkdir()
    git(code, "init", "-q")
    git(code, "remote", "add", "origin", "git@github.com:Acme/Shop.git")
    env = {"GITMEM_REPO": str(repo_path), "GITMEM_PROJECT_SCAN": "0", "GITMEM_LEARN": "0"}
    added = run_cli("remember", "--auto", "Don't forget to remove the debug flag before committing.", "--json",
                    env=env, cwd=code)
    assert json.loads(added.out)["section"] == "priority"
    notepad.add(repo_path / "local", PROJECT, "the parser is half moved", "working")
    shown = []
    for _ in range(notepad.PRIORITY_TURNS + 1):
        out = hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="go on"), env, cwd=code).stdout
        shown.append(context_of(out, "UserPromptSubmit") if out else "")
    assert all("remove the debug flag" in s and "half moved" not in s for s in shown[:-1])
    assert shown[-1] == ""
    assert notepad.clear(repo_path / "local", PROJECT) == 2
    assert_clean(repo_path)


def test_the_model_command_routes_what_the_rules_leave_as_background(repo: MemoryRepo, tmp_path: Path) -> None:
    import sys

    script = tmp_path / "model.py"
    script.write_text("import sys, json; sys.stdin.read(); "
                      "print(json.dumps({'result': json.dumps({'surface': 'wiki', 'reason': 'a reference'})}))")
    (repo.path / "local").mkdir(exist_ok=True)
    (repo.path / "local" / "learning.toml").write_text(
        f"semantic_command = [{json.dumps(sys.executable)}, {json.dumps(str(script))}]\n")
    router = Router(repo, "shop")
    decided = router.decide("The office has a blue door.")
    assert decided.surface == "wiki" and decided.reason == "model: a reference"
    assert router.decide("The office has a blue door.", model=False).surface == "memory"
    assert router.decide("Never push directly to main.").surface == "directive"  # the rules were sure: no model
