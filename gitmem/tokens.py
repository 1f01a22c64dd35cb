"""Counting tokens with a real tokenizer, so an injection budget means what it says.

The count uses the WordPiece tokenizer vendored in ``gitmem/data`` (the one the packaged embedding model uses):
a real subword tokenizer that splits code identifiers and counts each CJK character as a token, which is close
to how large-model tokenizers treat the same text. Characters/2 style estimates are off by 2x on code and CJK.
"""

from __future__ import annotations

import gzip
from functools import lru_cache
from pathlib import Path
from typing import Any

_TOKENIZER = Path(__file__).resolve().parent / "data" / "all-MiniLM-L6-v2.tokenizer.json.gz"


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
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


def count_many(texts: list[str]) -> list[int]:
    """Token counts of several texts in one batch call."""
    if not texts:
        return []
    encodings = _tokenizer().encode_batch(texts, add_special_tokens=False)
    return [len(e.ids) for e in encodings]
