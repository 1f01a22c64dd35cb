"""``gitmem review`` between two clones of a bare remote: a review shows what the head side changed since the two
sides forked (``git diff base...head``), whatever the base side did meanwhile."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem.config import Config
from gitmem.git.remote import changes_between, fetch
from gitmem.store.memories import MemoryRepo
from gitmem.sync import round as sync
from gitmem.sync.review import pending_review
from tests.helpers import git, run_cli

AUTHOR = "Test User <test@example.com>"


@pytest.fixture
def machines(clones: tuple[Path, Path, Path]) -> tuple[MemoryRepo, MemoryRepo]:
    a, b, _remote = clones
    return MemoryRepo(Config(repo=a)), MemoryRepo(Config(repo=b))


def _review(repo: MemoryRepo, *args: str) -> str:
    result = run_cli("--repo", str(repo.path), "review", *args)
    assert result.code == 0, result.err
    return result.out


def test_review_of_a_branch_both_ahead_and_behind(machines: tuple[MemoryRepo, MemoryRepo]) -> None:
    a, b = machines
    theirs = b.remember("Pin the CI runner image by digest")
    sync.sync(b.git, author=AUTHOR)
    ours = a.remember("Run the migrations before the deploy")
    fetch(a.git)  # the remote branch moved on: a is one commit ahead and one behind
    assert git(a.path, "rev-list", "--left-right", "--count", "origin/main...HEAD").split() == ["1", "1"]

    pending = _review(a)
    assert "(1 commit)" in pending and "1 added" in pending
    assert ours.id in pending
    assert theirs.id not in pending and "Removed" not in pending  # the other machine's memory is not ours to remove
    assert _review(a, "origin/main..HEAD") == pending
    assert pending_review(a).markdown() == pending  # what the viewer's review page shows

    incoming = _review(a, "HEAD..origin/main")
    assert "(1 commit)" in incoming and "### Added" in incoming and theirs.id in incoming
    assert ours.id not in incoming and "Removed" not in incoming


def test_review_of_a_range_with_nothing_new(machines: tuple[MemoryRepo, MemoryRepo]) -> None:
    a, _b = machines
    ours = a.remember("Run the migrations before the deploy")
    text = _review(a, "main..origin/main")  # main is strictly ahead: the remote branch adds nothing
    assert "(0 commits)" in text and "no memory changes" in text
    assert ours.id not in text and "###" not in text
    assert changes_between(a.git, "HEAD", "origin/main") == {}
    assert list(changes_between(a.git, "origin/main", "HEAD")) == [ours.path]


def test_a_moved_memory_is_one_change_and_a_moved_then_forgotten_one_is_deprecated(
        machines: tuple[MemoryRepo, MemoryRepo]) -> None:
    """gitmem move is a file gone and one come with the same id: the review said "1 added, 1 removed", which a
    pull request's reviewer reads as a memory lost; moved and forgotten in the range, it read as newly added."""
    a, _b = machines
    moved = a.remember("Use the shared staging cluster", project="shop")
    both = a.remember("Deploy on Fridays is fine", project="shop")
    sync.sync(a.git, author=AUTHOR)
    for memory_id in (moved.id, both.id):
        assert run_cli("--repo", str(a.path), "move", memory_id, "--project", "web").code == 0
    a.forget(both.id, "we stopped deploying on Fridays")
    text = _review(a)
    assert "Added" not in text and "Removed" not in text, text
    assert "1 changed, 1 deprecated" in text and "project shop → web" in text
    assert both.id in text.split("### Deprecated")[1]
