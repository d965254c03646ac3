"""Control-flow test models (If, Loop, Scan) built with onnx.helper, and the bindings to run them at.

    python scripts/make_controlflow_models.py [--out DIR]      # default /work/cache/controlflow

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
DEFAULT_OUT = Path(os.environ.get("GRAPHMEM_CONTROLFLOW", "/work/cache/controlflow"))


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
    label = "".join(f" {k}={v[0]}" for k, v in values.items())
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


CASES: tuple[Case, ...] = (
    Case("if_shape_weights", if_shape_weights, batches()),
    Case("if_value_weights", if_value_weights, batches(values={"mode": (1,)}) + batches(values={"mode": (0,)})),
    Case("if_lstm", if_lstm, batches(values={"sr": (16000,)}, seq=20) + batches(values={"sr": (8000,)}, seq=20)),
    Case("loop_carried_scan", loop_carried_scan, batches(values={"n": (3,)}) + batches(values={"n": (6,)})),
    Case("loop_while", loop_while, batches(values={"limit": (4,)})),
    Case("loop_noshape", loop_noshape, batches(values={"n": (3,)})),
    Case("loop_growing", loop_growing, batches(values={"n": (4,)})),
    Case("loop_nested_if", loop_nested_if, batches()),
    Case("scan9_forward", scan9_forward, batches(seq=6)),
    Case("scan9_reverse_axis1", scan9_reverse_axis1, batches(seq=6)),
    Case("scan8_forward", scan8_forward, batches(seq=6)),
    Case("scan8_reverse", scan8_reverse, batches(seq=6)),
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
