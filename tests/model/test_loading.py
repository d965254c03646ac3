"""Loading reads structure, never weight bytes; external data is counted from metadata."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

import graphmem
from graphmem.model.loading import KEEP_VALUE_MAX_ELEMENTS, load_model
from graphmem.model.protoscan import read_stripped


@pytest.mark.parametrize("name", ["tiny_bert.onnx", "tiny_cnn.onnx", "static_mlp.onnx", "tiny_lstm.onnx"])
def test_wire_scan_keeps_everything_but_large_payloads(models_dir: Path, name: str) -> None:
    path = models_dir / name
    full = onnx.load(str(path))
    lean = read_stripped(path, KEEP_VALUE_MAX_ELEMENTS)
    assert lean.graph.node == full.graph.node
    assert lean.graph.input == full.graph.input and lean.graph.output == full.graph.output
    assert lean.opset_import == full.opset_import
    for a, b in zip(lean.graph.initializer, full.graph.initializer):
        assert (a.name, list(a.dims), a.data_type) == (b.name, list(b.dims), b.data_type)
        import math

        if math.prod(b.dims) <= KEEP_VALUE_MAX_ELEMENTS:
            assert a == b
        else:
            assert not a.raw_data and not a.float_data
    assert lean.ByteSize() < full.ByteSize()


def test_params_and_bytes_by_dtype(models_dir: Path) -> None:
    path = models_dir / "static_mlp.onnx"
    full = onnx.load(str(path))
    expect = sum(int(__import__("math").prod(t.dims)) for t in full.graph.initializer)
    consts = [n for n in full.graph.node if n.op_type == "Constant"]
    for n in consts:
        expect += int(__import__("math").prod(n.attribute[0].t.dims))
    a = graphmem.analyze(path)
    assert a.weights.params == expect
    assert a.weights.bytes == sum(b for _, b in a.weights.by_dtype.values())


def test_external_data_is_counted_without_the_file(llama_tiny: Path) -> None:
    m = load_model(llama_tiny)
    assert all(w.external for w in m.weights.values() if w.numel > KEEP_VALUE_MAX_ELEMENTS)
    assert not (llama_tiny.parent / "llama7b.weights").exists()
    a = graphmem.analyze(llama_tiny, dims={"batch": 1, "seq": 32})
    assert a.weights.external_bytes > 0
    assert a.weights.bytes >= a.weights.external_bytes
    assert a.shapes.unresolved == ()


def test_packed_int4_weights_are_sized_in_half_bytes() -> None:
    from graphmem.model.dtypes import tensor_bytes

    assert tensor_bytes(onnx.TensorProto.INT4, 7) == 4  # ceil(7 * 4 / 8)
    assert tensor_bytes(onnx.TensorProto.FLOAT4E2M1, 16) == 8
    assert tensor_bytes(onnx.TensorProto.BOOL, 3) == 3
    assert tensor_bytes(onnx.TensorProto.STRING, 3) is None


def test_a_missing_external_data_file_is_one_warning_line(tmp_path: Path) -> None:
    # w [256, 256] float in m.data (256 * 256 * 4 = 262,144 B), and a 16-element bias kept inline
    import os

    import numpy as np
    from builders import init, invoke, model, tensor
    from onnx import helper

    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])]
    m = model(nodes, [tensor("x", [1, 256])], [tensor("y", [1, 256])],
              [init("w", np.ones((256, 256), np.float32)), init("b", np.ones((256,), np.float32))])
    path = tmp_path / "m.onnx"
    onnx.save(m, str(path), save_as_external_data=True, location="m.data", size_threshold=4096)
    with_data = invoke("peak", str(path), "--json")
    assert with_data.exit_code == 0 and with_data.stderr == ""
    os.remove(tmp_path / "m.data")
    result = invoke("peak", str(path), "--json")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"graphmem: warning: {path}: external-data 'm.data' is missing (262,144 bytes of weights): the figures do "
        "not need the weight bytes, but onnxruntime cannot load this model without them"
    ]
    assert result.stdout == with_data.stdout  # the same figures: 262,144 + 1,024 B of weights
    import json

    assert json.loads(result.stdout)["weights"]["bytes"] == 262_144 + 256 * 4
    with pytest.warns(graphmem.model.validate.ExternalDataWarning, match="'m.data' is missing"):
        load_model(path)
