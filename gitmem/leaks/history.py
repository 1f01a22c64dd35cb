"""Find secrets in every object a memory repository's refs keep alive, and rewrite the branches without them.

:func:`scan` reads every commit reachable from a branch, remote-tracking branch or tag, every tree and every blob
once, and reports each place that holds a secret: a file's content, a file name, a commit message. It also looks
for the *slug* of each secret it found (``akiaabcd...``): before ids were derived from redacted text, the id of a
memory (its file name, its ``id:`` line, its ``Gitmem-Id`` trailer) was a lower-cased slug of the text, secret
included.

:func:`purge` rewrites every local branch and tag, oldest commit first: each secret becomes ``[REDACTED:<kind>]``
(``redacted-<kind>`` in file names and ids); authors, dates and the shape of history are kept, and a commit that
holds no secret keeps its SHA when its parents do. Then it moves the work tree and the index to the new HEAD,
deletes the remote-tracking refs and the reflogs (they keep the old commits alive) and removes every object no
ref reaches. The remote still has the old history until it is force-pushed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gitmem.errors import RepoError
from gitmem.git.branches import uncommitted_paths
from gitmem.git.history import RewriteResult, note_purged, read_history, rewrite_history
from gitmem.redact.engine import find_secrets, redact
from gitmem.store.layout import Issue
from gitmem.text.counted import counted

if TYPE_CHECKING:
    from gitmem.git.store import GitStore

#: places in history that ``gitmem doctor`` lists one by one
_MAX_LEAKS_SHOWN = 20
#: a secret's slug shorter than this is not looked for (too likely to be an ordinary word)
MIN_SLUG = 12
#: the slug of a long secret is also looked for cut to this length (a derived id keeps at most 40 characters)
SLUG_PREFIX = 20


@dataclass(frozen=True)
class Leak:
    """One place in history that holds a secret."""

    place: str  #: "content", "file name" or "message"
    path: str  #: the file, with any secret in its name redacted ("" for a message)
    commit: str  #: a commit that holds it
    kinds: tuple[str, ...]

    def __str__(self) -> str:
        where = f"{self.place} of {self.path}" if self.path else self.place
        return f"{where} (commit {self.commit[:10]}): {', '.join(self.kinds)}"


@dataclass
class Scan:
    """What :func:`scan` found."""

    leaks: list[Leak] = field(default_factory=list)
    #: each secret as it appears → its kind
    secrets: dict[str, str] = field(default_factory=dict)
    #: the lower-case slug of each secret (as in a derived id) → its kind
    slugs: dict[str, str] = field(default_factory=dict)
    commits: int = 0
    blobs: int = 0
    refs: tuple[str, ...] = ()


#: what :func:`purge` did
PurgeResult = RewriteResult


def _slug(value: str) -> str:
    return re.sub(r"[^0-9a-z]+", "-", value.lower()).strip("-")


def _text(data: bytes) -> tuple[str, str]:
    """The text of a blob and the encoding it was read with (Latin-1 when it is not UTF-8)."""
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def scan(store: GitStore, *, extra_patterns: Sequence[str] = ()) -> Scan:
    """Every place in the repository's history that holds a secret (each blob and tree read once)."""
    result = Scan()

    def note(place: str, path: str, commit: str, found: list[tuple[str, str]]) -> None:
        if found:
            result.leaks.append(Leak(place, path, commit, tuple(dict.fromkeys(k for k, _ in found))))
            for kind, value in found:
                result.secrets.setdefault(value, kind)

    history = read_history(store)
    result.refs = history.refs
    if not history.refs:
        return result
    names, blobs = history.names, history.blobs
    messages = {sha: _text(raw)[0] for sha, raw in history.messages.items()}
    result.commits = len(messages)
    for sha, message in messages.items():
        note("message", "", sha, find_secrets(message, extra_patterns=extra_patterns))
    for sha, raw in history.tag_messages.items():  # an annotated tag's message (its ref names it in `refs`)
        note("tag message", "", sha, find_secrets(_text(raw)[0], extra_patterns=extra_patterns))
    result.blobs = len(blobs)
    texts: dict[bytes, str] = {}
    for blob_sha, (path, sha) in blobs.items():
        texts[blob_sha] = _text(history.contents[blob_sha])[0]
        note("content", path, sha, find_secrets(texts[blob_sha], extra_patterns=extra_patterns))
    for path, sha in names.items():
        note("file name", path, sha, find_secrets(path, extra_patterns=extra_patterns))
    # The slugs of the secrets found, where derived ids put them.
    for value, kind in result.secrets.items():
        slug = _slug(value)
        if len(slug) >= MIN_SLUG:
            result.slugs.setdefault(slug, kind)
            result.slugs.setdefault(slug[:SLUG_PREFIX], kind)
    if result.slugs:
        reported = {(leak.place, leak.path, leak.commit) for leak in result.leaks}

        def slugged(place: str, path: str, commit: str, text: str) -> None:
            kinds = tuple(dict.fromkeys(k for s, k in result.slugs.items() if s in text))
            if kinds and (place, path, commit) not in reported:
                result.leaks.append(Leak(place, path, commit, kinds))

        for path, sha in names.items():
            slugged("file name", path, sha, path.lower())
        for blob_sha, (path, sha) in blobs.items():
            slugged("content", path, sha, texts[blob_sha].lower())
        for sha, message in messages.items():
            slugged("message", "", sha, message.lower())
    content, _ = _scrubbers(result, extra_patterns)
    result.leaks = [replace(leak, path=content(leak.path)) for leak in result.leaks]  # shown without the secret
    return result


