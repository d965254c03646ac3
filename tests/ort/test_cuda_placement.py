"""The CUDA session emulation (graphmem.ort.cuda.placement, ort_cuda_rules, session): partition,
copies, run order and plan on hand-built graphs whose answers are worked out by hand, and its
structural invariants on every shipped model. (No GPU here: these check the emulation against
onnxruntime's rules as read in its source, not against a measurement.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import graphmem
from graphmem.ort.cuda.placement import place_cuda, placement_errors, run_order, session_problems
from graphmem.model.graph import build_graph
from graphmem.model.loading import load_model
from graphmem.ort.order import ort_order
from graphmem.shapes.infer import ORT_STATIC
from graphmem.ort.inference import infer_types

from builders import COMMITTED_MODELS, IR_VERSION

MODELS = COMMITTED_MODELS
F = TensorProto.FLOAT


def _save(tmp_path: Path, nodes, inputs, outputs, inits=(), opset: int = 17, name: str = "m.onnx") -> Path:  # type: ignore[no-untyped-def]
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)
    path = tmp_path / name
    onnx.save(model, path)
    return path


def _place(path: Path):  # type: ignore[no-untyped-def]
    model = load_model(path)
    g = build_graph(model)
    order = ort_order(g)
    placed = place_cuda(model, g, order, infer_types(g, order, view=ORT_STATIC).types)
    assert placement_errors(placed) == []
    by_name = {n.name: nid for nid, n in zip(placed.model.node_ids, placed.model.nodes)}
    return placed, {name: placed.node_device[nid] for name, nid in by_name.items() if not name.startswith("Memcpy")}


def _shape_chain(tmp_path: Path) -> Path:
    """relu(X) reshaped to [N, -1] with N from its own Shape: the transformer-export pattern."""
    nodes = [
        helper.make_node("Relu", ["X"], ["r"], name="relu"),
        helper.make_node("Shape", ["r"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["r", "target"], ["Y"], name="reshape"),
    ]
    inits = [
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array([0], np.int64), "axes"),
        numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
    ]
    x = helper.make_tensor_value_info("X", F, ["batch", 4, 8])
    y = helper.make_tensor_value_info("Y", F, None)
    return _save(tmp_path, nodes, [x], [y], inits)


def test_shape_arithmetic_runs_on_cpu_and_the_reshape_on_cuda(tmp_path: Path) -> None:
    placed, device = _place(_shape_chain(tmp_path))
    assert device == {
        "relu": "cuda", "shape": "cuda", "gather": "cpu", "unsqueeze": "cpu", "concat": "cpu", "reshape": "cuda",
    }
    assert placed.cpu_preferred == 3 and placed.no_kernel == {}
    assert len(placed.model.nodes) == 6  # Reshape reads its shape from CPU memory: no copy
    assert placed.copied_inputs == ("X",)
    assert placed.value_device["s"] == "cuda_pinned"  # Shape writes pinned host memory
    assert placed.value_device["target"] == "cpu"
    assert placed.value_device["Y"] == "cuda"


def _celu_chain(tmp_path: Path) -> Path:
    """relu → celu → sigmoid on X [2, 8] float (64 B tensors); Celu has no CUDA kernel."""
    nodes = [
        helper.make_node("Relu", ["X"], ["a"], name="relu"),
        helper.make_node("Celu", ["a"], ["b"], name="celu"),
        helper.make_node("Sigmoid", ["b"], ["Y"], name="sigmoid"),
    ]
    x = helper.make_tensor_value_info("X", F, [2, 8])
    y = helper.make_tensor_value_info("Y", F, [2, 8])
    return _save(tmp_path, nodes, [x], [y])


def test_an_op_without_cuda_kernel_gets_copies_both_ways(tmp_path: Path) -> None:
    """Celu has no CUDA kernel: the device value goes to the host and Celu's result back."""
    placed, device = _place(_celu_chain(tmp_path))
    assert device["relu"] == "cuda" and device["celu"] == "cpu" and device["sigmoid"] == "cuda"
    assert placed.no_kernel == {"Celu": 1}
    copies = {n.op_type: (tuple(n.input), tuple(n.output)) for n in placed.model.nodes[3:]}
    # ids after the file's nodes: FromHost copies first (by name), then ToHost ones
    assert [n.op_type for n in placed.model.nodes[3:]] == ["MemcpyFromHost", "MemcpyToHost"]
    assert copies["MemcpyToHost"] == (("a_CUDAExecutionProvider",), ("a",))  # Relu now writes the device copy
    assert copies["MemcpyFromHost"] == (("b",), ("b_CUDAExecutionProvider",))
    assert placed.value_device["a"] == "cuda_pinned" and placed.value_device["b"] == "cpu"
    assert placed.renamed == {"b_CUDAExecutionProvider": "b", "a_CUDAExecutionProvider": "a"}


