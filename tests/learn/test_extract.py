"""Extraction on commit: pure findings from messages and diffs, and the post-commit hook in a real code repo."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from gitmem.config import Config
from gitmem.learn.extract import dependencies, findings_for_commit, from_message, interesting, license_name, normalise
from gitmem.learn.oncommit import HOOK_NAMES, hook_script, hook_text
from gitmem.store import document as docs
from gitmem.store.memories import MemoryRepo
from gitmem.text.scripts import simplified
from tests.helpers import ROOT, assert_clean, code_repo, git, run_cli


# -- pure -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("message, category", [
    ("Switch HTTP client from urllib to requests", "decision"),
    ("Replace moment with date-fns", "decision"),
    ("Migrate the build to pnpm", "decision"),
    ("Drop Python 3.8 support", "decision"),
    ("Adopt conventional commits", "decision"),
    ("Use ruff instead of flake8", "decision"),
    ("Never commit .env files; secrets must live in the vault", "constraint"),
    ("决定改用 PostgreSQL 作为主数据库", "decision"),
    ("弃用旧的支付接口", "decision"),
    ("迁移到 Vite", "decision"),
    ("用 httpx 替换 requests", "decision"),
    ("以后禁止直接推送到 main", "constraint"),
])
def test_message_patterns(message: str, category: str) -> None:
    (finding,) = from_message(message)
    assert finding.category == category and finding.text == message.rstrip(".")


@pytest.mark.parametrize("message, statement", [
    ("棄用舊的支付接口", "棄用舊的支付接口"), ("遷移日誌到 structlog", "遷移日誌到 structlog"),
    ("採用 pnpm 管理依賴", "採用 pnpm 管理依賴"), ("必須先跑測試才能合併", "必須先跑測試才能合併"),
    ("務必在部署前備份資料庫", "務必在部署前備份資料庫"), ("切換到 Vite 構建", "切換到 Vite 構建"),
    ("修復：切換到 httpx 以避免掛起", "切換到 httpx 以避免掛起"),
    ("重構：遷移日誌到 structlog", "遷移日誌到 structlog"),
    ("功能（api）：採用 gRPC 取代 REST", "採用 gRPC 取代 REST"),
])
def test_traditional_characters_are_read_as_simplified(message: str, statement: str) -> None:
    """Traditional characters hid the Chinese keywords (棄用, 遷移, 必須) and type words (修復：, 重構：): the
    finding is the simplified message's, its text as the user wrote it."""
    (finding,) = findings_for_commit(message, {})
    (simple,) = findings_for_commit(simplified(message), {})
    assert finding.text == statement
    assert (finding.category, finding.importance, finding.tags) == (simple.category, simple.importance, simple.tags)
    assert normalise(finding.text) == normalise(simple.text) and finding.key == simple.key  # one known text


def test_a_traditional_message_folds_its_dependencies_as_the_simplified_one() -> None:
    files = {"requirements.txt": ("requests==2\n", "httpx==0.27\n")}
    (finding,) = findings_for_commit("從 requests 遷移到新的客戶端", files)
    assert finding.text == "從 requests 遷移到新的客戶端"
    assert finding.why == "requirements.txt: +httpx; requirements.txt: -requests"
    assert [f.why for f in findings_for_commit("从 requests 迁移到新的客户端", files)] == [finding.why]


@pytest.mark.parametrize("message", ["Fix typo in README", "Bump version", "Merge branch 'dev' into main",
                                     "wip", ""])
def test_ordinary_messages_yield_nothing(message: str) -> None:
    assert from_message(message) == []


def test_a_wrapped_body_is_read_sentence_by_sentence() -> None:
    """git's ~72-column lines are one paragraph: a sentence split over two lines is one finding, two sentences on
    one line two."""
    findings = from_message("db: move on\n\nWe decided to use Postgres instead of MySQL because we need JSONB and\n"
                            "transactional DDL. Never use MySQL-specific SQL in migrations.\n\n"
                            "- Adopt sqlfluff\n  for the migrations\n- 以后禁止手写 DDL。改用 alembic 生成。")
    assert [(f.category, f.text) for f in findings] == [
        ("decision", "We decided to use Postgres instead of MySQL because we need JSONB and transactional DDL"),
        ("constraint", "Never use MySQL-specific SQL in migrations"),
        ("decision", "Adopt sqlfluff for the migrations"),
        ("constraint", "以后禁止手写 DDL。"),
        ("decision", "改用 alembic 生成。"),
    ]


