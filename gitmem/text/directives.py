"""Standing instructions and corrections in a user's prompt, in English and Chinese.

A *directive* is a sentence that tells the agent how to behave from now on ("always run ruff first", "never use
unittest", "prefer pathlib over os.path", "from now on, answer in English", 始终用中文回答, 不要修改迁移文件). A
*correction* says the agent got something wrong ("no, that's wrong…", 不对, 应该是…, 改成…). Both are found by
rules on sentence starts, so the check costs microseconds on every prompt and stays predictable: questions, very
long sentences and common non-instructions ("never mind", "don't worry", 别人, 不要紧) are left alone.
The prompt hook stores what they find (:mod:`gitmem.agents.claude.handlers`); the search index reads them to mark
the memories that state a standing instruction (:mod:`gitmem.search.standing`), hence their place among the text
rules, below both.

Only the standard library is used: this runs in the ``user-prompt-submit`` hook on every prompt, so importing it
compiles nothing and loads neither :mod:`re`, :mod:`dataclasses` nor :mod:`hashlib` (the rules compile on first
use, and only for a prompt that holds a word one of them needs; their flags are written inline, ``(?i)``).
"""

from __future__ import annotations

from gitmem.text.lazyre import LazyPattern
from gitmem.text.records import Record
from gitmem.text.scripts import simplified

#: longest sentence taken as a directive (longer ones are usually explanations, not rules)
MAX_DIRECTIVE_CHARS = 300

# the Chinese ends are kept (captured) for what they say: a sentence that ended in ？ is a question
_SENTENCES = LazyPattern(r"(?<=[.!?;])\s+|([\n\r。！？；]+)")

_LEAD_EN = (r"(?:(?:please|pls|and|also|so|ok(?:ay)?|remember(?:\s+that)?|note(?:\s+that)?|important|"
            r"from\s+now\s+on|going\s+forward|henceforth|in\s+(?:the\s+)?future|"
            r"(?:in|for)\s+this\s+(?:project|repo(?:sitory)?|codebase)|here)\s*[,:!-]?\s+|"
            r"(?:actually|no|nope)\s*[,:!.-]\s*)*")
_HIGH_EN = LazyPattern(
    "(?i)" + _LEAD_EN + r"(?:make\s+sure\s+(?:that\s+)?you\s+|you\s+(?:must|should)\s+)?(?:always(?!-)|never|"
    r"must(?:\s+not)?|under\s+no\s+circumstances|do\s+not\s+ever|don'?t\s+ever|you\s+(?:must|need\s+to|"
    r"have\s+to)\s+\w+)\b")
_NORMAL_EN = LazyPattern(
    "(?i)" + _LEAD_EN + r"(?:(?:don'?t|do\s+not|avoid|stop)\s+\w+|(?:i|we)\s+(?:always\s+)?prefer\s+\S|prefer\s+\S.*?\s"
    r"(?:over|to|instead\s+of|rather\s+than)\s+\S|use\s+\S.*?\s+(?:instead\s+of|rather\s+than)\s+\S)")
_FROM_NOW_ON_EN = LazyPattern(r"(?i)^(?:from\s+now\s+on|going\s+forward|henceforth|in\s+(?:the\s+)?future|"
                              r"from\s+here\s+on)\b\s*[,:]?\s*\S")
_NOT_EN = LazyPattern(
    r"(?i)^(?:(?:please|pls|ok(?:ay)?)\s*,?\s+)?(?:never\s*mind|don'?t\s+(?:worry|bother|mind|know|think|care|get|"
    r"understand|see)|do\s+not\s+(?:worry|bother|know|think))\b")
_QUESTION_EN = LazyPattern(
    r"(?i)^(?:why|what|how|when|where|which|who|can|could|would|should|shall|do(?!\s+not\b)|does|did|is|are|was|were|"
    r"will)\b")

_LEAD_CN = (r"(?:(?:请|以后|今后|从现在开始|从今以后|之后|记住|牢记|注意|另外|还有|并且|而且|你|"
            r"(?:在)?(?:这个|本)(?:项目|仓库)里?)\s*[，,：:]?\s*)*")
_HIGH_CN = LazyPattern(_LEAD_CN + r"(?:始终|永远|一律|绝不要|绝对不要|绝不|决不|千万不要|千万别|必须|务必|总是|"
                       r"禁止|不许|不准|不得|切记)")