def test_half_precision_inputs_and_large_initializers_keep_nodes_on_cuda(tmp_path: Path) -> None:
    """GetCpuPreferredNodes refuses 16-bit float inputs and initializers over 100 elements."""
    nodes = [
        helper.make_node("Shape", ["X"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "big"], ["picked"], name="gather_big", axis=0),
        helper.make_node("Cast", ["s"], ["h"], name="to_half", to=TensorProto.FLOAT16),
        helper.make_node("Mul", ["h", "two"], ["Y"], name="mul_half"),
    ]
    inits = [
        numpy_helper.from_array(np.zeros(101, np.int64), "big"),
        numpy_helper.from_array(np.array([2], np.float16), "two"),
    ]
    x = helper.make_tensor_value_info("X", F, [2, 8])
    outs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT16, [2]), helper.make_tensor_value_info("picked", TensorProto.INT64, [101])]
    placed, device = _place(_save(tmp_path, nodes, [x], outs, inits))
    assert device == {"shape": "cuda", "gather_big": "cuda", "to_half": "cpu", "mul_half": "cuda"}
    copied = sorted(n.input[0] for n in placed.model.nodes if n.op_type == "MemcpyFromHost")
    assert copied == ["h", "s"]  # the Shape output (pinned) and the CPU Cast's result, to the device
    assert placed.copied_inputs == ("X",)  # Shape's CUDA kernel declares its input device memory


def test_a_type_without_cuda_kernel_runs_on_cpu(tmp_path: Path) -> None:
    """Where on CUDA has no bool kernel (docs/OperatorKernels.md); the float one exists."""
    b = TensorProto.BOOL
    nodes = [
        helper.make_node("Where", ["C", "P", "Q"], ["Y"], name="where_bool"),
        helper.make_node("Where", ["C", "A", "B"], ["Z"], name="where_float"),
    ]
    ins = [helper.make_tensor_value_info(n, t, [4]) for n, t in (("C", b), ("P", b), ("Q", b), ("A", F), ("B", F))]
    outs = [helper.make_tensor_value_info("Y", b, [4]), helper.make_tensor_value_info("Z", F, [4])]
    placed, device = _place(_save(tmp_path, nodes, ins, outs))
    assert device == {"where_bool": "cpu", "where_float": "cuda"}
    assert placed.no_kernel == {"Where": 1}
    # C is read on both sides: one MemcpyFromHost for it, and A, B are copied by the session
    assert [n.input[0] for n in placed.model.nodes if n.op_type == "MemcpyFromHost"] == ["C"]
    assert sorted(placed.copied_inputs) == ["A", "B"]


def test_two_streams_run_as_the_sequential_executor_interleaves_them(tmp_path: Path) -> None:
    """Stream 0 (CUDA: relu first) runs until reshape waits at the barrier for concat; the CPU
    stream then runs gather, unsqueeze, concat, whose trigger resumes reshape inline."""
    path = _shape_chain(tmp_path)
    placed, _ = _place(path)
    g = build_graph(placed.model)
    ran = run_order(g, ort_order(g), placed.node_device)
    names = [(g.node(nid).name, stream) for nid, stream in ran]
    assert names == [
        ("relu", 0), ("shape", 0), ("gather", 1), ("unsqueeze", 1), ("concat", 1), ("reshape", 0),
    ]