@pytest.mark.parametrize("message", [
    "fix: crash introduced in #123 when cart is empty", "fix(ui): drop shadow missing on buttons",
    "fix: always-on banner overlapped the footer", "fix: modal never closes", "fix: don't crash on an empty cart",
    "Fix crash introduced by the new parser", "docs: explain why we never cache auth tokens",
    "test: make sure we always retry twice", "style: drop trailing spaces"])
def test_a_subject_describing_a_bug_or_the_docs_decides_nothing(message: str) -> None:
    assert from_message(message) == []


def test_a_fix_that_decides_in_so_many_words_is_kept() -> None:
    assert [(f.category, f.text) for f in from_message("fix: switch to httpx to avoid the hang")] == [
        ("decision", "Switch to httpx to avoid the hang")]
    assert [f.text for f in from_message("fix: never log tokens")] == ["Never log tokens"]
    assert [f.text for f in from_message("Tokens are never logged")] == ["Tokens are never logged"]
    # the body of a fix is read as any body
    assert [f.text for f in from_message("fix: hang\n\nDrop the retry loop; it hid the timeout.")] == [
        "Drop the retry loop; it hid the timeout"]


def test_conventional_commits_and_breaking_change() -> None:
    findings = from_message("feat(api)!: rename the orders endpoint\n\nBREAKING CHANGE: /v1/order is gone")
    assert [f.category for f in findings] == ["constraint", "constraint"]
    assert "feat" in findings[0].tags and findings[0].text == "Rename the orders endpoint"
    assert findings[1].text == "Breaking change: /v1/order is gone"


@pytest.mark.parametrize("path, text, expected", [
    ("requirements.txt", "requests>=2.31  # http\n-r base.txt\nDjango[argon2]==4.2\n",
     {"requests": ">=2.31", "django": "==4.2"}),
    ("requirements-dev.txt", "pytest\n", {"pytest": ""}),
    ("pyproject.toml", '[project]\ndependencies = ["httpx>=0.27", "click"]\n'
     '[project.optional-dependencies]\ndev = ["pytest>=8"]\n', {"httpx": ">=0.27", "click": "", "pytest": ">=8"}),
    ("pyproject.toml", '[tool.poetry.dependencies]\npython = "^3.11"\nfastapi = "^0.110"\n', {"fastapi": "^0.110"}),
    ("web/package.json", '{"dependencies": {"react": "^18.2.0"}, "devDependencies": {"vite": "5"}}',
     {"react": "^18.2.0", "vite": "5"}),
    ("Cargo.toml", '[dependencies]\nserde = { version = "1.0" }\ntokio = "1"\n', {"serde": "1.0", "tokio": "1"}),
    ("go.mod", "module x\n\nrequire (\n\tgithub.com/gin-gonic/gin v1.9.1\n\tgithub.com/x/y/v2 v2.0.0\n)\n",
     {"github.com/gin-gonic/gin": "v1.9.1", "github.com/x/y": "v2.0.0"}),
    ("Gemfile", "source 'https://rubygems.org'\ngem 'rails', '~> 7.1'\ngem \"pg\"\n", {"rails": "~> 7.1", "pg": ""}),
    ("pom.xml", "<project><dependencies><dependency><groupId>org.junit</groupId><artifactId>junit</artifactId>"
     "<version>5.10</version></dependency></dependencies></project>", {"org.junit:junit": "5.10"}),
])
def test_manifests(path: str, text: str, expected: dict[str, str]) -> None:
    assert dependencies(path, text) == expected
    assert interesting(path)


def test_dependency_changes() -> None:
    files = {"package.json": ('{"dependencies": {"react": "^17.0.2", "moment": "2"}}',
                              '{"dependencies": {"react": "^18.2.0", "dayjs": "1"}}')}
    texts = [f.text for f in findings_for_commit("chore: update deps", files)]
    assert texts == ["Added dependency dayjs 1 (package.json)", "Removed dependency moment (package.json)",
                     "Moved dependency react from ^17.0.2 to ^18.2.0 (package.json)"]
    minor = {"requirements.txt": ("flask==3.0\n", "flask==3.1\n")}
    assert findings_for_commit("bump flask", minor) == []


def test_message_and_dependency_fold_into_one() -> None:
    (finding,) = findings_for_commit("Switch HTTP client from urllib to requests",
                                     {"requirements.txt": (None, "requests>=2.31\n")})
    assert finding.category == "decision" and "requests" in finding.text
    assert finding.why == "requirements.txt: +requests" and "dependency" in finding.tags


