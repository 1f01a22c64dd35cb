"""The embedding cache of one model on disk: shards of float32 rows keyed by git blob SHA.

``.cache/vectors/<model-id>.r<recipe>/`` holds ``<name>.npy`` (one row per memory) with ``<name>.json`` (the blob
SHAs of those rows, written last) and ``COMPLETE`` (the commit whose memories all have a vector); sentence vectors
live the same way in ``sentences/`` with keys ``<blob sha>#<n>``, and the vectors of the subjects standing rules
name in ``conditions/``. Shards are only added, and merged once there are
more than :data:`MAX_SHARDS`; another machine rebuilds its own cache from the same commits.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.files.atomic import atomic_write

if TYPE_CHECKING:
    from collections.abc import Iterable

    import numpy as np
    from numpy.typing import NDArray

__all__ = ["MAX_SHARDS", "REPLACED_UNUSED_DAYS", "VectorStore", "drop_replaced", "model_folder"]

#: shards beyond this many are merged into one (the caller holds the index lock)
MAX_SHARDS = 8


def model_folder(model_id: str) -> str:
    """A model id as a folder name (the name of its vector cache)."""
    import re

    return re.sub(r"[^A-Za-z0-9._@-]+", "_", model_id)


#: a replaced cache is deleted once nothing has written to it for this long: a gitmem process started before an
#: upgrade (an MCP server, a second install) may still be using it, and deleting it under that process would make
#: it embed everything again, holding the index lock while it does (one that only reads it is not seen: after the
#: week it re-embeds once)
REPLACED_UNUSED_DAYS = 7
_DELETING = ".deleting-"


def drop_replaced(root: Path, keep: str, replaced: Iterable[str], *, now: float | None = None) -> None:
    """Delete the vector caches under ``root`` that the folder ``keep`` (just completed) makes obsolete: those of
    the model ids in ``replaced`` (the ids the same model had before its vectors changed), with any recipe
    suffix (``.r<n>``) or none, and ``keep``'s own older recipes, each once nothing has been written to it for
    :data:`REPLACED_UNUSED_DAYS`. A newer recipe is left alone: a newer gitmem version may be using it. A folder
    is renamed away (``.<name>.deleting-<random>``) before it is deleted, so no reader sees half of it; one a
    crash left behind is deleted on the next call. The caller holds the index lock."""
    import secrets
    import shutil

    if not root.is_dir():
        return
    names = {model_folder(m) for m in replaced}
    own, recipe = _recipe(keep)
    cutoff = (time.time() if now is None else now) - REPLACED_UNUSED_DAYS * 86400
    for folder in list(root.iterdir()):
        try:
            if folder.name.startswith(".") and _DELETING in folder.name:
                shutil.rmtree(folder, ignore_errors=True)  # a deletion a crash interrupted
                continue
            name, its = _recipe(folder.name)
            older = name == own and its is not None and recipe is not None and its < recipe
            if folder.name == keep or not (name in names or older) or not folder.is_dir():
                continue
            if _last_written(folder) > cutoff:
                continue
            gone = root / f".{folder.name}{_DELETING}{secrets.token_hex(4)}"
            os.replace(folder, gone)
        except OSError:
            continue  # gone already, or not ours to touch: the next completed pass tries again
        shutil.rmtree(gone, ignore_errors=True)


def _last_written(folder: Path) -> float:
    """When anything in a cache folder (shards, COMPLETE, and those of each part's folder: sentences, conditions)
    was last written."""
    times = [folder.stat().st_mtime]
    for path in (*folder.iterdir(), *folder.glob("*/*")):
        with contextlib.suppress(OSError):
            times.append(path.stat().st_mtime)
    return max(times)


def _recipe(folder: str) -> tuple[str, int | None]:
    """A cache folder's model part and recipe number (``minilm.r3`` → ``("minilm", 3)``; no suffix: None)."""
    base, sep, number = folder.rpartition(".r")
    return (base, int(number)) if sep and number.isascii() and number.isdecimal() else (folder, None)


class VectorStore:
    """Embedding shards of one model: ``<name>.npy`` + ``<name>.json`` (row keys); the json is written last, so
    a shard without it is ignored. ``COMPLETE`` names the commit whose memories all have a vector."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.complete = root / "COMPLETE"

    def marker(self) -> str:
        """Changes whenever a shard is added or removed or COMPLETE moves ("is what I loaded still current?")."""
        try:
            done = self.complete.read_text("utf-8")
        except OSError:
            done = ""
        names = ",".join(sorted(p.name for p in self.root.glob("*.json"))) if self.root.is_dir() else ""
        return f"{done}:{names}"

    def load(self) -> tuple[list[str], NDArray[np.float32] | None]:
        """Every row key and the matrix of their vectors (None when there is none)."""
        import numpy as np

        shas: list[str] = []
        blocks: list[NDArray[np.float32]] = []
        for meta in sorted(self.root.glob("*.json")):
            try:
                rows = json.loads(meta.read_text("utf-8"))
                block = np.load(meta.with_suffix(".npy"))
            except (OSError, ValueError):
                continue  # a shard being written or damaged: its memories are embedded again
            if block.ndim == 2 and len(rows) == block.shape[0]:
                shas.extend(rows)
                blocks.append(block.astype(np.float32, copy=False))
        if not blocks:
            return [], None
        return shas, np.concatenate(blocks) if len(blocks) > 1 else blocks[0]

    def shas(self) -> set[str]:
        """The SHAs that have a vector (reads only the small json files)."""
        found: set[str] = set()
        for meta in self.root.glob("*.json"):
            with contextlib.suppress(OSError, ValueError):
                if meta.with_suffix(".npy").is_file():
                    found.update(json.loads(meta.read_text("utf-8")))
        return found

    def add(self, shas: list[str], matrix: NDArray[np.float32]) -> None:
        """A new shard with these rows."""
        import numpy as np

        self.root.mkdir(parents=True, exist_ok=True)
        import secrets  # random, hashlib, base64 and hmac: only when a shard is written

        name = f"{int(time.time() * 1000):x}-{secrets.token_hex(3)}"
        tmp = self.root / f".{name}.npy.tmp"
        with tmp.open("wb") as fh:
            np.save(fh, np.ascontiguousarray(matrix, dtype=np.float32))
        os.replace(tmp, self.root / f"{name}.npy")
        atomic_write(self.root / f"{name}.json", json.dumps(shas).encode())

    def compact(self, live: set[str], *, prune: bool = False) -> None:
        """Merge the shards into one holding only ``live`` rows (the caller holds the index lock): once there are
        more than :data:`MAX_SHARDS`, or with ``prune`` as soon as a row is not live."""
        metas = sorted(self.root.glob("*.json"))
        if len(metas) <= MAX_SHARDS and not (prune and any(k.split("#", 1)[0] not in live for k in self.shas())):
            return
        shas, matrix = self.load()
        if matrix is None:
            return
        keep: dict[str, int] = {}
        for row, sha in enumerate(shas):
            if sha.split("#", 1)[0] in live:  # sentence rows are keyed "<blob sha>#<n>"
                keep[sha] = row
        if keep:  # none left: no shard at all, so a folder whose pages are all gone reads as having no vectors
            self.add(list(keep), matrix[list(keep.values())])
        for meta in metas:
            meta.unlink(missing_ok=True)
            meta.with_suffix(".npy").unlink(missing_ok=True)
