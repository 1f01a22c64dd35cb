"""Knowledge capture: decisions, preferences, constraints and corrections from a session, as memories.

The rules path (no model needed):

1. the user's messages of a Claude Code transcript (JSONL; ``message.content`` is a string or a list of blocks,
   of which only ``text`` blocks count; meta messages, slash-command echoes and system reminders are skipped);
2. split into sentences (``. ! ?`` and ``。！？``, new lines), and these into clauses at ``;`` and ``；``: clauses
   next to each other that are all rules stay one statement ("Never commit to main; always open a PR"), a clause
   that is not (thanks, a question, a one-off) is left out;
3. a trigger pre-filter in English and Chinese decides the category (:data:`TRIGGERS`, checked in the order
   correction, decision, preference, constraint), and noise is dropped: questions, greetings and thanks, praise
   ("I like it"), one-off requests ("for now", 这次), fragments under three words and sentences over 300 characters;
4. each candidate becomes an actionable statement (lead words dropped, "we decided to X" → "X", ended with one
   full stop) with a category and an importance (:data:`IMPORTANCE`);
5. dedup against the repository (the few memories search returns, or every active memory of the project when
   there is no index) by token cosine similarity (:mod:`gitmem.learn.dedup`): > 0.9 is a duplicate (skipped),
   0.8–0.9 merges (the old memory is refreshed and keeps the higher importance); a candidate that *conflicts* with
   an older correction, decision, preference or constraint on a value (opposite polarity, a swapped choice, other
   numbers, one word swapped in otherwise the same sentence) supersedes it whatever their categories: the newest
   statement holds, where the old one held, and the old one is deprecated with ``superseded_by``.

A capture is one commit (new, merged and superseded memories). A new memory's id is the slug of its text and a
suffix derived from the text and the session, so a dry run shows the ids the commit uses; the session is
``session`` or else the transcript's own ``sessionId``.

When ``local/learning.toml`` configures a model command (:mod:`gitmem.learn.modelreview`), step 4's candidates are
refined by it before step 5; a failed or invalid answer leaves the rules' result.

The prompts the hook queued as corrections in ``local/candidates.jsonl`` are read as a transcript's messages are
(steps 2–5): a correction that says how something is or should be becomes a ``correction`` memory (importance 4),
its lead ("no, that's wrong:", 不对) dropped; one that reports what went wrong this time ("the offset is off by one
on page 2, please fix it", 第二页还是少了一条数据) is a task, not a rule. How far that file was read is kept in
``local/capture-state.json``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitmem.files.atomic import atomic_write
from gitmem.learn.dedup import MERGE_ABOVE, SKIP_ABOVE, compare, fresh_id, similar

# contradicts and similarity are re-exported (``x as x``): the tests compare texts as capture does
from gitmem.learn.dedup import contradicts as contradicts
from gitmem.store import document as docs
from gitmem.store.document import Memory
from gitmem.store.memories import MemoryRepo
from gitmem.text import scripts
from gitmem.text.directives import CORRECTION_OPENING
from gitmem.text.overlap import similarity as similarity
from gitmem.text.records import replace

MAX_CHARS = 300
STATE_FILE = "capture-state.json"
#: transcripts whose read position is remembered (oldest forgotten first)
MAX_TRANSCRIPTS = 200

IMPORTANCE = {"constraint": 4, "decision": 4, "correction": 4, "preference": 3}
TYPES = {"constraint": "feedback", "correction": "feedback", "preference": "feedback", "decision": "project"}

_CJK = scripts.CJK
# a Chinese sentence keeps its end mark (a question keeps its ？, which says it asks)
_SPLIT = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|[\n\r]+")
#: after a run of semicolons (the pieces, joined, give the sentence back unchanged)
_CLAUSE = re.compile(r"(?<=[;；])(?![;；])")
#: a statement that ends already: a full stop, "!", "?" or "…" (then maybe closing quotes), or a closing bracket
_ENDED = re.compile(r"(?:[.!?。！？…][\"'”’」』)）\]]*|[)）\]])$")
#: what may stand around a statement but not before its full stop ("main;." "main,." "main -.")
_LOOSE = " \t,，、:：;；—–-"
TRIGGERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("correction", re.compile(
        r"^(?:no|nope|wrong)\s*[,，.!:]|that'?s\s+(?:wrong|not\s+(?:right|correct|what\s+i)|incorrect)|"
        r"this\s+is\s+(?:wrong|incorrect|not\s+right)|you(?:'re|\s+are)\s+wrong|\bactually,?\s+(?:it|you|we|that|"
        r"this)\s+should\b|\bshould\s+(?:be|have\s+been)\b.+\binstead\b|不对|错了|搞错|不是这样|应该是|改成|改为",
        re.IGNORECASE)),
    ("decision", re.compile(
        r"\b(?:decided|decide\s+to|we(?:'ll|\s+will)\s+(?:go\s+with|use)|chose|choose\s+to|switch(?:ed)?\s+to|"
        r"migrat(?:ed|e|ing)\s+(?:\w+\s+)?to|went\s+with|going\s+with|settled\s+on|opted\s+for|replac(?:ed|e)\s+"
        r"\S+\s+with|drop(?:ped)?\s+\S+\s+(?:for|in\s+favou?r\s+of)|standardi[sz]e\s+on|agreed\s+(?:to|on))\b|"
        r"决定|选择了|选定|采用|放弃|改用|选用|定下来|统一用", re.IGNORECASE)),
    ("preference", re.compile(
        r"\b(?:i|we)\s+(?:really\s+|generally\s+|usually\s+|always\s+)?(?:prefer|like|love|favou?r|tend\s+to|"
        r"would\s+rather|'d\s+rather)\b|\bprefer\b|\b(?:don'?t|do\s+not)\s+use\b|\bavoid\b|"
        r"我们?(?:比较|更|一般|通常|还是)?(?:喜欢|习惯|倾向于?)|偏好|不要用|别用|不喜欢", re.IGNORECASE)),
    ("constraint", re.compile(
        r"\b(?:must|mustn'?t|never|always|cannot|can'?t\s+(?:use|be|have|touch|exceed|change|call|push|commit|"
        r"deploy|merge|modify)|(?:is|are)\s+not\s+allowed|not\s+allowed|limit(?:ed)?\s+(?:\w+\s+){0,3}to|at\s+most|"
        r"no\s+more\s+than|at\s+least|is\s+required|are\s+required|only\s+ever|forbidden)\b|"
        r"必须|不能|限制|禁止|不允许|不得|至少|最多|只能|务必|一律|不准|不许", re.IGNORECASE)),
)
_NOISE = re.compile(
    r"\b(?:never\s*mind|no\s+(?:problem|worries)|don'?t\s+(?:worry|bother)|i\s+(?:like|love)\s+(?:it|this|that|"
    r"these|those|the\s+way|how|what)|must\s+be\s+(?:nice|tired|hard|fun)|right\s+now|this\s+time|for\s+now|"
    r"just\s+this\s+once|never\s+(?:thought|knew|seen|heard|expected|said|mind)|can'?t\s+wait|can'?t\s+believe)\b|"
    r"这次|这一次|暂时|先这样|没关系|不要紧|不用谢|别人|"
    # epistemic "must" ("we must have missed", "must be close"): a guess, not a rule
    r"\b(?:must|might|may)\s+have\s+(?:been\s+)?\w+(?:ed|en|t)\b|\bmust\s+be\s+(?:close|nice|tired|hard|fun|it|that|"
    r"the|a|an|so|really|getting|somewhere|wrong\s+with)\b|"
    # bound to a moment: a one-off, not a standing rule
    r"\b(?:today|tonight|tomorrow|yesterday|this\s+(?:morning|afternoon|evening|week)|after\s+lunch|later\s+today|"
    r"in\s+(?:a|an|\w+)\s+(?:minutes?|hours?))\b|今天|明天|昨天|今晚|待会|一会儿|稍后", re.IGNORECASE)
#: "always"/"never" describing a third party ("the tests always take forever") rather than prescribing
_DESCRIPTIVE = re.compile(r"^(?:the|this|that|these|those|it|its|he|she|they|my|our|his|her|their)\b[^,.;:]{0,60}?"
                          r"\b(?:always|never)\b", re.IGNORECASE)
_PRESCRIPTIVE = re.compile(r"\b(?:must|should|shall|have\s+to|need\s+to|required)\b", re.IGNORECASE)
#: how a correction opens ("no, that's wrong:", 不对，): dropped from what is stored, where it refers to nothing
_CORRECTION_LEAD = re.compile(rf"^(?:{CORRECTION_OPENING})(?:吧|啊|哦)?\s*[,，.。!！:：;；-]*\s*", re.IGNORECASE)
#: a correction that says how things are or should be (a standing correction), as against one that reports what
#: went wrong this time ("the offset is off by one on page 2", 第二页还是少了一条数据): that one is a task
_NORMATIVE = re.compile(
    r"\b(?:should|shall|must|need(?:s)?\s+to|has\s+to|have\s+to|supposed\s+to|use|using|instead|rather\s+than|"
    r"never|always|don'?t|do\s+not|not\s+\S+\s*,\s*(?:but|it'?s)|is\s+\S+(?:\s+\S+)?\s*,\s*not)\b|"
    r"应该|应当|必须|要用|不要|别|改成|改为|换成|而不是|才对|统一|一律|用\S+", re.IGNORECASE)
#: a request to fix or look at something now ("please fix it", 你再看看): what a task says, not a rule
_FIX_REQUEST = re.compile(
    r"\b(?:please\s+(?:fix|check|look|try|rerun|run)|fix\s+(?:it|this|that)|try\s+again|rerun|look\s+again|"
    r"still\s+(?:fails?|broken|wrong|missing|off|doesn'?t|does\s+not|not))\b|"
    r"再看看|再试|再跑|修一下|修复一下|帮我|还是(?:少|多|错|不|没)", re.IGNORECASE)
_QUESTION = re.compile(
    r"[?？]\s*$|(?:吗|呢|么)\s*$|^(?:what|why|how|when|where|which|who|whom|whose|can\s+you|could\s+you|would\s+you|"
    r"will\s+you|do\s+you|did\s+you|does|is\s+(?:it|this|that|there)|are\s+(?:you|we|there)|should\s+(?:i|we))\b|"
    r"^(?:为什么|怎么|什么|哪|是否|能不能|可不可以|要不要)", re.IGNORECASE)
_LEAD = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well|also|and|but|btw|by\s+the\s+way|um+|hmm+|alright|right|note|remember|important|"
    r"please|fyi|just\s+so\s+you\s+know|from\s+now\s+on|going\s+forward|no|nope|actually|thanks?|thank\s+you|"
    r"great|cool|nice|perfect|awesome|sure|yes|yep|hi|hello|hey|lgtm)\s*[,:!-]?\s+)+",
    re.IGNORECASE)
_LEAD_CN = re.compile(r"^(?:(?:好的|那|嗯|另外|还有|记住|注意|请|以后|今后|不对|错了)\s*[，,：:]?\s*)+")
_DECIDED = re.compile(r"^(?:we|i)\s*(?:'ve|\s+have|\s+had)?\s+(?:finally\s+)?(?:decided|agreed|chose)\s+"
                      r"(?:(?:that\s+)?we(?:'ll|\s+will|\s+should)?\s+|to\s+)", re.IGNORECASE)
_WORD_EN = re.compile(r"[A-Za-z]+")


# -- reading --------------------------------------------------------------------------------------------
def transcript_texts(path: Path, skip: int = 0, seen: list[int] | None = None) -> Iterator[str]:
    """The text of the user's messages in a Claude Code transcript, in order, from line ``skip`` on. ``seen``,
    when given, receives the number of complete lines read (where the next run can start). Anything but a regular
    file (a FIFO, ``/dev/zero``: a hook's input names the path) has no messages: reading one could block or never
    end."""
    return (text for text, _session in transcript_messages(path, skip, seen))


def looks_like_transcript(path: Path, lines: int = 50) -> bool:
    """Whether ``path`` may be a Claude Code transcript: empty, or one of its first ``lines`` lines is a JSON
    object (a transcript's records). A file of something else would be read as holding no message at all."""
    import stat

    if not stat.S_ISREG(path.stat().st_mode):
        return False
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        read = 0
        for read, line in enumerate(fh, 1):
            if read > lines:
                return False
            try:
                if isinstance(json.loads(line), dict):
                    return True
            except (ValueError, RecursionError):
                continue
    return read == 0


def transcript_messages(path: Path, skip: int = 0, seen: list[int] | None = None) -> Iterator[tuple[str, str]]:
    """:func:`transcript_texts` with the session of each message: its record's ``sessionId`` ("" when absent)."""
    import stat

    if not stat.S_ISREG(path.stat().st_mode):  # before opening: opening a FIFO waits for a writer
        return
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh):
            if not line.endswith("\n"):
                break  # still being written
            if seen is not None:
                seen[:] = [number + 1]
            if number < skip:
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if not isinstance(record, dict) or record.get("isMeta") or record.get("type") not in ("user", None):
                continue
            message = record.get("message")
            if not isinstance(message, dict) or message.get("role") != "user":
                continue
            content = message.get("content")
            blocks: Iterable[Any] = [content] if isinstance(content, str) else content if isinstance(content, list) \
                else []
            session = record.get("sessionId")
            for block in blocks:
                text = block if isinstance(block, str) else block.get("text") if isinstance(block, dict) and \
                    block.get("type") == "text" else None
                if not isinstance(text, str):
                    continue
                text = re.sub(r"<system-reminder>.*?</system-reminder>", " ", text, flags=re.DOTALL)
                if re.match(r"\s*<(?:command-|local-command-)", text):
                    continue
                if text.strip():
                    yield text, session if isinstance(session, str) else ""


# a fenced code block, closed or running to the end of the message: code and its comments ("# never call this in
# prod") are what the code does, not what the user asks
_FENCE = re.compile(r"(?ms)^[ \t]*(`{3,}|~{3,}).*?(?:^[ \t]*\1[^\n]*$|\Z)")


_POINTS_BACK = re.compile(r"(?i)^(?:(?:it|this|that|they|these|those)\b|它)")


def sentences(text: str) -> list[str]:
    """The sentences of a message outside its fenced code blocks (list markers and quotes around them dropped); a
    ``;`` does not end one."""
    return [bare for s in _SPLIT.split(_FENCE.sub("\n", text)) if s and (bare := _bare(s))]


def _bare(sentence: str) -> str:
    """``sentence`` without list markers and without the quotes around it; a quote inside it (``answer "done."``)
    and its closing mark stay."""
    text = sentence.strip(" \t-*>")
    for quote in "\"'":
        if len(text) >= 2 and text[0] == quote == text[-1]:
            text = text[1:-1].strip(" \t")
        elif text.count(quote) % 2:  # one left over by the split, at an end; an apostrophe inside a word stays
            text = text.strip(quote).strip(" \t")
    return text


def clauses(sentence: str) -> list[str]:
    """The clauses of a sentence, each with the semicolons that end it (``"".join`` gives the sentence back)."""
    return [c for c in _CLAUSE.split(sentence) if c]


# -- the rules ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Candidate:
    text: str
    category: str
    importance: int
    sentence: str


def _too_short(sentence: str) -> bool:
    cjk = len(re.findall(rf"[{_CJK}]", sentence))
    return cjk < 4 and len(_WORD_EN.findall(sentence)) + cjk < 3


def classify(sentence: str) -> str | None:
    """The category of a sentence that should become a memory, or None for noise."""
    raw = " ".join(sentence.split())
    text = _LEAD_CN.sub("", _LEAD.sub("", raw))
    if not text or len(raw) > MAX_CHARS or _too_short(text) or _QUESTION.search(text) or _NOISE.search(text):
        return None
    for category, pattern in TRIGGERS:
        if pattern.search(raw):
            if category == "constraint" and _DESCRIPTIVE.search(text) and not _PRESCRIPTIVE.search(text):
                return None
            if category == "correction":
                rest = _CORRECTION_LEAD.sub("", text)
                if not _NORMATIVE.search(rest) or (_FIX_REQUEST.search(rest) and not _PRESCRIPTIVE.search(rest)):
                    return None  # a report of what went wrong this time, for the agent to fix: not a rule
            return category
    return None




def actionable(sentence: str, category: str) -> str:
    """The sentence as a statement to act on: lead words dropped, "we decided to X" → "X", capitalised, ended."""
    text = " ".join(sentence.split())
    text = _LEAD_CN.sub("", _LEAD.sub("", text))
    if category == "decision":
        text = _DECIDED.sub("", text)
    if category == "correction":
        text = _CORRECTION_LEAD.sub("", text)
    text = text.strip(_LOOSE)
    if not text:
        text = " ".join(sentence.split()).strip(_LOOSE)
    text = text[:1].upper() + text[1:]
    if text and not _ENDED.search(text):
        text += "。" if re.search(rf"[{_CJK}]", text) else "."
    return text


def extract(text: str) -> list[Candidate]:
    """Candidates of one message, by rules alone: one per run of clauses that are all rules (a sentence whose
    clauses all are is kept whole; of "thanks; never push to main" only the rule is)."""
    order = [name for name, _ in TRIGGERS]
    found: list[Candidate] = []
    for sentence in sentences(text):
        pieces = clauses(sentence)
        runs: list[list[tuple[int, str, str]]] = [[]]
        for at, clause in enumerate(pieces):
            category = classify(clause.strip())
            if category is None:
                runs.append([])
            else:
                runs[-1].append((at, clause, category))
        for found_run in filter(None, runs):
            run = [(clause, category) for _at, clause, category in found_run]
            joined = "".join(clause for clause, _ in run).strip()
            if found_run[0][0] and _POINTS_BACK.match(joined):
                # "fix the bug in parseDate(); it must return UTC": the rule names its subject only in the
                # clause before it
                joined = "".join(pieces[:found_run[-1][0] + 1]).strip()
            # too long together: each clause on its own, as a single one would be
            parts = [(joined, [c for _, c in run])] if len(joined) <= MAX_CHARS else [(c.strip(), [k]) for c, k in run]
            for part, categories in parts:
                # the category first in the trigger order, as classify gives a sentence holding all the triggers
                category = min(categories, key=order.index)
                found.append(Candidate(actionable(part, category), category, IMPORTANCE[category], part))
    return found


# -- the pipeline ---------------------------------------------------------------------------------------
@dataclass
class CaptureResult:
    added: list[Memory] = field(default_factory=list)
    merged: list[Memory] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)
    commit: str = ""
    #: what the optional model did: off (not configured), ok, or why its answer was not used
    model: str = "off"

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "model": self.model,
                "added": [{"id": m.id, "text": m.text, "category": m.category, "importance": m.importance}
                          for m in self.added],
                "merged": [m.id for m in self.merged],
                "skipped": [{"text": t, "duplicate_of": d} for t, d in self.skipped],
                "superseded": [{"old": o, "new": n} for o, n in self.superseded]}

    def lines(self) -> list[str]:
        out = [f"+ [{m.category}, {m.importance}] {m.text}  ({m.id})" for m in self.added]
        out += [f"~ merged into {m.id}" for m in self.merged]
        out += [f"= duplicate of {d}: {t}" for t, d in self.skipped]
        out += [f"- {o} superseded by {n}" for o, n in self.superseded]
        return out or ["nothing to capture"]


