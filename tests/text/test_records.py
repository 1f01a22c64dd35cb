"""Frozen records without dataclasses: fields in declaration order, defaults, immutability, comparison, copies
with changes, and clear errors for a missing or unknown field."""

from __future__ import annotations

import functools

import pytest

from gitmem.config import Config, RecallConfig
from gitmem.text import records
from gitmem.text.records import Record, field, replace


class Point(Record):
    x: int
    y: int = 0
    label: str = ""


def test_fields_are_the_annotated_names_in_order_with_their_defaults() -> None:
    assert Point.FIELDS == ("x", "y", "label")
    assert Config.FIELDS[:2] == ("repo", "remote") and "recall" in Config.FIELDS and RecallConfig.FIELDS
    point = Point(x=1)
    assert (point.x, point.y, point.label) == (1, 0, "")
    assert repr(point) == "Point(x=1, y=0, label='')"


def test_records_are_frozen_compare_by_value_and_hash() -> None:
    point = Point(x=1, y=2)
    with pytest.raises(AttributeError, match="frozen"):
        point.x = 3  # type: ignore[misc]
    assert point == Point(x=1, y=2) and point != Point(x=1, y=3) and hash(point) == hash(Point(x=1, y=2))
    assert len({point, Point(x=1, y=2)}) == 1


def test_replace_copies_with_changes_and_keeps_the_original() -> None:
    point = Point(x=1, y=2, label="a")
    moved = replace(point, y=5)
    assert moved == Point(x=1, y=5, label="a") and point.y == 2


def test_a_missing_or_unknown_field_says_which() -> None:
    with pytest.raises(TypeError, match="'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'z'"):
        Point(x=1, z=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'z'"):
        replace(Point(x=1), z=2)


class Measured(Record):
    UNCOMPARED = frozenset({"tool"})
    value: float
    tool: str = "ruler"

    @functools.cached_property
    def doubled(self) -> float:
        return self.value * 2


def test_an_uncompared_field_is_kept_but_not_part_of_the_value() -> None:
    a, b = Measured(value=1.0, tool="ruler"), Measured(value=1.0, tool="laser")
    assert b.tool == "laser" and a == b and hash(a) == hash(b) and repr(b) == "Measured(value=1.0)"
    assert Measured.FIELDS == ("value", "tool") and replace(b, value=2.0).tool == "laser"


def test_a_value_computed_on_first_use_is_kept_on_the_frozen_record() -> None:
    m = Measured(value=1.5)
    assert m.doubled == 3.0 and m.__dict__["doubled"] == 3.0 and m == Measured(value=1.5)


class Tagged(Record):
    name: str = field(metadata={"doc": "what it is called"})
    tags: tuple[str, ...] = field(default=(), metadata={"doc": "labels"})
    notes: dict[str, str] = field(default_factory=dict, compare=False)
    at: Point = Point(x=0)


def test_a_field_declaration_gives_a_fresh_default_metadata_and_an_uncompared_value() -> None:
    a, b = Tagged(name="a"), Tagged(name="a", notes={"by": "bob"})
    a.notes["seen"] = "yes"
    assert Tagged(name="c").notes == {}  # each record gets its own dict
    assert a == b and hash(a) == hash(b) and a != Tagged(name="a", tags=("x",))
    assert repr(b) == "Tagged(name='a', tags=(), notes={'by': 'bob'}, at=Point(x=0, y=0, label=''))"
    declared = records.fields(Tagged)
    assert [f.name for f in declared] == ["name", "tags", "notes", "at"] == list(Tagged.FIELDS)
    assert [f.metadata.get("doc") for f in declared] == ["what it is called", "labels", None, None]
    assert declared[0].default is records.MISSING and declared[1].default == () and declared[3].default == Point(x=0)
    assert declared[1].type == "tuple[str, ...]" and records.fields(b) == declared
    with pytest.raises(TypeError, match="'name'"):
        Tagged()  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="not both"):
        field(default={}, default_factory=dict)


def test_asdict_gives_plain_copies() -> None:
    record = Tagged(name="a", tags=("x",), notes={"k": "v"}, at=Point(x=1))
    data = records.asdict(record)
    assert data == {"name": "a", "tags": ("x",), "notes": {"k": "v"}, "at": {"x": 1, "y": 0, "label": ""}}
    data["notes"]["k"] = "changed"
    assert record.notes == {"k": "v"}
    with pytest.raises(AttributeError, match="frozen"):
        del record.name
