"""Indexing speed: how fast `gitmem reindex` embeds memories, and its peak memory.

    python bench/embedding.py [--short 2000] [--long 200] [--big 10000] [--model auto] [--threads 2]
                              [--models-dir DIR] [--float32-activations]

Three repositories are built with ``MemoryRepo.import_records``, indexed (``Index.refresh``: tantivy) and
embedded by ``Index.embed`` (the embedding step of ``gitmem reindex`` and of the warm-up, memory vectors and
sentence vectors) in a fresh child process each, so the peak RSS of each run is its own:

* ``short``: LoCoMo dialogue turns (one to three sentences, ~150 characters) when
  ``/work/shared/bench/locomo-dev`` is there, else generated sentences of the same size;
* ``long``: 2-3k character notes (turns joined), the size of a design note or a wiki page;
* ``big``: ``--big`` short memories, for the peak memory of a large first reindex.

Prints the embedding step's memories/s (wall), memories per CPU-second (steadier when other processes share
the cores) and the cores it kept busy (CPU-s / wall s), the peak RSS of the whole run, and the time of the BM25
index built before. Use a regular ``pip install .`` for figures a user would see. ``--float32-activations`` runs
the model as it is stored, without the int8-activation rewrite its settings ask for (the packaged default's
previous way), for comparison.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

# The installed package when there is one (a regular `pip install .`, as a user runs it); this checkout only when
# gitmem is not installed. Putting the checkout first unconditionally made two venvs' runs time the same code.
try:
    import gitmem  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LOCOMO = Path("/work/shared/bench/locomo-dev/turns.jsonl")
_TEXT = ("the build cache deploy branch commit review release database schema index query latency user prefers "
         "short answers tests must pass before merge we decided to use postgres because of json support and the "
         "team knows it well migration runs nightly rollback plan")
_WORDS = _TEXT.split()


def corpus(n_short: int, n_long: int, seed: int = 7) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    if LOCOMO.is_file():
        turns = [json.loads(line)["text"] for line in LOCOMO.open(encoding="utf-8") if line.strip()]
    else:
        turns = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 30))).capitalize() + "."
                 for _ in range(5000)]
    short = [turns[i % len(turns)] + ("" if i < len(turns) else f" ({i})") for i in range(n_short)]
    long: list[str] = []
    while len(long) < n_long:
        target, text = rng.randint(2000, 3000), ""
        while len(text) < target:
            text += rng.choice(turns) + " "
        long.append(text.strip()[:target])
    return short, long


def child(texts_file: Path, model: str, threads: int, models_dir: Path | None, float32: bool) -> None:
    """Runs in the child: import, embed, print one JSON line."""
    from datetime import UTC, datetime, timedelta

    from gitmem.config import Config
    from gitmem.search.index import Index
    from gitmem.store.layout import init_repo
    from gitmem.store.memories import MemoryRepo

    texts = json.loads(texts_file.read_text("utf-8"))
    root = Path(tempfile.mkdtemp(prefix="gitmem-embed-bench-"))
    try:
        config = Config(repo=root, author="bench <bench@example.com>")
        init_repo(root, author="bench <bench@example.com>")
        start = datetime(2025, 1, 1, tzinfo=UTC)
        records = [{"id": f"m{i}", "text": t, "source": f"s{i // 50}", "importance": 3,
                    "created": (start + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ")}
                   for i, t in enumerate(texts)]
        MemoryRepo(config).import_records(records, origin="bench")
        from gitmem.embeddings.runtime import EmbedSpec, load_embedder
        try:
            from gitmem.embeddings.onnxembedder import OnnxEmbedder
        except ImportError:  # an install from before the class had a module of its own, timed for comparison
            from gitmem.embeddings.runtime import OnnxEmbedder  # type: ignore[attr-defined,no-redef]

        embedder = load_embedder(EmbedSpec(model=model, threads=threads, models_dir=models_dir))
        if embedder is None:
            raise SystemExit("no embedding model available")
        if float32 and isinstance(embedder, OnnxEmbedder):
            as_stored = replace(embedder.config, int8_activations=False)
            embedder = OnnxEmbedder(embedder.model_path, embedder.tokenizer_path, as_stored, threads=threads)
        index = Index(MemoryRepo(config), embedder=embedder)
        cpu, wall = time.process_time(), time.perf_counter()
        index.refresh()  # the BM25 index (tantivy) from git
        index_cpu, index_wall = time.process_time() - cpu, time.perf_counter() - wall
        cpu, wall = time.process_time(), time.perf_counter()
        n = index.embed()  # the vectors: what `gitmem reindex` and the warm-up add on top
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(json.dumps({"n": n, "wall": wall, "cpu": cpu, "index_wall": index_wall, "index_cpu": index_cpu,
                          "model": getattr(embedder, "model_id", ""),
                          "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(label: str, texts: list[str], model: str, threads: int, models_dir: Path | None,
        float32: bool = False) -> dict[str, float]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(texts, fh)
    try:
        extra = ["--models-dir", str(models_dir)] if models_dir else []
        extra += ["--float32-activations"] if float32 else []
        out = subprocess.run([sys.executable, __file__, "--child", fh.name, "--model", model,
                              "--threads", str(threads), *extra], capture_output=True, text=True, check=True)
    finally:
        Path(fh.name).unlink(missing_ok=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    chars = sum(len(t) for t in texts) / max(1, len(texts))
    print(f"{label:6} {int(result['n']):6d} memories (~{chars:.0f} chars)  {result['n'] / result['wall']:7.1f}/s wall"
          f"  {result['n'] / max(result['cpu'], 1e-9):7.1f}/CPU-s  {result['cpu'] / result['wall']:4.2f} cores"
          f"  peak RSS {result['rss_mb']:.0f} MB"
          f"  (BM25 index first: {result['index_wall']:.1f} s, {result['index_cpu']:.1f} CPU-s)"
          f"  ({result['model']}, {threads} threads)", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", type=int, default=2000)
    parser.add_argument("--long", type=int, default=200)
    parser.add_argument("--big", type=int, default=0, help="also embed this many short memories (peak memory)")
    parser.add_argument("--model", default="auto")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models-dir", type=Path, default=None, help="where `gitmem model install` put models")
    parser.add_argument("--float32-activations", action="store_true",
                        help="run the model without the int8-activation rewrite (for comparison)")
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.model, args.threads, args.models_dir, args.float32_activations)
        return
    import gitmem

    print(f"gitmem from {Path(gitmem.__file__).parent}", flush=True)  # which code is timed
    short, long = corpus(max(args.short, args.big), args.long)
    common = (args.model, args.threads, args.models_dir, args.float32_activations)
    if args.short:
        run("short", short[:args.short], *common)
    if args.long:
        run("long", long, *common)
    if args.big:
        run("big", short[:args.big], *common)


if __name__ == "__main__":
    main()
