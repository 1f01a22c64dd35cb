"""The one definition of the Chinese, Japanese and Korean character ranges.

Search analysis, slugs, capture, recall gates, the embedding coverage check and the writer all ask "is this a CJK
character?"; they build their patterns from the classes here, so they cannot disagree. The classes are regular
expression character-class bodies (no brackets), kept as strings: compiling a pattern that uses them costs a few
milliseconds, which each user pays only when and where it needs the pattern.

The search index's tantivy analyzer writes the same sets in Rust regex syntax (``\\p{Han}`` and friends, in
:data:`gitmem.ranking.TOKEN_PATTERN`); ``tests/test_scripts.py`` checks that it splits every assigned letter of
these ranges into one token per character.
"""

from __future__ import annotations

import re
from functools import cache

#: Han ideographs: extension A, the unified block, compatibility ideographs and the supplementary planes
#: (extensions B to F and the compatibility supplement)
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
#: Hiragana and Katakana
KANA = "\u3040-\u30ff"
#: Hangul syllables
HANGUL = "\uac00-\ud7af"
#: every character that counts as CJK: each is about a word's worth of meaning and is searched, counted and
#: kept in slugs one character at a time
CJK = KANA + HAN + HANGUL


@cache
def cjk_pattern() -> re.Pattern[str]:
    """One CJK character (compiled on first use)."""
    return re.compile(f"[{CJK}]")


def is_cjk(text: str) -> bool:
    """Whether ``text`` holds at least one Chinese, Japanese or Korean character."""
    return cjk_pattern().search(text) is not None


def count_cjk(text: str) -> int:
    """How many Chinese, Japanese or Korean characters ``text`` holds."""
    return len(cjk_pattern().findall(text))
