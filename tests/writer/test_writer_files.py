"""Writer notes broken by hand: the listing names them, doctor reports what is wrong, and an add refuses to write
over one (it would replace the notes the file holds with an empty entity)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem.errors import DocumentError, ValidationError
from gitmem.store.memories import MemoryRepo
from gitmem.writer.store import Writer
from tests.helpers import git, run_cli

BROKEN = "writer/w/characters/broken.md"


def _broken_character(repo_path: Path) -> bytes:
    """A character ``broken`` with notes, then its frontmatter broken by hand and committed; its bytes."""
    env = {"GITMEM_REPO": str(repo_path)}
    added = run_cli("writer", "character", "add", "broken", "--work", "w", "--voice", "dry",
                    "--notes", "Grew up by the harbour; never speaks of her father.", env=env)
    assert added.code == 0, added.err
    path = repo_path / BROKEN
    path.write_text(path.read_text("utf-8").replace("voice: dry", "voice: [dry"), "utf-8")
    git(repo_path, "commit", "-qam", "hand edit")
    return path.read_bytes()


def test_list_names_a_broken_note_and_add_refuses_to_replace_it(repo_path: Path) -> None:
    broken = _broken_character(repo_path)
    env = {"GITMEM_REPO": str(repo_path)}
    assert run_cli("writer", "character", "add", "Lin Mei", "--work", "w", env=env).code == 0
    listed = run_cli("writer", "character", "list", "--work", "w", env=env)
    assert listed.code == 0 and listed.out.split() == ["lin-mei", "Lin", "Mei"]
    assert f"gitmem: warning: skipped {BROKEN}: broken YAML frontmatter" in listed.err
    assert "(run gitmem doctor)" in listed.err
    head = git(repo_path, "rev-parse", "HEAD")
    added = run_cli("writer", "character", "add", "broken", "--work", "w", env=env)
    assert added.code != 0
    assert f"{BROKEN} cannot be read (broken YAML frontmatter" in added.err
    assert "adding character 'broken' would replace it, losing what it holds; nothing was written" in added.err
    assert f"git -C {repo_path} log -- {BROKEN}" in added.err
    updated = run_cli("writer", "character", "update", "broken", "--work", "w", "--voice", "warm", env=env)
    assert updated.code != 0 and f"{BROKEN}: broken YAML frontmatter" in updated.err
    shown = run_cli("writer", "character", "show", "broken", "--work", "w", env=env)
    assert shown.code != 0 and f"{BROKEN}: broken YAML frontmatter" in shown.err
    assert (repo_path / BROKEN).read_bytes() == broken
    assert git(repo_path, "rev-parse", "HEAD") == head


def test_doctor_reports_an_unreadable_writer_note(repo_path: Path) -> None:
    _broken_character(repo_path)
    scene = repo_path / "writer" / "w" / "scenes" / "001-dawn.md"
    scene.parent.mkdir(parents=True)
    scene.write_text("---\ntitle: Dawn\nchapter: first\n---\nThe harbour at dawn.\n", "utf-8")
    doctor = run_cli("doctor", env={"GITMEM_REPO": str(repo_path)})
    assert doctor.code == 1
    assert f"error   {BROKEN}: broken YAML frontmatter" in doctor.out
    assert "error   writer/w/scenes/001-dawn.md: chapter must be a whole number, not 'first'" in doctor.out
    assert "ok      writer/: 0 writer notes readable" in doctor.out
    from gitmem.writer.store import doctor_issues

    assert [i.path for i in doctor_issues(repo_path) if i.level == "error"] == [BROKEN, "writer/w/scenes/001-dawn.md"]


def test_an_add_never_writes_over_another_file(repo: MemoryRepo) -> None:
    """A relationship or scene is found by its characters or title, not its file name: an add whose file is
    there but unreadable, or holds another entity, is refused rather than written over it."""
    book = Writer(repo, "w")
    book.save("character", "Lin Mei")
    book.save("character", "Wang Wu")
    path = repo.path / "writer" / "w" / "relationships" / "lin-mei--wang-wu.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\na: Lin Mei\nb: [Wang Wu\n---\nRivals since school.\n", "utf-8")
    with pytest.raises(DocumentError, match="adding relationship 'Lin Mei & Wang Wu' would replace it"):
        book.save("relationship", "Lin Mei & Wang Wu", a="Lin Mei", b="Wang Wu", kind="allies")
    book.save("scene", "Dawn", chapter=1, notes="The harbour at dawn.")
    scene = repo.path / "writer" / "w" / "scenes" / "001-dawn.md"
    scene.write_text(scene.read_text("utf-8").replace("title: Dawn", "title: Daybreak"), "utf-8")
    with pytest.raises(ValidationError, match="already holds the scene 'Daybreak'"):
        book.save("scene", "Dawn", chapter=1)
    assert "The harbour at dawn." in scene.read_text("utf-8")
    assert [e.name for e in book.list("scene")] == ["001-dawn"] and book.warnings == []
    assert book.list("relationship") == [] and [str(w).split(":")[0] for w in book.warnings] == [
        "writer/w/relationships/lin-mei--wang-wu.md"]
