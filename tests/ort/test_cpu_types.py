"""float16 and quantized graphs on the CPU provider: the kernel table, InsertCastTransformer's
Casts, refusals, and the quantization ops' shapes — hand-computed, then checked with onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from builders import init, model, save, tensor
from onnx import TensorProto, helper

import graphmem
from graphmem.errors import ModelLoadError, UnsupportedOpError
from graphmem.ort.contrib_shapes import infer_contrib
from graphmem.ort.kernels import has_cpu_kernel, kernel_type_problem
from graphmem.model.types import TensorType
from graphmem.verify import make_feeds, measure

F, H, B = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16
U8, I8, I32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32


def test_kernel_table_rows() -> None:
    # x86-64 build: no float16 Relu (MLAS_F16VEC_INTRINSICS_SUPPORTED is ARM64 only), float16 Concat
    assert has_cpu_kernel("", "Relu", 14, [F]) and not has_cpu_kernel("", "Relu", 14, [H])
    assert has_cpu_kernel("ai.onnx", "Concat", 13, [H, H, H])
    assert kernel_type_problem("", "Add", 14, [B, B]) == "the CPU provider has no Add kernel for T=bfloat16"
    # an open-ended kernel serves its first version only (kernel_registry.cc VerifyVersion)
    assert kernel_type_problem("", "Relu", 15, [F]) == "the CPU provider has no Relu kernel for opset version 15"
    # QLinearConv: uint8 activations with int8 or uint8 weights, or int8 with int8
    q = [U8, F, U8, I8, F, I8, F, U8, I32]
    assert has_cpu_kernel("com.microsoft", "QLinearConv", 1, q)
    assert not has_cpu_kernel("com.microsoft", "QLinearConv", 1, [I8, F, I8, U8, F, U8, F, I8, I32])


def _peak(path: Path, dims=None) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(predicted, measured) requested peak of run 1 at ORT_DISABLE_ALL."""
    import onnx

    predicted = graphmem.analyze(path, dims=dims).activations.peak_bytes
    feeds = make_feeds(onnx.load(str(path)), dims or {}, seed=0)
    return predicted, measure(str(path), feeds, graph_opt="none", threads=1, runs=1).runs[0].requested_peak


def test_relu_fp16_runs_in_float32_behind_casts(tmp_path: Path) -> None:
    # X fp16 [1,4] -> Relu -> Y fp16 (graph output). No fp16 Relu: onnxruntime runs
    #   Cast(X->f32) [16 B] ; Relu f32, in place on the Cast's output (MayInplace, last use) ;
    #   Cast(->f16) writes Y [8 B, own buffer]: 16 + 8 live at that step -> peak 24
    # (as float16 graphmem would have said 8).
    m = model([helper.make_node("Relu", ["x"], ["y"])], [tensor("x", [1, 4], H)], [tensor("y", [1, 4], H)])
    predicted, measured = _peak(save(m, tmp_path / "relu16.onnx"))
    assert predicted == 24 and measured == 24


def test_isolated_fp16_node_is_forced_to_float32(tmp_path: Path) -> None:
    # Relu -> Transpose -> Relu, fp16 [1,4]. Transpose has an fp16 kernel, but both neighbours
    # are cast, so ForceSingleNodeCPUFloat16ToFloat32 runs it in float32 too; after the
    # duplicate-Cast remover: Cast(x) 16 | Relu in place 16 | Transpose 16 new, Relu's output
    # freed after it -> 32 | Relu in place 16 | Cast(->y) 8 new -> 24. Peak 32.
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Transpose", ["a"], ["b"], perm=[1, 0]),
             helper.make_node("Relu", ["b"], ["y"])]
    m = model(nodes, [tensor("x", [1, 4], H)], [tensor("y", [4, 1], H)])
    predicted, measured = _peak(save(m, tmp_path / "iso16.onnx"))
    assert predicted == 32 and measured == 32


