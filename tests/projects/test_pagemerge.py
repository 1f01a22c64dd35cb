"""The three-way merge of project pages (``gitmem.projects.pagemerge``): properties with hypothesis (nothing a side
kept is lost, a side's own change is taken whole) and the cases the learner and the scanner produce."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gitmem.projects import memory as projects
from gitmem.projects.pagemerge import merge_page_file, merge_pages, merge_section, read_page
from gitmem.projects.toolnotes import merge_notes

# lines of a section: bullets and free text, no "(none …)" placeholder (the merge drops those beside real items)
LINES = [f"- item {c}" for c in "abcdefgh"] + ["Written by hand: ask Ana first.", "`make check` before a push"]
unique_lines = st.lists(st.sampled_from(LINES), unique=True, max_size=8)
# repeated lines and blank lines (paragraphs) too
any_lines = st.lists(st.sampled_from([*LINES, ""]), max_size=8).map(lambda ls: ["x", *ls, "y"])
SECTION_NAMES = ["Tech stack", "Commands", "Notes", "Hot paths", "Deploy"]


def _text(lines: list[str]) -> str:
    return "\n".join(lines)


@given(unique_lines, unique_lines, unique_lines)
def test_a_line_is_kept_unless_the_other_side_removed_it(base: list[str], ours: list[str],
                                                         theirs: list[str]) -> None:
    merged = [ln for ln in merge_section("Structure", _text(base), _text(ours), _text(theirs)).split("\n") if ln]
    removed = {ln for ln in base if ln not in ours or ln not in theirs}
    expected = {ln for ln in (*ours, *theirs) if ln not in removed}
    assert set(merged) == expected and len(merged) == len(expected)  # every kept line, once, nothing else
    if ours != base:  # ours' order is the frame theirs' additions are placed in
        assert [ln for ln in merged if ln in ours] == [ln for ln in ours if ln in merged]


@given(any_lines, any_lines, st.sampled_from(SECTION_NAMES))
def test_a_change_on_one_side_is_taken_whole(base: list[str], side: list[str], name: str) -> None:
    assert merge_section(name, _text(base), _text(side), _text(side)) == _text(side)
    assert merge_section(name, _text(base), _text(base), _text(side)) == _text(side)
    assert merge_section(name, _text(base), _text(side), _text(base)) == _text(side)


@given(any_lines, any_lines, any_lines)
def test_repeated_and_blank_lines_are_matched_occurrence_by_occurrence(base: list[str], ours: list[str],
                                                                       theirs: list[str]) -> None:
    merged = merge_section("Deploy", _text(base), _text(ours), _text(theirs)).split("\n")
    for line in {*ours, *theirs}:
        # the i-th copy of a line is lost only when the base had it and one side has fewer than i+1 copies
        b, o, t = base.count(line), ours.count(line), theirs.count(line)
        assert merged.count(line) == len([i for i in range(max(o, t)) if not (i < b and i >= min(o, t))])


# -- whole pages -----------------------------------------------------------------------------------------
section_text = unique_lines.map(lambda lines: _text([ln for ln in lines if ln]))
pages = st.builds(
    lambda meta, extra, sections: projects.ProjectFile(meta=meta, extra_meta=extra, title="Project memory: shop",
                                                      sections=sections),
    st.fixed_dictionaries({"project": st.just("github.com-acme-shop")},
                          optional={"root": st.sampled_from(["/home/a/shop", "/Users/b/shop"]),
                                    "scanned_at": st.sampled_from(["2026-11-30T10:00:00Z", "2026-12-01T09:00:00Z"]),
                                    "schema_version": st.just(1)}),
    st.lists(st.sampled_from(["owner: ana", "review: weekly", "pinned: true"]), unique=True),
    st.dictionaries(st.sampled_from(SECTION_NAMES), section_text.filter(bool), max_size=4),
)


def _same(left: projects.ProjectFile, right: projects.ProjectFile) -> bool:
    return projects.render(left) == projects.render(right)


@given(pages, pages, pages)
def test_pages_merge_without_losing_a_line_a_side_kept(base: projects.ProjectFile, ours: projects.ProjectFile,
                                                       theirs: projects.ProjectFile) -> None:
    merged = merge_pages(base, ours, theirs)
    assert _same(merge_pages(base, ours, ours), ours)
    assert _same(merge_pages(base, base, theirs), theirs)
    assert _same(merge_pages(base, ours, base), ours)
    again = read_page(projects.render(merged).encode())  # what the merge writes is a page the next merge reads
    assert again is not None and _same(again, merged)
    for side, other in ((ours, theirs), (theirs, ours)):
        for name, content in side.sections.items():
            gone = name in base.sections and name not in other.sections and content == base.sections[name]
            if gone:
                assert name not in merged.sections
                continue
            old = set(base.sections.get(name, "").split("\n")) if name in base.sections else set()
            there = set(other.sections.get(name, "").split("\n"))
            for line in content.split("\n"):
                removed = line in old and name in other.sections and line not in there
                assert removed or line in merged.sections[name].split("\n"), (name, line)
    for key in ("root", "schema_version"):  # every field is one of the sides' values
        assert merged.meta.get(key) in (ours.meta.get(key), theirs.meta.get(key))


# -- what the learner and the scanner write ----------------------------------------------------------------
def _page(notes: str, *, root: str = "/home/a/shop", scanned: str = "2026-11-30T10:00:00Z",
          extra: list[str] | None = None, **sections: str) -> projects.ProjectFile:
    return projects.ProjectFile(meta={"project": "github.com-acme-shop", "name": "shop", "root": root,
                                      "scanned_at": scanned, "schema_version": 1}, extra_meta=extra or [],
                                title="Project memory: shop",
                                sections={"Commands": "- test: `make test` (Makefile)", "Notes": notes, **sections})


def test_notes_both_machines_learned_stay_newest_first_ours_then_theirs() -> None:
    base = merge_notes("", ["Builds with `make`"], "2026-11-01")
    ours = merge_notes(base, ["Lint/check passes with `make check-a`"], "2026-12-01")
    theirs = merge_notes(base, ["Lint/check passes with `make check-b`", "Port 8080 in use (`localhost:8080`)"],
                         "2026-12-02")
    merged = merge_section("Notes", base, ours, theirs)
    assert merged.splitlines() == ["- 2026-12-01: Lint/check passes with `make check-a`",
                                   "- 2026-12-02: Port 8080 in use (`localhost:8080`)",
                                   "- 2026-12-02: Lint/check passes with `make check-b`",
                                   "- 2026-11-01: Builds with `make`"]
    # merged again by the learner: nothing of it is a duplicate to drop
    assert merge_notes(merged, [], "2026-12-03") == merged


def test_the_same_note_learned_on_both_machines_is_one_line_with_the_newer_date() -> None:
    base = "- 2026-11-01: Builds with `make`"
    ours = merge_notes(base, ["Tests pass with `pytest`", "Builds with `make`"], "2026-12-01")
    theirs = merge_notes(base, ["Tests pass with `pytest`"], "2026-12-02")
    assert ours.splitlines() == ["- 2026-12-01: Builds with `make`", "- 2026-12-01: Tests pass with `pytest`"]
    assert merge_section("Notes", base, ours, theirs).splitlines() == ["- 2026-12-01: Builds with `make`",
                                                                       "- 2026-12-02: Tests pass with `pytest`"]
    errors = merge_section("Notes", None, "- 2026-12-01: Recurring error (2×): KeyError: 'x'",
                           "- 2026-12-02: Recurring error (3×): KeyError: 'x'")
    assert errors == "- 2026-12-02: Recurring error (3×): KeyError: 'x'"


def test_removed_lines_and_sections() -> None:
    base = _page("- 2026-11-01: Builds with `make`\n- 2026-11-02: Port 3000 in use (`localhost:3000`)",
                 Deploy="Deployed with fly.io", Legacy="- old")
    ours = _page("- 2026-11-01: Builds with `make`", Deploy="Deployed with fly.io, region fra", Legacy="- old")
    theirs = _page("- 2026-12-01: Tests pass with `tox`\n" + base.sections["Notes"])
    merged = merge_pages(base, ours, theirs)
    assert merged.sections["Notes"].splitlines() == ["- 2026-12-01: Tests pass with `tox`",
                                                     "- 2026-11-01: Builds with `make`"]
    assert merged.sections["Deploy"] == "Deployed with fly.io, region fra"  # removed there, edited here: kept
    assert "Legacy" not in merged.sections  # removed there, untouched here: removed


def test_placeholders_give_way_to_items() -> None:
    assert merge_section("Notes", "- (none yet)", "- 2026-12-01: A", "- 2026-12-02: B") == \
        "- 2026-12-01: A\n- 2026-12-02: B"
    directives = "Stored as memories tagged `directive`:"
    assert merge_section("Directives", None, f"{directives}\n- (none yet)", f"{directives}\n- `directive-x`: y") == \
        f"{directives}\n- `directive-x`: y"
    assert merge_section("Frameworks", None, "- (none found)", "- (none found)\n") == "- (none found)"


def test_frontmatter_merges_field_by_field() -> None:
    base = _page("- x", extra=["owner: ana", "review: weekly"])
    ours = _page("- x", root="/home/a/shop", scanned="2026-12-01T09:00:00Z",
                 extra=["owner: ana", "review: daily", "pinned: true"])
    theirs = _page("- x", root="/Users/b/code/shop", scanned="2026-12-02T09:00:00Z",
                   extra=["owner: bo", "review: monthly"])
    merged = merge_pages(base, ours, theirs)
    assert merged.meta["scanned_at"] == "2026-12-02T09:00:00Z" and merged.meta["root"] == "/Users/b/code/shop"
    assert merged.extra_meta == ["owner: bo", "review: monthly", "pinned: true"]  # both changed review: newer scan
    assert merge_pages(base, theirs, ours).meta == merged.meta  # whichever machine merges
    created = merge_pages(None, ours, theirs)  # both machines created the page: the union, the newer scan's root
    assert created.meta["root"] == "/Users/b/code/shop" and created.sections["Notes"] == "- x"


def test_only_readable_pages_merge_section_by_section() -> None:
    path = projects.project_path("github.com-acme-shop")
    page = projects.render(_page("- 2026-12-01: A")).encode()
    other = projects.render(_page("- 2026-12-02: B")).encode()
    merged = merge_page_file(path, None, page, other)
    assert merged is not None and b"- 2026-12-01: A\n- 2026-12-02: B" in merged
    assert merge_page_file("projects/x.md.conflict-5bca9a", None, page, other) is None
    assert merge_page_file(path, None, b"\xff\xfe", other) is None
    assert read_page(b"Some prose before any section\n## Notes\n- a\n") is None  # parse would drop the prose
    assert read_page(b"# Project memory: shop\n\n## Notes\n- a\n") is not None
