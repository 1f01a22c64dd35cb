"""How much two short texts say in the same words: a cosine over counts of words and CJK character pairs.

One measure for every "is this the same statement?" question: capture's skip / merge / conflict decisions
(:mod:`gitmem.learn.dedup`), the router's duplicate check and the essentials' near-duplicate rules
(:mod:`gitmem.briefing.essentials`). Chinese has no spaces, so a run of CJK characters counts as its overlapping
character pairs ("单元测试" → 单元, 元测, 测试), which match across different word boundaries.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from gitmem.text.scripts import CJK

_TOKEN = re.compile(rf"[a-z0-9_]+|[{CJK}]+")
_CJK_START = re.compile(rf"[{CJK}]")


def words(text: str) -> Counter[str]:
    """The counts of ``text``'s lower-cased words and CJK character pairs (a lone CJK character counts as itself)."""
    out: Counter[str] = Counter()
    for token in _TOKEN.findall(text.lower()):
        if _CJK_START.match(token):
            out.update(token[i:i + 2] for i in range(max(1, len(token) - 1)))
        else:
            out[token] += 1
    return out


def similarity(a: str, b: str) -> float:
    """Cosine similarity of word (and CJK pair) counts, 0..1."""
    ta, tb = words(a), words(b)
    dot = sum(ta[k] * tb[k] for k in ta.keys() & tb.keys())
    norm = math.sqrt(sum(v * v for v in ta.values())) * math.sqrt(sum(v * v for v in tb.values()))
    # rounded: 4 words of 5 in common is 0.8, the merge threshold, not 0.7999999999999998 below it
    return round(dot / norm, 9) if norm else 0.0
