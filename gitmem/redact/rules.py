"""The catalogue of secrets that :mod:`gitmem.redact` removes: what each kind of secret looks like.

:data:`RULES` is the one table of patterns, in priority order: one row per shape of secret (an AWS access key, a
GitHub token, a private-key block, a ``password=`` assignment, ...), each with the cheap *triggers* a text must
contain before the rule is worth searching for.  :data:`KINDS` lists every kind :func:`gitmem.redact.engine.redact` can
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

That is 7-9 times the whole hook budget, so the patterns below are our own.  The formats come from the vendors'
documentation and from the public rule sets of detect-secrets and gitleaks (facts about formats: prefixes,
alphabets, lengths, embedded signatures such as ``T3BlbkFJ`` or ``AZDO``); the code is ours.  They add what those
lack: whole private-key *blocks* (not just the BEGIN line), URL passwords that keep user and host, passwords named
in prose (English and Chinese), and keyword values judged by how they look, not by the key alone.

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
* A rule whose triggers are common in ordinary text (``-``, ``==``, ``pat``, ``sk``) names the *run* every match of
  it holds: at least so many characters in a row of one class (:data:`ALNUM`, :data:`BASE64`, :data:`URLSAFE`),
  such as the 32 hex digits of a Mailgun key.  A text without such a run skips the rule without compiling it, so
  a tool call's ``file_path`` or ``a == b`` costs the hook no ``re``.  A test derives the run from the pattern and
  fails if a declared one is longer.
"""

from __future__ import annotations

__all__ = ["ALNUM", "ASSIGNMENT_RULE", "BARE_GROUPS", "BASE64", "CHECKED_GROUPS", "CUSTOM", "KEY_ENDINGS", "KINDS",
           "RULES", "SHORTEST_SPECIFIC", "URLSAFE", "Rule"]

# A row of the pattern table: (kind, pattern, triggers, generic, run).
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
# * ``run`` is (characters, n): every match holds n characters of that class in a row (n = 0: no such claim).
# * The marker rule has an empty kind: its matches are copied unchanged.
Rule = tuple[str, str, tuple[tuple[str, ...], ...], bool, tuple[str, int]]

#: ``[A-Za-z0-9]``, ``[A-Za-z0-9+/]`` and ``[A-Za-z0-9_-]``: the classes of the runs a rule can name
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
BASE64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"

# --- building blocks ------------------------------------------------------

_MARKER = r"\[REDACTED:[a-z0-9-]{1,40}\]"
_NM = r"(?!\[REDACTED:)"  # the next character does not start a marker
# (Non-Latin-1 characters are kept out of character classes: each such class
# costs ~0.3 ms to compile.  They appear as literal alternatives instead.)
_CJK_STOP = r"(?!，|；)"

