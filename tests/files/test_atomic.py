"""Atomic writes and reads that never follow a symbolic link out of the memory repository."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from gitmem.files.atomic import UnsafePathError, atomic_write, inside, read_inside, settled


def test_atomic_write_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "folder" / "post-commit"
    atomic_write(target, b"old")
    atomic_write(target, b"#!/bin/sh\nexit 0\n", mode=0o755)
    assert target.read_bytes() == b"#!/bin/sh\nexit 0\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert sorted(p.name for p in target.parent.iterdir()) == ["post-commit"]


def test_a_failed_write_keeps_the_old_content_and_removes_its_temporary(tmp_path: Path) -> None:
    target = tmp_path / "memory.md"
    atomic_write(target, b"old")
    with pytest.raises(TypeError):
        atomic_write(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["memory.md"]


def test_reads_refuse_a_symbolic_link_on_the_way(tmp_path: Path) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "memories").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.md").write_text("private key")
    (repo / "memories" / "ok.md").write_text("a memory")
    assert read_inside(repo, "memories/ok.md") == b"a memory"
    assert inside(repo, "memories/new/not-yet.md") == repo / "memories" / "new" / "not-yet.md"

    (repo / "memories" / "linked").symlink_to(outside)
    (repo / "memories" / "leak.md").symlink_to(outside / "secret.md")
    for rel in ("memories/linked/secret.md", "memories/leak.md"):
        with pytest.raises(UnsafePathError) as info:
            read_inside(repo, rel)
        assert "symbolic link" in str(info.value) and isinstance(info.value, OSError)


def test_settled_waits_out_the_timestamp_tick() -> None:
    second = 1_700_000_000 * 1_000_000_000  # a whole-second mtime: coarse file system, two seconds of margin
    assert not settled(second, second + 1_000_000_000)
    assert settled(second, second + 2_100_000_000)
    fine = second + 123_456_789  # sub-second timestamps: 50 ms
    assert not settled(fine, fine + 10_000_000)
    assert settled(fine, fine + 60_000_000)

