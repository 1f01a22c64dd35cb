"""The catalogue of secrets that :mod:`gitmem.redact` removes: what each kind of secret looks like.

:data:`RULES` is the one table of patterns, in priority order: one row per shape of secret (an AWS access key, a
GitHub token, a private-key block, a ``password=`` assignment, ...), each with the cheap *triggers* a text must
contain before the rule is worth searching for.  :data:`KINDS` lists every kind :func:`gitmem.redact.redact` can
report.  This module only *describes* secrets: it is plain strings and tuples, compiles nothing and imports nothing
from gitmem.  Compiling, triggering, the scan, and deciding whether a matched value is a placeholder or a more
specific kind are :mod:`gitmem.redact`'s concern, so adding or tuning a kind of secret is an edit here alone.

Why a self-contained pattern table, not ``detect-secrets``
---------------------------------------------------------
Redaction runs in a hook process on every tool call of the agent, whose whole budget is ~25 ms.
``detect-secrets`` 1.5.0 would be the natural maintained detector, but none of its regexes can be reached cheaply:
importing any plugin module (``detect_secrets.plugins.github_token``, ``.aws``, ...) first runs the package
``__init__`` (which loads the whole scanner), and even with that bypassed, ``plugins/base.py`` imports
``requests`` for verification.  Measured with ``python -X importtime`` (best of 10 on the development machine)::

    import detect_secrets                          204 ms
    import detect_secrets.plugins.github_token     233 ms
    import detect_secrets.plugins.aws              234 ms
    plugin module with package __init__ stubbed    165 ms  (requests alone: 179 ms)

That is 7-9 times the whole hook budget, so the patterns below are our own.  Their shapes follow detect-secrets'
plugins (AWS, GitHub, GitLab, Slack, Stripe, JWT, private keys, basic auth, keywords) and add what it lacks:
Anthropic and project-scoped OpenAI keys, whole private-key *blocks* (not just the BEGIN line), URL passwords that
keep user and host, and more.

Writing a rule
--------------
* Order matters: the leftmost match wins, and at the same position the earlier rule.  The marker rule (existing
  ``[REDACTED:...]`` markers) stays first: :mod:`gitmem.redact` copies its matches unchanged, finds it at index 0,
  and relies on no other rule ending inside a marker.
* Start a pattern with a literal (``ghp_``, ``eyJ``, ...) and put its word boundary after it (:func:`_word`), so
  that ``re`` can use its fast prefix search.
* Every pattern must stay linear: repetitions are bounded, or cannot fail once started, or start at an anchor that
  occurs once per run of characters.
* A specific rule whose shortest match is shorter than :data:`SHORTEST_SPECIFIC` must lower it.
"""

from __future__ import annotations

__all__ = ["BARE_GROUPS", "CUSTOM", "KINDS", "RULES", "SHORTEST_SPECIFIC", "Rule"]

# A row of the pattern table: (kind, pattern, triggers, generic).
#
# * ``pattern`` names its groups with a leading underscore.  Groups whose name
#   starts with ``_s`` hold the secret: the first of them that took part in
#   the match is replaced (with none, the whole match is).  ``_k`` holds the
#   keyword of an assignment.
# * ``triggers`` are groups of lower-case substrings; a rule can only match a
#   text whose lower-cased form contains a substring of every group.
# * ``generic`` rules (assignments, URL passwords, bearer tokens) have their
#   value checked for placeholders and refined to a more specific kind (by
#   :mod:`gitmem.redact`).
# * The marker rule has an empty kind: its matches are copied unchanged.
Rule = tuple[str, str, tuple[tuple[str, ...], ...], bool]

# --- building blocks ------------------------------------------------------

_MARKER = r"\[REDACTED:[a-z0-9-]{1,40}\]"
_NM = r"(?!\[REDACTED:)"  # the next character does not start a marker
# (Non-Latin-1 characters are kept out of character classes: each such class
# costs ~0.3 ms to compile.  They appear as literal alternatives instead.)
_CJK_STOP = r"(?!，|；)"

