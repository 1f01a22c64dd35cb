"""int8 activations: the in-memory graph rewrite of int8-weight models (gitmem.embeddings.quantize).

Checked on the real packaged model (every weight product rewritten, vectors close to the float32 run's, the
labelled set still ranked, texts embedded side by side get the same bytes as one call each) and on small
hand-built graphs run by onnxruntime (the rewrite computes the same product, a graph without int8 weights is
left alone and keeps its model id).
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

import pytest

import gitmem.embeddings.sessions as embed_module
from gitmem.embeddings import onnxproto as proto
from gitmem.embeddings.onnxembedder import OnnxEmbedder
from gitmem.embeddings.quantize import int8_activations
from gitmem.embeddings.runtime import (
    PACKAGED_DEFAULT,
    EmbedSpec,
    ModelConfig,
    load_embedder,
)

np = pytest.importorskip("numpy")
ort = pytest.importorskip("onnxruntime")

from tests.embeddings.test_embeddings import DOCS, EN_QUERIES, ranking_metrics  # noqa: E402
from tests.helpers import run_cli  # noqa: E402


def op_types(model: bytes) -> Counter[str]:
    graph = next(f for f in proto.fields(model) if f.num == 7)
    nodes = (n for n in proto.fields(graph.data) if n.num == 1)
    return Counter(next(a.string for a in proto.fields(n.data) if a.num == 4) for n in nodes)


def tiny_model(int8_weights: bool, vocab: int = 30522, hidden: int = 32, out: int = 16) -> tuple[bytes, np.ndarray]:
    """input_ids → embedding rows → x @ W + b, W stored int8 with column scales (dequantised in the graph, as
    the packaged model does) or as float32; returns the model and the float32 weight it means."""
    rng = np.random.default_rng(7)
    table = rng.normal(size=(vocab, hidden)).astype(np.float32)
    wq = rng.integers(-127, 128, size=(hidden, out), dtype=np.int8)
    scale = (rng.random((1, out)) * 0.02 + 0.01).astype(np.float32)
    weight = wq.astype(np.float32) * scale
    bias = rng.normal(size=out).astype(np.float32)
    inits = [proto.tensor("table", table), proto.tensor("bias", bias)]
    nodes = [proto.node("Gather", ["table", "input_ids"], ["x"], axis=0)]
    if int8_weights:
        inits += [proto.tensor("w_q", wq), proto.tensor("w_scale", scale)]
        nodes += [proto.node("Cast", ["w_q"], ["w_f"], to=proto.FLOAT), proto.node("Mul", ["w_f", "w_scale"], ["w"])]
    else:
        inits.append(proto.tensor("w", weight))
    nodes += [proto.node("MatMul", ["x", "w"], ["y"]), proto.node("Add", ["y", "bias"], ["last_hidden_state"])]
    graph = b"".join(proto.field(1, n) for n in nodes) + proto.text(2, "tiny")
    graph += b"".join(proto.field(5, t) for t in inits)
    for name in ("input_ids", "attention_mask"):
        graph += proto.field(11, proto.value_info(name, proto.INT64, ["b", "s"]))
    graph += proto.field(12, proto.value_info("last_hidden_state", proto.FLOAT, ["b", "s", out]))
    model = proto.integer(1, 8) + proto.field(7, graph) + proto.field(8, proto.opset("", 17))
    return model, weight


def run(model: bytes, ids: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    (out,) = session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": np.ones_like(ids)})
    return np.asarray(out)


def test_the_rewrite_computes_the_same_product_with_int8_activations() -> None:
    model, _weight = tiny_model(int8_weights=True)
    rewritten, count = int8_activations(model)
    assert count == 1
    assert op_types(rewritten) == Counter({"Gather": 1, "DynamicQuantizeMatMul": 1})  # Cast, Mul, bias Add folded in
    ids = np.array([[101, 2023, 2003, 1037, 3231, 102], [101, 7592, 102, 0, 0, 0]], dtype=np.int64)
    exact, fast = run(model, ids), run(rewritten, ids)
    assert fast.shape == exact.shape == (2, 6, 16)
    cos = (exact * fast).sum(-1) / np.linalg.norm(exact, axis=-1) / np.linalg.norm(fast, axis=-1)
    assert cos.min() > 0.95 and cos.mean() > 0.98, cos  # 8-bit activations on a 32-wide product: 0.96-1.00
    assert not np.array_equal(exact, fast)  # the activations really were quantised


def tiny_attention(shared_input: bool = True, guard: bool = True, keys_transposed: bool = True,
                   keys_4d: bool = True) -> bytes:
    """One attention layer as the packaged model's exporter writes it (2 heads of 4): query, key and value from
    int8 weights; ``Kᵀ`` through ``Shape``/``Slice``/``Concat``/``Reshape``/``Transpose``; a NaN guard after
    the softmax. Each flag off breaks one pattern the rewrite trims: the three products read different
    activations; the ``Where`` after the softmax is no guard; the reshapes make something other than ``Kᵀ``;
    the keys have 5 dimensions (a ``Reshape`` puts a 1 in front, a ``Squeeze`` takes it off the scores), which
    the same ``Shape``/``Slice`` nodes take apart as if they had 4."""
    rng = np.random.default_rng(3)
    hidden, heads = 8, 2
    inits = [proto.tensor("table", rng.normal(size=(30522, hidden)).astype(np.float32)),
             proto.tensor("zero", np.array(0.0, dtype=np.float32)),
             proto.tensor("two", np.array(2.0, dtype=np.float32)),
             proto.tensor("heads", np.array([0, 0, heads, hidden // heads], dtype=np.int64)),
             proto.tensor("flat", np.array([0, 0, hidden], dtype=np.int64))]
    inits += [proto.tensor(name, np.array([v], dtype=np.int64))
              for name, v in (("minus1", -1), ("minus2", -2), ("first", -2**63), ("last", 2**63 - 1))]
    nodes = [proto.node("Gather", ["table", "input_ids"], ["x"], axis=0),
             proto.node("Mul", ["x", "two"], ["x2"]), proto.node("Mul", ["x2", "two"], ["x4"])]
    for p in "qkv":
        inits += [proto.tensor(f"w{p}", rng.integers(-127, 128, size=(hidden, hidden), dtype=np.int8)),
                  proto.tensor(f"s{p}", (rng.random((1, hidden)) * 0.02 + 0.01).astype(np.float32)),
                  proto.tensor(f"b{p}", rng.normal(size=hidden).astype(np.float32))]
        source = "x" if shared_input else {"q": "x", "k": "x2", "v": "x4"}[p]
        nodes += [proto.node("Cast", [f"w{p}"], [f"w{p}_f"], to=proto.FLOAT),
                  proto.node("Mul", [f"w{p}_f", f"s{p}"], [f"w{p}_s"]),
                  proto.node("MatMul", [source, f"w{p}_s"], [f"{p}_mm"]),
                  proto.node("Add", [f"{p}_mm", f"b{p}"], [p]),
                  proto.node("Reshape", [p, "heads"], [f"{p}_4d"]),
                  proto.node("Transpose", [f"{p}_4d"], [f"{p}_t"], perm=[0, 2, 1, 3])]
    rows = ("s", "h") if keys_transposed else ("h", "s")  # [-1, h, s]: the same shape at the end, not Kᵀ
    keys, scores = ("k_t", "scores") if keys_4d else ("k_5d", "scores_5d")
    if not keys_4d:  # [1, b, n, s, h]: the keys with a 1 in front, made by a 5-D Reshape and Transpose
        inits += [proto.tensor(name, np.array([v], dtype=np.int64)) for name, v in (("one", 1), ("axis0", 0))]
        nodes += [proto.node("Shape", ["k_4d"], ["k_shape"]),
                  proto.node("Concat", ["one", "k_shape"], ["shape5"], axis=0),
                  proto.node("Reshape", ["k_4d", "shape5"], ["k_5d_rows"]),
                  proto.node("Transpose", ["k_5d_rows"], [keys], perm=[0, 1, 3, 2, 4])]
    nodes += [proto.node("Shape", [keys], ["shape"]),
              proto.node("Slice", ["shape", "minus1", "last"], ["h"]),
              proto.node("Slice", ["shape", "minus2", "minus1"], ["s"]),
              proto.node("Slice", ["shape", "first", "minus2"], ["bn"]),
              proto.node("Concat", ["minus1", *rows], ["shape3"], axis=0),
              proto.node("Reshape", [keys, "shape3"], ["k3"]),
              proto.node("Transpose", ["k3"], ["k3t"], perm=[0, 2, 1]),
              proto.node("Concat", ["bn", "h", "s"], ["shape4"], axis=0),
              proto.node("Reshape", ["k3t", "shape4"], ["k_tt"]),
              proto.node("MatMul", ["q_t", "k_tt"], [scores])]
    if not keys_4d:
        nodes.append(proto.node("Squeeze", [scores, "axis0"], ["scores"]))
    nodes += [proto.node("Softmax", ["scores"], ["probs"], axis=-1),
              proto.node("IsNaN", ["probs" if guard else "scores"], ["nan"]),
              proto.node("Where", ["nan", "zero", "probs"], ["guarded"]),
              proto.node("MatMul", ["guarded", "v_t"], ["ctx"]),
              proto.node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
              proto.node("Reshape", ["ctx_t", "flat"], ["last_hidden_state"])]
    return assemble("attention", nodes, inits, hidden)


def assemble(name: str, nodes: list[bytes], inits: list[bytes], hidden: int,
             outputs: tuple[str, ...] = ("last_hidden_state",)) -> bytes:
    """A model of ``nodes`` and ``inits`` reading ``input_ids`` and ``attention_mask`` (``[b, s]``), each output
    ``[b, s, hidden]`` floats."""
    graph = b"".join(proto.field(1, n) for n in nodes) + proto.text(2, name)
    graph += b"".join(proto.field(5, t) for t in inits)
    for given in ("input_ids", "attention_mask"):
        graph += proto.field(11, proto.value_info(given, proto.INT64, ["b", "s"]))
    graph += b"".join(proto.field(12, proto.value_info(out, proto.FLOAT, ["b", "s", hidden])) for out in outputs)
    return proto.integer(1, 8) + proto.field(7, graph) + proto.field(8, proto.opset("", 17))


def test_the_graph_around_the_products_is_trimmed_without_changing_a_bit() -> None:
    ids = np.array([[101, 2023, 2003, 1037, 3231, 102], [101, 7592, 102, 0, 0, 0]], dtype=np.int64)
    trimmed, count = int8_activations(tiny_attention())
    untrimmed, _ = int8_activations(tiny_attention(), trim=False)
    assert count == 3
    ops = op_types(trimmed)
    assert (ops["DynamicQuantizeMatMul"], ops["Split"]) == (1, 1)  # query, key and value in one product
    assert not ops["IsNaN"] and not ops["Where"]
    assert not ops["Shape"] and not ops["Slice"] and not ops["Concat"] and ops["Reshape"] == 4
    assert op_types(untrimmed)["DynamicQuantizeMatMul"] == 3 and op_types(untrimmed)["Shape"] == 1
    assert np.array_equal(run(trimmed, ids), run(untrimmed, ids))


@pytest.mark.parametrize(("flag", "kept"), [("shared_input", "DynamicQuantizeMatMul"), ("guard", "IsNaN"),
                                            ("keys_transposed", "Shape"), ("keys_4d", "Shape")])
def test_a_graph_without_a_pattern_keeps_that_part(flag: str, kept: str) -> None:
    model = tiny_attention(**{flag: False})
    trimmed, count = int8_activations(model)
    untrimmed, _ = int8_activations(model, trim=False)
    assert count == 3
    assert op_types(trimmed)[kept] == op_types(untrimmed)[kept] > 0
    assert len(op_types(trimmed)) > 1 and op_types(trimmed) != op_types(untrimmed)  # the other patterns were trimmed
    ids = np.array([[101, 2023, 2003, 1037, 3231, 102]], dtype=np.int64)
    assert np.array_equal(run(trimmed, ids), run(untrimmed, ids))


def test_a_graph_without_int8_weights_is_left_as_it_is() -> None:
    model, _weight = tiny_model(int8_weights=False)
    assert int8_activations(model) == (model, 0)
    with pytest.raises(ValueError):
        int8_activations(b"\x0a\xff\xff\xff")  # a field longer than the data


def test_the_model_id_says_whether_activations_are_int8(tmp_path: Path,
                                                       packaged: tuple[Path, Path, ModelConfig, str]) -> None:
    tokenizer = packaged[1]
    for int8_weights, model_id in ((True, "tiny-a8r2"), (False, "tiny")):
        path = tmp_path / f"{int8_weights}.onnx"
        path.write_bytes(tiny_model(int8_weights)[0])
        emb = OnnxEmbedder(path, tokenizer, ModelConfig(name="tiny", int8_activations=True))
        assert (emb.model_id, emb.int8_activations) == (model_id, int8_weights)
        assert emb.embed_documents(["a short note"]).shape == (1, 16)
    plain = OnnxEmbedder(tmp_path / "True.onnx", tokenizer, ModelConfig(name="tiny"))
    assert (plain.model_id, plain.int8_activations) == ("tiny", False)
    assert ModelConfig.from_json(ModelConfig(name="m", int8_activations=True).to_json()).int8_activations


def test_the_packaged_model_runs_every_weight_product_on_int8(packaged: tuple[Path, Path, ModelConfig, str]) -> None:
    model = packaged[0].read_bytes()
    rewritten, count = int8_activations(model)
    assert count == 36  # 6 layers x (query, key, value, attention output, two feed-forward)
    before, after = op_types(model), op_types(rewritten)
    # each layer's query, key and value: one product of their weights side by side, then a Split
    assert after["DynamicQuantizeMatMul"] == 36 - 2 * 6 and after["Split"] == 6
    assert after["MatMul"] == before["MatMul"] - 36 == 12  # attention
    assert after["Cast"] == before["Cast"] - 36  # the embedding tables are still dequantised in the graph
    assert before["IsNaN"] == 6 and not after["IsNaN"]  # the softmax NaN guards
    assert after["Slice"] == before["Slice"] - 3 * 6  # the exporter's Kᵀ reshapes
    assert before["Erf"] == 6 and not after["Erf"] and after["Gelu"] == 6  # GELU, one operator a layer
    untrimmed, _ = int8_activations(model, trim=False)
    assert op_types(untrimmed)["DynamicQuantizeMatMul"] == 36 and op_types(untrimmed)["IsNaN"] == 6


def test_the_trimmed_graph_keeps_the_packaged_model_s_vectors_and_ranking(embedder: OnnxEmbedder) -> None:
    # The trims change what onnxruntime runs, not the formula; GELU as one operator may round a value's last bit
    # differently, which a later quantisation step can carry further (measured over 600 BEAM turns: mean cosine
    # 0.99995), so the vectors are close, not equal: short texts and 256-token windows.
    assert embedder.int8_activations
    texts = [*DOCS[:10], *DOCS[20:24], "ok", "word " * 300, " ".join(DOCS[:20])]  # 1 to 256 tokens
    untrimmed = copy.copy(embedder)
    model, _ = int8_activations(embedder.model_path.read_bytes(), trim=False)
    untrimmed._session = ort.InferenceSession(model, sess_options=embed_module.int8_options(ort),
                                              providers=["CPUExecutionProvider"])
    cos = (embedder.embed_documents(texts) * untrimmed.embed_documents(texts)).sum(axis=1)
    assert cos.min() > 0.995 and cos.mean() > 0.999, cos
    mrr_trimmed, _ = ranking_metrics(embedder, EN_QUERIES, embedder.embed_documents(DOCS))
    mrr_untrimmed, _ = ranking_metrics(untrimmed, EN_QUERIES, untrimmed.embed_documents(DOCS))
    assert abs(mrr_trimmed - mrr_untrimmed) <= 0.02, (mrr_trimmed, mrr_untrimmed)


def tiny_gelu(divide: bool = True, sqrt2: float = 2 ** 0.5, shared: bool = False, other_x: bool = False) -> bytes:
    """An int8 product then GELU as an exporter writes it: ``y * (0.5 * (1 + Erf(y / √2)))`` (or ``y * 1/√2``
    with ``divide`` off). ``sqrt2`` other than √2 makes it something else; ``shared`` makes the ``Erf`` output
    a second graph output, so it cannot go; ``other_x`` scales another tensor than the one multiplied last."""
    rng = np.random.default_rng(5)
    hidden = 8
    inits = [proto.tensor("table", rng.normal(size=(30522, hidden)).astype(np.float32)),
             proto.tensor("w_q", rng.integers(-127, 128, size=(hidden, hidden), dtype=np.int8)),
             proto.tensor("w_scale", (rng.random((1, hidden)) * 0.1 + 0.1).astype(np.float32)),
             proto.tensor("c", np.array(sqrt2 if divide else 1 / sqrt2, dtype=np.float32)),
             proto.tensor("one", np.array(1.0, dtype=np.float32)),
             proto.tensor("half", np.array(0.5, dtype=np.float32))]
    nodes = [proto.node("Gather", ["table", "input_ids"], ["x"], axis=0),
             proto.node("Cast", ["w_q"], ["w_f"], to=proto.FLOAT), proto.node("Mul", ["w_f", "w_scale"], ["w"]),
             proto.node("MatMul", ["x", "w"], ["y"]),
             *([proto.node("Mul", ["y", "half"], ["y2"])] if other_x else []),
             proto.node("Div" if divide else "Mul", ["y2" if other_x else "y", "c"], ["scaled"]),
             proto.node("Erf", ["scaled"], ["erf"]),
             proto.node("Add", ["one", "erf"], ["plus1"]),
             proto.node("Mul", ["plus1", "half"], ["halved"]),
             proto.node("Mul", ["halved", "y"], ["last_hidden_state"])]
    return assemble("gelu", nodes, inits, hidden, ("last_hidden_state", "erf") if shared else ("last_hidden_state",))


@pytest.mark.parametrize("divide", [True, False])
def test_gelu_written_out_runs_as_one_operator(divide: bool) -> None:
    ids = np.array([[101, 2023, 2003, 1037, 3231, 102]], dtype=np.int64)
    trimmed, count = int8_activations(tiny_gelu(divide))
    untrimmed, _ = int8_activations(tiny_gelu(divide), trim=False)
    assert count == 1
    assert op_types(trimmed) == Counter({"Gather": 1, "DynamicQuantizeMatMul": 1, "Gelu": 1})
    assert op_types(untrimmed)["Erf"] == 1
    fused, written_out = run(trimmed, ids), run(untrimmed, ids)
    assert np.allclose(fused, written_out, rtol=1e-6, atol=1e-7)  # the last bit at most


@pytest.mark.parametrize("variant", [{"sqrt2": 2.0}, {"sqrt2": 2.0, "divide": False}, {"shared": True},
                                     {"other_x": True}])
def test_something_that_is_not_gelu_keeps_its_operators(variant: dict[str, object]) -> None:
    model = tiny_gelu(**variant)  # type: ignore[arg-type]
    trimmed, _ = int8_activations(model)
    assert op_types(trimmed)["Erf"] == 1 and not op_types(trimmed)["Gelu"]
    ids = np.array([[101, 2023, 2003, 1037, 3231, 102]], dtype=np.int64)
    untrimmed, _ = int8_activations(model, trim=False)
    assert np.array_equal(run(trimmed, ids), run(untrimmed, ids))


def test_layer_norms_apart_keep_the_packaged_model_s_vectors(embedder: OnnxEmbedder, tmp_path: Path) -> None:
    # The int8 session leaves onnxruntime's SkipLayerNormalization unfused (faster): the graph it runs has none,
    # and the vectors move a little, which the model id says (`-a8r2`).
    model, _ = int8_activations(embedder.model_path.read_bytes())
    opts = embed_module.int8_options(ort)
    opts.optimized_model_filepath = str(tmp_path / "optimised.onnx")
    ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])
    ran = op_types((tmp_path / "optimised.onnx").read_bytes())
    assert not ran["SkipLayerNormalization"] and ran["LayerNormalization"] == 13  # embeddings + 2 a layer
    fused = copy.copy(embedder)
    fused._session = embed_module.int8_session(embedder.model_path, embed_module.options(ort, 1))
    texts = [*DOCS[:16], "word " * 300]
    mine, theirs = embedder.embed_documents(texts), fused.embed_documents(texts)
    cos = (mine * theirs).sum(axis=1)
    assert cos.min() > 0.995 and cos.mean() > 0.999, cos
    assert not np.array_equal(mine, theirs)


def test_int8_activations_keep_the_vectors_and_the_ranking(embedder: OnnxEmbedder) -> None:
    fast = embedder
    assert isinstance(fast, OnnxEmbedder) and fast.int8_activations
    exact = OnnxEmbedder(fast.model_path, fast.tokenizer_path, ModelConfig(name="f32", max_len=256))
    assert not exact.int8_activations and exact.model_id != fast.model_id
    a, b = fast.embed_documents(DOCS[:20]), exact.embed_documents(DOCS[:20])
    cos = (a * b).sum(axis=1)
    assert cos.min() > 0.95 and cos.mean() > 0.98, cos  # measured: min 0.97, mean 0.99
    mrr_fast, _ = ranking_metrics(fast, EN_QUERIES, fast.embed_documents(DOCS))
    mrr_exact, _ = ranking_metrics(exact, EN_QUERIES, exact.embed_documents(DOCS))
    assert mrr_fast >= mrr_exact - 0.05, (mrr_fast, mrr_exact)


@pytest.mark.usefixtures("packaged")
def test_model_status_says_which_variant_runs() -> None:
    result = run_cli("model", "status", "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert (data["in_use"], data["activations"]) == ("minilm-l6-int8-a8r2", "int8")
    assert "runs with:  int8 activations" in run_cli("model", "status").out
    assert "memories" not in data and not (Path.home() / ".gitmem").exists()  # no repository: none created


@pytest.mark.usefixtures("packaged")
def test_status_and_doctor_say_when_the_model_does_not_read_the_memories(tmp_path: Path) -> None:
    """Chinese memories with the packaged English model: `model status` counts them and names the model that reads
    them, `doctor` warns; English memories alone get neither."""
    mem = str(tmp_path / "mem")
    assert run_cli("init", mem).code == 0
    assert run_cli("--repo", mem, "remember", "Run tests with pytest -x").code == 0
    data = json.loads(run_cli("--repo", mem, "model", "status", "--json").out)
    assert (data["memories"], data["not_read"], data["note"]) == (1, 0, "")
    assert "multilingual" not in run_cli("--repo", mem, "doctor").out
    for text in ("数据库统一用 PostgreSQL", "提交信息用英文写"):
        assert run_cli("--repo", mem, "remember", text).code == 0
    data = json.loads(run_cli("--repo", mem, "model", "status", "--json").out)
    assert (data["memories"], data["not_read"]) == (3, 2)
    assert "gitmem model install multilingual-e5-small" in data["note"]
    assert "reads:      1 of 3 active memories" in run_cli("--repo", mem, "model", "status").out
    doctor = run_cli("--repo", mem, "doctor")
    assert doctor.code == 0, doctor.err  # a warning, not an error
    assert "warning embedding model minilm-l6-int8-a8r2: 2 of 3 active memories" in doctor.out


@pytest.mark.usefixtures("packaged")
def test_texts_embedded_side_by_side_get_the_bytes_of_one_call_each() -> None:
    # With int8 activations, `threads` one-text calls run at once on a session of one thread a call. A memory's
    # vector must not depend on that: the cache keyed by blob SHA holds vectors from a single sequential call
    # on a session of two threads a call (how int8 activations ran before), and they stay valid.
    fast = load_embedder(EmbedSpec(model=PACKAGED_DEFAULT, threads=2))
    assert isinstance(fast, OnnxEmbedder) and fast.int8_activations and fast.threads == 2
    texts = [*DOCS[:12], "ok", "word " * 300, DOCS[3] + " " + DOCS[4]]  # 1 to 256 tokens
    side_by_side = fast.embed_documents(texts)
    one_thread = copy.copy(fast)
    one_thread.threads = 1
    before = copy.copy(fast)
    before._session = embed_module.int8_session(fast.model_path, embed_module.int8_options(ort, 2))
    assert before._session is not None
    assert np.array_equal(side_by_side, one_thread.embed_documents(texts))
    assert np.array_equal(side_by_side, np.stack([before.embed_documents([t])[0] for t in texts]))
