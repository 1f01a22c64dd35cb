"""onnxruntime sessions and tokenizers of an embedding model: loading them (with a clear error for a missing or
corrupt file), the session options measured on 2 cores, the int8-activation rewrite's session, and what a model's
inputs and outputs are. Used by :class:`gitmem.embeddings.onnxembedder.OnnxEmbedder` and the model installer;
onnxruntime and tokenizers are imported inside the functions that need them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitmem.embeddings.runtime import WINDOW_OVERLAP
from gitmem.errors import EmbeddingError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["Io", "first_line", "inspect_io", "int8_options", "int8_session", "load_session", "load_tokenizer",
           "options"]


@dataclass
class Io:
    """The names and shapes :class:`~gitmem.embeddings.onnxembedder.OnnxEmbedder` feeds and reads."""

    input_names: frozenset[str]
    output_name: str
    output_rank: int
    native_dim: int | None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line[:300]


def load_tokenizer(path: Path, max_len: int) -> Any:
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
            f"tokenizer file {path} is not a valid tokenizer.json ({first_line(exc)}); "
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


def load_session(path: Path, threads: int, int8_activations: bool = False) -> tuple[Any, bool]:
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


def onnxruntime() -> Any:
    """The ``onnxruntime`` module, imported with its telemetry off (ImportError when it is not installed).

    Its recent Linux and macOS builds collect usage telemetry: on import, the library writes a device id under
    ``~/.cache/Microsoft/DeveloperTools`` and, where that folder is read-only, prints a warning on stderr (a line
    in every hook's output). Memories and what the agent does stay on this machine, so the opt-out variables are
    set before the first import (1.32 reads ``ORT_DISABLE_TELEMETRY``; later versions ``ORT_TELEMETRY_DISABLED``),
    unless the user set them."""
    for name in ("ORT_DISABLE_TELEMETRY", "ORT_TELEMETRY_DISABLED"):
        os.environ.setdefault(name, "1")
    import onnxruntime as ort

    return ort


def _new_session(path: Path, threads: int, int8_activations: bool) -> tuple[Any, bool]:
    if not path.is_file():
        raise EmbeddingError(
            f"embedding model file {path} is missing; reinstall the model "
            "(`gitmem model install NAME`) or set the embedding model to 'none'"
        )
    try:
        ort = onnxruntime()
    except ImportError as exc:
        raise EmbeddingError("the 'onnxruntime' package is not installed; install gitmem's embedding extra") from exc
    if int8_activations:
        # one thread a call (int8_options): ``threads`` one-text calls run side by side instead, which is what
        # keeps both cores busy with short texts
        session = int8_session(path, int8_options(ort))
        if session is not None:
            return session, True
    try:
        return ort.InferenceSession(str(path), sess_options=options(ort, threads),
                                    providers=["CPUExecutionProvider"]), False
    except Exception as exc:  # InvalidProtobuf, Fail, NoSuchFile... all derive from Exception
        raise EmbeddingError(
            f"embedding model file {path} could not be loaded ({first_line(exc)}): it is corrupt "
            "or not an ONNX model; delete it and reinstall (`gitmem model install NAME`)"
        ) from exc


def options(ort: Any, threads: int) -> Any:
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


def int8_options(ort: Any, threads: int = 1) -> Any:
    """Session options for a rewritten int8 model: one thread a call unless told otherwise
    (``OnnxEmbedder._one_by_one`` runs ``threads`` calls side by side), the residual ``Add`` and its
    ``LayerNormalization`` left unfused.

    onnxruntime's fused ``SkipLayerNormalization`` kernel was 16-17% of a call (36 and 256 tokens, AVX-512
    machine); with the ``Add`` and ``LayerNormalization`` kernels apart, a call runs about 1.2x faster. The
    sums are rounded differently, so now and then a value next to a quantisation step lands on its other side:
    the vectors move (mean cosine 0.9992 to the fused run's, ``docs/embeddings.md``), which
    :data:`~gitmem.embeddings.runtime.INT8_ACTIVATIONS_SUFFIX` says."""
    opts = options(ort, threads)
    opts.add_session_config_entry("optimization.disable_specified_optimizers", "SkipLayerNormFusion")
    return opts


def int8_session(path: Path, opts: Any) -> Any:
    """A session of ``path`` rewritten for int8 activations, or None (no int8 weight matrix in the graph, or
    this onnxruntime cannot run the rewrite): the caller then loads the file as it is."""
    ort = onnxruntime()

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
            "%s: int8 activations unavailable (%s); running float32 activations", path, first_line(exc)
        )
        return None


def inspect_io(session: Any, path: Path) -> Io:
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
    return Io(
        input_names=names,
        output_name=chosen.name,
        output_rank=len(chosen.shape),
        native_dim=last if isinstance(last, int) else None,
    )

