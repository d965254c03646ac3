"""Shape inference through If, Loop and Scan (graphmem/shapes/controlflow.py) on tiny graphs: which
body executions run, and the node's output types, in both views (the run's and onnxruntime's)."""

from __future__ import annotations

import numpy as np
import onnx
from builders import init, model, tensor
from onnx import TensorProto, helper

from graphmem.model.graph import build_graph
from graphmem.model.loading import model_from_proto
from graphmem.ort.order import ort_order
from graphmem.shapes.controlflow import ControlFlowShapes
from graphmem.shapes.infer import ORT_STATIC, RUNTIME, ShapeResult, View, infer_types

I64, BOOL = TensorProto.INT64, TensorProto.BOOL


def _infer(proto: onnx.ModelProto, view: View = RUNTIME, **values: np.ndarray) -> tuple[ShapeResult, ControlFlowShapes]:
    m = model_from_proto(proto)
    g = build_graph(m)
    result = infer_types(g, ort_order(g), view=view, input_values=values, body_order=ort_order)
    (cfs,) = result.bodies.values()
    return result, cfs


def _if() -> onnx.ModelProto:
    """y = If(c): then Neg(x) [2,3], else Concat(x, x) on axis 0 [4,3]."""
    then = helper.make_graph([helper.make_node("Neg", ["x"], ["yt"])], "then", [], [tensor("yt", [2, 3])])
    other = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["ye"], axis=0)], "else", [], [tensor("ye", [4, 3])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    return model([node], [tensor("x", [2, 3]), tensor("c", [], BOOL)], [tensor("y", None)])


def test_an_if_runs_the_branch_its_condition_selects() -> None:
    result, cfs = _infer(_if(), c=np.array(True))
    assert (result.types["y"].shape, [r.attr for r in cfs.runs], cfs.problem) == ((2, 3), ["then_branch"], None)
    result, cfs = _infer(_if(), c=np.array(False))
    assert (result.types["y"].shape, [r.attr for r in cfs.runs]) == ((4, 3), ["else_branch"])


def test_an_if_of_unknown_condition_infers_both_branches_and_says_so() -> None:
    # the run's view: no run, both branches, the larger output; onnxruntime's: their union
    result, cfs = _infer(_if())
    assert (cfs.runs, sorted(cfs.branches)) == ((), ["else_branch", "then_branch"])
    assert cfs.problem == "the condition 'c' of If 'If' is not known statically"
    assert result.types["y"].shape == (4, 3)
    static, cfs = _infer(_if(), ORT_STATIC)
    assert static.types["y"].shape == (None, 3) and cfs.problem is None


def _loop() -> onnx.ModelProto:
    """Loop(M, c, h0): h' = h + 1 (carried), s = h * 2 (scanned), x [2] float."""
    body = helper.make_graph(
        [helper.make_node("Add", ["h_in", "one"], ["h_out"]), helper.make_node("Mul", ["h_in", "two"], ["s"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [tensor("i", [], I64), tensor("cond_in", [], BOOL), tensor("h_in", [2])],
        [tensor("cond_out", [], BOOL), tensor("h_out", [2]), tensor("s", [2])],
        [init("one", np.ones(2, np.float32)), init("two", np.full(2, 2.0, np.float32))],
    )
    node = helper.make_node("Loop", ["M", "c", "h0"], ["hf", "ss"], body=body)
    return model([node], [tensor("M", [], I64), tensor("c", [], BOOL), tensor("h0", [2])], [tensor("hf", [2]), tensor("ss", None)])


def test_a_loop_is_unrolled_to_its_trip_count() -> None:
    # M = 3: three body runs; the scan output stacks one [2] per iteration: [3, 2]
    result, cfs = _infer(_loop(), M=np.array(3), c=np.array(True))
    assert (len(cfs.runs), result.types["hf"].shape, result.types["ss"].shape) == (3, (2,), (3, 2))
    assert {r.attr for r in cfs.runs} == {"body"}


def test_a_loop_of_unknown_trip_count_says_so() -> None:
    result, cfs = _infer(_loop(), c=np.array(True))
    assert (cfs.runs, cfs.problem) == ((), "the trip count 'M' of Loop 'Loop' is not known statically")
    assert result.types["ss"].shape is None
    static, cfs = _infer(_loop(), ORT_STATIC)  # onnxruntime's view: one body, [iterations, 2]
    assert static.types["ss"].shape == (None, 2) and cfs.problem is None


def test_a_scan_runs_once_per_slice() -> None:
    # xs [4, 2] scanned on axis 0: four executions of one body run; the state sf [2], ys [4, 2]
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]), helper.make_node("Neg", ["x_t"], ["y_t"])],
        "sb", [tensor("s_in", [2]), tensor("x_t", [2])], [tensor("s_out", [2]), tensor("y_t", [2])],
    )
    node = helper.make_node("Scan", ["s0", "xs"], ["sf", "ys"], body=body, num_scan_inputs=1)
    result, cfs = _infer(model([node], [tensor("s0", [2]), tensor("xs", [4, 2])], [tensor("sf", [2]), tensor("ys", None)]))
    assert (result.types["sf"].shape, result.types["ys"].shape) == ((2,), (4, 2))
    assert len(cfs.runs) == 4 and len({id(r) for r in cfs.runs}) == 1