#: "不要"/"别" then at least two characters before the clause ends: 别急, 不要停 and 别忘了… are said, not ruled
_NORMAL_CN = LazyPattern(_LEAD_CN + r"(?:不要|别|不能|优先|尽量|最好|宁可)(?!人|的|处|紧|客气|着急|担心|忘)"
                         r"(?=\s*[^\s，,。！!？?；;：:~～]\s*[^\s，,。！!？?；;：:~～])")
#: "以后的事", "以后再说" speak of later; they set no rule
_FROM_NOW_ON_CN = LazyPattern(r"^(?:以后|今后|从现在开始|从今以后|每次|从(?:今天|明天|下周|现在)(?:开始|起))"
                              r"(?!的|再说|再议|再看|再讲|再聊)\s*[，,：:]?\s*\S")
#: "记住：API 的前缀是 /api/v1": what the user asks to be remembered is kept as said
_REMEMBER_CN = LazyPattern(r"^(?:请)?(?:记住|牢记)\s*[，,：:]\s*\S")
_QUESTION_CN = LazyPattern(r"(?:吗|呢|么|吧)\s*$")
#: a polite tail that makes a rule sound like a question ("以后都用英文写，好吗？"): the rule is what comes before it
_POLITE_TAIL = LazyPattern(r"\s*[，,]?\s*(?:好吗|好不好|可以吗|行吗|行不行|成吗|ok吗|OK吗)\s*[？?]*\s*$")
#: the correction markers that also open a question ("应该用哪个…？"): a correction only outside one
SOFT_CORRECTIONS = ("应该是", "应该用", "改成", "改为", "换成")
_ASKING = LazyPattern(r"哪|什么|怎么|为什么|是否|吗|呢|[?？]")
_SENTENCE_END = LazyPattern(r"[。！!？?\n]")

_CORRECTION = LazyPattern(
    r"(?i)^(?:no|nope|wrong)\s*[,.!:]|that'?s\s+(?:wrong|not\s+(?:right|correct|what\s+i)|incorrect)|"
    r"this\s+is\s+(?:wrong|incorrect|not\s+right)|you(?:'re|\s+are)\s+wrong|(?:is|was)\s+not\s+correct|"
    r"\bactually,?\s+(?:it|you|we|that|this)\s+should\b|\bshould\s+(?:be|have\s+been)\b.+\binstead\b|"
    r"不对|错了|搞错|不是这样|不是这个|" + "|".join(SOFT_CORRECTIONS))


# A rule is for later; a task is for now. A prompt that names code (identifiers, calls, flags), asks for a fix or
# an investigation, or points at something broken describes work to do ("Don't pass empty targets to
# lightningcss…", "Always use getfixturemarker() to access …": pull-request titles), unless it also says the
# instruction stands: a time or scope marker ("from now on", "in this project", 以后, 每次), the agent addressed
# ("you", "make sure you"), or a reason of the rule's kind (", it breaks the lockfile").
_STANDING = LazyPattern(
    r"(?i)from\s+now\s+on|going\s+forward|henceforth|in\s+(?:the\s+)?future|from\s+here\s+on|"
    r"\b(?:in|for|across)\s+(?:this|the|our|every|all)\s+(?:project|repo|repository|codebase|code\s+base)s?\b|"
    r"\bhere\b|every\s*time|each\s+time|whenever|\bever\b|\bunless\s+(?:i|we)\b|without\s+(?:asking|checking|"
    r"telling)|\bbefore\s+(?:you|committing|pushing|opening|merging|saying)|\bremember\b|make\s+sure\s+(?:you|to)\b|"
    r"\byou(?:'re|r)?\b|\bme\b|^(?:we|i)\s+(?:always\s+|never\s+)?(?:prefer|use)\b|^we\s+(?:always|never)\b|"
    r"under\s+no\s+circumstances|for\s+everything|by\s+hand|^please\s+(?:always|never|don'?t|do\s+not)\b|"
    r"[,;—-]\s*(?:they|it|that|this)\s+(?:are|is|was|contains?|breaks?|gets?|will)\b|"
    r"以后(?!的|再说)|今后|从现在开始|从今以后|从(?:今天|明天|下周)(?:开始|起)|记住|牢记|切记|这个项目|本项目|这个仓库|一律|务必|千万|统一|永远不要|绝对不要|"
    r"绝不|总是")