# Generic assignments: a keyword that ends the key, a separator, a value.
_KEYWORD = (
    r"(?<![/\\])(?P<_k>(?ai:pass(?:word|wd|phrase)|secrets?|token|credentials?"
    r"|(?:api|access|secret|private|auth|client|signing|encryption|master|app)[_-]?key"
    r"|(?<![A-Za-z])(?:pass|pwd))"
    r"|密码|口令|密钥|令牌)"
)
# Closing quote/bracket of the key, the separator (``_c`` is set for the
# colon-like ones, whose unquoted value runs to the end of the line), then
# spaces and the "**" of "**Password:**", taken atomically so that a skipped
# value is not retried as "** value".
_SEP = (
    r"[\"'`]?\]?[ \t]{0,16}(?::=|=>|=(?!=)|(?P<_c>:(?![:/])|：))"
    r"(?>(?:\*\*(?=[ \t]))?[ \t]{0,16})"
)
# Unquoted values that are references, not literals: calls and subscripts
# (``get_password()``, ``os.environ["X"]``) and type hints (``password: str)``).
# This is a look-ahead, so a skipped value is not consumed and the rest of the
# line is still scanned.  Placeholders that make up the whole value are
# recognised later, by :mod:`gitmem.redact`.
_NOT_LITERAL = (
    r"(?![A-Za-z_][A-Za-z0-9_.]*[(\[]"
    r"|(?ai:str|string|bytes|secretstr|int|bool|none|null|nil|undefined|true|false)[ \t]*(?:[,;)\]}\r\n]|\Z))"
)
_QUOTED = (
    r"\"(?P<_sdq>(?:[^\"\\\n]|\\.)*)\"?"
    r"|'(?P<_ssq>[^'\n]*)'?"
    r"|`(?P<_sbq>[^`\n]*)`?"
)
# A YAML block scalar (``key: |`` and indented lines); the first indent is kept.
_BLOCK = r"[|>][-+0-9]{0,2}[ \t]*\r?\n(?P<_i>[ \t]+)(?P<_sblk>[^\n]*(?:\n[ \t]+[^\n]*)*)"
# After "=": one word, without trailing punctuation.
_EQ_BARE = r"(?P<_seq>(?:" + _NM + r"[^\s\"'`])*" + _NM + r"[^\s\"'`,;.)\]}])"
# After ":": up to the end of the line or a comma/semicolon, trimmed.
_COLON_BARE = (
    r"(?P<_scol>" + _CJK_STOP + r"[^\s\"'`,;]"
    r"(?:(?:" + _NM + _CJK_STOP + r"[^\n\r,;])*" + _NM + r"(?!，|；|。)[^\s,;.)\]}])?)"
)
_ASSIGNMENT = (
    _KEYWORD + _SEP + r"(?:" + _QUOTED + r"|(?(_c)" + _BLOCK + r"|(?!))"
    r"|" + _NM + _NOT_LITERAL + r"(?(_c)" + _COLON_BARE + r"|" + _EQ_BARE + r"))"
)
# ``<password>...</password>``
_XML = (
    r"<(?P<_x>[A-Za-z0-9_.:-]{0,40}?(?ai:password|passwd|secret|token|api[_-]?key))>"
    r"(?P<_s>(?:" + _NM + r"[^<]){1,1000})</(?P=_x)>"
)
# ``--token VALUE``: only when VALUE holds a digit or symbol, so that prose
# such as "use the --token flag" is left alone.  (``--token=VALUE`` is an
# ordinary assignment.)
_CLI_FLAG = (
    r"--(?<![A-Za-z0-9_-]--)(?ai:[a-z0-9-]{0,30}?(?:password|passwd|passphrase|secret|token"
    r"|api-?key|access-key|private-key|client-secret))[ \t]+(?![-$<])" + _NM
    + r"(?=[^\s\"'`]*[0-9!#%&*+=?@^~])(?P<_s>[^\s\"'`]+)"
)
# A PEM private key block, through the matching END line or to the end of the text.
_PEM_DASH = r"----(?:-)?[ ]?"
_PRIVATE_KEY = (
    _PEM_DASH + r"BEGIN[ ](?P<_t>(?:[A-Z0-9]+[ ])*)PRIVATE[ ]KEY(?P<_b>(?:[ ]BLOCK)?)[ ]?----"
    r"(?s:.*?)(?:" + _PEM_DASH + r"END[ ](?P=_t)PRIVATE[ ]KEY(?P=_b)[ ]?-----?|\Z)"
)


def _rule(
    kind: str, pattern: str, triggers: tuple[str, ...], *, also: tuple[str, ...] = (), generic: bool = False
) -> Rule:
    """A table row; the text must contain one of ``triggers`` and, if given, one of ``also``."""
    return (kind, pattern, (triggers, also) if also else (triggers,), generic)


def _word(prefix: str, body: str, before: str = "A-Za-z0-9_-") -> str:
    """``prefix`` (fixed width) then ``body``, where ``prefix`` does not continue a word of ``[before]``.

    The boundary is a look-behind *after* the prefix, so that the pattern starts
    with a literal and ``re`` can use its fast prefix search.
    """
    return f"{prefix}(?<![{before}]{prefix}){body}"