def test_fp16_weights_are_cast_each_run(tmp_path: Path) -> None:
    # Add(x, w) with a fp16 weight w [256]: no fp16 Add, so Cast(w) is a 1,024-byte float tensor
    # of the run (ORT_DISABLE_ALL folds nothing): Cast(x) 1,024 + Cast(w) 1,024, Add in place? no
    # (Add is not MayInplace on CPU): Add 1,024 -> 3,072 at Add; Cast(->y) 512 with Add's output
    # live: Cast(x) and Cast(w) freed after Add -> 1,536. Peak 3,072.
    w = init("w", np.ones(256, dtype=np.float16))
    m = model([helper.make_node("Add", ["x", "w"], ["y"])], [tensor("x", [256], H)], [tensor("y", [256], H)], [w])
    predicted, measured = _peak(save(m, tmp_path / "add16.onnx"))
    assert predicted == 3072 and measured == 3072


def test_bfloat16_node_without_kernel_is_refused(tmp_path: Path) -> None:
    m = model([helper.make_node("Add", ["x", "x"], ["y"], name="add")], [tensor("x", [4], B)], [tensor("y", [4], B)])
    with pytest.raises(UnsupportedOpError, match="node 'add' \\(Add\\): the CPU provider has no Add kernel for T=bfloat16"):
        graphmem.analyze(save(m, tmp_path / "bf16.onnx"))


def test_value_info_contradicting_inference_is_refused(tmp_path: Path) -> None:
    # Relu's output is float by inference; the file says float16: onnxruntime's resolve fails.
    m = model([helper.make_node("Relu", ["x"], ["a"], name="r"), helper.make_node("Relu", ["a"], ["y"])],
              [tensor("x", [4])], [tensor("y", [4])], value_info=[tensor("a", [4], H)])
    # the checker at loading refuses it first (graphmem.model.validate), naming the node and both types
    with pytest.raises(ModelLoadError, match="node name: r.*Inferred elem type differs from existing elem type: \\(1\\) vs \\(10\\)"):
        graphmem.analyze(save(m, tmp_path / "conflict.onnx"))


def test_as_dtype_float16_says_the_cpu_runs_it_in_float32() -> None:
    from builders import CNN

    result = graphmem.analyze(CNN, dims={"batch": 2}, as_dtype="float16")
    assert "run in float32 behind" in result.activations.runtime


def _infer(node, types):  # type: ignore[no-untyped-def]
    return infer_contrib(node, {k: TensorType(dtype=d, shape=s) for k, (d, s) in types.items()}, {})


def test_quantized_contrib_shapes() -> None:
    # QLinearConv channels_last: x [1,8,8,3] (NHWC), w [4,3,3,3], pads 1 -> y [1,8,8,4], y_zero_point's type
    conv = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"],
                            domain="com.microsoft", channels_last=1, pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    t = {"x": (U8, (1, 8, 8, 3)), "w": (I8, (4, 3, 3, 3)), "yz": (U8, ()), "xs": (F, ()), "xz": (U8, ()),
         "ws": (F, ()), "wz": (I8, ()), "ys": (F, ())}
    assert _infer(conv, t)["y"] == TensorType(dtype=U8, shape=(1, 8, 8, 4))
    # NhwcMaxPool 3x3 stride 2 pad 1 on [1,8,8,4] -> [1,4,4,4]
    pool = helper.make_node("NhwcMaxPool", ["y"], ["p"], domain="com.microsoft", kernel_shape=[3, 3],
                            strides=[2, 2], pads=[1, 1, 1, 1])
    assert _infer(pool, {"y": (U8, (1, 8, 8, 4))})["p"] == TensorType(dtype=U8, shape=(1, 4, 4, 4))
    # QLinearGlobalAveragePool channels_last: [1,4,4,4] -> [1,1,1,4]
    gap = helper.make_node("QLinearGlobalAveragePool", ["p", "s", "z", "s", "z"], ["g"], domain="com.microsoft",
                           channels_last=1)
    assert _infer(gap, {"p": (U8, (1, 4, 4, 4))})["g"] == TensorType(dtype=U8, shape=(1, 1, 1, 4))
    # QLinearAdd broadcasts A (0) with B (3): [batch,128,768] + [768]
    add = helper.make_node("QLinearAdd", ["a", "s", "z", "b", "s", "z", "s", "z"], ["c"], domain="com.microsoft")
    assert _infer(add, {"a": (U8, ("batch", 128, 768)), "b": (U8, (768,))})["c"] == TensorType(
        dtype=U8, shape=("batch", 128, 768))
    # QGemm: no y_zero_point -> float; [A.dim0, B.dim1] with transB: [2,512] x [1000,512]^T -> [2,1000]
    gemm = helper.make_node("QGemm", ["a", "s", "z", "b", "s", "z", "c"], ["y"], domain="com.microsoft", transB=1)
    assert _infer(gemm, {"a": (U8, (2, 512)), "b": (I8, (1000, 512))})["y"] == TensorType(dtype=F, shape=(2, 1000))
    # MatMulIntegerToFloat / DynamicQuantizeMatMul: matmul shapes, float
    mm = helper.make_node("MatMulIntegerToFloat", ["a", "b", "as", "bs"], ["y"], domain="com.microsoft")
    out = _infer(mm, {"a": (U8, ("batch", 128, 768)), "b": (I8, (768, 3072)), "as": (F, ())})["y"]
    assert out == TensorType(dtype=F, shape=("batch", 128, 3072))