def test_cuda_plan_no_softmax_in_place(tmp_path: Path) -> None:
    """X[1,256] -> Softmax -> Softmax -> ReduceMean [1,1]. On CPU the second Softmax works in
    place (1,024 B held; the peak is its buffer and the mean's 4 B), on CUDA it may not
    (1,024 + 1,024 B); X is copied to the device (1,024 B, before the first kernel, so not in
    the peak)."""
    nodes = [
        helper.make_node("Softmax", ["X"], ["a"], name="softmax1"),
        helper.make_node("Softmax", ["a"], ["b"], name="softmax2"),
        helper.make_node("ReduceMean", ["b"], ["Y"], name="mean", axes=[1], keepdims=1),
    ]
    x = helper.make_tensor_value_info("X", F, [1, 256])
    y = helper.make_tensor_value_info("Y", F, [1, 1])
    path = _save(tmp_path, nodes, [x], [y], opset=13)
    cpu = graphmem.analyze(path)
    cuda = graphmem.analyze(path, provider="cuda")
    assert (cpu.activations.peak_bytes, cpu.activations.peak_node) == (1028, "mean")
    assert (cuda.activations.peak_bytes, cuda.activations.peak_node) == (2048, "softmax2")
    assert cuda.activations.timeline == (("softmax1", 1024), ("softmax2", 2048), ("mean", 1028))
    assert cuda.placement is not None
    assert cuda.placement.inputs_on_device_bytes == 1024
    assert (cuda.placement.cuda_nodes, cuda.placement.cpu_nodes, cuda.placement.memcpy_nodes) == (3, 0, 0)
    assert cuda.activations.in_use_peak_bytes is None  # CUDA workspaces: not modelled
    assert cuda.total_bytes == 2048 + 1024


def test_cpu_arena_and_pinned_memory_are_reported_apart(tmp_path: Path) -> None:
    """In the shape chain (X [2,4,8] float): pinned holds Shape's 3 int64 (24 B); the CPU arena
    holds gather's scalar (8 B), unsqueeze's view of it and concat's 2 int64 (16 B): 24 B; the
    CUDA arena holds relu's 256 B and Y's own 256 B (a graph output is never an alias)."""
    path = _shape_chain(tmp_path)
    a = graphmem.analyze(path, dims={"batch": 2}, provider="cuda")
    assert a.placement is not None
    assert (a.placement.pinned_peak_bytes, a.placement.cpu_peak_bytes) == (24, 24)
    assert (a.activations.peak_bytes, a.activations.peak_node) == (512, "reshape")


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_every_shipped_model_places_consistently(path: Path) -> None:
    """No kernel reads memory on the wrong side, the run order is a topological order of the
    session graph, and the bounds hold for the CUDA arena."""
    model = load_model(path)
    dims = {d: (2 if d == "batch" else 16) for d in model.symbolic_dims}
    a = graphmem.analyze(path, dims=dims, provider="cuda")
    act = a.activations
    assert act.lower_bound_bytes <= act.peak_bytes
    assert act.lower_bound_bytes <= act.best_arena_bytes <= act.no_reuse_bytes
    assert session_problems(model) == []


@pytest.mark.parametrize(
    ("op", "version", "expected"),
    [
        ("Reshape", 14, (((0, 0),), ())),  # tensor/reshape.cc .Alias(0, 0)
        ("Dropout", 10, (((0, 0),), ())),  # IdentityOp on CUDA up to 11
        ("Dropout", 13, ((), ())),  # nn/dropout.cc: a real kernel
        ("Relu", 14, ((), ((0, 0),))),  # activation/activations.cc .MayInplace(0, 0)
        ("ScatterND", 18, ((), ((0, 0),))),
        ("ScatterElements", 18, ((), ())),  # in place on CPU, not on CUDA
        ("Clip", 13, ((), ())),  # likewise Cast and Softmax
        ("Cast", 19, ((), ())),
        ("Softmax", 13, ((), ())),
    ],
)
def test_cuda_kernel_sharing(op: str, version: int, expected) -> None:  # type: ignore[no-untyped-def]
    from graphmem.ort.cuda.rules import cuda_sharing

    assert cuda_sharing("", op, version) == expected


@pytest.mark.parametrize(
    ("op", "version", "dtypes", "has"),
    [
        ("MatMul", 13, (TensorProto.FLOAT, TensorProto.FLOAT), True),
        ("MatMul", 13, (TensorProto.INT64, TensorProto.INT64), False),  # float kernels only
        ("Where", 16, (TensorProto.BOOL, TensorProto.INT64, TensorProto.INT64), True),
        ("ReduceSum", 13, (TensorProto.INT8,), False),
        ("TopK", 11, (TensorProto.BFLOAT16,), False),
        ("Add", 13, (TensorProto.INT8, TensorProto.INT8), False),  # small ints from 14 only
        ("Add", 14, (TensorProto.INT8, TensorProto.INT8), True),
        ("Celu", 12, (TensorProto.FLOAT,), False),  # no CUDA kernel at all
        ("Gelu", 20, (TensorProto.FLOAT,), True),
    ],
)
def test_cuda_kernel_registry(op: str, version: int, dtypes: tuple[int, ...], has: bool) -> None:
    from graphmem.ort.cuda.rules import has_kernel

    assert has_kernel("", op, version, dtypes) is has


