"""The front stages (graphmem/analysis/stages.py), each on its own: tiny inline graphs, the
result of one stage given the previous stage's, hand-computed figures in the comments."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from builders import init, model, tensor
from onnx import TensorProto, helper

from graphmem.analysis.request import AnalysisRequest, Bindings
from graphmem.analysis.stages import (
    Typed, cpu_kernels, expand_for_kernels, expand_functions, load, session_graph, types_and_shapes,
)
from graphmem.errors import (
    InvalidModelError, KernelRefusalError, ModelLoadError, TensorSizeError, UnboundDimError, UnsupportedOpError,
)
from graphmem.model.loading import Model, model_from_proto

F16 = TensorProto.FLOAT16


def _request(**dims: int) -> AnalysisRequest:
    return AnalysisRequest(bindings=Bindings.of(dims=dims))


def _hardswish() -> Model:
    """y = HardSwish(x), x [batch, 256]: onnxruntime has no HardSwish-14 CPU kernel (its body runs)."""
    nodes = [helper.make_node("HardSwish", ["x"], ["y"], name="h")]
    return model_from_proto(model(nodes, [tensor("x", ["batch", 256])], [tensor("y", ["batch", 256])], opset=14))


def _relu16() -> Model:
    """y = Relu(x) in float16, x [2, 256]: no float16 Relu CPU kernel, so it runs behind Casts."""
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    return model_from_proto(model(nodes, [tensor("x", [2, 256], F16)], [tensor("y", [2, 256], F16)]))


def _typed(m: Model, request: AnalysisRequest) -> Typed:
    loaded = load(m, request)
    return types_and_shapes(expand_functions(loaded.model, request).model, loaded.inputs, request)


def test_load_resolves_the_bindings_and_counts_the_file_nodes() -> None:
    loaded = load(_hardswish(), _request(batch=2))
    assert (loaded.inputs.dims, loaded.inputs.shapes, loaded.file_nodes) == ({"batch": 2}, {"x": (2, 256)}, 1)
    with pytest.raises(UnboundDimError, match="--dim batch=N"):
        load(_hardswish(), AnalysisRequest())


def test_load_refuses_what_onnxruntime_refuses_to_load() -> None:
    # a node of ai.onnx.preview.training, a domain onnxruntime 1.31 registers no op of
    nodes = [helper.make_node("Momentum", ["r", "t", "x", "g", "v"], ["x2", "v2"], domain="ai.onnx.preview.training",
                              alpha=0.9, beta=0.1, mode="standard", norm_coefficient=0.0)]
    proto = model(nodes, [tensor(n, [4]) for n in "rtxgv"], [tensor("x2", [4]), tensor("v2", [4])])
    proto.opset_import.append(helper.make_opsetid("ai.onnx.preview.training", 1))
    with pytest.raises(InvalidModelError, match="none of whose ops onnxruntime 1.31 registers"):
        load(model_from_proto(proto), AnalysisRequest())


def test_expand_functions_in_onnxruntime_order_only() -> None:
    # onnxruntime runs HardSwish as its body: HardSigmoid then Mul; a graph onnxruntime wrote
    # (file order) is expanded already and stays as it is
    ort = expand_functions(_hardswish(), _request(batch=2))
    assert (ort.inlined, [n.op_type for n in ort.model.nodes]) == (("HardSwish",), ["HardSigmoid", "Mul"])
    written = expand_functions(_hardswish(), AnalysisRequest(bindings=Bindings.of(dims={"batch": 2}), execution_order="file"))
    assert (written.inlined, [n.op_type for n in written.model.nodes]) == ((), ["HardSwish"])


def test_expand_refuses_an_opset_version_without_a_kernel_when_type_rules_are_off() -> None:
    # PRelu-6: the CPU provider registers PRelu from 7 (the training estimate refuses it too)
    nodes = [helper.make_node("PRelu", ["x", "s"], ["y"])]
    m = model_from_proto(model(nodes, [tensor("x", [4])], [tensor("y", [4])], [init("s", np.ones(4, np.float32))], opset=6))
    with pytest.raises(UnsupportedOpError, match="no PRelu kernel for opset version 6"):
        expand_functions(m, AnalysisRequest(kernel_rules=False))


def test_types_and_shapes_gives_both_views() -> None:
    # the run's view has the binding (2, 256); onnxruntime's static view keeps the symbol
    typed = _typed(_hardswish(), _request(batch=2))
    assert typed.runtime.types["y"].shape == (2, 256)
    assert typed.static.types["y"].shape == ("batch", 256)
    assert len(typed.order) == 2


def test_types_and_shapes_applies_the_what_if_to_types_and_weights() -> None:
    # W [256] float: 1,024 B, as float16 512 B; every floating tensor re-typed
    nodes = [helper.make_node("Mul", ["x", "W"], ["y"])]
    m = model_from_proto(model(nodes, [tensor("x", [2, 256])], [tensor("y", [2, 256])], [init("W", np.ones(256, np.float32))]))
    typed = _typed(m, AnalysisRequest(as_dtype="float16"))
    assert {typed.runtime.types[n].dtype for n in ("x", "W", "y")} == {F16}
    assert typed.model.weights["W"].nbytes == 512 and m.weights["W"].nbytes == 1_024


def test_types_and_shapes_refuses_a_value_info_contradicting_inference() -> None:
    # Shape writes int64; the file declares s float: onnxruntime refuses the file
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT)]
    m = model_from_proto(model(nodes, [tensor("x", [2, 3])], [tensor("y", [2])], value_info=[tensor("s", [2])]))
    loaded = load(m, AnalysisRequest())
    with pytest.raises(ModelLoadError, match="writes 's' as int64 but the file declares it float"):
        types_and_shapes(loaded.model, loaded.inputs, AnalysisRequest())
    unchecked = types_and_shapes(loaded.model, loaded.inputs, AnalysisRequest(), check=False)
    assert unchecked.static.type_conflicts == (("Shape", "s", TensorProto.INT64, TensorProto.FLOAT),)


def test_types_and_shapes_refuses_a_binding_a_kernel_refuses(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # y = Conv(x [1, 1, h], W [1, 1, 3]): at h=2 onnx infers y [1, 1, 0] ((2 - 3) / 1 + 1 = 0),
    # onnxruntime's Conv refuses it at run time; h=3 gives y [1, 1, 1] and runs
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="c")]
    proto = model(nodes, [tensor("x", [1, 1, "h"])], [tensor("y", None)], [init("w", np.ones((1, 1, 3), np.float32))])
    m = model_from_proto(proto)
    loaded = load(m, _request(h=2))
    with pytest.raises(KernelRefusalError, match=r"node 'c' \(Conv\) fails in onnxruntime at h=2: .*; it runs for h ≥ 3"):
        types_and_shapes(loaded.model, loaded.inputs, _request(h=2))
    # re-typing a graph already checked does not check again
    assert types_and_shapes(loaded.model, loaded.inputs, _request(h=2), check=False).runtime.types["y"].shape == (1, 1, 0)
    ok = load(m, _request(h=3))
    assert types_and_shapes(ok.model, ok.inputs, _request(h=3)).runtime.types["y"].shape == (1, 1, 1)
    # the real session agrees on both sides of the boundary
    path = tmp_path / "conv.onnx"
    path.write_bytes(proto.SerializeToString())
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert session.run(None, {"x": np.ones((1, 1, 3), np.float32)})[0].tolist() == [[[3.0]]]
    with pytest.raises(Exception, match="Invalid input shape"):
        session.run(None, {"x": np.ones((1, 1, 2), np.float32)})


def test_cpu_kernels_casts_a_float16_node_without_a_kernel() -> None:
    # one Cast to float before Relu, one back to float16 after it
    request = AnalysisRequest()
    kernels = cpu_kernels(_typed(_relu16(), request), request)
    assert kernels.cpu is not None
    assert (kernels.cpu.insertion.casts, kernels.cpu.insertion.fallback, kernels.cpu.missing) == (2, ("r",), ())
    assert kernels.inline == frozenset()
    for other in (AnalysisRequest(provider="cuda"), AnalysisRequest(kernel_rules=False)):
        assert cpu_kernels(_typed(_relu16(), other), other).cpu is None  # no CPU type rules there


def test_cpu_kernels_names_float16_nodes_run_as_their_body() -> None:
    # float16 Softmax-13 has no CPU kernel; onnxruntime runs its function body (INLINED_WITHOUT_KERNEL)
    nodes = [helper.make_node("Softmax", ["x"], ["y"], name="sm")]
    m = model_from_proto(model(nodes, [tensor("x", [2, 8], F16)], [tensor("y", [2, 8], F16)]))
    request = AnalysisRequest()
    typed = _typed(m, request)
    kernels = cpu_kernels(typed, request)
    assert kernels.inline == frozenset({("y",)})
    expanded = expand_for_kernels(expand_functions(m, request), typed, kernels)
    assert expanded.inlined == ("Softmax",) and "Softmax" not in [n.op_type for n in expanded.model.nodes]


def test_session_graph_runs_the_casts() -> None:
    # Cast x -> float [2,256] (2,048 B), Relu, Cast back to y: three nodes, the note says why
    request = AnalysisRequest()
    typed = _typed(_relu16(), request)
    session = session_graph(typed, cpu_kernels(typed, request), request)
    assert sorted(n.op_type for n in session.model.nodes) == ["Cast", "Cast", "Relu"]
    assert [session.graph.node(n).op_type for n in session.order] == ["Cast", "Relu", "Cast"]
    assert session.type_note == "; 1 float16 nodes run in float32 behind 2 inserted Casts (no float16 CPU kernel)"
    assert session.provider.graph is session.graph and session.provider.devices is None  # CPU: one device


def test_session_graph_partitions_for_cuda() -> None:
    request = AnalysisRequest(provider="cuda")
    typed = _typed(_relu16(), request)
    session = session_graph(typed, cpu_kernels(typed, request), request)
    assert session.provider.devices is not None and session.provider.devices.main == "cuda"


def test_session_graph_refuses_absurd_sizes() -> None:
    # batch = 2**40 of 2**30 floats: 2**72 bytes, over the 2**60 limit
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    m = model_from_proto(model(nodes, [tensor("x", ["batch", 1 << 30])], [tensor("y", ["batch", 1 << 30])]))
    request = _request(batch=1 << 40)
    typed = _typed(m, request)
    with pytest.raises(TensorSizeError, match="more than 2\\*\\*60"):
        session_graph(typed, cpu_kernels(typed, request), request)
