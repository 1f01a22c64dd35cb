"""Fixtures: every test runs with an isolated HOME and git environment and builds real repositories."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from gitmem.config import Config
from gitmem.store.layout import init_repo

if TYPE_CHECKING:
    from gitmem.store.memories import MemoryRepo

# Properties assert behaviour, not speed (speed lives in bench/): no per-example deadline, which a shared or busy
# machine turns into failures of code that is correct.
settings.register_profile("gitmem", deadline=None)
settings.load_profile("gitmem")


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
    # it back on (tests/agents/claude/test_hooks.py), the others should not leave one running behind them
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
