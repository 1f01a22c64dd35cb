"""``gitmem writer check-line``: does a line sound like the character? (pure functions, English and Chinese)

Findings, each explained:

- ``taboo``: the line uses a word the character never says (whole words in English, substrings in Chinese);
- ``register``: the line's register is the opposite of the character's: a ``formal`` character using casual
  markers (contractions, "gonna", "yeah", "dude"; 啦, 呗, 咋, 哥们, 卧槽…) more than formal ones, or a ``casual``
  character speaking formally ("shall", "indeed", "whom"; 您, 阁下, 在下, 烦请…). ``neutral`` accepts both;
- ``length``: a ``short``-spoken character with a long line (over 18 words, or 30 CJK characters), or a
  ``long``-spoken one with a very short line (note only).

``ok`` is false when there is a ``taboo`` or ``register`` finding. Keywords and verbal tics the line uses are
listed as ``matched`` (in voice, not problems), and ``score`` (0–1) sums it up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gitmem.text import scripts

_CJK = scripts.CJK_CHAR
_CASUAL_EN = re.compile(r"\b(?:gonna|wanna|gotta|yeah|yep|yup|nope|hey|dude|bro|lol|kinda|sorta|ain'?t|y'all|"
                        r"cool|awesome|damn|whatever|okay|ok|stuff|guys?|nah|huh|omg|super)\b|\w+n't\b|\w+'(?:re|ll|"
                        r"ve|m|d)\b", re.IGNORECASE)
_FORMAL_EN = re.compile(r"\b(?:shall|indeed|therefore|furthermore|moreover|whom|sir|madam|pardon|beg|kindly|"
                        r"certainly|regrettably|nevertheless|henceforth|thus|hence|one must|permit me|i daresay|"
                        r"most (?:grateful|kind)|I am afraid|would you be so)\b", re.IGNORECASE)
_CASUAL_ZH = re.compile(r"哈哈|啦|呗|嘛|咋|啥|卧槽|我靠|哥们|兄弟们|贼|牛逼|咱|哎呀|得了|行吧|搞定|屁|傻|靠谱|老铁|"
                        r"整|瞎|溜了|嗨|哇")
_FORMAL_ZH = re.compile(r"您|阁下|敝|鄙人|在下|恕|烦请|恭候|承蒙|贵府|贵方|之所以|乃|亦|甚|诚然|故而|尚且|何以|岂|"
                        r"谨|奉|敢问|失敬|劳驾|有劳")
_OPPOSITE = {"formal": "casual", "casual": "formal"}
_KIND = {"archaic": "formal", "literary": "formal", "poetic": "formal", "polite": "formal", "courtly": "formal",
         "slang": "casual", "street": "casual", "crude": "casual", "colloquial": "casual", "informal": "casual"}


@dataclass
class LineCheck:
    """The verdict on one line."""

    ok: bool
    score: float
    findings: list[dict[str, str]] = field(default_factory=list)
    matched: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "score": round(self.score, 2), "findings": self.findings, "matched": self.matched}


def _uses(line: str, word: str) -> bool:
    if not word:
        return False
    if _CJK.search(word):
        return word in line
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", line, re.IGNORECASE) is not None


def register_of(line: str) -> tuple[str, list[str], list[str]]:
    """(``formal``/``casual``/``neutral``, formal markers, casual markers) of a line."""
    formal = [m.group(0) for m in (*_FORMAL_EN.finditer(line), *_FORMAL_ZH.finditer(line))]
    casual = [m.group(0) for m in (*_CASUAL_EN.finditer(line), *_CASUAL_ZH.finditer(line))]
    if len(casual) > len(formal):
        return "casual", formal, casual
    if len(formal) > len(casual):
        return "formal", formal, casual
    return "neutral", formal, casual


def _length(line: str) -> tuple[int, str]:
    cjk = len(_CJK.findall(line))
    if cjk > len(line) / 3:
        return cjk, "characters"
    return len(re.findall(r"[\w'-]+", line)), "words"


def check_line(line: str, fields: dict[str, Any]) -> LineCheck:
    """Check ``line`` against a character's fields (``register``, ``sentence_length``, ``taboo``, ``keywords``,
    ``tics``)."""
    findings: list[dict[str, str]] = []
    for word in fields.get("taboo") or []:
        if _uses(line, word):
            findings.append({"kind": "taboo", "detail": f"uses {word!r}, a word this character never says"})
    wanted = str(fields.get("register") or "neutral").lower()
    wanted = _KIND.get(wanted, wanted)
    heard, formal, casual = register_of(line)
    if _OPPOSITE.get(wanted) == heard:
        markers = casual if heard == "casual" else formal
        findings.append({"kind": "register", "detail": f"sounds {heard} ({', '.join(dict.fromkeys(markers))}) "
                                                       f"but the character's register is {wanted}"})
    size, unit = _length(line)
    limit = 30 if unit == "characters" else 18
    length = str(fields.get("sentence_length") or "")
    if length == "short" and size > limit:
        findings.append({"kind": "length", "detail": f"{size} {unit}: long for a character who speaks in short "
                                                     f"sentences (about {limit} at most)"})
    elif length == "long" and size < limit // 4:
        findings.append({"kind": "length", "detail": f"only {size} {unit} for a character given to long "
                                                     "sentences"})
    matched = [w for w in [*(fields.get("keywords") or []), *(fields.get("tics") or [])] if _uses(line, w)]
    serious = [f for f in findings if f["kind"] in ("taboo", "register")]
    score = 1.0 - 0.5 * sum(f["kind"] == "taboo" for f in findings) - 0.3 * sum(
        f["kind"] == "register" for f in findings) - 0.1 * sum(f["kind"] == "length" for f in findings)
    score = max(0.0, min(1.0, score + 0.05 * len(matched)))
    return LineCheck(not serious, score, findings, matched)
