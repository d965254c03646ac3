"""An initializer shadowed by a graph input that declares other dims (fuzz cases 12435, 21836,
23584): onnxruntime refuses it (graph.cc TypeCheckInputsAndInitializers), so graphmem does too;
a declared symbol or the same dims load, and graphmem accepts them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from builders import init, model, outcome, save, tensor
from onnx import TensorProto, helper


def _shadowed(tmp_path: Path, declared: list) -> Path:  # type: ignore[type-arg]
    m = model([helper.make_node("Gather", ["w", "i"], ["y"], name="gather")],
              [tensor("i", [4], TensorProto.INT64), tensor("w", declared)], [tensor("y", [4, 3])],
              [init("w", np.ones((2, 3), np.float32))])
    return save(m, tmp_path / "shadowed.onnx")


def _ort_loads(path: Path) -> bool:
    import onnxruntime as ort

    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return True
    except Exception:  # noqa: BLE001 - whether it loads is the point
        return False


def test_an_initializer_whose_graph_input_declares_other_dims_is_refused(tmp_path: Path) -> None:
    for declared in ([7, 7, 7], [2, 4]):
        path = _shadowed(tmp_path, declared)
        assert not _ort_loads(path)
        code, _, err = outcome("peak", str(path))
        assert code == 2 and err.count("\n") == 1, err
        assert "initializer 'w' has dims [2, 3], but its graph input declares" in err, err


def test_an_initializer_whose_graph_input_declares_a_symbol_or_its_dims_is_accepted(tmp_path: Path) -> None:
    for declared in (["n", 3], [2, 3]):
        path = _shadowed(tmp_path, declared)
        assert _ort_loads(path)
        code, _, err = outcome("peak", str(path), "--json")  # the initializer gives w its dims
        assert code == 0, err
