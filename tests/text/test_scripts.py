"""The CJK character ranges are defined once (``gitmem.text.scripts``): every user agrees on which characters
are Chinese, Japanese or Korean."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.briefing import gate, prompt
from gitmem.search import analysis
from gitmem.store import document as documents
from gitmem.text import overlap, scripts


def _chars(ranges: str) -> st.SearchStrategy[str]:
    """Any character of a character-class body such as ``"\\u3040-\\u30ff"``."""
    spans = [(ord(ranges[i]), ord(ranges[i + 2])) for i in range(0, len(ranges), 3)]
    return st.sampled_from(spans).flatmap(lambda span: st.integers(*span)).map(chr)


_ANALYZER = analysis.build_analyzer()


def _letter(ch: str) -> bool:
    """An assigned letter that NFKC leaves alone (compatibility ideographs become unified ones on the way in)."""
    return unicodedata.category(ch).startswith("L") and unicodedata.normalize("NFKC", ch) == ch


@given(_chars(scripts.CJK))
@settings(max_examples=300, deadline=None)
def test_every_user_counts_a_cjk_character_as_cjk(ch: str) -> None:
    assert scripts.is_cjk(f"abc {ch} def")
    assert scripts.count_cjk(f"x{ch}y{ch}") == 2
    # the recall gate keeps Latin-only embedding models away from it
    assert not gate.covers("minilm-l6", f"deploy {ch}")
    # the prompt budget counts it as a token of its own, where Latin letters take about four to a token
    assert prompt.estimate_tokens(ch * 36) > 2 * prompt.estimate_tokens("a" * 36)


@given(_chars(scripts.CJK).filter(_letter))
@settings(max_examples=300, deadline=None)
def test_every_user_keeps_a_cjk_letter_as_a_word(ch: str) -> None:
    # slugs and file-name-safe ids keep it
    assert ch in documents.slugify(f"deploy {ch}")
    assert documents.is_safe_id(f"{ch}-notes")
    # a search question searches it as its own unit (a traditional character in its simplified form)
    assert scripts.simplified(ch) in analysis.analyze_query(f"deploy {ch}", _ANALYZER).chars
    # capture, the router and the essentials compare statements by it
    assert overlap.similarity(f"use {ch}{ch}", f"{ch}{ch}") > 0
    # the tantivy analyzer writes the ranges in Rust regex syntax and indexes one token per character
    assert _ANALYZER.analyze(f"word{ch}{ch}word") == ["word", ch, ch, "word"]


# a compatibility character NFKC folds into a CJK one (U+3038 HANGZHOU NUMERAL TEN is 十) is read as that one, on
# the way into the index and into a question alike
@given(st.characters(codec="utf-8").filter(
    lambda ch: not scripts.is_cjk(ch) and not scripts.is_cjk(unicodedata.normalize("NFKC", ch))))
@settings(max_examples=300, deadline=None)
def test_no_user_counts_other_characters_as_cjk(ch: str) -> None:
    assert scripts.count_cjk(ch * 3) == 0
    assert prompt.estimate_tokens(ch * 36) == prompt.estimate_tokens("a" * 36)
    assert analysis.analyze_query(f"deploy {ch}", _ANALYZER).chars == {}


@given(st.text())
def test_words_are_the_runs_of_word_characters(text: str) -> None:
    assert scripts.words(text) == re.findall(r"\w+", text)


def test_simplified_changes_traditional_han_one_character_for_one() -> None:
    from gitmem.text import hantable

    assert scripts.simplified("請別用 npm，記著") == "请别用 npm，记着"
    assert scripts.simplified("deploy rules") == "deploy rules"
    assert scripts.simplified("部署规则 データベース 데이터") == "部署规则 データベース 데이터"  # nothing else moves
    pairs = list(zip(hantable.TRADITIONAL, hantable.SIMPLIFIED, strict=True))
    assert len(pairs) > 4000 and all(a != b for a, b in pairs)
    han = re.compile(f"[{scripts.HAN}]")
    assert all(han.fullmatch(a) and han.fullmatch(b) for a, b in pairs)


@given(st.text())
def test_simplified_keeps_every_position(text: str) -> None:
    # directive detection cuts the rule from the text as written at the places it matched in the simplified text
    assert len(scripts.simplified(text)) == len(text)


@given(st.text(alphabet=st.sampled_from("abc 中文，。😀\u2e80請別記著絕對數據庫") | st.characters(), max_size=400))
def test_simplified_reads_short_and_long_texts_alike(text: str) -> None:
    # a short text is looked up character by character, a long one through the table built once
    from gitmem.text import hantable

    table = str.maketrans(hantable.TRADITIONAL, hantable.SIMPLIFIED)
    scripts._SIMPLIFIED.clear()  # as in a fresh process: a short text takes the lookup, a long one builds the table
    assert scripts.simplified(text) == text.translate(table)
    assert scripts.simplified(text) == text.translate(table)  # the table built, or not, the same
