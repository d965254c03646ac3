"""Declared dims onnxruntime clears before it infers shapes (core/graph/node_arg.cc
RemoveInvalidValues: a negative dim value, an empty dim name) are cleared before graphmem calls
onnx's C++ checker and inference too: GatherND read an ``indices`` last dim of -1 as its index
count and read outside its dims array (a segmentation fault, fuzz case 19790)."""

from __future__ import annotations

from pathlib import Path

from builders import model, ort_loads, run_graphmem, save, tensor
from onnx import TensorProto, helper

from graphmem.model.validate import checker_proxy, clear_invalid_dims


def gathernd_minus_one(tmp_path: Path) -> Path:
    # fuzz case 19790: data [2,2,2] int32, indices [2,1,-1] int64, no batch_dims (default 0), at
    # IR 3 (onnxruntime loads it; the checker proxy judges it as IR 4): onnx 1.23's checker
    # crashed on it at IR 3 (not at IR 8: reading outside the array is undefined behaviour)
    nodes = [helper.make_node("GatherND", ["data", "indices"], ["output"])]
    m = model(nodes, [tensor("data", [2, 2, 2], TensorProto.INT32), tensor("indices", [2, 1, -1], TensorProto.INT64)],
              [tensor("output", [2, 2], TensorProto.INT32)], opset=13)
    m.ir_version = 3
    return save(m, tmp_path / "gathernd.onnx")


def test_negative_indices_dim_is_unknown_not_a_crash(tmp_path: Path) -> None:
    path = gathernd_minus_one(tmp_path)
    assert ort_loads(path)  # onnxruntime loads it: the -1 is cleared, not read
    # a fresh process: the crash was a signal, which would take pytest down with it
    done = run_graphmem("peak", str(path))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("graphmem: error: input 'indices' has dims with neither a value nor a name [2, 1, -1]: "
                           "set its whole shape with --shape indices=2x1xN\n")
    # indices [2,1,1]: output = indices[:-1] + data[1:] = [2,1,2,2] int32 = 32 B, the only activation
    done = run_graphmem("peak", str(path), "--shape", "indices=2x1x1", "--json")
    assert done.returncode == 0, done.stderr
    assert '"peak_bytes": 32' in done.stdout


def test_clear_invalid_dims_in_graphs_and_bodies() -> None:
    body = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "body",
                             [tensor("b", [-3])], [tensor("y", [-1, ""])])
    node = helper.make_node("If", ["c"], ["z"], then_branch=body, else_branch=body)
    seq = helper.make_value_info("s", helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [-2, 4])))
    m = model([node], [tensor("x", [-1, 0, "n", ""]), seq], [tensor("z", [5])])
    clear_invalid_dims(m.graph)
    kinds = [d.WhichOneof("value") for d in m.graph.input[0].type.tensor_type.shape.dim]
    assert kinds == [None, "dim_value", "dim_param", None]  # -1 and "" cleared, 0 and "n" kept
    assert [d.WhichOneof("value") for d in m.graph.input[1].type.sequence_type.elem_type.tensor_type.shape.dim] == [None, "dim_value"]
    then = m.graph.node[0].attribute[0].g
    assert [d.WhichOneof("value") for d in then.input[0].type.tensor_type.shape.dim] == [None]
    assert [d.WhichOneof("value") for d in then.output[0].type.tensor_type.shape.dim] == [None, None]


def test_proxy_clears_and_leaves_the_model_alone(tmp_path: Path) -> None:
    import onnx

    m = onnx.load(str(gathernd_minus_one(tmp_path)))
    proxy = checker_proxy(m)
    assert m.graph.input[1].type.tensor_type.shape.dim[2].dim_value == -1  # the user's proto untouched
    assert proxy.graph.input[1].type.tensor_type.shape.dim[2].WhichOneof("value") is None