def test_as_dtype_float16_of_an_op_onnxruntime_inlines(tmp_path: Path) -> None:
    # Softmax-13 has no float16 CPU kernel and onnxruntime runs its function body instead of
    # casting it (INLINED_WITHOUT_KERNEL): the what-if is analysed through the graph onnxruntime
    # builds from the converted file, and must equal the measured float16 model.
    node = helper.make_node("Softmax", ["x"], ["y"], axis=-1)
    f32 = save(model([node], [tensor("x", [2, 64])], [tensor("y", [2, 64])]), tmp_path / "sm32.onnx")
    f16 = save(model([node], [tensor("x", [2, 64], H)], [tensor("y", [2, 64], H)]), tmp_path / "sm16.onnx")
    what_if = graphmem.analyze(f32, as_dtype="float16")
    predicted, measured = _peak(f16)
    assert "function bodies for the element types" in what_if.activations.runtime
    assert what_if.activations.peak_bytes == predicted == measured


def _softmax_behind_add(path: Path) -> Path:
    # x (a,b) + z (c,d) -> t, declared (p,q) as onnx's inference / onnxconverter-common write it;
    # Softmax(t): no float16 CPU kernel, onnxruntime runs its body in float32 behind Casts
    nodes = [helper.make_node("Add", ["x", "z"], ["t"]), helper.make_node("Softmax", ["t"], ["y"], axis=-1)]
    inputs = [tensor("x", ["a", "b"], H), tensor("z", ["c", "d"], H)]
    return save(model(nodes, inputs, [tensor("y", ["e", "f"], H)], value_info=[tensor("t", ["p", "q"], H)]), path)


def test_float_softmax_body_reuses_buffers_by_the_float16_symbols(tmp_path: Path) -> None:
    # 8x64 fp16 inputs: 1,024 B; their float twins 2,048 B; a row max/sum 8x1 float: 32 B.
    # Add reads InsertedPrecisionFreeCast_x/_z, its float output t' has no symbols ((a,b) vs
    # (c,d) broadcast); the body's ReduceMax/Sub/ReduceSum/Div were inferred from t (p,q) before
    # the Casts were joined, so ReduceSum (p,1) reuses ReduceMax's buffer and Div (p,q) Sub's.
    #   Cast z 2048 ; Cast x 4096 ; Add t' 6144 ; free x',z' -> ReduceMax 2080 ; Sub 4128 ;
    #   ReduceMax kept for ReduceSum, free t' -> Exp 2048 fresh (t' has no symbols): 4128 ;
    #   Sub kept for Div -> ReduceSum in ReduceMax's buffer: 4128 ; Div in Sub's: 4128 ;
    #   free all but Div -> Cast y 1,024: 3072
    # (planned fresh, as before: Exp 4096, ReduceSum 2080)
    import onnx

    path = _softmax_behind_add(tmp_path / "add_softmax16.onnx")
    dims = {"a": 8, "b": 64, "c": 8, "d": 64}
    result = graphmem.analyze(path, dims=dims)
    held = [b for _, b in result.activations.timeline]
    assert held == [2048, 4096, 6144, 2080, 4128, 4128, 4128, 4128, 3072]
    run = measure(str(path), make_feeds(onnx.load(str(path)), dims, seed=0), graph_opt="none", threads=1, runs=1).runs[0]
    base = run.nodes[0].requested_in_use - run.nodes[0].requested_delta
    assert [n.requested_in_use - base for n in run.nodes] == held


