"""Redact secrets from text before it is written to the memory repository.

Every secret found is replaced by ``[REDACTED:<kind>]``; see
:data:`gitmem.redact.rules.KINDS` for the kinds.  Only the secret itself is
replaced: the key of an assignment (``password=``), the user and host of a
URL, the quotes around a value and the ``https://hooks.slack.com/services/``
prefix of a webhook are kept, so the redacted memory still says *what* was
there.

This module is the engine: it compiles, triggers and runs the rules of
:mod:`gitmem.redact.rules` (the catalogue of what each kind of secret looks
like, and why those patterns are our own, not ``detect-secrets``) and the
user's patterns (:mod:`gitmem.redact.custom`), asks :mod:`gitmem.redact.values`
whether a matched value is a secret at all, and finds a more specific kind.  It runs in
a hook process on every tool call of the agent, whose whole budget is ~25 ms.

Measured cost on the development machine before the catalogue grew to 88
patterns (2 shared, busy CPUs, Python 3.11, bytecode cached; CPU time, best of
21 fresh processes; docs/store.md has the current hook figures)::

    import gitmem.redact.engine (dataclasses already loaded)   1.6 ms
    first redact() of a 2 KB note, no secret            3.0 ms
    first redact() of a 2 KB note with 3 secrets        4-5 ms
    later calls on the same notes                       0.5 / 1.1-1.4 ms

Importing ``dataclasses`` itself, if nothing has yet, adds ~11 ms.  The first
call costs more than later ones because it compiles the rules it needs; the
generic-assignment rule is the largest (~1.3-2.5 ms).

Design
------
* :data:`gitmem.redact.rules.RULES` is the one table of patterns, in priority
  order.  Each rule has cheap *triggers*, lower-case substrings that the
  lower-cased text must contain for the rule to possibly match, and some a
  *run* its matches always hold (so many letters and digits in a row).  A
  rule is compiled here on first use, once per process; text that triggers
  no rule costs a few substring scans, and ``re`` is imported only then.
* One left-to-right pass finds, like ``re.sub`` over the alternation of all the
  triggered rules, the leftmost match, and at the same position the earlier
  rule; but each rule is compiled and searched on its own, so its literal
  prefix (``ghp_``, ``eyJ``, ...) gives ``re`` a fast scan, and no combination
  of rules is ever compiled twice.  Boundaries are look-behinds placed after
  that prefix (see :mod:`gitmem.redact.rules`).
* Existing ``[REDACTED:...]`` markers are the first rule and are copied
  unchanged, and no rule can end inside one, so the function is idempotent.
  The pass is repeated while it finds something (normally once more, finding
  nothing): replacing a secret can change the context a look-around sees.
* Every pattern is linear: repetitions are bounded, or cannot fail once
  started, or start at an anchor that occurs once per run of characters; a
  1 MB input takes ~0.1-0.8 s, and ~2 s even when it holds 100 000 secrets.

Generic assignments (kind ``password``)
---------------------------------------
A key whose name *ends* in password/passwd/passphrase/pass/pwd/secret(s)/
token/credential(s)/api_key/access_key/... (or 密码/口令/密钥/令牌), followed by
``=``, ``:``, ``:=``, ``=>`` or ``：``, has its value redacted: quoted values
(``"..."``, ``'...'``, backticks), JSON and YAML values, env files
(``export API_TOKEN=...``), YAML block scalars (``key: |``), XML elements
(``<password>...</password>``) and long CLI flags (``--password=...``, and
``--token VALUE`` when VALUE holds a digit or symbol).  After ``=`` the value
is one word (``;`` and ``&`` end it, as in connection and query strings).
After ``:``, and for a secret named in prose ("the admin password is ...",
"use password ... to log in", "数据库密码是 ..."), the value is one word that
is kept unless it looks like a secret (:func:`~gitmem.redact.values.looks_like_secret`: letters
mixed with digits or symbols, or a long random-looking run), so that "CI
summary: pass: 120", "pwd: /srv/app" and "Password: must be at least 12
characters" stay intact; after ``passphrase:`` it is the rest of the line.  A
quoted value is kept when it is a sentence.  When the value is itself a known
token, the specific kind is used (``GITHUB_TOKEN=ghp_...`` gives
``github-token``).  An unquoted value that is itself a key ("password: token:
...", ``password = password = ...``) is not the value: the value after the
last keyword of the chain is redacted, and the keywords are kept.

To avoid false positives, these are left alone:

* prose without an assignment: "the password field is required", "set token
  to empty", "Passwords: never commit them";
* keys that only *contain* a keyword: ``max_tokens: 100``,
  ``password_min_length = 8``, ``tokenizer: bpe``;
* values that are references, not literals -- our documented choice for code:
  calls and subscripts (``password = get_password()``,
  ``token = os.environ["TOKEN"]``), dotted names (``token = self.token``), a
  value that repeats the key's own name (``self.password = password``),
  ``$VAR`` / ``${VAR}`` / ``{{ template }}`` / ``<placeholder>``, masks such as
  ``***``, empty strings, and null-like or type-like words (``None``, ``null``,
  ``true``, ``str``, ``Optional[str]``, ``str | None = None``), so that type
  hints like ``def login(password: str)`` stay readable.  Any other bare
  identifier (``password = secret_value``) *is* redacted: it cannot be told
  apart from ``PASSWORD=hunter2`` in an env file, and over-redacting is the
  safe side (after ``=``; after ``:`` a word must look like a secret).

Other kinds: Slack webhook URLs are ``slack-webhook`` (Slack tokens are
``slack-token``); an ``Authorization: Bearer`` value is ``bearer-token`` unless
it is a known token such as a JWT; an ``Authorization: Basic`` value is
``basic-auth``.  An AWS secret access key with no key name
(``aws-secret-key``) is found by its neighbour: 40 base64 characters (both
cases, not all hex) beside an ``AKIA``/``ASIA`` key id, on its line or the next.

A candidate that these checks turn down hides nothing: the matches of other
rules inside it are still redacted ("密钥是 postgres://u:PASSWORD@host").

User patterns (``extra_patterns``) run on RE2, in linear time whatever the
pattern (:func:`~gitmem.redact.custom.compile_pattern`); :func:`redact_value` redacts parsed JSON
values (tool calls) string by string, judging a value with its key.

Known limits: a value ends at the end of its line (YAML block scalars
excepted); a lower-case word after ``password:`` is kept; a private-key BEGIN
line without its END line is redacted to the end of the text, on purpose; a
token glued to a longer word (``xAKIA...``) is not taken for a token.
"""

