"""The rewrites onnxruntime applies at every level (graphmem/ort/rewrites.py), each on a tiny
graph: the graph graphmem derives, node for node and in onnxruntime's order, against the graph a
real onnxruntime session writes at ORT_DISABLE_ALL."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from builders import init, model, save, tensor
from onnx import TensorProto, helper

from graphmem.model.graph import build_graph
from graphmem.model.loading import Model, load_model
from graphmem.ort.inference import infer_types
from graphmem.ort.optimized import optimized_model
from graphmem.ort.order import ort_order
from graphmem.ort.rewrites import ensure_unique_dq, remove_duplicate_casts
from graphmem.shapes.infer import ORT_STATIC

Row = tuple[str, str, list[str], list[str]]


def _rows(m: Model) -> list[Row]:
    g = build_graph(m)
    return [(g.node(n).op_type, g.node(n).name, list(g.node(n).input), list(g.node(n).output)) for n in ort_order(g)]


def _written(path: Path, tmp_path: Path) -> list[Row]:
    proto = onnx.load(str(optimized_model(path, "none", tmp_path, always=True)))
    return [(n.op_type, n.name, list(n.input), list(n.output)) for n in proto.graph.node]


def _static(m: Model) -> dict:  # type: ignore[type-arg]
    g = build_graph(m)
    return infer_types(g, ort_order(g), view=ORT_STATIC).types


def _casts(tmp_path: Path, first: int, name: str) -> Path:
    nodes = [helper.make_node("Cast", ["x"], ["d"], name="c1", to=first),
             helper.make_node("Cast", ["d"], ["f"], name="c2", to=TensorProto.FLOAT),
             helper.make_node("Relu", ["f"], ["y"], name="r")]
    return save(model(nodes, [tensor("x", [2, 8])], [tensor("y", [2, 8])]), tmp_path / name)


def test_a_lossless_cast_pair_is_removed(tmp_path: Path) -> None:
    # float -> double -> float: c2 casts back to c1's input type without loss, so it goes and Relu
    # reads x; c1 then has no reader left but c2 and goes too. Relu keeps its NodeIndex 2.
    path = _casts(tmp_path, TensorProto.DOUBLE, "double.onnx")
    m = load_model(path)
    rewritten = remove_duplicate_casts(m, _static(m))
    assert rewritten.node_ids == (2,)
    assert _rows(rewritten) == _written(path, tmp_path) == [("Relu", "r", ["x"], ["y"])]


def test_a_lossy_cast_pair_stays(tmp_path: Path) -> None:
    # float -> float16 loses precision (UnsafeCast) and so would removing the way back: both stay
    path = _casts(tmp_path, TensorProto.FLOAT16, "half.onnx")
    m = load_model(path)
    assert remove_duplicate_casts(m, _static(m)) is m
    assert _rows(m) == _written(path, tmp_path)


def test_ensure_unique_dq_gives_the_second_reader_a_copy(tmp_path: Path) -> None:
    # d = DequantizeLinear(q) read by Relu (node 1) and Neg (node 2): the first edge keeps d, Neg
    # reads a copy 'd/duplicated' made by a new node (NodeIndex 4), which onnxruntime's order
    # runs first, right before its reader.
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], name="dq"),
             helper.make_node("Relu", ["d"], ["a"], name="r1"), helper.make_node("Neg", ["d"], ["b"], name="n1"),
             helper.make_node("Add", ["a", "b"], ["y"], name="add")]
    weights = [init("s", np.array(0.5, np.float32)), init("z", np.array(3, np.uint8))]
    path = save(model(nodes, [tensor("q", [2, 8], TensorProto.UINT8)], [tensor("y", [2, 8])], weights), tmp_path / "dq.onnx")
    rewritten = ensure_unique_dq(load_model(path))
    assert rewritten.node_ids == (0, 1, 2, 3, 4)
    assert _rows(rewritten) == _written(path, tmp_path) == [
        ("DequantizeLinear", "dq/duplicated", ["q", "s", "z"], ["d/duplicated"]),
        ("Neg", "n1", ["d/duplicated"], ["b"]),
        ("DequantizeLinear", "dq", ["q", "s", "z"], ["d"]),
        ("Relu", "r1", ["d"], ["a"]),
        ("Add", "add", ["a", "b"], ["y"]),
    ]


def test_a_dq_with_one_reader_is_left_alone(tmp_path: Path) -> None:
    nodes = [helper.make_node("DequantizeLinear", ["q", "s"], ["d"], name="dq"), helper.make_node("Relu", ["d"], ["y"])]
    m = load_model(save(model(nodes, [tensor("q", [4], TensorProto.UINT8)], [tensor("y", [4])],
                              [init("s", np.array(0.5, np.float32))]), tmp_path / "one.onnx"))
    assert ensure_unique_dq(m) is m