def test_tooling_docker_license() -> None:
    files = {
        ".github/workflows/ci.yml": (None, "on: push\n"),
        ".pre-commit-config.yaml": ("repos: []\n", "repos: [x]\n"),
        "pyproject.toml": ("[project]\nname='x'\n", "[project]\nname='x'\n[tool.ruff]\nline-length = 100\n"),
        "Dockerfile": ("FROM python:3.11-slim\n", "FROM --platform=linux/amd64 python:3.12-slim AS app\n"),
        "LICENSE": ("MIT License\n\nPermission is hereby granted, free of charge", "Apache License\nVersion 2.0"),
        "src/app.py": ("a", "b"),
    }
    texts = [f.text for f in findings_for_commit("tidy up", files)]
    assert "Introduced CI configuration .github/workflows/ci.yml" in texts
    assert "Changed lint/format configuration .pre-commit-config.yaml: tidy up" in texts
    assert "Introduced ruff (lint/format) configuration in pyproject.toml" in texts
    assert "Docker base image changed from python:3.11-slim to python:3.12-slim (Dockerfile)" in texts
    assert "License changed from MIT to Apache-2.0 (LICENSE)" in texts
    assert not interesting("src/app.py")
    assert license_name("GNU GENERAL PUBLIC LICENSE\n Version 3, 29 June 2007") == "GPL-3.0"


# -- the hook in a real code repository -----------------------------------------------------------------
@pytest.mark.parametrize("name", HOOK_NAMES)
def test_shipped_hook_is_the_installed_text(name: str) -> None:
    # each script ships once, as package data; the design's git-hooks/ folder holds an identical copy
    packaged = (ROOT / "gitmem" / "data" / name).read_text()
    assert packaged == hook_script(name) == hook_text("gitmem", name)
    assert (ROOT / "git-hooks" / name).read_text() == packaged
    assert os.access(ROOT / "git-hooks" / name, os.X_OK)


