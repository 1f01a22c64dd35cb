"""Machines joining one remote: any empty bare repository is initialised, a failed init leaves nothing, and
clones syncing at the same time treat a refused push as a race (fetch, merge, push again), never as an error."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest

from gitmem.config import Config
from gitmem.errors import GitmemError, RepoError
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.sync import round as sync
from tests.helpers import assert_clean, git, run_cli

AUTHOR = "Test User <test@example.com>"


def _bare(path: Path, head: str) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", "-b", head, str(path)], check=True)
    return path


@pytest.mark.parametrize("head", ["master", "main", "trunk"])
def test_init_joins_an_empty_bare_remote_whatever_its_head(tmp_path: Path, head: str) -> None:
    remote = _bare(tmp_path / "remote.git", head)
    assert init_repo(tmp_path / "a", remote=str(remote)).action == "created"
    assert "gitmem.toml" in git(remote, "ls-tree", "--name-only", "main")  # the remote now holds the repo
    second = run_cli("init", str(tmp_path / "b"), "--remote", str(remote), "--json")
    assert second.code == 0, second.err
    assert json.loads(second.out)["action"] == "cloned"
    b = tmp_path / "b"
    assert git(b, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert_clean(b)
    if head == "master":  # the two machines then work together
        repo_b = MemoryRepo(Config(repo=b))
        repo_b.remember("joined from the second machine", id="joined")
        sync.sync(repo_b.git, author=AUTHOR)
        repo_a = MemoryRepo(Config(repo=tmp_path / "a"))
        assert sync.sync(repo_a.git, author=AUTHOR).action == "fast-forward"
        assert repo_a.get("joined").text == "joined from the second machine"
        assert_clean(tmp_path / "a")


def _foreign_remote(tmp_path: Path, branch: str) -> Path:
    work = tmp_path / "foreign"
    subprocess.run(["git", "init", "-q", "-b", branch, str(work)], check=True)
    (work / "app.py").write_text("print('hi')\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "code")
    remote = tmp_path / "foreign.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(remote)], check=True)
    return remote


@pytest.mark.parametrize("kind", ["other-branches", "main-without-gitmem", "unreachable"])
def test_a_failed_init_leaves_nothing_behind(tmp_path: Path, kind: str) -> None:
    if kind == "unreachable":
        remote, expected = tmp_path / "missing.git", "cannot reach"
    else:
        remote = _foreign_remote(tmp_path, "master" if kind == "other-branches" else "main")
        expected = "not a gitmem memory repository"
    target = tmp_path / "mem"
    with pytest.raises(GitmemError, match=expected):
        init_repo(target, remote=str(remote))
    assert not target.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(GitmemError, match=expected):
        init_repo(empty, remote=str(remote))
    assert empty.is_dir() and list(empty.iterdir()) == []  # the user's folder stays, empty as it was


def test_a_push_refused_while_the_remote_does_not_move_says_so(tmp_path: Path) -> None:
    remote = _bare(tmp_path / "remote.git", "main")
    init_repo(tmp_path / "a", remote=str(remote))
    repo = MemoryRepo(Config(repo=tmp_path / "a"))
    repo.remember("kept locally when the push is refused", id="kept")
    (remote / "refs" / "heads" / "main.lock").write_bytes(b"")  # held by a push that never ends
    with pytest.raises(RepoError, match="locked by another push"):
        sync.sync(repo.git, author=AUTHOR)
    assert repo.get("kept").text == "kept locally when the push is refused"
    assert_clean(repo.path)


def test_clones_syncing_at_once_all_succeed_and_lose_nothing(tmp_path: Path) -> None:
    remote = _bare(tmp_path / "remote.git", "master")
    clones = [tmp_path / f"c{i}" for i in range(3)]
    for index, clone in enumerate(clones):
        init_repo(clone, remote=str(remote))
        MemoryRepo(Config(repo=clone)).remember(f"clone {index} note", id=f"c{index}")
    results: list[tuple[int, str]] = []

    def work(clone: Path) -> None:
        result = run_cli("--repo", str(clone), "sync", timeout=120)
        results.append((result.code, result.err))

    threads = [threading.Thread(target=work, args=(clone,)) for clone in clones]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [(0, "")] * 3  # the pushes raced; each lost race was fetched, merged and pushed again
    on_remote = {Path(p).stem for p in git(remote, "ls-tree", "-r", "--name-only", "main", "memories").split()}
    assert {"c0", "c1", "c2"} <= on_remote
    git(remote, "fsck", "--strict")
    for clone in clones:
        assert_clean(clone)


def test_a_push_waits_out_another_push_holding_the_remote_branch(tmp_path: Path) -> None:
    remote = _bare(tmp_path / "remote.git", "main")
    init_repo(tmp_path / "a", remote=str(remote))
    repo = MemoryRepo(Config(repo=tmp_path / "a"))
    repo.remember("pushed once the other push lets go of the branch", id="late")
    lock = remote / "refs" / "heads" / "main.lock"  # what a push moving main on this file system holds
    lock.write_text("")
    release = threading.Timer(1.0, lock.unlink)
    release.start()
    try:
        result = sync.sync(repo.git, author=AUTHOR)
    finally:
        release.join()
    assert result.pushed
    on_remote = {Path(p).stem for p in git(remote, "ls-tree", "-r", "--name-only", "main", "memories").split()}
    assert "late" in on_remote