def test_cuda_timeline_lists_the_copies_in_run_order(tmp_path: Path) -> None:
    """relu (CUDA) → celu (CPU) → sigmoid (CUDA): the session runs relu, copies its result to the
    host, celu, copies back, sigmoid — the steps verify matches against the profile's kernels."""
    a = graphmem.analyze(_celu_chain(tmp_path), provider="cuda")
    assert a.activations.step_ops == ("Relu", "MemcpyToHost", "Celu", "MemcpyFromHost", "Sigmoid")
    # CUDA arena (64 B tensors): the copy back to the device is planned into relu's buffer (dead
    # after the copy to host, same shape), so that buffer is held from relu to sigmoid; the host
    # copy is pinned, celu's output CPU; sigmoid's graph output adds its own 64
    assert [held for _, held in a.activations.timeline] == [64, 64, 64, 64, 128]
    assert a.placement is not None and (a.placement.cpu_peak_bytes, a.placement.pinned_peak_bytes) == (64, 64)


def _fp16_model(tmp_path: Path, ops: list[str], name: str) -> Path:
    """A chain of single-input ops on X [2, 8] float16 (32 B; 64 B once cast to float)."""
    h = TensorProto.FLOAT16
    names = ["X", *"abcdefg"[: len(ops) - 1], "Y"]
    nodes = [helper.make_node(op, [names[k]], [names[k + 1]], name=f"{op.lower()}{k}") for k, op in enumerate(ops)]
    x = helper.make_tensor_value_info("X", h, [2, 8])
    y = helper.make_tensor_value_info("Y", h, [2, 8])
    return _save(tmp_path, nodes, [x], [y], name=name)


def test_fp16_node_without_any_kernel_runs_in_float32_on_cpu_behind_casts(tmp_path: Path) -> None:
    """relu0 (CUDA) -> hardmax1 -> hardmax2 (no CUDA kernel, no float16 CPU kernel) -> sigmoid3
    (CUDA), all float16 [2, 8]. InsertCastTransformer (after partitioning, before the copies):
    Cast4 a->IPFC_a; hardmax1 writes IPFC_b, Cast5 IPFC_b->b; Cast6 b->IPFC_b_token_1; hardmax2
    writes IPFC_c, Cast7 IPFC_c->c; the remover drops the Cast5/Cast6 pair (hardmax2 reads IPFC_b).
    Copies: MemcpyFromHost8 c -> device, MemcpyToHost9 a -> pinned host.
    Run: relu0, Memcpy9, Cast4, hardmax1, hardmax2, Cast7, Memcpy8, sigmoid3.
    CPU arena: Cast4 +64 (IPFC_a) = 64; hardmax1 +64 (IPFC_b) = 128, then -64 (IPFC_a); hardmax2
    reuses IPFC_a's freed buffer for IPFC_c (128), then -64; Cast7 +32 (c) = 96: peak 128 (it was
    64, float16 b and c, before the Casts were emulated). Pinned: a, 32. CUDA arena: relu0's 32;
    Memcpy8's 32 and sigmoid3's graph output 32: peak 64 at sigmoid3."""
    path = _fp16_model(tmp_path, ["Relu", "Hardmax", "Hardmax", "Sigmoid"], "hm.onnx")
    model = load_model(path)
    g = build_graph(model)
    order = ort_order(g)
    placed = place_cuda(model, g, order, infer_types(g, order, view=ORT_STATIC).types)
    assert placement_errors(placed) == []
    rows = [(nid, placed.node_device[nid], n.op_type, tuple(n.input), tuple(n.output))
            for nid, n in zip(placed.model.node_ids, placed.model.nodes)]
    p = "InsertedPrecisionFreeCast_"
    assert rows == [
        (0, "cuda", "Relu", ("X",), ("a_CUDAExecutionProvider",)),
        (1, "cpu", "Hardmax", (p + "a",), (p + "b",)),
        (2, "cpu", "Hardmax", (p + "b",), (p + "c",)),
        (3, "cuda", "Sigmoid", ("c_CUDAExecutionProvider",), ("Y",)),
        (4, "cpu", "Cast", ("a",), (p + "a",)),
        (7, "cpu", "Cast", (p + "c",), ("c",)),
        (8, "cuda", "MemcpyFromHost", ("c",), ("c_CUDAExecutionProvider",)),
        (9, "cuda", "MemcpyToHost", ("a_CUDAExecutionProvider",), ("a",)),
    ]
    assert placed.static is not None and placed.static[p + "a"].dtype == TensorProto.FLOAT
    assert (placed.value_device[p + "a"], placed.value_device["c"], placed.value_device["a"]) == (
        "cpu", "cpu", "cuda_pinned")
    a = graphmem.analyze(path, provider="cuda")
    assert a.placement is not None
    assert (a.placement.fp32_nodes, a.placement.cast_nodes, a.placement.cpu_nodes) == (2, 2, 4)
    assert (a.placement.cpu_peak_bytes, a.placement.pinned_peak_bytes) == (128, 32)
    assert (a.activations.peak_bytes, a.activations.peak_node) == (64, "sigmoid3")
    assert [label for label, _ in a.activations.timeline] == [
        "relu0", "Memcpy_9", p + "a", "hardmax1", "hardmax2", p + "c", "Memcpy_8", "sigmoid3"]