#: markers that say an instruction stands unless the sentence also reports or asks for work: "每次回答都先说结论" is
#: a rule, "每次运行都报这个错" a bug report, "你别管这个文件了，帮我看看…" a task
_WEAK_STANDING = LazyPattern(r"每次|你")
_CODE = LazyPattern(r"`|\w\(|\b[a-z]+\.[A-Z]\w*|\b\w+_\w+\b|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]+[A-Z][a-z]\w*|::|"
                    r"(?:^|\s)--?\w")
_TASK = LazyPattern(
    r"(?i)\b(?:fix|fixes|investigate|debug|look\s+(?:at|into)|find|figure\s+out|broken|crash(?:es)?|panics?|bug|"
    r"failing|fails|error|regression|add\s+(?:a|an)\s+(?:test|benchmark))\b|(?<!from\s)\bnow\b|"
    r"^[\w\[\]()/.-]+:\s|^\[[^\]]+\]|"
    r"修复|修一下|改一下|帮我|看看|看一下|找找|查一下|卡住|崩溃|报错|问题|优化一下|改成|更新一下|实现|新增|加一个|重构|挪到|"
    r"都(?:在)?(?:报|失败|挂|不行|出错|崩|卡)|今天|明天|待会|等会|一会儿|马上|刚才|这次|这回")
#: normal-priority forms that, with nothing saying the instruction stands, are usually tasks ("Avoid creating a
#: future on every receive", "Stop the dev server", "Don't listen on TCP when only path is passed")
_BARE_TASK_EN = LazyPattern(r"(?i)^(?:avoid\b|stop\s+(?!\w+ing\b)|don'?t\b|do\s+not\b)")
_CLAUSES = LazyPattern(r"\s*[,，:：;；—]\s*|\s+-\s+")
#: a rule that states a preference rather than a constraint
_PREFERENCE = LazyPattern(r"(?i)prefer|rather than|instead of|优先|尽量|最好|宁可")

# The rules above are compiled only for text that holds a word one of them needs: compiling them all costs a
# hook process more than its search (tens of milliseconds on a busy machine), and most prompts state no rule.
# Each priority rule (_HIGH_*, _NORMAL_*, _FROM_NOW_ON_*) needs one of these words or phrases (looked for with
# runs of whitespace read as one space, as the rules' \s+ read them), and so does the correction rule; words as
# common as "from", "not", "have" or "this" count only in the phrase a rule needs ("from now on", "do not",
# "have to", "this is"). tests/agents/claude/test_hooks.py checks with hypothesis that the scan never says no where
# a rule would match; test_hook_imports.py that a prompt of common words compiles no rule.
_RULE_WORDS = (
    "always", "never", "must", "circumstances", "need to", "have to",  # _HIGH_EN (its "don't ever": next line)
    "don", "do not", "avoid", "stop", "prefer", "instead of", "rather than",  # _NORMAL_EN
    "from now on", "from here on", "forward", "henceforth", "future",  # _FROM_NOW_ON_EN
    "始终", "永远", "一律", "绝", "决不", "千万", "必须", "务必", "总是", "禁止", "不许", "不准", "不得",  # _HIGH_CN
    "切记", "不要", "别", "不能", "优先", "尽量", "最好", "宁可",  # _NORMAL_CN
    "以后", "今后", "从现在", "从今", "从明天", "从下周", "每次",  # _FROM_NOW_ON_CN
    "记住", "牢记",  # _REMEMBER_CN
)
_CORRECTION_WORDS = ("wrong", "that's", "thats", "this is", "correct", "actually", "instead",
                     "不对", "错了", "搞错", "不是这", "应该", "改成", "改为", "换成")
#: the non-ASCII characters that re.IGNORECASE matches to an ASCII letter (İ and ı to i, the Kelvin sign to k,
#: the long s to s); everything else case-insensitive in the rules is ASCII, which str.lower() folds
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u212a": "k", "\u017f": "s"})


def _fold(text: str) -> str:
    """``text`` lower-cased as the rules' re.IGNORECASE reads it, with each run of whitespace one space (and the
    traditional characters of the rules' words in their simplified form)."""
    text = " ".join(text.split())
    return text.lower() if text.isascii() else simplified(text.translate(_FOLD)).lower()


def _may_hold_rule(text: str) -> bool:
    """False only when no priority rule can match anywhere in ``text`` (no word any of them needs)."""
    folded = _fold(text)
    return any(word in folded for word in _RULE_WORDS)


def _may_correct(text: str) -> bool:
    """False only when :data:`_CORRECTION` cannot match ``text``."""
    folded = _fold(text)
    return folded.startswith("no") or any(word in folded for word in _CORRECTION_WORDS)


