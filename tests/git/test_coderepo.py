"""Reading commits of a code repository (made with the real git CLI) for extraction on commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem.errors import RepoError
from gitmem.git.coderepo import code_commit, code_range, code_repo_root, count_range, hooks_dir
from tests.helpers import git


@pytest.fixture
def code(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Dev")
    git(root, "config", "user.email", "dev@example.com")
    (root / "README.md").write_text("# shop\n")
    (root / "logo.png").write_bytes(b"\x89PNG\0\0binary")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "start")
    (root / "README.md").write_text("# shop\n\nUses PostgreSQL.\n")
    (root / "app.py").write_text("print('hi')\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "Switch to PostgreSQL\n\nMySQL JSON queries were too slow.")
    git(root, "rm", "-q", "app.py")
    git(root, "commit", "-q", "-m", "drop app")
    return root


def test_a_commit_reads_its_message_and_only_the_wanted_changed_files(code: Path) -> None:
    commit = code_commit(code, "HEAD~1", lambda path: path.endswith(".md"))
    assert commit.sha == git(code, "rev-parse", "HEAD~1").strip()
    assert commit.message.startswith("Switch to PostgreSQL\n\nMySQL JSON") and commit.parents == 1
    assert commit.files == {"README.md": ("# shop\n", "# shop\n\nUses PostgreSQL.\n")}
    deleted = code_commit(code, "HEAD", lambda _path: True)
    assert deleted.files == {"app.py": ("print('hi')\n", None)}
    first = code_commit(code, "HEAD~2", lambda _path: True)
    assert first.parents == 0 and first.files["logo.png"] == (None, "")  # binary files read as ""


def test_a_range_is_read_oldest_first_and_counted(code: Path) -> None:
    everything = code_range(code, "HEAD", lambda _path: False)
    assert [c.message.splitlines()[0] for c in everything] == ["start", "Switch to PostgreSQL", "drop app"]
    assert [c.message.splitlines()[0] for c in code_range(code, "HEAD~2..HEAD", lambda _p: False)] == [
        "Switch to PostgreSQL", "drop app"]
    assert count_range(code, "HEAD~2..HEAD") == 2 and count_range(code, "HEAD") == 3


def test_bad_revisions_and_folders_get_clear_errors(code: Path, tmp_path: Path) -> None:
    with pytest.raises(RepoError, match="no commit 'nope'"):
        code_commit(code, "nope", lambda _p: True)
    with pytest.raises(RepoError, match="cannot resolve"):
        code_range(code, "nope..HEAD", lambda _p: True)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(RepoError, match="not a git repository"):
        code_commit(plain, "HEAD", lambda _p: True)


def test_the_repository_root_and_its_hooks_folder(code: Path) -> None:
    (code / "src" / "deep").mkdir(parents=True)
    assert code_repo_root(code / "src" / "deep") == code.resolve()
    assert hooks_dir(code) == code / ".git" / "hooks"
    git(code, "config", "core.hooksPath", ".githooks")
    assert hooks_dir(code) == code / ".githooks"  # where git itself looks, as the hook installer must
