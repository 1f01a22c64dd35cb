"""Which rules of :data:`gitmem.redact.rules.RULES` a text can hold a match of, and each rule compiled once, on
first use.

The per-tool-call hook redacts dozens of texts and most hold no secret, so a text is first tested against the
rules' cheap triggers (substrings of the lower-cased text, the long run some rules' matches always hold, and for
the assignment rule a keyword right before a separator): a rule none of whose trigger groups is satisfied is never
compiled, and ``re`` is imported only when some rule is (the engine's design: :mod:`gitmem.redact.engine`).
"""

from __future__ import annotations

from gitmem.redact.memo import cache
from gitmem.redact.rules import ASSIGNMENT_RULE, BARE_GROUPS, CHECKED_GROUPS, KEY_ENDINGS, RULES

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    import re


@cache
def compiled(index: int) -> tuple[re.Pattern[str], tuple[tuple[int, bool, bool], ...], int]:
    """Rule ``index``, compiled once on first use.

    Returns the regex, its secret groups as (number, holds an unquoted value,
    is kept unless it looks like a secret), and the number of its ``_k`` group
    (0 if none).
    """
    import re  # on first use: the per-tool-call hook seldom needs a pattern

    regex = re.compile(RULES[index][1])
    secrets = tuple(
        (number, name in BARE_GROUPS, name in CHECKED_GROUPS)
        for name, number in regex.groupindex.items()
        if name[:2] == "_s"
    )
    return regex, secrets, regex.groupindex.get("_k", 0)


def marker_re() -> re.Pattern[str]:
    """The pattern of an existing ``[REDACTED:<kind>]`` marker."""
    return compiled(0)[0]  # the marker rule


# Every trigger of the table once, and each rule's trigger groups as sets: a text is searched for each trigger
# once, then each rule is one set test per group (a Python loop over every rule's triggers took ~0.3 ms a text,
# and a tool call's input and output are dozens of texts).
_TRIGGERS = tuple({t: None for rule in RULES for group in rule[2] for t in group})
_TRIGGER_SETS = tuple(tuple(frozenset(group) for group in rule[2]) for rule in RULES)


def triggered(lowered: str, *, specific_only: bool = False) -> list[int]:
    """Indices of the rules one of whose triggers occurs in ``lowered`` (and that could find their run there).

    With ``specific_only``, only rules for specific token formats count, not
    the marker and not the generic rules.
    """
    present = {t for t in _TRIGGERS if t in lowered}
    if not present:
        return []
    longest: dict[str, int] = {}  # per class of run: computed once per text, and only if a rule asks
    found = []
    for i, groups in enumerate(_TRIGGER_SETS):
        if any(map(present.isdisjoint, groups)):
            continue
        kind, _, _, generic, (chars, length) = RULES[i]
        if specific_only and (generic or not kind):
            continue
        if length:
            if chars not in longest:
                longest[chars] = _longest_run(lowered, chars)
            if longest[chars] < length:
                continue
        if i != ASSIGNMENT_RULE or _assignment_possible(lowered):
            found.append(i)
    return found


def _longest_run(lowered: str, chars: str) -> int:
    """The most characters of ``chars`` (ASCII) in a row in ``lowered``; lower-casing turns each ASCII character
    of the text into one ASCII character, so every run of the text is one of ``lowered``.

    Some rules' triggers are common ("-", "==", "pat" in ``file_path``) and their matches always hold a long run
    (32 hex digits); this check, a few C-level passes over the text, spares such texts the rule's compilation and
    the tool call's hook the import of ``re``."""
    table = _RUN_TABLES.get(chars)
    if table is None:
        kept = {ord(ch) for ch in chars.lower()}
        table = _RUN_TABLES[chars] = bytes(b if b in kept else 32 for b in range(256))
    return max(map(len, lowered.encode("ascii", "replace").translate(table).split()), default=0)


# byte translation tables of :func:`_longest_run`: the class's lower-case characters kept, every other byte a space
_RUN_TABLES: dict[str, bytes] = {}


def _assignment_possible(lowered: str) -> bool:
    """Whether a keyword of the assignment rule stands right before a separator somewhere in ``lowered`` (then
    a closing quote, a ``]`` and up to 16 spaces or tabs may sit between them, as the rule allows).

    The rule's triggers ("pass" and ":" anywhere) fire on most tool output ("3 passed", JSON), and compiling the
    rule is the largest cost of a hook's redaction (~3 ms); this scan of the separators costs microseconds on
    such text and lets only text that might hold an assignment pay for the compilation."""
    for separator in "=:：":
        at = lowered.find(separator)
        while at >= 0:
            end = at
            while end > 0 and at - end < 16 and lowered[end - 1] in " \t":
                end -= 1
            ends = [end]
            if lowered[end - 1 : end] == "]":
                end -= 1
                ends.append(end)
            if lowered[end - 1 : end] in ("\"", "'", "`"):
                ends.append(end - 1)
            if any(lowered.endswith(KEY_ENDINGS, 0, e) for e in ends):
                return True
            at = lowered.find(separator, at + 1)
    return False


