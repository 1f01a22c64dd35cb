"""Fixtures: every test runs with an isolated HOME and git environment and builds real repositories."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from gitmem.config import Config
from gitmem.store.layout import init_repo

if TYPE_CHECKING:
    from gitmem.store.memories import MemoryRepo

GITMEM = shutil.which("gitmem", path=str(Path(sys.executable).parent)) or "gitmem"


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME with a git identity, and no git or gitmem variables leaking in from the outside."""
    home = tmp_path_factory.mktemp("home")
    for name in list(os.environ):
        if name.startswith(("GIT_", "GITMEM_", "XDG_")) or name in ("EDITOR", "VISUAL"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    scratch = home / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))  # drafts kept by a failed edit land here, not in /tmp
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    # hooks and git hooks warm the next session's recall block in a detached process; tests that need it turn
    # it back on (tests/test_hooks.py), the others should not leave one running behind them
    monkeypatch.setenv("GITMEM_WARM", "0")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test User")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test User")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.com")
    (home / ".gitconfig").write_text("[user]\n\tname = Test User\n\temail = test@example.com\n"
                                     "[init]\n\tdefaultBranch = main\n")
    monkeypatch.chdir(home)
    return home


@pytest.fixture
def repo_path(tmp_path: Path) -> Path:
    path = tmp_path / "mem"
    init_repo(path)
    return path


@pytest.fixture
def repo(repo_path: Path) -> Iterator[MemoryRepo]:
    import gitmem

    yield gitmem.open(repo_path, config=Config(repo=repo_path))


def git(repo: Path, *args: str) -> str:
    """Run the real git CLI on ``repo`` and return its stdout (raises on failure)."""
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@dataclass
class Run:
    code: int
    out: str
    err: str


def run_cli(*args: str, stdin: bytes | str | None = None, cwd: Path | None = None,
            env: dict[str, str] | None = None, timeout: float = 60) -> Run:
    """Run the installed ``gitmem`` console script, as a user would."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    proc = subprocess.run([GITMEM, *args], input=data, capture_output=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, timeout=timeout)
    return Run(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))


def assert_clean(repo: Path) -> None:
    """What a user checks after every command: nothing pending, nothing corrupt."""
    assert git(repo, "status", "--porcelain") == ""
    git(repo, "fsck", "--strict")
