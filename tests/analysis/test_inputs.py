"""--shape, --value and odd dims (issue 14): whole input shapes over -1, unnamed and shared-name
dims, values of small integer inputs, dims of 0, pasteable hints; hand-computed bytes."""

from __future__ import annotations

import json
import shlex

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import graphmem
from graphmem.analysis.dims import parse_shapes, parse_values, resolve_inputs
from graphmem.errors import UnboundDimError, UsageError
from graphmem.model.types import TensorType

from builders import outcome

F = TensorProto.FLOAT


def _save(tmp_path, name, nodes, inputs, outputs, inits=()):  # type: ignore[no-untyped-def]
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    path = tmp_path / f"{name}.onnx"
    onnx.save(m, str(path))
    return path


def _vi(name, dtype, dims):  # type: ignore[no-untyped-def]
    v = helper.make_tensor_value_info(name, dtype, None)
    shape = v.type.tensor_type.shape
    for d in dims:
        dim = shape.dim.add()
        if isinstance(d, int):
            dim.dim_value = d
        elif isinstance(d, str):
            dim.dim_param = d
    return v


@pytest.fixture
def paddle_like(tmp_path):  # type: ignore[no-untyped-def]
    # x [-1, 3, ?, ?] -> Abs -> Neg -> y [-1, 3, ?, ?]: paddle2onnx's dims.
    nodes = [helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["y"])]
    return _save(tmp_path, "paddle", nodes, [_vi("x", F, [-1, 3, "?", "?"])], [_vi("y", F, [-1, 3, "?", "?"])])


def test_shape_binds_minus_one_and_a_shared_name(paddle_like) -> None:  # type: ignore[no-untyped-def]
    # 2x3x4x5 floats = 480 B: a (480, freed after Neg) and y (480, output) both held at Neg.
    a = graphmem.analyze(paddle_like, shapes={"x": (2, 3, 4, 5)})
    assert a.activations.peak_bytes == 960
    assert a.io.inputs_bytes == 480 and a.io.outputs_bytes == 480
    assert a.model.shapes == {"x": (2, 3, 4, 5)}
    assert not a.shapes.unresolved


def test_minus_one_without_shape_is_an_error_with_a_pasteable_hint(paddle_like) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UnboundDimError) as err:
        graphmem.analyze(paddle_like, dims={"?": 48})
    message = str(err.value)
    assert "input 'x'" in message and "--shape x=Nx3xNxN" in message


