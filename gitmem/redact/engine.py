"""Redact secrets from text before it is written to the memory repository.

Every secret found is replaced by ``[REDACTED:<kind>]``; see
:data:`gitmem.redact.rules.KINDS` for the kinds.  Only the secret itself is
replaced: the key of an assignment (``password=``), the user and host of a
URL, the quotes around a value and the ``https://hooks.slack.com/services/``
prefix of a webhook are kept, so the redacted memory still says *what* was
there.

This module is the engine: it compiles, triggers and runs the rules of
:mod:`gitmem.redact.rules` (the catalogue of what each kind of secret looks
like, and why those patterns are our own, not ``detect-secrets``), and decides
whether a matched value is a placeholder or a more specific kind.  It runs in
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
is kept unless it looks like a secret (:func:`looks_like_secret`: letters
mixed with digits or symbols, or a long random-looking run), so that "CI
summary: pass: 120", "pwd: /srv/app" and "Password: must be at least 12
characters" stay intact; after ``passphrase:`` it is the rest of the line.  A
quoted value is kept when it is a sentence.  When the value is itself a known
token, the specific kind is used (``GITHUB_TOKEN=ghp_...`` gives
``github-token``).

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
``basic-auth``.

A candidate that these checks turn down hides nothing: the matches of other
rules inside it are still redacted ("密钥是 postgres://u:PASSWORD@host").

User patterns (``extra_patterns``) run on RE2, in linear time whatever the
pattern (:func:`compile_pattern`); :func:`redact_value` redacts parsed JSON
values (tool calls) string by string, judging a value with its key.

Known limits: a value ends at the end of its line (YAML block scalars
excepted); a lower-case word after ``password:`` is kept; a private-key BEGIN
line without its END line is redacted to the end of the text, on purpose; a
token glued to a longer word (``xAKIA...``) is not taken for a token.
"""

from __future__ import annotations

from gitmem.errors import ConfigError
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
    from collections.abc import Callable, Sequence
    from functools import cache, lru_cache
    from typing import Any

__all__ = [
    "PatternError", "Redaction", "compile_pattern", "contains_secret", "find_secrets", "looks_like_secret", "redact",
    "redact_value",
]


class _CacheInfo:
    """What ``functools``' ``cache_info()`` answers."""

    __slots__ = ("currsize", "hits", "maxsize", "misses")

    def __init__(self, hits: int, misses: int, maxsize: int | None, currsize: int) -> None:
        self.hits, self.misses, self.maxsize, self.currsize = hits, misses, maxsize, currsize


class _Memo:
    """``functools.cache`` / ``lru_cache`` (oldest entry dropped past ``maxsize``) for the functions below.

    ``functools`` loads ``collections``, ``operator``, ``reprlib``, ``keyword`` and ``types`` (~3 ms of a tool
    call's hook process, a tenth of starting Python), and a hook that finds no secret needs none of them."""

    __slots__ = ("function", "hits", "maxsize", "misses", "values")

    def __init__(self, function: Callable[..., Any], maxsize: int | None = None) -> None:
        self.function, self.maxsize = function, maxsize
        self.values: dict[tuple[Any, ...], Any] = {}
        self.hits = self.misses = 0

    def __call__(self, *args: Any) -> Any:
        try:
            value = self.values[args]
        except KeyError:
            self.misses += 1
            value = self.function(*args)
            if self.maxsize is not None and len(self.values) >= self.maxsize:
                del self.values[next(iter(self.values))]
            self.values[args] = value
            return value
        self.hits += 1
        return value

    def cache_info(self) -> _CacheInfo:
        return _CacheInfo(self.hits, self.misses, self.maxsize, len(self.values))


if not TYPE_CHECKING:  # the type checker reads functools' signatures; the process runs _Memo
    def cache(function):
        return _Memo(function)

    def lru_cache(maxsize):
        return lambda function: _Memo(function, maxsize)


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
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")

