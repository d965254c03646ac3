"""What onnxruntime 1.31 refuses to load although onnx's checker accepts it, and graphmem refuses
too (``graphmem/ort/loadable.py``): IR versions above 13, and attributes the CPU kernels'
constructors enforce (GRU, LSTM, RNN). Each case is checked against a real onnxruntime session,
both ways: what it refuses is refused, what it loads is answered."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from graphmem.model.types import TensorType
from graphmem.ort.scratch import kernel_scratch as scratch_rule

from builders import IR_VERSION, PINNED_HOST, ort_loads, outcome, save


def kernel_scratch(node, ins, outs, **kw):  # type: ignore[no-untyped-def]
    """:func:`graphmem.ort.scratch.kernel_scratch` on the pinned host."""
    return scratch_rule(node, ins, outs, host=PINNED_HOST, **kw)


def _relu(tmp_path: Path, ir_version: int | None) -> Path:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    if ir_version is not None:
        m.ir_version = ir_version
    onnx.checker.check_model(m, full_check=True)
    return save(m, tmp_path / f"relu_ir{m.ir_version}.onnx")


def test_an_ir_newer_than_onnxruntime_loads_is_refused_as_onnxruntime_refuses_it(tmp_path: Path) -> None:
    path = _relu(tmp_path, 14)  # onnx 1.23's make_model writes IR 14 unless told otherwise
    assert onnx.load(str(path)).ir_version > 13
    assert not ort_loads(path)
    code, out, err = outcome("peak", str(path), "--dim", "batch=2")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("graphmem: error: ")
    assert f"IR version {onnx.load(str(path)).ir_version} (onnxruntime 1.31 loads IR versions up to 13)" in err


@pytest.mark.parametrize("ir", [3, IR_VERSION, 13])
def test_ir_versions_onnxruntime_loads_are_answered(tmp_path: Path, ir: int) -> None:
    path = _relu(tmp_path, ir)
    assert ort_loads(path)
    code, out, err = outcome("peak", str(path), "--dim", "batch=2", "--json")
    assert code == 0, err


def _rnn(tmp_path: Path, op: str, **attrs: object) -> Path:
    # X [seq 3, batch 1, input 3]; W [1, gates·2, 3], R [1, gates·2, 2] for hidden size 2
    gates = {"GRU": 3, "LSTM": 4, "RNN": 1}[op]
    w = numpy_helper.from_array(np.ones((1, gates * 2, 3), np.float32), "W")
    r = numpy_helper.from_array(np.ones((1, gates * 2, 2), np.float32), "R")
    node = helper.make_node(op, ["X", "W", "R"], ["", "Y_h"], name="rnn0", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 1, 3])],
                              [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, ["d", "b", "h"])], [w, r])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=IR_VERSION)
    onnx.checker.check_model(m, full_check=True)  # valid ONNX: only the kernel refuses it
    return save(m, tmp_path / f"{op}.onnx")


@pytest.mark.parametrize(
    ("op", "attrs", "said"),
    [
        ("GRU", {"hidden_size": -1}, "has hidden_size -1 (its CPU kernel needs a positive hidden_size)"),
        ("GRU", {"hidden_size": 0}, "has hidden_size 0 (its CPU kernel needs a positive hidden_size)"),
        ("GRU", {}, "has no hidden_size (its CPU kernel needs a positive hidden_size)"),
        ("LSTM", {"hidden_size": -1}, "has hidden_size -1 (its CPU kernel needs a positive hidden_size)"),
        ("LSTM", {"hidden_size": 2, "layout": 1}, "has layout 1 (its CPU kernel needs layout 0)"),
        ("RNN", {}, "has no hidden_size (its CPU kernel needs a hidden_size)"),
    ],
)
def test_rnn_attributes_the_cpu_kernel_refuses_are_refused(tmp_path: Path, op: str, attrs: dict, said: str) -> None:
    path = _rnn(tmp_path, op, **attrs)
    assert not ort_loads(path)
    for command in (["peak", str(path)], ["diff", str(path), str(path), "--json"]):
        code, out, err = outcome(*command)
        assert code == 2 and out == "", err
        assert err == f"graphmem: error: {path}: onnxruntime would refuse to load it: {op} node 'rnn0' {said}\n"


@pytest.mark.parametrize("op", ["GRU", "LSTM", "RNN"])
def test_rnn_attributes_onnxruntime_loads_are_answered(tmp_path: Path, op: str) -> None:
    path = _rnn(tmp_path, op, hidden_size=2)
    assert ort_loads(path)
    code, out, err = outcome("peak", str(path), "--json")
    assert code == 0, err


def test_rnn_scratch_rules_give_no_figure_for_a_hidden_size_below_one() -> None:
    # the rules never see such a node through analyze (refused above); called directly they must
    # not compute negative bytes from it
    x = TensorType(dtype=TensorProto.FLOAT, shape=(3, 1, 3))
    for op in ("GRU", "LSTM"):
        for hidden in (-1, 0):
            node = helper.make_node(op, ["X", "W", "R"], ["", "Y_h"], hidden_size=hidden)
            assert kernel_scratch(node, [x, None, None], [None, None]) is None
        node = helper.make_node(op, ["X", "W", "R"], ["", "Y_h"], hidden_size=2)
        scratch = kernel_scratch(node, [x, None, None], [None, None])
        assert scratch is not None and scratch.after and min(scratch.after) > 0


def _resize_or_pad(tmp_path: Path, op: str, **attrs: object) -> Path:
    if op == "Resize":  # X [1, 1, 4, 4] scaled by 2 in H and W: Y [1, 1, 8, 8]
        inits = [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")]
        node = helper.make_node("Resize", ["X", "", "sc"], ["Y"], name="n0", **attrs)
        x, y = [1, 1, 4, 4], [1, 1, 8, 8]
    else:  # X [1, 1, 4, 4] padded by one column on each side: Y [1, 1, 4, 6]
        inits = [numpy_helper.from_array(np.array([0, 0, 0, 1, 0, 0, 0, 1], np.int64), "p")]
        node = helper.make_node("Pad", ["X", "p"], ["Y"], name="n0", **attrs)
        x, y = [1, 1, 4, 4], [1, 1, 4, 6]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, x)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=IR_VERSION)
    onnx.checker.check_model(m, full_check=True)  # the checker does not read these strings
    return save(m, tmp_path / f"{op}.onnx")


@pytest.mark.parametrize(
    ("op", "attrs", "said"),
    [
        ("Resize", {"mode": "abc"}, "has mode 'abc' (its CPU kernel needs mode nearest, linear, cubic)"),
        ("Resize", {"mode": "bilinear"}, "has mode 'bilinear' (its CPU kernel needs mode nearest, linear, cubic)"),
        ("Resize", {"coordinate_transformation_mode": "abc"},
         "has coordinate_transformation_mode 'abc' (its CPU kernel needs a coordinate_transformation_mode the ONNX spec lists)"),
        ("Resize", {"nearest_mode": "simple"},
         "has nearest_mode 'simple' (its CPU kernel needs nearest_mode round_prefer_floor, round_prefer_ceil, floor or ceil)"),
        ("Pad", {"mode": "bogus"}, "has mode 'bogus' (its CPU kernel needs mode constant, reflect, edge or wrap)"),
    ],
)
def test_mode_strings_the_cpu_kernel_refuses_are_refused(tmp_path: Path, op: str, attrs: dict, said: str) -> None:
    path = _resize_or_pad(tmp_path, op, **attrs)
    assert not ort_loads(path)
    code, out, err = outcome("peak", str(path))
    assert code == 2 and out == "", err
    assert err == f"graphmem: error: {path}: onnxruntime would refuse to load it: {op} node 'n0' {said}\n"


@pytest.mark.parametrize(
    ("op", "attrs"),
    [("Resize", {}), ("Resize", {"mode": "cubic", "coordinate_transformation_mode": "align_corners"}),
     ("Resize", {"nearest_mode": "floor"}), ("Resize", {"coordinate_transformation_mode": "tf_half_pixel_for_nn"}),
     ("Pad", {}), ("Pad", {"mode": "wrap"}), ("Pad", {"mode": "reflect"})],
)
def test_mode_strings_onnxruntime_loads_are_answered(tmp_path: Path, op: str, attrs: dict) -> None:
    path = _resize_or_pad(tmp_path, op, **attrs)
    assert ort_loads(path)
    code, out, err = outcome("peak", str(path), "--json")
    assert code == 0, err


def _preview(tmp_path: Path, domain: str) -> Path:
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    if domain == "ai.onnx.preview":  # FlexAttention(Q, K, V), each [batch 1, heads 1, seq 2, head 4]
        names = ["Q", "K", "V"]
        ins = [helper.make_tensor_value_info(n, f32, [1, 1, 2, 4]) for n in names]
        outs = [helper.make_tensor_value_info("Y", f32, [1, 1, 2, 4])]
        node = helper.make_node("FlexAttention", names, ["Y"], name="n0", domain=domain)
    else:  # Adagrad(R, T, X, G, H) -> (X_new, H_new), X, G, H [3]
        ins = [helper.make_tensor_value_info("R", f32, []), helper.make_tensor_value_info("T", i64, [])]
        ins += [helper.make_tensor_value_info(n, f32, [3]) for n in ("X", "G", "H")]
        outs = [helper.make_tensor_value_info(n, f32, [3]) for n in ("X_new", "H_new")]
        node = helper.make_node("Adagrad", ["R", "T", "X", "G", "H"], ["X_new", "H_new"], name="n0", domain=domain)
    m = helper.make_model(helper.make_graph([node], "g", ins, outs),
                          opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(domain, 1)], ir_version=10)
    onnx.checker.check_model(m, full_check=True)
    return save(m, tmp_path / "preview.onnx")


@pytest.mark.parametrize("domain", ["ai.onnx.preview", "ai.onnx.preview.training"])
def test_preview_domains_onnxruntime_registers_no_op_of_are_refused(tmp_path: Path, domain: str) -> None:
    path = _preview(tmp_path, domain)
    assert not ort_loads(path)
    code, out, err = outcome("peak", str(path))
    assert code == 2 and out == "", err
    op = "FlexAttention" if domain == "ai.onnx.preview" else "Adagrad"
    assert err == (f"graphmem: error: {path}: onnxruntime would refuse to load it: {op} node 'n0' is in domain "
                   f"'{domain}', none of whose ops onnxruntime 1.31 registers\n")


@pytest.mark.parametrize("where", ["output", "value_info", "sequence", "body"])
def test_a_tensor_type_without_element_type_is_refused(tmp_path: Path, where: str) -> None:
    # Relu(x) -> h, Relu(h) -> y; the type left without an element type (0) is where's
    f32 = TensorProto.FLOAT
    x = helper.make_tensor_value_info("x", f32, [2])
    y = helper.make_tensor_value_info("y", 0 if where == "output" else f32, [2])
    value_info = [helper.make_tensor_value_info("h", 0, [2])] if where == "value_info" else []
    nodes = [helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    inputs = [x]
    if where == "sequence":  # y is a sequence of tensors of element type 0
        y = onnx.ValueInfoProto(name="y")
        y.type.sequence_type.elem_type.tensor_type.elem_type = 0
        nodes = [helper.make_node("SequenceConstruct", ["x"], ["y"])]
    if where == "body":  # If(c) with a then-branch output of element type 0
        def body(name: str, elem: int) -> onnx.GraphProto:
            return helper.make_graph([helper.make_node("Relu", ["x"], [name])], name, [],
                                     [helper.make_tensor_value_info(name, elem, [2])])
        nodes = [helper.make_node("If", ["c"], ["y"], then_branch=body("t", 0), else_branch=body("e", f32))]
        inputs = [x, helper.make_tensor_value_info("c", TensorProto.BOOL, [])]
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, [y], value_info=value_info),
                          opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)
    onnx.checker.check_model(m, full_check=True)  # the checker lets it through
    path = save(m, tmp_path / f"{where}.onnx")
    assert not ort_loads(path)
    code, out, err = outcome("peak", str(path))
    assert code == 2 and out == "", err
    name = {"output": "y", "value_info": "h", "sequence": "y", "body": "t"}[where]
    assert err == (f"graphmem: error: {path}: onnxruntime would refuse to load it: '{name}' is declared as a "
                   f"tensor without an element type (data type 0)\n")


def _one_node(tmp_path: Path, op: str, opset: int, **attrs: object) -> Path:
    f32 = TensorProto.FLOAT
    if op == "Attention":  # Q, K, V [batch 1, heads 1, seq 2, head 4] -> Y
        ins = [helper.make_tensor_value_info(n, f32, [1, 1, 2, 4]) for n in "QKV"]
        node, inits, y = helper.make_node(op, ["Q", "K", "V"], ["Y"], name="n0", **attrs), [], [1, 1, 2, 4]
    elif op in ("CumSum", "CumProd"):  # along axis 0 of X [3]
        ins = [helper.make_tensor_value_info("X", f32, [3])]
        inits = [numpy_helper.from_array(np.array(0, np.int64), "axis")]
        node, y = helper.make_node(op, ["X", "axis"], ["Y"], name="n0", **attrs), [3]
    else:  # Clip-6 of X [3]
        ins = [helper.make_tensor_value_info("X", f32, [3])]
        node, inits, y = helper.make_node(op, ["X"], ["Y"], name="n0", **attrs), [], [3]
    m = helper.make_model(helper.make_graph([node], "g", ins, [helper.make_tensor_value_info("Y", f32, y)], inits),
                          opset_imports=[helper.make_opsetid("", opset)], ir_version=13 if opset > 21 else IR_VERSION)
    onnx.checker.check_model(m, full_check=True)
    return save(m, tmp_path / f"{op}.onnx")


@pytest.mark.parametrize(
    ("op", "opset", "attrs", "said"),
    [
        ("Clip", 6, {"min": 1.0, "max": 0.0}, "has min 1.0 and max 0.0 (its CPU kernel needs min <= max)"),
        ("Clip", 6, {"max": float("nan")}, "has min -3.4028234663852886e+38 and max nan (its CPU kernel needs min <= max)"),
        ("CumSum", 14, {"exclusive": 2}, "has exclusive 2 (its CPU kernel needs exclusive 0 or 1)"),
        ("CumSum", 14, {"reverse": -1}, "has reverse -1 (its CPU kernel needs reverse 0 or 1)"),
        ("CumProd", 26, {"exclusive": -4611686018427387904},
         "has exclusive -4611686018427387904 (its CPU kernel needs exclusive 0 or 1)"),
        ("Attention", 25, {"left_window_size": 1},
         "has attribute left_window_size, which onnxruntime 1.31's Attention schema lacks (onnx's is newer)"),
    ],
)
def test_attributes_onnxruntime_refuses_are_refused(tmp_path: Path, op: str, opset: int, attrs: dict, said: str) -> None:
    path = _one_node(tmp_path, op, opset, **attrs)
    assert not ort_loads(path)
    code, out, err = outcome("peak", str(path))
    assert code == 2 and out == "", err
    assert err == f"graphmem: error: {path}: onnxruntime would refuse to load it: {op} node 'n0' {said}\n"


@pytest.mark.parametrize(
    ("op", "opset", "attrs"),
    [("Clip", 6, {"min": 0.0, "max": 0.0}), ("Clip", 6, {"min": float("-inf")}), ("Clip", 6, {}),
     ("CumSum", 14, {"exclusive": 1, "reverse": 1}), ("CumProd", 26, {}), ("Attention", 24, {}),
     ("Attention", 25, {"is_causal": 1})],
)
def test_attributes_onnxruntime_loads_are_answered(tmp_path: Path, op: str, opset: int, attrs: dict) -> None:
    path = _one_node(tmp_path, op, opset, **attrs)
    assert ort_loads(path)
    code, out, err = outcome("peak", str(path), "--json")
    assert code == 0, err


@pytest.mark.parametrize("ir", [0, 1, 2, 3, None])
def test_old_ir_versions_as_onnxruntime_takes_them(tmp_path: Path, ir: int | None) -> None:
    # y = x + w, w an initializer that is not a graph input (ONNX wants it listed before IR 4;
    # onnxruntime does not); ir None: no ir_version field at all, which onnxruntime refuses
    w = numpy_helper.from_array(np.ones(2, np.float32), "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], [w])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    if ir is None:
        m.ClearField("ir_version")
    else:
        m.ir_version = ir
    path = save(m, tmp_path / "old.onnx")
    code, out, err = outcome("peak", str(path), "--json")
    if ir is None:
        assert not ort_loads(path)
        assert code == 2 and err.startswith("graphmem: error: ") and err.count("\n") == 1, err
    else:
        assert ort_loads(path)
        assert code == 0, err
        # x [2] float: y 8 B is the only tensor the plan holds
        assert json.loads(out)["activations"]["peak_bytes"] == 8