def test_unnamed_dims_are_bound_by_shape(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = _save(tmp_path, "unnamed", [helper.make_node("Relu", ["x"], ["y"])], [_vi("x", F, [None, None])],
                 [_vi("y", F, [None, None])])
    with pytest.raises(UnboundDimError, match="neither a value nor a name"):
        graphmem.analyze(path)
    assert graphmem.analyze(path, shapes={"x": (4, 100)}).activations.peak_bytes == 1600  # y: 4·100·4


def test_value_of_an_integer_input_sizes_a_shape(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # n (int64 scalar) -> Unsqueeze -> ConstantOfShape -> y float [n]: with --value n=7, y is 28 B
    # (the Unsqueeze output is a view of the input n: no request).
    nodes = [helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
             helper.make_node("ConstantOfShape", ["n1"], ["y"], value=numpy_helper.from_array(np.zeros(1, np.float32)))]
    path = _save(tmp_path, "value", nodes, [helper.make_tensor_value_info("n", TensorProto.INT64, [])], [_vi("y", F, ["m"])],
                 [numpy_helper.from_array(np.array([0], np.int64), "ax")])
    a = graphmem.analyze(path, values={"n": (7,)})
    assert a.types["y"].shape == (7,)
    assert a.activations.peak_bytes == 28
    assert a.model.values == {"n": (7,)}
    with pytest.raises(UsageError, match="2 values for an input of shape scalar"):
        graphmem.analyze(path, values={"n": (7, 8)})


def test_a_zero_dim_is_an_empty_past(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # past [1, p, 4] ++ new [1, 1, 4] -> present [1, p + 1, 4]: at p = 0 it is 16 B.
    nodes = [helper.make_node("Concat", ["past", "new"], ["present"], axis=1)]
    path = _save(tmp_path, "past", nodes, [_vi("past", F, [1, "p", 4]), _vi("new", F, [1, 1, 4])],
                 [_vi("present", F, [1, "p + 1", 4])])
    a = graphmem.analyze(path, dims={"p": 0})
    assert (a.activations.peak_bytes, a.io.inputs_bytes) == (16, 16)
    with pytest.raises(UsageError, match="from 0 to"):
        graphmem.analyze(path, dims={"p": -1})


def test_a_dim_named_by_arithmetic_is_derived_and_its_hint_is_quoted(tmp_path) -> None:  # type: ignore[no-untyped-def]
    nodes = [helper.make_node("Relu", ["mask"], ["y"])]
    path = _save(tmp_path, "mask", nodes, [_vi("mask", F, ["past + seq"]), _vi("ids", F, ["seq"]), _vi("pk", F, ["past"])],
                 [_vi("y", F, ["past + seq"])])
    with pytest.raises(UnboundDimError) as err:
        graphmem.analyze(path)
    assert "--dim 'past + seq=N'" in str(err.value)
    assert shlex.split("--dim 'past + seq=N'") == ["--dim", "past + seq=N"]
    a = graphmem.analyze(path, dims={"past": 64, "seq": 1})
    assert a.model.dims["past + seq"] == 65 and a.activations.peak_bytes == 260  # y: 65 floats


@pytest.mark.parametrize(
    ("shapes", "phrase"),
    [({"nosuch": (1,)}, "no input 'nosuch'"), ({"x": (1, 3, 4)}, "has 4 dims"), ({"x": (1, 2, 4, 4)}, "fixed at 3")],
)
def test_bad_shapes_name_the_input(paddle_like, shapes, phrase) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UsageError, match=phrase):
        graphmem.analyze(paddle_like, shapes=shapes)


def test_parsers() -> None:
    assert parse_shapes(["x=1x3x48x192", "s=scalar"]) == {"x": (1, 3, 48, 192), "s": ()}
    assert parse_values(["sr=16000", "lens=3,4"]) == {"sr": (16000,), "lens": (3, 4)}
    for bad in (["x=1x-3"], ["x=1xa"], ["x"], ["x=1", "x=2"]):
        with pytest.raises(UsageError):
            parse_shapes(bad)
    assert parse_values(["speed=1.0", "gain=-2.5e-1,3"]) == {"speed": (1.0,), "gain": (-0.25, 3)}
    for bad in (["sr=abc"], ["sr=1e999"], ["sr=nan"], ["sr=1,,2"]):
        with pytest.raises(UsageError, match="is not a number"):
            parse_values(bad)
    with pytest.raises(UsageError, match="expected integers"):
        resolve_inputs({"n": TensorType(dtype=TensorProto.INT64, shape=(1,))}, values={"n": (1.5,)})
    with pytest.raises(UsageError, match="not an integer or float tensor"):
        resolve_inputs({"s": TensorType(dtype=TensorProto.STRING, shape=(1,))}, values={"s": (1,)})
    with pytest.raises(UsageError, match="does not fit the input's float16"):
        resolve_inputs({"h": TensorType(dtype=TensorProto.FLOAT16, shape=(1,))}, values={"h": (1e6,)})
    resolved = resolve_inputs({"x": TensorType(dtype=F, shape=(1,))}, values={"x": (1,)})
    assert resolved.values["x"].dtype == np.float32 and resolved.values["x"].tolist() == [1.0]


def test_cli_shape_and_value_options(paddle_like) -> None:  # type: ignore[no-untyped-def]
    code, out, err = outcome("peak", str(paddle_like), "--shape", "x=2x3x4x5", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["activations"]["peak_bytes"] == 960 and doc["model"]["shapes"] == {"x": [2, 3, 4, 5]}
    code, out, err = outcome("peak", str(paddle_like), "--shape", "x=2x3x4")
    assert code == 2 and err.startswith("graphmem: error: --shape x=2x3x4: the input has 4 dims")


def test_minus_one_dims_are_unknown_to_onnxruntimes_reuse_rule(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # x, y [-1, 4] (paddle's dynamic dims). onnxruntime clears a negative dim_value when it builds
    # the graph (core/graph/node_arg.cc RemoveInvalidValues), so a [-1, 4] and b [-1, 4] do not
    # share a buffer although their declared shapes are equal as numbers. --shape x=2x4, y=3x4;
    # onnxruntime's order (graphmem's too): b, c, a, a2.
    #   Neg b   48 B        held 48
    #   Neg c   48 B (out)  held 96, then b released: 48
    #   Neg a   32 B        held 80  (taking b's freed 48 B buffer, [-1, 4] as numbers, would hold 96)
    #   Neg a2  32 B (out)  held 112 <- peak (128 with that reuse)
    from graphmem.verify import measure

    nodes = [helper.make_node("Neg", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["a2"]),
             helper.make_node("Neg", ["y"], ["b"]), helper.make_node("Neg", ["b"], ["c"])]
    path = _save(tmp_path, "neg1", nodes, [_vi("x", F, [-1, 4]), _vi("y", F, [-1, 4])],
                 [_vi("a2", F, [-1, 4]), _vi("c", F, [-1, 4])])
    a = graphmem.analyze(path, shapes={"x": (2, 4), "y": (3, 4)})
    assert a.activations.peak_bytes == 112
    assert not [x for x in a.activations.approximations if x.kind == "value_assumed"]
    feeds = {"x": np.zeros((2, 4), np.float32), "y": np.zeros((3, 4), np.float32)}
    assert measure(str(path), feeds, runs=1).runs[0].requested_peak == 112


def test_values_reach_shape_inference_with_the_schema_defaults(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # STFT(signal [1, 128, 1], frame_step 8, frame_length 16), onesided omitted (schema default 1,
    # which onnxruntime adds when it resolves the graph): (128 - 16) / 8 + 1 = 15 frames of
    # 16 / 2 + 1 = 9 bins, real and imaginary: 1·15·9·2 floats = 1,080 B (16 bins without the default).
    I64 = TensorProto.INT64
    nodes = [helper.make_node("STFT", ["signal", "frame_step", "", "frame_length"], ["out"])]
    g = helper.make_graph(nodes, "stft", [_vi("signal", F, [1, 128, 1]), helper.make_tensor_value_info("frame_step", I64, []),
                                          helper.make_tensor_value_info("frame_length", I64, [])], [helper.make_tensor_value_info("out", F, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "stft.onnx"
    onnx.save(m, str(path))
    a = graphmem.analyze(path, values={"frame_step": (8,), "frame_length": (16,)})
    assert a.types["out"].shape == (1, 15, 9, 2)
    assert a.activations.peak_bytes == 1080


def test_float_value_sizes_a_tensor(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # speed [1] float -> Mul(4.0) -> scaled [1] float (4 B) -> Cast int64 -> n [1] (8 B; scaled freed)
    # -> ConstantOfShape(n) -> y [4 * speed] float (graph output). speed=2.5: y has 10 elements,
    # 40 B, while n (8 B) is live: peak 48 B, planned exactly and measured by verify (fed 2.5).
    nodes = [
        helper.make_node("Mul", ["speed", "four"], ["scaled"]),
        helper.make_node("Cast", ["scaled"], ["n"], to=TensorProto.INT64),
        helper.make_node("ConstantOfShape", ["n"], ["y"], value=numpy_helper.from_array(np.array([1.0], np.float32))),
    ]
    g = helper.make_graph(nodes, "speed", [helper.make_tensor_value_info("speed", F, [1])],
                          [helper.make_tensor_value_info("y", F, None)], [numpy_helper.from_array(np.array([4.0], np.float32), "four")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    path = tmp_path / "speed.onnx"
    onnx.save(m, str(path))
    result = graphmem.analyze(path, values={"speed": (2.5,)})
    assert result.activations.peak_bytes == 48 and result.activations.exact
    assert result.model.values == {"speed": (2.5,)}
    code, out, err = outcome("verify", "--resident-processes", "0", str(path), "--value", "speed=2.5", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["verify"]["measured_bytes"] == doc["verify"]["predicted_bytes"] == 48
    assert doc["model"]["values"] == {"speed": [2.5]}