class Directive(Record):
    """One standing instruction: the sentence, ``high`` or ``normal`` priority, and its memory category."""

    text: str
    priority: str
    category: str

    @property
    def key(self) -> str:
        return directive_key(self.text)


#: what a sentence may open with and still be a rule: its first letter, or a quote or bracket around code
_OPENERS = "`([{'\"“‘「《"


def _strip(sentence: str) -> str:
    """The sentence without what dresses it: list bullets and numbers, quote marks of a reply (``>``), Markdown
    emphasis (``**Never** use yarn``) and the emoji or symbols it opens with (``🙂 never use yarn``)."""
    text = " ".join(sentence.replace("**", "").replace("__", "").replace("~~", "").split())
    start = 0
    while start < len(text) and not text[start].isalnum() and text[start] not in _OPENERS:
        start += 1
    if text[start:start + 1].isdigit():  # a numbered item: "1. Always…", "2) never…"
        end = start
        while end < len(text) and text[end].isdigit():
            end += 1
        if text[end:end + 2] in (". ", ") "):
            start = end + 2
    return text[start:].strip()


#: how a correction of the agent opens ("that's wrong", 不对): it refers to what the agent just did, not to the rule
#: the sentence states, so neither a directive nor a captured correction keeps it (a pattern's text, case-insensitive)
CORRECTION_OPENING = (r"(?:that'?s|this\s+is|it'?s)\s+(?:(?:all\s+)?wrong|not\s+(?:right|correct)|incorrect)|"
                      r"you(?:'re|\s+are)\s+wrong|不对|错了|搞错了|不是这样的?")
_LEAD_TEXT = LazyPattern(r"(?i)^(?:(?:from\s+now\s+on|going\s+forward|henceforth|please|pls|also|ok(?:ay)?|and)\b"
                         r"\s*[,:]?\s*|so\s+(?=from\s+now\s+on|going\s+forward)|(?:no|nope|actually)\s*[,:.!]\s*|"
                         rf"(?:{CORRECTION_OPENING})\s*[,:.!;，：。！；-]\s*|(?:请|以后|今后|从现在开始|从今以后|从(?:今天|明天|下周|现在)(?:开始|起))\s*[，,：:]?\s*|"
                         r"(?:记住|牢记|注意)\s*[，,：:]\s*|切记\s*(?=不|别|要|[，,：:]))+")
#: what a rule's sentence may end with that is no part of the rule: thanks, and the particles of spoken Chinese
#: ("都用 pnpm 哈", "提交信息都用英文写，谢谢") with their punctuation, or exclamation marks (a full stop stays)
#: the last characters of a sentence :data:`_TAIL_TEXT` may cut from (besides "thanks"): punctuation, 谢, particles
_TAIL_ENDS = "，,。.!！~～谢吧哦哈啊呀啦噢哟嗯"
_TAIL_TEXT = LazyPattern(r"(?i)(?:[\s，,。.!！~～]*(?:谢谢(?:你|啦|了)?|多谢|thanks|thank\s+you|thx|"
                         r"[吧哦哈啊呀啦噢哟嗯]))+[\s，,。.!！~～]*$|[\s!！~～]+$")


def _rule_text(text: str) -> str:
    """The instruction without lead words ("From now on, never…" → "Never…", 记住：… → …) and without the
    thanks or particles it ends with ("…，谢谢", "…哈")."""
    simple = simplified(text)  # one character for one: the matches' places hold in ``text``
    lead = _LEAD_TEXT.match(simple)
    start = lead.end() if lead else 0
    # compiled only for a rule that may end in thanks, a particle or "!": most do not
    end = simple.rstrip()[-1:]
    ends_so = bool(end) and (end in _TAIL_ENDS or simple.rstrip().lower().endswith(("thanks", "thank you", "thx")))
    tail = _TAIL_TEXT.search(simple, start) if ends_so else None
    rule = text[start:tail.start() if tail else len(text)].strip() or text
    return rule[0].upper() + rule[1:] if rule[0].isascii() else rule


def _is_question(sentence: str, standing: bool) -> bool:
    """Whether ``sentence`` asks; a 吧 ending asks only without a marker that the instruction stands ("以后都用
    pnpm 吧" proposes a rule)."""
    if sentence.endswith(("?", "？")) or _QUESTION_EN.match(sentence):
        return True
    end = _QUESTION_CN.search(sentence)
    return end is not None and not (standing and end.group(0).strip() == "吧")


