"""The ONNX sentence-embedding model as it runs: :class:`OnnxEmbedder` tokenizes, batches by length (or, with int8
activations, runs one text a call with calls side by side), pools token states into vectors, and pools the vectors
of a text's spans from the same pass (:meth:`OnnxEmbedder.embed_with_spans`). Built by
:func:`gitmem.embeddings.runtime.load_embedder`; the sessions come from :mod:`gitmem.embeddings.sessions`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.embeddings.runtime import (
    BATCH_TOKENS,
    DEFAULT_THREADS,
    INT8_ACTIVATIONS_SUFFIX,
    REPLACED_INT8_SUFFIXES,
    ModelConfig,
    Span,
    span_texts,
)
from gitmem.embeddings.sessions import Io, first_line, inspect_io, load_session, load_tokenizer
from gitmem.errors import EmbeddingError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import numpy as np
    from numpy.typing import NDArray

__all__ = ["OnnxEmbedder"]


@dataclass
class OnnxEmbedder:
    """Runs a sentence-embedding ONNX export with onnxruntime and a ``tokenizer.json``.

    Pipeline: prefix → tokenize (truncate to ``max_len``) → model → mean/CLS pooling over the
    attention mask → optional layer norm → Matryoshka truncation → L2 normalisation.
    """

    model_path: Path
    tokenizer_path: Path
    config: ModelConfig
    dim: int = 0
    threads: int = DEFAULT_THREADS
    model_id: str = ""
    _session: Any = field(init=False, repr=False)
    _tokenizer: Any = field(init=False, repr=False)
    _io: Io = field(init=False, repr=False)
    _pad_id: int = field(init=False, repr=False, default=0)
    int8_activations: bool = field(init=False, default=False)
    """Whether the session runs with int8 activations (asked for by the config and the graph allowed it)."""
    replaces: tuple[str, ...] = field(init=False, default=())
    """Model ids whose cached vectors this model's make obsolete (:data:`REPLACED_INT8_SUFFIXES`)."""

    def __post_init__(self) -> None:
        self.model_path = Path(self.model_path)
        self.tokenizer_path = Path(self.tokenizer_path)
        wanted, mrl = self.dim or None, self.config.matryoshka_dims
        if wanted is not None and mrl and wanted not in mrl:  # fail before the expensive load
            raise EmbeddingError(
                f"embedding model {self.model_path} cannot give dim={wanted}; use one of {sorted(mrl)}"
            )
        self._tokenizer = load_tokenizer(self.tokenizer_path, self.config.max_len)
        self._pad_id = next((i for t in ("[PAD]", "<pad>") if (i := self._tokenizer.token_to_id(t)) is not None), 0)
        self._session, self.int8_activations = load_session(
            self.model_path, self.threads, self.config.int8_activations
        )
        self._io = inspect_io(self._session, self.model_path)
        native = self._io.native_dim
        if native is None:  # dynamic last axis: find out with one tiny run
            native = int(self._run(["a"]).shape[1])
            self._io.native_dim = native
        self.dim = _check_dim(self.config, native, self.dim or None, self.model_path)
        if not self.model_id:
            self.model_id = _model_id(self.config, self.dim, native)
            if self.int8_activations:
                base = self.model_id
                self.model_id += INT8_ACTIVATIONS_SUFFIX
                self.replaces = tuple(base + suffix for suffix in REPLACED_INT8_SUFFIXES)

    # -- public API -------------------------------------------------------------------------
    @property
    def scripts(self) -> tuple[str, ...]:
        """The writing systems the model covers (empty: all), for :func:`~gitmem.embeddings.runtime.covers`."""
        return self.config.scripts

    @property
    def vocab_size(self) -> int:
        return int(self._tokenizer.get_vocab_size())

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        prefix = self.config.document_prefix
        return self._embed([prefix + t for t in texts])

    def embed_query(self, text: str) -> NDArray[np.float32]:
        vec: NDArray[np.float32] = self._embed([self.config.query_prefix + text])[0]
        return vec

    def embed_with_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[Span]]
    ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """Each document's vector and, from the same model pass, a vector for each of its spans.

        ``spans[i]`` are the spans of ``texts[i]``, each one or more ``(start, end)`` character ranges (a sentence
        and the speaker's label that stands before the first one). A document's vector is what
        :meth:`embed_documents` gives (its first ``max_len`` tokens); a span's is the mean of the model's token
        outputs whose characters overlap its ranges, then normalised as a document vector is ("late chunking": a
        sentence's tokens have read the whole text around them, and cost nothing more). A text longer than
        ``max_len`` tokens is run, when a span lies past its first window, as consecutive windows sharing
        :data:`WINDOW_OVERLAP` tokens; each token's output is taken from the window it lies furthest inside.
        Returns ``(len(texts), dim)`` document vectors and ``(total spans, dim)`` span vectors in order.
        """
        import numpy as np

        if len(spans) != len(texts):
            raise ValueError("embed_with_spans needs one list of spans per text")
        prefix = self.config.document_prefix
        if self._io.output_rank == 2 or not texts:  # an export that pools has no token outputs to pool
            return self.embed_documents(texts), self.embed_documents(span_texts(texts, spans))
        encodings = self._tokenizer.encode_batch([prefix + t for t in texts])
        windows: list[Any] = []  # the encoding of each model call
        owned: list[list[int]] = []  # each text's windows, its first window first
        for i, enc in enumerate(encodings):
            owned.append([len(windows)])
            windows.append(enc)
            if enc.overflowing and spans[i]:
                covered = max(e for _s, e in enc.offsets)
                if any(b + len(prefix) > covered for span in spans[i] for _a, b in span):
                    owned[i].extend(range(len(windows), len(windows) + len(enc.overflowing)))
                    windows.extend(enc.overflowing)
        first = {ws[0]: i for i, ws in enumerate(owned)}
        tokens: list[Any] = [None] * len(windows)  # each window's token outputs
        own: list[Any] = [None] * len(texts)  # each text's pooled first window

        def run(batch: list[int]) -> None:
            hidden, mask = self._states([windows[w] for w in batch])
            pooled = self._pool(hidden, mask)
            for row, w in enumerate(batch):
                tokens[w] = hidden[row, :len(windows[w].ids)]
                if w in first:
                    own[first[w]] = pooled[row]

        lengths = [len(e.ids) for e in windows]
        if self.int8_activations:  # one window a call, calls side by side (see _one_by_one)
            self._each(len(windows), lambda w: run([w]), lengths)
        else:
            for batch in _batches(lengths, max(1, self.config.batch_size), BATCH_TOKENS):
                run(batch)
        parts: list[NDArray[np.float32]] = []
        for i, mine in enumerate(owned):
            if not spans[i]:
                continue
            starts, ends, vecs = _stitch([(windows[w], tokens[w]) for w in mine])
            for span in spans[i]:
                inside = np.zeros(len(starts), dtype=bool)
                for a, b in span:
                    inside |= (starts < b + len(prefix)) & (ends > a + len(prefix))
                parts.append(vecs[inside].mean(axis=0) if inside.any() else own[i])
        out = self._finish(np.stack(own))
        if not parts:
            return out, np.zeros((0, self.dim), dtype=np.float32)
        return out, self._finish(np.stack(parts))

    # -- internals --------------------------------------------------------------------------
    def _each(self, count: int, one: Callable[[int], None], lengths: Sequence[int]) -> None:
        """``one(i)`` for each ``i < count``, longest first, ``threads`` calls side by side (each call runs on one
        thread: :meth:`_one_by_one`)."""
        # longest first: the calls left at the end are short ones, so the threads finish together
        order = sorted(range(count), key=lambda i: -lengths[i])
        workers = min(max(1, self.threads), count)
        if workers <= 1:
            for i in order:
                one(i)
            return
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(workers, thread_name_prefix="gitmem-embed")
        try:
            for _done in pool.map(one, order):  # raises the first call's error
                pass
        finally:
            pool.shutdown(cancel_futures=True)  # after an error, the calls not started yet are dropped

    def _embed(self, texts: list[str]) -> NDArray[np.float32]:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(texts)  # once, in parallel (Rust); reused by every batch
        if self.int8_activations:
            self._one_by_one(encodings, out)
            return out
        for idx in _batches([len(e.ids) for e in encodings], max(1, self.config.batch_size), BATCH_TOKENS):
            out[idx] = self._finish(self._forward([encodings[i] for i in idx]))
        return out

    def _one_by_one(self, encodings: list[Any], out: NDArray[np.float32]) -> None:
        """Embed each encoding in a model call of its own, ``threads`` calls at once, into its row of ``out``.

        int8 activations are quantised with one range per model call: texts sharing a call would change each
        other's vectors (measured: up to 0.03 a component), so each text gets its own call (no padding either:
        long texts gain). One text is too little work to share between threads, so the session runs each call on
        one thread (:func:`~gitmem.embeddings.sessions.int8_options`) and several calls run side by side:
        onnxruntime releases the GIL while it runs, and a call's result does not depend on which thread ran it or
        what ran beside it.
        """

        def one(i: int) -> None:
            out[i] = self._finish(self._forward([encodings[i]]))[0]

        self._each(len(encodings), one, [len(e.ids) for e in encodings])

    def _run(self, texts: list[str]) -> NDArray[np.float32]:
        return self._forward(self._tokenizer.encode_batch(texts))

    def _forward(self, encodings: list[Any]) -> NDArray[np.float32]:
        """Pooled (not yet normalised) vectors for one batch of encodings."""
        return self._pool(*self._states(encodings))

    def _states(self, encodings: list[Any]) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        """The model's output for one batch of encodings (token states, or pooled vectors for an export that
        pools) and the attention mask."""
        import numpy as np

        length = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), length), self._pad_id, dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._io.input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        try:
            (hidden,) = self._session.run([self._io.output_name], feeds)
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EmbeddingError(
                f"embedding model {self.model_path} failed while running ({first_line(exc)}); "
                "reinstall it or choose another model"
            ) from exc
        return np.asarray(hidden, dtype=np.float32), mask

    def _pool(self, hidden: NDArray[np.float32], mask: NDArray[np.int64]) -> NDArray[np.float32]:
        import numpy as np

        if self._io.output_rank == 2:  # the export already pooled
            return hidden
        if self.config.pooling == "cls":
            cls: NDArray[np.float32] = np.ascontiguousarray(hidden[:, 0, :])
            return cls
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        counts: NDArray[np.float32] = np.maximum(weights.sum(axis=1), 1e-9)
        pooled: NDArray[np.float32] = summed / counts
        return pooled

    def _finish(self, pooled: NDArray[np.float32]) -> NDArray[np.float32]:
        import numpy as np

        vecs = pooled
        if self.config.layer_norm:
            mean = vecs.mean(axis=1, keepdims=True)
            var = vecs.var(axis=1, keepdims=True)
            vecs = (vecs - mean) / np.sqrt(var + 1e-5)
        vecs = vecs[:, : self.dim]
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        result: NDArray[np.float32] = (vecs / np.maximum(norms, 1e-12)).astype(np.float32)
        return result


