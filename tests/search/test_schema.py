"""What the search index stores of a memory: the document, the blob SHA, the text search and embeddings see."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from gitmem.search import schema as indexdoc
from gitmem.store import document as docs
from gitmem.text.records import replace


def _memory(text: str, **fields: Any) -> docs.Memory:
    return docs.make_memory(text, **fields)


def test_the_stored_memory_comes_back_whole() -> None:
    memory = _memory("Use PostgreSQL 16 for 订单服务.\n\n**Why:** JSON queries.", name="Postgres",
                     tags=["db", "数据库"], project="acme", scope="project",
                     source_ref="s-1", expires="2031-01-01T00:00:00Z")
    memory = replace(memory, deprecated=True, deprecated_reason="moved", extra={"owner": "ops"})
    back = indexdoc.memory_from_json(indexdoc.memory_json(memory))
    assert back == memory and back.tags == ("db", "数据库") and back.expires == memory.expires


def test_blob_sha_is_the_one_git_gives(tmp_path: Path) -> None:
    data = docs.dumps(_memory("Never commit secrets.")).encode()
    (tmp_path / "m.md").write_bytes(data)
    expected = subprocess.run(["git", "hash-object", str(tmp_path / "m.md")], capture_output=True, text=True,
                              check=True).stdout.strip()
    assert indexdoc.git_blob_sha(data) == expected
    assert indexdoc.sha64(expected) == int(expected[:16], 16)


def test_what_search_and_the_embedding_model_see() -> None:
    memory = _memory("Use PostgreSQL.\n\n**Why:** JSON.\n**How to apply:** new services.", name="DB",
                     tags=["db"], source="hook", source_ref="s-9")
    assert indexdoc.body(memory) == "Use PostgreSQL.\nJSON.\nnew services."
    assert indexdoc.embedding_text(memory) == (
        "DB\nUse PostgreSQL.\nWhy: JSON.\nHow to apply: new services.\nTags: db")
    assert indexdoc.group(memory) == "hook:s-9" and indexdoc.group(_memory("x", source="cli")) == ""
    assert indexdoc.grp_hash("") == 0 and indexdoc.grp_hash("hook:s-9") == indexdoc.grp_hash("hook:s-9") != 0
