"""JSON files edited in place: a parser that keeps where every value stands (the standard library's forgets it)
and, in the dialects that allow them, reads comments and trailing commas; and an editor that changes a document
to hold new data with as few bytes changed as possible, in the file's own indentation, key separator and line
endings, keeping its comments (:class:`Unkeepable` when it cannot). Agents' settings files are edited through it
(:mod:`gitmem.agents.claude.settings`), so a user's formatting survives an install and an uninstall."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

__all__ = ["JSON", "JSONC", "JSON_WITH_COMMENTS", "Dialect", "Editor", "JsonDoc", "Member", "Node", "Unkeepable",
           "canonical", "parse", "same_json"]


# -- reading -------------------------------------
@dataclass(frozen=True)
class Dialect:
    """What a file may hold beyond JSON, as its agent reads it: Gemini CLI strips comments before ``JSON.parse``,
    OpenCode's JSONC parser also allows trailing commas, Claude Code reads plain JSON."""

    comments: bool = False
    trailing_commas: bool = False


JSON = Dialect()
JSON_WITH_COMMENTS = Dialect(comments=True)
JSONC = Dialect(comments=True, trailing_commas=True)
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS: tuple[tuple[str, Any], ...] = (("true", True), ("false", False), ("null", None))
# what may follow a value up to the end of its line for an insertion to go after it: blanks and comments
_LINE_REST = re.compile(r"(?:[ \t]+|/\*(?:(?!\*/)[^\n])*\*/|//[^\n]*)*")


@dataclass
class Node:
    """A value of a JSON text, ``text[start:end]``; an object's (``kind`` ``{``) or array's (``[``) members."""

    start: int
    end: int
    value: Any
    kind: str = ""
    members: list[Member] = field(default_factory=list)


@dataclass
class Member:
    """A member of an object (with its ``key``) or an item of an array: where it starts (the key's quote, else the
    value), the text between key and value, and the comma after it when one follows."""

    start: int
    node: Node
    key: str | None = None
    colon: str = ": "
    comma: int | None = None


@dataclass
class JsonDoc:
    """A JSON file as read: its text, its tree of values and the spans of its comments."""

    text: str
    root: Node
    comments: list[tuple[int, int]]
    dialect: Dialect

    def comment_texts(self) -> list[str]:
        return [self.text[start:end] for start, end in self.comments]


class _Parser:
    """A JSON parser that keeps where each value stands (the standard library's forgets it) and, for the dialects
    that allow them, reads comments and trailing commas."""

    def __init__(self, text: str, dialect: Dialect) -> None:
        self.text = text
        self.pos = 0
        self.dialect = dialect
        self.comments: list[tuple[int, int]] = []

    def fail(self, what: str) -> NoReturn:
        line = self.text.count("\n", 0, self.pos) + 1
        column = self.pos - self.text.rfind("\n", 0, self.pos)
        raise ValueError(f"{what}: line {line} column {column}")

    def skip(self) -> None:
        text, size = self.text, len(self.text)
        while self.pos < size:
            char = text[self.pos]
            if char in " \t\r\n":
                self.pos += 1
            elif self.dialect.comments and text.startswith("//", self.pos):
                stop = text.find("\n", self.pos)
                stop = size if stop < 0 else stop - (text[stop - 1] == "\r")
                self.comments.append((self.pos, stop))
                self.pos = stop
            elif self.dialect.comments and text.startswith("/*", self.pos):
                stop = text.find("*/", self.pos + 2)
                if stop < 0:
                    self.fail("unterminated comment")
                self.comments.append((self.pos, stop + 2))
                self.pos = stop + 2
            else:
                return

    def string(self) -> str:
        value, self.pos = json.decoder.scanstring(self.text, self.pos + 1, True)  # type: ignore[attr-defined]
        return str(value)

    def value(self) -> Node:
        self.skip()
        text, start = self.text, self.pos
        if text.startswith(("{", "["), start):
            return self.container(text[start])
        if text.startswith('"', start):
            value = self.string()  # moves self.pos past the closing quote
            return Node(start, self.pos, value)
        number = _NUMBER.match(text, start)
        if number:
            token = self.text[start:number.end()]
            self.pos = number.end()
            return Node(start, self.pos, float(token) if any(c in token for c in ".eE") else int(token))
        for word, literal in _LITERALS:
            if text.startswith(word, start):
                self.pos = start + len(word)
                return Node(start, self.pos, literal)
        self.fail("expecting a value")

    def container(self, kind: str) -> Node:
        text, close = self.text, "}" if kind == "{" else "]"
        node = Node(self.pos, 0, {} if kind == "{" else [], kind)
        self.pos += 1
        self.skip()
        while not text.startswith(close, self.pos):
            start = self.pos
            if kind == "{":
                if not text.startswith('"', start):
                    self.fail("expecting a property name in double quotes")
                key = self.string()
                key_end = self.pos
                self.skip()
                if not text.startswith(":", self.pos):
                    self.fail("expecting ':'")
                self.pos += 1
                item = self.value()
                member = Member(start, item, key, text[key_end:item.start])
                node.value[key] = item.value
            else:
                item = self.value()
                member = Member(item.start, item)
                node.value.append(item.value)
            node.members.append(member)
            self.skip()
            if text.startswith(",", self.pos):
                member.comma = self.pos
                self.pos += 1
                self.skip()
                if text.startswith(close, self.pos) and not self.dialect.trailing_commas:
                    self.pos = member.comma
                    self.fail("trailing comma")
            elif not text.startswith(close, self.pos):
                self.fail(f"expecting ',' or '{close}'")
        self.pos += 1
        node.end = self.pos
        return node