# The table, in priority order: the leftmost match wins, and at the same
# position the earlier rule wins.
RULES: tuple[Rule, ...] = (
    _rule("", _MARKER, ("[redacted:",)),
    _rule("private-key", _PRIVATE_KEY, ("----begin", "---- begin")),
    _rule(
        "private-key",
        r"PuTTY-User-Key-File-[0-9]+:(?s:.*?)(?:Private-MAC:[ ]?[0-9A-Fa-f]+|\Z)",
        ("putty-user-key-file-",),
    ),
    _rule(
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<_s>[A-Za-z0-9_/+-]{8,})",
        ("hooks.slack.com",),
    ),
    _rule(
        "discord-webhook",
        r"https://(?:[a-z]+\.)?discord(?:app)?\.com/api/webhooks/(?P<_s>[0-9]{5,}/[A-Za-z0-9_-]{20,})",
        ("discord",),
    ),
    _rule(
        "url-password",
        r"://[^\s:/?#@\"'<>\[\]]*:(?P<_s>[^\s/?#\"'<>\[\]]+)@",
        ("://",),
        generic=True,
    ),
    _rule("jwt", _word("eyJ", r"[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_-]*){1,3}"), ("eyj",)),
    _rule("anthropic-key", _word("sk-ant-", r"[A-Za-z0-9_-]{20,}"), ("sk-ant-",)),
    _rule(
        "openai-key",
        _word("sk-", r"(?:(?:proj|svcacct|admin)-)?(?=[A-Za-z0-9_-]{0,300}?[A-Z0-9])[A-Za-z0-9_-]{20,}"),
        ("sk-",),
    ),
    _rule(
        "github-token",
        _word("gh[pousr]_", r"[A-Za-z0-9]{36,}") + "|" + _word("github_pat_", r"[A-Za-z0-9_]{22,}"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _rule(
        "gitlab-token",
        _word("gl", r"(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-[A-Za-z0-9_-]{20,}")
        + "|" + _word("GR1348941", r"[A-Za-z0-9_-]{20,}"),
        ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glcbt-", "glimt-", "glptt-", "glagent-", "gloas-",
         "gr1348941"),
    ),
    _rule(
        "slack-token",
        _word("xox", r"[abposre]-[A-Za-z0-9-]{10,}") + "|" + _word("xapp-", r"[A-Za-z0-9-]{10,}"),
        ("xox", "xapp-"),
    ),
    _rule(
        "stripe-key",
        _word("sk_", r"(?:live|test)_[A-Za-z0-9]{16,}", "A-Za-z0-9_")
        + "|" + _word("rk_", r"(?:live|test)_[A-Za-z0-9]{16,}", "A-Za-z0-9_")
        + "|" + _word("whsec_", r"[A-Za-z0-9]{24,}", "A-Za-z0-9_"),
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_", "whsec_"),
    ),
    _rule(
        "aws-access-key",
        _word("A", r"(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])", "A-Za-z0-9"),
        ("akia", "asia", "abia", "acca", "a3t"),
    ),
    _rule("google-api-key", _word("AIza", r"[0-9A-Za-z_-]{35}"), ("aiza",)),
    _rule("npm-token", _word("npm_", r"[A-Za-z0-9]{36}", "A-Za-z0-9_"), ("npm_",)),
    _rule("pypi-token", _word("pypi-AgEIcHlwaS5vcmc", r"[A-Za-z0-9_-]{50,}"), ("pypi-ageichlwas5vcmc",)),
    _rule("huggingface-token", _word("hf_", r"[A-Za-z0-9]{30,}", "A-Za-z0-9_"), ("hf_",)),
    _rule(
        "aws-secret-key",
        r"(?<![A-Za-z0-9_])(?ai:(?:aws_?)?secret_?access_?key)[\"']?[ \t]{0,16}[:=]?[ \t]{0,16}[\"']?"
        r"(?P<_s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        ("secret_access_key", "secretaccesskey", "secret_accesskey", "secretaccess_key"),
    ),
    _rule(
        "basic-auth",
        r"(?<![A-Za-z0-9_-])(?ai:(?:proxy-)?authorization)[\"']?[ \t]{0,16}[:=][ \t]{0,16}[\"']?"
        r"(?ai:basic)[ \t]+(?P<_s>[A-Za-z0-9+/]{8,}={0,2})",
        ("authorization",),
        also=("basic",),
    ),
    _rule(
        "bearer-token",
        r"(?<![A-Za-z0-9_])(?ai:bearer)[ \t]+(?=[A-Za-z._~+/-]{0,300}[0-9])(?P<_s>[A-Za-z0-9._~+/-]{16,}=*)",
        ("bearer",),
        generic=True,
    ),
    _rule("password", _XML, ("password>", "passwd>", "secret>", "token>", "key>"), generic=True),
    _rule("password", _CLI_FLAG, ("--",), also=("pass", "secret", "token", "key"), generic=True),
    _rule(
        "password",
        _ASSIGNMENT,
        ("pass", "pwd", "secret", "token", "credential", "key", "密码", "口令", "密钥", "令牌"),
        also=("=", ":", "："),
        generic=True,
    ),
)

#: The kind of the matches of a caller's ``extra_patterns`` (see :func:`gitmem.redact.redact`).
CUSTOM = "custom"

#: Every kind :func:`gitmem.redact.redact` can report.
KINDS: tuple[str, ...] = (*dict.fromkeys(rule[0] for rule in RULES if rule[0]), CUSTOM)

#: Secret groups of unquoted assignment values (of :data:`_EQ_BARE` and :data:`_COLON_BARE`).
BARE_GROUPS = ("_seq", "_scol")
#: The shortest match of any specific (non-generic) rule (``slack-token``):
#: :mod:`gitmem.redact` does not try to refine shorter values.
SHORTEST_SPECIFIC = 15