def _stitch(windows: list[tuple[Any, NDArray[np.float32]]]) -> tuple[Any, Any, NDArray[np.float32]]:
    """(character starts, character ends, output) of each token of a text run as ``windows`` (its encoding and
    token outputs each, in order), special tokens left out; a token in two overlapping windows comes from the one
    it lies furthest inside, where it read the most context."""
    import numpy as np

    starts, ends, depth, rows = [], [], [], []
    for enc, hidden in windows:
        keep = np.flatnonzero(np.asarray(enc.special_tokens_mask) == 0)
        offsets = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)[keep]
        place = np.arange(len(keep))
        starts.append(offsets[:, 0])
        ends.append(offsets[:, 1])
        depth.append(np.minimum(place, len(keep) - 1 - place))
        rows.append(hidden[keep])
    start, end, deep, vecs = (np.concatenate(x) for x in (starts, ends, depth, rows))
    if len(windows) > 1:  # one row per token: by position, the deepest copy first, then the first of each
        order = np.lexsort((-deep, end, start))
        start, end, vecs = start[order], end[order], vecs[order]
        first = np.ones(len(start), dtype=bool)
        first[1:] = (start[1:] != start[:-1]) | (end[1:] != end[:-1])
        start, end, vecs = start[first], end[first], vecs[first]
    return start, end, vecs


def _batches(lengths: Sequence[int], rows: int, tokens: int) -> list[list[int]]:
    """Indices of ``lengths`` grouped for model calls: sorted by length (little padding), at most ``rows`` texts
    and ``tokens`` padded tokens a call (a single longer text still gets its own call)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:  # ascending: the text being added is the longest of its batch
        if current and (len(current) >= rows or (len(current) + 1) * lengths[i] > tokens):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def _check_dim(config: ModelConfig, native: int, wanted: int | None, path: Path) -> int:
    dim = wanted or config.default_dim or native
    if dim == native:
        return dim
    allowed = sorted({d for d in config.matryoshka_dims if d <= native})
    if dim not in allowed:
        hint = f"one of {allowed}" if allowed else f"{native} (it cannot be truncated)"
        raise EmbeddingError(f"embedding model {path} cannot give dim={dim}; use {hint}")
    return dim


def _model_id(config: ModelConfig, dim: int, native: int) -> str:
    if config.matryoshka_dims or dim != native:
        return f"{config.name}@{dim}"
    return config.name

