"""The one definition of the Chinese, Japanese and Korean character ranges.

Search analysis, slugs, capture, recall gates, the embedding coverage check and the writer all ask "is this a CJK
character?"; they build their patterns from the classes here, so they cannot disagree. The classes are regular
expression character-class bodies (no brackets), kept as strings: compiling a pattern that uses them costs a few
milliseconds, which each user pays only when and where it needs the pattern.

The search index's tantivy analyzer reads them too, written in Rust regex syntax by :func:`rust_class`
(:data:`gitmem.search.analysis.TOKEN_PATTERN`); ``tests/text/test_scripts.py`` checks that every user agrees.
"""

from __future__ import annotations

from gitmem.text.lazyre import LazyPattern

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the hook path avoids importing typing
if TYPE_CHECKING:
    pass

#: Han: radicals, the iteration and closing marks and the ideographic zero (々〆〇), extension A, the unified
#: block, compatibility ideographs and the supplementary planes (extensions B to F, the compatibility supplement)
HAN = "\u2e80-\u2fdf\u3005-\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
#: Hiragana and Katakana, with the marks written among them (the prolonged sound mark ー, the middle dot)
KANA = "\u3040-\u30ff"
#: Hangul: jamo, compatibility jamo and syllables
HANGUL = "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
#: every character that counts as CJK: each is about a word's worth of meaning and is searched, counted and
#: kept in slugs one character at a time
CJK = KANA + HAN + HANGUL


#: one CJK character, compiled on first use (``CJK_CHAR.compiled`` tells whether a path needed it)
CJK_CHAR = LazyPattern(f"[{CJK}]")
#: a run of CJK characters: what the search's query analysis splits on, and what :func:`is_cjk` looks for (one
#: compiled class serves both on a prompt's path)
CJK_RUN = LazyPattern(f"[{CJK}]+")


_SIMPLIFIED: dict[int, int] = {}
_SHORT = 200  # characters: up to this, a text's characters are looked up one by one until the table is built


def simplified(text: str) -> str:
    """``text`` with traditional Chinese characters written in their simplified forms, one character for one (so
    positions hold): 請別用 npm → 请别用 npm. Search indexes and queries read text through it, so a memory
    written in either form is found by a question in the other; directive detection reads rules through it. The
    table (OpenCC's, :mod:`gitmem.text.hantable`) is loaded on the first text that is not ASCII."""
    if text.isascii():
        return text
    from gitmem.text.hantable import SIMPLIFIED, TRADITIONAL

    if not _SIMPLIFIED and len(text) <= _SHORT:
        # a prompt: looking its characters up costs ~0.02 ms where building the table costs ~0.55 ms, which a
        # process reading a handful of short texts never earns back
        find = TRADITIONAL.find
        return "".join(c if c < "\u2e80" or (at := find(c)) < 0 else SIMPLIFIED[at] for c in text)
    if not _SIMPLIFIED:
        _SIMPLIFIED.update(str.maketrans(TRADITIONAL, SIMPLIFIED))
    return text.translate(_SIMPLIFIED)


def is_cjk(text: str) -> bool:
    """Whether ``text`` holds at least one Chinese, Japanese or Korean character."""
    if text.isascii():  # most prompts and memories: no need to compile the 64k-entry class
        return False
    return CJK_RUN.search(text) is not None


def count_cjk(text: str) -> int:
    """How many Chinese, Japanese or Korean characters ``text`` holds."""
    if text.isascii():
        return 0
    return sum(len(run) for run in CJK_RUN.findall(text))  # the run pattern: one compiled class for every user


def words(text: str) -> list[str]:
    """The runs of word characters of ``text``, as ``re.findall(r"\\w+", text)`` finds them (letters, digits of
    any script and ``_``), without importing :mod:`re`: a prompt hook analyses one query per process."""
    if text.isascii():  # the usual prompt: every other character becomes a space in one C call
        return text.translate(_ASCII_NON_WORD).split()
    return "".join(c if c.isalnum() or c == "_" else " " for c in text).split()


_ASCII_NON_WORD = {i: " " for i in range(128) if not (chr(i).isalnum() or chr(i) == "_")}


def rust_class(ranges: str) -> str:
    """A character-class body such as :data:`CJK` in Rust regex syntax (``\\x{3040}-\\x{30FF}...``), for
    tantivy's regex tokenizer."""
    return "".join(f"\\x{{{ord(ranges[i]):X}}}-\\x{{{ord(ranges[i + 2]):X}}}" for i in range(0, len(ranges), 3))
