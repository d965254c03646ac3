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
