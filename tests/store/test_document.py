"""Memory documents: validation messages, safe file names, frontmatter round trips."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.errors import DocumentError, ValidationError
from gitmem.store import document as docs
from gitmem.store.memories import MemoryRepo
from gitmem.text.records import replace


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"text": "   "}, "empty"),
        ({"text": "x", "category": "opinion"}, "use one of: background, decision"),
        ({"text": "x", "type": "boss"}, "use one of: user, feedback, project, reference"),
        ({"text": "x", "importance": 7}, "from 1 to 5"),
        ({"text": "x", "importance": "high"}, "from 1 to 5"),
        ({"text": "x", "scope": "project"}, "needs a project"),
        ({"text": "x" * (docs.MAX_TEXT_BYTES + 1)}, "the limit is"),
        ({"text": "x", "created": "yesterday"}, "ISO 8601"),
        ({"text": "bad \udcff surrogate"}, "not valid Unicode"),
    ],
)
def test_invalid_input_names_the_field_and_the_fix(kwargs: dict[str, object], message: str) -> None:
    text = kwargs.pop("text")
    with pytest.raises(ValidationError, match=re.escape(message)):
        docs.make_memory(text, **kwargs)  # type: ignore[arg-type]


def test_chinese_memory_round_trips_with_an_ascii_file_name() -> None:
    memory = docs.make_memory("改完代码不要自动提交，等用户确认后再 commit", type="feedback",
                              category="preference", importance=4, tags="工作流, Git")
    # Derived ids keep the ASCII words only (docs/store.md, "Ids and file names"); the text stays Chinese.
    assert memory.id.startswith("commit-") and memory.id.isascii()
    assert docs.make_memory("只用中文写的记忆").id.startswith("memory-")
    assert docs.is_derived_id(memory.id, memory.text)
    # A given Chinese id still works as it is.
    assert docs.make_memory("x", id="中文标识").path == "memories/global/中文标识.md"
    assert memory.tags == ("工作流", "git")
    text = docs.dumps(memory)
    assert "改完代码不要自动提交" in text and "\\u" not in text
    assert docs.loads(text) == memory


def test_why_and_how_lines_become_fields() -> None:
    memory = docs.make_memory("Use PostgreSQL.\n\n**Why:** JSON queries.\n**How to apply:** new services")
    assert (memory.text, memory.why, memory.how) == ("Use PostgreSQL.", "JSON queries.", "new services")
    assert docs.loads(docs.dumps(memory)) == memory


def test_unknown_frontmatter_keys_survive_a_rewrite() -> None:
    memory = docs.make_memory("keep me")
    text = docs.dumps(memory).replace("schema_version: 1", "schema_version: 1\nreviewed_by: alice")
    loaded = docs.loads(text)
    assert loaded.extra == {"reviewed_by": "alice"}
    assert "reviewed_by: alice" in docs.dumps(replace(loaded, importance=5))
    # unknown keys are kept, but are not part of what the memory says: equal, same hash, still shown
    assert loaded == memory and hash(loaded) == hash(memory) and {loaded, memory} == {memory}
    assert "extra={'reviewed_by': 'alice'}" in repr(loaded) and replace(loaded, importance=5) != memory
    assert loaded.to_dict()["reviewed_by"] == "alice" and loaded.extra == {"reviewed_by": "alice"}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\nid: [unclosed\n---\nbody\n", "broken YAML"),
        ("---\nname: x\n---\nbody\n", "no 'id'"),
        ("---\nid: a\nimportance: 9\n---\nbody\n", "importance 9"),
        ("---\nid: a\nschema_version: 99\n---\nbody\n", "upgrade gitmem"),
        ("---\nid: a\n---\n\n", "empty"),
    ],
)
def test_broken_files_say_which_file_and_why(text: str, reason: str) -> None:
    with pytest.raises(DocumentError, match=re.escape(reason)) as info:
        docs.loads(text, "memories/global/a.md")
    assert str(info.value).startswith("memories/global/a.md")


@given(st.text(min_size=1, max_size=120))
def test_any_id_gives_a_safe_file_name(memory_id: str) -> None:
    stem = docs.file_stem(memory_id)
    assert stem and "/" not in stem and "\\" not in stem and ".." not in stem
    assert not stem.startswith(".") and len(stem.encode()) < 255
    assert docs.is_safe_id(stem)


@given(st.lists(st.text(min_size=1, max_size=12), min_size=2, max_size=30, unique=True))
def test_different_ids_never_share_a_file(ids: list[str]) -> None:
    assert len({docs.file_stem(i) for i in ids}) == len(ids)


def test_traversal_ids_stay_inside_their_folder() -> None:
    for bad in ("../../etc/passwd", "/abs", "CON", "a/b", "x.md", "x/.."):
        memory = docs.make_memory("x", id=bad)
        assert memory.path.count("/") == 2 and "/../" not in memory.path
        assert memory.path.startswith("memories/global/")
    for dots in (".", ".."):  # kept safe on disk, but a link to it names the page above: refused when new
        with pytest.raises(ValidationError, match="not usable"):
            docs.make_memory("x", id=dots)


printable = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40)


@settings(deadline=None)  # the first example pays the one-time YAML import and pattern compiles
@given(
    text=printable.filter(lambda t: t.strip() and "**" not in t),
    category=st.sampled_from(docs.CATEGORIES),
    type_=st.sampled_from(docs.TYPES),
    importance=st.integers(1, 5),
    tags=st.lists(st.text("abc中文 -", min_size=1, max_size=8), max_size=4),
    project=st.sampled_from(["", "github.com-acme-shop", "本地项目"]),
    why=printable,
)
def test_frontmatter_round_trip(text: str, category: str, type_: str, importance: int, tags: list[str],
                                project: str, why: str) -> None:
    memory = docs.make_memory(text, category=category, type=type_, importance=importance, tags=tags,
                              project=project, why=why)
    assert docs.loads(docs.dumps(memory)) == memory


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=110))
def test_ascii_ids_are_judged_like_the_full_pattern(value: str) -> None:
    """The ASCII shortcut of is_safe_id agrees with the CJK-aware pattern on every ASCII string."""
    full = docs._pattern("safe_id").fullmatch(value) is not None
    expected = full and ".." not in value and value.split(".")[0] not in docs._RESERVED
    assert docs.is_safe_id(value) == expected


# -- one declaration per field ---------------------------------------------------------------------------
def test_every_field_is_declared_with_a_known_merge_redaction_and_place() -> None:
    """A field without a merge rule would silently keep one side in a sync: the declaration must name one that
    the merge implements, and say how the field is redacted and where it is written."""
    from gitmem.sync.merge import RULES

    for f in docs.MEMORY_FIELDS:
        assert f.metadata.get("merge") in RULES, f"{f.name} has no merge rule gitmem.sync.merge implements"
        assert f.metadata["merge"] in docs.MERGE_RULES
        assert f.metadata.get("redact") in docs.REDACT_RULES, f.name
        assert f.metadata.get("write") in docs.WRITE_RULES, f.name
        assert f.metadata.get("doc"), f.name
    assert set(RULES) == set(docs.MERGE_RULES)


def test_the_file_carries_every_declared_field_in_declaration_order() -> None:
    memory = docs.make_memory("Use PostgreSQL.\n\n**Why:** measured.\n**How to apply:** new services.",
                              name="Postgres", description="the database", tags=["db"], scope="project",
                              project="acme", source_ref="s-1", expires="2030-01-01T00:00:00Z")
    memory = replace(memory, deprecated=True, deprecated_reason="moved", superseded_by="other", conflicted=True)
    text = docs.dumps(memory)
    keys = re.findall(r"(?m)^([a-z_]+):", text.split("---")[1])
    assert keys == list(docs.FRONTMATTER_KEYS)
    assert set(keys) | set(docs.field_names(write="body")) | {"extra"} == {f.name for f in docs.MEMORY_FIELDS}
    again = docs.loads(text)
    assert again == memory  # nothing declared is lost on the way through the file


def test_docs_field_table_is_generated_from_the_declaration() -> None:
    import runpy
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "store.md").read_text()
    assert doc == runpy.run_path(str(root / "scripts" / "doc_tables.py"))["doc_text"]("store.md", doc), \
        "docs/store.md's field table is stale: run python scripts/doc_tables.py"
    assert all(f"| `{f.name}` |" in doc for f in docs.MEMORY_FIELDS)


def test_a_redacted_tag_stays_as_it_is_through_later_writes(repo: MemoryRepo) -> None:
    """Tags are lower-cased; the marker of a secret in one was too, and the next write redacted it again, one
    more "]" each time, with a warning about a secret nobody had just written."""
    memory = repo.remember("tag test", tags=["api_key=AbC123xyz789Q", "deploy"], scope="global")
    first = (repo.path / memory.path).read_text()
    assert "AbC123xyz789Q" not in first and "api_key=[REDACTED:password]\n" in first
    assert repo.last_redaction == ["password"]  # reported as a secret elsewhere is ("redacted secrets: …")
    for importance in (2, 4):
        saved = repo.save(replace(repo.get(memory.id), importance=importance))
        assert repo.last_redaction == []
        assert saved.tags == ("api_key=[REDACTED:password]", "deploy")
    assert (repo.path / memory.path).read_text().count("]]") == 0
