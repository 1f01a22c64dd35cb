"""How text becomes search terms: the analyzer every searchable field and every query goes through (one token per
Han, kana or Hangul character, whole words otherwise, lower-cased, folded, stemmed), and a question turned into
weighted units (:class:`QueryTerms`: words without the stopwords, CJK character pairs searched as phrases, single CJK
characters as weak terms). ``docs/search.md`` ("Analysis and queries") has the measurements behind each choice.
"""

from __future__ import annotations

import itertools
import unicodedata

import tantivy

from gitmem.text import scripts
from gitmem.text.lazyre import LazyPattern

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a search does not import typing (~3 ms a process)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

#: name under which the analyzer is registered on every Index open (tantivy does not persist it)
TOKENIZER = "gitmem_cjk_v2"
#: one token per Han/kana/Hangul character (the ranges of :mod:`gitmem.text.scripts`), whole words otherwise
#: (rust regex syntax). Hangul syllables too:
#: Korean glues particles to its words (데이터베이스는, 데이터베이스를), so whole words rarely match a question's;
#: syllables searched as bigrams do, as Chinese characters do.
TOKEN_PATTERN = f"[{scripts.rust_class(scripts.CJK)}]|[\\w--[{scripts.rust_class(scripts.CJK)}]]+"

# Words that carry no topic in a question. Applied to the query only: documents keep every token.
_STOPWORDS_EN_TEXT = (
    "a about above after again against all am an and any are aren as at be "
    "because been before being below between both but by can could did didn do does doesn "
    "doing don down during each else ever few for from further get gets got had has "
    "hasn have haven having he her here hers herself him himself his how i if in "
    "into is isn it its itself just let me might more most must my myself no "
    "nor not now of off on once only or other ought our ours ourselves out over "
    "own please same shall she should so some such than that the their theirs them themselves "
    "then there these they this those through to too under until up upon us very was "
    "wasn we were weren what whatever when where which while who whom whose why will with "
    "won would you your yours yourself yourselves also ever anything something tell remember recall "
    "sort thing things s t ve ll re d m may might like really maybe ok okay thanks thank hi hello hey yeah yes "
    "sure quite"
)
STOPWORDS_EN = frozenset(_STOPWORDS_EN_TEXT.split())

#: Chinese and Japanese function words and question words, removed from CJK runs before bigrams are made
#: (longest first, so 为什么 goes before 什么).
CJK_STOPWORDS = tuple(sorted({
    "为什么", "为何", "什么", "怎么样", "怎么", "怎样", "如何", "哪些", "哪个", "哪里", "是否", "是不是", "有没有",
    "我们", "你们", "他们", "她们", "它们", "咱们", "这个", "那个", "这些", "那些", "一个", "一些", "之前", "以前",
    "时候", "可以", "应该", "需要", "关于", "还是", "或者", "以及", "因为", "所以", "但是", "然后", "就是", "那么",
    # "from now on" and "thanks": a rule's time marker and courtesy, no topic ("以后不要用 npm" is about npm)
    "以后", "以後", "今后", "今後", "从今以后", "从现在开始", "谢谢",
    "的", "了", "吗", "呢", "吧", "啊", "呀", "是", "在", "和", "与", "及", "我", "你", "他", "她", "它", "这", "那",
    "有", "就", "都", "也", "还", "又", "要", "会", "能", "请", "把", "被", "对", "从", "到", "给", "让", "地", "得",
    "着", "过", "么", "之", "其", "该", "此", "您",
    "なぜ", "どうして", "何", "どう", "どの", "です", "ます", "ました", "でした", "という",
    "の", "は", "を", "に", "が", "で", "と", "も", "か", "へ", "や", "ね", "よ",
}, key=lambda w: (-len(w), w)))
# the words hold no character special to a regular expression (a test checks it): joined as they are, without
# importing re for re.escape
_CJK_STOP_RE = LazyPattern("|".join(CJK_STOPWORDS))