def test_as_dtype_converts_after_onnx_shape_inference(tmp_path: Path) -> None:
    # onnxconverter-common runs onnx.shape_inference.infer_shapes before retyping: the what-if's
    # file carries the same value_info, t as float16 with the unk__ dims onnx generates
    import onnx

    from graphmem.analysis.whatif import write_converted

    nodes = [helper.make_node("Add", ["x", "z"], ["t"]), helper.make_node("Relu", ["t"], ["y"])]
    src = save(model(nodes, [tensor("x", ["a", "b"]), tensor("z", ["c", "d"])], [tensor("y", ["e", "f"])]), tmp_path / "f32.onnx")
    out = onnx.load(str(write_converted(src, H, tmp_path / "f16.onnx")))
    (t,) = [v for v in out.graph.value_info if v.name == "t"]
    assert t.type.tensor_type.elem_type == H
    assert all(d.dim_param.startswith("unk__") for d in t.type.tensor_type.shape.dim)


def test_dequantize_read_twice_gets_its_copy_planned(tmp_path: Path) -> None:
    # x [1,64] -> QuantizeLinear q0 -> DequantizeLinear dq1 "d" read by relu2 and neg3 (both
    # graph outputs). EnsureUniqueDQForNodeUnit keeps dq1 for its first reader (relu2, lower
    # NodeIndex) and gives neg3 the copy dq4 "dq/duplicated" -> "d/duplicated". onnxruntime's
    # order visits the highest index first: q0, dq4, neg3, dq1, relu2. Requested bytes:
    #   q0 q 64 ; dq4 d/dup 256: 320 ; neg3 b 256 (a graph output: fresh): 576 ;
    #   dq1 d in d/dup's freed buffer: 576 ; free q -> relu2 a 256 (graph output): 768
    import onnx

    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q"),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], name="dq"),
        helper.make_node("Relu", ["d"], ["a"], name="relu"),
        helper.make_node("Neg", ["d"], ["b"], name="neg"),
    ]
    weights = [init("s", np.array(0.1, np.float32)), init("z", np.array(0, np.uint8))]
    outputs = [tensor("a", [1, 64]), tensor("b", [1, 64])]
    path = save(model(nodes, [tensor("x", [1, 64])], outputs, weights), tmp_path / "dq2.onnx")
    result = graphmem.analyze(path)
    assert result.activations.exact
    assert [result.graph.node(n).name for n in result.order] == ["q", "dq/duplicated", "neg", "dq", "relu"]
    held = [b for _, b in result.activations.timeline]
    assert held == [64, 320, 576, 576, 768]
    run = measure(str(path), make_feeds(onnx.load(str(path)), {}, seed=0), graph_opt="none", threads=1, runs=1).runs[0]
    base = run.nodes[0].requested_in_use - run.nodes[0].requested_delta
    assert [(n.name, n.requested_in_use - base) for n in run.nodes] == list(zip(
        ["q", "dq/duplicated", "neg", "dq", "relu"], held))


