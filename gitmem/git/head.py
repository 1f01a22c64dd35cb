"""The read side of a memory repository's HEAD: which commit it is, which files say so, and whether a write was
left half done. A prompt's hook needs nothing more of git (the search index is current when its marker names
HEAD), so this module is all of git it imports: no dulwich, no locks, ``os`` only.
:class:`gitmem.git.store.GitStore` builds the writes and the rest of the reads on it."""

from __future__ import annotations

import os

from gitmem.errors import RepoNotFoundError

#: what a write in progress touches, and who writes it (see :meth:`gitmem.git.store.GitStore.journal`)
JOURNAL_NAME = "gitmem-journal.json"


class GitHead:
    """The HEAD of the git work tree at ``path`` (a string or a path; :class:`RepoNotFoundError` when it holds
    no ``.git``)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        #: the repository's folder as a string (what the hooks read HEAD through, without pathlib)
        self.repo_dir = os.fspath(path)
        self._git = os.path.join(self.repo_dir, ".git")
        if not os.path.isdir(self._git):
            raise RepoNotFoundError.at(self.repo_dir)

    def head(self) -> bytes | None:
        """The commit HEAD points at, read straight from the ref files (no dulwich: ~0.1 ms)."""
        try:
            head = _read(os.path.join(self._git, "HEAD")).strip()
        except OSError:
            return None
        if not head.startswith(b"ref: "):
            return head or None
        ref = head[5:].strip()
        try:
            value = _read(os.path.join(self._git, ref.decode("utf-8", "replace"))).strip()
            if value:
                return value
        except OSError:
            pass
        try:
            for line in _read(os.path.join(self._git, "packed-refs")).splitlines():
                if line.endswith(b" " + ref) and not line.startswith((b"#", b"^")):
                    return line.split(b" ", 1)[0]
        except OSError:
            pass
        return None

    def head_files(self) -> list[str]:
        """The files that say which commit HEAD is: ``.git/HEAD`` and the loose ref it names (a ref only in
        ``packed-refs`` gives just ``HEAD`` plus ``packed-refs``). git and gitmem replace them by rename, so a
        new inode number shows that HEAD may have moved without reading them."""
        files = [os.path.join(self._git, "HEAD")]
        try:
            head = _read(files[0]).strip()
        except OSError:
            return files
        if head.startswith(b"ref: "):
            loose = os.path.join(self._git, head[5:].strip().decode("utf-8", "replace"))
            files.append(loose if os.path.isfile(loose) else os.path.join(self._git, "packed-refs"))
        return files

    def interrupted(self) -> bool:
        """Whether a write's journal is there: a writer is running, or one was killed half way (then
        :meth:`gitmem.git.store.GitStore.recover_if_interrupted` undoes it). Costs one ``stat``."""
        return os.path.exists(os.path.join(self._git, JOURNAL_NAME))


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()
