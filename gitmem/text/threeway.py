"""The rule every three-way merge of gitmem starts from (memories' fields, wiki pages, project pages): when both
sides agree, or only one of them changed the common ancestor, the answer needs no judgement."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

__all__ = ["three_way"]


def three_way(base: T | None, has_base: bool, ours: T, theirs: T, resolve: Callable[[T, T], T]) -> T:
    """A three-way merge's easy cases (both sides agree, or only one changed from ``base``); ``resolve(ours,
    theirs)`` decides when both changed. ``has_base``: whether ``base`` exists (None may be a value)."""
    if ours == theirs:
        return ours
    if has_base:
        if ours == base:
            return theirs
        if theirs == base:
            return ours
    return resolve(ours, theirs)
