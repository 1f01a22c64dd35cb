"""An ONNX model's main graph, read for rewriting: its nodes in order, its initializers, its outputs.

The rewrites (:mod:`gitmem.embeddings.quantize`, :mod:`gitmem.embeddings.graphtrim`) match patterns on these
and replace nodes; :func:`write` puts the model back together from the original protobuf fields, copying every
field it did not change as bytes (:mod:`gitmem.embeddings.onnxproto` reads and writes them), and drops the nodes
and initializers nothing reads any more. Neither the ``onnx`` package nor a file on disk is needed.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import TypeGuard

from gitmem.embeddings import onnxproto as proto

__all__ = ["MS_DOMAIN", "Graph", "Init", "Model", "Node", "is_op", "read", "write"]

MS_DOMAIN = "com.microsoft"
"""onnxruntime's own operators (``DynamicQuantizeMatMul``, ``Gelu``)."""


@dataclass(eq=False)  # a node is itself: compared (list.remove) by identity
class Node:
    op_type: str
    domain: str
    name: str
    inputs: list[str]
    outputs: list[str]
    ints: dict[str, list[int]]  # integer attributes (perm, axis...)
    subgraph: bool  # has a graph attribute (If, Loop, Scan): its body may read any name of this graph
    encoded: bytes | memoryview  # the graph's field holding the NodeProto (tag included), written back as it is


@dataclass
class Init:
    data_type: int
    dims: list[int]
    payload: memoryview | None  # raw_data or packed float_data; None when stored another way
    int64s: list[int] | None = None  # int64_data, when stored that way


@dataclass
class Graph:
    nodes: list[Node]
    inits: dict[str, Init]
    outputs: set[str]
    opset: int  # of the default domain
    added: dict[str, bytes] = field(default_factory=dict)  # new initializers (TensorProto bytes) by name

    def producers(self) -> dict[str, Node]:
        return {out: n for n in self.nodes for out in n.outputs}

    def uses(self) -> Counter[str]:
        uses = Counter(i for n in self.nodes for i in n.inputs)
        uses.update(self.outputs)  # graph outputs count as uses
        return uses

    def add_init(self, name: str, data_type: int, dims: list[int], raw: bytes) -> str:
        self.added[name] = proto.raw_tensor(name, data_type, dims, raw)
        self.inits[name] = Init(data_type, dims, memoryview(raw))
        return name

    def replace(self, old: Node, *new: bytes) -> None:
        """Put the nodes ``new`` (``NodeProto`` bytes) where ``old`` was."""
        i = next(k for k, n in enumerate(self.nodes) if n is old)
        self.nodes[i : i + 1] = [_node(b, proto.field(1, b)) for b in new]

    def constant(self, name: str) -> list[int] | None:
        """The values of an int64 initializer, or None."""
        init = self.inits.get(name)
        if init is None or init.data_type != proto.INT64:
            return None
        if init.int64s is not None:
            return init.int64s
        if init.payload is None or len(init.payload) % 8:
            return None
        return list(struct.unpack(f"<{len(init.payload) // 8}q", init.payload))

    def scalar(self, name: str) -> float | None:
        """The value of a float initializer holding one number (shape ``[]`` or ``[1]``), or None."""
        init = self.inits.get(name)
        if init is None or init.data_type != proto.FLOAT or init.dims not in ([], [1]):
            return None
        if init.payload is None or len(init.payload) != 4:
            return None
        (value,) = struct.unpack("<f", init.payload)
        return float(value)


@dataclass
class Model:
    top: list[proto.Field]  # the ModelProto's fields
    fields: list[proto.Field]  # its graph's fields
    graph: Graph


def read(model: bytes) -> Model | None:
    """``model``'s main graph, or None when it has none. Raises ``ValueError`` when ``model`` is not a readable
    protobuf."""
    top = list(proto.fields(model))
    graph_field = next((f for f in top if f.num == 7), None)
    if graph_field is None:
        return None
    fields = list(proto.fields(graph_field.data))
    graph = Graph(
        nodes=[_node(f.data, f.raw) for f in fields if f.num == 1],
        inits=dict(_init(f.data) for f in fields if f.num == 5),
        outputs={_text(f) for f in fields if f.num == 12},
        opset=next((_opset_version(f) for f in top if f.num == 8 and _text(f) in ("", "ai.onnx")), 1),
    )
    return Model(top, fields, graph)


