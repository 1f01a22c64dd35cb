"""The on-disk embedding cache: shards keyed by blob SHA, written so a half-written shard is never read."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from gitmem.search.vectors import MAX_SHARDS, REPLACED_UNUSED_DAYS, VectorStore, drop_replaced


def _rows(n: int, start: int = 0) -> np.ndarray:
    return np.arange(start, start + n * 4, dtype=np.float32).reshape(n, 4)


def test_added_rows_load_back_with_their_keys(tmp_path: Path) -> None:
    store = VectorStore(tmp_path / "vectors" / "model.r1")
    assert store.load() == ([], None) and store.shas() == set() and store.marker() == ":"
    store.add(["a", "b"], _rows(2))
    before = store.marker()
    store.add(["c"], _rows(1, 100))
    assert store.marker() != before  # a reader can tell its loaded copy is stale
    keys, matrix = store.load()
    assert matrix is not None and matrix.dtype == np.float32
    assert dict(zip(keys, matrix.tolist(), strict=True)) == {
        "a": [0, 1, 2, 3], "b": [4, 5, 6, 7], "c": [100, 101, 102, 103]}
    assert store.shas() == {"a", "b", "c"}


def test_a_shard_without_its_key_file_or_damaged_is_ignored(tmp_path: Path) -> None:
    store = VectorStore(tmp_path)
    store.add(["a"], _rows(1))
    np.save(tmp_path / "half-written.npy", _rows(3))  # its .json (written last) never came
    (tmp_path / "damaged.json").write_text('["x", "y"]')
    (tmp_path / "damaged.npy").write_bytes(b"not numpy")
    keys, matrix = store.load()
    assert keys == ["a"] and matrix is not None and matrix.shape == (1, 4)


def test_compaction_merges_shards_and_drops_rows_no_memory_has(tmp_path: Path) -> None:
    store = VectorStore(tmp_path)
    for i in range(MAX_SHARDS + 1):
        store.add([f"sha{i}", f"sha{i}#0"], _rows(2, i * 10))
    store.compact({f"sha{i}" for i in range(0, MAX_SHARDS + 1, 2)})
    assert len(list(tmp_path.glob("*.json"))) == 1
    keys, matrix = store.load()
    assert matrix is not None
    assert sorted(keys) == sorted(k for i in range(0, MAX_SHARDS + 1, 2) for k in (f"sha{i}", f"sha{i}#0"))
    assert dict(zip(keys, matrix.tolist(), strict=True))["sha2#0"] == [24, 25, 26, 27]


def test_few_shards_are_left_as_they_are(tmp_path: Path) -> None:
    store = VectorStore(tmp_path)
    store.add(["a"], _rows(1))
    store.add(["b"], _rows(1))
    store.compact({"a"})
    assert store.shas() == {"a", "b"}


def test_a_completed_cache_deletes_the_caches_it_makes_obsolete_once_unused(tmp_path: Path) -> None:
    names = ["m-a8r2.r5", "m-a8r2.r4", "m-a8r2.r6", "m-a8.r5", "m-a8.r3", "m-a8", "m.r5", "other.r5", "m-a8.txt"]
    for name in names:
        (tmp_path / name / "sentences").mkdir(parents=True)
        (tmp_path / name / "1.json").write_text("[]")
    drop_replaced(tmp_path, "m-a8r2.r5", ["m-a8"])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)  # just written: maybe still in use
    (tmp_path / "m-a8.r3" / "sentences" / "2.json").write_text("[]")
    week_later = time.time() + REPLACED_UNUSED_DAYS * 86400 + 60
    os.utime(tmp_path / "m-a8.r3" / "sentences" / "2.json", (week_later, week_later))  # written again since
    drop_replaced(tmp_path, "m-a8r2.r5", ["m-a8"], now=week_later + 60)
    left = sorted(p.name for p in tmp_path.iterdir())
    # kept: itself, a newer recipe (a newer gitmem may use it), other models, the float32 run's "m", a cache
    # written to within the week
    assert left == ["m-a8.r3", "m-a8.txt", "m-a8r2.r5", "m-a8r2.r6", "m.r5", "other.r5"]
    drop_replaced(tmp_path / "missing", "m-a8r2.r5", ["m-a8"])  # no folder: nothing to do


def test_a_deletion_a_crash_interrupted_is_finished_and_reads_as_no_vectors(tmp_path: Path) -> None:
    from gitmem.search.pagevectors import PageVectors

    left = tmp_path / ".m-a8.deleting-1a2b3c4d"  # renamed away, then the process died
    left.mkdir()
    (left / "1.json").write_text("[]")
    assert not PageVectors.exist(tmp_path)  # a wiki query loads no model for it
    (tmp_path / "m.r2" / "odd.r²").mkdir(parents=True)  # not a recipe number: no error, left alone
    drop_replaced(tmp_path, "m.r2", [])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.r2"]
    drop_replaced(tmp_path / "m.r2", "x.r²", ["odd"], now=time.time() + 10**7)
    assert (tmp_path / "m.r2" / "odd.r²").is_dir()  # "odd.r²" is no recipe of "odd" (and no error)
