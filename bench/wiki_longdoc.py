"""Wiki search on long pages: XQuAD's 48 articles (``bench/sets/longdoc``) written as wiki pages, English and
Chinese, and its questions asked through :meth:`gitmem.wiki.store.Wiki.query`, by BM25 alone and hybrid (BM25 and
the pages' vectors fused, after :meth:`Wiki.embed`).

    python bench/wiki_longdoc.py [--langs en,zh] [--split dev|test|both] [--sections] [--weights 0.2,0.4]
                                 [--model NAME --models-dir DIR] [--bm25-only]

For each language and part it prints R@1 and R@5 (the answering article is the first hit / among the first five)
and ``snippet``: the share of questions whose first hit is the right page with a snippet holding at least half of
the answering sentence's words or CJK characters (:func:`top1.covered`, the measure of ``bench/sets/top1.py``),
first for BM25, then hybrid for each ``--weights`` value (``gitmem.wiki.search.VECTOR_WEIGHT``; default: the one
set there). ``--sections`` puts each paragraph under a ``## Part N`` heading, as a page written in sections; a hit
then names its section. Every page is 0.8-10k characters; the same 48 pages serve both parts (dev: questions on
articles 0-23, test: 24-47). Query times are medians over all questions (a warm index in one process). The
embedding line gives pages/s and vectors/s (a page's own and its chunks', from one model pass over the page), wall
and per CPU-second.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "sets"))

from top1 import covered  # noqa: E402

from gitmem.api import Repository  # noqa: E402
from gitmem.config import Config, EmbeddingConfig  # noqa: E402
from gitmem.store import wikipage as wp  # noqa: E402
from gitmem.store.layout import init_repo  # noqa: E402
from gitmem.wiki import search as wiki_search  # noqa: E402
from gitmem.wiki.search import PageIndex  # noqa: E402
from gitmem.wiki.store import Wiki  # noqa: E402

SETS = ROOT / "bench" / "sets" / "longdoc"


def write_pages(repo: Repository, project: str, articles: dict[str, str], sections: bool) -> None:
    """One page per article (name = the article id), its paragraphs as they are or each under a heading."""
    folder = repo.path / wp.WIKI_DIR / project
    folder.mkdir(parents=True)
    for key, text in articles.items():
        paragraphs = text.split("\n\n")
        body = "\n\n".join(f"## Part {n}\n\n{p}" for n, p in enumerate(paragraphs, start=1)) if sections \
            else text
        page = wp.make_page(key, f"Article {key[1:]}", body, category="reference")
        (folder / f"{key}.md").write_text(wp.dumps(page), "utf-8")
    Wiki(repo, project).regenerate()


def run(label: str, asked: list[dict[str, Any]], index: PageIndex, embedder: Any) -> None:
    """Ask each question of ``asked`` and print the figures (``embedder`` None: BM25 alone)."""
    r1 = r5 = shown = 0
    ms: list[float] = []
    for q in asked:
        start = time.perf_counter()
        hits = index.search(q["question"], k=5, embedder=embedder)
        ms.append((time.perf_counter() - start) * 1000)
        ranked = [h.name for h in hits]
        gold = q["evidence"][0]
        r1 += bool(ranked) and ranked[0] == gold
        r5 += gold in ranked
        shown += bool(ranked) and ranked[0] == gold and covered(hits[0].snippet, q["sentence"])
    n = len(asked)
    print(f"{label:28} n {n:4d}  R@1 {r1 / n:.3f}  R@5 {r5 / n:.3f}  snippet {shown / n:.3f}"
          f"   query median {statistics.median(ms):.1f} ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--langs", default="en,zh")
    parser.add_argument("--split", choices=("dev", "test", "both"), default="both")
    parser.add_argument("--sections", action="store_true", help="each paragraph under a '## Part N' heading")
    parser.add_argument("--weights", default="", help="comma-separated vector weights to compare (hybrid)")
    parser.add_argument("--model", default="auto", help="embedding model (as [embedding] model)")
    parser.add_argument("--models-dir", default="", help="where installed models are")
    parser.add_argument("--bm25-only", action="store_true")
    args = parser.parse_args()
    parts = {"dev": 0, "test": 1} if args.split == "both" else {args.split: 0 if args.split == "dev" else 1}
    weights = [float(w) for w in args.weights.split(",") if w] or [wiki_search.VECTOR_WEIGHT]
    for lang in args.langs.split(","):
        rows = [json.loads(line) for line in (SETS / lang / "turns.jsonl").read_text("utf-8").splitlines()]
        articles = {r["id"]: r["text"] for r in rows if r["conv"] == 0}
        queries = [json.loads(line) for line in (SETS / lang / "queries.jsonl").read_text("utf-8").splitlines()]
        tmp = Path(tempfile.mkdtemp(prefix="gitmem-wiki-longdoc-"))
        try:
            init_repo(tmp / "mem")
            embedding = EmbeddingConfig(model=args.model, **({"models_dir": args.models_dir} if args.models_dir
                                                             else {}))
            repo = Repository(Config(repo=tmp / "mem", embedding=embedding))
            write_pages(repo, "xquad", articles, args.sections)
            book = Wiki(repo, "xquad")
            index = book._index()
            start = time.perf_counter()
            index.refresh()
            print(f"{lang}: index built in {(time.perf_counter() - start) * 1000:.0f} ms", flush=True)
            embedder = None if args.bm25_only else repo.index().embedder
            if embedder is not None:
                wall, cpu = time.perf_counter(), time.process_time()
                pages, rows = book.embed(embedder)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                print(f"{lang}: embedded {pages} pages, {rows} vectors by {embedder.model_id} in {wall:.1f} s: "
                      f"{pages / wall:.2f} pages/s, {rows / wall:.1f} vectors/s wall; "
                      f"{pages / cpu:.2f} pages, {rows / cpu:.1f} vectors per CPU-s", flush=True)
            for part, conv in parts.items():
                asked = [q for q in queries if q["conv"] == conv]
                run(f"{lang} {part} bm25", asked, index, None)
                for weight in weights if embedder is not None else []:
                    wiki_search.VECTOR_WEIGHT = weight
                    run(f"{lang} {part} hybrid w={weight}", asked, index, embedder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
