"""The memory repository's commit messages: a one-line subject, a body, then ``Gitmem-*`` trailers (``Gitmem-Op``,
``Gitmem-Source``, ``Gitmem-Id``…) that make the log an audit trail a program can read (``gitmem log --op``), and
one commit of that log as :class:`LogEntry`."""

from __future__ import annotations

from gitmem.text.lazyre import LazyPattern
from gitmem.text.records import Record

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a hook process that writes imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping

TRAILER = LazyPattern(r"^(Gitmem-[A-Za-z-]+):\s*(.*)$")


class LogEntry(Record):
    """One commit of the memory repository, with its gitmem trailers parsed."""

    sha: str
    time: int
    author: str
    subject: str
    body: str
    trailers: dict[str, list[str]]
    paths: tuple[str, ...] = ()

    @property
    def op(self) -> str:
        return (self.trailers.get("Gitmem-Op") or [""])[0]

    @property
    def source(self) -> str:
        return (self.trailers.get("Gitmem-Source") or [""])[0]

    @property
    def ids(self) -> list[str]:
        return self.trailers.get("Gitmem-Id", [])


def parse_trailers(message: str) -> dict[str, list[str]]:
    """``Gitmem-*`` trailers of a commit message (last paragraph), each key mapped to its values in order."""
    trailers: dict[str, list[str]] = {}
    for line in message.strip().split("\n\n")[-1].splitlines():
        match = TRAILER.match(line.strip())
        if match:
            trailers.setdefault(match.group(1), []).append(match.group(2).strip())
    return trailers


def format_message(subject: str, trailers: Mapping[str, str | list[str]], body: str = "") -> str:
    """A commit message: one-line subject, optional body, then ``Key: value`` trailers."""
    subject = " ".join(subject.split())
    if len(subject) > 72:
        subject = subject[:71].rstrip() + "…"
    lines: list[str] = []
    for key, value in trailers.items():
        for item in [value] if isinstance(value, str) else value:
            lines.append(f"{key}: {' '.join(str(item).split())}")
    parts = [subject, body.strip(), "\n".join(lines)]
    return "\n\n".join(p for p in parts if p) + "\n"
