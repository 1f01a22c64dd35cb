"""Vectors of wiki pages with the packaged model: a page found by the meaning of its last section, past the model's
first window, whose vector is pooled from the page's own pass; embedded once, re-embedded when edited or when the
recipe of its vectors changes, its vectors gone when deleted, and no page embedded by a search."""

from __future__ import annotations

from typing import Any

import pytest

from gitmem.embeddings.onnxembedder import OnnxEmbedder
from gitmem.search import pagevectors
from gitmem.search.pagevectors import PageVectors, page_input
from gitmem.store import wikipage as wp
from gitmem.store.memories import MemoryRepo
from gitmem.wiki.documents import page_parts
from gitmem.wiki.search import PageIndex
from gitmem.wiki.store import Wiki
from tests.helpers import CountingEmbedder

PAYMENTS = """\
## Overview

The payments service takes card payments for the shop. It talks to the processor over HTTPS, signs every request
with the merchant key and keeps an audit trail of each charge in Postgres, one row per attempt, with the
processor's reference and the amount in cents. The service runs three replicas behind the internal load balancer.

## Retries

A charge that times out is retried twice with exponential backoff, starting at two seconds. Idempotency keys are
generated per order, so a retried charge never bills twice. After the third failure the order is parked in the
manual queue and the on-call engineer gets a page with the order number and the processor's error code.

## Alerts

Grafana alerts fire when the error rate of the processor calls passes two percent over five minutes, or when the
queue of parked orders holds more than twenty entries. Each alert links to the runbook and to the dashboard of
the processor's latency percentiles, split by card network and by region.

## Fraud screening

Before a charge is sent, the fraud service scores it from the card's country, the shipping address, the basket
and the customer's history. Scores above eighty hold the order for a human review within the hour; scores above
ninety-five decline it outright and tell the customer to contact support with the reference shown on the page.

## Currencies

Prices are stored in euros. Charges in pounds, dollars and Swiss francs are converted at the rate fetched from the
central bank each morning at six, and the rate used is written beside each charge so that support can explain the
amount the customer saw on the statement.

## Refund reconciliation

Every Friday the finance team compares each refund we issued with the bank statement, and flags any reversal
that did not arrive within five working days so that it can be chased with the processor.
"""

OTHERS = {
    "deploy": ("Deploy pipeline", "Builds run on every push to main. The pipeline lints, runs the unit suite, "
                                  "builds the container image and rolls it out to staging, then to production "
                                  "after a manual approval in the release channel."),
    "database": ("Database schema", "Orders, carts and products live in Postgres 16. Migrations are written with "
                                    "Alembic and applied by the pipeline before the new image starts serving."),
}

# shares no word with any page: BM25 alone cannot find the answer
QUESTION = "weekly accounting check of returned funds"


@pytest.fixture
def wiki(repo: MemoryRepo) -> Wiki:
    book = Wiki(repo, "shop")
    folder = repo.path / wp.WIKI_DIR / "shop"
    folder.mkdir(parents=True)
    for name, (title, body) in {"payments": ("Payments service", PAYMENTS), **OTHERS}.items():
        (folder / f"{name}.md").write_text(wp.dumps(wp.make_page(name, title, body)), "utf-8")
    return book


def _index(book: Wiki) -> PageIndex:
    return book._index()


def _rows(book: Wiki, model: Any) -> set[str]:
    return PageVectors(_index(book).dir / "vectors", model.model_id).store.shas()


def test_a_paraphrased_question_finds_the_last_section_of_a_long_page(wiki: Wiki, embedder: OnnxEmbedder) -> None:
    index = _index(wiki)
    bm25 = index.search(QUESTION, k=3)
    assert not bm25 or bm25[0].name != "payments"  # no word in common: keywords alone miss it
    pages, texts = wiki.embed(embedder)
    assert pages == 3 and texts > 3  # the long page's chunks too
    hits = index.search(QUESTION, k=3, embedder=embedder)
    assert hits[0].name == "payments"
    assert hits[0].section == "Refund reconciliation" and "bank statement" in hits[0].snippet
    # a keyword question still finds its page, the snippet around its words
    hits = index.search("idempotency keys", k=3, embedder=embedder)
    assert hits[0].name == "payments" and hits[0].section == "Retries"


def test_a_query_no_page_is_about_finds_no_page(wiki: Wiki, embedder: OnnxEmbedder) -> None:
    """The fusion scales the best candidate to 1: without the model's floor, the nearest of unrelated pages came
    back for any query. A page that shares no word with the query needs a cosine at the floor; the paraphrase
    above still finds its page, made-up and off-topic queries find none."""
    wiki.embed(embedder)
    index = _index(wiki)
    for query in ("zzzqqq", "quantum chromodynamics lattice", "medieval falconry techniques"):
        assert index.search(query, k=3, embedder=embedder) == [], query
    assert index.search(QUESTION, k=3, embedder=embedder)[0].name == "payments"


def test_a_chunk_past_the_first_window_gets_its_own_row_from_the_pages_pass(wiki: Wiki,
                                                                          embedder: OnnxEmbedder) -> None:
    doc = _index(wiki).reader(wiki.repo.path / "wiki/shop/payments.md", "wiki/shop/payments.md")
    assert doc is not None
    text, spans = page_input(doc.title, page_parts(doc))
    first_window = max(end for _start, end in embedder._tokenizer.encode(text).offsets)
    last, span = spans[-1]
    assert span[-1][0] > first_window  # the refund section starts after the model's first 256 tokens
    # the chunk's row pools its own tokens, after its page's title and its section's heading
    assert " ".join(text[a:b] for a, b in span).split()[:5] == ["Payments", "service", "Refund", "reconciliation",
                                                                "Every"]
    assert wiki.embed(embedder)[0] == 3
    index = _index(wiki)
    key = index._state()["files"]["wiki/shop/payments.md"][3]
    rows = PageVectors(index.dir / "vectors", embedder.model_id).nearest(embedder, QUESTION, [key])[key]
    assert set(rows) == {0, *(n for n, _span in spans)}  # the page's row and one per chunk
    assert max(rows, key=lambda n: rows[n]) == last  # the question is nearest the refund section's row
    assert rows[last] > rows[0] + 0.1  # the page's own row (its first window) does not reach that far


