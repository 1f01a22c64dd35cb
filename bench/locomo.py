"""Retrieval quality on LoCoMo (development split: conversations 0-4).

    python bench/locomo.py [--data /work/shared/bench/locomo-dev] [--work DIR] [--modes bm25,vector,hybrid]
                           [--set key=value ...] [--default-weights] [--no-model] [--sweep]
                           [--model multilingual-e5-small --models-dir DIR] [--dump FILE]

Each conversation's turns are imported into a fresh memory repository with ``MemoryRepo.import_records`` (ids
kept, ``created`` = the session's date plus the turn's position in seconds, ``source`` = ``session_<n>``, which
becomes ``source_ref``), then every question is searched in its own conversation, with "now" = the date of the
conversation's last session. Prints Recall@5, Recall@10 (share of a question's evidence turns in the top k,
averaged) and hit@5/hit@10 (at least one evidence turn in the top k) by category, and for categories 1-4.

Ranking weights: w_imp = w_rec = 0 (every turn has importance 3 and recency means nothing inside a corpus);
``--default-weights`` uses the configured 0.5/0.3/0.2 instead. ``--set`` overrides a field of
:class:`gitmem.search.scoring.Tuning` (e.g. ``--set boost_ctx=0.5 --set fusion=convex``). ``--work`` keeps the
repositories (and their index and vector caches) between runs. ``--dump FILE`` writes one JSON line per question
and mode (conversation, question, category, evidence ids, the top 10 ids and each evidence turn's rank in them,
``null`` when outside), so two versions of the ranking can be compared question by question.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitmem.config import Config, RankingConfig
from gitmem.search.index import Index
from gitmem.search.scoring import DEFAULT_TUNING, Tuning
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.text.records import replace

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DATA = Path("/work/shared/bench/locomo-dev")


def parse_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` (LoCoMo) or ISO 8601 (the sets of ``bench/sets``) → an aware datetime (UTC)."""
    if text[:4].isdigit():
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00")).astimezone(UTC)
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load(data: Path) -> tuple[dict[int, list[dict[str, Any]]], dict[int, list[dict[str, Any]]]]:
    turns: dict[int, list[dict[str, Any]]] = defaultdict(list)
    queries: dict[int, list[dict[str, Any]]] = defaultdict(list)
    with (data / "turns.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                turns[int(row["conv"])].append(row)
    with (data / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                queries[int(row["conv"])].append(row)
    return turns, queries


def records(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    position: dict[int, int] = defaultdict(int)
    for turn in turns:
        session = int(turn["session"])
        position[session] += 1
        created = parse_date(turn["date"]) + timedelta(seconds=position[session])
        out.append({"id": turn["id"], "text": turn["text"], "created": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "source": f"session_{session}", "importance": 3})
    return out


def build_repo(root: Path, conv: int, turns: list[dict[str, Any]], weights: RankingConfig, *,
               memories: list[dict[str, Any]] | None = None, origin: str = "locomo") -> MemoryRepo:
    """The memory repository of conversation ``conv`` under ``root`` (built once): its turns as memories, or
    ``memories`` when given (records for ``MemoryRepo.import_records``), imported as ``<origin>-<conv>``."""
    path = root / f"conv{conv}"
    config = Config(repo=path, author="bench <bench@example.com>", ranking=weights)
    if not (path / ".git").is_dir():
        init_repo(path, author="bench <bench@example.com>")
        MemoryRepo(config).import_records(records(turns) if memories is None else memories, origin=f"{origin}-{conv}")
    return MemoryRepo(config)


class Scores:
    def __init__(self) -> None:
        self.sums: dict[tuple[str, int | str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0.0])

    def add(self, mode: str, category: int | str, ranked: list[str], evidence: list[str]) -> None:
        gold = set(evidence)
        row = self.sums[(mode, category)]
        row[0] += len(gold & set(ranked[:5])) / len(gold)
        row[1] += len(gold & set(ranked[:10])) / len(gold)
        row[2] += bool(gold & set(ranked[:5]))
        row[3] += bool(gold & set(ranked[:10]))
        row[4] += 1

    def get(self, mode: str, cats: tuple[int | str, ...]) -> tuple[float, float, float, float, int]:
        total = [0.0] * 5
        for c in cats:
            for i, v in enumerate(self.sums.get((mode, c), [0.0] * 5)):
                total[i] += v
        n = int(total[4])
        if not n:
            return 0.0, 0.0, 0.0, 0.0, 0
        return total[0] / n, total[1] / n, total[2] / n, total[3] / n, n


def evaluate(turns: dict[int, list[dict[str, Any]]], queries: dict[int, list[dict[str, Any]]], work: Path,
             modes: list[str], tuning: Tuning, weights: RankingConfig, embedder: Any,
             dump: Any = None) -> Scores:
    """Every question searched in its conversation; ``dump``, an open text file, gets a JSON line per question
    and mode (see the module docstring)."""
    scores = Scores()
    for conv in sorted(turns):
        repo = build_repo(work, conv, turns[conv], weights)
        index = Index(repo, embedder=embedder if any(m != "bm25" for m in modes) else None, tuning=tuning)
        index.refresh()
        now = max(parse_date(t["date"]) for t in turns[conv]) + timedelta(days=1)
        for q in queries[conv]:
            for mode in modes:
                hits = index.search(q["question"], k=10, mode=mode, now=now)
                scores.add(mode, int(q["category"]), [h.id for h in hits], q["evidence"])
                if "kind" in q:  # a set that labels each question's ability (bench/sets/beam) is also told by it
                    scores.add(mode, q["kind"], [h.id for h in hits], q["evidence"])
                if dump is not None:
                    top = [h.id for h in hits]
                    ranks = {e: top.index(e) + 1 if e in top else None for e in q["evidence"]}
                    dump.write(json.dumps({"conv": conv, "question": q["question"], "category": q["category"],
                                           "kind": q.get("kind"), "mode": mode, "evidence": q["evidence"],
                                           "ranks": ranks, "top": top}, ensure_ascii=False) + "\n")
    return scores


def table(scores: Scores, modes: list[str]) -> str:
    lines = [f"{'mode':8} {'category':14} {'n':>4} {'R@5':>6} {'R@10':>6} {'hit@5':>6} {'hit@10':>6}"]
    for mode in modes:
        groups: list[tuple[str, tuple[int, ...]]] = [(f"{c} {CATEGORIES[c]}", (c,)) for c in (1, 2, 3, 4, 5)]
        groups.append(("1-4", (1, 2, 3, 4)))
        for label, cats in groups:
            r5, r10, h5, h10, n = scores.get(mode, cats)
            lines.append(f"{mode:8} {label:14} {n:>4} {r5:6.3f} {r10:6.3f} {h5:6.3f} {h10:6.3f}")
    return "\n".join(lines)


def parse_set(items: list[str]) -> Tuning:
    tuning = DEFAULT_TUNING
    for item in items:
        key, _, value = item.partition("=")
        if key not in Tuning.FIELDS:
            raise SystemExit(f"unknown tuning key {key!r}; known: {', '.join(Tuning.FIELDS)}")
        # every knob's default is a float, an int or a str: its type reads the value
        converted: Any = type(getattr(DEFAULT_TUNING, key))(value)
        tuning = replace(tuning, **{key: converted})
    return tuning


def load_model(no_model: bool, model: str = "auto", models_dir: Path | None = None) -> Any:
    if no_model:
        return None
    from gitmem.embeddings.runtime import EmbedSpec, load_embedder

    return load_embedder(EmbedSpec(model=model, models_dir=models_dir))


SWEEP: list[tuple[str, dict[str, Any]]] = [
    ("BM25 on the memory text only", {"boost_ctx": 0.0, "context_weight": 0.0, "pair_weight": 0.0,
                                      "time_boost": 0.0}),
    ("+ neighbour-context field (0.3, ±2)", {"context_weight": 0.0, "pair_weight": 0.0, "time_boost": 0.0}),
    ("+ neighbour score propagation (0.5)", {"pair_weight": 0.0, "time_boost": 0.0}),
    ("+ word-pair proximity (0.5, slop 2)", {"time_boost": 0.0}),
    ("+ time boost (0.5) = default", {}),
    ("default, context window ±1", {"context_window": 1}),
    ("default, context window ±3", {"context_window": 3}),
    ("default, ctx field boost 0.5", {"boost_ctx": 0.5}),
    ("default, propagation 0.3", {"context_weight": 0.3}),
    ("default, time boost 0.2", {"time_boost": 0.2}),
    ("default, 50 candidates", {"candidates": 50}),
    ("default, fusion RRF (k 60, w 0.5)", {"fusion": "rrf", "vector_weight": 0.5}),
    ("default, convex w 0.3", {"vector_weight": 0.3}),
    ("default, convex w 0.5", {"vector_weight": 0.5}),
]


class _QueryCache:
    """The embedder with its query vectors remembered (a sweep asks the same ~1000 questions many times)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.model_id, self.dim = inner, inner.model_id, inner.dim
        self.cache: dict[str, Any] = {}

    def embed_documents(self, texts: Any) -> Any:
        return self.inner.embed_documents(texts)

    def embed_with_spans(self, texts: Any, spans: Any) -> Any:
        from gitmem.embeddings.runtime import embed_with_spans

        return embed_with_spans(self.inner, texts, spans)

    def embed_query(self, text: str) -> Any:
        if text not in self.cache:
            self.cache[text] = self.inner.embed_query(text)
        return self.cache[text]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--work", type=Path, default=None, help="keep repositories here between runs")
    parser.add_argument("--modes", default="bm25,vector,hybrid")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--default-weights", action="store_true")
    parser.add_argument("--no-model", action="store_true")
    parser.add_argument("--model", default="auto", help="embedding model name (default: the packaged one)")
    parser.add_argument("--models-dir", type=Path, default=None, help="where `gitmem model install` put models")
    parser.add_argument("--sweep", action="store_true", help="run the ablations of docs/search.md")
    parser.add_argument("--dump", type=Path, default=None, help="write each question's ranks here (JSON lines)")
    args = parser.parse_args()
    if args.dump and args.sweep:
        parser.error("--dump writes one ranking's questions; --sweep runs many: use one or the other")
    turns, queries = load(args.data)
    work = args.work or Path(tempfile.mkdtemp(prefix="gitmem-locomo-"))
    work.mkdir(parents=True, exist_ok=True)
    modes = [m for m in args.modes.split(",") if m]
    embedder = load_model(args.no_model or modes == ["bm25"], args.model, args.models_dir)
    if embedder is None:
        modes = [m for m in modes if m == "bm25"] or ["bm25"]
    weights = RankingConfig() if args.default_weights else RankingConfig(w_sim=1.0, w_imp=0.0, w_rec=0.0)
    try:
        tuning = parse_set(args.set)
        if args.sweep:
            if embedder is not None:
                embedder = _QueryCache(embedder)
            print("R@10 per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop) | categories 1-4")
            for label, change in SWEEP:
                variant = replace(tuning, **change)
                scores = evaluate(turns, queries, work, modes, variant, weights, embedder)
                cells = "  ".join(f"{m}: " + " ".join(f"{scores.get(m, (c,))[1]:.3f}" for c in (1, 2, 3, 4))
                                  + f" | {scores.get(m, (1, 2, 3, 4))[1]:.3f}" for m in modes)
                print(f"{label:38} {cells}", flush=True)
            return
        started = time.perf_counter()
        with args.dump.open("w", encoding="utf-8") if args.dump else nullcontext() as dump:
            scores = evaluate(turns, queries, work, modes, tuning, weights, embedder, dump)
        print(f"LoCoMo dev, {sum(len(v) for v in queries.values())} questions, "
              f"{'default weights' if args.default_weights else 'w_imp = w_rec = 0'}, "
              f"model {getattr(embedder, 'model_id', 'none')}, {time.perf_counter() - started:.1f} s")
        print(table(scores, modes))
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
