"""A count and its noun: the words every message, log line and commit subject uses to count something."""

from __future__ import annotations

import pytest

from gitmem.text.counted import counted


@pytest.mark.parametrize(("count", "noun", "said"), [
    (1, "memory", "1 memory"), (0, "memory", "0 memories"), (2, "memory", "2 memories"),
    (1, "commit", "1 commit"), (12, "commit", "12 commits"), (1, "file version", "1 file version"),
    (3, "file version", "3 file versions"), (1, "session", "1 session"), (40, "session", "40 sessions"),
    (2, "more memory", "2 more memories"), (1, "more memory", "1 more memory"),
])
def test_the_noun_is_plural_unless_the_count_is_one(count: int, noun: str, said: str) -> None:
    assert counted(count, noun) == said
