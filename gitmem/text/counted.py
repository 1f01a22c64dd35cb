"""A count and its noun as a reader expects them: "1 memory", "2 memories", "1 commit", "0 files".

Every message, log line and commit subject that counts something says it through :func:`counted`, so no output
reads "1 memories"."""

from __future__ import annotations

#: plurals that are not the noun plus "s"
_IRREGULAR = {"memory": "memories", "file version": "file versions", "directory": "directories",
              "entry": "entries", "match": "matches"}


def counted(count: int, noun: str) -> str:
    """``"<count> <noun>"``, the noun in the plural unless ``count`` is 1 (``counted(1, "memory")`` → "1 memory",
    ``counted(3, "memory")`` → "3 memories")."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {_IRREGULAR.get(noun, noun + 's')}"
