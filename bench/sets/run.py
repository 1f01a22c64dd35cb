"""Retrieval quality on the sets of ``bench/sets`` (and LoCoMo dev), beside two plain baselines.

    python bench/sets/run.py [dulemon dulemon-en xquad/en xquad/zh beam locomo] [--modes bm25,hybrid] [--no-model]
                             [--model multilingual-e5-small --models-dir DIR] [--work DIR] [--split dev|test|all]

Every set is in the format of ``bench/locomo.py`` (``turns.jsonl``: one memory a line; ``queries.jsonl``: a
question and the ids of its evidence) and is run the same way: each ``conv`` is imported into its own memory
repository (``source`` = the ``session``: a dialogue, an article), every question searched in its own ``conv``.
R@10 = share of a question's evidence in the top 10, averaged. ``conv`` 0 of each added set is its development
part (``category`` 1), ``conv`` 1 its test part (``category`` 2); LoCoMo's five conversations are all development.
``beam`` has eight chats (``conv`` = the chat), four of each part, and labels each question's ability (``kind``:
event ordering, summarization, instruction following...): its R@10 is also printed by kind.

Baselines, on the same memories and questions:

* ``fts5``: SQLite FTS5 (``porter unicode61`` tokenizer), the question's words OR-ed, ``bm25()`` order;
* ``bigram``: plain BM25 (k1 1.2, b 0.75) over CJK character bigrams and lowercased Latin words.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import locomo  # noqa: E402

from gitmem.config import RankingConfig  # noqa: E402
from gitmem.search.scoring import DEFAULT_TUNING  # noqa: E402

SETS = Path(__file__).resolve().parent
_WORD = re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf]+|[^\W\u4e00-\u9fff\u3400-\u4dbf]+")


def data_dir(name: str) -> Path:
    return locomo.DATA if name == "locomo" else SETS / name


def fts5(docs: list[tuple[str, str]], question: str) -> list[str]:
    db = _fts_db(tuple(docs))
    words = [w for w in re.findall(r"\w+", question.lower()) if w]
    if not words:
        return []
    match = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
    rows = db.execute("SELECT id FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10", (match,)).fetchall()
    return [r[0] for r in rows]


_DBS: dict[int, sqlite3.Connection] = {}


def _fts_db(docs: tuple[tuple[str, str], ...]) -> sqlite3.Connection:
    key = hash(docs)
    if key not in _DBS:
        db = sqlite3.connect(":memory:")
        db.execute("CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, text, tokenize='porter unicode61')")
        db.executemany("INSERT INTO t VALUES (?, ?)", docs)
        _DBS[key] = db
    return _DBS[key]


def bigrams(text: str) -> list[str]:
    out: list[str] = []
    for run in _WORD.findall(text.lower()):
        if "\u3400" <= run[0] <= "\u9fff":
            out += [run[i:i + 2] for i in range(len(run) - 1)] if len(run) > 1 else [run]
        else:
            out.append(run)
    return out


class Bigram:
    """Plain Okapi BM25 over :func:`bigrams`."""

    def __init__(self, docs: list[tuple[str, str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.ids = [d for d, _ in docs]
        self.tf = [Counter(bigrams(t)) for _, t in docs]
        self.len = [sum(c.values()) for c in self.tf]
        self.avg = sum(self.len) / max(1, len(self.len))
        df: Counter[str] = Counter()
        for c in self.tf:
            df.update(c.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def search(self, question: str, k: int = 10) -> list[str]:
        terms = set(bigrams(question))
        scores = []
        for i, tf in enumerate(self.tf):
            s = 0.0
            for t in terms:
                f = tf.get(t, 0)
                if f:
                    norm = self.k1 * (1 - self.b + self.b * self.len[i] / self.avg)
                    s += self.idf[t] * f * (self.k1 + 1) / (f + norm)
            if s > 0:
                scores.append((-s, i))
        return [self.ids[i] for _, i in sorted(scores)[:k]]


def r10(ranked: list[str], evidence: list[str]) -> float:
    gold = set(evidence)
    return len(gold & set(ranked[:10])) / len(gold)


def baselines(turns: dict[int, list[dict[str, Any]]], queries: dict[int, list[dict[str, Any]]],
              keep: set[int]) -> dict[tuple[str, str], float]:
    """R@10 of each baseline: ``(name, "")`` over every question kept, ``(name, kind)`` by the question's ``kind``."""
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for conv, rows in turns.items():
        docs = [(t["id"], t["text"]) for t in rows]
        bm = Bigram(docs)
        for q in queries[conv]:
            if int(q["category"]) not in keep:
                continue
            for name, ranked in (("fts5", fts5(docs, q["question"])), ("bigram", bm.search(q["question"]))):
                for key in {(name, ""), (name, q.get("kind", ""))}:
                    sums[key][0] += r10(ranked, q["evidence"])
                    sums[key][1] += 1
    return {k: v[0] / v[1] for k, v in sums.items() if v[1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="*", default=["dulemon", "dulemon-en", "xquad/en", "xquad/zh", "beam", "locomo"])
    parser.add_argument("--modes", default="bm25,vector,hybrid")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    parser.add_argument("--no-model", action="store_true")
    parser.add_argument("--model", default="auto")
    parser.add_argument("--models-dir", type=Path, default=None)
    parser.add_argument("--work", type=Path, default=None, help="keep repositories here between runs")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    embedder = locomo.load_model(args.no_model or modes == ["bm25"], args.model, args.models_dir)
    if embedder is None:
        modes = ["bm25"]
    tuning = locomo.parse_set(args.set) if args.set else DEFAULT_TUNING
    weights = RankingConfig(w_sim=1.0, w_imp=0.0, w_rec=0.0)
    print(f"model {getattr(embedder, 'model_id', 'none')}, split {args.split}; R@10")
    print(f"{'set':10} {'n':>5} {'fts5':>6} {'bigram':>6} " + " ".join(f"{m:>6}" for m in modes))
    for name in args.sets:
        turns, queries = locomo.load(data_dir(name))
        keep = {1, 2, 3, 4} if name == "locomo" else {"dev": {1}, "test": {2}, "all": {1, 2}}[args.split]
        queries = defaultdict(list, {c: [q for q in qs if int(q["category"]) in keep] for c, qs in queries.items()})
        turns = {c: t for c, t in turns.items() if queries.get(c)}
        base = baselines(turns, queries, keep)
        work = (args.work / name.replace("/", "-")) if args.work else Path(tempfile.mkdtemp(prefix="gitmem-sets-"))
        work.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        try:
            scores = locomo.evaluate(turns, queries, work, modes, tuning, weights, embedder)
        finally:
            if args.work is None:
                shutil.rmtree(work, ignore_errors=True)
        cats: tuple[int | str, ...] = tuple(sorted(keep))
        n = scores.get(modes[0], cats)[4]
        cells = " ".join(f"{scores.get(m, cats)[1]:6.3f}" for m in modes)
        print(f"{name:10} {n:5d} {base.get(('fts5', ''), 0):6.3f} {base.get(('bigram', ''), 0):6.3f} {cells}"
              f"   ({time.perf_counter() - started:.0f} s)", flush=True)
        for kind in sorted({q["kind"] for qs in queries.values() for q in qs if "kind" in q}):
            cells = " ".join(f"{scores.get(m, (kind,))[1]:6.3f}" for m in modes)
            print(f"  {kind[:24]:24} {scores.get(modes[0], (kind,))[4]:3d} {base.get(('fts5', kind), 0):6.3f} "
                  f"{base.get(('bigram', kind), 0):6.3f} {cells}", flush=True)
        if args.work:
            (args.work / f"{name.replace('/', '-')}.json").write_text(json.dumps(
                {m: scores.get(m, cats) for m in modes}), "utf-8")


if __name__ == "__main__":
    main()
