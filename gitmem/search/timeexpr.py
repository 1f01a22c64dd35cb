"""Time expressions in questions ("last week", "in May 2023", "three days ago", "上周", "2023 年"): the period a
question names, so the search can favour memories created then. English and Chinese; never raises on odd text.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta

from gitmem.text.records import Record

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a search does not import typing (~3 ms a process)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["TimeRange", "names_time", "parse_time_expression"]


class TimeRange(Record):
    """A period a question names, ``[start, end)`` in UTC, and the words that named it. Read-only once made."""

    start: datetime
    end: datetime
    text: str

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment < self.end


def in_period(created: list[Any] | None, when: TimeRange | None, n: int) -> list[bool]:
    """For each of ``n`` candidates (``created``: epoch seconds, None when unknown), whether it was created in
    ``when``; all False when no period was named or no dates were read."""
    if when is None or created is None:
        return [False] * n
    start, end = when.start.timestamp(), when.end.timestamp()
    return [c is not None and start <= c < end for c in created]


_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10,
    "nov": 11, "dec": 12,
}
_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|" \
         r"apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "a few": 3, "few": 3, "several": 4, "a couple of": 2, "couple of": 2}
_CN_NUM = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
           "几": 3}
_NUM = r"(\d+|a couple of|couple of|a few|few|several|an|a|one|two|three|four|five|six|seven|eight|nine|ten)"
_YEAR = r"((?:19|20)\d{2})"
#: Every expression the parser knows holds one of these English words, one of :data:`_TIME_CHARS` or four digits
#: in a row (a year): a number alone ("task3", "topic 3") names no time. :func:`names_time` checks that much
#: before the ~20 patterns of :func:`parse_time_expression` are compiled (tens of ms, a hook's whole budget).
_TIME_WORDS = frozenset((*_MONTHS, *_WEEKDAYS, "yesterday", "today", "tonight", "morning", "day", "days", "week",
                         "weekend", "month", "year", "ago", "recently", "lately"))
_TIME_CHARS = "天周週月年星礼日近"
# what the check reads of ASCII text: its runs of a-z, and its runs of digits (one C call each)
_NOT_LETTER = {i: " " for i in range(128) if not ("a" <= chr(i) <= "z")}
_NOT_DIGIT = {i: " " for i in range(128) if not chr(i).isdigit()}


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_range(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def _year_range(year: int) -> tuple[datetime, datetime]:
    return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)


def _valid_day(year: int, month: int, day: int) -> datetime | None:
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


def _latest_month(month: int, now: datetime) -> int:
    """The year of the most recent ``month`` not after ``now``."""
    return now.year if month <= now.month else now.year - 1


def _count(word: str) -> int:
    word = word.strip()
    if word.isdigit():
        return int(word)
    if word in _NUMBERS:
        return _NUMBERS[word]
    return sum(_CN_NUM.get(ch, 0) for ch in word) or 1


def names_time(text: str) -> bool:
    """Whether ``text`` may name a time (cheap; never False where :func:`parse_time_expression` finds one)."""
    return _may_name_time(_lower(text))


def _lower(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()  # as analysis.normalise: full-width digits count


def _may_name_time(low: str) -> bool:
    """Whether lower-cased ``low`` holds a time character, a run of a-z that is a time word, or four digits in a
    row (what ``re.findall(r"[a-z]+|\\d{4}", low)`` would show), without importing :mod:`re`."""
    if low.isascii():
        letters, digits = low.translate(_NOT_LETTER), low.translate(_NOT_DIGIT)
    elif any(char in low for char in _TIME_CHARS):
        return True
    else:
        letters = "".join(c if "a" <= c <= "z" else " " for c in low)
        digits = "".join(c if c.isdecimal() else " " for c in low)
    return not _TIME_WORDS.isdisjoint(letters.split()) or any(len(run) >= 4 for run in digits.split())


def parse_time_expression(text: str, now: datetime) -> TimeRange | None:
    """The period a question names (``"in May"``, ``"last week"``, ``"上周"``, ``"2023 年"``, ``"yesterday"``,
    ``"8 May, 2023"``), relative to ``now``; None when it names none. The most specific expression wins."""
    low = _lower(text)
    return _period(low, now) if _may_name_time(low) else None


def _period(low: str, now: datetime) -> TimeRange | None:
    """:func:`parse_time_expression` of lower-cased, NFKC-normalised text, without the cheap check first."""
    import re  # here: most questions name no time, and the check before needs no pattern

    now = now.astimezone(UTC)
    today = _day(now)
    found: list[tuple[timedelta, TimeRange]] = []

    def add(start: datetime, end: datetime, span: str) -> None:
        found.append((end - start, TimeRange(start=start, end=end, text=span)))

    for m in re.finditer(r"\b(\d{4})-(\d{1,2})(?:-(\d{1,2}))?\b", low):
        year, month = int(m.group(1)), int(m.group(2))
        if 1 <= month <= 12 and 1900 < year < 2200:
            day = _valid_day(year, month, int(m.group(3))) if m.group(3) else None
            if day is not None:
                add(day, day + timedelta(days=1), m.group())
            elif not m.group(3):
                add(*_month_range(year, month), m.group())
    for m in re.finditer(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:\s*,?\s*{_YEAR})?\b", low):
        month = _MONTHS[m.group(2)]
        year = int(m.group(3)) if m.group(3) else _latest_month(month, now)
        day = _valid_day(year, month, int(m.group(1)))
        if day is not None:
            add(day, day + timedelta(days=1), m.group())
    for m in re.finditer(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:\s*,?\s*{_YEAR})?", low):
        month = _MONTHS[m.group(1)]
        year = int(m.group(3)) if m.group(3) else _latest_month(month, now)
        day = _valid_day(year, month, int(m.group(2)))
        if day is not None and not (m.group(1) == "may" and not m.group(3)):
            add(day, day + timedelta(days=1), m.group())
    for m in re.finditer(rf"(?:\b(in|during|since|of|early|late|mid|last|this|by|until|before|after)\s+)?"
                         rf"\b{_MONTH}(?:\s*,?\s*{_YEAR})?\b", low):
        word = m.group(2)
        if word in ("may", "march", "mar") and not (m.group(1) or m.group(3)):
            continue  # "may I", "march on": a month only with a preposition or a year
        month = _MONTHS[word]
        if m.group(3):
            year = int(m.group(3))
        elif m.group(1) == "last" and month >= now.month:
            year = now.year - 1
        elif m.group(1) == "this":
            year = now.year
        else:
            year = _latest_month(month, now)
        add(*_month_range(year, month), m.group())
    for m in re.finditer(r"((?:19|20)\d{2})\s*年\s*(?:(\d{1,2})\s*月\s*(?:(\d{1,2})\s*[日号])?)?", low):
        year = int(m.group(1))
        if m.group(2) and 1 <= int(m.group(2)) <= 12:
            if m.group(3) and (day := _valid_day(year, int(m.group(2)), int(m.group(3)))) is not None:
                add(day, day + timedelta(days=1), m.group())
            else:
                add(*_month_range(year, int(m.group(2))), m.group())
        else:
            add(*_year_range(year), m.group())
    for m in re.finditer(r"(?<![\d年])(\d{1,2})\s*月(?:\s*(\d{1,2})\s*[日号])?", low):
        month = int(m.group(1))
        if 1 <= month <= 12:
            year = _latest_month(month, now)
            if m.group(2) and (day := _valid_day(year, month, int(m.group(2)))) is not None:
                add(day, day + timedelta(days=1), m.group())
            else:
                add(*_month_range(year, month), m.group())
    for m in re.finditer(rf"\b(?:in|during|since|of|by|until|before|after|year)?\s*\b{_YEAR}\b(?!\s*[-年])", low):
        add(*_year_range(int(m.group(1))), m.group().strip())
    week_start = today - timedelta(days=today.weekday())
    month_start = today.replace(day=1)
    relative: list[tuple[str, datetime, datetime]] = [
        (r"\bday before yesterday\b|前天", today - timedelta(days=2), today - timedelta(days=1)),
        (r"\byesterday\b|昨天|昨日", today - timedelta(days=1), today),
        (r"\b(?:today|tonight|this morning)\b|今天|今日", today, today + timedelta(days=1)),
        (r"\blast week\b|\bprevious week\b|上周|上星期|上个星期|上礼拜|上個星期",
         week_start - timedelta(days=7), week_start),
        (r"\bthis week\b|本周|这周|這週|这个星期|这星期", week_start, today + timedelta(days=1)),
        (r"\blast weekend\b|上周末", week_start - timedelta(days=2), week_start),
        (r"\bthis weekend\b|这个周末|本周末|周末", week_start + timedelta(days=5), week_start + timedelta(days=7)),
        (r"\blast month\b|\bprevious month\b|上个月|上月|上個月",
         (month_start - timedelta(days=1)).replace(day=1), month_start),
        (r"\bthis month\b|本月|这个月|這個月", month_start, today + timedelta(days=1)),
        (r"\blast year\b|\bprevious year\b|去年", *_year_range(now.year - 1)),
        (r"\bthis year\b|今年", datetime(now.year, 1, 1, tzinfo=UTC), today + timedelta(days=1)),
        (r"前年", *_year_range(now.year - 2)),
        (r"\brecently\b|\blately\b|\bthese days\b|最近|近来|近期",
         today - timedelta(days=30), today + timedelta(days=1)),
    ]
    for pattern, start, end in relative:
        hit = re.search(pattern, low)
        if hit:
            add(start, end, hit.group())
    for m in re.finditer(rf"\b{_NUM}\s+(day|week|month|year)s?\s+ago\b", low):
        _ago(_count(m.group(1)), m.group(2), today, m.group(), add)
    for m in re.finditer(r"([\d一两二三四五六七八九十几]+)\s*(天|周|星期|个月|個月|月|年)[之以]?前", low):
        unit = {"天": "day", "周": "week", "星期": "week", "个月": "month", "個月": "month", "月": "month",
                "年": "year"}[m.group(2)]
        _ago(_count(m.group(1)), unit, today, m.group(), add)
    for m in re.finditer(r"\blast (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", low):
        back = (today.weekday() - _WEEKDAYS[m.group(1)]) % 7 or 7
        day = today - timedelta(days=back)
        add(day, day + timedelta(days=1), m.group())
    if not found:
        return None
    found.sort(key=lambda item: item[0])
    return found[0][1]


def _ago(n: int, unit: str, today: datetime, span: str, add: Any) -> None:
    days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * n
    slack = {"day": 1, "week": 4, "month": 15, "year": 120}[unit]
    centre = today - timedelta(days=days)
    add(centre - timedelta(days=slack), centre + timedelta(days=slack + 1), span)
