"""The prompt's reading without regular expressions (:mod:`gitmem.briefing.prompt`): each string-method reading
gives what the expression it replaces gives, on any text hypothesis finds, so the prompt hook can skip ``re``
without changing what a prompt searches for."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.briefing import prompt
from gitmem.text import scripts

COMMIT_TYPE = re.compile(r"^\s*(?:chore|feat|fix|refactor|revert|style)(?=[(!:])", re.I)
IDENT_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
WORD = re.compile(r"\w+")

#: text made of the characters these readings treat specially: case, digits, underscores, separators, the
#: non-ASCII letters case folding maps to ASCII ones, CJK, accented letters and other scripts' digits
SPECIAL = "aAbBzZiIıİsSſkKK09_- ()!:.\t\n\u3000中文éÉ٣²ⅷ"
texts = st.one_of(st.text(alphabet=SPECIAL, max_size=40), st.text(max_size=40),
                  st.builds(lambda kind, rest: kind + rest,
                            st.sampled_from([*prompt.COMMIT_TYPES, " FIX", "Feat", "fıx", "ſtyle", "STYLE", "fixes"]),
                            st.text(alphabet=SPECIAL, max_size=10)))


@settings(max_examples=400)
@given(texts)
def test_each_reading_equals_its_regular_expression(text: str) -> None:
    assert prompt.without_commit_type(text) == COMMIT_TYPE.sub(" ", text, count=1)
    assert scripts.words(text) == WORD.findall(text)
    assert prompt._ident_parts(text) == IDENT_PART.findall(text)
    assert prompt._is_camel(text) == bool(CAMEL.search(text))


def test_a_task_prompt_reads_as_before() -> None:
    assert prompt.without_commit_type("  fix(ssr): the stack traces") == " (ssr): the stack traces"
    assert prompt.without_commit_type("fixes: a typo") == "fixes: a typo"  # not a type: "fixes"
    assert prompt.identifier_words("HTMLParser2Output") == ["html", "parser", "output"]  # "2": too short
    assert prompt.identifier_words("open_session") == ["open", "session"]
    assert prompt.identifier_words("plain") == []


def test_the_previous_prompts_are_context_only_for_a_prompt_that_points_back() -> None:
    """"tell me a joke" after "the drift monitor alert fired" searched the drift monitor again and got its weaker
    memories; a follow-up ("fix it", "the same for the tests", "还是不行") still reads the prompts before it."""
    before = ["the drift monitor alert fired last night"]
    assert prompt.prompt_query("tell me a joke", before) == "tell me a joke"
    assert prompt.prompt_query("which region is production in?", before) == "which region is production in?"
    for follow_up in ("fix it", "do the same for the tests", "and what about its threshold?", "还是不行", "这个怎么改"):
        assert prompt.prompt_query(follow_up, before).endswith("the drift monitor alert fired last night"), follow_up
    assert prompt.prompt_query("fix it") == "fix it"
