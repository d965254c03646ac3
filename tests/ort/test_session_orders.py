"""Execution orders that vary between onnxruntime sessions (graphmem.ort.order.session_orders):
the NCHWc transformer's Finalize numbers its ReorderOutput nodes in heap-address order, so where
two of them are siblings in the reverse DFS, each session may run them in either order. Real
onnxruntime sessions, hand-computed figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from builders import init, model, save, tensor
from onnx import helper

from graphmem.analysis import analyze_graph_opt
from graphmem.model.graph import build_graph
from graphmem.model.loading import load_model
from graphmem.ort.optimized import optimized_model
from graphmem.ort.order import file_order, finalize_reorders, session_orders
from graphmem.verify import make_feeds, measure

RNG = np.random.default_rng(0)
S = 16 * 32 * 32 * 4  # a [1,16,32,32] float tensor: 65,536 B
B = 16 * 8 * 8 * 4  # a [1,16,8,8] float tensor: 4,096 B


def two_convs(tmp: Path, *, neg: bool) -> Path:
    """x [1,3,32,32] -> Conv(16, 3x3, pad 1) -> a [1,16,32,32] (graph output);
    x -> Conv(16, 4x4, stride 4) -> b [1,16,8,8] -> (Neg ->) graph output.
    At level all both Convs run blocked (NCHWc) and Finalize adds a ReorderOutput for a and b."""
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "w2"], ["b"], strides=[4, 4]),
    ]
    outputs = [tensor("a", [1, 16, 32, 32]), tensor("b", [1, 16, 8, 8])]
    if neg:
        nodes.append(helper.make_node("Neg", ["b"], ["y"]))
        outputs[1] = tensor("y", [1, 16, 8, 8])
    weights = [init("w1", RNG.standard_normal((16, 3, 3, 3)).astype(np.float32)),
               init("w2", RNG.standard_normal((16, 3, 4, 4)).astype(np.float32))]
    m = model(nodes, [tensor("x", [1, 3, 32, 32])], outputs, weights, opset=17)
    return save(m, tmp / ("neg.onnx" if neg else "siblings.onnx"))


def orders_of(path: Path, tmp: Path) -> tuple[tuple[int, ...], ...] | None:
    g = build_graph(load_model(optimized_model(path, "all", tmp)))
    assert len(finalize_reorders(g)) == 2
    return session_orders(g, file_order(g))


def measured(path: Path) -> int:
    feeds = make_feeds(onnx.load(str(path)), {}, seed=0)
    return measure(str(path), feeds, graph_opt="all", threads=1, runs=1).runs[0].requested_peak


def test_sibling_reorders_two_orders_largest_reported(tmp_path: Path) -> None:
    # The two ReorderOutputs write graph outputs: both are leaves, siblings in the reverse DFS.
    # a's branch first: conv_a (a' S) -> reorder_a (a S; 2S, a' freed) -> conv_b (b' B) -> reorder_b (b B):
    #   peak max(2S, S + 2B) = 131,072.
    # b's branch first: conv_b (B) -> reorder_b (2B, b' freed) -> conv_a (B + S) -> reorder_a (B + 2S):
    #   peak 2S + B = 135,168.
    path = two_convs(tmp_path, neg=False)
    assert orders_of(path, tmp_path) is not None and len(orders_of(path, tmp_path)) == 2
    result = analyze_graph_opt(path, "all")
    assert result.activations.peak_bytes == 2 * S + B == 135_168
    assert not result.activations.exact
    (note,) = [a for a in result.activations.approximations if a.kind == "order_assumed"]
    assert "2 orders possible, peak 131,072, 135,168 B" in note.detail
    assert note.node == "ReorderOutput -> a"
    assert measured(path) in {2 * S, 2 * S + B}  # this session's order, one of the two


def test_reorder_beside_another_op_one_order(tmp_path: Path) -> None:
    # Leaves: reorder_a (Finalize, index above every other node) and Neg: not two Finalize
    # siblings, so one order, a's branch first: conv_a (S) -> reorder_a (2S, a' freed: S) ->
    # conv_b (S + B) -> reorder_b (S + 2B, b' freed) -> Neg (y, graph output: S + 2B): peak 2S.
    path = two_convs(tmp_path, neg=True)
    assert orders_of(path, tmp_path) is not None and len(orders_of(path, tmp_path)) == 1
    result = analyze_graph_opt(path, "all")
    assert result.activations.peak_bytes == 2 * S == 131_072
    assert result.activations.exact, result.activations.approximations
    assert measured(path) == 2 * S


def test_verify_passes_on_the_order_the_session_ran(tmp_path: Path) -> None:
    # siblings.onnx: orders of peak 131,072 (a's branch first) and 135,168 (b's first), see above;
    # each session picks one. Tolerance 0%: the largest alone would fail whenever the session ran
    # a's branch first (131,072 / 135,168 - 1 = -3.0%); the order it ran is named and matched.
    import json

    from builders import invoke

    path = two_convs(tmp_path, neg=False)
    result = invoke("verify", "--resident-processes", "0", str(path), "--graph-opt", "all", "--tolerance", "0%", "--json")
    assert result.exit_code == 0, result.output
    v = json.loads(result.stdout)["verify"]
    assert v["order_peaks"] == [2 * S, 2 * S + B] == [131_072, 135_168]
    assert v["predicted_bytes"] == 2 * S + B
    assert v["measured_bytes"] in (2 * S, 2 * S + B)
    assert v["order_matched"] == v["measured_bytes"] and v["passed"]
    table = invoke("verify", "--resident-processes", "0", str(path), "--graph-opt", "all", "--tolerance", "0%")
    assert table.exit_code == 0, table.output
    assert "onnxruntime picks one of the orders per session (peaks 131,072, 135,168 B); this session ran the order of peak" in table.stdout


def test_verify_one_order_names_no_alternatives(tmp_path: Path) -> None:
    import json

    from builders import invoke

    path = two_convs(tmp_path, neg=True)  # one order: peak 2S (see above)
    result = invoke("verify", "--resident-processes", "0", str(path), "--graph-opt", "all", "--tolerance", "0%", "--json")
    assert result.exit_code == 0, result.output
    v = json.loads(result.stdout)["verify"]
    assert (v["order_peaks"], v["order_matched"], v["measured_bytes"]) == ([], None, 2 * S)


def test_matching_order_is_within_tolerance_or_none() -> None:
    from graphmem.verify.compare import matching_order

    peaks = (131_072, 135_168)
    assert matching_order(peaks, 131_072, 0.0) == 131_072
    assert matching_order(peaks, 135_168, 0.0) == 135_168
    # 133,120 is 2,048 B = 1.54% from each (2,048 / 133,120 = 0.01538): none at 1%; at 2% both
    # are, equally close, and the smaller is named
    assert matching_order(peaks, 133_120, 0.01) is None
    assert matching_order(peaks, 133_120, 0.02) == 131_072
    assert matching_order((), 131_072, 0.05) is None
