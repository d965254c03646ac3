"""Every intermediate's shape and dtype equals what onnxruntime produces at run time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from builders import model, save, tensor
from onnx import helper

import graphmem
from graphmem.model.loading import load_model
from graphmem.verify.shapes import runtime_types


def _committed() -> list[Path]:
    from conftest import LIGHT, MODELS

    return sorted(MODELS.glob("*.onnx")) + [LIGHT / "light_inception_v1.onnx"]


@pytest.mark.parametrize("path", _committed(), ids=lambda p: p.stem)
def test_every_shape_matches_onnxruntime(path: Path) -> None:
    names = load_model(path).symbolic_dims
    dims = {n: (2 if n == "batch" else 7) for n in names}
    a = graphmem.analyze(path, dims=dims)
    assert a.shapes.unresolved == ()
    seen = runtime_types(path, dims)
    for name, (shape, dtype) in seen.items():
        t = a.types[name]
        assert t.shape == shape, name
        assert t.dtype == dtype, name


def test_shape_subgraph_is_evaluated(tmp_path: Path) -> None:
    # Reshape target built from the input's shape: Shape -> Gather -> Unsqueeze -> Concat; and a
    # Range whose limit is a dim, feeding Expand: onnx's own inference leaves both unknown.
    nodes = [
        helper.make_node("Shape", ["X"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "zero1"], ["b1"]),
        helper.make_node("Concat", ["b1", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["X", "target"], ["flat"]),
        helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
        helper.make_node("Range", ["zero", "n", "one"], ["r"]),
        helper.make_node("Cast", ["r"], ["rf"], to=onnx.TensorProto.FLOAT),
        helper.make_node("Expand", ["rf", "s"], ["e"]),
        helper.make_node("Add", ["X", "e"], ["Y"]),
    ]
    from builders import init

    inits = [init("zero", np.array(0)), init("one", np.array(1)), init("zero1", np.array([0]))]
    inits.append(init("minus1", np.array([-1])))
    m = model(nodes, [tensor("X", ["batch", "n"])], [tensor("Y", ["batch", "n"]), tensor("flat", None)], inits)
    path = save(m, tmp_path / "sub.onnx")
    a = graphmem.analyze(path, dims={"batch": 3, "n": 5})
    assert a.types["flat"].shape == (3, 5)
    assert a.types["r"].shape == (5,)
    assert a.types["e"].shape == (3, 5)
    assert a.shapes.unresolved == ()
