"""Ops onnxruntime runs as function bodies, expanded statically (graphmem/ort/functions.py): the
names, node indices, initializers and order onnxruntime builds, checked against sessions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from builders import ROOT, init, model, save, tensor
from onnx import TensorProto, helper

import graphmem
from graphmem.analysis.assemble import missing_bodies as _missing_bodies
from graphmem.analysis.stages import static_types as _static_types
from graphmem.model.graph import build_graph
from graphmem.model.loading import load_model
from graphmem.ort.functions import inline_functions
from graphmem.ort.optimized import optimized_model
from graphmem.ort.order import ort_order
from graphmem.verify import measure

KIB4 = 4096  # one float tensor of 1024 elements


def _expanded(path: Path):  # type: ignore[no-untyped-def]
    result = inline_functions(load_model(path), _static_types)
    g = build_graph(result.model)
    return result, [g.node(nid) for nid in ort_order(g)]


def test_two_calls_get_onnxruntime_prefixes_and_indices(tmp_path: Path) -> None:
    # Nodes 0 HardSwish(a), 1 HardSwish(b), 2 Relu. Round 1 inlines node 0 (prefix
    # "_inlfunc_HardSwish_", body nodes 3 HardSigmoid, 4 Mul) then node 1 (prefix taken:
    # "_inlfunc_HardSwish_token_0_", nodes 5, 6); indices 0 and 1 are released.
    nodes = [
        helper.make_node("HardSwish", ["X"], ["h1"], name="a"),
        helper.make_node("HardSwish", ["h1"], ["h2"], name="b"),
        helper.make_node("Relu", ["h2"], ["Y"], name="r"),
    ]
    path = save(model(nodes, [tensor("X", [1, 1024])], [tensor("Y", [1, 1024])], opset=14), tmp_path / "hs.onnx")
    result, ordered = _expanded(path)
    assert result.inlined == ("HardSwish",) and result.missing == ()
    assert result.model.node_ids == (2, 3, 4, 5, 6)
    assert [(n.op_type, list(n.input), list(n.output)) for n in ordered] == [
        ("HardSigmoid", ["X"], ["_inlfunc_HardSwish_HS_X"]),
        ("Mul", ["X", "_inlfunc_HardSwish_HS_X"], ["h1"]),
        ("HardSigmoid", ["h1"], ["_inlfunc_HardSwish_token_0_HS_X"]),
        ("Mul", ["h1", "_inlfunc_HardSwish_token_0_HS_X"], ["h2"]),
        ("Relu", ["h2"], ["Y"]),
    ]
    written = onnx.load(str(optimized_model(path, "none", tmp_path, always=True)))
    assert [(n.op_type, list(n.input), list(n.output)) for n in written.graph.node] == [
        (n.op_type, list(n.input), list(n.output)) for n in ordered
    ]


def test_nested_body_constant_and_default_attribute(tmp_path: Path) -> None:
    # Swish-24's body: Alpha = Constant(@alpha) (alpha defaults to 1.0, added to the call as
    # Graph::Resolve does), AlphaCast = CastLike(Alpha, X), then Mul, Sigmoid, Mul. The Constant
    # becomes the initializer "_inlfunc_Swish_Alpha"; CastLike runs as a function too, so round 2
    # replaces it by its body, a Cast to float, writing the same "_inlfunc_Swish_AlphaCast".
    nodes = [helper.make_node("Swish", ["X"], ["Y"], name="s")]
    m = model(nodes, [tensor("X", [1, 1024])], [tensor("Y", [1, 1024])], opset=24)
    m.ir_version = 11
    path = save(m, tmp_path / "swish.onnx")
    result, ordered = _expanded(path)
    assert result.inlined == ("CastLike", "Swish")
    assert [n.op_type for n in ordered] == ["Cast", "Mul", "Sigmoid", "Mul"]
    assert list(ordered[0].input) == ["_inlfunc_Swish_Alpha"] and list(ordered[0].output) == ["_inlfunc_Swish_AlphaCast"]
    assert result.model.values["_inlfunc_Swish_Alpha"].tolist() == 1.0
    written = onnx.load(str(optimized_model(path, "none", tmp_path, always=True)))
    assert [(n.op_type, list(n.input), list(n.output)) for n in written.graph.node] == [
        (n.op_type, list(n.input), list(n.output)) for n in ordered
    ]
    assert {t.name for t in written.graph.initializer} == {"_inlfunc_Swish_Alpha"}


def test_group_normalization_plans_as_onnxruntime_s_own_graph(tmp_path: Path) -> None:
    # GroupNormalization-18 becomes 25 nodes (Shape/Concat/Reshape arithmetic, two ReduceMeans,
    # the normalization chain) and 5 initializers; the static expansion is planned exactly as
    # the graph onnxruntime writes for it (same figures, same timeline). The measured peak is 16 B
    # lower (4,136): a planner difference on the small int64 shape tensors, not the expansion.
    nodes = [helper.make_node("GroupNormalization", ["X", "s", "b"], ["Y"], name="gn", num_groups=2)]
    inits = [init("s", np.ones(2, np.float32)), init("b", np.zeros(2, np.float32))]
    path = save(model(nodes, [tensor("X", [2, 4, 8, 8])], [tensor("Y", [2, 4, 8, 8])], inits, opset=18), tmp_path / "gn.onnx")
    a = graphmem.analyze(path)
    assert "GroupNormalization inlined" in a.activations.runtime
    assert not a.activations.approximations  # ReduceMean takes no scratch (scripts/probes/probe_scratch_controlflow.py)
    written = optimized_model(path, "none", tmp_path, always=True)
    b = graphmem.analyze(written, execution_order="file")
    assert [h for _, h in a.activations.timeline] == [h for _, h in b.activations.timeline]
    # unnamed nodes are labelled by their node index, as onnxruntime's profiler names them
    # (the written file is renumbered: its first node is Cast_0)
    ours = [label for label, _ in a.activations.timeline]
    assert len(ours) == 25 and ours[0] == "Cast_19" and ours[-1] == "Reshape_25"
    assert a.activations.peak_bytes == b.activations.peak_bytes == 4152


def test_castlike_without_known_target_type_stays_whole_and_says_so(tmp_path: Path) -> None:
    # CastLike's body is built from its target's type (a Cast to that type). Without it (here the
    # types callback knows nothing, as for outputs of control flow graphmem cannot type) the body
    # cannot be built: the node stays whole and the analysis lists it as an approximation.
    nodes = [helper.make_node("Relu", ["T"], ["t"]), helper.make_node("CastLike", ["X", "t"], ["Y"], name="cl")]
    inputs = [tensor("T", [1]), tensor("X", [1024], TensorProto.INT64)]
    path = save(model(nodes, inputs, [tensor("Y", [1024])], opset=15), tmp_path / "cl.onnx")
    result = inline_functions(load_model(path), lambda m: {})
    assert result.missing == ("CastLike",) and result.inlined == ()
    assert [n.op_type for n in result.model.nodes] == ["Relu", "CastLike"]
    (approx,) = _missing_bodies(result.model, result.missing)
    assert (approx.kind, approx.node) == ("unknown_kernel", "cl")
    # with the types graphmem infers, the body is built: a Cast to float
    typed = inline_functions(load_model(path), _static_types)
    assert [n.op_type for n in typed.model.nodes] == ["Relu", "Cast"] and typed.missing == ()


def test_static_peak_imports_no_onnxruntime(tmp_path: Path) -> None:
    # HardSwish, Mish, GroupNormalization and CastLike all run as function bodies in
    # onnxruntime 1.31; graphmem expands them itself, so no session (no import) is needed.
    nodes = [
        helper.make_node("HardSwish", ["X"], ["a"]),
        helper.make_node("Mish", ["a"], ["b"]),
        helper.make_node("GroupNormalization", ["b", "s", "bias"], ["c"], num_groups=2),
        helper.make_node("CastLike", ["c", "X"], ["Y"]),
    ]
    inits = [init("s", np.ones(2, np.float32)), init("bias", np.zeros(2, np.float32))]
    path = save(model(nodes, [tensor("X", [1, 4, 16])], [tensor("Y", [1, 4, 16])], inits, opset=18), tmp_path / "f.onnx")
    code = (
        "import sys, graphmem\n"
        f"a = graphmem.analyze({str(path)!r})\n"
        "assert 'inlined' in a.activations.runtime, a.activations.runtime\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'onnxruntime'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"


def _timeline(path: Path, x: np.ndarray) -> tuple[list[int], list[int]]:
    a = graphmem.analyze(path)
    run = measure(str(path), {"X": x}, runs=1).runs[0]
    measured, held = [], 0
    for node in run.nodes:
        held += node.requested_delta
        measured.append(held)
    return [h for _, h in a.activations.timeline], measured


def test_bitcast_and_tensorscatter_work_in_place(tmp_path: Path) -> None:
    # Relu a (fresh 4 KiB) -> BitCast b: a's last use, same size, MayInplace -> no request ->
    # BitCast Y: a graph output, its own 4 KiB. TensorScatter: the same with the cache input.
    x = np.ones((1, 1024), np.float32)
    bitcast = [
        helper.make_node("Relu", ["X"], ["a"]),
        helper.make_node("BitCast", ["a"], ["b"], to=TensorProto.INT32),
        helper.make_node("BitCast", ["b"], ["Y"], to=TensorProto.FLOAT),
    ]
    m = model(bitcast, [tensor("X", [1, 1024])], [tensor("Y", [1, 1024])], opset=26)
    m.ir_version = 11
    ours, theirs = _timeline(save(m, tmp_path / "bc.onnx"), x)
    assert ours == theirs == [KIB4, KIB4, 2 * KIB4]
    scatter = [
        helper.make_node("Relu", ["X"], ["a"]),
        helper.make_node("TensorScatter", ["a", "u"], ["c"], axis=-1),
        helper.make_node("Relu", ["c"], ["Y"]),
    ]
    m = model(scatter, [tensor("X", [1, 1024])], [tensor("Y", [1, 1024])], [init("u", np.ones((1, 4), np.float32))], opset=24)
    m.ir_version = 11
    ours, theirs = _timeline(save(m, tmp_path / "ts.onnx"), x)
    assert ours == theirs == [KIB4, KIB4, 2 * KIB4]
