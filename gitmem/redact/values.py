"""Whether a value a rule matched is a secret: a placeholder or a reference (``${TOKEN}``, ``self.token``,
``str | None``), a sentence, a version or a quantity is not; a word named as a password in prose is one only when
it looks like one (:func:`looks_like_secret`). The engine (:mod:`gitmem.redact.engine`) asks these questions of
the generic rules' matches; their patterns compile on first use, as the rules' do."""

from __future__ import annotations

from gitmem.redact.memo import cache

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    import re

__all__ = ["is_placeholder", "is_prose", "key_before", "looks_like_secret", "random_part"]

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
def _placeholder_re() -> re.Pattern[str]:
    import re  # on first use: the per-tool-call hook seldom needs a pattern

    return re.compile(_PLACEHOLDER)


@cache
def _reference_re() -> re.Pattern[str]:
    import re  # on first use: the per-tool-call hook seldom needs a pattern

    return re.compile(_REFERENCE)


def is_placeholder(value: str, bare: bool) -> bool:
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
        and not random_part(value)
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


def is_prose(value: str) -> bool:
    """Whether a quoted value is a sentence (three or more words, none of them secret-like), not a secret."""
    words = value.split()
    return len(words) >= 3 and not any(looks_like_secret(w.strip(".,;:()[]{}!?")) for w in words)


def random_part(value: str) -> bool:
    """Whether a dotted value has a part that looks random (``s.Xy12...``: a token, not ``self.token``)."""
    return any(len(part) >= 16 and looks_like_secret(part) for part in value.split("."))


def key_before(text: str, start: int) -> str:
    """The identifier (at most 40 characters of ``[A-Za-z0-9_.-]``) that ends at ``start``."""
    i = start
    while i > 0 and start - i < 40 and text[i - 1] in _KEY_CHARS:
        i -= 1
    return text[i:start]