def _scrubbers(found: Scan, extra_patterns: Sequence[str]) -> tuple[Callable[[str], str], Callable[[str], str]]:
    """(for contents and messages, for file names): each removes every secret ``found`` knows, and every other
    secret the rules find now."""
    secrets = sorted(found.secrets.items(), key=lambda item: -len(item[0]))
    slugs = sorted(found.slugs.items(), key=lambda item: -len(item[0]))

    def content(text: str) -> str:
        text = redact(text, extra_patterns=extra_patterns).text
        for value, kind in secrets:
            text = text.replace(value, f"[REDACTED:{kind}]")
        for slug, kind in slugs:
            text = text.replace(slug, f"redacted-{kind}")
        return text

    def name(text: str) -> str:
        text = re.sub(r"\[REDACTED:([a-z0-9-]+)\]", r"redacted-\1", redact(text, extra_patterns=extra_patterns).text)
        for value, kind in secrets:
            text = text.replace(value, f"redacted-{kind}")
        for slug, kind in slugs:
            text = text.replace(slug, f"redacted-{kind}")
        return text.replace("/", "-")

    return content, name


def purge(store: GitStore, found: Scan, *, extra_patterns: Sequence[str] = ()) -> PurgeResult:
    """Rewrite every local branch and tag without the secrets ``found`` (and any the rules find now), move the
    work tree and the index to the new HEAD, delete the remote-tracking refs and reflogs, and remove every object
    no ref reaches. The caller holds :meth:`GitStore.locked`; the work tree must have no uncommitted change."""
    pending = uncommitted_paths(store)
    if pending:
        raise RepoError(f"uncommitted changes in the memory repository: {', '.join(pending[:3])}",
                        "commit or undo them (git status), then purge again")
    content, name = _scrubbers(found, extra_patterns)

    def blob(data: bytes) -> bytes:
        text, encoding = _text(data)
        cleaned = content(text)
        return data if cleaned == text else cleaned.encode(encoding, "replace")

    result = rewrite_history(store, content=blob, name=name,
                             message=lambda raw: content(_text(raw)[0]).encode("utf-8"))
    # the commits rewritten, in this clone's git folder (never pushed): a sync refuses to merge a remote that still
    # has them (its history is force-pushed after a purge), which would bring the secrets back
    note_purged(store, result.replaced)
    return result



def history_issues(store: GitStore, *, extra_patterns: Sequence[str] = ()) -> list[Issue]:
    """``gitmem doctor``'s findings about history: secrets already in it (contents, file names, messages), with
    how to purge them."""
    found = scan(store, extra_patterns=extra_patterns)
    if not found.leaks:
        return [Issue("ok", "history", f"no secret in {counted(found.commits, 'commit')} and "
                                       f"{counted(found.blobs, 'file version')}")]
    shown = [Issue("error", leak.path or "commit message", f"secret in history: {leak}")
             for leak in found.leaks[:_MAX_LEAKS_SHOWN]]
    more = len(found.leaks) - len(shown)
    holds = "holds a secret" if len(found.leaks) == 1 else "hold secrets"
    shown.append(Issue("error", "history", f"{counted(len(found.leaks), 'place')} in history {holds}"
                       + (f" ({more} more not shown)" if more > 0 else "")
                       + ": rotate them, then run 'gitmem purge-secrets' to see the plan and "
                       "'gitmem purge-secrets --yes' to rewrite history (see docs/store.md)"))
    return shown
