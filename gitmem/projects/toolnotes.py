"""Notes learned from a session's tool calls for the project memory.

Commands that built, tested or linted successfully, ports, environment variable names (never their values) and
error lines that came back at least twice, each as one dated line in the project file's Notes section.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

#: notes kept in a project file (oldest dropped first)
MAX_NOTES = 40

# -- learning from tool output -------------------------------------------------------------------------------------
#: what may come before the tool in a command: a runner (``uv run``, ``npx``, ``python -m``, …) or a path
_RUNNER = (r"^(?:(?:uv|poetry|pdm|pipenv|hatch|rye)\s+run\s+|npx\s+|bunx\s+|pnpm\s+(?:exec|dlx)\s+|"
           r"yarn\s+dlx\s+|python3?\s+-m\s+|bundle\s+exec\s+|time\s+|\S*/)?")
_TEST = (r"\b(pytest|py\.test|(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?test\S*|cargo\s+test|go\s+test|"
         r"make\s+test\S*|just\s+test\S*|jest|vitest|mvn\S*\s+test|gradlew?\s+test|rspec|tox|nox|"
         r"mix\s+test|dotnet\s+test|rake\s+test|unittest|playwright\s+test)\b")
_BUILD = (r"\b(cargo\s+build|go\s+build|(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?build\S*|make(?:\s+build\S*)?$|"
          r"make\s+build\S*|just\s+build|tsc(?!\s+--noEmit)|mvn\S*\s+(?:package|install|compile)|"
          r"gradlew?\s+build|python\s+-m\s+build|docker\s+build|dotnet\s+build|uv\s+build|poetry\s+build)\b")
_LINT = (r"\b(ruff|eslint|flake8|pylint|mypy|pyright|black\s+--check|prettier\s+--check|cargo\s+clippy|"
         r"cargo\s+fmt\s+--check|go\s+vet|golangci-lint|gofmt|(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?"
         r"(?:lint|typecheck|check)\S*|make\s+(?:lint|check)\S*|just\s+lint|tsc\s+--noEmit|rubocop|"
         r"shellcheck|biome)\b")
_FAILURE = (r"(\bFAILED\b|\b[A-Z]\w*(?:Error|Exception):|\bFAIL\b|Traceback \(most recent call last\)|"
            r"npm ERR!|\bpanic:|"
            r"\berror(\[E\d+\])?:|\bError:|\b[1-9]\d* (failed|errors?)\b|[Ee]xit code:? [1-9]|"
            r"\"exitCode\":\s*[1-9]|\"is_error\":\s*true|\"interrupted\":\s*true|command not found|"
            r"No such file or directory)")
_PORTS = (
    r"\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::\]|\[::1\]):(\d{2,5})\b",
    r"--port[= ](\d{2,5})\b",
    r"\bPORT=(\d{2,5})\b",
    r"(?i)\blistening on (?:port |https?://[\w.\[\]:-]*?:|[\w.]*:)?(\d{2,5})\b",
    r"\b-p\s+(\d{2,5})(?::\d{2,5})?\b",
)
_ENV = (
    r"\$\{?([A-Z][A-Z0-9_]{2,})\b",
    r"os\.environ\[\\?[\"']([A-Za-z_][A-Za-z0-9_]*)",
    r"os\.(?:environ\.get|getenv)\(\\?[\"']([A-Za-z_][A-Za-z0-9_]*)",
    r"process\.env\.([A-Za-z_][A-Za-z0-9_]*)",
    r"process\.env\[\\?[\"']([A-Za-z_][A-Za-z0-9_]*)",
    r"env::var\(\\?\"([A-Za-z_][A-Za-z0-9_]*)",
    r"os\.Getenv\(\\?\"([A-Za-z_][A-Za-z0-9_]*)",
    r"ENV\[\\?[\"']([A-Za-z_][A-Za-z0-9_]*)",
    r"(?:^|&&\s*|;\s*|\bexport\s+)([A-Z][A-Z0-9_]{2,})=(?!=)",
)
_COMMON_ENV = frozenset({"PATH", "HOME", "PWD", "OLDPWD", "USER", "SHELL", "TERM", "LANG", "TMPDIR", "HOSTNAME",
                         "IFS", "PS1", "LOGNAME", "DISPLAY", "EDITOR", "VISUAL", "PAGER", "LC_ALL", "REDACTED"})
_ERROR_LINE = (r"^\s*(?:E\s+)?((?:[A-Z]\w*(?:Error|Exception)\b|error(?:\[\w+\])?:|ERROR\b|FAILED\b|"
               r"fatal:|panic:|npm ERR!|Traceback \(most).{0,200})")
MAX_NOTE_CHARS = 200


def _command_of(record: dict[str, Any]) -> str:
    text = str(record.get("input", ""))
    with contextlib.suppress(ValueError, RecursionError):
        data = json.loads(text)
        if isinstance(data, dict) and isinstance(data.get("command"), str):
            return str(data["command"])
    match = re.search(r'"command":"((?:[^"\\]|\\.)*)', text)
    if match:
        with contextlib.suppress(ValueError):
            return str(json.loads(f'"{match.group(1)}"'))
        return match.group(1)
    return text if not text.startswith("{") else ""


def _output_lines(record: dict[str, Any]) -> list[str]:
    text = str(record.get("output", ""))
    with contextlib.suppress(ValueError, RecursionError):
        data = json.loads(text)
        if isinstance(data, dict):
            text = "\n".join(str(v) for v in data.values() if isinstance(v, str))
        elif isinstance(data, str):
            text = data
    return text.replace("\\n", "\n").splitlines()


def _segments(command: str) -> Iterator[str]:
    for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", command):
        part = part.strip()
        if part and not part.startswith(("cd ", "echo ", "export ", "source ", ". ")):
            yield re.sub(r"^(?:[A-Z][A-Z0-9_]*=\S*\s+)+", "", part)


def learn_notes(records: Iterable[dict[str, Any]]) -> list[str]:
    """Notes from one session's observations: successful build/test/lint commands, ports, environment
    variable names and error lines seen at least twice. Oldest first; deduplicated."""
    notes: dict[str, str] = {}
    errors: Counter[str] = Counter()
    ports: dict[str, str] = {}
    env_names: list[str] = []
    posts = [r for r in records if r.get("phase", "post") == "post"]
    for record in posts:
        tool = str(record.get("tool", ""))
        output = str(record.get("output", ""))
        command = _command_of(record) if tool == "Bash" else ""
        if command and not re.search(_FAILURE, output.replace("\\n", "\n")):
            for segment in _segments(command):
                for kind, pattern in (("Tests pass with", _TEST), ("Builds with", _BUILD), ("Lint/check passes with",
                                                                                             _LINT)):
                    if re.match(_RUNNER + pattern, segment):
                        cmd = " ".join(segment.split())[:120]
                        notes.setdefault(f"cmd:{cmd}", f"{kind} `{cmd}`")
                        break
        blob = f"{command or record.get('input', '')}\n{output}"
        for pattern in _PORTS:
            for match in re.finditer(pattern, blob):
                port = match.group(1)
                if 1 <= int(port) <= 65535 and port not in ports:
                    ports[port] = " ".join(match.group(0).split())[:60]
        for pattern in _ENV:
            for match in re.finditer(pattern, blob):
                name = match.group(1)
                if name not in _COMMON_ENV and name not in env_names and not name.startswith("REDACTED"):
                    env_names.append(name)
        seen_here: set[str] = set()
        for line in _output_lines(record):
            error = re.match(_ERROR_LINE, line)
            if error:
                key = re.sub(r"0x[0-9a-f]+", "0x…", " ".join(error.group(1).split()))[:160]
                if key not in seen_here:
                    seen_here.add(key)
                    errors[key] += 1
    for port, where in ports.items():
        notes.setdefault(f"port:{port}", f"Port {port} in use (`{where}`)")
    if env_names:
        for name in env_names[:15]:
            notes.setdefault(f"env:{name}", f"Uses environment variable `{name}`")
    for line, count in errors.most_common(5):
        if count >= 2:
            notes.setdefault(f"err:{line}", f"Recurring error ({count}×): {line}")
    return [text.replace("\n", " ")[:MAX_NOTE_CHARS] for text in notes.values()]


def note_key(text: str) -> str:
    """What makes two notes the same note: the text without its date (and a recurring error's count), in lower
    case with its spaces collapsed. :func:`merge_notes` and the sync merge of project pages both dedupe on it."""
    text = re.sub(r"^\d{4}-\d\d-\d\d: ", "", text.strip())
    text = re.sub(r"^Recurring error \(\d+×\): ", "Recurring error: ", text)
    return " ".join(text.lower().split())


def merge_notes(section: str, new: list[str], date: str, limit: int = MAX_NOTES) -> str:
    """New notes first (dated), older ones after them without duplicates; at most ``limit`` bullets. Lines
    that are not bullets (written by hand) stay at the top."""
    free = [ln for ln in section.splitlines() if ln.strip() and not ln.lstrip().startswith("- ")]
    old = [ln.strip()[2:] for ln in section.splitlines() if ln.lstrip().startswith("- ") and "(none yet)" not in ln]
    merged: list[str] = []
    keys: set[str] = set()
    for text in [f"{date}: {n}" for n in reversed(new)] + old:
        key = note_key(text)
        if key not in keys:
            keys.add(key)
            merged.append(text)
    return "\n".join(free + [f"- {t}" for t in merged[:limit]]) or "- (none yet)"
