"""Questions about order: "what did we decide first", "the latest choice of queue", "what did we use before
Kafka", "上线之后改了什么". Text similarity alone cannot answer them (every memory about queues is as similar as
the next); the memories' creation dates can, among the ones that are about the subject.

:func:`parse_order` finds what is asked; :func:`order_bonus` turns it into a bonus over the candidates of a search,
given their similarity and creation time.

A memory replaced by a later one (``superseded_by``: ``gitmem remember --auto --supersede``, ``gitmem compact``) is
deprecated, and a search leaves deprecated memories out: "the latest" never meets a replaced state. "What did we
use first" and "what came before X" ask for exactly such a state, so for those (:data:`HISTORY`) a search takes the
superseded memories among its candidates too, and finds the X of "before/after X" among them as well: the past
states of a supersede chain answer them, not only the memories still current.
"""

from __future__ import annotations

from gitmem.text.lazyre import LazyPattern
from gitmem.text.records import Record

_UNITS = (r"(?:week|weekend|month|year|night|time|day|season|summer|winter|spring|fall|autumn"
          r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?")
_FIRST = LazyPattern(r"\b(?:first|earliest|initially|originally|at the (?:start|beginning)|to begin with"
                     r"|start(?:ed)? (?:with|out))\b"
                     r"|最早|最初|第一次|一开始|起初|当初")
# "first," opening a sentence ("First, fix the db config", "First, what do we use?") orders the work or the
# questions, not the memories: it is taken out before _FIRST looks (首先, "first of all", is not in _FIRST at all)
_SEQUENCING = LazyPattern(r"(?:^|(?<=[.!?;:\n]))\s*first(?:ly| of all| off)?\s*[,:]")
_LAST = LazyPattern(r"\b(?:latest|most recent(?:ly)?|newest|current(?:ly)?|now|nowadays|these days"
                    rf"|last(?!\s+{_UNITS}\b))\b"
                    r"|最近|最新|最后|目前|现在|如今")
# the anchor runs to the end of the clause; a dot between digits is a version's ("before Python 3.11")
_BEFORE_AFTER = LazyPattern(r"(?i)\b(before|after|prior to)\s+((?:[^?.!,;，。？！；]|(?<=\d)\.(?=\d)){3,80})")
_CJK_BEFORE_AFTER = LazyPattern(r"([\u4e00-\u9fff\w]{2,20}?)(之前|以前|之后|以后)")
# an anchor that is a date, a time or a period ("before May 2023", "two weeks after 8 May", "after 2023-05",
# "before the 3rd", "after 10am", "before 9:30", "after the 1990s", "5号之后", "下午3点之后", "after Q3") is the time
# parser's, and so is one with any other number ("after I had saved $1,200", "after 3 retries") except a name's
# version (_VERSION)
_DATE_ANCHOR = LazyPattern(r"(?i)\b(?:19|20)\d\ds?\b|\d+\s*[/-]\s*\d+|\b\d+(?:st|nd|rd|th|\s*[ap]\.?m)\b|\d:\d\d"
                           r"|\d\s*[号日点时]|\b[qh][1-4]\b"  # a quarter or half of a year is no version
                           r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
                           rf"|\b(?:the |this |last |next )?{_UNITS}\b|年|月|周|天")
# a name and its version ("Vue 2", "Python 3.11", "node v20"): what the anchor names, not when
_VERSION = LazyPattern(r"(?i)\b[a-z][a-z.+#-]*\s*v?\d+(?:\.\d+)*\b")
_DIGIT = LazyPattern(r"\d")
# After "Before X, …": a question about the past (:func:`_condition`). "do", "can", "tell" open requests and
# instructions as often ("Before you deploy, do a dry run"), so a question word must come with a past form.
_ASKS_PAST = LazyPattern(r"^[\W_]*(?:(?:what|which|when|who|whom|whose|where|why|how)\b.*\b(?:did|was|were|had|used)\b"
                         r"|(?:did|was|were|had)\b)")
_CJK_ASKS = LazyPattern(r"什么|哪|谁|怎么|吗|呢|多少|几[个次种天年]")
_CJK_COMMANDS = ("先", "请", "记得", "帮我", "务必", "一定要", "别", "不要")
_CLAUSE_END = LazyPattern(r"[，。！；,.!;]")
# "before you commit": the agent's own next step, which no memory can be ("before you suggested Redis" is past)
_YOUR_NEXT_STEP = LazyPattern(r"^you (?!(?:did|was|were|had)\b)[a-z]+(?<!ed)\b")
_INSTRUCTION, _SKIP = "instruction", "skip"
_BEFORE_WORDS = ("before", "prior to", "之前", "以前")

#: words one of which every English form above needs ("prior", "begin": prior to, to begin with; "recent",
#: "day": most recent, these days; "now": nowadays): ASCII text with none of them asks for no order
_ORDER_WORDS = ("before", "after", "prior", "first", "earliest", "initially", "originally", "start", "begin",
                "latest", "recent", "newest", "current", "now", "day", "last")
#: the same for the Chinese forms: text with none of these nor of :data:`_ORDER_WORDS` asks for no order
_CJK_ORDER_WORDS = ("最早", "最初", "第一次", "一开始", "起初", "当初", "最近", "最新", "最后", "目前", "现在", "如今",
                    "之前", "以前", "之后", "以后")
# under IGNORECASE ``re`` matches ı (dotless i) and ſ (long s) to the ASCII letters of _ORDER_WORDS (İ and the
# Kelvin sign too, but lower() has already turned those into i and k)
_FOLDED = str.maketrans({"\u0131": "i", "\u017f": "s"})

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a search does not import typing (~3 ms a process)
if TYPE_CHECKING:
    import re
    from collections.abc import Mapping, Sequence
    from typing import Literal, TypeVar

    K = TypeVar("K")

    Kind = Literal["first", "last", "before", "after"]


#: the kinds a past state answers: the first state of a subject, what came before a change
HISTORY = ("first", "before")
#: how many of the most similar candidates the order is taken among (and how many superseded memories a
#: question about the past takes as candidates: the order is taken among no more)
AMONG = 20
#: a memory is about the subject (or about X) when it scores at least this share of the best match
FLOOR = 0.5


class Order(Record):
    """What a question asks about order: the ``first`` or ``last`` (latest) memory on its subject, or the ones
    ``before``/``after`` the memory that ``anchor`` describes. Read-only once made."""

    kind: Kind
    anchor: str = ""

    @property
    def history(self) -> bool:
        """Whether superseded memories (a supersede chain's past states) may answer."""
        return self.kind in HISTORY


def asks_order(question: str) -> bool:
    """Whether ``question`` may ask about order (cheap; never False where :func:`parse_order` finds an order)."""
    text = question.lower()
    if not text.isascii():
        if any(word in question for word in _CJK_ORDER_WORDS):
            return True
        text = text.translate(_FOLDED)
    return any(word in text for word in _ORDER_WORDS)


def _names_time(anchor: str) -> bool:
    """Whether the X of "before/after X" is a date, a time, a period or a quantity rather than a thing: a version of a
    name does not count ("after Vue 2")."""
    return bool(_DATE_ANCHOR.search(anchor) or _DIGIT.search(_VERSION.sub(" ", anchor)))


def _condition(text: str, match: re.Match[str], anchor: str, cjk: bool) -> str:
    """Whether the "before/after X" ``match`` is a condition rather than a question about order: ``_INSTRUCTION``
    when it opens the text and ends at a comma and what follows asks nothing about the past ("Before you commit,
    run the tests", 提交之前，先跑测试: the whole text is an instruction); ``_SKIP`` for "before you <do something>",
    the agent's own next step; "" when it asks ("Before we moved to Postgres, what did we use")."""
    start, end = match.span()
    if not text[:start].strip() and text[end:end + 1] in (",", "，") and "?" not in text and "？" not in text:
        rest = text[end + 1:].lstrip()
        if cjk:
            clause = _CLAUSE_END.split(rest, maxsplit=1)[0]
            asks = not clause.startswith(_CJK_COMMANDS) and bool(_CJK_ASKS.search(clause))
        else:
            asks = bool(_ASKS_PAST.search(rest))
        if not asks:
            return _INSTRUCTION
    return _SKIP if not cjk and _YOUR_NEXT_STEP.search(anchor) else ""


def parse_order(question: str) -> Order | None:
    """The order a question asks for, or None (most questions)."""
    # most questions are answered by the cheap check, without compiling the patterns
    return _order(question) if asks_order(question) else None


def _order(question: str) -> Order | None:
    """:func:`parse_order` without the cheap check first."""
    text = question.lower()
    for cjk in (False, True):  # "before X" in English first; the CJK pattern compiles only when that finds none
        source = question if cjk else text
        for match in (_CJK_BEFORE_AFTER if cjk else _BEFORE_AFTER).finditer(source):
            word, anchor = (match.group(2), match.group(1)) if cjk else (match.group(1), match.group(2).strip())
            condition = _condition(source, match, anchor, cjk)
            if condition == _INSTRUCTION:
                return None
            if condition == _SKIP:
                continue
            if not _names_time(anchor):
                return Order(kind="before" if word in _BEFORE_WORDS else "after", anchor=anchor)
            break  # a date or a period: the time parser's; look no further in this language
    if _FIRST.search(_SEQUENCING.sub(" ", text)):
        return Order(kind="first")
    if _LAST.search(text):
        return Order(kind="last")
    return None


def order_bonus(order: Order, similarity: Sequence[float], created: Sequence[float], *, weight: float,
                floor: float = FLOOR, among: int = AMONG, anchor_at: float | None = None,
                within: Sequence[bool] | None = None, linked: Sequence[bool] | None = None) -> list[float]:
    """A bonus per candidate (aligned with ``similarity`` and ``created``, epoch seconds): among the ``among``
    most similar candidates whose similarity is at least ``floor`` times the best, ``weight`` for the earliest
    (``first``) or the latest (``last``) down to 0 for the other end; for ``before``/``after``, candidates
    on the asked side of ``anchor_at`` (the creation time of the memory the anchor describes, None when none
    matched it; that memory included) gain ``weight`` for the nearest in time down to ``weight/2`` for the
    farthest; the others gain nothing. ``linked``: the candidates a supersede chain puts right on the asked side
    of the anchor's memory (the ones it replaced, the one that replaced it): the chain says what came before or
    after, so they gain what puts them first, ``weight`` above the best. ``within``: the candidates created in
    the period the question names ("the latest project in July"), the only ones the order is taken among."""
    n = len(similarity)
    bonus = [0.0] * n
    if not n:
        return bonus
    inside = range(n) if within is None else [i for i in range(n) if within[i]]
    if not inside:
        return bonus
    best = max(similarity[i] for i in inside)
    pool = sorted((i for i in inside if similarity[i] >= floor * best),
                  key=lambda i: -similarity[i])[:among]
    if order.kind in ("before", "after"):
        if anchor_at is None:
            return bonus
        at = anchor_at
        # the anchor's own memory counts: "we moved to Kafka from RabbitMQ" answers "what before Kafka"
        side = [i for i in pool if (created[i] <= at if order.kind == "before" else created[i] >= at)]
        side.sort(key=lambda i: abs(created[i] - at))
        for rank, i in enumerate(side):
            bonus[i] = weight * (1.0 - 0.5 * rank / max(1, len(side) - 1))
        if linked is not None:
            top = max(similarity[i] + bonus[i] for i in range(n))
            for i in inside:
                if linked[i]:
                    bonus[i] = top - similarity[i] + weight
        return bonus
    if len(pool) < 2:
        return bonus
    pool.sort(key=lambda i: created[i], reverse=order.kind == "last")
    for rank, i in enumerate(pool):
        bonus[i] = weight * (1.0 - rank / (len(pool) - 1))
    return bonus


def chain_firsts(replaced_by: Mapping[K, tuple[str, str]], similarity: Mapping[K, float]) -> dict[K, float]:
    """The first state of each supersede chain among the candidates, with the best ``similarity`` of that chain's
    candidates: "what did we use first" asks for the start of the chain the question is nearest to, and the
    start may share fewer words with it than a later state does. ``replaced_by``: each superseded candidate's id
    and the id of the memory that replaced it; a first state is one that replaced none of them."""
    key_of = {memory_id: key for key, (memory_id, _by) in replaced_by.items()}
    best: dict[str, float] = {}
    heads: dict[K, str] = {}
    for key in replaced_by:
        at, seen = key, {key}
        while (later := key_of.get(replaced_by[at][1])) is not None and later not in seen:
            at = later
            seen.add(at)
        heads[key] = head = replaced_by[at][1]  # the chain's latest state (current, or not a candidate)
        best[head] = max(best.get(head, 0.0), similarity.get(key, 0.0))
    successors = {by for _id, by in replaced_by.values()}
    return {key: best[heads[key]] for key, (memory_id, _by) in replaced_by.items() if memory_id not in successors}
