"""Counting tokens with a real tokenizer, so an injection budget means what it says.

The count uses the WordPiece tokenizer vendored in ``gitmem/data`` (the one the packaged embedding model uses):
a real subword tokenizer that splits code identifiers and counts each CJK character as a token, which is close
to how large-model tokenizers treat the same text. Characters/2 style estimates are off by 2x on code and CJK.
"""

from __future__ import annotations

import contextlib
import json
from functools import lru_cache
from pathlib import Path

from gitmem.files.atomic import atomic_write
from gitmem.text.digest import blake2b

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the hooks count tokens without importing typing
if TYPE_CHECKING:
    from typing import Any

_TOKENIZER = Path(__file__).resolve().parents[1] / "data" / "all-MiniLM-L6-v2.tokenizer.json.gz"


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    import gzip

    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(gzip.decompress(_TOKENIZER.read_bytes()).decode("utf-8"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def count_tokens(text: str) -> int:
    """Number of tokens in ``text`` (no special tokens)."""
    if not text:
        return 0
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


class TokenCounter:
    """:func:`count_tokens` with the counts kept by text hash in a JSON file (derived state, e.g. under
    ``.cache/``): a recall whose lines were all counted before never loads the tokenizer, which costs ~60 ms
    of a session start. Keeps the ``limit`` most recently counted texts."""

    def __init__(self, path: Path | None, limit: int = 4000) -> None:
        self.path, self.limit = path, limit
        self.counts: dict[str, int] = {}
        self.dirty = False
        if path is not None:
            try:
                data = json.loads(path.read_text("utf-8"))
                self.counts = {k: v for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}
            except (OSError, ValueError):
                self.counts = {}

    def __call__(self, text: str) -> int:
        key = blake2b(text.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()
        found = self.counts.pop(key, None)  # re-insert: the dict's order is the recency order
        if found is None:
            found = count_tokens(text)
            self.dirty = True
        self.counts[key] = found
        return found

    def save(self) -> None:
        """Write the counts back when anything new was counted (best effort: a cache)."""
        if self.path is None or not self.dirty:
            return
        kept = dict(list(self.counts.items())[-self.limit:])
        with contextlib.suppress(OSError):
            atomic_write(self.path, json.dumps(kept, separators=(",", ":")).encode())
        self.dirty = False
