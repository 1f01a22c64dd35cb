"""Regular expressions compiled on first use.

A hook is a new Python process for every prompt: compiling a module's regular expressions at import costs it
each time, whether or not the text at hand needs them. A character class over CJK ranges alone takes a few
milliseconds (``re`` fills a 64k-entry table in Python), a set of case-insensitive rules tens of milliseconds:
more than the prompt hook's search. A :class:`LazyPattern` compiles when a method is first called, so a
module can declare its rules as before and a path that never reaches them never pays for them; nor does it import
:mod:`re` (with :mod:`enum` and :mod:`functools`, ~17 ms), which loads with the first compilation. Flags are written
inline in the pattern (``(?i)``, ``(?m)``) for the same reason.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the hook path avoids importing typing
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Iterator


class LazyPattern:
    """A ``re.Pattern`` that compiles on first use; the methods the project uses, with ``re``'s signatures."""

    __slots__ = ("_regex", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._regex: re.Pattern[str] | None = None

    @property
    def regex(self) -> re.Pattern[str]:
        """The compiled expression (compiled now if it was not yet)."""
        if self._regex is None:
            import re

            self._regex = re.compile(self.pattern, self.flags)
        return self._regex

    @property
    def compiled(self) -> bool:
        """Whether the expression has been compiled (a test can check that a path never needed it)."""
        return self._regex is not None

    def match(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return self.regex.match(string, pos, endpos)

    def search(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return self.regex.search(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> list[str]:
        return self.regex.findall(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> Iterator[re.Match[str]]:
        return self.regex.finditer(string, pos, endpos)

    def split(self, string: str, maxsplit: int = 0) -> list[str]:
        return self.regex.split(string, maxsplit)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.regex.sub(repl, string, count)

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r}, {self.flags!r})"