@pytest.fixture
def code(tmp_path: Path, repo_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GITMEM_REPO", str(repo_path))
    root = code_repo(tmp_path)
    (root / "requirements.txt").write_text("urllib3\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    return root


def _memories(repo_path: Path) -> list[docs.Memory]:
    return MemoryRepo(Config(repo=repo_path)).list(deprecated=True)


def _wait_for(repo_path: Path, count: int, seconds: float = 20) -> list[docs.Memory]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = _memories(repo_path)
        if len(found) >= count:
            time.sleep(0.3)  # let the background process finish its commit
            return _memories(repo_path)
        time.sleep(0.1)
    return _memories(repo_path)


def test_acceptance_commit_yields_a_decision(code: Path, repo_path: Path) -> None:
    assert run_cli("git-hooks", "install", "--repo", str(code)).code == 0
    (code / "requirements.txt").write_text("urllib3\nrequests>=2.31\n")
    git(code, "add", ".")
    started = time.monotonic()
    git(code, "commit", "-q", "-m", "Switch HTTP client from urllib to requests")
    assert time.monotonic() - started < 2  # the hook does not wait for the extraction
    sha = git(code, "rev-parse", "HEAD").strip()
    (memory,) = _wait_for(repo_path, 1)
    assert memory.category == "decision" and "requests" in memory.text
    assert memory.source == "commit" and memory.source_ref == f"github.com-acme-shop@{sha}"
    assert memory.project == "github.com-acme-shop"
    entry = MemoryRepo(Config(repo=repo_path)).log(op="extract")[0]
    assert entry.trailers["Gitmem-Commit"] == [sha]
    assert_clean(repo_path)
    assert_clean(code)


def test_install_chains_existing_hook_and_uninstall_restores_it(code: Path, repo_path: Path) -> None:
    hooks = code / ".git" / "hooks"
    original = "#!/bin/sh\necho ran >> \"$(git rev-parse --show-toplevel)/../chained.log\"\n"
    (hooks / "post-commit").write_text(original)
    (hooks / "post-commit").chmod(0o750)
    before = sorted(p.name for p in hooks.iterdir())
    assert "installed" in run_cli("git-hooks", "install", "--repo", str(code)).out
    assert "unchanged" in run_cli("git-hooks", "install", "--repo", str(code)).out  # idempotent
    assert (hooks / "post-commit.pre-gitmem").read_text() == original
    (code / "Dockerfile").write_text("FROM node:20-alpine\n")
    git(code, "add", ".")
    git(code, "commit", "-q", "-m", "Containerise the app")
    assert (code.parent / "chained.log").read_text() == "ran\n"
    found = _wait_for(repo_path, 1)
    assert [m.text for m in found] == ["Docker base image node:20-alpine (Dockerfile)"]
    assert "removed" in run_cli("git-hooks", "uninstall", "--repo", str(code)).out
    assert sorted(p.name for p in hooks.iterdir()) == before
    assert (hooks / "post-commit").read_text() == original
    assert stat.S_IMODE((hooks / "post-commit").stat().st_mode) == 0o750
    assert "not installed" in run_cli("git-hooks", "uninstall", "--repo", str(code)).out


def test_core_hooks_path_is_respected(code: Path, repo_path: Path) -> None:
    git(code, "config", "core.hooksPath", ".githooks")
    result = run_cli("git-hooks", "install", "--repo", str(code))
    assert result.code == 0 and str(code / ".githooks" / "post-commit") in result.out
    assert not (code / ".git" / "hooks" / "post-commit").exists()
    (code / "go.mod").write_text("module x\n\nrequire github.com/gin-gonic/gin v1.9.1\n")
    git(code, "add", "go.mod")
    git(code, "commit", "-q", "-m", "Adopt gin for the HTTP layer")
    (memory,) = _wait_for(repo_path, 1)
    assert "gin" in memory.text and "github.com/gin-gonic/gin" in memory.why
    run_cli("git-hooks", "uninstall", "--repo", str(code))
    assert not (code / ".githooks" / "post-commit").exists()


def test_a_tracked_hooks_folder_is_left_alone(code: Path) -> None:
    """With core.hooksPath at a folder under version control (husky), install rewrote the team's tracked hook and
    left it as an untracked .pre-gitmem copy: every clone lost it, and gitmem's absolute path was committed."""
    team = code / ".husky"
    team.mkdir()
    (team / "post-commit").write_text("#!/bin/sh\necho team hook\n")
    (team / "post-commit").chmod(0o755)
    git(code, "config", "core.hooksPath", ".husky")
    git(code, "add", "-A")
    git(code, "commit", "-q", "-m", "team hooks")
    refused = run_cli("git-hooks", "install", "--repo", str(code))
    assert refused.code != 0 and "project's own files" in refused.err and "extract --commit HEAD" in refused.err
    assert (team / "post-commit").read_text() == "#!/bin/sh\necho team hook\n"
    assert git(code, "status", "--porcelain") == ""


def test_memory_repo_commits_never_trigger_extraction(repo_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITMEM_REPO", str(repo_path))
    assert run_cli("git-hooks", "install", "--repo", str(repo_path)).code == 0
    repo = MemoryRepo(Config(repo=repo_path))
    repo.remember("Switch to PostgreSQL")  # a gitmem commit
    (repo_path / "notes.txt").write_text("Migrate to the new CI\n")
    git(repo_path, "add", "notes.txt")
    git(repo_path, "commit", "-q", "-m", "Migrate the build to Bazel")  # a user's commit in the memory repo
    time.sleep(1.5)
    assert [m.text for m in _memories(repo_path)] == ["Switch to PostgreSQL"]
    result = run_cli("extract", "--repo", str(repo_path))
    assert result.code == 0 and "memory repository" in result.err


def test_backfill_range_deduplicates(code: Path, repo_path: Path) -> None:
    first = git(code, "rev-parse", "HEAD").strip()
    steps = [("requirements.txt", "urllib3\nrequests\n", "Switch HTTP client from urllib to requests"),
             ("README.md", "hello\n", "Docs"),
             ("Dockerfile", "FROM python:3.12\n", "Containerise"),
             ("requirements.txt", "requests\n", "Drop urllib3")]
    for path, text, message in steps:
        (code / path).write_text(text)
        git(code, "add", ".")
        git(code, "commit", "-q", "-m", message)
    result = run_cli("extract", "--range", f"{first}..HEAD", "--repo", str(code), "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["commits"] == 4 and data["added"] == 3
    found = {m.text: m for m in _memories(repo_path)}
    assert sorted(found) == sorted(["Switch HTTP client from urllib to requests",
                                    "Docker base image python:3.12 (Dockerfile)", "Drop urllib3"])
    assert found["Drop urllib3"].why == "requirements.txt: -urllib3"
    again = json.loads(run_cli("extract", "--range", "HEAD~4..HEAD", "--repo", str(code), "--json").out)
    assert again["commits"] == 4
    assert again["added"] == 0  # known findings are not stored twice
    assert len(MemoryRepo(Config(repo=repo_path)).log(op="extract")) == 3
    assert_clean(repo_path)


def test_a_decision_in_traditional_characters_is_known_in_simplified(code: Path, repo_path: Path) -> None:
    """The same decision in both forms is one memory, its text as first written."""
    first = git(code, "rev-parse", "HEAD").strip()
    for message in ("采用 pnpm 管理依赖", "採用 pnpm 管理依賴", "切換到 Vite 構建"):
        git(code, "commit", "-q", "--allow-empty", "-m", message)
    data = json.loads(run_cli("extract", "--range", f"{first}..HEAD", "--repo", str(code), "--json").out)
    assert data["commits"] == 3 and data["added"] == 2
    assert sorted(m.text for m in _memories(repo_path)) == ["切換到 Vite 構建", "采用 pnpm 管理依赖"]
    assert_clean(repo_path)


def test_dry_run_stores_nothing(code: Path, repo_path: Path) -> None:
    (code / "requirements.txt").write_text("urllib3\nrequests\n")
    git(code, "add", ".")
    git(code, "commit", "-q", "-m", "Switch to requests")
    result = run_cli("extract", "--repo", str(code), "--dry-run")
    assert result.code == 0 and "Switch to requests" in result.out
    assert _memories(repo_path) == []


def test_a_dry_run_marks_what_the_project_knows_and_redacts_as_a_run_would(code: Path, repo_path: Path) -> None:
    """A dry run says which findings a real run would skip (stored already, or said by an earlier commit of the
    range) and shows texts redacted with the repository's own patterns, storing nothing."""
    (repo_path / "gitmem.toml").write_text((repo_path / "gitmem.toml").read_text()
                                           + "\n[redaction]\nextra_patterns = ['ACME-[0-9]+']\n")
    first = git(code, "rev-parse", "HEAD").strip()
    git(code, "commit", "-q", "--allow-empty", "-m", "Switch to pnpm for dependencies")
    assert run_cli("extract", "--repo", str(code)).code == 0  # stored: known from now on
    for message in ("Switch to pnpm for dependencies", "Switch the build to Vite (ticket ACME-4412)",
                    "Switch the build to Vite (ticket ACME-4412)"):
        git(code, "commit", "-q", "--allow-empty", "-m", message)
    before = git(repo_path, "rev-parse", "HEAD")
    result = run_cli("extract", "--range", f"{first}..HEAD", "--repo", str(code), "--dry-run", "--json")
    assert result.code == 0, result.err
    marks = [(f["text"], f["known"]) for r in json.loads(result.out)["results"] for f in r["findings"]]
    assert marks == [("Switch to pnpm for dependencies", True), ("Switch to pnpm for dependencies", True),
                     ("Switch the build to Vite (ticket [REDACTED:custom])", False),
                     ("Switch the build to Vite (ticket [REDACTED:custom])", True)]
    assert "ACME-4412" not in result.out
    assert git(repo_path, "rev-parse", "HEAD") == before and len(_memories(repo_path)) == 1
    lines = run_cli("extract", "--range", f"{first}..HEAD", "--repo", str(code), "--dry-run").out.splitlines()
    assert [line.endswith("(known)") for line in lines] == [True, True, False, True]


def test_a_dry_run_creates_no_memory_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nowhere"
    monkeypatch.setenv("GITMEM_REPO", str(missing))
    root = code_repo(tmp_path)
    git(root, "commit", "-q", "--allow-empty", "-m", "Switch to pnpm for dependencies")
    result = run_cli("extract", "--repo", str(root), "--dry-run")
    assert result.code == 0, result.err
    assert result.out.strip().endswith("Switch to pnpm for dependencies") and not missing.exists()


def test_post_commit_warms_the_next_sessions_recall_block(code: Path, repo_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """After the extraction, the hook prepares the recall block for the repository's next session start (its
    query names the new commit), so that session start serves it without searching."""
    import json

    monkeypatch.setenv("GITMEM_WARM", "1")
    assert run_cli("git-hooks", "install", "--repo", str(code)).code == 0
    (code / "requirements.txt").write_text("urllib3\nrequests>=2.31\n")
    git(code, "add", ".")
    git(code, "commit", "-q", "-m", "Switch HTTP client from urllib to requests")
    cache = repo_path / ".cache" / "recall-cache.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (cache.exists() and "requests" in cache.read_text()):
        time.sleep(0.2)
    (block,) = json.loads(cache.read_text()).values()
    assert "Switch HTTP client" in block["query"] and "requests" in block["text"]