def parse(text: str, dialect: Dialect = JSON) -> JsonDoc:
    """``text`` parsed; ``ValueError`` (or ``RecursionError``) when it is not valid in ``dialect``."""
    parser = _Parser(text, dialect)
    root = parser.value()
    parser.skip()
    if parser.pos != len(text):
        parser.fail("extra data")
    return JsonDoc(text, root, parser.comments, dialect)


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON: ``True`` and ``1`` differ (Python's ``==`` has them equal), the order of keys does not."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(same_json, a, b))
    return type(a) is type(b) and a == b


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


# -- writing: as few bytes changed as possible ------------------------------------------------------------------
class Unkeepable(Exception):
    """The change cannot be made in place without dropping a comment of the file."""


class Editor:
    """Changes a JSON text to hold other data by editing only where the data differs: members and items are
    inserted, replaced or deleted where they stand, written in the file's own indentation, key separator and line
    breaks; every other byte (other members, comments, blank lines, the order of keys) stays."""

    def __init__(self, doc: JsonDoc) -> None:
        self.doc = doc
        self.text = text = doc.text
        self.edits: list[tuple[int, int, str]] = []
        self.nl = "\r\n" if "\r\n" in text else "\n"
        root = doc.root
        # a file written on one line stays on one line; an empty {} is spread over lines like a new file
        self.compact = bool(root.members) and "\n" not in text[root.start:root.end]
        first = root.members[0] if root.members else None
        self.unit = "  "
        if first is not None and self.starts_line(first.start):
            own, outer = self.indent(first.start), self.indent(root.start)
            if own.startswith(outer) and len(own) > len(outer):
                self.unit = own[len(outer):]
        self.colon = first.colon if first is not None and re.fullmatch(r"[ \t]*:[ \t]*", first.colon) else ": "
        self.comma = ", "
        if first is not None and first.comma is not None and text[first.comma + 1:first.comma + 2] == '"':
            self.comma = ","

    # where things stand
    def line_start(self, pos: int) -> int:
        return self.text.rfind("\n", 0, pos) + 1

    def starts_line(self, pos: int) -> bool:
        return not self.text[self.line_start(pos):pos].strip(" \t")

    def indent(self, pos: int) -> str:
        line = self.text[self.line_start(pos):pos]
        return line[:len(line) - len(line.lstrip(" \t"))]

    def line_end(self, pos: int) -> int | None:
        """Where the line break is when only blanks and comments follow ``pos`` on its line, else None."""
        end = _LINE_REST.match(self.text, pos).end()  # type: ignore[union-attr]
        if self.text.startswith("\r\n", end):
            return end
        if self.text.startswith("\n", end):
            return end - 1 if self.text[end - 1:end] == "\r" else end
        return None

    def has_comment(self, start: int, end: int) -> bool:
        return any(start < stop and begin < end for begin, stop in self.doc.comments)

    # what is written
    def render(self, key: str | None, value: Any, indent: str | None) -> str:
        """A member (or, without ``key``, an item) on one line, or spread over lines starting with ``indent``."""
        head = "" if key is None else json.dumps(key, ensure_ascii=False) + self.colon
        if indent is None:
            return head + json.dumps(value, ensure_ascii=False, separators=(self.comma, self.colon))
        body = json.dumps(value, ensure_ascii=False, indent=self.unit, separators=(",", self.colon))
        return head + body.replace("\n", self.nl + indent)  # JSON strings hold no raw line breaks

    def result(self) -> str:
        text, limit = self.text, len(self.text)
        for start, end, new in sorted(self.edits, reverse=True):
            if end > limit:
                raise Unkeepable("overlapping edits")
            text = text[:start] + new + text[end:]
            limit = start
        return text

    # the edits
    def change(self, node: Node, new: Any) -> None:
        if same_json(node.value, new):
            return
        if node.kind == "{" and isinstance(new, dict):
            self.change_object(node, new)
        elif node.kind == "[" and isinstance(new, list):
            self.change_array(node, new)
        else:
            self.replace(node, new)

    def change_object(self, node: Node, new: dict[str, Any]) -> None:
        members = node.members
        current = {member.key: member for member in members}  # of a duplicated key, the last one counts
        gone = [index for index, member in enumerate(members) if member.key not in new]
        added = [(key, value) for key, value in new.items() if key not in current]
        if gone and added:  # neither install nor uninstall does both in one object
            self.replace(node, new)
            return
        for key, value in new.items():
            if key in current:
                self.change(current[key].node, value)
        for first, stop in reversed(_runs(gone)):
            self.delete(node, first, stop)
        if added:
            self.insert(node, len(members), added)

    def change_array(self, node: Node, new: list[Any]) -> None:
        old = [canonical(member.node.value) for member in node.members]
        matcher = difflib.SequenceMatcher(None, old, [canonical(value) for value in new], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
            for offset in range(paired):  # an item that changed is edited inside (a hook's moved command)
                self.change(node.members[i1 + offset].node, new[j1 + offset])
            if i1 + paired < i2:
                self.delete(node, i1 + paired, i2)
            if j1 + paired < j2:
                self.insert(node, i2, [(None, value) for value in new[j1 + paired:j2]])

    def replace(self, node: Node, new: Any) -> None:
        if self.has_comment(node.start, node.end):
            raise Unkeepable("a comment inside a value that changes")
        spread = "\n" in self.text[node.start:node.end]
        self.edits.append((node.start, node.end, self.render(None, new, self.indent(node.start) if spread else None)))

    def insert(self, node: Node, index: int, entries: Sequence[tuple[str | None, Any]]) -> None:
        """Insert members (or items, ``key`` None) before member ``index`` of ``node``, or after its last one."""
        if not node.members:
            self.insert_into_empty(node, entries)
        elif index < len(node.members):
            self.insert_before(node.members[index], entries)
        else:
            self.insert_after(node.members[-1], entries)

    def insert_into_empty(self, node: Node, entries: Sequence[tuple[str | None, Any]]) -> None:
        inner = self.text[node.start + 1:node.end - 1]
        if self.compact:
            body = self.comma.join(self.render(key, value, None) for key, value in entries)
            self.edits.append((node.start + 1, node.end - 1 if not inner.strip() else node.start + 1, body))
            return
        outer = self.indent(node.start)
        inside = outer + self.unit
        body = ("," + self.nl).join(inside + self.render(key, value, inside) for key, value in entries)
        if inner.strip():  # comments: they stay after the new members
            self.edits.append((node.start + 1, node.start + 1, self.nl + body))
        else:
            self.edits.append((node.start + 1, node.end - 1, self.nl + body + self.nl + outer))

    def insert_before(self, anchor: Member, entries: Sequence[tuple[str | None, Any]]) -> None:
        if self.starts_line(anchor.start):
            indent = self.indent(anchor.start)
            at = self.line_start(anchor.start)
            body = "".join(indent + self.render(key, value, indent) + "," + self.nl for key, value in entries)
        else:
            at = anchor.start
            body = "".join(self.render(key, value, None) + self.comma for key, value in entries)
        self.edits.append((at, at, body))

    def insert_after(self, last: Member, entries: Sequence[tuple[str | None, Any]]) -> None:
        if not self.starts_line(last.start):  # members on one line: the new ones join it
            pieces = [self.render(key, value, None) for key, value in entries]
            if last.comma is None:
                self.edits.append((last.node.end, last.node.end, "".join(self.comma + piece for piece in pieces)))
            else:  # a trailing comma (JSONC): the new members get one too
                space = self.comma[1:]
                self.edits.append((last.comma + 1, last.comma + 1, "".join(f"{space}{piece}," for piece in pieces)))
            return
        indent = self.indent(last.start)
        pieces = [self.render(key, value, indent) for key, value in entries]
        if last.comma is not None:
            after = last.comma + 1
            line_end = self.line_end(after)
            at = after if line_end is None else line_end
            self.edits.append((at, at, "".join(f"{self.nl}{indent}{piece}," for piece in pieces)))
            return
        end = last.node.end
        line_end = self.line_end(end)  # the new members go after a comment that ends the last member's line
        body = "".join(f",{self.nl}{indent}{piece}" for piece in pieces)
        if line_end is None or line_end == end:
            self.edits.append((end, end, body))
        else:
            self.edits.append((end, end, ","))
            self.edits.append((line_end, line_end, body[1:]))

    def delete(self, node: Node, first: int, stop: int) -> None:
        text, members = self.text, node.members
        head, tail = members[first], members[stop - 1]
        tail_end = tail.comma + 1 if tail.comma is not None else tail.node.end
        if first == 0 and stop == len(members):
            if not (self.has_comment(node.start + 1, head.start) or self.has_comment(tail_end, node.end - 1)):
                self.edits.append((node.start + 1, node.end - 1, ""))  # {} again, as it was before the install
            else:
                self.edits.append(self.lines(head.start, tail_end))
            return
        if tail.comma is not None:  # another member follows (or a trailing comma): the comma goes with them
            self.edits.append(self.lines(head.start, tail_end))
            return
        previous = members[first - 1].comma  # they end the object: the comma before them goes
        assert previous is not None
        if not self.starts_line(head.start):
            self.edits.append((previous, tail.node.end, ""))
            return
        self.edits.append((previous, previous + 1, ""))
        if not text[tail.node.end:].split("\n", 1)[0].strip():
            start = self.line_start(head.start) - 1  # their lines go, with the line break before them
            start -= text[start - 1:start] == "\r"
            self.edits.append((max(start, previous + 1), tail.node.end, ""))
        else:  # a comment ends their line: it stays there
            self.edits.append(self.lines(head.start, tail.node.end))

    def lines(self, start: int, end: int) -> tuple[int, int, str]:
        """The edit deleting ``text[start:end]`` and the blanks after it: whole lines when nothing else is on them."""
        text = self.text
        while end < len(text) and text[end] in " \t":
            end += 1
        if self.starts_line(start):
            for brk in ("\r\n", "\n"):
                if text.startswith(brk, end):
                    return self.line_start(start), end + len(brk), ""
        return start, end, ""

    def rewrite(self, new: Any) -> str:
        """The whole object written again in the file's indentation (a file without comments whose change could
        not be made in place)."""
        root, text = self.doc.root, self.text
        return text[:root.start] + self.render(None, new, None if self.compact else "") + text[root.end:]


def _runs(indexes: list[int]) -> list[tuple[int, int]]:
    """Consecutive indexes as ``(first, stop)`` ranges."""
    runs: list[tuple[int, int]] = []
    for index in indexes:
        if runs and runs[-1][1] == index:
            runs[-1] = (runs[-1][0], index + 1)
        else:
            runs.append((index, index + 1))
    return runs