def build_analyzer(stem: bool = True) -> Any:
    """The text analyzer used for every searchable field and for queries (see module docstring)."""
    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(TOKEN_PATTERN))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.remove_long(40))
    )
    if stem:
        builder = builder.filter(tantivy.Filter.stemmer("english"))
    return builder.build()


def nfkc(text: str) -> str:
    """NFKC: full-width letters and digits become ASCII (what the embedding model reads of a query)."""
    return unicodedata.normalize("NFKC", text)


def normalise(text: str) -> str:
    """NFKC, and traditional Chinese characters in their simplified forms (:func:`gitmem.text.scripts.simplified`),
    applied to documents and queries alike: 部署規則 finds 部署规则 and the other way round."""
    return scripts.simplified(unicodedata.normalize("NFKC", text))


class QueryTerms:
    """A question turned into weighted search units: ``words`` (analyzed, stemmed word → weight, how often the
    question uses it), ``bigrams`` (overlapping CJK character pairs, searched as two-token phrases) and ``chars``
    (every CJK character left after stopword removal, searched as weak terms)."""

    # a plain class, not a dataclass: see gitmem.text.records
    __slots__ = ("bigrams", "chars", "words")

    def __init__(self, words: dict[str, float] | None = None, bigrams: dict[tuple[str, str], float] | None = None,
                 chars: dict[str, float] | None = None) -> None:
        self.words: dict[str, float] = words if words is not None else {}
        self.bigrams: dict[tuple[str, str], float] = bigrams if bigrams is not None else {}
        self.chars: dict[str, float] = chars if chars is not None else {}

    @property
    def empty(self) -> bool:
        return not (self.words or self.bigrams or self.chars)

    def highlight_terms(self) -> set[str]:
        terms = set(self.words) | set(self.chars)
        for a, b in self.bigrams:
            terms.update((a, b))
        return terms


def analyze_query(text: str, analyzer: Any, *, drop: Iterable[str] = ()) -> QueryTerms:
    """Turn free text (a question, keywords, or broken query syntax) into search units.

    Never raises on odd input: operators and quotes are just punctuation here. ``drop`` removes spans of the
    text first (e.g. a time expression already turned into a date filter)."""
    text = normalise(text).lower()
    for span in drop:
        text = text.replace(span, " ")
    terms = QueryTerms()
    kept_words: list[str] = []
    all_words: list[str] = []
    pos = 0
    # an ASCII prompt holds no CJK run: it never pays for compiling the CJK class
    for match in () if text.isascii() else scripts.CJK_RUN.finditer(text):  # compiled only when met
        _latin(text[pos:match.start()], kept_words, all_words)
        _cjk(match.group(), terms)
        pos = match.end()
    _latin(text[pos:], kept_words, all_words)
    words = kept_words if (kept_words or terms.bigrams or terms.chars) else all_words
    for token in analyzer.analyze(" ".join(words)) if words else []:
        terms.words[token] = terms.words.get(token, 0.0) + 1.0
    return terms


def _latin(text: str, kept: list[str], every: list[str]) -> None:
    for word in scripts.words(text):
        every.append(word)
        if word not in STOPWORDS_EN and not (len(word) == 1 and word.isalpha()):
            kept.append(word)


def _cjk(run: str, terms: QueryTerms) -> None:
    for piece in _CJK_STOP_RE.split(run):
        # every character, not only the ones left alone: a short memory ("我有孩子，还有一条狗") often shares
        # no pair of characters with a long utterance about it ("老是和家里的狗打架"), only single ones; weakly
        # weighted (``Tuning.char_weight``), they let such memories be found at all (DuLeMon dev 0.659 → 0.788)
        for char in piece:
            terms.chars[char] = terms.chars.get(char, 0.0) + 1.0
        for a, b in itertools.pairwise(piece):
            terms.bigrams[(a, b)] = terms.bigrams.get((a, b), 0.0) + 1.0
    if len(run) == 1 and not terms.chars and not terms.bigrams:  # a lone stopword is still the whole question
        terms.chars[run] = 1.0
