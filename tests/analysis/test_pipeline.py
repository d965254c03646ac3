"""The pipeline end to end on tiny inline graphs (hand-computed) and on real models, each
prediction checked against onnxruntime's own measurement (real sessions, no mocks)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from builders import init, model, save, tensor
from onnx import helper

import graphmem
from graphmem.model.loading import load_model
from graphmem.verify import make_feeds, measure

KIB4 = 4096  # one float tensor of 1024 elements


def measured_peak(path: Path, dims: dict[str, int]) -> int:
    proto = onnx.load(str(path), load_external_data=False)
    return measure(str(path), make_feeds(proto, dims), graph_opt="none", threads=1, runs=1).runs[0].requested_peak


def chain(tmp_path: Path, ops: list[str], name: str) -> Path:
    nodes, prev = [], "X"
    for k, op in enumerate(ops):
        out = "Y" if k == len(ops) - 1 else f"t{k}"
        nodes.append(helper.make_node(op, [prev], [out], name=f"{op}_{k}"))
        prev = out
    return save(model(nodes, [tensor("X", [1, 1024])], [tensor("Y", [1, 1024])]), tmp_path / name)


def test_inplace_relu_shares_its_dying_input(tmp_path: Path) -> None:
    # Exp_0: t0 fresh (4096)                      in use 4096
    # Relu_1: t1 in place of t0 (t0's last use)  in use 4096
    # Exp_2: t2 fresh; t0/t1 buffer released after this step   in use 8192  <- peak
    # Sigmoid_3: Y graph output, own buffer; t2 released after   in use 8192
    path = chain(tmp_path, ["Exp", "Relu", "Exp", "Sigmoid"], "relu.onnx")
    a = graphmem.analyze(path)
    assert a.activations.peak_bytes == 2 * KIB4
    assert a.activations.peak_node == "Exp_2"
    assert a.activations.no_reuse_bytes == 4 * KIB4
    assert a.activations.lower_bound_bytes == 2 * KIB4
    assert measured_peak(path, {}) == a.activations.peak_bytes


def test_freed_buffer_is_reused_by_same_shape(tmp_path: Path) -> None:
    # Exp_0: t0 fresh                          4096
    # Exp_1: t1 fresh; t0 freed after          8192 <- peak
    # Exp_2: t2 reuses t0's buffer (same key)  8192 (no request); t1 freed after
    # Exp_3: Y output, own buffer              4096 + 4096 = 8192
    path = chain(tmp_path, ["Exp", "Exp", "Exp", "Exp"], "reuse.onnx")
    a = graphmem.analyze(path)
    assert a.activations.peak_bytes == 2 * KIB4
    assert a.activations.no_reuse_bytes == 4 * KIB4
    assert measured_peak(path, {}) == a.activations.peak_bytes


def test_reshape_is_a_view(tmp_path: Path) -> None:
    # Exp: a [4,256] fresh 4096; Reshape: r aliases a (no request); Exp: Y [1024] output 4096.
    nodes = [
        helper.make_node("Exp", ["X"], ["a"]),
        helper.make_node("Reshape", ["a", "shape"], ["r"]),
        helper.make_node("Exp", ["r"], ["Y"]),
    ]
    m = model(nodes, [tensor("X", [4, 256])], [tensor("Y", [1024])], [init("shape", np.array([1024]))])
    path = save(m, tmp_path / "view.onnx")
    a = graphmem.analyze(path)
    assert a.activations.peak_bytes == 2 * KIB4
    assert a.activations.no_reuse_bytes == 2 * KIB4  # the view is not a buffer
    assert a.weights.params == 1 and a.weights.bytes == 8
    assert measured_peak(path, {}) == a.activations.peak_bytes


def test_symbolic_dims_scale_sizes_not_decisions(tmp_path: Path) -> None:
    # Same chain with a symbolic batch: reuse is decided on the symbolic shape, sized at bind.
    nodes = [helper.make_node("Exp", ["X"], ["a"]), helper.make_node("Exp", ["a"], ["b"])]
    nodes += [helper.make_node("Exp", ["b"], ["c"]), helper.make_node("Exp", ["c"], ["Y"])]
    m = model(nodes, [tensor("X", ["batch", 1024])], [tensor("Y", ["batch", 1024])])
    path = save(m, tmp_path / "sym.onnx")
    for batch in (1, 3):
        a = graphmem.analyze(path, dims={"batch": batch})
        assert a.activations.peak_bytes == 2 * KIB4 * batch
        assert a.io.inputs_bytes == KIB4 * batch
        assert a.total_bytes == a.weights.bytes + a.activations.peak_bytes + a.io.inputs_bytes
        assert measured_peak(path, {"batch": batch}) == a.activations.peak_bytes


def _light() -> list[Path]:
    from conftest import LIGHT

    return sorted(LIGHT.glob("*.onnx"))


def _committed() -> list[Path]:
    from conftest import MODELS

    return sorted(MODELS.glob("*.onnx"))


@pytest.mark.parametrize("path", _light() + _committed(), ids=lambda p: p.stem)
def test_peak_equals_onnxruntime_measurement(path: Path) -> None:
    """Byte-exact against onnxruntime 1.31 (ORT_DISABLE_ALL, CPU, run 1) at two bindings."""
    names = load_model(path).symbolic_dims
    bindings = [{}] if not names else [{n: (b if n == "batch" else 16) for n in names} for b in (1, 3)]
    for dims in bindings:
        a = graphmem.analyze(path, dims=dims)
        assert a.shapes.unresolved == ()
        assert a.activations.lower_bound_bytes <= a.activations.best_arena_bytes <= a.activations.no_reuse_bytes
        assert a.activations.lower_bound_bytes <= a.activations.peak_bytes <= a.activations.no_reuse_bytes
        assert a.activations.peak_bytes == measured_peak(path, dims), dims


def test_static_shapes_use_no_partial_shape_values(tmp_path: Path) -> None:
    # X [batch,64], Y [2,64]. y1 = Exp(Y); y2 = Exp(y1) (y1 freed); e = Expand(ReduceSum(y2),
    # Concat([2], Gather(Shape(X), 1))). At run time e is [2,64] like y1, but onnxruntime's static
    # view knows no value for Gather(Shape(X)) while batch is symbolic, so e's static shape is
    # unknown and it gets a fresh buffer (+512) instead of y1's. Measured the same way.
    nodes = [
        helper.make_node("Exp", ["Y"], ["y1"]),
        helper.make_node("Exp", ["y1"], ["y2"]),
        helper.make_node("Shape", ["X"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["g"], axis=0),
        helper.make_node("Unsqueeze", ["g", "ax0"], ["u"]),
        helper.make_node("Concat", ["two", "u"], ["c"], axis=0),
        helper.make_node("ReduceSum", ["y2"], ["rs"], keepdims=0),
        helper.make_node("Expand", ["rs", "c"], ["e"]),
        helper.make_node("Add", ["e", "y2"], ["Z"]),
    ]
    inits = [init("one", np.array(1)), init("ax0", np.array([0])), init("two", np.array([2]))]
    m = model(nodes, [tensor("X", ["batch", 64]), tensor("Y", [2, 64])], [tensor("Z", [2, 64])], inits)
    path = save(m, tmp_path / "partial.onnx")
    a = graphmem.analyze(path, dims={"batch": 3})
    timeline = dict(a.activations.timeline)
    # before Expand: y2 512 + rs 4 + s 16 = 532 held (g/u 8 B released after Concat)
    assert timeline["Expand_7"] == 532 + 512
    assert a.activations.peak_bytes == measured_peak(path, {"batch": 3}) == 1536


@pytest.mark.parametrize(
    "casts, src",
    [
        (("DOUBLE", "FLOAT"), "FLOAT"),  # float->double->float: both removed by onnxruntime
        (("FLOAT16", "FLOAT"), "FLOAT"),  # lossy round trip: kept
        (("INT32", "FLOAT"), "FLOAT"),  # float -> int: never removed
        (("INT32", "INT64"), "INT64"),  # int64->int32->int64 loses range: kept
        (("DOUBLE", "FLOAT", "DOUBLE"), "FLOAT"),  # first pair removed, last kept
        (("DOUBLE", "DOUBLE"), "FLOAT"),  # the first Cast removed, the child kept
    ],
)
def test_duplicate_casts_removed_as_onnxruntime_does(tmp_path: Path, casts, src) -> None:  # type: ignore[no-untyped-def]
    from onnx import TensorProto

    src_type = getattr(TensorProto, src)
    nodes, prev = [], "X"
    if src_type == TensorProto.FLOAT:
        nodes.append(helper.make_node("Exp", ["X"], ["x0"]))
        prev = "x0"
    for k, name in enumerate(casts):
        nodes.append(helper.make_node("Cast", [prev], [f"c{k}"], to=getattr(TensorProto, name)))
        prev = f"c{k}"
    nodes.append(helper.make_node("Identity", [prev], ["i"]))
    nodes.append(helper.make_node("Cast", ["i"], ["Y"], to=TensorProto.FLOAT))
    m = model(nodes, [tensor("X", [1024], src_type)], [tensor("Y", [1024])])
    path = save(m, tmp_path / "casts.onnx")
    a = graphmem.analyze(path)
    assert a.activations.peak_bytes == measured_peak(path, {})


def test_graph_of_only_constants(tmp_path: Path) -> None:
    # The Constant node becomes a weight: no op runs, no activation is requested.
    node = helper.make_node("Constant", [], ["Y"], value=init("v", np.ones(4, np.float32)))
    path = save(model([node], [], [tensor("Y", [4])]), tmp_path / "const.onnx")
    a = graphmem.analyze(path)
    assert a.activations.peak_bytes == 0 and a.weights.params == 4 and a.model.nodes == 0


def test_ops_onnxruntime_runs_as_function_bodies(tmp_path: Path) -> None:
    # HardSwish has no CPU kernel in onnxruntime 1.31: it runs as HardSigmoid then Mul, so a
    # [1,1024] input needs the HardSigmoid output (4096) beside the result (4096).
    nodes = [helper.make_node("Exp", ["X"], ["a"]), helper.make_node("HardSwish", ["a"], ["Y"])]
    path = save(model(nodes, [tensor("X", [1, 1024])], [tensor("Y", [1, 1024])]), tmp_path / "hs.onnx")
    a = graphmem.analyze(path)
    assert "HardSwish inlined" in a.activations.runtime
    assert a.model.nodes == 2
    assert a.activations.peak_bytes == measured_peak(path, {}) == 3 * KIB4