from __future__ import annotations

from gitmem.redact.memo import cache
from gitmem.redact.rules import (
    ASSIGNMENT_RULE,
    BARE_GROUPS,
    CHECKED_GROUPS,
    CUSTOM,
    KEY_ENDINGS,
    RULES,
    SHORTEST_SPECIFIC,
)

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    import re
    from collections.abc import Sequence
    from typing import Any

__all__ = [
    "Redaction", "contains_secret", "find_secrets", "redact", "redact_value",
]


class Redaction:
    """The result of :func:`redact` (immutable; a plain class, as ``dataclasses`` costs a hook process on every
    tool call more than the whole scan).

    Attributes:
        text: The redacted text.
        kinds: The kinds of secrets found, in order of first appearance,
            without duplicates (empty when nothing was redacted).
    """

    __slots__ = ("kinds", "text")
    text: str
    kinds: tuple[str, ...]

    def __init__(self, text: str, kinds: tuple[str, ...]) -> None:
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "kinds", kinds)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Redaction is immutable: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Redaction) and (self.text, self.kinds) == (other.text, other.kinds)

    def __hash__(self) -> int:
        return hash((self.text, self.kinds))

    def __repr__(self) -> str:
        return f"Redaction(text={self.text!r}, kinds={self.kinds!r})"


# A safety bound on the passes of :func:`redact`: the second pass normally finds nothing.
_MAX_PASSES = 8


@cache
def _compiled(index: int) -> tuple[re.Pattern[str], tuple[tuple[int, bool, bool], ...], int]:
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


def _marker_re() -> re.Pattern[str]:
    return _compiled(0)[0]  # the marker rule


@cache
def _aws_secret_re() -> re.Pattern[str]:
    import re  # on first use: the per-tool-call hook seldom needs a pattern

    return re.compile(r"[A-Za-z0-9/+]{40}")


# Every trigger of the table once, and each rule's trigger groups as sets: a text is searched for each trigger
# once, then each rule is one set test per group (a Python loop over every rule's triggers took ~0.3 ms a text,
# and a tool call's input and output are dozens of texts).
_TRIGGERS = tuple({t: None for rule in RULES for group in rule[2] for t in group})
_TRIGGER_SETS = tuple(tuple(frozenset(group) for group in rule[2]) for rule in RULES)


def _triggered(lowered: str, *, specific_only: bool = False) -> list[int]:
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


def _specific_kind(value: str, *, at_start: bool) -> str:
    """The kind of the first specific rule that matches ``value`` at its start (or, if not ``at_start``, anywhere)."""
    if len(value) < SHORTEST_SPECIFIC:
        return ""
    for i in _triggered(value.lower(), specific_only=True):
        regex = _compiled(i)[0]
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
    _, secret_groups, keyword_group = _compiled(index)
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
        if not stripped or _marker_re().fullmatch(stripped) or not any(ch.isalnum() for ch in stripped):
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
        marker = _marker_re().match(text, opening)
        if marker is not None and marker.end() > end:
            return marker.end()
    return end


def _scan(text: str, found: list[str], customs: Sequence[Any] = (), *, first_only: bool = False,
          values: list[str] | None = None) -> str:
    """One pass of the triggered rules and the caller's patterns over ``text``.

    Appends each kind redacted to ``found``.  This does what ``re.sub`` with the
    alternation of all the rules would do (the leftmost match wins; at the same
    position, the earlier rule, and the caller's patterns come last), but each
    rule is compiled on its own, once, and searched with its own fast prefix.
    The heap holds the next match of each rule, by position then priority.
    """
    regexes: dict[int, Any] = {i: _compiled(i)[0] for i in _triggered(text.lower())}
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


