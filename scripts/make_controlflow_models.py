"""Control-flow test models (If, Loop, Scan) built with onnx.helper, and the bindings to run them at.

    python scripts/make_controlflow_models.py [--out DIR]      # default .cache/controlflow

Every model is deterministic (seeded weights) and small; each comes with the bindings
(``--dim`` and ``--value``) that ``scripts/accuracy_controlflow.py`` predicts and measures. The
models cover what issue 13 asks for: If on a shape-derived and on an input-valued condition,
with weights and with an LSTM inside a branch; Loop with carried state and scan outputs (trip
count from an input, from a computed condition, a growing carried value, bodies without declared
shapes); Scan opset 8 and 9, forward and reverse, with scan axes; a nested If in a Loop.
Other sources (TorchScript exports, onnx's node tests, real models) are listed by the accuracy
script itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

F = T.FLOAT
I64 = T.INT64
DEFAULT_OUT = Path(os.environ.get("GRAPHMEM_CONTROLFLOW", str(Path(__file__).resolve().parents[1] / ".cache" / "controlflow")))


@dataclass(frozen=True)
class Binding:
    label: str
    dims: dict[str, int] = field(default_factory=dict)
    values: dict[str, tuple[int, ...]] = field(default_factory=dict)
    batch: int | None = None


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], onnx.ModelProto]
    bindings: tuple[Binding, ...]


def vi(name: str, shape, dtype: int = F) -> onnx.ValueInfoProto:  # type: ignore[no-untyped-def]
    return h.make_tensor_value_info(name, dtype, shape)


def weight(name: str, shape: tuple[int, ...], seed: int) -> onnx.TensorProto:
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)


def const(name: str, array: np.ndarray) -> onnx.NodeProto:
    return h.make_node("Constant", [], [name], value=numpy_helper.from_array(array, name), name=f"const_{name}")


def model(graph: onnx.GraphProto, opset: int = 17) -> onnx.ModelProto:
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], ir_version=8, producer_name="make_controlflow_models")
    onnx.checker.check_model(m)
    return m


def batches(*extra: str, values: dict[str, tuple[int, ...]] | None = None, **dims: int) -> tuple[Binding, ...]:
    """Batch 1 and 4 bindings (plus fixed ``dims``)."""
    values = values or {}
    label = "".join(f" {k}={v}" for k, v in dims.items()) + "".join(f" {k}={v[0]}" for k, v in values.items())
    return tuple(Binding(f"b{b}{label}", {"batch": b, **dims}, dict(values), b) for b in (1, 4))


# ---------------------------------------------------------------- If


def if_shape_weights() -> onnx.ModelProto:
    """cond = batch > 2 (shape-derived); then: MLP 64->128->64 (body initializers); else: 64x64 + Sigmoid."""
    then_g = h.make_graph(
        [
            h.make_node("MatMul", ["x0", "W1"], ["t1"], name="then_mm1"),
            h.make_node("Relu", ["t1"], ["t2"], name="then_relu"),
            h.make_node("MatMul", ["t2", "W2"], ["t3"], name="then_mm2"),
        ],
        "then", [], [vi("t3", ["batch", 64])],
        initializer=[weight("W1", (64, 128), 1), weight("W2", (128, 64), 2)],
    )
    else_g = h.make_graph(
        [
            const("W3", (np.random.default_rng(3).standard_normal((64, 64)) * 0.1).astype(np.float32)),
            h.make_node("MatMul", ["x0", "W3"], ["e1"], name="else_mm"),
            h.make_node("Sigmoid", ["e1"], ["e2"], name="else_sig"),
        ],
        "else", [], [vi("e2", ["batch", 64])],
    )
    g = h.make_graph(
        [
            h.make_node("Relu", ["x"], ["x0"], name="pre"),
            h.make_node("Shape", ["x"], ["shp"], name="shape"),
            h.make_node("Gather", ["shp", "zero"], ["n"], name="gather", axis=0),
            h.make_node("Greater", ["n", "two"], ["big"], name="greater"),
            h.make_node("If", ["big"], ["y"], name="If_big", then_branch=then_g, else_branch=else_g),
            h.make_node("Add", ["y", "x0"], ["out"], name="post"),
        ],
        "if_shape_weights", [vi("x", ["batch", 64])], [vi("out", ["batch", 64])],
        initializer=[numpy_helper.from_array(np.array(0, np.int64), "zero"), numpy_helper.from_array(np.array(2, np.int64), "two")],
    )
    return model(g)


def if_value_weights() -> onnx.ModelProto:
    """cond = mode == 1 (an input value); branches of different cost, weights as body Constants."""
    rng = np.random.default_rng(4)
    then_g = h.make_graph(
        [
            const("A", (rng.standard_normal((64, 256)) * 0.1).astype(np.float32)),
            const("B", (rng.standard_normal((256, 64)) * 0.1).astype(np.float32)),
            h.make_node("MatMul", ["x0", "A"], ["a1"], name="then_mm1"),
            h.make_node("Tanh", ["a1"], ["a2"], name="then_tanh"),
            h.make_node("MatMul", ["a2", "B"], ["a3"], name="then_mm2"),
            h.make_node("Add", ["a3", "x0"], ["a4"], name="then_res"),
        ],
        "then", [], [vi("a4", ["batch", 64])],
    )
    else_g = h.make_graph(
        [h.make_node("Neg", ["x0"], ["b1"], name="else_neg")], "else", [], [vi("b1", ["batch", 64])]
    )
    g = h.make_graph(
        [
            h.make_node("Relu", ["x"], ["x0"], name="pre"),
            h.make_node("Equal", ["mode", "one"], ["is_one"], name="equal"),
            h.make_node("If", ["is_one"], ["y"], name="If_mode", then_branch=then_g, else_branch=else_g),
            h.make_node("Sigmoid", ["y"], ["out"], name="post"),
        ],
        "if_value_weights", [vi("x", ["batch", 64]), vi("mode", [], I64)], [vi("out", ["batch", 64])],
        initializer=[numpy_helper.from_array(np.array(1, np.int64), "one")],
    )
    return model(g)


def if_lstm() -> onnx.ModelProto:
    """cond = sr == 16000; then: LSTM hidden 48 (weights in the branch); else: LSTM hidden 24. x [seq, batch, 32]."""

    def branch(tag: str, hidden: int, seed: int) -> onnx.GraphProto:
        rng = np.random.default_rng(seed)
        w = (rng.standard_normal((1, 4 * hidden, 32)) * 0.1).astype(np.float32)
        r = (rng.standard_normal((1, 4 * hidden, hidden)) * 0.1).astype(np.float32)
        p = (rng.standard_normal((hidden, 16)) * 0.1).astype(np.float32)
        return h.make_graph(
            [
                h.make_node("LSTM", ["x0", f"W_{tag}", f"R_{tag}"], [f"Y_{tag}", f"Yh_{tag}"], name=f"{tag}_lstm", hidden_size=hidden),
                h.make_node("Squeeze", [f"Y_{tag}", "one_axis"], [f"s_{tag}"], name=f"{tag}_squeeze"),
                h.make_node("MatMul", [f"s_{tag}", f"P_{tag}"], [f"o_{tag}"], name=f"{tag}_proj"),
            ],
            tag, [], [vi(f"o_{tag}", ["seq", "batch", 16])],
            initializer=[numpy_helper.from_array(w, f"W_{tag}"), numpy_helper.from_array(r, f"R_{tag}"), numpy_helper.from_array(p, f"P_{tag}")],
        )

    g = h.make_graph(
        [
            h.make_node("Relu", ["x"], ["x0"], name="pre"),
            h.make_node("Equal", ["sr", "sr16k"], ["is16k"], name="equal"),
            h.make_node("If", ["is16k"], ["y"], name="If_sr", then_branch=branch("then", 48, 5), else_branch=branch("else", 24, 6)),
            h.make_node("Tanh", ["y"], ["out"], name="post"),
        ],
        "if_lstm", [vi("x", ["seq", "batch", 32]), vi("sr", [], I64)], [vi("out", ["seq", "batch", 16])],
        initializer=[numpy_helper.from_array(np.array(16000, np.int64), "sr16k"), numpy_helper.from_array(np.array([1], np.int64), "one_axis")],
    )
    return model(g)


# ---------------------------------------------------------------- Loop


def _rnn_body(hidden: int, seed: int, *, declare: bool = True, cond: str = "pass") -> onnx.GraphProto:
    """Loop body: h' = tanh(h @ W + x0), scan output h' * 2. ``cond``: "pass" (Identity) or "less" (i < limit)."""
    shape_h = ["batch", hidden] if declare else None
    nodes = [
        h.make_node("MatMul", ["h_in", "Wr"], ["hw"], name="body_mm"),
        h.make_node("Add", ["hw", "x0"], ["pre_h"], name="body_add"),
        h.make_node("Tanh", ["pre_h"], ["h_out"], name="body_tanh"),
        h.make_node("Mul", ["h_out", "two_f"], ["scan_y"], name="body_scan"),
    ]
    if cond == "pass":
        nodes.append(h.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"))
    else:
        nodes.append(h.make_node("Less", ["iter", "limit"], ["cond_out"], name="body_less"))
    inputs = [vi("iter", [], I64), vi("cond_in", [], T.BOOL), vi("h_in", shape_h)]
    outputs = [vi("cond_out", [], T.BOOL), vi("h_out", shape_h), vi("scan_y", shape_h)]
    if not declare:  # the carried value without a shape (onnxruntime's Loop needs iter and cond shapes)
        for v in (inputs[2], *outputs[1:]):
            v.type.tensor_type.ClearField("shape")
    return h.make_graph(nodes, "body", inputs, outputs, initializer=[weight("Wr", (hidden, hidden), seed), numpy_helper.from_array(np.array([2.0], np.float32), "two_f")])


def _loop_model(name: str, body: onnx.GraphProto, *, m_input: bool, limit_input: bool = False) -> onnx.ModelProto:
    inputs = [vi("x", ["batch", 64])]
    loop_in = ["", "true_c", "h0"]
    if m_input:
        inputs.append(vi("n", [], I64))
        loop_in[0] = "n"
    if limit_input:
        inputs.append(vi("limit", [], I64))
    g = h.make_graph(
        [
            h.make_node("Relu", ["x"], ["x0"], name="pre"),
            h.make_node("Neg", ["x"], ["h0"], name="init_h"),
            h.make_node("Loop", loop_in, ["h_final", "ys"], name="Loop_rnn", body=body),
            h.make_node("Sigmoid", ["h_final"], ["out"], name="post"),
        ],
        name, inputs, [vi("out", ["batch", 64]), vi("ys", [None, "batch", 64])],
        initializer=[numpy_helper.from_array(np.array(True), "true_c")],
    )
    return model(g)


def loop_carried_scan() -> onnx.ModelProto:
    """Loop with trip count from input ``n``, carried h and a scan output."""
    return _loop_model("loop_carried_scan", _rnn_body(64, 7), m_input=True)


def loop_while() -> onnx.ModelProto:
    """Loop without M: runs while iter < limit (an input value)."""
    return _loop_model("loop_while", _rnn_body(64, 8, cond="less"), m_input=False, limit_input=True)


def loop_noshape() -> onnx.ModelProto:
    """Like loop_carried_scan, but the body declares no shapes (no memory pattern in the body)."""
    return _loop_model("loop_noshape", _rnn_body(64, 9, declare=False), m_input=True)


def loop_growing() -> onnx.ModelProto:
    """Carried value grows by a row each iteration (Concat): feed shapes change every iteration."""
    body = h.make_graph(
        [
            h.make_node("Slice", ["acc_in", "s0", "s1", "ax0"], ["last"], name="body_slice"),
            h.make_node("Mul", ["last", "half"], ["row"], name="body_mul"),
            h.make_node("Concat", ["acc_in", "row"], ["acc_out"], name="body_concat", axis=0),
            h.make_node("ReduceSum", ["acc_out", "ax0"], ["total"], name="body_sum", keepdims=0),
            h.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
        ],
        "body",
        [vi("iter", [], I64), vi("cond_in", [], T.BOOL), vi("acc_in", ["rows", 64])],
        [vi("cond_out", [], T.BOOL), vi("acc_out", ["rows2", 64]), vi("total", [64])],
        initializer=[
            numpy_helper.from_array(np.array([-1], np.int64), "s0"),
            numpy_helper.from_array(np.array([np.iinfo(np.int64).max], np.int64), "s1"),
            numpy_helper.from_array(np.array([0], np.int64), "ax0"),
            numpy_helper.from_array(np.array([0.5], np.float32), "half"),
        ],
    )
    g = h.make_graph(
        [
            h.make_node("Relu", ["x"], ["x0"], name="pre"),
            h.make_node("Loop", ["n", "true_c", "x0"], ["acc", "totals"], name="Loop_grow", body=body),
            h.make_node("Tanh", ["acc"], ["out"], name="post"),
        ],
        "loop_growing", [vi("x", ["batch", 64]), vi("n", [], I64)], [vi("out", [None, 64]), vi("totals", [None, 64])],
        initializer=[numpy_helper.from_array(np.array(True), "true_c")],
    )
    return model(g)


def loop_nested_if() -> onnx.ModelProto:
    """A Loop of 4 iterations whose body runs an If on (iter % 2 == 0): then MatMul+Relu, else Neg."""
    then_g = h.make_graph(
        [h.make_node("MatMul", ["h_in", "Wt"], ["t1"], name="then_mm"), h.make_node("Relu", ["t1"], ["t2"], name="then_relu")],
        "then", [], [vi("t2", ["batch", 64])], initializer=[weight("Wt", (64, 64), 10)],
    )
    else_g = h.make_graph([h.make_node("Neg", ["h_in"], ["e1"], name="else_neg")], "else", [], [vi("e1", ["batch", 64])])
    body = h.make_graph(
        [
            h.make_node("Mod", ["iter", "two_i"], ["parity"], name="body_mod"),
            h.make_node("Equal", ["parity", "zero_i"], ["even"], name="body_even"),
            h.make_node("If", ["even"], ["hh"], name="If_even", then_branch=then_g, else_branch=else_g),
            h.make_node("Add", ["hh", "x0"], ["h_out"], name="body_add"),
            h.make_node("ReduceMean", ["h_out"], ["m"], name="body_mean", keepdims=0),
            h.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
        ],
        "body",
        [vi("iter", [], I64), vi("cond_in", [], T.BOOL), vi("h_in", ["batch", 64])],
        [vi("cond_out", [], T.BOOL), vi("h_out", ["batch", 64]), vi("m", [])],
        initializer=[numpy_helper.from_array(np.array(2, np.int64), "two_i"), numpy_helper.from_array(np.array(0, np.int64), "zero_i")],
    )
    g = h.make_graph(
        [
            h.make_node("Relu", ["x"], ["x0"], name="pre"),
            h.make_node("Loop", ["four", "true_c", "x0"], ["h_final", "means"], name="Loop_outer", body=body),
            h.make_node("Sigmoid", ["h_final"], ["out"], name="post"),
        ],
        "loop_nested_if", [vi("x", ["batch", 64])], [vi("out", ["batch", 64]), vi("means", [None])],
        initializer=[numpy_helper.from_array(np.array(True), "true_c"), numpy_helper.from_array(np.array(4, np.int64), "four")],
    )
    return model(g)


# ---------------------------------------------------------------- Scan


def _scan_body(shape, seed: int) -> onnx.GraphProto:  # type: ignore[no-untyped-def]
    return h.make_graph(
        [
            h.make_node("MatMul", ["s_in", "Ws"], ["sw"], name="body_mm"),
            h.make_node("Add", ["sw", "xt"], ["a"], name="body_add"),
            h.make_node("Tanh", ["a"], ["s_out"], name="body_tanh"),
            h.make_node("Mul", ["a", "a"], ["y"], name="body_sq"),
        ],
        "body", [vi("s_in", shape), vi("xt", shape)], [vi("s_out", shape), vi("y", shape)],
        initializer=[weight("Ws", (48, 48), seed)],
    )


def _scan9(name: str, *, reverse: bool, in_axis: int, out_axis: int) -> onnx.ModelProto:
    x_shape = ["seq", "batch", 48] if in_axis == 0 else ["batch", "seq", 48]
    g = h.make_graph(
        [
            h.make_node("Relu", ["x"], ["x0"], name="pre"),
            h.make_node("ReduceMean", ["x0"], ["s0"], name="init_state", keepdims=0, axes=[in_axis]),
            h.make_node(
                "Scan", ["s0", "x0"], ["s_final", "ys"], name="Scan_rnn", body=_scan_body(["batch", 48], 11), num_scan_inputs=1,
                scan_input_directions=[int(reverse)], scan_output_directions=[int(reverse)],
                scan_input_axes=[in_axis], scan_output_axes=[out_axis],
            ),
            h.make_node("Relu", ["ys"], ["out"], name="post"),
        ],
        name, [vi("x", x_shape)], [vi("out", [None, None, 48]), vi("s_final", ["batch", 48])],
    )
    return model(g)


def scan9_forward() -> onnx.ModelProto:
    return _scan9("scan9_forward", reverse=False, in_axis=0, out_axis=0)


def scan9_reverse_axis1() -> onnx.ModelProto:
    return _scan9("scan9_reverse_axis1", reverse=True, in_axis=1, out_axis=1)


def _scan8(name: str, *, reverse: bool) -> onnx.ModelProto:
    g = h.make_graph(
        [
            h.make_node("Relu", ["x"], ["x0"], name="pre"),
            h.make_node("ReduceMean", ["x0"], ["s0"], name="init_state", keepdims=0, axes=[1]),
            h.make_node("Scan", ["", "s0", "x0"], ["s_final", "ys"], name="Scan8_rnn", body=_scan_body([48], 12),
                        num_scan_inputs=1, directions=[int(reverse)]),
            h.make_node("Relu", ["ys"], ["out"], name="post"),
        ],
        name, [vi("x", ["batch", "seq", 48])], [vi("out", ["batch", "seq", 48]), vi("s_final", ["batch", 48])],
    )
    return model(g, opset=8)


def scan8_forward() -> onnx.ModelProto:
    return _scan8("scan8_forward", reverse=False)


def scan8_reverse() -> onnx.ModelProto:
    return _scan8("scan8_reverse", reverse=True)


# ---------------------------------------------------------------- edge cases (fixed shapes)

E = [4, 100]
B = T.BOOL


def _g(nodes, name, inputs, outputs, inits=()):  # type: ignore[no-untyped-def]
    return h.make_graph(nodes, name, inputs, outputs, initializer=list(inits))


def _i64(name: str, v: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(v, np.int64), name)


def if_in_scan() -> onnx.ModelProto:
    """A Scan body with an If on a shape-derived condition (Size(x_t) > 100)."""
    then = _g([h.make_node("Relu", ["a"], ["t1"]), h.make_node("Add", ["t1", "a"], ["t"])], "then", [], [vi("t", E)])
    other = _g([h.make_node("Neg", ["a"], ["e"])], "else", [], [vi("e", E)])
    body = _g([h.make_node("Add", ["s_in", "xt"], ["a"]), h.make_node("Size", ["xt"], ["sz"]), h.make_node("Greater", ["sz", "hundred"], ["c"]),
               h.make_node("If", ["c"], ["s_out"], then_branch=then, else_branch=other), h.make_node("Mul", ["a", "a"], ["y"])],
              "body", [vi("s_in", E), vi("xt", E)], [vi("s_out", E), vi("y", E)], [_i64("hundred", 100)])
    return model(_g([h.make_node("Relu", ["x"], ["x0"]), h.make_node("Scan", ["s", "x0"], ["sf", "ys"], body=body, num_scan_inputs=1)],
                    "if_in_scan", [vi("x", [3, *E]), vi("s", E)], [vi("sf", E), vi("ys", [3, *E])]))


def loop_in_if() -> onnx.ModelProto:
    """An If (n > 0, an input value) whose then branch runs a Loop of n iterations with a scan output."""
    body = _g([h.make_node("Identity", ["cond_in"], ["cond_out"]), h.make_node("Add", ["h_in", "x"], ["h_out"]), h.make_node("Sigmoid", ["h_out"], ["sc"])],
              "body", [vi("i", [], I64), vi("cond_in", [], B), vi("h_in", E)], [vi("cond_out", [], B), vi("h_out", E), vi("sc", E)])
    then = _g([h.make_node("Loop", ["n", "", "x"], ["hf", "scs"], body=body), h.make_node("Add", ["hf", "hf"], ["t"])], "then", [], [vi("t", E)])
    other = _g([h.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", E)])
    return model(_g([h.make_node("Greater", ["n", "zero"], ["c"]), h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
                    "loop_in_if", [vi("x", E), vi("n", [], I64)], [vi("y", E)], [_i64("zero", 0)]))


def scan_two_states() -> onnx.ModelProto:
    """Scan 9 with two states, two scan inputs (the second reversed, on axis 1), two outputs (the second on axis 1)."""
    body = _g([h.make_node("Add", ["s1_in", "xa"], ["a"]), h.make_node("Mul", ["s2_in", "xb"], ["b"]), h.make_node("Tanh", ["a"], ["s1_out"]),
               h.make_node("Sigmoid", ["b"], ["s2_out"]), h.make_node("Add", ["a", "b"], ["y1"]), h.make_node("Sub", ["a", "b"], ["y2"])],
              "body", [vi("s1_in", E), vi("s2_in", E), vi("xa", E), vi("xb", E)], [vi("s1_out", E), vi("s2_out", E), vi("y1", E), vi("y2", E)])
    return model(_g([h.make_node("Scan", ["s1", "s2", "xa", "xb"], ["f1", "f2", "ys1", "ys2"], body=body, num_scan_inputs=2,
                                 scan_input_directions=[0, 1], scan_output_axes=[0, 1], scan_input_axes=[0, 1])],
                    "scan_two_states", [vi("s1", E), vi("s2", E), vi("xa", [5, *E]), vi("xb", [4, 5, 100])],
                    [vi("f1", E), vi("f2", E), vi("ys1", [5, *E]), vi("ys2", [4, 5, 100])]))


def loop_keep_feed() -> onnx.ModelProto:
    """A Loop while i + 1 < lim whose scan output is Identity of the carried feed (held to the end)."""
    body = _g([h.make_node("Add", ["i", "one"], ["i1"]), h.make_node("Less", ["i1", "lim"], ["cond_out"]),
               h.make_node("Mul", ["h_in", "w"], ["h_out"]), h.make_node("Identity", ["h_in"], ["keep"])],
              "body", [vi("i", [], I64), vi("cond_in", [], B), vi("h_in", E)], [vi("cond_out", [], B), vi("h_out", E), vi("keep", E)], [_i64("one", 1)])
    return model(_g([h.make_node("Relu", ["x"], ["x0"]), h.make_node("Loop", ["big", "tr", "x0"], ["hf", "keeps"], body=body)],
                    "loop_keep_feed", [vi("x", E), vi("lim", [], I64)], [vi("hf", E), vi("keeps", [None, *E])],
                    [numpy_helper.from_array(np.full([100], 2.0, np.float32), "w"), _i64("big", 100), numpy_helper.from_array(np.array(True), "tr")]))


def loop_passthrough() -> onnx.ModelProto:
    """A Loop whose carried value is passed through unchanged, with a scan output of it squared."""
    body = _g([h.make_node("Identity", ["cond_in"], ["cond_out"]), h.make_node("Mul", ["h_in", "h_in"], ["y"])],
              "body", [vi("i", [], I64), vi("cond_in", [], B), vi("h_in", E)], [vi("cond_out", [], B), vi("h_in", E), vi("y", E)])
    return model(_g([h.make_node("Relu", ["x"], ["x0"]), h.make_node("Loop", ["n", "", "x0"], ["hf", "ys"], body=body)],
                    "loop_passthrough", [vi("x", E), vi("n", [], I64)], [vi("hf", E), vi("ys", [None, *E])]))


def if_branch_shapes() -> onnx.ModelProto:
    """An If (f > 0) whose branches return [4,100] and [2,100]; its output declared [?, 100]."""
    then = _g([h.make_node("Relu", ["x"], ["t"])], "then", [], [vi("t", [4, 100])])
    other = _g([h.make_node("Slice", ["x", "st", "en"], ["e"])], "else", [], [vi("e", [2, 100])])
    return model(_g([h.make_node("Greater", ["f", "zero"], ["c"]), h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other),
                     h.make_node("Sigmoid", ["y"], ["z"])],
                    "if_branch_shapes", [vi("x", E), vi("f", [], I64)], [vi("z", [None, 100])],
                    [_i64("zero", 0), numpy_helper.from_array(np.array([0], np.int64), "st"), numpy_helper.from_array(np.array([2], np.int64), "en")]))


def if_returns_outer_or_weight() -> onnx.ModelProto:
    """An If (f > 0): then returns Identity of an outer value, else its own 1,600 B initializer."""
    then = _g([h.make_node("Identity", ["x0"], ["t"])], "then", [], [vi("t", E)])
    other = _g([], "else", [], [vi("k", E)], [weight("k", tuple(E), 21)])
    return model(_g([h.make_node("Relu", ["x"], ["x0"]), h.make_node("Greater", ["f", "zero"], ["c"]),
                     h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other), h.make_node("Sigmoid", ["y"], ["z"])],
                    "if_returns_outer_or_weight", [vi("x", E), vi("f", [], I64)], [vi("z", E)], [_i64("zero", 0)]))


def scan_in_loop() -> onnx.ModelProto:
    """A Loop whose body scans its carried [4,100] with a Scan (state [100], one scan output)."""
    sbody = _g([h.make_node("Add", ["s_in", "xt"], ["s_out"]), h.make_node("Mul", ["s_out", "xt"], ["y"])],
               "sbody", [vi("s_in", [100]), vi("xt", [100])], [vi("s_out", [100]), vi("y", [100])])
    body = _g([h.make_node("Identity", ["cond_in"], ["cond_out"]), h.make_node("Scan", ["s0", "h_in"], ["sf", "h_out"], body=sbody, num_scan_inputs=1)],
              "body", [vi("i", [], I64), vi("cond_in", [], B), vi("h_in", E)], [vi("cond_out", [], B), vi("h_out", E)])
    return model(_g([h.make_node("Relu", ["x"], ["x0"]), h.make_node("Loop", ["n", "", "x0"], ["hf"], body=body)],
                    "scan_in_loop", [vi("x", E), vi("n", [], I64)], [vi("hf", E)], [numpy_helper.from_array(np.zeros([100], np.float32), "s0")]))


def loop_in_loop() -> onnx.ModelProto:
    """Nested Loops: iteration i of the outer runs an inner Loop of i + 1 iterations."""
    inner = _g([h.make_node("Identity", ["c2"], ["c2o"]), h.make_node("Add", ["g_in", "x"], ["g_out"])],
               "inner", [vi("j", [], I64), vi("c2", [], B), vi("g_in", E)], [vi("c2o", [], B), vi("g_out", E)])
    outer = _g([h.make_node("Identity", ["cond_in"], ["cond_out"]), h.make_node("Add", ["i", "one"], ["m"]),
                h.make_node("Loop", ["m", "", "h_in"], ["h_out"], body=inner)],
               "outer", [vi("i", [], I64), vi("cond_in", [], B), vi("h_in", E)], [vi("cond_out", [], B), vi("h_out", E)], [_i64("one", 1)])
    return model(_g([h.make_node("Relu", ["x"], ["x0"]), h.make_node("Loop", ["n", "", "x0"], ["hf"], body=outer)],
                    "loop_in_loop", [vi("x", E), vi("n", [], I64)], [vi("hf", E)]))


def scan8_lens() -> onnx.ModelProto:
    """Scan 8 over 3 batch entries of up to 5 slices, sequence_lens an input (a value)."""
    body = _g([h.make_node("Add", ["s_in", "xt"], ["s_out"]), h.make_node("Mul", ["s_out", "xt"], ["y"])],
              "body", [vi("s_in", [100]), vi("xt", [100])], [vi("s_out", [100]), vi("y", [100])])
    return model(_g([h.make_node("Scan", ["lens", "s", "x"], ["sf", "ys"], body=body, num_scan_inputs=1)],
                    "scan8_lens", [vi("lens", [3], I64), vi("s", [3, 100]), vi("x", [3, 5, 100])],
                    [vi("sf", [3, 100]), vi("ys", [3, 5, 100])]), opset=8)


def one(label: str, **values: int | tuple[int, ...]) -> tuple[Binding, ...]:
    return (Binding(label, {}, {k: v if isinstance(v, tuple) else (v,) for k, v in values.items()}, 1),)


CASES: tuple[Case, ...] = (
    Case("if_shape_weights", if_shape_weights, batches()),
    Case("if_value_weights", if_value_weights, batches(values={"mode": (1,)}) + batches(values={"mode": (0,)})),
    Case("if_lstm", if_lstm, batches(values={"sr": (16000,)}, seq=20) + batches(values={"sr": (8000,)}, seq=20)),
    Case("loop_carried_scan", loop_carried_scan, batches(values={"n": (3,)}) + batches(values={"n": (6,)})
         + batches(values={"n": (0,)}) + batches(values={"n": (1,)})),  # no iteration, one
    Case("loop_while", loop_while, batches(values={"limit": (4,)}) + batches(values={"limit": (0,)}) + batches(values={"limit": (1,)})),
    Case("loop_noshape", loop_noshape, batches(values={"n": (3,)})),
    Case("loop_growing", loop_growing, batches(values={"n": (4,)})),
    Case("loop_nested_if", loop_nested_if, batches()),
    Case("scan9_forward", scan9_forward, batches(seq=6) + batches(seq=1) + batches(seq=2)),  # no / one loop-state buffer
    Case("scan9_reverse_axis1", scan9_reverse_axis1, batches(seq=6) + batches(seq=1) + batches(seq=2)),
    Case("scan8_forward", scan8_forward, batches(seq=6) + batches(seq=1) + batches(seq=2)),
    Case("scan8_reverse", scan8_reverse, batches(seq=6)),
    # edge cases (fixed shapes, batch 1)
    Case("if_in_scan", if_in_scan, one("fixed")),
    Case("loop_in_if", loop_in_if, one("n=3", n=3) + one("n=0", n=0)),
    Case("scan_two_states", scan_two_states, one("fixed")),
    Case("loop_keep_feed", loop_keep_feed, one("lim=4", lim=4)),
    Case("loop_passthrough", loop_passthrough, one("n=3", n=3)),
    Case("if_branch_shapes", if_branch_shapes, one("f=1", f=1) + one("f=0", f=0)),
    Case("if_returns_outer_or_weight", if_returns_outer_or_weight, one("f=1", f=1) + one("f=0", f=0)),
    Case("scan_in_loop", scan_in_loop, one("n=3", n=3)),
    Case("loop_in_loop", loop_in_loop, one("n=3", n=3)),
    Case("scan8_lens", scan8_lens, one("lens=5,3,1", lens=(5, 3, 1)) + one("lens=5,5,5", lens=(5, 5, 5)) + one("lens=1,2,3", lens=(1, 2, 3))),
)


def build_all(out: Path) -> list[dict]:  # type: ignore[type-arg]
    out.mkdir(parents=True, exist_ok=True)
    manifest = []
    for case in CASES:
        path = out / f"{case.name}.onnx"
        onnx.save(case.build(), str(path))
        manifest.append({
            "name": case.name,
            "path": str(path),
            "bindings": [{"label": b.label, "dims": b.dims, "values": {k: list(v) for k, v in b.values.items()}, "batch": b.batch} for b in case.bindings],
        })
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    for entry in build_all(args.out):
        print(f"{entry['name']:<24} {len(entry['bindings'])} bindings  {entry['path']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
