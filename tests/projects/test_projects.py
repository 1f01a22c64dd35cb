"""Project memory: scans of real temp code projects, the file's kept sections, notes learned from observed tool
calls, the session-start summary and the detached scan."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from gitmem.projects import memory as projects
from gitmem.projects import scan, toolnotes
from gitmem.store import local as observe
from tests.helpers import assert_clean, git, run_cli

if TYPE_CHECKING:
    from gitmem.store.memories import MemoryRepo


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def pyproj(tmp_path: Path) -> Path:
    root = write(tmp_path / "billing", {
        "pyproject.toml": '[project]\nname = "billing"\ndependencies = ["fastapi>=0.110", "sqlalchemy"]\n'
                          '[dependency-groups]\ndev = ["pytest"]\n'
                          '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n[tool.ruff]\nline-length = 100\n'
                          '[tool.mypy]\nstrict = true\n',
        "uv.lock": "version = 1\n",
        "Makefile": ".PHONY: test lint\ntest:\n\tuv run pytest\nlint:\n\tuv run ruff check .\nCC := gcc\n",
        "src/billing/__init__.py": "",
        "src/billing/invoice_service.py": "import os\nURL = os.environ['DATABASE_URL']\n",
        "src/billing/tax_rules.py": "",
        "src/billing/api_routes.py": "",
        "tests/conftest.py": "",
        "tests/test_invoice_service.py": "def test_x():\n    pass\n",
        "tests/test_tax_rules.py": "",
        "docs/index.md": "# docs\n",
        "node_modules/left-pad/index.js": "",  # skipped
        ".venv/lib/site.py": "",  # skipped
    })
    git(root, "init", "-q")
    return root


def pnpm_monorepo(root: Path) -> Path:
    return write(root, {
        "package.json": json.dumps({"name": "shop", "private": True, "packageManager": "pnpm@9.0.0",
                                    "workspaces": ["packages/*", "apps/*"],
                                    "scripts": {"build": "turbo build", "test": "vitest run", "lint": "eslint .",
                                                "dev": "turbo dev", "postinstall": "husky"}}),
        "pnpm-lock.yaml": "lockfileVersion: '9.0'\n",
        "pnpm-workspace.yaml": "packages:\n  - 'packages/*'\n  - 'apps/*'\n",
        "turbo.json": "{}",
        "tsconfig.json": "{}",
        "apps/web/package.json": json.dumps({"dependencies": {"react": "18", "next": "14"},
                                             "devDependencies": {"vitest": "1"}}),
        "apps/web/src/user-card.tsx": "", "apps/web/src/cart-total.ts": "", "apps/web/src/price-format.ts": "",
        "apps/web/src/user-card.test.tsx": "", "apps/web/src/cart-total.test.ts": "",
        "packages/api/package.json": json.dumps({"dependencies": {"express": "4"}}),
        "packages/api/src/order-routes.ts": "process.env.STRIPE_KEY",
        "packages/api/src/__tests__/order-routes.ts": "",
    })


def test_python_project(pyproj: Path) -> None:
    found = scan.scan(pyproj)
    assert found.stack == ["python (uv; uv.lock)"]
    assert {"fastapi (python dependencies)", "sqlalchemy (python dependencies)"} <= set(found.frameworks)
    commands = [(t, c) for t, c, _ in found.commands]
    assert commands[:2] == [("test", "make test"), ("lint", "make lint")]  # the project's own entry points first
    assert ("test", "uv run pytest") in commands and ("typecheck", "uv run mypy") in commands
    assert ("lint", "uv run ruff check .") in commands
    assert any(c.startswith("python file names: snake_case (100%") for c in found.conventions)
    assert "tests: tests/test_*.py (2 files)" in found.conventions
    assert "pytest fixtures in conftest.py" in found.conventions
    assert "`src/`: source (4 files)" in found.structure and "`tests/`: tests (3 files)" in found.structure
    assert "`docs/`: documentation (1 file)" in found.structure
    assert not any("node_modules" in s or ".venv" in s for s in found.structure)


def test_pnpm_monorepo(tmp_path: Path) -> None:
    found = scan.scan(pnpm_monorepo(tmp_path / "shop"))
    assert found.stack == ["typescript / node (pnpm; pnpm-lock.yaml)"]
    assert {"react (package.json)", "next (package.json)", "express (package.json)",
            "vitest (package.json)"} <= set(found.frameworks)
    assert [(t, c) for t, c, _ in found.commands] == [("build", "pnpm build"), ("test", "pnpm test"),
                                                      ("lint", "pnpm lint"), ("dev", "pnpm dev")]
    assert "monorepo: pnpm workspaces in package.json (packages/*, apps/*)" in found.structure
    assert "monorepo: pnpm-workspace.yaml (packages/*, apps/*)" in found.structure
    assert "monorepo tool: turbo (turbo.json)" in found.structure
    assert "`apps/`: workspace apps (6 files)" in found.structure
    assert any(c.startswith("typescript file names: kebab-case (100%") for c in found.conventions)
    assert "tests: *.test.ts/js (2 files)" in found.conventions and "tests: __tests__/ (1 file)" in found.conventions


def test_cargo_workspace(tmp_path: Path) -> None:
    root = write(tmp_path / "engine", {
        "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\n[workspace.dependencies]\ntokio = "1"\n',
        "crates/core/Cargo.toml": '[package]\nname = "core"\n[dependencies]\naxum = "0.7"\nserde = "1"\n',
        "crates/core/src/lib.rs": "", "crates/core/src/route_table.rs": "",
        "crates/core/tests/routing.rs": "",
        "justfile": "test:\n    cargo test\nfmt-check:\n    cargo fmt --check\n",
    })
    found = scan.scan(root)
    assert found.stack == ["rust (cargo; Cargo.toml)"]
    assert {"axum (Cargo.toml)", "tokio (Cargo.toml)", "serde (Cargo.toml)"} <= set(found.frameworks)
    commands = [(t, c) for t, c, _ in found.commands]
    assert commands[:2] == [("test", "just test"), ("format", "just fmt-check")]
    assert ("test", "cargo test --workspace") in commands and ("lint", "cargo clippy --workspace") in commands
    assert "monorepo: Cargo workspace (crates/*)" in found.structure
    assert "tests: tests/*.rs (integration tests) (1 file)" in found.conventions
    assert any(c.startswith("rust file names: snake_case") for c in found.conventions)


def test_go_module(tmp_path: Path) -> None:
    root = write(tmp_path / "svc", {
        "go.mod": "module github.com/acme/svc\n\ngo 1.22\n\nrequire github.com/gin-gonic/gin v1.9.1\n",
        "cmd/server/main.go": "package main\n", "internal/store/store.go": "package store\n",
        "internal/store/store_test.go": "package store\n", "internal/store/order_repo.go": "",
    })
    found = scan.scan(root)
    assert found.stack == ["go 1.22 (go modules; module github.com/acme/svc)"]
    assert found.frameworks == ["gin (go.mod)"]
    assert [(t, c) for t, c, _ in found.commands] == [("build", "go build ./..."), ("test", "go test ./..."),
                                                      ("lint", "go vet ./...")]
    assert "tests: *_test.go next to the code (1 file)" in found.conventions
    assert "`cmd/`: Go entry points (1 file)" in found.structure
    assert "`internal/`: Go internal packages (3 files)" in found.structure


def test_scan_is_bounded_and_runs_nothing(tmp_path: Path) -> None:
    root = write(tmp_path / "big", {"setup.py": "raise SystemExit('executed!')\n", "Makefile": "test:\n\texit 1\n"})
    for i in range(30):
        write(root, {f"pkg{i}/mod_{j}.py": "" for j in range(40)})
    started = time.monotonic()
    found = scan.scan(root)
    assert time.monotonic() - started < 2.0 and found.files == 1202
    small = scan.walk(root, max_files=100)
    assert small.truncated and len(small.files) == 100


def test_scan_commit_rescan_keeps_learned_sections(repo_path: Path, pyproj: Path) -> None:
    env = {"GITMEM_REPO": str(repo_path)}
    result = run_cli("project", "scan", "--cwd", str(pyproj), "--json", env=env)
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["changed"] and data["path"] == "projects/billing.md" and data["scan"]["files"] == 11
    body = git(repo_path, "log", "-1", "--format=%B")
    assert "Gitmem-Op: update" in body and "Gitmem-Source: scan:billing" in body
    path = repo_path / "projects" / "billing.md"
    text = path.read_text()
    assert text.startswith('---\nproject: "billing"\nname: "billing"\nroot: ') and "schema_version: 1\n---\n" in text
    for section in ("Tech stack", "Frameworks", "Commands", "Conventions", "Structure", "Notes", "Directives",
                    "Hot paths"):
        assert f"\n## {section}\n" in text
    count = git(repo_path, "rev-list", "--count", "HEAD")

    # within 24 h nothing happens; --force rescans but an unchanged project makes no commit
    assert "up to date" in run_cli("project", "scan", "--cwd", str(pyproj), env=env).out
    assert "nothing committed" in run_cli("project", "scan", "--cwd", str(pyproj), "--force", env=env).out
    assert git(repo_path, "rev-list", "--count", "HEAD") == count

    # learned sections edited by hand (and a custom section) survive a rescan of a changed project
    pf = projects.parse(text)
    pf.sections["Notes"] = "- 2026-11-01: Tests need a running Postgres (docker compose up db)"
    pf.sections["Directives"] = "- `directive-abc`: Never use unittest."
    pf.sections["Hot paths"] = "- `src/billing/invoice_service.py`"
    pf.sections["Deploy"] = "Deployed with fly.io"
    path.write_text(projects.render(pf))
    git(repo_path, "commit", "-qam", "hand edit")
    write(pyproj, {"Cargo.toml": '[package]\nname = "native"\n', "tests/test_more.py": ""})
    assert run_cli("project", "scan", "--cwd", str(pyproj), "--force", env=env).code == 0
    after = projects.parse(path.read_text())
    assert after.sections["Notes"] == pf.sections["Notes"]
    assert after.sections["Directives"] == pf.sections["Directives"]
    assert after.sections["Hot paths"] == pf.sections["Hot paths"]
    assert after.sections["Deploy"] == "Deployed with fly.io"
    assert "rust (cargo; Cargo.toml)" in after.sections["Tech stack"]
    assert "tests/test_*.py (3 files)" in after.sections["Conventions"]
    assert int(git(repo_path, "rev-list", "--count", "HEAD")) == int(count) + 2
    assert_clean(repo_path)

    shown = json.loads(run_cli("project", "show", "--cwd", str(pyproj), "--json", env=env).out)
    assert shown["project"] == "billing" and not shown["stale"]
    assert shown["summary"].startswith("Stack: python (uv); rust (cargo)")
    assert "Tests need a running Postgres" in shown["summary"]
    assert run_cli("project", "show", "--cwd", str(pyproj), env=env).out == path.read_text()


def test_summary_is_at_most_650_characters(repo: MemoryRepo, tmp_path: Path) -> None:
    root = pnpm_monorepo(tmp_path / "shop")
    write(root, {f"apps/app{i}/package.json": "{}" for i in range(20)})
    result = projects.scan_and_write(repo, root)
    assert result.changed
    pf = projects.read(repo.path, result.project)
    assert pf is not None
    pf.sections["Notes"] = toolnotes.merge_notes("", [f"A long learned note number {i} " + "x" * 150
                                                     for i in range(30)], "2026-11-30")
    (repo.path / projects.project_path(result.project)).write_text(projects.render(pf))
    summary = projects.project_summary(repo.path, result.project)
    assert len(summary) <= 650 and summary.endswith("…")
    assert summary.startswith("Stack: typescript / node (pnpm)\nFrameworks: react, next, express, vitest")
    assert "Commands: build `pnpm build`; test `pnpm test`; lint `pnpm lint`; dev `pnpm dev`" in summary
    assert projects.project_summary(repo.path, "no-such-project") == ""


def post(session: str, cwd: Path, tool: str, tool_input: dict[str, Any], response: Any, n: int) -> str:
    return json.dumps({"session_id": session, "transcript_path": str(cwd / "t.jsonl"), "cwd": str(cwd),
                       "hook_event_name": "PostToolUse", "tool_name": tool, "tool_input": tool_input,
                       "tool_response": response, "tool_use_id": f"toolu_{n}"})


def test_learning_from_tool_output(repo_path: Path, pyproj: Path) -> None:
    env = {**os.environ, "GITMEM_REPO": str(repo_path)}
    secret_url = "postgres://app:s3cr3t-pw@db.internal:5432/billing"
    calls: list[tuple[str, dict[str, Any], Any]] = [
        ("Bash", {"command": "cd /x && uv run pytest -x tests"}, {"stdout": "12 passed in 0.4s\n", "stderr": "",
                                                                   "interrupted": False}),
        ("Bash", {"command": "uv run ruff check ."}, {"stdout": "All checks passed!", "stderr": ""}),
        ("Bash", {"command": "cargo build"}, {"stdout": "", "stderr": "error[E0433]: failed to resolve"}),
        ("Bash", {"command": "uv run pytest tests/test_tax_rules.py"},
         {"stdout": "E   ModuleNotFoundError: No module named 'stripe'\n1 failed", "stderr": ""}),
        ("Bash", {"command": "python -c 'import billing.payments'"},
         {"stdout": "", "stderr": "Traceback (most recent call last):\nModuleNotFoundError: No module named "
                                  "'stripe'\n"}),
        ("Bash", {"command": f"DATABASE_URL={secret_url} uv run uvicorn billing.app:app --port 8080"},
         {"stdout": "INFO: Uvicorn running on http://127.0.0.1:8080", "stderr": ""}),
        ("Read", {"file_path": str(pyproj / "src/billing/invoice_service.py")},
         {"file": {"content": "token = os.environ.get('STRIPE_API_KEY')\nprint(process.env.SENTRY_DSN)"}}),
    ]
    for n, (tool, tool_input, response) in enumerate(calls):
        proc = subprocess.run([sys.executable, "-m", "gitmem.agents.claude.entry", "post-tool-use"],
                              input=post("s-42", pyproj, tool, tool_input, response, n).encode(), env=env,
                              capture_output=True, cwd=pyproj, timeout=60)
        assert proc.returncode == 0 and proc.stderr == b""
    records = list(observe.read_observations(repo_path / "local"))
    assert len(records) == len(calls)

    notes = toolnotes.learn_notes(records)
    assert "Tests pass with `uv run pytest -x tests`" in notes
    assert "Lint/check passes with `uv run ruff check .`" in notes
    assert not any("cargo build" in n or "test_tax_rules" in n for n in notes)  # failed: not learned
    assert any(n.startswith("Port 8080 in use (`") for n in notes)
    assert {"Uses environment variable `DATABASE_URL`", "Uses environment variable `STRIPE_API_KEY`",
            "Uses environment variable `SENTRY_DSN`"} <= set(notes)
    assert "Recurring error (2×): ModuleNotFoundError: No module named 'stripe'" in notes

    # the detached learner's command: the project file is created (scanned first), one commit for the session
    before = int(git(repo_path, "rev-list", "--count", "HEAD"))
    result = run_cli("learn-session", "--session", "s-42", "--project", "billing", "--timeout", "60",
                     env={"GITMEM_REPO": str(repo_path)})
    assert result.code == 0, result.err
    log = git(repo_path, "log", "--format=%s%n%b%x00", "--", "projects/billing.md").split("\0")
    assert "project: notes from session s-42" in log[0] and "Gitmem-Session: s-42" in log[0]
    assert int(git(repo_path, "rev-list", "--count", "HEAD")) >= before + 1
    text = (repo_path / "projects" / "billing.md").read_text()
    assert "Tests pass with `uv run pytest -x tests`" in text and "python (uv; uv.lock)" in text
    assert "s3cr3t" not in text and "postgres://" not in text
    assert "- `src/billing/invoice_service.py`" in text  # hot paths refreshed
    last = json.loads((repo_path / "local" / "last-learn.json").read_text())
    assert last["project"]["notes"]["billing"]

    # learning the same session again changes nothing
    touched = git(repo_path, "log", "-1", "--format=%H", "--", "projects/billing.md")
    run_cli("learn-session", "--session", "s-42", "--project", "billing", env={"GITMEM_REPO": str(repo_path)})
    assert git(repo_path, "log", "-1", "--format=%H", "--", "projects/billing.md") == touched

    # a session that only reads the hot files again, in another order of use, is no news: no commit (a session
    # with one `ls` made a "notes" commit whose whole diff was the hot paths reordered)
    def reads(session: str, names: list[str]) -> None:
        for n, name in enumerate(names):
            subprocess.run([sys.executable, "-m", "gitmem.agents.claude.entry", "post-tool-use"],
                           input=post(session, pyproj, "Read", {"file_path": str(pyproj / name)},
                                      {"file": {"content": "x"}}, 100 + n).encode(),
                           env=env, capture_output=True, cwd=pyproj, timeout=60, check=True)
        run_cli("learn-session", "--session", session, "--project", "billing", env={"GITMEM_REPO": str(repo_path)})

    reads("s-43", ["pyproject.toml"])  # a new hot path: written
    listed = (repo_path / "projects" / "billing.md").read_text()
    assert "- `pyproject.toml`" in listed
    touched = git(repo_path, "log", "-1", "--format=%H", "--", "projects/billing.md")
    reads("s-44", ["src/billing/invoice_service.py"] * 4)  # the same paths, now in another order of use
    assert git(repo_path, "log", "-1", "--format=%H", "--", "projects/billing.md") == touched
    assert_clean(repo_path)


def test_notes_are_deduplicated_and_capped() -> None:
    section = "Written by hand: ask Ana before touching billing.\n- 2026-11-01: Port 3000 in use (`localhost:3000`)"
    merged = toolnotes.merge_notes(section, ["Port 3000 in use (`localhost:3000`)", "Builds with `make`"],
                                  "2026-11-30")
    assert merged.splitlines() == ["Written by hand: ask Ana before touching billing.",
                                   "- 2026-11-30: Builds with `make`",
                                   "- 2026-11-30: Port 3000 in use (`localhost:3000`)"]
    many = toolnotes.merge_notes(merged, [f"note {i}" for i in range(60)], "2026-12-01")
    bullets = [ln for ln in many.splitlines() if ln.startswith("- ")]
    assert len(bullets) == toolnotes.MAX_NOTES and bullets[0] == "- 2026-12-01: note 59"


def _session_start(code: Path, env: dict[str, str], session: str) -> str:
    data = json.dumps({"session_id": session, "cwd": str(code), "hook_event_name": "SessionStart",
                       "source": "startup", "transcript_path": str(code / "t.jsonl")})
    proc = subprocess.run([sys.executable, "-m", "gitmem.agents.claude.entry", "session-start"], input=data.encode(),
                          env={**os.environ, **env}, capture_output=True, cwd=code, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])


def _wait_for(check: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def test_session_start_scans_detached_when_missing_or_stale(repo_path: Path, pyproj: Path) -> None:
    env = {"GITMEM_REPO": str(repo_path)}
    path = repo_path / "projects" / "billing.md"
    started = time.monotonic()
    first = _session_start(pyproj, env, "a")
    assert time.monotonic() - started < 10 and "## Project memory" not in first  # never scans inline
    assert _wait_for(lambda: path.exists() and "Gitmem-Source: scan:billing" in git(repo_path, "log", "-1"))
    second = _session_start(pyproj, env, "b")
    assert "## Project memory (billing)\nStack: python (uv)" in second
    assert "Commands: test `make test`; lint `make lint`" in second
    assert_clean(repo_path)

    # older than 24 h (and no later scan recorded): the next session start rescans it
    old = path.read_text().replace(projects.parse(path.read_text()).meta["scanned_at"], "2020-01-01T00:00:00Z")
    path.write_text(old)
    git(repo_path, "commit", "-qam", "age it")
    (repo_path / "local" / "project-scans.json").unlink()
    assert projects.needs_scan(repo_path, "billing")
    write(pyproj, {"go.mod": "module example.com/billing\n\ngo 1.22\n"})
    _session_start(pyproj, env, "c")
    assert _wait_for(lambda: "go 1.22" in git(repo_path, "show", "HEAD:projects/billing.md"))  # committed
    assert not projects.needs_scan(repo_path, "billing")
    assert_clean(repo_path)


def test_a_plain_folder_is_not_scanned_and_a_vanished_folder_is_not_the_hooks_own(repo_path: Path,
                                                                                    tmp_path: Path) -> None:
    """A folder that is neither in a git work tree nor holds a manifest is no project: its listing (other users'
    folders in /tmp) was committed as one. A session whose folder was deleted is read in the nearest folder still
    there, not in the folder the hook process happened to run in, which was scanned instead."""
    plain = write(tmp_path / "downloads", {"alice/report.pdf": "x", "bob/notes.txt": "y"})
    env = {"GITMEM_REPO": str(repo_path)}
    _session_start(plain, env, "a")
    gone = plain / "deleted" / "project"
    data = json.dumps({"session_id": "b", "cwd": str(gone), "hook_event_name": "SessionStart", "source": "startup"})
    elsewhere = write(tmp_path / "elsewhere", {"pyproject.toml": '[project]\nname = "elsewhere"\n'})
    proc = subprocess.run([sys.executable, "-m", "gitmem.agents.claude.entry", "session-start"], input=data.encode(),
                          env={**os.environ, **env}, capture_output=True, cwd=elsewhere, timeout=60)
    assert proc.returncode == 0, proc.stderr
    time.sleep(3)  # a scan would be committed by now (the one above took well under that)
    assert not list((repo_path / "projects").glob("*.md")) if (repo_path / "projects").exists() else True
    assert "scan:" not in git(repo_path, "log", "--format=%B")
    from gitmem.agents.claude.toolcall import working_directory

    assert working_directory({"cwd": str(gone)}, str(elsewhere)) == str(plain.resolve())


def test_session_start_can_turn_the_scan_off(repo_path: Path, pyproj: Path) -> None:
    _session_start(pyproj, {"GITMEM_REPO": str(repo_path), "GITMEM_PROJECT_SCAN": "0"}, "a")
    time.sleep(1.5)
    assert not (repo_path / "projects" / "billing.md").exists()