def test_a_cuda_node_between_fp16_fallbacks_is_not_forced_to_float32(tmp_path: Path) -> None:
    """hardmax0 -> identity1 -> hardmax2 in float16. On the CPU provider Identity is an isolated
    float16 node (ForceSingleNodeCPUFloat16ToFloat32): it runs in float32 too, 2 Casts remain.
    In a CUDA session Identity is on CUDA (IsIsolatedFp16NodeOnCpu asks for the CPU provider), so
    each Hardmax keeps its own pair: 4 Casts, a copy to the device and one back.
    CPU arena (CUDA session), buffers held until their last sharer dies: IPFC_X (64, reused by
    IPFC_Y) from Cast(X), IPFC_a (64, reused by IPFC_b) from hardmax0, a (32) at Cast(a): 160."""
    path = _fp16_model(tmp_path, ["Hardmax", "Identity", "Hardmax"], "id.onnx")
    cpu = graphmem.analyze(path)
    assert [cpu.graph.node(n).op_type for n in cpu.order] == ["Cast", "Hardmax", "Identity", "Hardmax", "Cast"]
    cuda = graphmem.analyze(path, provider="cuda")
    p = cuda.placement
    assert p is not None
    assert (p.cuda_nodes, p.fp32_nodes, p.cast_nodes, p.memcpy_nodes) == (1, 2, 4, 2)
    assert (p.cpu_peak_bytes, p.pinned_peak_bytes, cuda.activations.peak_bytes) == (160, 32, 32)


def test_a_node_without_a_cuda_or_a_cpu_kernel_is_refused(tmp_path: Path) -> None:
    """AveragePool at opset 6 (since version 1): onnxruntime registers it from version 7 on both
    providers, so a CUDA session refuses it as a CPU one does ("Could not find an implementation
    for AveragePool(1) node with name 'pool'", measured here with the CUDA provider requested;
    fuzz case 348), in the CPU case's words."""
    from builders import ort_loads

    from graphmem.errors import UnsupportedOpError

    pool = helper.make_node("AveragePool", ["X"], ["Y"], kernel_shape=[2, 2], name="pool")
    path = _save(tmp_path, [pool], [helper.make_tensor_value_info("X", F, [1, 1, 4, 4])],
                 [helper.make_tensor_value_info("Y", F, [1, 1, 3, 3])], opset=6)
    assert not ort_loads(path)
    with pytest.raises(UnsupportedOpError) as cpu:
        graphmem.analyze(path)
    assert str(cpu.value) == ("node 'pool' (AveragePool): the CPU provider has no AveragePool kernel for opset "
                              "version 1; onnxruntime cannot load this model")
    with pytest.raises(UnsupportedOpError) as cuda:
        graphmem.analyze(path, provider="cuda")
    assert str(cuda.value) == ("node 'pool' (AveragePool): the CUDA provider has no kernel for it and the CPU "
                               "provider has no AveragePool kernel for opset version 1; onnxruntime cannot load this model")
