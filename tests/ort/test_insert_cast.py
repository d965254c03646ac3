"""InsertCastTransformer emulated (graphmem/ort/insert_cast.py) on tiny float16/bfloat16 graphs:
which nodes run behind Casts, the Casts' names, and the graph after the duplicate-Cast remover,
node for node against the graph a real onnxruntime session writes at ORT_DISABLE_ALL."""

from __future__ import annotations

from pathlib import Path

import onnx
from builders import model, save, tensor
from onnx import TensorProto, helper

from graphmem.model.graph import build_graph
from graphmem.model.loading import Model, load_model
from graphmem.ort.inference import infer_types
from graphmem.ort.insert_cast import cpu_session, fp16_inlined_without_kernel, insert_fp16_casts, kernel_problems
from graphmem.ort.optimized import optimized_model
from graphmem.ort.order import ort_order
from graphmem.ort.rewrites import remove_duplicate_casts
from graphmem.shapes.infer import ORT_STATIC, RUNTIME

F16, BF16 = TensorProto.FLOAT16, TensorProto.BFLOAT16
P = "InsertedPrecisionFreeCast_"


def _typed(path: Path) -> tuple[Model, tuple[int, ...], dict, dict]:  # type: ignore[type-arg]
    m = load_model(path)
    g = build_graph(m)
    order = ort_order(g)
    return m, order, infer_types(g, order, view=ORT_STATIC).types, infer_types(g, order, view=RUNTIME).types


def _rows(m: Model) -> list[tuple[str, str, list[str], list[str]]]:
    g = build_graph(m)
    return [(g.node(n).op_type, g.node(n).name, list(g.node(n).input), list(g.node(n).output)) for n in ort_order(g)]


def _written(path: Path, tmp_path: Path) -> list[tuple[str, str, list[str], list[str]]]:
    proto = onnx.load(str(optimized_model(path, "none", tmp_path, always=True)))
    return [(n.op_type, n.name, list(n.input), list(n.output)) for n in proto.graph.node]


def _chain(tmp_path: Path, middle: onnx.NodeProto, y: list[int]) -> Path:
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r1"), middle, helper.make_node("Relu", ["b"], ["y"], name="r2")]
    return save(model(nodes, [tensor("x", [2, 8], F16)], [tensor("y", y, F16)]), tmp_path / "chain.onnx")


def test_each_node_without_a_float16_kernel_reads_and_writes_through_casts(tmp_path: Path) -> None:
    # Relu and Abs have no float16 CPU kernel: each reads its input through Cast(to float) and
    # writes a float twin cast back: 3 nodes x (1 in + 1 out) = 6 Casts; the remover then drops
    # the back-to-back pairs between them, leaving the first and the last.
    path = _chain(tmp_path, helper.make_node("Abs", ["a"], ["b"], name="abs"), [2, 8])
    m, order, static, runtime = _typed(path)
    assert [(n.name, why) for n, why in kernel_problems(m, static)] == [
        (name, f"the CPU provider has no {op} kernel for T=float16") for name, op in (("r1", "Relu"), ("abs", "Abs"), ("r2", "Relu"))
    ]
    ins = insert_fp16_casts(m, order, static, runtime)
    assert (ins.casts, ins.fallback) == (6, ("r1", "abs", "r2"))
    assert ins.static[P + "a"].dtype == TensorProto.FLOAT and ins.static["a"].dtype == F16
    assert _rows(remove_duplicate_casts(ins.model, ins.static)) == _written(path, tmp_path) == [
        ("Cast", P + "x", ["x"], [P + "x"]),
        ("Relu", "r1", [P + "x"], [P + "a"]),
        ("Abs", "abs", [P + "a"], [P + "b"]),
        ("Relu", "r2", [P + "b"], [P + "y"]),
        ("Cast", P + "y", [P + "y"], ["y"]),
    ]


def test_an_isolated_float16_node_runs_in_float32_too(tmp_path: Path) -> None:
    # Transpose has a float16 kernel, but it sits between two nodes that need casts (an input
    # edge, no graph output, every float16 edge from and to such nodes): it is un-assigned too
    # (ForceSingleNodeCPUFloat16ToFloat32) and runs on the float twins
    path = _chain(tmp_path, helper.make_node("Transpose", ["a"], ["b"], name="t", perm=[1, 0]), [8, 2])
    m, order, static, runtime = _typed(path)
    assert [n.name for n, _ in kernel_problems(m, static)] == ["r1", "r2"]
    ins = insert_fp16_casts(m, order, static, runtime)
    assert ins.fallback == ("r1", "t", "r2")
    assert _rows(remove_duplicate_casts(ins.model, ins.static)) == _written(path, tmp_path)


def test_bfloat16_without_a_kernel_is_not_rescued(tmp_path: Path) -> None:
    # only float16 nodes are cast; a bfloat16 Relu makes the session fail
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    path = save(model(nodes, [tensor("x", [2, 8], BF16)], [tensor("y", [2, 8], BF16)]), tmp_path / "bf16.onnx")
    m, order, static, runtime = _typed(path)
    cpu = cpu_session(m, order, static, runtime)
    assert cpu.missing == (("r", "Relu", "the CPU provider has no Relu kernel for T=bfloat16"),)
    assert cpu.insertion.casts == 0 and cpu.inline == frozenset()


def test_float16_softmax_runs_as_its_body(tmp_path: Path) -> None:
    # Softmax-13 has no float16 CPU kernel and is in INLINED_WITHOUT_KERNEL: no Cast, its body runs
    nodes = [helper.make_node("Softmax", ["x"], ["y"], name="sm")]
    path = save(model(nodes, [tensor("x", [2, 8], F16)], [tensor("y", [2, 8], F16)]), tmp_path / "sm.onnx")
    m, order, static, runtime = _typed(path)
    assert fp16_inlined_without_kernel(m, m.nodes[0], static)
    cpu = cpu_session(m, order, static, runtime)
    assert cpu.inline == frozenset({("y",)}) and cpu.insertion.casts == 0
