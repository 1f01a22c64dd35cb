"""The tool-call hook's JSON (the C accelerator without ``import json``) reads and writes what :mod:`json` does."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitmem.text import quickjson

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(VALUES, st.booleans())
def test_dumps_writes_what_json_writes(value: Any, sort_keys: bool) -> None:
    assert quickjson.dumps(value, sort_keys=sort_keys) == json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)


@given(VALUES, st.sampled_from(["", " ", "\n", " \t\r\n "]))
def test_loads_reads_what_json_reads(value: Any, space: str) -> None:
    text = space + json.dumps(value, ensure_ascii=False, indent=1) + space
    assert quickjson.loads(text) == json.loads(text)


@pytest.mark.parametrize("text", ["", " ", "{", "[1,]", "1 2", '{"a": 1} x', "nul", '"\x01"'])
def test_bad_json_is_a_value_error_as_with_json(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        quickjson.loads(text)


def test_special_values_and_what_cannot_be_written() -> None:
    assert math.isnan(quickjson.loads("NaN")) and quickjson.loads("-Infinity") == -math.inf
    assert quickjson.dumps({"when": object()}, default=lambda o: "later") == '{"when":"later"}'
    with pytest.raises(TypeError):
        quickjson.dumps({"when": object()})


def test_importing_it_loads_neither_json_nor_re() -> None:
    code = ("import sys; from gitmem.text import quickjson; quickjson.loads(quickjson.dumps({'a': [1, 'é']})); "
            "print('json' in sys.modules, 're' in sys.modules)")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(__import__("pathlib").Path(quickjson.__file__).parents[2])}).stdout
    assert out.split() == ["False", "False"]


def test_damaged_json_is_a_value_error_in_a_process_that_never_imported_json() -> None:
    # the C scanner's first error, before json.decoder is loaded, comes out as a SystemError: the hooks read their
    # derived files with loads and treat a ValueError as "damaged, rebuild it"
    code = ("from gitmem.text import quickjson\n"
            "for text in ('{damaged', '[1,', '\"abc'):\n"
            "    try:\n"
            "        quickjson.loads(text)\n"
            "    except ValueError:\n"
            "        print('ValueError')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["ValueError"] * 3
