"""Writer memory: characters, relationships, scenes and world rules as committed files, CJK-aware search, the
voice check of a line in English and Chinese, and names that cannot leave the work's folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitmem.errors import NotFoundError, ValidationError
from gitmem.store.memories import MemoryRepo
from gitmem.writer.store import Writer
from gitmem.writer.voice import check_line, register_of
from tests.helpers import assert_clean, git, run_cli


@pytest.fixture
def book(repo: MemoryRepo) -> Writer:
    writer = Writer(repo, "Long Night")
    writer.save("character", "Lin Mei", register="formal", sentence_length="short", keywords="duty,honour",
                taboo="damn,卧槽", voice="clipped, precise")
    writer.save("character", "李雷", register="casual", keywords="哥们", taboo="您", tics="得了")
    return writer


def test_check_line_cli_flags_taboo_and_register_and_passes_an_in_voice_line(repo_path: Path) -> None:
    env = {"GITMEM_REPO": str(repo_path)}
    added = run_cli("writer", "character", "add", "Lin Mei", "--work", "w", "--register", "formal", "--taboo",
                    "damn", "--keywords", "duty", env=env)
    assert added.code == 0, added.err
    good = json.loads(run_cli("writer", "check-line", "Lin Mei", "Duty comes first, sir.", "--work", "w", "--json",
                              env=env).out)
    assert good == {"ok": True, "score": 1.0, "findings": [], "matched": ["duty"]}
    bad = json.loads(run_cli("writer", "check-line", "Lin Mei", "Yeah, gonna be a damn long night, dude.",
                             "--work", "w", "--json", env=env).out)
    assert bad["ok"] is False
    assert sorted(f["kind"] for f in bad["findings"]) == ["register", "taboo"]
    assert all(f["detail"] for f in bad["findings"])
    assert (repo_path / "writer" / "w" / "characters" / "lin-mei.md").is_file()
    assert_clean(repo_path)


def test_check_line_in_chinese(book: Writer) -> None:
    assert book.check_line("李雷", "哥们，咱走吧，别磨叽了。").ok
    taboo = book.check_line("李雷", "好的，您先请。")
    assert not taboo.ok and [f["kind"] for f in taboo.findings] == ["taboo", "register"]
    assert book.check_line("Lin Mei", "卧槽，走了").findings[0]["kind"] == "taboo"
    register = book.check_line("李雷", "敢问阁下意下如何？")
    assert not register.ok and [f["kind"] for f in register.findings] == ["register"]
    assert "formal" in register.findings[0]["detail"]


def test_register_and_length_are_explained() -> None:
    assert register_of("I daresay one must proceed, sir.")[0] == "formal"
    assert register_of("nah, that's kinda cool")[0] == "casual"
    assert register_of("The door was open.")[0] == "neutral"
    long = check_line("I think that we should probably go back to the car and wait there until the rain "
                      "finally stops and the road is safe again", {"sentence_length": "short"})
    assert long.ok and long.findings[0]["kind"] == "length"


def test_entities_add_update_list_show_and_commit(book: Writer, repo: MemoryRepo) -> None:
    book.save("relationship", "Lin Mei & 李雷", a="Lin Mei", b="李雷", kind="rivals", changes="ch3: uneasy allies")
    book.save("scene", "The ambush", chapter=3, mood="tense,dark", characters="Lin Mei,李雷", shots="rain,alley")
    book.save("world", "Magic costs memory", notes="每次施法都会失去一段记忆。")
    _entity, sha = book.save("character", "Lin Mei", update=True, arc="ch1: guarded,ch9: open")
    assert len(sha) == 40
    shown = book.show("character", "lin mei")
    assert shown.fields["arc"] == ["ch1: guarded", "ch9: open"] and shown.fields["taboo"] == ["damn", "卧槽"]
    assert [e.name for e in book.list("scene")] == ["003-the-ambush"]
    assert [e.name for e in book.list("relationship")] == ["lin-mei--李雷"]
    # one relationship a pair, named in either order (the other order made a second one, and update missed it)
    with pytest.raises(ValidationError, match="already exists"):
        book.save("relationship", "李雷 & Lin Mei", a="李雷", b="Lin Mei", kind="allies")
    book.save("relationship", "李雷 & lin mei", a="李雷", b="Lin Mei", kind="friends", update=True)
    assert [e.fields["kind"] for e in book.list("relationship")] == ["friends"]
    assert book.show("relationship", "李雷 & Lin Mei").name == "lin-mei--李雷"
    with pytest.raises(ValidationError):
        book.save("character", "Lin Mei")
    with pytest.raises(NotFoundError):
        book.save("character", "Nobody", update=True)
    files = git(repo.path, "ls-files", "writer").split()
    assert len(files) == 5 and "writer/long-night/world/magic-costs-memory.md" in files
    assert_clean(repo.path)


def test_a_relationship_or_scene_naming_an_unknown_character_is_refused(book: Writer, repo: MemoryRepo) -> None:
    """A misspelt character would otherwise become a character of its own, one no line can be checked against."""
    head = git(repo.path, "rev-parse", "HEAD")
    with pytest.raises(ValidationError, match="no character 'Ghosty'"):
        book.save("relationship", "Lin Mei & Ghosty", a="Lin Mei", b="Ghosty", kind="x")
    with pytest.raises(ValidationError, match="no character 'Nobody'"):
        book.save("scene", "Ghost", chapter=4, characters="Lin Mei,Nobody")
    assert git(repo.path, "rev-parse", "HEAD") == head
    book.save("scene", "Ghost", chapter=4, characters="lin mei,李雷")  # a character's title in any case is found


def test_search_finds_entities_in_both_languages(book: Writer) -> None:
    book.save("world", "Magic costs memory", notes="每次施法都会失去一段记忆。")
    book.save("scene", "The ambush", chapter=3, mood="tense", notes="Rain hides the alley fight.")
    assert [h.name for h in book.search("施法 记忆")] == ["magic-costs-memory"]
    hits = book.search("alley rain")
    assert hits[0].name == "003-the-ambush" and hits[0].category == "scene"
    assert [h.name for h in book.search("honour", kind="character")] == ["lin-mei"]


def test_a_long_note_is_shown_by_the_paragraph_that_matches(book: Writer) -> None:
    notes = "\n\n".join([
        "The old capital sits on a river delta, its streets laid out by the first emperor around the salt market. "
        "Merchants from the northern passes trade furs and iron there every spring, and the guild halls line the "
        "eastern bank where the barges unload.",
        "The palace guard wears grey and carries short spears; its captains are chosen from the border families, "
        "who swear an oath at the winter solstice and may not marry until they leave the service.",
        "Scholars of the academy keep the calendar. They announce the festival days, record eclipses and floods, and "
        "copy the chronicles by hand, since printing is forbidden inside the walls.",
        "Farmers of the western hills grow barley and tea on narrow terraces. Their villages elect a headman each "
        "autumn, pay the grain tax in kind, and send their younger sons to serve a year on the canal works.",
        "The canal itself runs from the delta to the hill country, with locks every few miles kept by an old order "
        "of engineers who pass their drawings from teacher to pupil and never write them down.",
        "Lighthouse keepers on the southern cliffs burn whale oil, and every keeper learns the signal code of mirrors "
        "by heart before the first night watch; a missed signal costs a keeper their post.",
    ])
    book.save("world", "The capital", notes=notes)
    hits = book.search("mirror signal code of the keepers")
    assert hits[0].name == "the-capital" and hits[0].chunk > 1
    assert "mirrors" in hits[0].snippet and "delta" not in hits[0].snippet


@pytest.mark.parametrize("name", ["../escape", "a/b", "/abs", "..", "CON", "x\x00y", "c:\\x"])
def test_names_that_could_leave_the_work_are_refused(repo: MemoryRepo, tmp_path: Path, name: str) -> None:
    head = git(repo.path, "rev-parse", "HEAD")
    outside = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(ValidationError):
        Writer(repo, name)
    writer = Writer(repo, "w")
    for call in (lambda: writer.save("character", name), lambda: writer.save("world", name),
                 lambda: writer.save("relationship", "x", a=name, b="b"),
                 lambda: writer.save("scene", name, chapter=1), lambda: writer.show("character", name),
                 lambda: writer.check_line(name, "hello")):
        with pytest.raises(ValidationError):
            call()
    assert git(repo.path, "rev-parse", "HEAD") == head
    assert sorted(p.name for p in tmp_path.iterdir()) == outside
