"""Standing instructions and preferences in a search: "always include version numbers when I ask about
libraries", "never use unittest", "I prefer simple, minimal dependencies".

Such a memory governs every later request on its subject ("which libraries does the project use?", "how should I
write the tests?"), but it shares few words with the request and is outscored by the many memories that discuss
the subject at length. So the index marks the memories that *stand* (:func:`stands`: their category is a
preference or a constraint, as the prompt hook stores the directives it detects, or their short text states one),
and a question that asks for help or advice (:func:`asks_help`: "how should I…", "can you suggest…", "what are some
good…", 怎么, 推荐) searches them once more by its words alone and gives each one its words matched
``Tuning.standing_weight`` more similarity. A factual question about the past ("what did Caroline paint?") asks
for no help and gains nothing from a rule's words alone.

A rule may name the requests it governs: "always format dates as MM/DD/YYYY **when I ask about deadlines**",
"当我问到部署的时候，先列出回滚步骤". :func:`condition` reads that subject off it (:func:`alternatives`: the
subjects a list names), and any question that names the subject brings the rule, a factual one too: by the
subject's words (the index's ``cond`` field, :meth:`gitmem.search.index.Index._naming`) or, with a model, by
meaning (the subject embedded alone, :func:`gitmem.search.semantic.governing`: "when is it due?" and
"deadlines"). Such a short text stands even without a rule word.
"""

from __future__ import annotations

from gitmem.text.lazyre import LazyPattern
from gitmem.text.scripts import words

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a search does not import typing (~3 ms a process)
if TYPE_CHECKING:
    from gitmem.store.memory import Memory

#: the categories of a memory that states a standing instruction or preference
CATEGORIES = ("preference", "constraint")

# a first-person preference anywhere in a sentence, a question's too ("…, so I prefer minimal dependencies, how
# can I…?"): the directive rules read sentence starts and leave questions alone
_PREFERS = LazyPattern(r"(?i)\b(?:i|we)(?:'d|\s+would|\s+really|\s+usually|\s+generally|\s+always|\s+still|"
                       r"\s+much)?\s+(?:prefer|rather)\b|我(?:更喜欢|比较喜欢|偏好|倾向于?|宁可|宁愿)")
#: word sequences of a request for help or advice, the first word followed by one of each next group ("could
#: you", "how should i", "what are some", "suggest me", "any tips"); read from the question's words, without
#: :mod:`re`: every prompt's search asks, and most prompts hold "you", "how" or "what"
_HELP: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("can", "could", "would", "will"), ("you",)),
    (("how",), ("can", "could", "should", "do", "would", "might", "may"), ("i", "we")),
    (("what",), ("should", "can", "could"), ("i", "we")),
    (("would", "do"), ("you",), ("suggest", "recommend")),
    (("what",), ("are",), ("some",)),
    (("suggest", "recommend", "show", "help", "give"), ("me",)),
    (("any", "some"), ("tips", "ideas", "advice", "suggestions", "recommendations")),
)
_HELP_CJK = ("怎么", "怎样", "如何", "建议", "推荐", "帮我", "应该")
# asking to be told what was said ("summarise…", "walk me through the order in which I…", "how did you help me…")
# is a question about the conversation, not a request the user's rules govern
_RECAP: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("did",),), (("recap",),), (("overview",),), (("walk",), ("me",), ("through",)),
    (("order",), ("in",), ("which",)), (("remind",), ("me",)),
)
_RECAP_CJK = ("总结", "回顾", "概括")
#: the most rules one question brings along by the subject they name (:func:`condition`)
GOVERNING = 2
# the subject of a conditional rule: "when(ever)/if/any time I (or we) ask (you) (questions) about|for|regarding Y",
# "if asked about Y", "when I talk with you about Y", "when it comes to Y"; Y ends at punctuation (a full stop only
# before a space: "Node.js") or before a word that opens the instruction ("…about deadlines always use…").
# 当/每当/每次/如果/只要我问到(起/及)Y的时候, without a trailing 的问题/的建议/的事情
_CONDITION = LazyPattern(
    r"(?i)\b(?:(?:when(?:ever)?|if|any\s?time)\s+(?:(?:i|we)(?:['\u2019]m|['\u2019]re|\s+am|\s+are)?\s+(?:ask|"
    r"inquire|request|talk|want\s+to\s+know|need\s+help)\w*(?:\s+(?:you\s+)?(?:a\s+|any\s+)?questions?)?"
    r"(?:\s+(?:with|to))?(?:\s+you)?\s+(?:about|for|regarding|on|with)|it\s+comes\s+to)|if\s+asked\s+(?:about|for|"
    r"regarding))\s+(?P<en>(?:[^.!?;:,\u2014\n]|\.(?=\w)){1,80}?)(?=\s*(?:[!?;:,\u2014\n]|\.(?!\w)|$)|\s+(?:always|"
    r"never|please|then)\b)"
    r"|(?:当|每当|每次|如果|只要)我(?:问到|问起|问及|询问|问你|问|提到|提起)(?:关于)?"
    r"(?P<zh>[^的你，。！？；：,.!?:\n][^，。！？；：,.!?:\n]{0,19}?)(?:的(?:问题|建议|事情|事))?的?(?:时候|时)")
