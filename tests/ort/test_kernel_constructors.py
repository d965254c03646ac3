"""Models onnx's checker accepts and onnxruntime 1.31 refuses when it creates the CPU kernels or
unpacks the tensors (the fuzzer's accepted_invalid groups): each refused by graphmem with its
reason (exit 2), and its valid neighbour loaded by both. Real onnxruntime sessions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from builders import init, model, ort_loads, outcome, save, tensor
from onnx import TensorProto, helper, numpy_helper

import graphmem
from graphmem.errors import InvalidModelError, UnsupportedOpError

F = TensorProto.FLOAT


def refused(path: Path) -> str:
    with pytest.raises((InvalidModelError, UnsupportedOpError)) as exc:
        graphmem.analyze(path)
    return str(exc.value)


@pytest.mark.parametrize(("to", "loads"), [(TensorProto.FLOAT, False), (TensorProto.FLOAT8E4M3FN, True)])
def test_cast_saturate_0_only_to_float8(tmp_path: Path, to: int, loads: bool) -> None:
    # tensor/cast_op.cc: "Attribute saturate is only used for cast to float 8 types"
    node = helper.make_node("Cast", ["x"], ["y"], to=to, saturate=0, name="cast")
    path = save(model([node], [tensor("x", [4], TensorProto.FLOAT16)], [tensor("y", [4], to)], opset=21), tmp_path / "c.onnx")
    assert ort_loads(path) is loads
    if loads:
        assert graphmem.analyze(path).activations.peak_bytes == 4  # y: 4 float8 values
    else:
        assert "Cast node 'cast' has saturate 0 with to 1" in refused(path)


@pytest.mark.parametrize(("scale", "loads"), [(-1.0, False), (0.0, False), (0.5, True)])
def test_attention_scale_must_be_positive(tmp_path: Path, scale: float, loads: bool) -> None:
    # llm/attention.cc Attention<T>: "scale_ > 0 || std::isnan(scale_)"
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], scale=scale, name="attn")
    qkv = [tensor(n, [1, 2, 4, 8]) for n in "qkv"]
    path = save(model([node], qkv, [tensor("y", [1, 2, 4, 8])], opset=23), tmp_path / "a.onnx")
    assert ort_loads(path) is loads
    if not loads:
        assert f"Attention node 'attn' has scale {scale!r} (its CPU kernel needs a positive scale)" in refused(path)


@pytest.mark.parametrize(("value", "loads"), [
    (numpy_helper.from_array(np.array([1.0, 2.0], np.float32)), False),  # two elements
    (helper.make_tensor("", TensorProto.FLOAT8E4M3FN, [1], [1.0]), False),  # a type SetValueFromTensorProto does not read
    (numpy_helper.from_array(np.array([7], np.int64)), True),
])
def test_constant_of_shape_value(tmp_path: Path, value: onnx.TensorProto, loads: bool) -> None:
    # generator/constant_of_shape_base.h ConstantOfShapeBase / SetValueFromTensorProto
    node = helper.make_node("ConstantOfShape", ["s"], ["y"], value=value, name="cos")
    m = model([node], [], [tensor("y", [3], value.data_type)], [init("s", np.array([3], np.int64))], opset=21)
    path = save(m, tmp_path / "cos.onnx")
    assert ort_loads(path) is loads
    if not loads:
        assert "ConstantOfShape node 'cos' has a value of" in refused(path)


def test_constant_payload_count_must_match_its_dims(tmp_path: Path) -> None:
    # a Constant [1] float holding 3 float_data values: "Deserialize tensor ... corrupted protobuf
    # data: tensor shape size(1) does not match the data size(3) in proto"
    value = helper.make_tensor("", F, [1], [1.0])
    value.float_data.extend([2.0, 3.0])
    nodes = [helper.make_node("Constant", [], ["c"], value=value, name="const"), helper.make_node("Add", ["x", "c"], ["y"])]
    path = save(model(nodes, [tensor("x", [1])], [tensor("y", [1])]), tmp_path / "k.onnx")
    assert not ort_loads(path)
    assert "the tensor of Constant node 'const' holds 3 values but its dims [1] need 1" in refused(path)


def test_initializer_values_in_the_field_of_another_type(tmp_path: Path) -> None:
    # a float weight whose values are in int64_data: onnxruntime reads float_data (0 values;
    # ValidateEmbeddedTensorProtoDataSizeAndShape: "data field count (0) does not match")
    w = helper.make_tensor("w", F, [2], [0.0, 0.0])
    del w.float_data[:]
    w.int64_data.extend([1, 2])
    path = save(model([helper.make_node("Add", ["x", "w"], ["y"])], [tensor("x", [2])], [tensor("y", [2])], [w]),
                tmp_path / "w.onnx")
    assert not ort_loads(path)
    assert "initializer 'w' stores its values in int64_data, but a tensor of data type 1 is read from float_data" in refused(path)


def test_no_kernel_at_the_opset_is_refused_by_the_what_if_too(tmp_path: Path) -> None:
    # PRelu-6: onnxruntime's CPU provider registers PRelu from 7 ("Could not find an implementation
    # for PRelu(6)"); the --as-dtype what-if leaves type rules out, not this one
    nodes = [helper.make_node("PRelu", ["x", "slope"], ["y"], name="prelu")]
    m = model(nodes, [tensor("x", [2, 3])], [tensor("y", [2, 3])], [init("slope", np.ones(3, np.float32))], opset=6)
    path = save(m, tmp_path / "p.onnx")
    assert not ort_loads(path)
    why = "node 'prelu' (PRelu): the CPU provider has no PRelu kernel for opset version 6; onnxruntime cannot load this model"
    assert refused(path) == why
    code, out, err = outcome("peak", str(path), "--as-dtype", "float16")
    assert (code, out, err) == (2, "", f"graphmem: error: {why}\n")


@pytest.mark.parametrize(("attrs", "opset", "loads"), [
    ({"mode": "bogus"}, 20, False), ({"padding_mode": "bogus"}, 20, False),
    ({"mode": "linear"}, 20, True), ({"mode": "bicubic"}, 16, True),
])
def test_grid_sample_modes(tmp_path: Path, attrs: dict, opset: int, loads: bool) -> None:  # type: ignore[type-arg]
    # tensor/grid_sample.h GridSample<T>: mode and padding_mode from the lists its constructor takes
    node = helper.make_node("GridSample", ["x", "g"], ["y"], name="gs", **attrs)
    m = model([node], [tensor("x", [1, 1, 4, 4]), tensor("g", [1, 2, 2, 2])], [tensor("y", [1, 1, 2, 2])], opset=opset)
    path = save(m, tmp_path / "gs.onnx")
    assert ort_loads(path) is loads
    if loads:
        assert graphmem.analyze(path).activations.peak_bytes > 0
    else:
        (name, value), = attrs.items()
        assert f"GridSample node 'gs' has {name} 'bogus'" in refused(path)


@pytest.mark.parametrize(("mode", "loads"), [("abc", False), ("circular", True)])
def test_tensor_scatter_mode(tmp_path: Path, mode: str, loads: bool) -> None:
    # llm/tensorscatter.cc TensorScatter: mode == "linear" || mode == "circular"
    node = helper.make_node("TensorScatter", ["c", "u"], ["y"], name="ts", mode=mode)
    m = model([node], [tensor("c", [1, 2, 8, 4]), tensor("u", [1, 2, 1, 4])], [tensor("y", [1, 2, 8, 4])], opset=24)
    path = save(m, tmp_path / "ts.onnx")
    assert ort_loads(path) is loads
    if not loads:
        assert "TensorScatter node 'ts' has mode 'abc' (its CPU kernel needs mode linear or circular)" in refused(path)
