"""The read path of the search index, as a prompt hook runs it: a new process opens an index that is already built,
finds it current and runs a BM25 search. Each standard module it loads costs that process milliseconds, so it
loads none of :data:`FORBIDDEN`; and the code that replaced regular expressions on that path reads text as the
expressions did."""

from __future__ import annotations

import re
import site
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import gitmem
from gitmem.search import analysis, timeexpr
from gitmem.search.index import Index
from gitmem.store.memories import MemoryRepo

#: standard modules that a BM25 search of a current index does without
FORBIDDEN = ("re", "pathlib", "contextlib", "functools", "heapq", "enum", "typing", "threading", "shutil", "hashlib",
             "json", "dataclasses", "inspect", "collections")

# A repository as the index reads it (gitmem.search.index.IndexedRepo), made of os calls only, with its folder as
# a str: the search's own imports are what this test measures, not those of the objects a caller opens.
SCRIPT = """
import os, sys

root, query, now, weights = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]


class Git:
    git_dir = os.path.join(root, ".git")

    def _ref(self):
        with open(os.path.join(self.git_dir, "HEAD"), "rb") as f:
            return f.read().strip()[5:].decode()

    def head(self):
        with open(os.path.join(self.git_dir, self._ref()), "rb") as f:
            return f.read().strip()

    def head_files(self):
        return [os.path.join(self.git_dir, "HEAD"), os.path.join(self.git_dir, self._ref())]


class Ranking:
    w_sim, w_imp, w_rec, decay_lambda = map(float, weights.split(","))


class Config:
    ranking = Ranking()
    derived_dir = os.path.join(root, ".cache")


class Repo:
    path, config = root, Config()
    head = git = Git()  # the read side reads HEAD through ``head``; ``git`` (the store) only a refresh needs


from datetime import datetime

from gitmem.search.index import open_index

for hit in open_index(Repo(), embedder=None).search(query, k=5, mode="bm25", now=datetime.fromisoformat(now)):
    print(hit.id, repr(hit.score), type(hit.memory).__module__)
print(",".join(sorted(sys.modules)))
"""


def python(code: str) -> list[str]:
    """A new interpreter running ``code`` with gitmem and the installed packages importable but without the site
    hooks: an editable install's import finder alone loads pathlib and re at start, which would hide them."""
    paths = [str(Path(gitmem.__file__).parents[1]), *site.getsitepackages()]
    return [sys.executable, "-S", "-c", f"import sys; sys.path[:0] = {paths!r}\n{code}"]


def test_a_bm25_search_of_a_current_index_loads_no_costly_module(repo: MemoryRepo) -> None:
    """The hits equal those of the library's own repository object (a ``Path`` folder), and the process loads
    neither the write side (locks, hashing, JSON), nor the model's side, nor any module of :data:`FORBIDDEN`; the
    hits carry the lean memory record."""
    for text in ("Deploys go through the staging cluster first", "The staging cluster runs on three nodes",
                 "Use PostgreSQL for the orders service"):
        repo.remember(text)
    now = datetime(2030, 1, 1, tzinfo=UTC)
    query = "how do deploys reach the staging cluster?"
    expected = Index(repo, embedder=None).search(query, k=5, mode="bm25", now=now)  # builds the index
    weights = repo.config.ranking
    proc = subprocess.run(
        [*python(SCRIPT), str(repo.path), query, now.isoformat(),
         f"{weights.w_sim},{weights.w_imp},{weights.w_rec},{weights.decay_lambda}"],
        capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    *hits, modules = proc.stdout.strip().splitlines()
    assert [line.split()[:2] for line in hits] == [[h.id, repr(h.score)] for h in expected] and len(hits) == 2
    loaded = set(modules.split(","))
    assert "tantivy" in loaded and not loaded & {"gitmem.search.build", "gitmem.search.semantic",
                                                 "gitmem.files.locks", "numpy"}
    assert hits[0].split()[2] == "gitmem.store.memory"
    assert sorted(loaded & set(FORBIDDEN)) == []


@given(st.lists(st.sampled_from([*"abcmaydwek0123456789 -_.é٣天月", "today", "week", "2024", "ago"])).map("".join))
def test_the_time_check_sees_what_the_time_patterns_need(text: str) -> None:
    """The cheap check before the time patterns compile: a time word, a time character or four digits in a row
    (as the expression ``[a-z]+|\\d{4}`` found them)."""
    low = timeexpr._lower(text)
    found = re.findall(r"[a-z]+|\d{4}", low)
    expected = (not low.isascii() and any(c in low for c in timeexpr._TIME_CHARS)) or \
        any(w in timeexpr._TIME_WORDS or w[0].isdigit() for w in found)
    assert timeexpr.names_time(text) == expected


def test_the_cjk_stopwords_need_no_escaping() -> None:
    """They are joined into one pattern as they are (re.escape would cost the hook the re module)."""
    assert all(re.escape(word) == word for word in analysis.CJK_STOPWORDS)
