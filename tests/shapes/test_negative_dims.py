"""A dim that shape inference makes negative is unknown, never -1 in a document or a table
(fuzz case 17951: BERT's mask Expand took its shape from a Where that kept a -1, and ``layers
--json`` wrote ``output_shape [2, -1, 2, 2]`` and 0 bytes for it, with exit 0)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from builders import init, model, ort_loads, outcome, save, tensor
from onnx import helper


def expand_minus_one(tmp_path: Path) -> Path:
    # x [2,1,2] -> Expand(shape = [2,-1,2]) -> e -> Relu -> y: onnx infers e as [2,-1,2];
    # onnxruntime loads the file and fails when it runs it ("Tensor shape.Size() must be >= 0")
    nodes = [helper.make_node("Expand", ["x", "s"], ["e"], name="expand"), helper.make_node("Relu", ["e"], ["y"], name="relu")]
    m = model(nodes, [tensor("x", [2, 1, 2])], [tensor("y", ["a", "b", "c"])], [init("s", np.array([2, -1, 2], np.int64))])
    return save(m, tmp_path / "expand.onnx")


def negatives(doc: object) -> list[object]:
    if isinstance(doc, dict):
        return [n for v in doc.values() for n in negatives(v)]
    if isinstance(doc, list):
        return [n for v in doc for n in negatives(v)]
    return [doc] if isinstance(doc, (int, float)) and not isinstance(doc, bool) and doc < 0 else []


def test_negative_inferred_dim_is_unknown(tmp_path: Path) -> None:
    path = expand_minus_one(tmp_path)
    assert ort_loads(path)
    code, out, _ = outcome("layers", str(path), "--json")
    assert code == 0
    doc = json.loads(out)
    assert [(r["name"], r["output_shape"]) for r in doc["layers"]] == [("expand", [2, None, 2]), ("relu", [2, "b", 2])]  # y declares b
    assert negatives(doc) == []
    code, out, _ = outcome("layers", str(path))
    assert code == 0 and "2x?x2" in out and "-1" not in out
    code, out, _ = outcome("peak", str(path), "--json")
    assert code == 0
    peak = json.loads(out)
    assert negatives(peak) == []
    # e and y have no size: not exact, and named as unresolved (never counted as a size of -1 or 0 silently)
    assert peak["activations"]["exact"] is False
    assert {(a["kind"], a["node"]) for a in peak["activations"]["approximations"]} >= {("unresolved_tensor", "expand")}


def test_negative_declared_intermediate_dim_is_unknown(tmp_path: Path) -> None:
    # value_info declares h [-1, 4] (cleared by onnxruntime, node_arg.cc); inference gives [3, 4]
    nodes = [helper.make_node("Relu", ["x"], ["h"], name="r1"), helper.make_node("Relu", ["h"], ["y"], name="r2")]
    m = model(nodes, [tensor("x", [3, 4])], [tensor("y", [3, 4])], value_info=[tensor("h", [-1, 4])])
    code, out, _ = outcome("layers", str(save(m, tmp_path / "relu.onnx")), "--json")
    assert code == 0
    assert [r["output_shape"] for r in json.loads(out)["layers"]] == [[3, 4], [3, 4]]
