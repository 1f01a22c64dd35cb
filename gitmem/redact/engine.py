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
The rules a text triggers and their compilation are :mod:`gitmem.redact.triggers`,
one pass over a text and the judgement of each match :mod:`gitmem.redact.scan`;
this module repeats the pass and holds the public functions.

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
  rule is compiled on first use, once per process; text that triggers
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

from gitmem.redact.scan import scan

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
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
        redacted = scan(text, found, customs)
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
        redacted = scan(text, kinds, customs, values=values)
        if len(kinds) == before:
            break
        text = redacted
    return [(kind, value) for kind, value in zip(kinds, values, strict=True) if "[REDACTED:" not in value]


def contains_secret(text: str) -> bool:
    """Whether :func:`redact` (without extra patterns) would redact anything in ``text``."""
    found: list[str] = []
    scan(text, found, first_only=True)
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