def _priority(text: str) -> str | None:
    if _HIGH_EN.match(text) or _HIGH_CN.match(text):
        return "high"
    if _NORMAL_EN.match(text) or _NORMAL_CN.match(text) or _FROM_NOW_ON_EN.match(text) or \
            _FROM_NOW_ON_CN.match(text) or ("记" in text and _REMEMBER_CN.match(text)):
        return "normal"
    return None


def _priority_cn(clause: str) -> str | None:
    """The priority of a Chinese clause that states a rule on its own ("…用 pnpm，不要用 npm 或 yarn")."""
    return "high" if _HIGH_CN.match(clause) else "normal" if _NORMAL_CN.match(clause) else None


def classify(sentence: str) -> Directive | None:
    """The standing instruction in one sentence, or None (also for a task worded like a rule)."""
    original = _strip(sentence)
    if original.rstrip("？? ").endswith(("吗", "好不好", "行不行")):  # the polite tail's pattern, only when it may hold
        original = _POLITE_TAIL.sub("", original)
    text = simplified(original)  # the rules read simplified characters; the rule keeps the user's
    if len(text) < 6 or len(text) > MAX_DIRECTIVE_CHARS or not _may_hold_rule(text) or _NOT_EN.match(text):
        return None
    strong = bool(_STANDING.search(text))
    standing = strong or (("每次" in text or "你" in text) and bool(_WEAK_STANDING.search(text)))
    if _is_question(text, strong):
        return None
    if (not standing and _CODE.search(text)) or (not strong and _TASK.search(text)):
        return None
    priority = _priority(text)
    if priority is None and standing:  # "Remember that staging is read-only, never write to it"
        priority = next((p for clause in _CLAUSES.split(text)[1:] if (p := _priority(clause))), None)
    elif priority is None:  # "前端包管理用 pnpm，不要用 npm 或 yarn"
        priority = next((p for clause in _CLAUSES.split(text)[1:] if (p := _priority_cn(clause))), None)
    if priority is None or (priority == "normal" and not standing and _BARE_TASK_EN.match(text)):
        return None
    preference = bool(_PREFERENCE.search(text))
    return Directive(text=_rule_text(original), priority=priority,
                     category="preference" if preference else "constraint")


def detect_directives(prompt: str) -> list[Directive]:
    """Every standing instruction in ``prompt``, deduplicated, in order."""
    prompt = prompt[:20_000]
    if not prompt or not _may_hold_rule(prompt):  # most prompts: no sentence to split, no rule to compile
        return []
    found: list[Directive] = []
    keys: set[str] = set()
    parts = _SENTENCES.split(prompt)  # sentence, its Chinese end (None after an English one), sentence, ...
    for at in range(0, len(parts), 2):
        sentence, end = parts[at], parts[at + 1] if at + 1 < len(parts) else None
        if sentence is None:
            continue
        if end and "？" in end:  # "以后用哪个包管理器？" asks; the split took its question mark
            sentence += "？"
        directive = classify(sentence)
        if directive is not None and directive.key not in keys:
            keys.add(directive.key)
            found.append(directive)
    return found


def detect_correction(prompt: str) -> str | None:
    """The prompt's first sentences when it corrects the agent ("no, that's wrong…", 不对…), else None. A question
    whose only marker is what something should be ("订单服务应该用哪个数据库？") asks; it corrects nothing."""
    head = _strip(prompt[:2000])
    if not head or not _may_correct(head[:400]):
        return None
    for found in _CORRECTION.finditer(head[:400]):
        if found.group(0) not in SOFT_CORRECTIONS:
            return head[:500]
        start = max(head.rfind(mark, 0, found.start()) for mark in "。！!？?\n") + 1  # the sentence around it
        after = _SENTENCE_END.search(head, found.end())
        if not _ASKING.search(head[start:after.end() if after else len(head)]):
            return head[:500]
    return None


def directive_key(text: str) -> str:
    """A key equal for the same instruction written with other case, spacing, punctuation or lead words, in
    traditional or simplified characters (絕不能 and 绝不能: one directive, one memory id)."""
    import hashlib
    import re
    import unicodedata

    normal = simplified(unicodedata.normalize("NFKC", text)).lower()
    normal = re.sub(r"^(?:(?:please|pls|ok(?:ay)?|also|and|from now on|going forward|请|以后|今后|从现在开始)\W*)+",
                    "", normal)
    normal = re.sub(r"[\W_]+", "", normal)
    return hashlib.sha1(normal.encode("utf-8")).hexdigest()[:12]