# Generic assignments: a keyword that ends the key, a separator, a value.
# (Each keyword pattern starts with a look-ahead on its possible first characters: a position that cannot start a
# keyword then fails on one set test instead of on every alternative, which makes the scan ~2.5 times faster.)
_KEYWORD_NAMES = (
    r"(?ai:pass(?:word|wd|phrase)|secrets?|token|credentials?"
    r"|(?:api|access|secret|private|auth|client|signing|encryption|master|app|storage|account|subscription"
    r"|service|webhook|license|admin)[ _-]?key"
    r"|(?<![A-Za-z])(?:pass|pwd|pw))"
    r"|密码|口令|密钥|令牌"
)
_KEYWORD = r"(?=[AaCcEeLlMmPpSsTtWw][A-Za-z]|密|口|令)(?<![/\\])(?P<_k>" + _KEYWORD_NAMES + ")"
#: How every keyword of :data:`_KEYWORD` ends, lower-case (keep the two in step): the assignment rule can only
#: match where one of these stands right before the separator, a check far cheaper than compiling the rule.
KEY_ENDINGS = ("pass", "word", "wd", "pw", "phrase", "secret", "secrets", "token", "credential", "credentials", "key",
               "密码", "口令", "密钥", "令牌")
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
# An unquoted value that is itself a key, a name ending in a keyword then a separator ("password: token: ...",
# "数据库密码：password: ..."), is not the value: the keyword that comes last names it.  Without this look-ahead the
# outer key took "token:" for its value, turned it down as a plain word, and the scan went on after it, past the
# real value.  Failing here lets the search find the inner assignment instead, however many keys are chained.
# A colon counts only before a space ("key: value"): "pw:ab1" stays one value, as before.
_KEY_AS_VALUE = (
    r"(?![A-Za-z0-9_.-]{0,40}?(?:" + _KEYWORD_NAMES + r")[\"'`]?\]?[ \t]{0,16}(?::=|=>|=(?!=)|(?::|：)(?=[ \t])))"
)
_QUOTED = (
    r"\"(?P<_sdq>(?:[^\"\\\n]|\\.)*)\"?"
    r"|'(?P<_ssq>[^'\n]*)'?"
    r"|`(?P<_sbq>[^`\n]*)`?"
)
# A YAML block scalar (``key: |`` and indented lines); the first indent is kept.
_BLOCK = r"[|>][-+0-9]{0,2}[ \t]*\r?\n(?P<_i>[ \t]+)(?P<_sblk>[^\n]*(?:\n[ \t]+[^\n]*)*)"
# After "=": one word, without trailing punctuation
# (``;`` and ``&`` end it: they separate the fields of connection strings and query strings.)
_EQ_BARE = r"(?P<_seq>(?:" + _NM + r"[^\s\"'`;&])*" + _NM + r"[^\s\"'`,;&.)\]}])"
# After ":": one word, without trailing punctuation; :mod:`gitmem.redact` keeps it unless it looks like a secret
# (prose such as "Password: must be at least 12 characters" or "pwd: /srv/app" is left alone).
_COLON_BARE = (
    r"(?P<_scol>" + _CJK_STOP + r"[^\s\"'`,;]"
    r"(?:(?:" + _NM + _CJK_STOP + r"[^\s,;])*" + _NM + r"(?!，|；|。)[^\s,;.)\]}])?)"
)
_ASSIGNMENT = (
    _KEYWORD + _SEP + r"(?:" + _QUOTED + r"|(?(_c)" + _BLOCK + r"|(?!))"
    r"|" + _NM + _NOT_LITERAL + _KEY_AS_VALUE + r"(?(_c)" + _COLON_BARE + r"|" + _EQ_BARE + r"))"
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
# A value worth checking (by :mod:`gitmem.redact`): it holds a digit or a symbol, or is 16+ characters long.
# Most prose ("the password is required") fails this look-ahead inside the regex, at no cost in Python.
_SECRETISH = r"(?=[^\s\"'`]{16}|[^\s\"'`]*[0-9!#$%&*+=?@^|~\\])"
# A secret named in prose: "the admin password is hunter2X9!", "the root password for staging is ...",
# "db password was reset to ...", "数据库密码是 ...".  Up to six words may stand between the keyword and the verb;
# :mod:`gitmem.redact` keeps the value unless it looks like a secret ("the password is required" stays).
_PROSE = (
    # The keyword's first letter is consumed first, so that ``re`` scans for it with a character set; the
    # look-behinds then check the letter before it and which keyword it starts.
    r"(?P<_k>[AaCcPpSsTt](?<![A-Za-z0-9_].)(?ai:(?<=p)(?:ass(?:word|phrase|wd)|wd?)|(?<=s)ecret|(?<=t)oken"
    r"|(?<=a)(?:pi|ccess)[ _-]?key|(?<=c)redentials?))s?"
    r"(?:[ \t]+(?!(?ai:is|was|are|set|changed|reset|now)[ \t])[A-Za-z0-9][A-Za-z0-9_.'-]{0,30}){0,6}"
    r"[ \t]+(?ai:is|was|are|(?:was[ \t]+|is[ \t]+|has[ \t]+been[ \t]+)?(?:set|changed|reset)[ \t]+to)"
    r"(?:[ \t]+(?ai:now|still|just))?[ \t]*:?[ \t]+[\"'`]?" + _NM + _SECRETISH + r"(?P<_sprose>[^\s\"'`]+)"
)
_PROSE_CJK = r"(?:密码|口令|密钥|令牌)(?:是|为)[ \t]*[\"'`]?" + _NM + r"(?P<_sprose2>[^\s\"'`，。；]+)"
# "use password Tr0ub4dor&3 to log in": a password word right before a value that looks like a secret.
_PROSE_BARE = (
    r"[Pp](?<![A-Za-z0-9_].)(?ai:ass(?:word|phrase|wd)|wd)[ \t]+[\"'`]?" + _NM + _SECRETISH
    + r"(?P<_sprose3>[^\s\"'`]{6,})"
)
# ``.netrc``: "machine HOST login USER password VALUE".
_NETRC = r"(?<![A-Za-z0-9_])login[ \t]+[^\s]+[ \t]+password[ \t]+" + _NM + r"(?P<_s>[^\s]+)"
# Command lines that carry a password in a short flag: ``mysql -pVALUE``, ``sshpass -p VALUE``,
# ``curl -u user:VALUE``.
_SHORT_FLAG = (
    r"(?<![A-Za-z0-9_-])mysql(?:dump|admin|sh)?[ \t](?:[^\n]{0,200}?[ \t])?-p(?P<_s>[^\s\"'`-][^\s\"'`]{2,})"
    r"|(?<![A-Za-z0-9_-])sshpass[ \t]+-p[ \t]*[\"']?" + _NM + r"(?P<_s2>[^\s\"']+)"
    r"|(?<![A-Za-z0-9_-])(?:-u|--user)[ \t=]+[\"']?[^\s:\"'/]+:" + _NM + r"(?P<_s3>[^\s\"'@]+)"
)
# A PEM private key block, through the matching END line or to the end of the text.
_PEM_DASH = r"----(?:-)?[ ]?"
_PRIVATE_KEY = (
    _PEM_DASH + r"BEGIN[ ](?P<_t>(?:[A-Z0-9]+[ ])*)PRIVATE[ ]KEY(?P<_b>(?:[ ]BLOCK)?)[ ]?----"
    r"(?s:.*?)(?:" + _PEM_DASH + r"END[ ](?P=_t)PRIVATE[ ]KEY(?P=_b)[ ]?-----?|\Z)"
)
# An AWS secret access key written beside its key id with no key name ("AKIA... secret wJal...", "AKIA... / wJal...",
# a CSV row of the console's download, the id on one line and the secret on the next): 40 characters of base64
# within a short distance of an AKIA or ASIA id, after it or before it, on the same line or the next.  Alone, such a
# run is too common to redact (hashes, base64 fixtures); beside a key id it is the key's other half.  The id may also
# be the marker an earlier version left in its place, so that ``gitmem doctor`` finds the secrets it let through.
# The run must not be all hex and must hold both cases of letters: 40-hex commit SHAs (and lower-case paths) stay,
# while a random base64 key lacks a case with a probability of ~1e-9.
_AWS_ID = r"(?<![A-Za-z0-9])A(?:KIA|SIA)[A-Z0-9]{16}(?![A-Z0-9])"
_AWS_ID_MARKER = r"\[REDACTED:aws-access-key\]"
# (The case look-aheads stay inside the run: it is checked to be exactly 40 characters of the class right after.)
_AWS_SECRET_RUN = (
    r"(?<![A-Za-z0-9/+=])(?![0-9A-Fa-f]{40})(?=[^A-Z\n]{0,39}[A-Z])(?=[^a-z\n]{0,39}[a-z])"
    r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
)
# Up to 64 characters on the same line, or the rest of the line and up to 64 on the next (the nearest run wins).
_AWS_NEAR = r"(?:[^\n]{0,64}?|[^\n]{0,64}\n[^\n]{0,64}?)"
# After the id, the match starts at the id's end (``re`` has no variable-width look-behind), so it holds the text
# between the two and keeps it; ``_f`` records that.  Otherwise a look-ahead finds the id after the run.  (The run is
# written once, as compiling it twice cost ~0.1 ms.)  No literal can start such a pattern: its triggers (the id's
# prefix) and its run (the 40 characters) keep it uncompiled on other texts.
_AWS_PAIRED_SECRET = (
    r"(?:(?:(?<=(?<![A-Za-z0-9])A(?:KIA|SIA)[A-Z0-9]{16})(?![A-Z0-9])|(?<=" + _AWS_ID_MARKER + r"))(?P<_f>)"
    + _AWS_NEAR + r")?(?P<_s>" + _AWS_SECRET_RUN + r")"
    r"(?(_f)|(?=" + _AWS_NEAR + r"(?:" + _AWS_ID + r"|" + _AWS_ID_MARKER + r")))"
)


def _rule(
    kind: str, pattern: str, triggers: tuple[str, ...], *, also: tuple[str, ...] = (), generic: bool = False,
    run: tuple[str, int] = ("", 0),
) -> Rule:
    """A table row; the text must contain one of ``triggers``, if given one of ``also``, and the ``run``."""
    return (kind, pattern, (triggers, also) if also else (triggers,), generic, run)


def _word(prefix: str, body: str, before: str = "A-Za-z0-9") -> str:
    """``prefix`` (fixed width) then ``body``, where ``prefix`` does not continue a word of ``[before]``: letters
    and digits, not ``_`` or ``-``, which join a token to the name before it (``GITHUB_TOKEN_ghp_…``,
    ``deploy-ghp_…``, ``key_AIza…``; such a token was kept as written).

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
        ("sk-",),  # also in "task-", "disk-"
        run=(URLSAFE, 23),
    ),
    _rule(
        "github-token",
        _word("gh[pousr]_", r"[A-Za-z0-9]{36,}") + "|" + _word("github_pat_", r"[A-Za-z0-9_]{22,}"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _rule(
        "gitlab-token",
        _word("gl", r"(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas|ffct)-[A-Za-z0-9_-]{20,}")
        + "|" + _word("GR1348941", r"[A-Za-z0-9_-]{20,}"),
        ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glcbt-", "glimt-", "glptt-", "glagent-", "gloas-", "glffct-",
         "gr1348941"),
    ),
    _rule(
        "slack-token",
        _word("xox", r"[abposre]-[A-Za-z0-9-]{10,}") + "|" + _word("xapp-", r"[A-Za-z0-9-]{10,}"),
        ("xox", "xapp-"),
    ),
    _rule(
        "stripe-key",
        _word("sk_", r"(?:live|test|prod)_[A-Za-z0-9]{16,}", "A-Za-z0-9")
        + "|" + _word("rk_", r"(?:live|test|prod)_[A-Za-z0-9]{16,}", "A-Za-z0-9")
        + "|" + _word("whsec_", r"[A-Za-z0-9]{24,}", "A-Za-z0-9"),
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_", "sk_prod_", "rk_prod_", "whsec_"),
    ),
    _rule(
        "aws-access-key",
        _word("A", r"(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])", "A-Za-z0-9"),
        ("akia", "asia", "abia", "acca", "a3t"),
        run=(ALNUM, 20),
    ),
    _rule("aws-secret-key", _AWS_PAIRED_SECRET, ("akia", "asia", "[redacted:aws-access-key]"), run=(BASE64, 40)),
    _rule("google-api-key", _word("AIza", r"[0-9A-Za-z_-]{35}"), ("aiza",)),
    _rule("npm-token", _word("npm_", r"[A-Za-z0-9]{36}", "A-Za-z0-9"), ("npm_",), run=(ALNUM, 36)),
    _rule(
        "pypi-token",
        _word("pypi-AgE", r"(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,}"),
        ("pypi-ageichlwas5vcmc", "pypi-agendgvzdc5wexbplm9yzw"),
    ),
    _rule("huggingface-token", _word("hf_", r"[A-Za-z0-9]{30,}", "A-Za-z0-9"), ("hf_",), run=(ALNUM, 30)),
    _rule("huggingface-token", _word("api_org_", r"[A-Za-z]{30,}", "A-Za-z0-9"), ("api_org_",)),
    # Cloud providers.
    _rule(
        "azure-client-secret",
        r"Q~(?<=(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~)[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
        ("q~",),
    ),
    _rule(
        "azure-storage-key",
        r"(?<![A-Za-z0-9])(?ai:account_?key|shared_?access_?key)[\"']?[ \t]*[=:][ \t]*[\"']?"
        r"(?P<_s>[A-Za-z0-9+/]{20,}={0,2})",
        ("accountkey", "account_key", "sharedaccesskey", "shared_access_key"),
    ),
    _rule("azure-sas-token", r"[?&]sig=(?P<_s>[A-Za-z0-9%+/]{30,}(?:=|%3[Dd]){0,2})", ("sig=",)),
    # Azure's identifiable keys carry a signature inside (AZDO for DevOps tokens, AzFu/AzSe/+ACR/AzCa/APIM for
    # Functions, Search, Container Registry, Cache and API Management keys); Cosmos DB and storage keys are
    # 64 random bytes in base64 (88 characters ending in "=="), unlike an npm "sha512-" integrity hash.
    _rule(
        "azure-key",
        r"(?<![A-Za-z0-9+/])(?:[A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4}"
        r"|[A-Za-z0-9+/_-]{30,80}(?:AzFu|AzSe|\+ACR|AzCa|APIM)[A-Za-z0-9+/_-]{2,12}={0,2})(?![A-Za-z0-9+/])",
        ("azdo", "azfu", "azse", "+acr", "azca", "apim"),
    ),
    _rule(
        "azure-storage-key",
        r"(?<![A-Za-z0-9+/=-])(?<!sha512-)(?=[A-Za-z0-9+/]{0,85}[0-9])(?=[A-Za-z0-9+/]{0,85}[A-Z])"
        r"[A-Za-z0-9+/]{86}==(?![A-Za-z0-9+/=])",
        ("==",),
        run=(BASE64, 86),
    ),
    _rule(
        "gcp-service-account-key",
        r"[\"']?private_key_id[\"']?[ \t]*[:=][ \t]*[\"']?(?P<_s>[0-9a-f]{40})(?![0-9a-f])",
        ("private_key_id",),
    ),
    _rule(
        "google-oauth",
        _word("GOCSPX-", r"[A-Za-z0-9_-]{24,}") + "|" + _word("ya29.", r"[A-Za-z0-9_-]{20,}")
        + "|" + _word("1//0", r"[A-Za-z0-9_-]{35,}", "A-Za-z0-9_/-"),
        ("gocspx-", "ya29.", "1//0"),
    ),
    _rule("alibaba-access-key", _word("LTAI", r"[A-Za-z0-9]{20}(?![A-Za-z0-9])"), ("ltai",)),
    _rule("databricks-token", _word("dapi", r"[a-f0-9]{32}(?:-[0-9])?(?![A-Za-z0-9])") + "|"
          + _word("dose", r"[a-f0-9]{32}(?![A-Za-z0-9])"), ("dapi", "dose")),
    _rule("cloudflare-key", _word("v1.0-", r"[a-f0-9]{24}-[a-f0-9]{100,}"), ("v1.0-",)),
    _rule("digitalocean-token", _word("do", r"[opr]_v1_[a-f0-9]{64}"), ("_v1_",)),
    _rule("heroku-key", _word("HRKU-", r"[A-Za-z0-9_-]{20,}"), ("hrku-",)),
    _rule("vault-token", _word("hv", r"[sbr]\.[A-Za-z0-9_-]{24,}"), ("hvs.", "hvb.", "hvr.")),
    _rule("doppler-token", _word("dp.", r"(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"), ("dp.",),
          run=(ALNUM, 40)),
    _rule("pulumi-token", _word("pul-", r"[a-f0-9]{40}(?![A-Za-z0-9])"), ("pul-",)),
    _rule("planetscale-token", _word("pscale_", r"(?:tkn|pw|oauth)_[A-Za-z0-9_.=-]{32,}"), ("pscale_",)),
    _rule("supabase-token", _word("sb", r"(?:p_[a-f0-9]{40}|_secret_[A-Za-z0-9_-]{20,})"), ("sbp_", "sb_secret_")),
    _rule("tailscale-key", _word("tskey-", r"[a-z]+-[A-Za-z0-9-]{20,}"), ("tskey-",)),
    _rule("terraform-token", r"(?<![A-Za-z0-9])[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}", ("atlasv1",)),
    _rule("flyio-token", _word("f", r"(?:o1_[A-Za-z0-9_-]{40,}|m[12][ar]?_[A-Za-z0-9+/]{60,}={0,3})"),
          ("fo1_", "fm1", "fm2_")),
    _rule("docker-hub-token", _word("dckr_", r"(?:pat|oat)_[A-Za-z0-9_-]{20,}"), ("dckr_",)),
    _rule(
        "dynatrace-token",
        _word("dt0c01.", r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}") + "|" + _word("dt0s", r"[0-9]{2}\.[A-Za-z0-9.]{20,}"),
        ("dt0c01.", "dt0s"),
    ),
    _rule("newrelic-key", _word("NR", r"(?:AK|II|JS|RA|RI|RS)-[A-Za-z0-9]{19,}"),
          ("nrak-", "nrii-", "nrjs-", "nrra-", "nrri-", "nrrs-")),
    _rule("grafana-token", _word("gl", r"(?:sa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|c_[A-Za-z0-9+/]{32,}={0,3})"),
          ("glsa_", "glc_")),
    _rule("sentry-token", _word("sntry", r"[us]_[A-Za-z0-9+/_=.-]{40,}"), ("sntryu_", "sntrys_")),
    _rule("atlassian-token", _word("ATATT", r"[A-Za-z0-9_=-]{100,}") + "|" + _word("ATCTT", r"[A-Za-z0-9_=-]{100,}"),
          ("atatt", "atctt")),
    # Messaging, e-mail, payments, commerce.
    _rule("sendgrid-key", _word("SG.", r"[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,50}"), ("sg.",),
          run=(URLSAFE, 30)),
    _rule("mailgun-key", _word("key-", r"[0-9a-z]{32}(?![A-Za-z0-9])") + "|"
          + r"(?<![A-Za-z0-9-])[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}(?![A-Za-z0-9-])", ("key-", "-"),
          run=(ALNUM, 32)),
    _rule("mailchimp-key", r"(?<![A-Za-z0-9])[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9])", ("-us",), run=(ALNUM, 32)),
    _rule(
        "twilio-key",
        r"(?:SK|AC)(?<![A-Za-z0-9_-](?:SK|AC))[0-9a-f]{32}(?![A-Za-z0-9])",
        ("sk", "ac"),
        run=(ALNUM, 34),
    ),
    _rule("telegram-bot-token", r"(?<![0-9])[0-9]{5,16}:A[A-Za-z0-9_-]{34}(?![A-Za-z0-9_-])", (":a",),
          run=(URLSAFE, 35)),
    _rule("shopify-token", _word("shp", r"(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"), ("shpat_", "shpca_", "shppa_", "shpss_")),
    _rule("square-token",
          _word("sq0", r"(?:csp|atp|idp)-[A-Za-z0-9_-]{22,}") + "|" + _word("EAAA", r"[A-Za-z0-9_-]{40,}"),
          ("sq0", "eaaa")),
    _rule("postman-key", _word("PMAK-", r"[A-Za-z0-9]{24}-[A-Za-z0-9]{34}"), ("pmak-",)),
    _rule("notion-token",
          _word("ntn_", r"[A-Za-z0-9]{40,}") + "|" + _word("secret_", r"[A-Za-z0-9]{43}(?![A-Za-z0-9])"),
          ("ntn_", "secret_"), run=(ALNUM, 40)),
    _rule("linear-key", _word("lin_", r"(?:api|oauth)_[A-Za-z0-9]{40}"), ("lin_api_", "lin_oauth_")),
    # Developer platforms and AI services.
    _rule("rubygems-key", _word("rubygems_", r"[a-f0-9]{48}"), ("rubygems_",)),
    _rule("figma-token", _word("fig", r"[dou]_[A-Za-z0-9_-]{40,}"), ("figd_", "figo_", "figu_")),
    _rule("age-secret-key", _word("AGE-SECRET-KEY-1", r"[0-9A-Z]{58}"), ("age-secret-key-1",)),
    _rule("onepassword-token", _word("ops_eyJ", r"[A-Za-z0-9+/]{100,}={0,3}"), ("ops_eyj",)),
    _rule("groq-key", _word("gsk_", r"[A-Za-z0-9]{48,}"), ("gsk_",)),
    _rule("xai-key", _word("xai-", r"[A-Za-z0-9]{70,}"), ("xai-",)),
    _rule("perplexity-key", _word("pplx-", r"[A-Za-z0-9]{40,}"), ("pplx-",)),
    _rule("replicate-token", _word("r8_", r"[A-Za-z0-9]{37}(?![A-Za-z0-9])"), ("r8_",)),
    _rule("langsmith-key", _word("lsv2_", r"(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"), ("lsv2_",)),
    _rule("pinecone-key", _word("pcsk_", r"[A-Za-z0-9_]{40,}"), ("pcsk_",)),
    _rule("openshift-token", _word("sha256~", r"[A-Za-z0-9_-]{43}"), ("sha256~",)),
    _rule("facebook-token", _word("EAA", r"[BCDGIMOSUZ][A-Za-z0-9]{90,}"), ("eaa",), run=(ALNUM, 94)),
    _rule("easypost-key", _word("EZ", r"[AT]K[A-Za-z0-9]{54}"), ("ezak", "eztk")),
    _rule("airtable-token", _word("pat", r"[A-Za-z0-9]{14}\.[a-f0-9]{64}"), ("pat",), run=(ALNUM, 64)),
    _rule("buildkite-token", _word("bk", r"ua_[a-f0-9]{40}"), ("bkua_",)),
    _rule("netlify-token", _word("nfp_", r"[A-Za-z0-9]{36,}"), ("nfp_",)),
    _rule("sourcegraph-token", _word("sgp_", r"(?:[a-f0-9]{16}_)?[a-f0-9]{40}"), ("sgp_",)),
    _rule("prefect-token", _word("pnu_", r"[A-Za-z0-9]{36}"), ("pnu_",)),
    _rule("readme-token", _word("rdme_", r"[a-z0-9]{70}"), ("rdme_",)),
    _rule(
        "aws-secret-key",
        r"(?<![A-Za-z0-9_])(?ai:(?:aws_?)?secret_?access_?key)[\"']?[ \t]{0,16}[:=]?[ \t]{0,16}[\"']?"
        r"(?P<_s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        ("secret_access_key", "secretaccesskey", "secret_accesskey", "secretaccess_key"),
    ),
    _rule(
        "basic-auth",
        r"auth(?<=[\"']auth)[\"'][ \t]*:[ \t]*[\"'](?P<_s>[A-Za-z0-9+/]{12,}={0,2})[\"']",
        ("\"auth\"", "'auth'"),
    ),
    _rule("basic-auth", _word("_auth", r"[ \t]*=[ \t]*[\"']?(?P<_s>[A-Za-z0-9+/]{12,}={0,2})", "A-Za-z0-9"),
          ("_auth",)),
    _rule(
        "private-key",
        r"(?<![A-Za-z0-9_-])client-key-data:[ \t]*(?P<_s>[A-Za-z0-9+/]{20,}={0,2})",
        ("client-key-data",),
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
        r"(?<![A-Za-z0-9_])(?ai:bearer)[ \t]+(?=[A-Za-z._~+/-]{0,300}[0-9])(?P<_s>[A-Za-z0-9._~+/-]{16,}=*)"
        r"|(?<![A-Za-z0-9_-])(?ai:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?ai:token|api-?key|sso-key)[ \t]+"
        r"(?=[A-Za-z._~+/:-]{0,300}[0-9])(?P<_s2>[A-Za-z0-9._~+/:-]{16,}=*)",
        ("bearer", "authorization"),
        generic=True,
    ),
    _rule("password", _NETRC, ("login",), also=("password",), generic=True),
    # "-u" with what must follow it: a path such as my-utils/ would trigger the rule otherwise
    _rule("password", _SHORT_FLAG, ("mysql", "sshpass", "-u ", "-u\t", "-u=", "--user"), generic=True),
    _rule("password", _XML, ("password>", "passwd>", "secret>", "token>", "key>"), generic=True),
    _rule("password", _CLI_FLAG, ("--",), also=("pass", "secret", "token", "key"), generic=True),
    _rule(
        "password",
        _ASSIGNMENT,
        ("pass", "pw", "secret", "token", "credential", "key", "密码", "口令", "密钥", "令牌"),
        also=("=", ":", "："),
        generic=True,
    ),
    _rule(
        "password",
        _PROSE,
        ("password", "passphrase", "passwd", "pw", "secret", "token", "key", "credential"),
        also=(" is", " was", " are", " to"),
        generic=True,
    ),
    _rule("password", _PROSE_CJK, ("密码", "口令", "密钥", "令牌"), also=("是", "为"), generic=True),
    _rule("password", _PROSE_BARE, ("password", "passphrase", "passwd", "pwd"), generic=True),
)

#: The index in :data:`RULES` of the generic assignment rule (``password = ...``, ``api_key: ...``).
ASSIGNMENT_RULE = next(i for i, rule in enumerate(RULES) if rule[1] == _ASSIGNMENT)

#: The kind of the matches of a caller's ``extra_patterns`` (see :func:`gitmem.redact.engine.redact`).
CUSTOM = "custom"

#: Every kind :func:`gitmem.redact.engine.redact` can report.
KINDS: tuple[str, ...] = (*dict.fromkeys(rule[0] for rule in RULES if rule[0]), CUSTOM)

#: Secret groups of unquoted assignment values (of :data:`_EQ_BARE` and :data:`_COLON_BARE`).
BARE_GROUPS = ("_seq", "_scol")
#: Secret groups whose value is kept unless it looks like a secret (a word after ``:``, a value named in prose).
CHECKED_GROUPS = ("_scol", "_sprose", "_sprose2", "_sprose3")
#: The shortest match of any specific (non-generic) rule (``slack-token``):
#: :mod:`gitmem.redact` does not try to refine shorter values.
SHORTEST_SPECIFIC = 15