def _customs(extra_patterns: Sequence[str]) -> tuple[Any, ...]:
    """The user's patterns compiled (:mod:`gitmem.redact.custom`, loaded only when there are some)."""
    if not extra_patterns:
        return ()
    from gitmem.redact.custom import custom_patterns

    return custom_patterns(tuple(extra_patterns))


def redact(text: str, *, extra_patterns: Sequence[str] = ()) -> Redaction:
    """Replace every secret in ``text`` by ``[REDACTED:<kind>]``.

    Args:
        text: Any string; this never raises on it.
        extra_patterns: Regular expressions (RE2 syntax, run in linear time) of
            further secrets; their whole matches are redacted as kind
            ``custom``.  They take part in the same pass as the built-in
            rules, which win a tie at the same position; a match that would
            cut an existing marker is widened to its end.  A pattern RE2
            cannot run, or one that matches the empty string, raises
            :class:`PatternError`.

    Returns:
        The redacted text and the kinds found.  Redacting the result again
        changes nothing and finds no kinds.
    """
    if isinstance(extra_patterns, str):  # one pattern, not a sequence of one-character patterns
        extra_patterns = (extra_patterns,)
    customs = _customs(extra_patterns)
    found: list[str] = []
    for _ in range(_MAX_PASSES):
        before = len(found)
        redacted = _scan(text, found, customs)
        if len(found) == before:
            break
        text = redacted
    return Redaction(text, tuple(dict.fromkeys(found)))


def find_secrets(text: str, *, extra_patterns: Sequence[str] = ()) -> list[tuple[str, str]]:
    """Every secret :func:`redact` would remove from ``text``, as (kind, the secret as it appears)."""
    if isinstance(extra_patterns, str):
        extra_patterns = (extra_patterns,)
    customs = _customs(extra_patterns)
    kinds: list[str] = []
    values: list[str] = []
    for _ in range(_MAX_PASSES):
        before = len(kinds)
        redacted = _scan(text, kinds, customs, values=values)
        if len(kinds) == before:
            break
        text = redacted
    return [(kind, value) for kind, value in zip(kinds, values, strict=True) if "[REDACTED:" not in value]


def contains_secret(text: str) -> bool:
    """Whether :func:`redact` (without extra patterns) would redact anything in ``text``."""
    found: list[str] = []
    _scan(text, found, first_only=True)
    return bool(found)


# What a key must contain for its value to be judged with it (the keyword rules' triggers, and "auth").
_KEY_HINTS = ("pass", "pw", "secret", "token", "credential", "key", "auth", "密码", "口令", "密钥", "令牌")


def redact_value(value: Any, *, extra_patterns: Sequence[str] = ()) -> tuple[Any, tuple[str, ...]]:
    """A JSON-like value (dicts, lists, strings, numbers) with every string redacted, and the kinds found.

    Strings are redacted as they are, not JSON-escaped (so quotes and newlines inside a command do not hide a
    secret), and a string under a key is judged with its key too: ``{"api_key": "..."}`` is redacted as
    ``api_key: "..."`` would be.  Keys are redacted like any string.
    """
    found: list[str] = []

    def text(string: str) -> str:
        result = redact(string, extra_patterns=extra_patterns)
        found.extend(result.kinds)
        return result.text

    def under(key: str, string: str) -> str:
        lowered = key.lower()
        if not any(hint in lowered for hint in _KEY_HINTS):  # "command", "stdout": no second look needed
            return string
        quote = next((q for q in "\"'`" if q not in string), "")
        if not quote or "\n" in string:
            return string
        prefix = f"{key}: {quote}"
        result = redact(f"{prefix}{string}{quote}", extra_patterns=extra_patterns)
        if not result.kinds:
            return string
        found.extend(result.kinds)
        if result.text.startswith(prefix) and result.text.endswith(quote):
            return result.text[len(prefix) : -1]
        return f"[REDACTED:{result.kinds[0]}]"

    def walk(item: Any, depth: int) -> Any:
        if isinstance(item, str):
            return text(item)
        if depth > 64:  # deeper than any tool input: kept as one redacted string
            return text(repr(item))
        if isinstance(item, dict):
            out: dict[Any, Any] = {}
            for key, inner in item.items():
                clean_key = text(key) if isinstance(key, str) else key
                cleaned = walk(inner, depth + 1)
                if isinstance(cleaned, str) and isinstance(clean_key, str):
                    cleaned = under(clean_key, cleaned)
                out[clean_key] = cleaned
            return out
        if isinstance(item, (list, tuple)):
            return [walk(inner, depth + 1) for inner in item]
        return item

    cleaned = walk(value, 0)
    return cleaned, tuple(dict.fromkeys(found))
