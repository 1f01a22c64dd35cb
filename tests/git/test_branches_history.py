"""gitmem.git.branches (ancestry, uncommitted paths, merge commits) and gitmem.git.history (read and rewrite every
object), against the real git CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gitmem.git.branches import ahead_behind, is_ancestor, merge_into_branch, uncommitted_paths
from gitmem.git.history import read_history, rewrite_history
from gitmem.git.store import GitStore
from tests.helpers import assert_clean, git

AUTHOR = "Test User <test@example.com>"


def _store(tmp_path: Path) -> GitStore:
    store = GitStore.init(tmp_path / "mem")
    with store.locked():
        store.commit({"a.md": b"one\n"}, "first", AUTHOR)
    return store


def test_a_diverged_branch_merges_into_a_two_parent_commit_that_git_accepts(tmp_path: Path) -> None:
    store = _store(tmp_path)
    base = store.head()
    assert base is not None
    git(store.path, "checkout", "-q", "-b", "other")
    (store.path / "b.md").write_text("theirs\n")
    git(store.path, "add", "b.md")
    git(store.path, "commit", "-qm", "theirs")
    theirs = git(store.path, "rev-parse", "HEAD").strip().encode()
    git(store.path, "checkout", "-q", "main")
    with store.locked():
        store.commit({"a.md": b"ours\n"}, "ours", AUTHOR)
    ours = store.head()
    assert ours is not None and is_ancestor(store, base, ours) and not is_ancestor(store, theirs, ours)
    asked: list[str] = []

    def merge(path: str, base: bytes | None, mine: bytes | None, other: bytes | None) -> dict[str, bytes | None]:
        asked.append(path)
        return {path: mine}

    with store.locked():
        outcome = merge_into_branch(store, theirs, merge=merge, message=lambda files: f"merge {len(files)}",
                                    author=AUTHOR)
    assert outcome.action == "merged" and outcome.changed == ["b.md"] and asked == []  # only one side changed b.md
    assert git(store.path, "rev-list", "--parents", "-n1", "HEAD").split()[1:] == [ours.decode(), theirs.decode()]
    assert (store.path / "b.md").read_text() == "theirs\n" and (store.path / "a.md").read_text() == "ours\n"
    assert_clean(store.path)
    git(store.path, "fsck", "--strict")
    assert ahead_behind(store, "main", "origin") == (4, 0)  # no tracking branch: every commit is ours
    (store.path / "stray.md").write_text("not committed\n")
    assert uncommitted_paths(store) == ("stray.md",)


def test_rewriting_history_keeps_untouched_commits_and_drops_the_old_objects(tmp_path: Path) -> None:
    store = _store(tmp_path)
    first = store.head()
    with store.locked():
        store.commit({"b.md": b"token s3cret here\n"}, "add s3cret", AUTHOR)
    history = read_history(store)
    assert history.refs == ("refs/heads/main",) and set(history.names) == {"a.md", "b.md"}
    assert b"token s3cret here\n" in history.contents.values() and len(history.messages) == 2
    with store.locked():
        result = rewrite_history(store, content=lambda data: data.replace(b"s3cret", b"[X]"),
                                 name=lambda n: n, message=lambda raw: raw.replace(b"s3cret", b"[X]"))
    assert result.rewritten == 1 and list(result.refs) == ["refs/heads/main"]
    assert git(store.path, "rev-list", "--max-parents=0", "HEAD").strip() == first.decode()  # kept its SHA
    assert git(store.path, "log", "-1", "--format=%s").strip() == "add [X]"
    assert (store.path / "b.md").read_text() == "token [X] here\n"
    every_object = subprocess.run(["git", "-C", str(store.path), "cat-file", "--batch-all-objects", "--batch"],
                                  capture_output=True, check=True).stdout
    assert b"s3cret" not in every_object
    assert_clean(store.path)
    git(store.path, "fsck", "--strict")
