"""What the observed tool calls show: the local observation log as per-session calls, and the behaviour patterns
those calls follow.

:func:`read_observations` reads ``local/observations.jsonl`` and its monthly archives (written by
:mod:`gitmem.store.local`); :func:`sessions_from` turns the records into each session's :class:`Call` list, counting a
call once although the hooks may log it twice (pre and post). A :class:`Detector` counts, in one session's calls,
how often a pattern had the chance to show (opportunities) and how often it did (support), and fires when both
clear its thresholds; :func:`detect` runs :data:`DETECTORS` over one session.

What a firing means over many sessions (confidence, decay, promotion) is :mod:`gitmem.learn.instincts`' concern. This
module only reads the log and looks at calls: it imports nothing from gitmem, so detectors are tested on
hand-built calls and need no memory repository.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


# -- observations ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Call:
    """One tool call of a session, reduced to what the detectors need."""

    tool: str
    path: str = ""
    command: str = ""
    output: str = ""
    time: str = ""
    project: str = ""

    @property
    def is_edit(self) -> bool:
        return self.tool in EDIT_TOOLS

    @property
    def failed(self) -> bool:
        """Whether the call failed: an error status, or (for a command that does more than read) an error in its
        output; `grep error: src`, `git log` of a commit titled "fix: error: …" print the word and fail nothing."""
        if _FAILED_STATUS.search(self.output):
            return True
        return not (self.tool == "Bash" and _READS.match(_first_command(self.command))) and \
            bool(_FAILED.search(self.output))


EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}
READ_TOOLS = {"Read", "NotebookRead"}
SEARCH_TOOLS = {"Grep", "Glob", "LS"}
_FIELD = re.compile(r'"(file_path|notebook_path|path|command)":"((?:[^"\\]|\\.)*)"')
_FAILED_STATUS = re.compile(r'"is_error":\s*true|exit code:?\s*[1-9]|"exit_code":\s*[1-9]|command not found',
                            re.IGNORECASE)
_FAILED = re.compile(r"not logged in|not authenticated|\bTraceback\b|\bFAILED\b|\berror:|No such file or directory",
                     re.IGNORECASE)
#: commands that only read and print (what they print may hold "error:" and means no failure)
_READS = re.compile(r"(?:rg|grep|egrep|ag|ack|fd|find|cat|head|tail|less|more|ls|echo|printf|wc|sort|uniq|jq|"
                    r"git\s+(?:log|show|diff|grep|blame|status|branch|tag))\b")
#: what may run a command: environment assignments and runners ("FOO=1 uv run pytest", "python -m pytest")
_RUNNER = re.compile(r"^(?:\w+=\S*\s+)*(?:(?:sudo|time|nice|exec|command)\s+)*"
                     r"(?:(?:python3?|py)\s+-m\s+|(?:uv|poetry|pipenv|pdm|hatch|rye)\s+run\s+|npx\s+|bunx\s+|"
                     r"(?:pnpm|yarn)\s+(?:exec|dlx)\s+|bundle\s+exec\s+)?")
_SEGMENTS = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")


def _commands(command: str) -> list[str]:
    """The commands a shell line runs, each without what runs it (``cd x && FOO=1 uv run pytest -q`` → ``cd x``,
    ``pytest -q``)."""
    return [_RUNNER.sub("", part.strip()) for part in _SEGMENTS.split(command.strip()) if part.strip()]


def _first_command(command: str) -> str:
    parts = _commands(command)
    return parts[0] if parts else ""


def _runs(pattern: re.Pattern[str], command: str) -> bool:
    """Whether ``command`` runs a tool ``pattern`` names (not only mentions it: ``pip install pytest-cov``,
    ``cat pytest.ini``)."""
    return any(pattern.match(part) for part in _commands(command))


def _fields(summary: str) -> dict[str, str]:
    """file_path/command of a tool input summary (valid JSON or JSON cut short by the 500-character limit)."""
    try:
        data = json.loads(summary)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        return {k: str(v) for k, v in data.items() if isinstance(v, str)}
    out: dict[str, str] = {}
    for key, value in _FIELD.findall(summary or ""):
        try:
            out.setdefault(key, json.loads(f'"{value}"'))
        except ValueError:
            out.setdefault(key, value)
    return out


def read_observations(local: Path, *, archives: bool = True) -> Iterator[dict[str, Any]]:
    """Every observation record (monthly archives first, then the live file); bad lines are skipped."""
    files: list[Path] = sorted((local / "observations").glob("*.jsonl")) if archives else []
    files.append(local / "observations.jsonl")
    for path in files:
        try:
            handle = path.open("r", encoding="utf-8", errors="replace")
        except OSError:
            continue
        with handle:
            for line in handle:
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if isinstance(record, dict) and record.get("session"):
                    yield record


def sessions_from(records: Iterable[Mapping[str, Any]]) -> dict[str, list[Call]]:
    """Tool calls per session, in order. A post record stands for its call; a pre record only when no post
    record with the same ``tool_use_id`` follows (the pre hook sees only Bash)."""
    raw: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        raw.setdefault(str(record["session"]), []).append(record)
    result: dict[str, list[Call]] = {}
    for session, items in raw.items():
        posted = {r.get("tool_use_id") for r in items if r.get("phase") == "post" and r.get("tool_use_id")}
        has_post = any(r.get("phase") == "post" for r in items)
        calls: list[Call] = []
        for r in items:
            if r.get("phase") == "pre" and has_post and (r.get("tool_use_id") in posted or not r.get("tool_use_id")):
                continue
            fields = _fields(str(r.get("input", "")))
            calls.append(Call(
                tool=str(r.get("tool", "")),
                path=fields.get("file_path") or fields.get("notebook_path") or fields.get("path") or "",
                command=" ".join(fields.get("command", "").split()), output=str(r.get("output", "")),
                time=str(r.get("time", "")), project=str(r.get("project", "")),
            ))
        result[session] = calls
    return result


# -- detectors ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Detection:
    pattern: str
    support: int
    opportunities: int
    note: str


@dataclass(frozen=True)
class Detector:
    pattern: str
    domain: str
    trigger: str
    action: str
    count: Callable[[list[Call]], tuple[int, int]]
    min_support: int = 2
    min_ratio: float = 0.6
    describe: str = "{support} of {opportunities}"

    def detect(self, calls: list[Call]) -> Detection | None:
        support, opportunities = self.count(calls)
        if support < self.min_support or not opportunities or support / opportunities < self.min_ratio:
            return None
        return Detection(self.pattern, support, opportunities,
                         self.describe.format(support=support, opportunities=opportunities))


_TEST = re.compile(r"\b(pytest|py\.test|tox|nox|unittest|npm (run )?test|yarn test|pnpm test|jest|vitest|"
                   r"go test|cargo test|mvn test|gradle test|make test|rspec|phpunit|ctest)\b")
_LINT = re.compile(r"\b(ruff|flake8|pylint|black|isort|mypy|eslint|prettier|gofmt|golangci-lint|cargo fmt|"
                   r"cargo clippy|rubocop|stylelint|biome|npm run lint|make lint|pre-commit)\b")
_SEARCH_CMD = re.compile(r"^(rg|grep|ag|ack|fd|find|git grep)\b")
_STATUS = re.compile(r"\bgit (status|diff)\b")
_COMMIT = re.compile(r"\bgit commit\b")
_MISSING = re.compile(r"command not found|not found in PATH|is not recognized as|not logged in|"
                      r"not authenticated|authentication required|please run .{0,20}(login|auth)|gh auth login",
                      re.IGNORECASE)
_CHECK = re.compile(r"^(which|command -v|type|where|hash)\s|\s--version\b|\s-v$|\bauth status\b|\bwhoami\b|"
                    r"\bversion$", re.IGNORECASE)
_CODE = re.compile(r"\.(py|pyi|js|jsx|ts|tsx|go|rs|java|kt|rb|php|c|cc|cpp|h|hpp|cs|swift|scala)$")


def _read_before_edit(calls: list[Call]) -> tuple[int, int]:
    read: set[str] = set()
    written: set[str] = set()
    support = opportunities = 0
    for call in calls:
        if call.tool in READ_TOOLS and call.path:
            read.add(call.path)
        elif call.is_edit and call.path and call.path not in written:
            written.add(call.path)
            if call.tool == "Write" and call.path not in read:
                continue  # a new file: nothing to read
            opportunities += 1
            support += call.path in read
    return support, opportunities


def _search_before_edit(calls: list[Call]) -> tuple[int, int]:
    """An edit of a file is supported when an earlier search (Grep/Glob, rg/grep/find) named that file in its
    input or its output: the agent looked for the code before changing it."""
    support = opportunities = 0
    searched: list[str] = []
    written: set[str] = set()
    for call in calls:
        if call.tool in SEARCH_TOOLS or (call.tool == "Bash" and _SEARCH_CMD.match(call.command)):
            searched.append(f"{call.command} {call.path} {call.output}")
        elif call.is_edit and call.path and call.path not in written:
            written.add(call.path)
            if call.tool == "Write" and not any(c.path == call.path for c in calls if c.tool in READ_TOOLS):
                continue  # a new file
            opportunities += 1
            name = call.path.rsplit("/", 1)[-1]
            support += any(name in text for text in searched)
    return support, opportunities


def _after_edit(pattern: re.Pattern[str]) -> Callable[[list[Call]], tuple[int, int]]:
    """Code edits open a period that a matching command closes (supported); a period still open at the end of
    the session is unsupported."""
    def count(calls: list[Call]) -> tuple[int, int]:
        support = opportunities = 0
        dirty = False
        for call in calls:
            if call.is_edit and _CODE.search(call.path):
                if not dirty:
                    opportunities += 1
                dirty = True
            elif call.tool == "Bash" and dirty and _runs(pattern, call.command):
                support += 1
                dirty = False
        return support, opportunities
    return count


def _status_before_commit(calls: list[Call]) -> tuple[int, int]:
    support = opportunities = 0
    checked = False
    for call in calls:
        if call.tool != "Bash":
            if call.is_edit:
                checked = False
            continue
        if _COMMIT.search(call.command):
            opportunities += 1
            support += checked
            checked = False
        elif _STATUS.search(call.command):
            checked = True
    return support, opportunities


def _check_after_missing(calls: list[Call]) -> tuple[int, int]:
    support = opportunities = 0
    for index, call in enumerate(calls):
        if call.tool == "Bash" and _MISSING.search(call.output):
            opportunities += 1
            following = [c for c in calls[index + 1:index + 4] if c.tool == "Bash"]
            support += any(_CHECK.search(c.command) for c in following)
    return support, opportunities


def _retry_unchanged(calls: list[Call]) -> tuple[int, int]:
    """(failed commands run again with nothing changed since, failed commands): an edit between the failure and
    the same command again is the fix being tried (fail, edit, re-run), not a blind retry."""
    failures = retries = 0
    failed: Call | None = None  # the last failed command, while nothing has been changed since
    for call in calls:
        if call.is_edit:
            failed = None
        elif call.tool == "Bash" and call.command:
            if failed is not None and call.command == failed.command:
                retries += 1
            failures += call.failed
            failed = call if call.failed else None
    return retries, failures


DETECTORS: tuple[Detector, ...] = (
    Detector("read-before-edit", "editing", "when editing an existing file", "Read the file before editing it.",
             _read_before_edit, min_support=2, min_ratio=0.6,
             describe="{support} of {opportunities} edited files were read first"),
    Detector("search-before-edit", "editing", "when about to change code",
             "Search the code base (grep/glob) for the relevant code before editing it.",
             _search_before_edit, min_support=2, min_ratio=0.4,
             describe="{support} of {opportunities} edited files were found by a search first"),
    Detector("test-after-edit", "testing", "after editing code",
             "Run the test suite (pytest, npm test, go test) after editing code.",
             _after_edit(_TEST), min_support=2, min_ratio=0.6,
             describe="{support} of {opportunities} rounds of code edits were followed by a test run"),
    Detector("lint-after-edit", "style", "after editing code",
             "Run the linter and formatter (ruff, eslint, prettier, gofmt) after editing code.", _after_edit(_LINT),
             min_support=2, min_ratio=0.6,
             describe="{support} of {opportunities} rounds of code edits were followed by lint/format"),
    Detector("status-before-commit", "git", "before making a git commit",
             "Check git status and the diff before committing.", _status_before_commit, min_support=1,
             min_ratio=0.75, describe="{support} of {opportunities} commits were preceded by git status/diff"),
    Detector("check-missing-cli", "environment", "when a command fails because a CLI is missing or not logged in",
             "Check that the tool is installed and logged in (which, --version, auth status) before retrying.",
             _check_after_missing, min_support=1, min_ratio=0.5,
             describe="{support} of {opportunities} missing-CLI/login failures were followed by a check"),
    Detector("no-blind-retry", "debugging", "when a command fails",
             "Read the error and change something before running a failed command again; do not retry it "
             "unchanged.", _retry_unchanged, min_support=2, min_ratio=0.3,
             describe="{support} unchanged retries of {opportunities} failed commands"),
)
BY_PATTERN = {d.pattern: d for d in DETECTORS}


def detect(calls: list[Call], detectors: Iterable[Detector] = DETECTORS) -> list[Detection]:
    """The patterns one session's calls show."""
    return [found for d in detectors if (found := d.detect(calls)) is not None]
