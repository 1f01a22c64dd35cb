"""Span vectors from a text's own model pass (``OnnxEmbedder.embed_with_spans``), checked against the model's token
outputs computed here from the tokenizer file and the session directly."""

from __future__ import annotations

import gzip
from typing import Any

import numpy as np
import pytest
from tokenizers import Tokenizer

from gitmem.embeddings.onnxembedder import OnnxEmbedder
from gitmem.embeddings.runtime import WINDOW_OVERLAP, embed_with_spans

TURN = "Caroline: I went to the LGBTQ support group yesterday. It was so powerful! The stories moved me."
FILLER = ("The service keeps its configuration in one file that every worker reads at start. "
          "Workers restart one at a time so the queue never stops. ")


def _tokenizer(embedder: OnnxEmbedder) -> Any:
    """The model's tokenizer as the file gives it: no truncation, so every token of a long text is there."""
    raw = embedder.tokenizer_path.read_bytes()
    tok = Tokenizer.from_str(gzip.decompress(raw).decode() if embedder.tokenizer_path.suffix == ".gz" else raw.decode())
    tok.no_padding()
    tok.no_truncation()
    return tok


def _outputs(embedder: OnnxEmbedder, ids: list[int]) -> Any:
    """The model's token outputs for one row of token ids."""
    row = np.array([ids], dtype=np.int64)
    feeds = {"input_ids": row, "attention_mask": np.ones_like(row)}
    if "token_type_ids" in embedder._io.input_names:
        feeds["token_type_ids"] = np.zeros_like(row)
    (hidden,) = embedder._session.run([embedder._io.output_name], feeds)
    return hidden[0]


def _mean_of(hidden: Any, offsets: list[tuple[int, int]], *ranges: tuple[int, int]) -> Any:
    """The normalised mean of the outputs of the tokens whose characters overlap any of ``ranges``."""
    rows = [hidden[i] for i, (a, b) in enumerate(offsets) if b > a and any(a < e and b > s for s, e in ranges)]
    vec = np.mean(rows, axis=0)
    return vec / np.linalg.norm(vec)


def test_a_span_vector_is_the_mean_of_its_tokens_outputs(embedder: OnnxEmbedder) -> None:
    first, second = TURN.index("I went"), TURN.index("It was")
    spans = [((first, second - 1),), ((second, len(TURN)),)]
    vecs, span_vecs = embedder.embed_with_spans([TURN], [spans])
    assert np.array_equal(vecs[0], embedder.embed_documents([TURN])[0])  # the memory's vector does not change
    enc = _tokenizer(embedder).encode(TURN)
    hidden = _outputs(embedder, enc.ids)
    expected = np.stack([_mean_of(hidden, enc.offsets, *s) for s in spans])
    # a span of two ranges (the speaker's label, a later sentence) pools the tokens of both
    label = (0, TURN.index(":") + 1)
    _v, labelled = embedder.embed_with_spans([TURN], [[(label, spans[1][0])]])
    np.testing.assert_allclose(labelled[0], _mean_of(hidden, enc.offsets, label, spans[1][0]), atol=1e-5)
    assert span_vecs.shape == (2, embedder.dim)
    np.testing.assert_allclose(span_vecs, expected, atol=1e-5)
    # each sentence's vector is nearer its own sentence, read alone, than the other one
    alone = embedder.embed_documents([TURN[a:b] for ((a, b),) in spans])
    assert (span_vecs @ alone.T).argmax(axis=1).tolist() == [0, 1]


def test_a_span_past_the_first_window_pools_the_window_that_holds_it(embedder: OnnxEmbedder) -> None:
    text = FILLER * 10 + "Our on-call engineers get paged through Opsgenie when the error budget burns fast."
    last = (text.index("Our on-call"), len(text))
    enc = _tokenizer(embedder).encode(text, add_special_tokens=False)
    width = embedder.config.max_len - 2  # content tokens of a window, between [CLS] and [SEP]
    assert width < len(enc.ids) < 2 * width - WINDOW_OVERLAP  # two windows, the last sentence in the second only
    start = width - WINDOW_OVERLAP
    cls, sep = (embedder._tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]"))
    hidden = _outputs(embedder, [cls, *enc.ids[start:], sep])[1:-1]
    vecs, span_vecs = embedder.embed_with_spans([text], [[(last,), ((0, 20),)]])
    np.testing.assert_allclose(span_vecs[0], _mean_of(hidden, enc.offsets[start:], last), atol=1e-5)
    assert np.array_equal(vecs[0], embedder.embed_documents([text])[0])  # the first window, as before
    question = embedder.embed_query("who gets paged when the error budget burns")
    assert float(span_vecs[0] @ question) > float(vecs[0] @ question) + 0.2


def test_an_embedder_without_span_pooling_embeds_each_span_alone(embedder: OnnxEmbedder) -> None:
    """A test's or remote embedder has only ``embed_documents``: each span is then embedded as a text of its own."""

    class Plain:
        model_id, dim = embedder.model_id, embedder.dim

        def embed_documents(self, texts: Any) -> Any:
            return embedder.embed_documents(texts)

        def embed_query(self, text: str) -> Any:
            return embedder.embed_query(text)

    spans = [((0, 9),), ((0, 9), (10, 30))]
    vecs, span_vecs = embed_with_spans(Plain(), [TURN, "no spans"], [spans, []])
    assert vecs.shape == (2, embedder.dim) and span_vecs.shape == (2, embedder.dim)
    np.testing.assert_allclose(span_vecs, embedder.embed_documents([TURN[0:9], TURN[0:30]]), atol=1e-6)


def test_spans_must_come_one_list_a_text(embedder: OnnxEmbedder) -> None:
    with pytest.raises(ValueError, match="one list of spans per text"):
        embedder.embed_with_spans([TURN], [])
