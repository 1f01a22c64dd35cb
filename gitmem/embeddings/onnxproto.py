"""The ONNX protobuf wire format, written and read by hand (field numbers from ``onnx.proto``).

gitmem builds and rewrites ONNX graphs (:mod:`gitmem.embeddings.convert`, :mod:`gitmem.embeddings.quantize`)
without the ``onnx`` package: a model is a few nested messages whose large parts (initializers) are copied as
bytes, so a protobuf writer of ~40 lines and a reader that walks one message level at a time are enough.
Only numpy (for :func:`tensor`) is imported, and only when a tensor is written.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "Field", "attr", "field", "fields", "integer", "node", "opset", "packed_ints", "raw_tensor", "tensor", "text",
    "value_info", "varint",
]

#: ``TensorProto.DataType`` codes used here.
FLOAT, UINT8, INT8, INT64, FLOAT16 = 1, 2, 3, 7, 10


# ---------------------------------------------------------------------------------------------
# Writing


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num: int, payload: bytes) -> bytes:
    """A length-delimited field (a message, a string, packed numbers)."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def integer(num: int, value: int) -> bytes:
    return varint(num << 3) + varint(value)


def text(num: int, value: str) -> bytes:
    return field(num, value.encode("utf-8"))


def tensor(name: str, arr: NDArray[Any]) -> bytes:
    """A ``TensorProto`` holding ``arr`` as raw little-endian bytes."""
    import numpy as np

    codes = {np.dtype(np.float32): FLOAT, np.dtype(np.uint8): UINT8, np.dtype(np.int8): INT8,
             np.dtype(np.int64): INT64, np.dtype(np.float16): FLOAT16}  # fmt: skip
    arr = np.ascontiguousarray(arr)
    return raw_tensor(name, codes[arr.dtype], arr.shape, arr.tobytes())


def raw_tensor(name: str, data_type: int, dims: tuple[int, ...] | list[int], raw: bytes) -> bytes:
    return b"".join(integer(1, d) for d in dims) + integer(2, data_type) + text(8, name) + field(9, raw)


def attr(name: str, value: int | float | str | list[int]) -> bytes:
    head = text(1, name)
    if isinstance(value, float):
        return head + integer(20, 1) + varint(2 << 3 | 5) + struct.pack("<f", value)
    if isinstance(value, int):
        return head + integer(20, 2) + integer(3, value)
    if isinstance(value, str):
        return head + integer(20, 3) + field(4, value.encode("utf-8"))
    return head + integer(20, 7) + b"".join(integer(8, v) for v in value)


def node(op_type: str, inputs: list[str], outputs: list[str], name: str = "", domain: str = "", **attrs: Any) -> bytes:
    """A ``NodeProto`` (not yet wrapped as a graph field)."""
    body = b"".join(text(1, i) for i in inputs) + b"".join(text(2, o) for o in outputs)
    body += (text(3, name) if name else b"") + text(4, op_type)
    body += b"".join(field(5, attr(k, v)) for k, v in attrs.items())
    return body + (text(7, domain) if domain else b"")


def opset(domain: str, version: int) -> bytes:
    """An ``OperatorSetIdProto`` (``ModelProto`` field 8)."""
    return (text(1, domain) if domain else b"") + integer(2, version)


def value_info(name: str, elem: int, dims: list[int | str]) -> bytes:
    shape = b"".join(field(1, text(2, d) if isinstance(d, str) else integer(1, d)) for d in dims)
    return text(1, name) + field(2, field(1, integer(1, elem) + field(2, shape)))


# ---------------------------------------------------------------------------------------------
# Reading


@dataclass(frozen=True)
class Field:
    """One field of a message: its number, wire type, value (an int for varints, the payload bytes for
    length-delimited and fixed-size fields) and its whole encoding (tag included), to copy it unchanged."""

    num: int
    wire: int
    value: int | memoryview
    raw: memoryview

    @property
    def data(self) -> memoryview:
        if isinstance(self.value, int):
            raise ValueError(f"field {self.num} is a varint, not a message or string")
        return self.value

    @property
    def string(self) -> str:
        return bytes(self.data).decode("utf-8")


def _read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("truncated or overlong varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def fields(data: bytes | memoryview) -> Iterator[Field]:
    """The fields of one message, in order. Raises ``ValueError`` on malformed input."""
    buf = memoryview(data)
    pos = 0
    while pos < len(buf):
        start = pos
        key, pos = _read_varint(buf, pos)
        num, wire = key >> 3, key & 7
        value: int | memoryview
        if wire == 0:
            value, pos = _read_varint(buf, pos)
        elif wire == 2:
            size, pos = _read_varint(buf, pos)
            if pos + size > len(buf):
                raise ValueError(f"field {num} runs past the end of its message")
            value, pos = buf[pos : pos + size], pos + size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if pos + width > len(buf):
                raise ValueError(f"field {num} runs past the end of its message")
            value, pos = buf[pos : pos + width], pos + width
        else:
            raise ValueError(f"unsupported wire type {wire} (field {num})")
        yield Field(num, wire, value, buf[start:pos])


def packed_ints(f: Field) -> list[int]:
    """A repeated int64 field, packed (one length-delimited field) or not (one varint), as signed values (a
    negative int64 is written as its 64-bit two's complement)."""
    if isinstance(f.value, int):
        return [_int64(f.value)]
    out, pos, buf = [], 0, f.value
    while pos < len(buf):
        value, pos = _read_varint(buf, pos)
        out.append(_int64(value))
    return out


def _int64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v
