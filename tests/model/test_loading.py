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


def expand_with_absurd_shape_input(tmp_path: Path) -> Path:
    """The onnx wheel's Expand test model (X [1, 3, 1], shape [2] int64) with its ``shape`` input
    declared [2**62]: onnx's checker ran on it for minutes, growing until the machine killed it."""
    from builders import LIGHT

    proto = onnx.load(str(LIGHT.parent / "simple" / "test_expand_shape_model1" / "model.onnx"))
    assert [i.name for i in proto.graph.input] == ["X", "shape"]
    proto.graph.input[1].type.tensor_type.shape.dim[0].dim_value = 1 << 62
    path = tmp_path / "expand_2p62.onnx"
    onnx.save(proto, str(path))
    return path


def test_absurd_declared_sizes_are_refused_before_the_checker(tmp_path: Path) -> None:
    # 2**62 int64 elements: 2**65 = 36,893,488,147,419,103,232 bytes > 2**60. A subprocess with
    # 2 GiB of address space and a minute: were the checker reached, it would run out of both.
    import resource
    import subprocess
    import sys

    from builders import ROOT

    path = expand_with_absurd_shape_input(tmp_path)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    proc = subprocess.run([sys.executable, "-m", "graphmem", "peak", str(path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, preexec_fn=limit)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "graphmem: error: tensor 'shape' (graph input, int64 [4611686018427387904]) would take "
        "36,893,488,147,419,103,232 bytes (more than 2**60): its dims are absurd"
    ]


@pytest.mark.parametrize("where", ["value_info", "initializer", "constant", "body"])
def test_every_declared_tensor_is_sized(where: str) -> None:
    from onnx import TensorProto, helper

    from graphmem.errors import TensorSizeError
    from graphmem.model.loading import MAX_TENSOR_BYTES, check_declared_sizes

    big = [1 << 31, 1 << 28]  # 2**59 float elements: 2**61 bytes
    assert 4 * big[0] * big[1] == 2 * MAX_TENSOR_BYTES
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    if where == "value_info":
        graph.value_info.append(helper.make_tensor_value_info("h", TensorProto.FLOAT, ["n", *big]))  # n counts 1
    elif where == "initializer":
        graph.initializer.append(TensorProto(name="w", data_type=TensorProto.FLOAT, dims=big))
    elif where == "constant":
        graph.node.append(helper.make_node("Constant", [], ["c"], value=TensorProto(name="v", data_type=TensorProto.FLOAT, dims=big)))
    else:
        body = helper.make_graph([], "b", [], [helper.make_tensor_value_info("z", TensorProto.FLOAT, big)])
        graph.node.append(helper.make_node("If", ["cond"], ["z"], then_branch=body, else_branch=body))
    name = {"value_info": "h", "initializer": "w", "constant": "c", "body": "z"}[where]
    with pytest.raises(TensorSizeError, match=f"tensor '{name}' .* would take 2,305,843,009,213,693,952 bytes"):
        check_declared_sizes(graph)
    # an empty tensor (a dim of 0) is not absurd, whatever its other dims
    graph = helper.make_graph([], "g", [helper.make_tensor_value_info("e", TensorProto.FLOAT, [0, *big])], [])
    check_declared_sizes(graph)
