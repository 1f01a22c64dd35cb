"""Where a finding belongs, by rules (English and Chinese): pure functions, no I/O.

In order, the first that applies wins:

1. ``notepad``: scratch for the next turns ("for now", "next step", "remind me", "暂时", "下一步", "别忘了"):
   ``priority`` when it asks for something soon, else ``working``;
2. ``directive``: a standing instruction (:func:`gitmem.text.directives.classify`: "always", "never", "from now on",
   "prefer X over Y", "以后", "必须", "不要");
3. ``wiki``: long or structured text (several lines, a list, a heading, code), or the story of an architecture,
   a pattern or a debugging session ("root cause", "turned out", "根因", "排查");
4. ``project``: a fact about the code project's stack, commands, ports or environment ("tests run with …",
   "port 8080", "``FOO=bar``", "测试命令", "端口", "环境变量");
5. ``memory``: anything else, with the category and importance :mod:`gitmem.learn.capture` gives it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SURFACES = ("memory", "project", "wiki", "directive", "notepad")
#: text longer than this (characters) is a page, not a memory
LONG_TEXT = 280

_SCRATCH = re.compile(
    r"\b(?:for now|for this session|in this session|this session|right now|temporar(?:y|ily)|to-?do|todo|"
    r"next step|next,? (?:i|we)(?:'ll| will| need| should)|remind me|don'?t forget|do not forget|"
    r"currently (?:working|debugging|investigating|trying|looking)|(?:i'm|i am|we're|we are) (?:working|"
    r"debugging|investigating|in the middle)|work in progress|wip\b|note to self|scratch|later today|"
    r"before (?:i|we) (?:finish|commit|push|merge|leave)|after this (?:turn|step|test))\b"
    r"|暂时|这次会话|本次会话|这个会话|当前正在|正在(?:调试|处理|排查|修改|看)|待办|下一步|接下来|先记一下|"
    r"稍后|别忘了|不要忘了|记得先|一会儿|临时|草稿|提醒我", re.IGNORECASE)
_SOON = re.compile(r"\b(?:next step|next,? (?:i|we)|remind me|don'?t forget|do not forget|before (?:i|we)|"
                   r"after this|urgent|asap|important)\b|下一步|接下来|别忘了|不要忘了|记得先|提醒我|马上|立刻|一会儿",
                   re.IGNORECASE)
_DEBUG = re.compile(r"\b(?:root cause|turned out|the (?:bug|issue|problem|crash) was|stack ?trace|we debugged|"
                    r"post-?mortem|reproduced? (?:it|the)|bisect(?:ed)?|the fix was|caused by)\b"
                    r"|根因|根本原因|排查|调试过程|复现|原来是|结果发现|问题出在|修复方法", re.IGNORECASE)
_ARCH = re.compile(r"\b(?:architecture|data ?flow|request flow|the flow|talks to|sits behind|is split into|"
                   r"layers?|components?|subsystems?|module[s]? (?:call|own|depend)|sequence of|pipeline "
                   r"(?:is|has|runs))\b|架构|数据流|调用链|分层|模块之间|组件|流程是", re.IGNORECASE)
_PATTERN = re.compile(r"\b(?:pattern|idiom|recipe|the way we|whenever we|our approach)\b|模式|套路|惯用法|写法",
                      re.IGNORECASE)
_PROJECT = re.compile(
    r"\b(?:(?:run|runs|build|builds|test|tests|lint|lints|deploy|deploys|start|starts|serve|format)\s+"
    r"(?:\S+\s+){0,3}?(?:with|via|using|by running)\b|command(?:s)? (?:is|are|for)|"
    r"(?:listens?|runs?|served?) on (?:port )?\d{2,5}|port \d{2,5}|ports? (?:is|are)|env(?:ironment)? var"
    r"(?:iable)?s?|python \d\.\d+|node(?:\.js)? \d+|go \d\.\d+|java \d+|tech stack|package manager|"
    r"(?:uses|is built with|is written in) (?:python|typescript|javascript|go|rust|java|postgres\w*|mysql|"
    r"redis|django|flask|fastapi|react|vue|next\.js|poetry|uv|pnpm|npm|yarn|docker)|docker compose|"
    r"makefile|npm run|pnpm \w+|yarn \w+|pytest|cargo \w+|go test|mvn|gradle|\.env\b)"
    r"|(?<![\w$])[A-Z][A-Z0-9_]{2,}=\S"
    r"|测试命令|构建命令|启动命令|运行命令|端口|环境变量|技术栈|依赖|包管理|用\s*\S+\s*(?:运行|构建|测试|启动)",
    re.IGNORECASE)


@dataclass(frozen=True)
class Route:
    """Where a finding goes and why: ``surface`` (one of :data:`SURFACES`), the reason in words, and per
    surface a memory ``category``/``importance``, a wiki ``category``, a notepad ``section`` or a directive
    ``priority``."""

    surface: str
    reason: str
    category: str = ""
    importance: int = 3
    section: str = ""
    priority: str = ""


def _structured(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    bullets = sum(1 for ln in lines if re.match(r"\s*(?:[-*+]|\d+\.)\s", ln))
    return len(lines) >= 3 or bullets >= 2 or "```" in text or bool(re.search(r"(?m)^#{1,4} ", text))


def _wiki_category(text: str) -> str:
    if _DEBUG.search(text):
        return "debugging"
    if _ARCH.search(text):
        return "architecture"
    if _PATTERN.search(text):
        return "pattern"
    return "reference"


def route(text: str) -> Route:
    """The rules' decision for one finding (see the module docstring)."""
    from gitmem.learn import capture
    from gitmem.text import directives

    flat = " ".join(text.split())
    scratch = _SCRATCH.search(flat)
    if scratch and len(flat) <= LONG_TEXT:
        section = "priority" if _SOON.search(flat) else "working"
        return Route("notepad", f"scratch for the next turns ('{scratch.group(0)}'): {section} section",
                     section=section)
    long = len(flat) > LONG_TEXT or _structured(text)
    if not long:
        directive = directives.classify(flat)
        if directive is not None:
            return Route("directive", f"a standing instruction ({directive.priority} priority)",
                         category=directive.category, importance=5 if directive.priority == "high" else 4,
                         priority=directive.priority)
    story = _DEBUG.search(flat) or (len(flat) > 120 and (_ARCH.search(flat) or _PATTERN.search(flat))) or None
    if long or story:
        category = _wiki_category(flat)
        why = "long or structured text" if long else f"a {category} story ('{story.group(0) if story else ''}')"
        return Route("wiki", f"{why}: a {category} page", category=category)
    fact = _PROJECT.search(flat)
    if fact:
        return Route("project", f"a fact about the project's stack, commands or environment ('{fact.group(0)}')")
    category = capture.classify(flat) or "background"
    importance = capture.IMPORTANCE.get(category, 3)
    return Route("memory", f"a durable {category} fact (importance {importance})", category=category,
                 importance=importance)
