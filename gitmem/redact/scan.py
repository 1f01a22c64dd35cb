"""One pass of the redaction rules over a text: the leftmost match of the triggered rules and the caller's patterns
wins, each match is judged (is the value of a generic rule a secret at all, and of which more specific kind), and
what is kept of it and what replaces its secret is decided here.

:mod:`gitmem.redact.engine` repeats the pass until it finds nothing and builds its results from what the pass
reports; the rules a text triggers and their compiled patterns come from :mod:`gitmem.redact.triggers`.
"""

from __future__ import annotations

from gitmem.redact.memo import cache
from gitmem.redact.rules import CUSTOM, RULES, SHORTEST_SPECIFIC
from gitmem.redact.triggers import compiled, marker_re, triggered

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    import re
    from collections.abc import Sequence
    from typing import Any


@cache
def _aws_secret_re() -> re.Pattern[str]:
    import re  # on first use: the per-tool-call hook seldom needs a pattern

    return re.compile(r"[A-Za-z0-9/+]{40}")


def _specific_kind(value: str, *, at_start: bool) -> str:
    """The kind of the first specific rule that matches ``value`` at its start (or, if not ``at_start``, anywhere)."""
    if len(value) < SHORTEST_SPECIFIC:
        return ""
    for i in triggered(value.lower(), specific_only=True):
        regex = compiled(i)[0]
        if (regex.match(value) if at_start else regex.search(value)) is not None:
            return RULES[i][0]
    return ""


def _refine(value: str, key: str, kind: str) -> str:
    """The most specific kind for the value of a generic rule."""
    specific = _specific_kind(value, at_start=True)
    if specific:
        return specific
    if len(value) == 40 and key:
        normalized = key.lower().replace("_", "").replace("-", "")
        if ("aws" in normalized or "secretaccesskey" in normalized) and _aws_secret_re().fullmatch(value):
            return "aws-secret-key"
    return kind


def _replacement(index: int, match: Any) -> tuple[str, str, int, str] | None:
    """The kind, the replacement text, where the replaced text ends (the match's end, or past it for a
    passphrase) and the secret itself, for a match of rule ``index``; None to keep the match as it is."""
    if index >= len(RULES):  # a caller's extra pattern: its whole match, unless empty
        if match.end() <= match.start():
            return None
        return CUSTOM, f"[REDACTED:{CUSTOM}]", match.end(), match.group(0)
    kind, _, _, generic, _ = RULES[index]
    if not kind:  # an existing marker
        return None
    _, secret_groups, keyword_group = compiled(index)
    start, end = match.span()
    bare = checked = quoted = False
    for group, is_bare, is_checked in secret_groups:
        if match.start(group) >= 0:
            start, end = match.span(group)
            bare, checked = is_bare, is_checked
            quoted = start > 0 and match.string[start - 1] in "\"'`"
            break
    text = match.string
    passphrase = bool(keyword_group) and "phrase" in (match.group(keyword_group) or "").lower()
    if checked and passphrase and not quoted:  # a passphrase is words: the rest of the line
        line_end = text.find("\n", start)
        end = len(text) if line_end < 0 else line_end
        while end > start + 1 and text[end - 1] in " \t\r":
            end -= 1
        checked = False
    if checked:  # a word after "key:" or in prose: without its closing punctuation
        while end - start > 1 and text[end - 1] in ".,;:)]}":
            end -= 1
    value = text[start:end]
    if generic:
        stripped = value.strip()
        if not stripped or marker_re().fullmatch(stripped) or not any(ch.isalnum() for ch in stripped):
            return None  # nothing, a marker, or only punctuation (``secrets:")``)
        # here: only a candidate of a generic rule is judged (most texts of a tool call's hook hold none)
        from gitmem.redact.values import is_placeholder, is_prose, key_before, looks_like_secret

        if checked and not quoted and not looks_like_secret(stripped) and not _specific_kind(value, at_start=True):
            return None  # the cheapest test first: most prose candidates stop here
        if is_placeholder(stripped, bare) and not _specific_kind(value, at_start=False):
            return None
        if quoted and not passphrase and is_prose(stripped):
            return None
        key = ""
        if keyword_group and match.start(keyword_group) >= 0 and (bare or len(value) == 40):
            key = key_before(text, match.start(keyword_group)) + match.group(keyword_group)
            if bare and value == key.rsplit(".", 1)[-1]:  # self.token = token
                return None
        kind = _refine(value, key, kind)
    replaced = f"{text[match.start() : start]}[REDACTED:{kind}]{text[end : match.end()]}"
    return kind, replaced, max(end, match.end()), value


def _custom_end(match: Any) -> int:
    """Where a caller's match ends, widened to the end of a marker it would cut.

    Built-in rules never end inside a marker; a caller's pattern might.
    """
    text: str = match.string
    end: int = match.end()
    opening = text.rfind("[REDACTED:", max(match.start(), end - 60), end)
    if opening >= 0:
        marker = marker_re().match(text, opening)
        if marker is not None and marker.end() > end:
            return marker.end()
    return end


def scan(text: str, found: list[str], customs: Sequence[Any] = (), *, first_only: bool = False,
          values: list[str] | None = None) -> str:
    """One pass of the triggered rules and the caller's patterns over ``text``.

    Appends each kind redacted to ``found``.  This does what ``re.sub`` with the
    alternation of all the rules would do (the leftmost match wins; at the same
    position, the earlier rule, and the caller's patterns come last), but each
    rule is compiled on its own, once, and searched with its own fast prefix.
    The heap holds the next match of each rule, by position then priority.
    """
    regexes: dict[int, Any] = {i: compiled(i)[0] for i in triggered(text.lower())}
    if customs:  # the user's patterns (loaded only when there are some)
        from gitmem.redact.custom import Matches

        regexes.update((len(RULES) + n, Matches(pattern, text)) for n, pattern in enumerate(customs))
    heap: list[tuple[int, int, Any]] = []
    for i, regex in regexes.items():
        match = regex.search(text)
        if match is not None:
            heap.append((match.start(), i, match))
    if all(i == 0 for _, i, _ in heap):  # nothing, or only markers
        return text
    import heapq  # only once something may be replaced: most texts of a tool call's hook have no secret

    heapq.heapify(heap)
    pieces: list[str] = []
    copied = 0
    while heap:
        _, index, match = heapq.heappop(heap)
        end = match.end() if index < len(RULES) else _custom_end(match)
        result = _replacement(index, match)
        if result is not None:
            found.append(result[0])
            if values is not None:
                values.append(result[3])
            pieces += (text[copied : match.start()], result[1])
            copied = max(end, result[2])
            end = copied
            if first_only:
                break
        elif index < len(RULES) and RULES[index][0]:
            # A candidate the checks turned down ("密钥是 <a URL>", "password: required") hides nothing: the
            # other rules' matches inside it stay in the heap; only this rule searches again after it.
            following = regexes[index].search(text, max(end, match.start() + 1))
            if following is not None:
                heapq.heappush(heap, (following.start(), index, following))
            continue
        # Search again, after this match, this rule and every rule whose next match overlaps it.
        again = [index]
        while heap and heap[0][0] < end:
            again.append(heapq.heappop(heap)[1])
        for i in again:
            resume = end + 1 if i == index and match.start() == end else end  # after an empty match
            if resume <= len(text):
                following = regexes[i].search(text, resume)
                if following is not None:
                    heapq.heappush(heap, (following.start(), i, following))
    pieces.append(text[copied:])
    return "".join(pieces)


