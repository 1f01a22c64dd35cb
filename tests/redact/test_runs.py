"""The triggers and runs that let a text skip a rule uncompiled (a run: every match holds so many characters of one
class in a row): each declared run is one the pattern guarantees, a rule is never skipped where it would match,
and a tool call's ordinary words compile nothing.

No fake secret below is written out as a literal (see ``test_redact.py``)."""

from __future__ import annotations

import re
import subprocess
import sys
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.redact import triggers
from gitmem.redact.engine import redact
from gitmem.redact.rules import RULES
from tests.redact.test_redact import CASES

WITH_RUN = [i for i, rule in enumerate(RULES) if rule[4][1]]
RUN_KINDS = {RULES[i][0] for i in WITH_RUN}


def guaranteed_run(pattern: str, chars: str) -> int:
    """A lower bound, over every text ``pattern`` matches, of the longest run of ``chars`` in the match, read
    from the parsed pattern: a repetition of a class inside ``chars`` counts its minimum, zero-width assertions do
    not break a run, an alternative counts its weakest branch, and anything case-folded or outside the class
    (Unicode categories such as ``\\d`` included) counts as a break."""
    allowed = set(chars)

    def inside(op: Any, av: Any, flags: int) -> bool:
        if flags & re.IGNORECASE:
            return False
        if op is sre.LITERAL:
            return chr(av) in allowed
        if op is sre.IN:
            for sop, sav in av:
                if sop is sre.LITERAL:
                    if chr(sav) not in allowed:
                        return False
                elif sop is sre.RANGE:
                    if any(chr(c) not in allowed for c in range(sav[0], sav[1] + 1)):
                        return False
                else:  # NEGATE, CATEGORY
                    return False
            return True
        return False

    def sequence(items: Any, flags: int) -> tuple[int, bool, int]:
        """(the fewest characters matched, whether all are in the class, the run guaranteed inside)."""
        total = run = best = 0
        whole = True
        for op, av in items:
            length, all_in, bound = node(op, av, flags)
            total += length
            if all_in:
                run += length
            else:
                whole, run = False, 0
            best = max(best, bound, run)
        return total, whole, best

    def node(op: Any, av: Any, flags: int) -> tuple[int, bool, int]:
        if op in (sre.LITERAL, sre.IN, sre.ANY, sre.NOT_LITERAL):
            single = inside(op, av, flags)
            return 1, single, int(single)
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            return 0, True, 0
        if op is sre.SUBPATTERN:
            _, add, remove, sub = av
            return sequence(sub, (flags | add) & ~remove)
        if op is sre.ATOMIC_GROUP:
            return sequence(av, flags)
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, _, sub = av
            length, all_in, bound = sequence(sub, flags)
            if all_in:
                return low * length, True, low * length
            return low * length, False, bound if low else 0
        if op in (sre.BRANCH, sre.GROUPREF_EXISTS):
            branches = av[1] if op is sre.BRANCH else [av[1], av[2] or []]
            parts = [sequence(b, flags) for b in branches]
            return min(p[0] for p in parts), all(p[1] for p in parts), min(p[2] for p in parts)
        return 0, False, 0  # back-references and the rest: no claim

    parsed = sre_parse.parse(pattern)
    return sequence(list(parsed), parsed.state.flags)[2]


def test_the_analysis_reads_runs_right() -> None:
    letters_digits = "abcdefghijklmnopqrstuvwxyz0123456789"
    assert guaranteed_run(r"key-[0-9a-z]{32}(?![A-Za-z0-9])", letters_digits) == 32
    assert guaranteed_run(r"key-[0-9a-z]{32}(?![A-Za-z0-9])", letters_digits + "-") == 36
    assert guaranteed_run(r"(?:ab|[a-z]{5})[0-9]", letters_digits) == 3
    assert guaranteed_run(r"(?i:abc)x{2}", "abcx") == 2  # case folding might reach outside the class
    assert guaranteed_run(r"\d{8}", "0123456789") == 0  # \d is every script's digits


@pytest.mark.parametrize("index", WITH_RUN, ids=[f"{RULES[i][0]}-{i}" for i in WITH_RUN])
def test_every_declared_run_is_one_the_pattern_guarantees(index: int) -> None:
    chars, length = RULES[index][4]
    assert guaranteed_run(RULES[index][1], chars) >= length


_CASE_TEXTS = [piece for _, text, secret in CASES for piece in (text, secret)]
_PIECES = st.one_of(
    st.sampled_from(_CASE_TEXTS),
    st.builds(lambda text, cut: text[:cut] if cut > 0 else text[cut:], st.sampled_from(_CASE_TEXTS),
              st.integers(-100, 100)),
    st.sampled_from(["file_path", "old_string", "task-runner", "a == b", "pat", "sk", "AC", "-us1", ":A", "SG.",
                     "EAAB", "dp.pt.", "ntn_", "key-", " ", "-", "\n", "/", "+", "_", "=", "==", ".", "İ", "\u212a",
                     "密钥", "0123456789abcdef", "ABCDEF", "zz", "my-utils/", "-u ", "-u=", "curl -u ", "admin:",
                     "Sup3rPw", "mysql -p", "password: ", "token=", "a:b@", "://"]),
    st.text(alphabet="0123456789abcdefABCDEF+/_-=.:", max_size=40),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_PIECES, max_size=8).map("".join))
def test_a_rule_skipped_for_its_triggers_or_run_would_find_nothing(text: str) -> None:
    """Skipping a rule (no trigger, or no run) only happens where the rule itself would find nothing."""
    triggered = set(triggers.triggered(text.lower()))
    for index, (kind, pattern, *_) in enumerate(RULES):
        if index not in triggered:
            assert re.search(pattern, text) is None, kind


@pytest.mark.parametrize("kind", sorted(RUN_KINDS))
def test_secrets_of_the_kinds_with_a_run_are_still_redacted(kind: str) -> None:
    for case_kind, text, secret in CASES:
        if case_kind == kind:
            assert secret not in redact(text).text


def test_a_tool_calls_ordinary_words_compile_no_rule() -> None:
    """``file_path`` holds "pat" (an Airtable token's prefix), ``a == b`` the end of an Azure key, a hyphen the
    middle of a Mailgun key: none of them holds the long run those tokens have, so no rule is compiled and ``re``
    is not even imported."""
    code = (
        "import sys\n"
        "import gitmem.redact.engine as r\n"
        "texts = ['file_path', 'old_string', '/home/ada/src/shop/cart.py', 'if total == 0:', 'task-runner -x',\n"
        "         'pytest -x tests/', '3 passed in 0.2s', 'ACME Skeleton', 'notebook_path', 'sum(prices)',\n"
        "         '{\"file_path\":\"/home/ada/src/shop/cart.py\",\"old_string\":\"a\",\"new_string\":\"b\"}']\n"
        "assert all(r.redact(t).text == t for t in texts)\n"
        "from gitmem.redact.triggers import compiled\n"
        "assert compiled.cache_info().currsize == 0, 'compiled a rule'\n"
        "assert 're' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-S", "-c", code], check=True,
                   env={"PYTHONPATH": str(__import__("pathlib").Path(redact.__code__.co_filename).parents[2])})
