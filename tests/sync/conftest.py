"""Two machines of one memory repository: the first made with ``init --remote`` and synced, the second a clone."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitmem.config import Config
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.sync import round as sync

AUTHOR = "Test User <test@example.com>"


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(machine a, machine b, the bare remote), both machines at the remote's first commit."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    init_repo(tmp_path / "a", remote=str(remote))
    sync.sync(MemoryRepo(Config(repo=tmp_path / "a")).git, author=AUTHOR)
    subprocess.run(["git", "clone", "-q", str(remote), str(tmp_path / "b")], check=True)
    return tmp_path / "a", tmp_path / "b", remote