def test_a_second_pass_embeds_nothing(wiki: Wiki, embedder: OnnxEmbedder) -> None:
    pages, rows = wiki.embed(embedder)
    assert pages == 3 and rows == len(_rows(wiki, embedder))
    store = PageVectors(_index(wiki).dir / "vectors", embedder.model_id).store
    written = store.marker()
    assert wiki.embed(embedder) == (0, 0) and store.marker() == written


def test_rows_of_another_recipe_are_not_read(wiki: Wiki, embedder: OnnxEmbedder,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as before:  # the vectors of the previous recipe
        before.setattr(pagevectors, "RECIPE", "1")
        assert wiki.embed(embedder)[0] == 3
    old = _rows(wiki, embedder)
    assert wiki.embed(embedder)[0] == 3  # each page once more, under keys of this recipe
    new = _rows(wiki, embedder)
    assert new and not new & old  # the old rows are compacted away, none is read
    hits = _index(wiki).search(QUESTION, k=3, embedder=embedder)
    assert hits[0].name == "payments" and hits[0].section == "Refund reconciliation"


def test_pages_are_embedded_once_again_when_edited_and_dropped_when_deleted(wiki: Wiki, embedder: OnnxEmbedder,
                                                                            repo: MemoryRepo) -> None:
    counting = CountingEmbedder(embedder, embedder.scripts)
    assert wiki.embed(counting)[0] == 3
    before = _rows(wiki, embedder)
    first = counting.documents
    assert wiki.embed(counting) == (0, 0) and counting.documents == first  # nothing changed: nothing embedded
    _index(wiki).search(QUESTION, embedder=counting)
    assert counting.documents == first and _rows(wiki, embedder) == before

    folder = repo.path / wp.WIKI_DIR / "shop"
    title, body = OTHERS["deploy"]
    (folder / "deploy.md").write_text(wp.dumps(wp.make_page("deploy", title, body + " Rollbacks take a minute.")),
                                      "utf-8")
    (folder / "database.md").unlink()
    assert wiki.embed(counting) == (1, 1)  # the edited page only (a short one: no chunks)
    after = _rows(wiki, embedder)
    assert len(after - before) == 1  # its new row
    assert len(before - after) == 2  # the old deploy row and the deleted page's are compacted away
    assert {k.split("#")[0] for k in after} == {k for k in after if "#" not in k}  # no orphan chunk row
    found = [h.name for h in _index(wiki).search("rollbacks", embedder=counting)]
    assert found[0] == "deploy" and "database" not in found


def test_a_search_ranks_pages_without_vectors_by_bm25_and_embeds_none(wiki: Wiki, embedder: OnnxEmbedder,
                                                                     repo: MemoryRepo) -> None:
    counting = CountingEmbedder(embedder, embedder.scripts)
    wiki.embed(counting)
    embedded = counting.documents
    folder = repo.path / wp.WIKI_DIR / "shop"
    (folder / "cache.md").write_text(wp.dumps(wp.make_page("cache", "Cache", "Redis keeps sessions for a day.")),
                                     "utf-8")
    rows = _rows(wiki, embedder)
    hits = _index(wiki).search("redis sessions", embedder=counting)
    assert hits[0].name == "cache" and "Redis" in hits[0].snippet  # found by its words, no vector needed
    assert counting.documents == embedded and _rows(wiki, embedder) == rows  # the query only was embedded
    # Wiki.query loads the configured model only when vectors exist, and embeds no page either
    assert wiki.query("redis sessions")[0].name == "cache"
    assert _rows(wiki, embedder) == rows


def test_once_every_page_is_deleted_a_query_loads_no_model_again(wiki: Wiki, embedder: OnnxEmbedder,
                                                                  repo: MemoryRepo) -> None:
    wiki.embed(CountingEmbedder(embedder, embedder.scripts))
    assert _index(wiki).has_vectors()
    for page in (repo.path / wp.WIKI_DIR / "shop").glob("*.md"):
        page.unlink()
    wiki.embed(CountingEmbedder(embedder, embedder.scripts))
    assert not _index(wiki).has_vectors()  # no empty shard left behind to make a search load the model


def test_without_vectors_a_query_loads_no_model(wiki: Wiki) -> None:
    assert not _index(wiki).has_vectors()
    assert wiki.query("idempotency keys")[0].name == "payments"
    assert not _index(wiki).has_vectors() and wiki.repo.__dict__.get("_index") is None


def test_embed_pages_covers_every_wiki_and_writer_work(wiki: Wiki, repo: Any) -> None:
    repo.writer("novel").save("character", "Lin Wei", notes="A retired lighthouse keeper who distrusts the sea.")
    pages, texts = repo.embed_pages()  # the warm-up's and reindex's step, with the configured (packaged) model
    assert pages == 4 and texts > pages  # three wiki pages (one long) and one note
    assert repo.embed_pages() == (0, 0)
    # no word in common with the note: BM25 alone finds nothing, its vectors do
    assert not repo.writer("novel")._index().search("someone afraid of the ocean")
    hits = repo.writer("novel").search("someone afraid of the ocean")
    assert hits[0].title == "Lin Wei"