def write(model: Model) -> bytes:
    """The model's bytes with its graph as it is now, importing :data:`MS_DOMAIN` when a node is from it."""
    new_graph = b"".join(_graph_fields(model.graph, model.fields))
    out = [proto.field(7, new_graph) if f.num == 7 else f.raw for f in model.top]
    uses_ms = any(n.domain == MS_DOMAIN for n in model.graph.nodes)
    if uses_ms and not any(f.num == 8 and _text(f) == MS_DOMAIN for f in model.top):
        out.append(proto.field(8, proto.opset(MS_DOMAIN, 1)))
    return b"".join(out)


def is_op(n: Node | None, op_type: str, inputs: int | None = None) -> TypeGuard[Node]:
    """``n`` is an ``op_type`` node of the default domain (with that many inputs, if given)."""
    return n is not None and (n.op_type, n.domain) == (op_type, "") and inputs in (None, len(n.inputs))


def _graph_fields(graph: Graph, fields: list[proto.Field]) -> list[bytes | memoryview]:
    """The graph's fields with its nodes, without the nodes and initializers nothing reads any more."""
    nodes, subgraphs = graph.nodes, any(n.subgraph for n in graph.nodes)
    if not subgraphs:  # a subgraph may read names no input lists: then keep everything
        needed = set(graph.outputs)
        kept = []
        for n in reversed(nodes):
            if any(o in needed for o in n.outputs):
                kept.append(n)
                needed.update(n.inputs)
        nodes = kept[::-1]
    still_used = {i for n in nodes for i in n.inputs} | {_text(f) for f in fields if f.num == 11}
    if subgraphs:
        still_used.update(graph.inits)
    first = next(f for f in fields if f.num == 1)  # the nodes go where the first one was, in their (topological) order
    parts: list[bytes | memoryview] = []
    for f in fields:
        if f is first:
            parts.extend(n.encoded for n in nodes)
        elif f.num != 1 and (f.num != 5 or _text(f, 8) in still_used):
            parts.append(f.raw)
    parts.extend(proto.field(5, t) for name, t in graph.added.items() if name in still_used)
    return parts


def _node(data: bytes | memoryview, encoded: bytes | memoryview) -> Node:
    op_type = domain = name = ""
    inputs, outputs, ints, subgraph = list[str](), list[str](), dict[str, list[int]](), False
    for f in proto.fields(data):
        if f.num == 1:
            inputs.append(f.string)
        elif f.num == 2:
            outputs.append(f.string)
        elif f.num == 3:
            name = f.string
        elif f.num == 4:
            op_type = f.string
        elif f.num == 5:
            attr_name, values = "", list[int]()
            for a in proto.fields(f.data):
                if a.num == 1:
                    attr_name = a.string
                elif a.num in (3, 8):  # i, ints
                    values.extend(proto.packed_ints(a))
                elif a.num in (6, 11):  # g, graphs
                    subgraph = True
            ints[attr_name] = values
        elif f.num == 7:
            domain = f.string
    return Node(op_type, domain, name, inputs, outputs, ints, subgraph, encoded)


def _init(data: memoryview) -> tuple[str, Init]:
    name, data_type, dims, payload, int64s = "", 0, [], None, None
    for f in proto.fields(data):
        if f.num == 1:
            dims.extend(proto.packed_ints(f))
        elif f.num == 2 and isinstance(f.value, int):
            data_type = f.value
        elif f.num == 7:  # int64_data
            int64s = [*(int64s or []), *proto.packed_ints(f)]
        elif f.num == 8:
            name = f.string
        elif f.num == 9 or (f.num == 4 and f.wire == 2):  # raw_data, or packed float_data (same bytes)
            payload = f.data
    return name, Init(data_type, dims, payload, int64s)


def _text(f: proto.Field, num: int = 1) -> str:
    """The string field ``num`` of the message in ``f``: a value info's or an opset's name (1), a tensor's (8)."""
    return next((g.string for g in proto.fields(f.data) if g.num == num), "")


def _opset_version(f: proto.Field) -> int:
    return next((g.value for g in proto.fields(f.data) if g.num == 2 and isinstance(g.value, int)), 1)
