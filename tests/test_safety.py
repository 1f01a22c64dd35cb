"""Nothing outside the repository, ever; and every bad input gets one clear line, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem.config import Config
from gitmem.errors import RepoError
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.sync import round as sync
from tests.helpers import assert_clean, git, run_cli

AUTHOR = "Test User <test@example.com>"
OUTSIDE_SECRET = "outside-file-content-7f3a"


def _all_objects(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
                          capture_output=True, check=True).stdout.decode("utf-8", "replace")


# -- symbolic links -----------------------------------------------------------------------------------
def test_a_project_folder_that_is_a_link_is_never_written_through(repo: MemoryRepo, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo.path / "memories" / "shop").symlink_to(outside)
    with pytest.raises(RepoError, match=r"memories/shop .*symbolic link"):
        repo.remember("the shop uses postgres", project="shop")
    assert list(outside.iterdir()) == []
    assert "shop" not in git(repo.path, "ls-tree", "-r", "--name-only", "HEAD")
    assert (repo.path / "memories" / "shop").is_symlink()  # left for the user to remove, not followed
    issues = {(i.level, i.path) for i in repo.doctor()}
    assert ("error", "memories/shop") in issues


def test_a_memory_file_that_is_a_link_is_never_read_edited_or_pushed(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    path = tmp_path / "mem"
    init_repo(path, remote=str(remote))
    outside = tmp_path / "outside.md"
    outside.write_text(f"---\nid: note\nschema_version: 1\n---\n{OUTSIDE_SECRET}\n")
    (path / "memories" / "global" / "note.md").symlink_to(outside)
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\np = sys.argv[1]\nopen(p, 'a').write('more\\n')\n")
    r = ["--repo", str(path)]
    edited = run_cli(*r, "edit", "note", env={"EDITOR": f"{sys.executable} {editor}"})
    assert edited.code == 1 and "no memory with id 'note'" in edited.err
    shown = run_cli(*r, "show", "note")
    assert shown.code == 1 and OUTSIDE_SECRET not in shown.out + shown.err
    listed = run_cli(*r, "list")
    assert OUTSIDE_SECRET not in listed.out and "symbolic link" in listed.err
    assert run_cli(*r, "remember", "an ordinary memory").code == 0
    assert run_cli(*r, "sync").code == 0
    assert OUTSIDE_SECRET not in _all_objects(path) + _all_objects(remote)
    assert outside.read_text().endswith(f"{OUTSIDE_SECRET}\n")  # the outside file is untouched


def test_edit_draft_name_does_not_come_from_the_id(repo_path: Path, tmp_path: Path) -> None:
    r = ["--repo", str(repo_path)]
    assert run_cli(*r, "remember", "ids may hold slashes", "--id", "../../team/rules").code == 0
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\np = sys.argv[1]\ns = open(p).read().replace('importance: 3', 'importance: 4')\n"
                      "open(p, 'w').write(s)\n")
    edited = run_cli(*r, "edit", "../../team/rules", env={"EDITOR": f"{sys.executable} {editor}"})
    assert edited.code == 0, edited.err
    assert json.loads(run_cli(*r, "show", "../../team/rules", "--json").out)["importance"] == 4
    scratch = Path(os.environ["TMPDIR"])
    assert list(scratch.iterdir()) == [] and not (scratch.parent / "team").exists()
    assert_clean(repo_path)


def test_sync_refuses_links_arriving_from_the_remote(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    path = tmp_path / "mem"
    init_repo(path, remote=str(remote))
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    (other / "memories" / "evil").symlink_to(tmp_path)
    git(other, "add", "-A")
    git(other, "commit", "-qm", "a link")
    git(other, "push", "-q", "origin", "main")
    before = git(path, "rev-parse", "HEAD")
    with pytest.raises(RepoError, match=r"symbolic links .*memories/evil"):
        sync.sync(MemoryRepo(Config(repo=path)).git, author=AUTHOR)
    assert git(path, "rev-parse", "HEAD") == before
    assert not (path / "memories" / "evil").exists() and not (path / "memories" / "evil").is_symlink()
    assert_clean(path)


# -- bad input: one line, what was wrong and what to do ---------------------------------------------------
def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


BAD_INPUT = {
    "import-why-number": (["import", "{file}"], json.dumps({"text": "x", "why": [5]}), "'why' must be text"),
    "import-deep-json": (["import", "{file}"], _deep(100_000), "nested too deeply"),
    "import-deep-field": (["import", "{file}"], '{"text": "x", "how": ' + _deep(100_000) + "}", "nested too deeply"),
    "digest-since-overflow": (["digest", "--since", "99999999d"], None, "too far back"),
    "digest-since-hours": (["digest", "--since", "99999999999999h"], None, "too far back"),
    "export-missing-folder": (["export", "-o", "{missing}"], None, "cannot write"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_gets_one_clear_line(repo_path: Path, tmp_path: Path, case: str) -> None:
    args, content, expected = BAD_INPUT[case]
    data = tmp_path / "input.jsonl"
    if content is not None:
        data.write_text(content + "\n")
    argv = [a.format(file=data, missing=tmp_path / "no" / "such" / "out.jsonl") for a in args]
    result = run_cli("--repo", str(repo_path), *argv)
    assert result.code in (1, 2)
    assert "Traceback" not in result.err and "internal error" not in result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gitmem: error:") and expected in lines[0]
    assert "(" in lines[0]  # the hint: what to do
    assert_clean(repo_path)


def test_a_file_folder_clash_in_a_merge_is_a_clear_error(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    a, b = tmp_path / "a", tmp_path / "b"
    init_repo(a, remote=str(remote))
    init_repo(b, remote=str(remote))
    (a / "memories" / "zz").mkdir()
    (a / "memories" / "zz" / "f.md").write_text("x\n")
    git(a, "add", "-A")
    git(a, "commit", "-qm", "a folder")
    (b / "memories" / "zz").write_text("y\n")
    git(b, "add", "-A")
    git(b, "commit", "-qm", "a file")
    sync.sync(MemoryRepo(Config(repo=a)).git, author=AUTHOR)
    before = git(b, "rev-parse", "HEAD")
    result = run_cli("--repo", str(b), "sync")
    assert result.code == 1 and "memories/zz is a file where a folder is needed" in result.err
    assert "Traceback" not in result.err
    assert git(b, "rev-parse", "HEAD") == before
    assert_clean(b)


def test_a_damaged_repository_is_named_with_how_to_repair_it(repo: MemoryRepo) -> None:
    repo.remember("a memory whose objects get lost")
    for folder in (repo.path / ".git" / "objects").glob("[0-9a-f][0-9a-f]"):
        for item in folder.iterdir():
            item.unlink()
    result = run_cli("--repo", str(repo.path), "remember", "another one")
    assert result.code == 1 and "is damaged" in result.err and "git -C" in result.err
    assert "Traceback" not in result.err and "internal error" not in result.err
    doctor = run_cli("--repo", str(repo.path), "doctor")
    assert doctor.code == 1 and "is damaged" in doctor.out
    # a search that must index what HEAD holds says so too ("internal error: KeyError: b'5926…'" before)
    search = run_cli("--repo", str(repo.path), "search", "memory", "--mode", "bm25")
    assert search.code == 1 and "is damaged" in search.err and "git -C" in search.err
    assert "internal error" not in search.err and len(search.err.strip().splitlines()) == 1


def test_project_and_instinct_files_that_are_links_are_not_read(repo: MemoryRepo, tmp_path: Path) -> None:
    from gitmem.learn import instincts
    from gitmem.projects import memory as projects

    outside = tmp_path / "outside.md"
    outside.write_text(f"---\nid: x\nschema_version: 1\n---\n# {OUTSIDE_SECRET}\n")
    (repo.path / "projects").mkdir(exist_ok=True)
    (repo.path / projects.project_path("shop")).symlink_to(outside)
    real = instincts.Instinct(id="x", pattern="p", trigger="when committing", action=OUTSIDE_SECRET, domain="git")
    elsewhere = tmp_path / "instinct.md"
    elsewhere.write_text(instincts.dumps(real))
    (repo.path / "instincts" / "git").mkdir(parents=True)
    (repo.path / "instincts" / "git" / "x.md").symlink_to(elsewhere)
    assert projects.read(repo.path, "shop") is None
    assert instincts.list_instincts(repo.path) == []
    (repo.path / "instincts" / "git" / "x.md").unlink()
    (repo.path / "instincts" / "git" / "x.md").write_text(instincts.dumps(real))
    assert [i.action for i in instincts.list_instincts(repo.path)] == [OUTSIDE_SECRET]  # a real file is read
