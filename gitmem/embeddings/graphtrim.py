"""Trims of a rewritten embedding graph that change what onnxruntime runs, not the formula the model computes.

:func:`trim` runs each of these on a graph :mod:`gitmem.embeddings.quantize` has rewritten; onnxruntime's own
fusions leave this work in the packaged export (profile and figures in ``docs/embeddings.md``, "Where the time
goes"). Each pattern is matched exactly and anything else is left as it is:

* the NaN guard an exporter puts after an attention ``Softmax`` (``Where(IsNaN(p), 0, p)``) is dropped: a
  softmax has a NaN only when every key of a row is masked with ``-inf``, and a model call of the embedder
  always has its text's tokens to attend to (no output value changes);
* the keys' ``Reshape`` → ``Transpose`` → ``Reshape`` that an exporter writes for ``Kᵀ`` becomes one
  ``Transpose`` (the same values in the same places);
* GELU written out as ``x * (0.5 * (1 + Erf(x / √2)))`` becomes one ``com.microsoft.Gelu``, which computes the
  same formula in one pass over the activations instead of five (its ``x / √2`` is a multiplication by
  ``1/√2``: a value may differ in its last bit; measured on the packaged model in ``docs/embeddings.md``).
"""

from __future__ import annotations

import math
import struct

from gitmem.embeddings import onnxproto as proto
from gitmem.embeddings.onnxgraph import MS_DOMAIN, Graph, Node, is_op

__all__ = ["trim"]


def trim(graph: Graph) -> None:
    """Every trim of this module, in place."""
    _drop_nan_guards(graph)
    _transpose_keys(graph)
    _fuse_gelu(graph)


def _drop_nan_guards(graph: Graph) -> None:
    """``Where(IsNaN(p), c, p)`` after a ``Softmax`` → ``Identity(p)`` (which onnxruntime then removes).

    A softmax row has a NaN only when all its inputs are ``-inf`` (every key masked with ``-inf``) or one is NaN.
    The embedder never sends such a row: each model call holds one text, whose tokens are all attended to (the
    packaged export also masks with the most negative float, not ``-inf``, so even a fully masked row is finite).
    On the packaged model the guards cost ~10% of a 256-token call."""
    producer, uses = graph.producers(), graph.uses()
    for where in list(graph.nodes):
        if not is_op(where, "Where", 3):
            continue
        cond, fill, probs = where.inputs
        isnan, constant = producer.get(cond), graph.inits.get(fill)
        if not is_op(producer.get(probs), "Softmax") or not is_op(isnan, "IsNaN") or isnan.inputs != [probs]:
            continue
        if uses[cond] != 1 or constant is None or constant.dims not in ([], [1]):
            continue  # a fill of any other shape could broadcast the output to a shape other than ``p``'s
        graph.replace(where, proto.node("Identity", [probs], where.outputs, name=where.name))


def _transpose_keys(graph: Graph) -> None:
    """``Reshape(Transpose(Reshape(k, [-1, s, h]), [0, 2, 1]), [b, n, h, s])`` with ``k`` of shape ``[b, n, s, h]``
    (the sizes taken from ``Shape(k)``) → ``Transpose(k, [0, 1, 3, 2])``: the exporter's way of writing ``Kᵀ``
    for the attention scores, in 11 nodes a layer (``Shape``, ``Slice``, ``Concat``...) where one will do."""
    producer = graph.producers()
    for outer in list(graph.nodes):
        if not is_op(outer, "Reshape", 2):
            continue
        flip = producer.get(outer.inputs[0])
        if not is_op(flip, "Transpose") or flip.ints.get("perm") != [0, 2, 1]:
            continue
        inner = producer.get(flip.inputs[0])
        if not is_op(inner, "Reshape", 2):
            continue
        keys = inner.inputs[0]
        made_by = producer.get(keys)
        if not is_op(made_by, "Transpose") or len(made_by.ints.get("perm", [])) != 4:
            continue  # the rank of ``keys`` must be known to be 4
        dims: list[int | str] = ["b", "n", "s", "h"]
        if _shape_of(graph, producer, inner.inputs[1], keys, dims) != [-1, "s", "h"]:
            continue
        if _shape_of(graph, producer, outer.inputs[1], keys, dims) != ["b", "n", "h", "s"]:
            continue
        graph.replace(outer, proto.node("Transpose", [keys], outer.outputs, name=outer.name, perm=[0, 1, 3, 2]))


def _shape_of(graph: Graph, producer: dict[str, Node], name: str, of: str,
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


def _fuse_gelu(graph: Graph) -> None:
    """``Mul(x, Mul(0.5, Add(Erf(Div(x, √2)), 1)))`` → ``Gelu(x)`` (the operands of ``Add`` and each ``Mul`` in
    either order; ``Mul(x, 1/√2)`` for the ``Div``), when each intermediate is read by the next node only."""
    producer, uses = graph.producers(), graph.uses()
    for outer in list(graph.nodes):
        if not is_op(outer, "Mul", 2):
            continue
        for x, half_out in (outer.inputs, outer.inputs[::-1]):
            chain = _gelu_chain(graph, producer, x, half_out)
            if chain is not None and all(uses[n.outputs[0]] == 1 for n in chain):
                graph.replace(outer, proto.node("Gelu", [x], outer.outputs, name=outer.name, domain=MS_DOMAIN))
                for n in chain:
                    graph.nodes.remove(n)
                break


def _gelu_chain(graph: Graph, producer: dict[str, Node], x: str, half_out: str) -> list[Node] | None:
    """The ``Mul(0.5, …)``, ``Add(…, 1)``, ``Erf`` and scaling of ``x`` whose result is ``half_out``, or None."""
    half = producer.get(half_out)
    if not is_op(half, "Mul", 2):
        return None
    one_out = _other(graph, half.inputs, 0.5)
    one = producer.get(one_out or "")
    if not is_op(one, "Add", 2):
        return None
    erf = producer.get(_other(graph, one.inputs, 1.0) or "")
    if not is_op(erf, "Erf", 1):
        return None
    scaled = producer.get(erf.inputs[0])
    if is_op(scaled, "Div", 2) and scaled.inputs[0] == x and _is_value(graph, scaled.inputs[1], math.sqrt(2)):
        return [half, one, erf, scaled]
    if is_op(scaled, "Mul", 2) and _other(graph, scaled.inputs, math.sqrt(0.5)) == x:
        return [half, one, erf, scaled]
    return None


def _other(graph: Graph, inputs: list[str], value: float) -> str | None:
    """Of a binary node's two inputs, the one that is not the float constant ``value``; None when neither is."""
    first, second = inputs
    if _is_value(graph, second, value):
        return first
    return second if _is_value(graph, first, value) else None


def _is_value(graph: Graph, name: str, value: float) -> bool:
    """``name`` is a one-number float initializer holding ``value`` rounded to float32."""
    found = graph.scalar(name)
    return found is not None and found == _float32(value)


def _float32(value: float) -> float:
    (rounded,) = struct.unpack("<f", struct.pack("<f", value))
    return float(rounded)