def _redacted(repo: MemoryRepo, text: str) -> str:
    from gitmem.redact.engine import redact

    return redact(text, extra_patterns=repo.config.redaction.extra_patterns).text


def _read_candidates(repo_path: Path) -> tuple[list[dict[str, Any]], int]:
    state = _read_state(repo_path)
    path = repo_path / "local" / "candidates.jsonl"
    try:
        data = path.read_bytes()
    except OSError:
        return [], 0
    offset = int(state.get("candidates_offset", 0))
    if offset > len(data):
        offset = 0  # the file was replaced
    end = data.rfind(b"\n") + 1
    records: list[dict[str, Any]] = []
    for line in data[offset:end].splitlines():
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict) and record.get("kind") == "correction" and isinstance(record.get("text"), str):
            records.append(record)
    return records, max(end, offset)


def _read_state(repo_path: Path) -> dict[str, Any]:
    try:
        data = json.loads((repo_path / "local" / STATE_FILE).read_text("utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_state(repo_path: Path, state: dict[str, Any]) -> None:
    atomic_write(repo_path / "local" / STATE_FILE, json.dumps(state, sort_keys=True).encode("utf-8"))


def _onto_stored(stored: Memory, written: Memory) -> Memory | None:
    """What the capture commit writes over a memory file that exists: a merged memory keeps when it was created; a
    superseded one is the file as it is now, deprecated (it may have changed since it was read), or nothing when
    it is deprecated already."""
    if not written.deprecated:
        return replace(written, created=stored.created)
    if stored.deprecated:
        return None
    return replace(stored, deprecated=True, deprecated_reason=written.deprecated_reason,
                   superseded_by=written.superseded_by, updated=written.updated)


def capture(repo: MemoryRepo, *, transcript: Path | None = None, texts: Iterable[str] = (), session: str = "",
            project: str = "", candidates: bool = True, dry_run: bool = False,
            pool: list[Memory] | None = None, refine_with_model: bool = True) -> CaptureResult:
    """Capture memories from a transcript (and/or ``texts``) and the queued corrections, in one commit: the new
    memories, the merged ones, and the ones a newer statement supersedes (deprecated with ``superseded_by``). The
    session (``source_ref``, the commit's ``Gitmem-Session``) is ``session``, else each message's ``sessionId``.
    When ``local/learning.toml`` names a model command, the rule candidates from the transcript are refined by it
    (kept/dropped, rewritten, re-categorised); any failure of the model (timeout, invalid answer, budget) leaves
    the rules' result."""
    items: list[tuple[Candidate, str, str]] = []  # (candidate, project, session)
    read_to: list[int] = []
    key = str(transcript.resolve()) if transcript else ""
    done_lines = _read_state(repo.path).get("transcripts", {}).get(key, 0) if transcript else 0
    said = list(transcript_messages(transcript, int(done_lines), read_to)) if transcript else []
    if transcript is not None and read_to and read_to[0] < int(done_lines):  # a different, shorter file now
        said = list(transcript_messages(transcript, 0, read_to))
    given = session
    session = session or next((sess for _, sess in reversed(said) if sess), "")  # the latest: a resumed one's
    for text, sess in [*said, *((text, "") for text in texts)]:
        items.extend((c, project, given or sess or session) for c in extract(text))
    result = CaptureResult()
    if items and refine_with_model:
        from gitmem.learn.modelreview import refine

        result.model, refined = refine(repo.path, [(c.sentence, c.category) for c, _, _ in items])
        if result.model == "ok":
            changed = {r.index: r for r in refined}
            kept: list[tuple[Candidate, str, str]] = []
            for index, (cand, proj, sess) in enumerate(items):
                r = changed.get(index)
                if r is None:
                    kept.append((cand, proj, sess))
                elif r.keep:
                    kept.append((Candidate(r.text, r.category, r.importance, cand.sentence), proj, sess))
            items = kept
    offset = None
    if candidates:
        records, offset = _read_candidates(repo.path)
        for record in records:
            # read as a transcript's message is: the rule it states, not the whole prompt (a bug report with
            # "that's wrong" in it became a standing correction, and a prompt holding a correction and a decision
            # a third memory that superseded the decision)
            for cand in extract(str(record["text"])):
                items.append((cand, str(record.get("project") or project), str(record.get("session") or session)))
    # secrets out first: what is compared, reported (--json, --dry-run) and cut for the commit's body is redacted
    items = [(Candidate(_redacted(repo, cand.text), cand.category, cand.importance, _redacted(repo, cand.sentence)),
              proj, sess) for cand, proj, sess in items]
    batch: dict[str, Memory] = {}  # what the commit writes, by id (this capture's version of a stored memory)
    holder: dict[str, str] = {}  # a superseded id -> the id of the memory that holds now
    cache: dict[str, Any] = {}
    for cand, proj, sess in items:
        known = dict(batch)
        for memory in similar(repo, cand.text, proj, pool, cache):
            known.setdefault(memory.id, memory)
        same, replaced = compare(cand.text, [m for m in known.values() if not m.deprecated and m.id not in holder],
                                 IMPORTANCE)
        if same is not None and same[0] > SKIP_ABOVE:
            result.skipped.append((cand.text, same[1].id))
            winner = same[1]
        elif same is not None and same[0] >= MERGE_ABOVE:
            merged = replace(same[1], importance=max(same[1].importance, cand.importance), updated=docs.utcnow())
            batch[merged.id] = merged
            if merged.id not in {m.id for m in [*result.added, *result.merged]}:
                result.merged.append(merged)
            winner = merged
        else:
            # the newer statement holds where the one it replaces held (a global preference stays global)
            where = {"project": replaced[0].project, "scope": replaced[0].scope} if replaced else {"project": proj}
            fresh = docs.make_memory(cand.text, type=TYPES[cand.category], category=cand.category,
                                     importance=cand.importance, source="capture", source_ref=sess,
                                     tags=["captured"], **where)
            fresh = replace(fresh, id=fresh_id(repo, fresh.text, sess, batch))
            batch[fresh.id] = fresh
            result.added.append(fresh)
            winner = fresh
        for old in replaced:  # the user said otherwise since: the newest statement wins (or one said again)
            holder[old.id] = winner.id
            batch[old.id] = replace(old, deprecated=True, superseded_by=winner.id, updated=docs.utcnow(),
                                    deprecated_reason=f"superseded by a newer {winner.category}: {winner.id}")
    if dry_run:
        result.superseded = list(holder.items())
        return result
    if batch:
        label = session[:12] or (transcript.name if transcript else "corrections")
        live = [m for m in batch.values() if not m.deprecated]
        gone = [m for m in batch.values() if m.deprecated]
        result.commit, written = repo.commit_batch(
            list(batch.values()), subject=f"capture: {len(result.added)} new, {len(result.merged)} merged"
            f"{f', {len(gone)} superseded' if gone else ''} from {label}", op="extract",
            source=f"capture:{session}" if session else "capture",
            trailers={"Gitmem-Session": session} if session else None, merge=_onto_stored,
            body="\n".join([*(f"- [{m.category}] {m.text[:100]}" for m in live),
                            *(f"- superseded {m.id} by {m.superseded_by}" for m in gone)]))
        done = {m.id for m in written if m.deprecated}
        result.superseded = [(old, new) for old, new in holder.items() if old in done]
    state = _read_state(repo.path)
    if offset is not None:
        state["candidates_offset"] = offset
    if transcript is not None and read_to:
        stored = state.get("transcripts")
        transcripts: dict[str, Any] = stored if isinstance(stored, dict) else {}
        transcripts.pop(key, None)
        transcripts[key] = read_to[0]
        state["transcripts"] = dict(list(transcripts.items())[-MAX_TRANSCRIPTS:])
    _write_state(repo.path, state)
    return result
