"""What onnxruntime 1.31 refuses to load although onnx's checker accepts it, and graphmem refuses
too (``graphmem/ort/loadable.py``): IR versions above 13, and attributes the CPU kernels'
constructors enforce (GRU, LSTM, RNN). Each case is checked against a real onnxruntime session,
both ways: what it refuses is refused, what it loads is answered."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from graphmem.model.types import TensorType
from graphmem.ort.scratch import kernel_scratch

from builders import IR_VERSION, outcome, save


def _ort_loads(path: Path) -> bool:
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001  (onnxruntime raises its own Fail/InvalidGraph types)
        return False
    return True


def _relu(tmp_path: Path, ir_version: int | None) -> Path:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    if ir_version is not None:
        m.ir_version = ir_version
    onnx.checker.check_model(m, full_check=True)
    return save(m, tmp_path / f"relu_ir{m.ir_version}.onnx")


def test_make_model_default_ir_is_refused_as_onnxruntime_refuses_it(tmp_path: Path) -> None:
    path = _relu(tmp_path, None)  # onnx 1.23 writes its own IR version, 14
    assert onnx.load(str(path)).ir_version > 13
    assert not _ort_loads(path)
    code, out, err = outcome("peak", str(path), "--dim", "batch=2")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("graphmem: error: ")
    assert f"IR version {onnx.load(str(path)).ir_version} (onnxruntime 1.31 loads IR versions up to 13)" in err


@pytest.mark.parametrize("ir", [3, IR_VERSION, 13])
def test_ir_versions_onnxruntime_loads_are_answered(tmp_path: Path, ir: int) -> None:
    path = _relu(tmp_path, ir)
    assert _ort_loads(path)
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
    assert not _ort_loads(path)
    for command in (["peak", str(path)], ["diff", str(path), str(path), "--json"]):
        code, out, err = outcome(*command)
        assert code == 2 and out == "", err
        assert err == f"graphmem: error: {path}: onnxruntime would refuse to load it: {op} node 'rnn0' {said}\n"


@pytest.mark.parametrize("op", ["GRU", "LSTM", "RNN"])
def test_rnn_attributes_onnxruntime_loads_are_answered(tmp_path: Path, op: str) -> None:
    path = _rnn(tmp_path, op, hidden_size=2)
    assert _ort_loads(path)
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