# Values of generic rules that are placeholders or references, not secrets,
# when they make up the whole (stripped) value.
_PLACEHOLDER = (
    r"(?ai:(?:str|string|bytes|secretstr|int|bool|none|null|nil|undefined|true|false)"
    r"(?:[ \t]*\|[ \t]*(?:str|string|bytes|none|null|nil|undefined))*"
    r"(?:[ \t]*=[ \t]*(?:none|null|nil|undefined|\"\"|''|\.\.\.))?)"  # str | None = None
    r"|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?"  # $VAR ${VAR}
    r"|\$\([^()]{0,80}\)?"  # $(command)
    r"|\$?\{\{[^{}=:]{0,80}(?:\}\})?"  # {{ template }} ${{ secrets.X }}
    r"|%\([A-Za-z_][A-Za-z0-9_]*\)s"  # %(name)s
    r"|<[A-Za-z][A-Za-z0-9 _.-]{0,40}>"  # <your-password>
    r"|[*xX.]{3,}|•{3,}|…"  # masks
)
# What a placeholder can start with: a character, or the first three letters of a word.
_PLACEHOLDER_FIRST = frozenset("${%<*xX.•…")
_PLACEHOLDER_WORDS = frozenset(("str", "byt", "sec", "int", "boo", "non", "nul", "nil", "und", "tru", "fal"))
# Unquoted values that are references: self.token, settings.API_KEY, or an
# object or list that opens at the end of the line.
_REFERENCE = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+|[{\[(]"


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
def _placeholder_re() -> re.Pattern[str]:
    import re  # on first use: the per-tool-call hook seldom needs a pattern

    return re.compile(_PLACEHOLDER)


@cache
def _reference_re() -> re.Pattern[str]:
    import re  # on first use: the per-tool-call hook seldom needs a pattern

    return re.compile(_REFERENCE)


@cache
def _aws_secret_re() -> re.Pattern[str]:
    import re  # on first use: the per-tool-call hook seldom needs a pattern

    return re.compile(r"[A-Za-z0-9/+]{40}")


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
            "patterns run on RE2, which has no look-around or back-references; rewrite or remove it in gitmem.toml",
        ) from None
    if regex.search("") is not None:
        raise PatternError(f"redaction.extra_patterns: {pattern!r} matches the empty string",
                           "make it match at least one character (e.g. + instead of *)")
    return regex


@lru_cache(maxsize=32)
def _custom_patterns(patterns: tuple[str, ...]) -> tuple[Any, ...]:
    """Compile the caller's extra patterns (raises :class:`PatternError` if one cannot be used)."""
    return tuple(compile_pattern(p) for p in patterns)


class _Matches:
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


def _is_placeholder(value: str, bare: bool) -> bool:
    """Whether a (stripped) value is a placeholder, or for an unquoted one, a reference.

    Cheap checks on the first character and on ``.`` come first, so the
    patterns are compiled only for values that might match them.
    """
    if (value[0] in _PLACEHOLDER_FIRST or value[:3].lower() in _PLACEHOLDER_WORDS) and _placeholder_re().fullmatch(
        value
    ):
        return True
    return (
        bare
        and ("." in value or value in "{[(")
        and _reference_re().fullmatch(value) is not None
        and not _random_part(value)
    )


# Words that mix letters and digits but are vocabulary, not secrets ("token: sha256").
_TECH_WORDS = frozenset((
    "sha1", "sha256", "sha384", "sha512", "md5", "base64", "base32", "utf-8", "utf8", "utf-16", "x86_64", "aarch64",
    "arm64", "amd64", "hs256", "hs512", "rs256", "es256", "aes128", "aes256", "oauth2", "oauth1", "http2", "http3",
    "ipv4", "ipv6", "python3", "win32", "win64", "ed25519", "bcrypt2", "argon2", "argon2id", "pbkdf2",
))
# Characters that count as a "symbol" in a password-like word: not brackets, quotes, separators or ``/``.
_SYMBOLS = frozenset("!#$%&*+=?@^|~\\")
# Versions and quantities: v1.2.3, 2.0.1-rc1, 30s, 512MB, 1.5x.
_QUANTITY = (
    r"(?ai:v?[0-9]+(?:\.[0-9]+)+(?:[-+][0-9a-z.]+)?"
    r"|[0-9]+(?:\.[0-9]+)?(?:ms|us|ns|s|m|h|d|w|kb|mb|gb|tb|kib|mib|gib|k|x|px|em|rem|%)"
    r"|[^@\s]+@[^@\s]+\.[a-z]{2,})"  # an e-mail address
)


@cache
def _quantity_re() -> re.Pattern[str]:
    import re  # on first use: the per-tool-call hook seldom needs a pattern

    return re.compile(_QUANTITY)


def _entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    import math

    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def looks_like_secret(word: str) -> bool:
    """Whether one word, named as a password/token/secret in prose or after ``key:``, looks like a secret.

    A secret mixes letters with digits or symbols (``hunter2``, ``Tr0ub4dor&3``) or is a long random-looking run
    of letters (16+ characters, both cases, high entropy).  Kept: words (``required``, ``see``), numbers
    (``pass: 120``), paths (``pwd: /srv/app``), URLs, versions, quantities, e-mail addresses and a few
    technical words (``sha256``).
    """
    if len(word) < 6 or word.lower() in _TECH_WORDS:
        return False
    if word[0] in "/~\\" or word.startswith(("./", "../")) or "://" in word:
        return False
    has_letter = has_digit = has_symbol = has_upper = has_lower = False
    for ch in word:
        if ch.isalpha():
            has_letter = True
            has_upper = has_upper or ch.isupper()
            has_lower = has_lower or ch.islower()
        elif ch.isdigit():
            has_digit = True
        elif ch in _SYMBOLS:
            has_symbol = True
    if not has_letter:
        return False
    if not (has_digit or has_symbol):
        return len(word) >= 16 and has_upper and has_lower and _entropy(word) >= 3.5
    return _quantity_re().fullmatch(word) is None


def _is_prose(value: str) -> bool:
    """Whether a quoted value is a sentence (three or more words, none of them secret-like), not a secret."""
    words = value.split()
    return len(words) >= 3 and not any(looks_like_secret(w.strip(".,;:()[]{}!?")) for w in words)


def _random_part(value: str) -> bool:
    """Whether a dotted value has a part that looks random (``s.Xy12...``: a token, not ``self.token``)."""
    return any(len(part) >= 16 and looks_like_secret(part) for part in value.split("."))


def _key_before(text: str, start: int) -> str:
    """The identifier (at most 40 characters of ``[A-Za-z0-9_.-]``) that ends at ``start``."""
    i = start
    while i > 0 and start - i < 40 and text[i - 1] in _KEY_CHARS:
        i -= 1
    return text[i:start]


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
        if checked and not quoted and not looks_like_secret(stripped) and not _specific_kind(value, at_start=True):
            return None  # the cheapest test first: most prose candidates stop here
        if _is_placeholder(stripped, bare) and not _specific_kind(value, at_start=False):
            return None
        if quoted and not passphrase and _is_prose(stripped):
            return None
        key = ""
        if keyword_group and match.start(keyword_group) >= 0 and (bare or len(value) == 40):
            key = _key_before(text, match.start(keyword_group)) + match.group(keyword_group)
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
    regexes.update((len(RULES) + n, _Matches(pattern, text)) for n, pattern in enumerate(customs))
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
    customs = _custom_patterns(tuple(extra_patterns)) if extra_patterns else ()
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
    customs = _custom_patterns(tuple(extra_patterns)) if extra_patterns else ()
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
