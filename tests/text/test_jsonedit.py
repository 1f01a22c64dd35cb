"""The in-place JSON editor under random documents: it reads what the standard library reads, and an edit holds
exactly the new data while every member it did not touch keeps its bytes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.text.jsonedit import JSONC, Editor, parse, same_json

KEYS = st.text(alphabet="abcdefgh_中文", min_size=1, max_size=6)
SCALARS = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=12)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
                      max_leaves=12)
DOCS = st.dictionaries(KEYS, VALUES, max_size=6)
INDENTS = st.sampled_from([None, 2, 4, "\t"])


def _edited(text: str, new: dict[str, Any]) -> str:
    doc = parse(text)
    editor = Editor(doc)
    editor.change(doc.root, new)
    return editor.result()


@settings(max_examples=150, deadline=None)
@given(DOCS, INDENTS)
def test_it_reads_what_json_reads(data: dict[str, Any], indent: int | str | None) -> None:
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    assert same_json(parse(text).root.value, json.loads(text))


@settings(max_examples=150, deadline=None)
@given(DOCS, DOCS, INDENTS)
def test_an_edit_holds_the_new_data_and_keeps_the_untouched_members(old: dict[str, Any], extra: dict[str, Any],
                                                                    indent: int | str | None) -> None:
    text = json.dumps(old, indent=indent, ensure_ascii=False)
    new = {**{k: v for i, (k, v) in enumerate(old.items()) if i % 2 == 0}, **extra}  # some dropped, some added
    result = _edited(text, new)
    assert same_json(json.loads(result), new)
    for key, value in old.items():  # a member kept as it was is kept byte for byte
        if key in new and same_json(new[key], value) and indent is not None:
            member = json.dumps({key: value}, indent=indent, ensure_ascii=False)[1:-1].strip().rstrip(",")
            assert member.split("\n", 1)[0] in result


def test_comments_and_trailing_commas_of_jsonc_are_read_and_kept() -> None:
    text = '{\n  // the theme\n  "theme": "dark", /* why */\n  "n": [1, 2,],\n}\n'
    doc = parse(text, JSONC)
    assert doc.root.value == {"theme": "dark", "n": [1, 2]} and doc.comment_texts() == ["// the theme", "/* why */"]
    editor = Editor(doc)
    editor.change(doc.root, {"theme": "dark", "n": [1, 2], "mcp": {"on": True}})
    result = editor.result()
    assert "// the theme" in result and "/* why */" in result and parse(result, JSONC).root.value["mcp"] == {"on": True}
