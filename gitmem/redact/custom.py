"""The user's own redaction patterns (``redaction.extra_patterns`` in ``gitmem.toml``), run on RE2.

A pattern travels with the memories to every machine, and Python's ``re`` backtracks: one pattern such as
``(a+)+$`` could freeze every hook. RE2 runs any pattern in time linear in the text and refuses the few constructs
that need backtracking (look-around, back-references); such a pattern is refused with a hint
(:class:`PatternError`). :class:`Matches` lets the engine's scan treat a user pattern like a built-in rule."""

from __future__ import annotations

from gitmem.errors import ConfigError
from gitmem.redact.memo import lru_cache

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Matches", "PatternError", "compile_pattern", "custom_patterns"]


class PatternError(ConfigError):
    """An extra redaction pattern that the linear-time engine cannot run."""


def compile_pattern(pattern: str) -> Any:
    """Compile one of the user's extra patterns with RE2, whose run time is linear in the text.

    Python's ``re`` backtracks: one pattern such as ``(a+)+$`` from a ``gitmem.toml`` that travels with the
    memories could freeze every hook of every machine.  RE2 never backtracks, so no pattern can; it refuses the
    few constructs that need backtracking (look-around, back-references).  Raises :class:`PatternError`.
    """
    try:
        import re2
    except ImportError:  # pragma: no cover - google-re2 is a dependency
        raise PatternError("redaction.extra_patterns needs the google-re2 package",
                           "pip install google-re2, or remove the patterns") from None
    if not isinstance(pattern, str) or not pattern:
        raise PatternError(f"redaction.extra_patterns: {pattern!r} is not a non-empty string",
                           "give each pattern as a string")
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own message on stderr
    try:
        regex = re2.compile(pattern, options=options)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(
            f"redaction.extra_patterns: {pattern!r} is not a valid regular expression for RE2 ({reason})",
            "patterns run on RE2, which has no look-around or back-references; rewrite or remove it",
        ) from None
    if regex.search("") is not None:
        raise PatternError(f"redaction.extra_patterns: {pattern!r} matches the empty string",
                           "make it match at least one character (e.g. + instead of *)")
    return regex


@lru_cache(maxsize=32)
def custom_patterns(patterns: tuple[str, ...]) -> tuple[Any, ...]:
    """Compile the caller's extra patterns (raises :class:`PatternError` if one cannot be used)."""
    return tuple(compile_pattern(p) for p in patterns)


class Matches:
    """All non-empty matches of an extra pattern in one text, found in one linear pass, searched by position.

    ``search(text, pos)`` answers like a compiled pattern's (the first match starting at ``pos`` or later), so
    the scan treats extra patterns like the built-in rules without searching the text again for each match.
    """

    def __init__(self, regex: Any, text: str) -> None:
        self.matches = [m for m in regex.finditer(text) if m.end() > m.start()]
        self.starts = [m.start() for m in self.matches]

    def search(self, text: str, pos: int = 0) -> Any:
        from bisect import bisect_left

        i = bisect_left(self.starts, pos)
        return self.matches[i] if i < len(self.matches) else None
