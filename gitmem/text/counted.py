"""A count and its noun as a reader expects them: "1 memory", "2 memories", "1 commit", "0 files".

Every message, log line and commit subject that counts something says it through :func:`counted`, so no output
reads "1 memories"."""

from __future__ import annotations

#: plurals that are not the word plus "s"
_IRREGULAR = {"memory": "memories"}


def counted(count: int, noun: str) -> str:
    """``"<count> <noun>"``, the noun's last word in the plural unless ``count`` is 1 (``counted(1, "memory")`` →
    "1 memory", ``counted(3, "memory")`` → "3 memories", ``counted(2, "file version")`` → "2 file versions")."""
    if count == 1:
        return f"{count} {noun}"
    head, _, last = noun.rpartition(" ")
    plural = _IRREGULAR.get(last, last + "s")
    return f"{count} {head + ' ' if head else ''}{plural}"
