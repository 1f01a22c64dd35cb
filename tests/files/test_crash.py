"""A writer killed at any step never blocks the next one, and leaves nothing a user can see.

The kill is deterministic: ``GITMEM_TEST_CRASH=step[:n]`` makes the ``gitmem`` process ``os._exit`` at the n-th
time it reaches ``step`` of a write, as a kill -9 there would. After it, the next command works and the
repository is what the git CLI calls clean: nothing pending, ``fsck --strict`` quiet, no lock or temp file left,
and ``list`` shows exactly the memories HEAD holds (no "ghosts" of the commit that never happened).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from gitmem.config import Config
from gitmem.errors import RepoError
from gitmem.git import plumbing as gitplumbing
from gitmem.git.store import LOCK_NAME, SYNC_LOCK_NAME
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.sync import round as sync
from tests.helpers import assert_clean, git, run_cli

KILLED = 137
AUTHOR = "Test User <test@example.com>"


def _leftovers(repo: Path) -> list[str]:
    found = []
    for path in repo.rglob("*"):
        rel = path.relative_to(repo).as_posix()
        # the writer's and the sync's lock files stay, empty and unlocked: an flock needs its file
        if rel.startswith((".cache/", "local/")) or rel in (f".git/{LOCK_NAME}", f".git/{SYNC_LOCK_NAME}"):
            continue
        if path.name.endswith((".tmp", ".lock")) or path.name == "gitmem-journal.json":
            found.append(rel)
    return found


def _committed(repo: Path) -> set[str]:
    return {Path(p).stem for p in git(repo, "ls-tree", "-r", "--name-only", "HEAD", "memories").split()
            if p.endswith(".md")}


def _listed(repo: Path) -> set[str]:
    return {m.id for m in MemoryRepo(Config(repo=repo)).list(deprecated=True)}


def _recoveries(repo: Path) -> list[str]:
    log = repo / "local" / "gitmem.log"
    return [line for line in log.read_text("utf-8").splitlines() if "recovered:" in line] if log.exists() else []


@pytest.mark.parametrize("step", ["objects", "worktree", "index-lock", "index", "ref"])
def test_remember_killed_at_each_write_step(repo_path: Path, step: str) -> None:
    before = _committed(repo_path)
    killed = run_cli("--repo", str(repo_path), "remember", "the cache is warmed at boot", "--id", "warm",
                     env={"GITMEM_TEST_CRASH": step})
    assert killed.code == KILLED
    # a reader alone (no write yet) already sees no ghost: the half-made write is rolled back on open
    committed = _committed(repo_path)
    assert _listed(repo_path) == committed
    assert committed == (before | {"warm"} if step == "ref" else before)
    MemoryRepo(Config(repo=repo_path)).remember("retries back off exponentially", id="after")
    assert _committed(repo_path) == committed | {"after"} == _listed(repo_path)
    assert_clean(repo_path)
    assert _leftovers(repo_path) == []
    assert any("rolled back an interrupted write" in line for line in _recoveries(repo_path))
    if step == "index-lock":
        assert any("index.lock" in line for line in _recoveries(repo_path))
    if step == "ref":  # the process died after its commit, before anything else: search still finds it
        found = run_cli("--repo", str(repo_path), "search", "cache warmed", "--json")
        assert '"warm"' in found.out


def test_import_killed_midway_leaves_no_ghosts_and_a_rerun_completes(repo_path: Path, tmp_path: Path) -> None:
    data = tmp_path / "records.jsonl"
    data.write_text("".join(json.dumps({"text": f"record {i} about queues", "id": f"r{i}"}) + "\n"
                            for i in range(60)))
    killed = run_cli("--repo", str(repo_path), "import", str(data), env={"GITMEM_TEST_CRASH": "worktree:30"})
    assert killed.code == KILLED
    listed = run_cli("--repo", str(repo_path), "list", "--json")
    assert json.loads(listed.out or "[]") == []  # 29 files were written, none committed: none shown
    assert git(repo_path, "status", "--porcelain") == ""
    again = run_cli("--repo", str(repo_path), "import", str(data))
    assert again.code == 0, again.err
    assert _committed(repo_path) == {f"r{i}" for i in range(60)} == _listed(repo_path)
    assert_clean(repo_path)
    assert _leftovers(repo_path) == []


def test_sync_killed_while_fast_forwarding_recovers(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    a, b = tmp_path / "a", tmp_path / "b"
    init_repo(a, remote=str(remote))
    init_repo(b, remote=str(remote))
    writer = MemoryRepo(Config(repo=a))
    for i in range(3):
        writer.remember(f"note {i} from a", id=f"a{i}")
    sync.sync(writer.git, author=AUTHOR)
    killed = run_cli("--repo", str(b), "sync", env={"GITMEM_TEST_CRASH": "worktree:2"})
    assert killed.code == KILLED
    assert _listed(b) == _committed(b) == set()
    sync.sync(MemoryRepo(Config(repo=b)).git, author=AUTHOR)
    assert _committed(b) == {"a0", "a1", "a2"} == _listed(b)
    assert_clean(b)
    assert _leftovers(b) == []


def test_stale_git_locks_of_a_dead_process_are_removed_with_a_log_line(repo: MemoryRepo) -> None:
    old = time.time() - 3600
    planted = [repo.path / ".git" / "index.lock", repo.path / ".git" / "refs" / "heads" / "main.lock"]
    for lock in planted:
        lock.write_bytes(b"")
        os.utime(lock, (old, old))
    repo.remember("locks left by a killed git are swept")
    assert not any(lock.exists() for lock in planted)
    assert_clean(repo.path)
    lines = _recoveries(repo.path)
    assert lines and "index.lock" in lines[-1] and "refs/heads/main.lock" in lines[-1]


def test_a_fresh_git_lock_is_left_to_its_owner(repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock a running git command may hold is not stolen: the write waits, then says what to do."""
    monkeypatch.setattr(gitplumbing, "_RETRIES", 3)  # wait less than a user would
    lock = repo.path / ".git" / "index.lock"
    lock.write_bytes(b"")
    with pytest.raises(RepoError) as raised:
        repo.remember("this write waits for git")
    assert f"git's lock file {lock} stayed in place" in str(raised.value) and f"rm {lock}" in str(raised.value)
    assert lock.exists()
    lock.unlink()
    assert _listed(repo.path) == _committed(repo.path)
    assert git(repo.path, "status", "--porcelain") == ""