_SENTENCE = LazyPattern(r"(?<=[.!])\s|[。！\n]")
_RULE_WORD = LazyPattern(r"(?i)[\s,:]*(?:always|never|please|don't|do\s+not|avoid|make\s+sure)\b")
# the alternatives a subject lists ("flights or hotels", "Python and Rust", 预算或者开销)
_ALTERNATIVES = LazyPattern(r"(?i)\s+(?:or|and)\s+|\s*(?:、|或者|或是|以及)\s*")


def stands(memory: Memory) -> bool:
    """Whether a memory states a standing instruction or preference: its category says so, or its text (when
    short: a long message that gives advice on the way is an explanation, not a rule) holds a directive or a
    first-person preference."""
    if memory.category in CATEGORIES:
        return True
    from gitmem.text.directives import MAX_DIRECTIVE_CHARS, detect_directives  # index time only

    text = memory.text
    if len(text) > 2 * MAX_DIRECTIVE_CHARS:
        return False
    # a rule that opens with its subject ("When I ask about deadlines, use…", 当我问到部署的时候，先…) is one too
    return bool(detect_directives(text) or _PREFERS.search(text) or _asks_when(text))


def condition(text: str) -> str:
    """The subject of the requests a rule governs ("when I ask about *scheduling details*"), or ""."""
    found = _CONDITION.search(text)
    if found is None:
        return ""
    return (found.group("en") or found.group("zh") or "").strip(" ,，:：\"'")


def _asks_when(text: str) -> bool:
    """Whether ``text`` says what to do when the user asks about something ("when I ask about…", 当我问到…的时候),
    outside a question ("Got any favs when it comes to desserts?" is no rule)."""
    found = _CONDITION.search(text)
    if found is None:
        return False
    if not found.group("zh") and "comes" in found.group().lower() and not _RULE_WORD.match(text, found.end()):
        return False  # "when it comes to X" says what to do only with a rule word after it: ", always…"
    sentence = _SENTENCE.split(text[found.start():], maxsplit=1)[0]
    return "?" not in sentence and "？" not in sentence


def alternatives(subject: str) -> list[str]:
    """The subjects a rule's subject lists ("flights or hotels" → flights, hotels); any one of them names it."""
    return [part for part in (p.strip() for p in _ALTERNATIVES.split(subject)) if part]


def asks_help(question: str) -> bool:
    """Whether a question asks for help or advice, which the user's standing instructions and preferences
    govern ("how should I…", "can you suggest…", "what are some good…", 怎么…, 推荐…)."""
    if any(word in question for word in _RECAP_CJK):
        return False
    said = words(question.lower())
    if any(w.startswith("summar") for w in said) or any(_follows(said, groups) for groups in _RECAP):
        return False
    return any(_follows(said, groups) for groups in _HELP) or any(word in question for word in _HELP_CJK)


def _follows(said: list[str], groups: tuple[tuple[str, ...], ...]) -> bool:
    """Whether ``said`` holds a word of each group, one right after the other."""
    span = len(groups)
    return any(all(said[i + g] in group for g, group in enumerate(groups)) for i in range(len(said) - span + 1)
               if said[i] in groups[0])
