"""The pure three-way merge of memory documents."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.store import document as docs
from gitmem.store.document import Memory
from gitmem.sync.merge import memory_identity, merge_file, merge_memories, merge_moved, merge_text, resolve
from gitmem.text.records import replace

T0 = datetime(2026, 1, 1, tzinfo=UTC)
BASE = docs.make_memory("Use PostgreSQL\nfor every service\nwith pgbouncer", id="db", tags="database",
                        importance=3, created=T0)

words = st.sampled_from(["alpha", "beta", "gamma", "delta", "db", "ci", "python", "rust"])
lines = st.lists(st.sampled_from(["one", "two", "three", "four", "five", "six"]), min_size=1, max_size=6)


@st.composite
def versions(draw: st.DrawFn, base: Memory = BASE) -> Memory:
    text = "\n".join(draw(lines))
    deprecated = draw(st.booleans())
    return replace(
        base,
        text=text,
        tags=tuple(dict.fromkeys(draw(st.lists(words, max_size=5)))),
        importance=draw(st.integers(1, 5)),
        category=draw(st.sampled_from(docs.CATEGORIES)),
        why=draw(st.sampled_from(["", "benchmarked", "policy"])),
        updated=T0 + timedelta(hours=draw(st.integers(0, 5))),
        deprecated=deprecated,
        deprecated_reason=draw(st.sampled_from(["old", "moved"])) if deprecated else "",
    )


def _dump(result_memory: Memory) -> str:
    return docs.dumps(result_memory)


@settings(max_examples=150, deadline=None)
@given(versions())
def test_merge_of_identical_versions_is_identity(memory: Memory) -> None:
    result = merge_memories(memory, memory, memory)
    assert _dump(result.memory) == _dump(memory) and not result.versions


@settings(max_examples=150, deadline=None)
@given(versions(), versions(), versions())
def test_merge_is_symmetric_and_keeps_every_side(base: Memory, ours: Memory, theirs: Memory) -> None:
    one = merge_memories(base, ours, theirs)
    two = merge_memories(base, theirs, ours)
    assert _dump(one.memory) == _dump(two.memory)
    assert [_dump(v) for v in one.versions] == [_dump(v) for v in two.versions]
    merged = one.memory
    docs.loads(_dump(merged), merged.path)  # always parseable
    # a tag either side added is never dropped
    for side in (ours, theirs):
        for tag in set(side.tags) - set(base.tags):
            assert tag in merged.tags
    # the text of both sides survives: merged into the memory, or kept whole in a version
    texts = [merged.text, *(v.text for v in one.versions)]
    for side in (ours, theirs):
        if side.text != base.text:
            assert side.text in texts or all(line in merged.text.split("\n") for line in side.text.split("\n")
                                             if line not in base.text.split("\n"))
    assert merged.updated == max(ours.updated, theirs.updated)
    assert merged.importance >= min(ours.importance, theirs.importance)
    if ours.importance != base.importance and theirs.importance != base.importance:
        assert merged.importance == max(ours.importance, theirs.importance)
    if ours.deprecated != base.deprecated or theirs.deprecated != base.deprecated:
        changed = [s for s in (ours, theirs) if s.deprecated != base.deprecated]
        assert merged.deprecated == changed[0].deprecated or merged.deprecated
    if merged.deprecated:
        assert merged.deprecated_reason
    if one.versions:
        assert merged.conflicted and all(v.conflicted for v in one.versions)
        assert merged.extra["conflict_with"] == [v.id for v in one.versions]


@settings(max_examples=100, deadline=None)
@given(versions(), versions())
def test_merge_without_base_unites_tags(ours: Memory, theirs: Memory) -> None:
    merged = merge_memories(None, ours, theirs).memory
    assert set(ours.tags) | set(theirs.tags) == set(merged.tags)


def test_field_merge() -> None:
    ours = replace(BASE, tags=("database", "postgres"), category="constraint", updated=T0 + timedelta(hours=1))
    theirs = replace(BASE, importance=5, tags=("database", "ops"), why="measured", updated=T0 + timedelta(hours=2))
    merged = merge_memories(BASE, ours, theirs)
    assert merged.conflicts == ()
    m = merged.memory
    assert (set(m.tags), m.category, m.importance, m.why, m.updated) == (
        {"database", "postgres", "ops"}, "constraint", 5, "measured", T0 + timedelta(hours=2))


def test_one_side_lowering_importance_is_kept() -> None:
    lowered = replace(BASE, importance=1)
    assert merge_memories(BASE, lowered, replace(BASE, why="x")).memory.importance == 1


def test_line_merge_and_conflict() -> None:
    assert merge_text("a\nb\nc\nd", "A\nb\nc\nd", "a\nb\nc\nD") == "A\nb\nc\nD"
    assert merge_text("a", "b", "c") is None
    ours = replace(BASE, text="Use PostgreSQL 16\nfor every service\nwith pgbouncer")
    theirs = replace(BASE, text="Use MySQL\nfor every service\nwith pgbouncer", updated=T0 + timedelta(1))
    result = merge_memories(BASE, ours, theirs)
    assert result.conflicts == ("text",)
    assert result.memory.text == theirs.text  # the newer side keeps the memory
    (version,) = result.versions
    assert version.text == ours.text and version.extra["conflict_of"] == "db"
    assert version.id.startswith("db-conflict-")


def test_deprecate_vs_edit() -> None:
    gone = replace(BASE, deprecated=True, deprecated_reason="moved to SQLite")
    edited = replace(BASE, text=BASE.text + "\nand read replicas")
    m = merge_memories(BASE, gone, edited).memory
    assert m.deprecated and m.deprecated_reason == "moved to SQLite" and m.text.endswith("read replicas")


def test_merge_file_delete_vs_edit_and_other_files() -> None:
    path = BASE.path
    base, edited = docs.dumps(BASE).encode(), docs.dumps(replace(BASE, importance=5)).encode()
    assert merge_file(path, base, None, edited).changes == {path: edited}
    assert merge_file(path, base, edited, None).changes == {path: edited}
    result = merge_file("gitmem.toml", b"a = 1\n", b"a = 2\n", b"a = 3\n")
    assert result.conflicts and len(result.changes) == 2
    assert all(not p.endswith(".md") for p in result.changes if p != "gitmem.toml")


def test_resolve_takes_a_version() -> None:
    ours = replace(BASE, text="one")
    theirs = replace(BASE, text="two", updated=T0 + timedelta(1))
    result = merge_memories(BASE, ours, theirs)
    settled = resolve(result.memory, list(result.versions), take=result.versions[0])
    assert settled.text == "one" and not settled.conflicted and "conflict_with" not in settled.extra
    assert resolve(result.memory, list(result.versions), text="three").text == "three"


def test_conflicts_and_note() -> None:
    from gitmem.sync.merge import conflict_note, conflicts

    ours = replace(BASE, text="one")
    theirs = replace(BASE, text="two", updated=T0 + timedelta(1))
    result = merge_memories(BASE, ours, theirs)
    other = docs.make_memory("unrelated", id="other")
    found = conflicts([result.memory, *result.versions, other])
    assert [(m.id, [v.id for v in vs]) for m, vs in found] == [("db", [result.versions[0].id])]
    assert "1 memory with conflicting versions" in conflict_note([result.memory, *result.versions])
    assert conflict_note([other]) == ""


def test_every_declared_field_is_merged_by_its_rule() -> None:
    """Both sides change every field but the id: each comes out as its declared rule says, none silently taken
    from one side only because the merge forgot it."""
    base = docs.make_memory("Use PostgreSQL.", id="db", tags=["a"], importance=2, name="Base")
    t0 = base.updated
    ours = replace(base, text="Use PostgreSQL 16.", importance=3, tags=("a", "ours"), type="project",
                   updated=t0 + timedelta(hours=2), source_ref="ours", deprecated=True, deprecated_reason="old")
    theirs = replace(base, text="Use PostgreSQL.", importance=4, tags=("theirs",), category="decision",
                     created=base.created - timedelta(days=1), updated=t0 + timedelta(hours=1), name="Theirs")
    merged = merge_memories(base, ours, theirs).memory
    assert merged.text == "Use PostgreSQL 16." and merged.name == "Theirs"      # text: line merge
    assert merged.importance == 4                                               # max
    assert set(merged.tags) == {"ours", "theirs"}                               # set: "a" removed by theirs
    assert merged.type == "project" and merged.category == "decision"           # newer (each side changed one)
    assert merged.source_ref == "ours"                                          # newer
    assert merged.created == theirs.created and merged.updated == ours.updated  # oldest, newest
    assert merged.deprecated and merged.deprecated_reason == "old"              # either, deprecation


def _placed(memory: Memory, project: str) -> Memory:
    return replace(memory, project=project, scope="project" if project else "global")


@settings(max_examples=150, deadline=None)
@given(versions(), versions(), st.sampled_from(["", "shop", "web"]), st.sampled_from(["", "shop", "web"]))
def test_a_moved_memory_merges_into_one_file_whichever_machine_merges(ours: Memory, theirs: Memory, our_project: str,
                                                                      their_project: str) -> None:
    ours, theirs = _placed(ours, our_project), _placed(theirs, their_project)
    paths = (BASE.path, ours.path, theirs.path)
    data = [docs.dumps(m).encode() for m in (BASE, ours, theirs)]
    one = merge_moved(paths, data[0], data[1], data[2])
    two = merge_moved((paths[0], paths[2], paths[1]), data[0], data[2], data[1])
    assert one is not None and two is not None
    assert one.changes == two.changes and one.conflicts == two.conflicts
    written = {path: content for path, content in one.changes.items() if content is not None}
    main = [docs.loads(content.decode(), path) for path, content in written.items() if "-conflict-" not in path]
    assert len(main) == 1 and main[0].id == "db" and main[0].path in paths  # one file, at one of the three places
    assert set(paths) <= set(one.changes)  # every other place of it is deleted
    moved = {p for p in (our_project, their_project) if p}
    if len(moved) == 2:
        assert main[0].project in moved and len(one.conflicts) >= 1 and "moved to project" in one.conflicts[-1]
    elif moved:
        assert main[0].project == moved.pop()


def test_merge_moved_carries_the_other_sides_change() -> None:
    moved = replace(_placed(BASE, "shop"), updated=T0 + timedelta(hours=1))
    forgotten = replace(BASE, deprecated=True, deprecated_reason="we use SQLite", updated=T0 + timedelta(hours=2))
    result = merge_moved((BASE.path, moved.path, BASE.path), *(docs.dumps(m).encode() for m in (BASE, moved,
                                                                                                  forgotten)))
    assert result is not None and result.conflicts == [] and result.changes[BASE.path] is None
    merged = docs.loads((result.changes[moved.path] or b"").decode(), moved.path)
    assert merged.project == "shop" and merged.deprecated and merged.deprecated_reason == "we use SQLite"
    other = docs.dumps(docs.make_memory("another memory", id="other")).encode()
    assert merge_moved((BASE.path, moved.path, BASE.path), docs.dumps(BASE).encode(), other, other) is None
    assert memory_identity(moved.path, docs.dumps(moved).encode()) == "db"
    assert memory_identity("gitmem.toml", b"a = 1\n") is None
    assert memory_identity(BASE.path, b"not a memory") is None


def test_both_sides_deprecating_keep_both_reasons() -> None:
    older = replace(BASE, deprecated=True, deprecated_reason="we moved to SQLite.", updated=T0 + timedelta(hours=1))
    newer = replace(BASE, deprecated=True, deprecated_reason="the shop is closed", updated=T0 + timedelta(hours=2))
    for ours, theirs in ((older, newer), (newer, older)):
        merged = merge_memories(BASE, ours, theirs).memory
        assert merged.deprecated_reason == "the shop is closed; we moved to SQLite."
    # a reason that already says the other is not repeated
    longer = replace(older, deprecated_reason="we moved to SQLite. The shop is closed")
    assert merge_memories(BASE, longer, replace(newer, deprecated_reason="The shop is closed")).memory \
        .deprecated_reason == "we moved to SQLite. The shop is closed"
    # one side re-deprecating a deprecated memory for a new reason replaces the old one
    base = replace(BASE, deprecated=True, deprecated_reason="old")
    assert merge_memories(base, replace(base, deprecated_reason="new"), replace(base, why="x")).memory \
        .deprecated_reason == "new"