def test_unique_dq_copies_match_the_graph_onnxruntime_builds(tmp_path: Path) -> None:
    # dq "d" feeds a graph output, Add (both slots) and Relu: every reader gets a copy, in edge
    # order (consumer index, then slot), named with one _token_N counter for tensors and nodes;
    # the session's order (the graph onnxruntime writes at ORT_DISABLE_ALL) is graphmem's
    import onnx

    from graphmem.ort.optimized import optimized_model

    nodes = [
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], name="dq"),
        helper.make_node("Add", ["d", "d"], ["a"], name="add"),
        helper.make_node("Relu", ["d"], ["b"], name="relu"),
    ]
    weights = [init("s", np.array(0.5, np.float32)), init("z", np.array(0, np.uint8))]
    outputs = [tensor(n, [4]) for n in ("a", "b", "d")]
    path = save(model(nodes, [tensor("q", [4], TensorProto.UINT8)], outputs, weights), tmp_path / "dq3.onnx")
    result = graphmem.analyze(path)
    ours = [(n.name, tuple(n.input), tuple(n.output)) for n in map(result.graph.node, result.order)]
    written = onnx.load(str(optimized_model(path, "none", tmp_path, always=True)))
    assert ours == [(n.name, tuple(n.input), tuple(n.output)) for n in written.graph.node]
    assert ours == [
        ("dq/duplicated_token_3", ("q", "s", "z"), ("d/duplicated_token_2",)),
        ("relu", ("d/duplicated_token_2",), ("b",)),
        ("dq/duplicated_token_1", ("q", "s", "z"), ("d/duplicated_token_0",)),
        ("dq/duplicated", ("q", "s", "z"), ("d/duplicated",)),
        ("add", ("d/duplicated", "d/duplicated_token_0"), ("a",)),
        ("dq", ("q", "s", "z"), ("d",)),
    ]


def test_dequantize_read_twice_in_a_body_is_not_called_exact(tmp_path: Path) -> None:
    # the then-branch's DequantizeLinear feeds Relu and Neg: onnxruntime gives Neg a copy in the
    # body too (Recurse), which graphmem does not plan in bodies: named, one copy
    then_nodes = [
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], name="body_dq"),
        helper.make_node("Relu", ["d"], ["r"], name="body_relu"),
        helper.make_node("Neg", ["d"], ["n"], name="body_neg"),
        helper.make_node("Add", ["r", "n"], ["t"], name="body_add"),
    ]
    then_branch = helper.make_graph(then_nodes, "then", [], [tensor("t", [4])])
    else_branch = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["e"], name="else_dq")], "else", [], [tensor("e", [4])])
    nodes = [helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_branch, else_branch=else_branch)]
    weights = [init("s", np.array(0.5, np.float32)), init("z", np.array(0, np.uint8))]
    inputs = [tensor("c", [], TensorProto.BOOL), tensor("q", [4], TensorProto.UINT8)]
    path = save(model(nodes, inputs, [tensor("y", [4])], weights), tmp_path / "dq_body.onnx")
    notes = graphmem.analyze(path, values={"c": (1,)}).activations.approximations
    assert [(a.kind, a.node) for a in notes if a.kind == "rewrite_not_modelled"] == [("rewrite_not_modelled", "body_dq")]


def test_a_host_that_is_not_x86_64_is_named(tmp_path: Path) -> None:
    # the kernel table is the x86-64 build's: for another host a float16 graph (which nodes run
    # behind Casts) is not called exact, a float32 one still is
    from dataclasses import replace

    from builders import PINNED_HOST
    from graphmem.ort.kernels import host_problem

    assert host_problem("x86_64") is None and host_problem("AMD64") is None
    assert "aarch64" in (host_problem("aarch64") or "")
    relu = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    f16 = save(model(relu, [tensor("x", [2, 8], H)], [tensor("y", [2, 8], H)]), tmp_path / "f16.onnx")
    f32 = save(model(relu, [tensor("x", [2, 8])], [tensor("y", [2, 8])]), tmp_path / "f32.onnx")
    assert graphmem.analyze(f16).activations.exact
    arm = replace(PINNED_HOST, machine="aarch64")
    notes = graphmem.analyze(f16, host=arm).activations.approximations
    assert [(a.kind, a.node) for a in notes] == [("unknown_kernel", "")]
    assert "x86-64 build" in notes[0].detail and "the host is aarch64" in notes[0].detail
    assert graphmem.analyze(f32, host=arm).activations.exact
