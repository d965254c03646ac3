"""Every document of an analysis: no negative figure anywhere, and every inexact result says so
(``exact: false`` with at least one ``{kind, node, detail}``); ``--require-exact`` gates on it."""

from __future__ import annotations

import json
from typing import Any

import onnx
from onnx import TensorProto, helper

from builders import MODELS, outcome

F = TensorProto.FLOAT
# Keys whose value may rightly be negative: fit coefficients and residuals, a fit's headroom.
SIGNED = {"per_unit_bytes", "per_unit2_bytes", "fixed_bytes", "worst_residual_bytes", "linear_worst_residual_bytes",
          "headroom_bytes"}


def _vi(name, dims):  # type: ignore[no-untyped-def]
    v = helper.make_tensor_value_info(name, F, None)
    for d in dims:
        dim = v.type.tensor_type.shape.dim.add()
        if isinstance(d, int):
            dim.dim_value = d
        elif isinstance(d, str):
            dim.dim_param = d
    return v


def _negatives(node: Any, path: str = "$") -> list[str]:
    if isinstance(node, dict):
        return [p for k, v in node.items() if k not in SIGNED for p in _negatives(v, f"{path}.{k}")]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _negatives(v, f"{path}[{i}]")]
    if isinstance(node, (int, float)) and not isinstance(node, bool) and node < 0:
        return [f"{path} = {node}"]
    return []


def _said_why(section: dict) -> bool:  # type: ignore[type-arg]
    if section["exact"]:
        return section["approximations"] == []
    return bool(section["approximations"]) and all(x["kind"] and x["detail"] for x in section["approximations"])


def _paddle_like(tmp_path):  # type: ignore[no-untyped-def]
    nodes = [helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["y"])]
    g = helper.make_graph(nodes, "paddle", [_vi("x", [-1, 3, "?", "?"])], [_vi("y", [-1, 3, "?", "?"])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    path = tmp_path / "paddle.onnx"
    onnx.save(m, str(path))
    return path


def _data_dependent(tmp_path):  # type: ignore[no-untyped-def]
    # x [4] -> NonZero -> y int64 [1, ?]: its size depends on x's values (unresolved_tensor).
    g = helper.make_graph([helper.make_node("NonZero", ["x"], ["y"])], "nz", [_vi("x", [4])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    path = tmp_path / "nonzero.onnx"
    onnx.save(m, str(path))
    return path


def test_documents_carry_no_negative_figure_and_say_why(tmp_path) -> None:  # type: ignore[no-untyped-def]
    paddle = str(_paddle_like(tmp_path))
    runs = [
        ("peak", paddle, "--shape", "x=2x3x4x5"),  # -1 dims: unknown to onnxruntime too, no approximation
        ("peak", str(_data_dependent(tmp_path))),  # NonZero: unresolved_tensor
        ("peak", str(MODELS / "tiny_lstm.onnx"), "--dim", "batch=2", "--dim", "seq=8"),
        ("peak", str(MODELS / "tiny_gpt2.onnx"), "--dim", "batch=1", "--dim", "seq=0"),  # empty sequence
        ("verify", "--resident-processes", "0", paddle, "--shape", "x=2x3x4x5"),
        ("sweep", str(MODELS / "tiny_cnn.onnx"), "--dim", "batch=1,2"),
    ]
    seen_inexact = False
    for args in runs:
        code, out, err = outcome(*args, "--json")
        assert code in (0, 1), (args, err)
        doc = json.loads(out)
        assert _negatives(doc) == [], args
        if args[0] == "peak":
            assert _said_why(doc["activations"]), args
            seen_inexact |= not doc["activations"]["exact"]
        elif args[0] == "verify":
            assert _said_why(doc["verify"]), args
        else:
            assert all(r["exact"] == (r["approximations"] == []) for r in doc["rows"])
    assert seen_inexact  # the NonZero model is said to be approximate


def test_require_exact_fails_an_approximate_figure(tmp_path) -> None:  # type: ignore[no-untyped-def]
    code, out, err = outcome("peak", str(_data_dependent(tmp_path)), "--require-exact", "--json")
    assert code == 1
    failure = json.loads(out)["gate"]["failures"][0]
    assert (failure["reason"], failure["option"]) == ("approximate", "--require-exact")
    assert "unresolved_tensor" in err
    code, _, err = outcome("peak", str(MODELS / "tiny_cnn.onnx"), "--dim", "batch=1", "--require-exact")
    assert code == 0, err
