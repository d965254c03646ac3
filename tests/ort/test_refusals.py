"""Inputs onnxruntime's kernels refuse at run time although their shapes infer
(graphmem.ort.refusals): graphmem refuses the binding in one line naming the node, why, and
the range of the dim it runs in; a real onnxruntime session fails at that node with the message
quoted, and runs at the binding the line says works. Each model is one tiny inline graph."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from builders import BERT, MODELS, init, model, outcome, save, tensor
from onnx import TensorProto, helper

from graphmem.analysis import analyze
from graphmem.errors import KernelRefusalError
from graphmem.model.graph import build_graph
from graphmem.model.loading import load_model
from graphmem.ort.order import ort_order
from graphmem.ort.inference import infer_types
from graphmem.shapes.infer import RUNTIME
from graphmem.ort.refusals import index_span

GPT2 = MODELS / "tiny_gpt2.onnx"
LSTM_MODEL = MODELS / "tiny_lstm.onnx"


def _named(*nodes: onnx.NodeProto) -> list[onnx.NodeProto]:
    for i, n in enumerate(nodes):
        n.name = n.name or f"{n.op_type}_{i}"
    return list(nodes)


def _positions() -> list[onnx.NodeProto]:
    # x [1, seq] -> s = Shape(x) -> n = s[1] -> pos = Range(0, n, 1): 0 .. seq-1 (GPT-2's position ids)
    return [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
            helper.make_node("Range", ["zero", "n", "one"], ["pos"])]


_POS = [init("zero", np.int64(0)), init("one", np.int64(1))]
_TABLE = init("table", np.ones((8, 4), np.float32))


def gather() -> onnx.ModelProto:
    # Gather(table [8, 4], pos [seq]): pos reaches seq - 1; the table has rows -8..7
    nodes = _named(*_positions(), helper.make_node("Gather", ["table", "pos"], ["y"], axis=0))
    return model(nodes, [tensor("x", [1, "seq"])], [tensor("y", None)], [*_POS, _TABLE])


def gather_elements() -> onnx.ModelProto:
    # GatherElements(table [8, 1], Unsqueeze(pos, 1) [seq, 1], axis 0)
    nodes = _named(*_positions(), helper.make_node("Unsqueeze", ["pos", "one1"], ["idx"]),
                   helper.make_node("GatherElements", ["table", "idx"], ["y"], axis=0))
    return model(nodes, [tensor("x", [1, "seq"])], [tensor("y", None)],
                 [*_POS, init("one1", np.array([1], np.int64)), init("table", np.ones((8, 1), np.float32))])


def scatter_nd() -> onnx.ModelProto:
    # ScatterND(table [8, 4], Unsqueeze(pos, 1) [seq, 1], u [seq, 4])
    nodes = _named(*_positions(), helper.make_node("Unsqueeze", ["pos", "one1"], ["idx"]),
                   helper.make_node("ScatterND", ["table", "idx", "u"], ["y"]))
    return model(nodes, [tensor("x", [1, "seq"]), tensor("u", ["seq", 4])], [tensor("y", None)],
                 [*_POS, init("one1", np.array([1], np.int64)), _TABLE])


def conv(**attrs: object) -> Callable[[], onnx.ModelProto]:
    def build() -> onnx.ModelProto:
        # Conv(x [1, 1, h], W [1, 1, 5])
        nodes = _named(helper.make_node("Conv", ["x", "w"], ["y"], **attrs))
        return model(nodes, [tensor("x", [1, 1, "h"])], [tensor("y", None)], [init("w", np.ones((1, 1, 5), np.float32))])

    return build


def conv_channels() -> onnx.ModelProto:
    # Conv(x [1, c, 5], W [2, 3, 3]): W takes 3 input channels
    nodes = _named(helper.make_node("Conv", ["x", "w"], ["y"]))
    return model(nodes, [tensor("x", [1, "c", 5])], [tensor("y", None)], [init("w", np.ones((2, 3, 3), np.float32))])


def conv_transpose() -> onnx.ModelProto:
    # ConvTranspose(x [1, 1, h], W [1, 1, 3], pads 3+3): out (h - 1) + 3 - 6 = h - 4
    nodes = _named(helper.make_node("ConvTranspose", ["x", "w"], ["y"], pads=[3, 3]))
    return model(nodes, [tensor("x", [1, 1, "h"])], [tensor("y", None)], [init("w", np.ones((1, 1, 3), np.float32))])


def maxpool() -> onnx.ModelProto:
    # MaxPool(x [1, 1, h], kernel 5): out trunc((h - 4 - 1) / 1 + 1) = h - 4, and 0 runs (empty)
    nodes = _named(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[5]))
    return model(nodes, [tensor("x", [1, 1, "h"])], [tensor("y", None)])


def global_pool() -> onnx.ModelProto:
    # GlobalAveragePool(x [1, 1, h]): an empty input with N = 1
    nodes = _named(helper.make_node("GlobalAveragePool", ["x"], ["y"]))
    return model(nodes, [tensor("x", [1, 1, "h"])], [tensor("y", None)])


def argmax() -> onnx.ModelProto:
    # ArgMax(x [2, n], axis 1) -> [2, 1]: from no elements
    nodes = _named(helper.make_node("ArgMax", ["x"], ["y"], axis=1))
    return model(nodes, [tensor("x", [2, "n"])], [tensor("y", None, TensorProto.INT64)])


def reshape() -> onnx.ModelProto:
    # Reshape(x [n, 4], [2, 8]): 4n elements to 16
    nodes = _named(helper.make_node("Reshape", ["x", "shape"], ["y"]))
    return model(nodes, [tensor("x", ["n", 4])], [tensor("y", None)], [init("shape", np.array([2, 8], np.int64))])


def split() -> onnx.ModelProto:
    # Split-18(x [n], num_outputs 3): chunks of ceil(n / 3); at n = 4 they are 2, 2 and nothing
    nodes = _named(helper.make_node("Split", ["x"], ["a", "b", "c"], num_outputs=3))
    return model(nodes, [tensor("x", ["n"])], [tensor(o, None) for o in "abc"], opset=18)


def pad(mode: str, pads: list[int]) -> Callable[[], onnx.ModelProto]:
    def build() -> onnx.ModelProto:
        nodes = _named(helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode))
        return model(nodes, [tensor("x", [2, "n"])], [tensor("y", None)], [init("pads", np.array(pads, np.int64))], opset=19)

    return build


def layer_norm() -> onnx.ModelProto:
    # LayerNormalization(x [2, n], scale [4], bias [4]), axis -1
    nodes = _named(helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"]))
    return model(nodes, [tensor("x", [2, "n"])], [tensor("y", None)],
                 [init("s", np.ones(4, np.float32)), init("b", np.zeros(4, np.float32))])


def layer_norm_one() -> onnx.ModelProto:
    # LayerNormalization(x [2, n], scale [1]): the scale broadcasts; nothing to normalize at n = 0
    nodes = _named(helper.make_node("LayerNormalization", ["x", "s"], ["y"]))
    return model(nodes, [tensor("x", [2, "n"])], [tensor("y", None)], [init("s", np.ones(1, np.float32))])


def depth_to_space() -> onnx.ModelProto:
    # DepthToSpace(x [1, c, 2, 2], blocksize 2): c must be a multiple of 4
    nodes = _named(helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2))
    return model(nodes, [tensor("x", [1, "c", 2, 2])], [tensor("y", None)])


def einsum() -> onnx.ModelProto:
    # Einsum("ij,jk->ik", x [2, n], W [4, 3]): j is n and 4 (1 broadcasts)
    nodes = _named(helper.make_node("Einsum", ["x", "w"], ["y"], equation="ij,jk->ik"))
    return model(nodes, [tensor("x", [2, "n"])], [tensor("y", None)], [init("w", np.ones((4, 3), np.float32))])


@dataclass(frozen=True)
class Case:
    build: Callable[[], onnx.ModelProto]
    dim: str
    bad: int
    good: int
    refused: str  # graphmem's line
    ort: str  # onnxruntime's words, and the node it names


CASES = {
    "gather": Case(gather, "seq", 9, 8,
                   "node 'Gather_3' (Gather) fails in onnxruntime at seq=9: its indices reach 8, outside [-8, 7] "
                   "(axis 0 of its data [8, 4]); it runs for seq ≤ 8",
                   "Name:'Gather_3' Status Message: indices element out of data bounds, idx=8 must be within the inclusive range [-8,7]"),
    # 70,000 positions: more than graphmem keeps values of (65,536); Range's span says 69,999
    "gather_long": Case(gather, "seq", 70_000, 8,
                        "node 'Gather_3' (Gather) fails in onnxruntime at seq=70000: its indices reach 69999, outside [-8, 7] "
                        "(axis 0 of its data [8, 4]); it runs for seq ≤ 8",
                        "Name:'Gather_3' Status Message: indices element out of data bounds, idx=8 must be"),
    "gather_elements": Case(gather_elements, "seq", 9, 8,
                            "node 'GatherElements_4' (GatherElements) fails in onnxruntime at seq=9: its indices reach 8, "
                            "outside [-8, 7] (axis 0 of its data [8, 1]); it runs for seq ≤ 8",
                            "GatherElements op: Out of range value in index tensor"),
    "scatter_nd": Case(scatter_nd, "seq", 9, 8,
                       "node 'ScatterND_4' (ScatterND) fails in onnxruntime at seq=9: its indices reach 8, outside [-8, 7] "
                       "(axis 0 of its data [8, 4]); it runs for seq ≤ 8",
                       "Name:'ScatterND_4' Status Message: invalid indice found, indice = 8"),
    # (4 + 0 - 5) / 1 + 1 = 0 <= 0
    "conv": Case(conv(), "h", 4, 5,
                 "node 'Conv_0' (Conv) fails in onnxruntime at h=4: its output's spatial dim 0 would be 0 "
                 "(input 4, pads 0+0, kernel 5, dilation 1, stride 1); it runs for h ≥ 5",
                 "Name:'Conv_0' Status Message: Invalid input shape: {4}"),
    # VALID, stride 2: trunc((4 - 5) / 2 + 1) = trunc(0.5) = 0 (onnxruntime 1.31 divides in float)
    "conv_valid": Case(conv(auto_pad="VALID", strides=[2]), "h", 4, 5,
                       "node 'Conv_0' (Conv) fails in onnxruntime at h=4: its output's spatial dim 0 would be 0 "
                       "(input 4, auto_pad VALID, kernel 5, dilation 1, stride 2); it runs for h ≥ 5",
                       "Name:'Conv_0' Status Message: Invalid input shape: {4}"),
    # SAME: ceil(0 / 1) = 0
    "conv_same": Case(conv(auto_pad="SAME_UPPER"), "h", 0, 1,
                      "node 'Conv_0' (Conv) fails in onnxruntime at h=0: its output's spatial dim 0 would be 0 "
                      "(input 0, auto_pad SAME_UPPER, kernel 5, dilation 1, stride 1); it runs for h ≥ 1",
                      "Name:'Conv_0' Status Message: Invalid input shape: {0}"),
    "conv_channels": Case(conv_channels, "c", 4, 3,
                          "node 'Conv_0' (Conv) fails in onnxruntime at c=4: its input has 4 channels, its weight [2, 3, 3] "
                          "takes 3 (group 1)",
                          "Input channels C is not equal to kernel channels * group. C: 4 kernel channels: 3 group: 1"),
    # (4 - 1) * 1 + 3 - 6 = 0
    "conv_transpose": Case(conv_transpose, "h", 4, 5,
                           "node 'ConvTranspose_0' (ConvTranspose) fails in onnxruntime at h=4: its output's spatial dim 0 "
                           "would be 0 (input 4, pads 3+3, kernel 3, dilation 1, stride 1); it runs for h ≥ 5",
                           "Computed output dimension is <= 0 for dim 0. Input shape: {4}"),
    # trunc((3 - 4 - 1) / 1 + 1) = -1 < 0; at h = 4 the output is [1, 1, 0] and runs
    "maxpool": Case(maxpool, "h", 3, 4,
                    "node 'MaxPool_0' (MaxPool) fails in onnxruntime at h=3: its output's spatial dim 0 would be -1 "
                    "(input 3, pads 0+0, kernel 5, dilation 1, stride 1); it runs for h ≥ 4",
                    "out_size >= 0 was false. Calculated output dimension is negative."),
    "maxpool_empty": Case(maxpool, "h", 0, 4,
                          "node 'MaxPool_0' (MaxPool) fails in onnxruntime at h=0: its input [1, 1, 0] is empty (only N may be 0); "
                          "it runs for h ≥ 4",
                          "Invalid input shape. Only N can be zero. Got:{1,1,0}"),
    "global_pool": Case(global_pool, "h", 0, 1,
                        "node 'GlobalAveragePool_0' (GlobalAveragePool) fails in onnxruntime at h=0: its input [1, 1, 0] is "
                        "empty (only N may be 0); it runs for h ≥ 1",
                        "Invalid input shape. Only N can be zero. Got:{1,1,0}"),
    "argmax": Case(argmax, "n", 0, 1,
                   "node 'ArgMax_0' (ArgMax) fails in onnxruntime at n=0: it reduces axis 1 of [2, 0], which is empty, "
                   "to a non-empty output; it runs for n ≥ 1",
                   "Non-zero status code returned while running ArgMax node. Name:'ArgMax_0' Status Message: "),
    "reshape": Case(reshape, "n", 3, 4,
                    "node 'Reshape_0' (Reshape) fails in onnxruntime at n=3: its input [3, 4] has 12 elements, the shape [2, 8] 16",
                    "The input tensor cannot be reshaped to the requested shape. Input shape:{3,4}, requested shape:{2,8}"),
    "split": Case(split, "n", 4, 5,
                  "node 'Split_0' (Split) fails in onnxruntime at n=4: its axis of 4 cannot be split in 3 chunks of "
                  "ceil(4/3) with a last one not empty",
                  "Invalid value in 'split'. Split size 2 exceeds the remaining size of the selected axis, 0."),
    "pad_reflect": Case(pad("reflect", [0, 2, 0, 2]), "n", 2, 3,
                        "node 'Pad_0' (Pad) fails in onnxruntime at n=2: reflect padding of 2 needs at least 3 entries on "
                        "axis 1, it has 2; it runs for n ≥ 3",
                        "Pad reflect: pre-pad (2) exceeds maximum allowed (1) for axis 1. Input shape:{2,2}"),
    "pad_edge": Case(pad("edge", [0, 1, 0, 1]), "n", 0, 1,
                     "node 'Pad_0' (Pad) fails in onnxruntime at n=0: edge padding cannot take its empty axis 1; it runs for n ≥ 1",
                     "Cannot use 'edge' mode to pad dimension with a value of 0. Input shape:{2,0}"),
    "pad_wrap": Case(pad("wrap", [0, 0, 0, 0]), "n", 0, 1,
                     "node 'Pad_0' (Pad) fails in onnxruntime at n=0: wrap padding cannot take its empty input [2, 0]; "
                     "it runs for n ≥ 1",
                     "Name:'Pad_0' Status Message: Unexpected mode of 3"),
    # 3 - 2 - 2 = -1
    "pad_negative": Case(pad("constant", [0, -2, 0, -2]), "n", 3, 4,
                         "node 'Pad_0' (Pad) fails in onnxruntime at n=3: its output's axis 1 would be -1 (3 padded by -2+-2); "
                         "it runs for n ≥ 4",
                         "Name:'Pad_0' Status Message: /onnxruntime_src/onnxruntime/core/framework/op_kernel.cc"),
    "layer_norm": Case(layer_norm, "n", 5, 4,
                       "node 'LayerNormalization_0' (LayerNormalization) fails in onnxruntime at n=5: its scale [4] does not "
                       "broadcast to its input [2, 5]",
                       "Scale and (optional) bias must match X.shape[axis:] or be NumPy-broadcastable to it."),
    "layer_norm_empty": Case(layer_norm_one, "n", 0, 1,
                             "node 'LayerNormalization_0' (LayerNormalization) fails in onnxruntime at n=0: its input [2, 0] "
                             "has no elements from axis 1",
                             "Size of X.shape[axis:] must be at least 1, got 0"),
    "depth_to_space": Case(depth_to_space, "c", 6, 4,
                           "node 'DepthToSpace_0' (DepthToSpace) fails in onnxruntime at c=6: its 6 channels are not a multiple "
                           "of blocksize² = 4",
                           "DepthToSpace requires input depth to be a multiple of (block_size * block_size)"),
    "einsum": Case(einsum, "n", 5, 4,
                   "node 'Einsum_0' (Einsum) fails in onnxruntime at n=5: subscript 'j' is 5 in operand 0 and 4 in operand 1",
                   "Einsum operands could not be broadcast together."),
}


def _feeds(session: ort.InferenceSession, dim: str, value: int) -> dict[str, np.ndarray]:
    return {i.name: np.zeros([value if d == dim else d for d in i.shape],
                             np.int64 if "int64" in i.type else np.float32) for i in session.get_inputs()}


def _run(path: Path, dim: str, value: int) -> str:
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    try:
        session.run(None, _feeds(session, dim, value))
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types
        return str(exc)
    return "ok"


@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_where_onnxruntime_fails_and_runs_where_it_runs(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    path = save(case.build(), tmp_path / f"{name}.onnx")
    with pytest.raises(KernelRefusalError) as refused:
        analyze(path, dims={case.dim: case.bad})
    assert str(refused.value) == case.refused
    assert case.ort in _run(path, case.dim, case.bad)
    analyze(path, dims={case.dim: case.good})  # no refusal
    assert _run(path, case.dim, case.good) == "ok"


def test_cli_refuses_gpt2_past_its_position_table_in_one_line() -> None:
    # tiny_gpt2's position table has 128 rows; its position ids are Range(0, seq)
    code, out, err = outcome("peak", str(GPT2), "-d", "batch=1", "-d", "seq=129", "--json")
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "graphmem: error: node '/model/wpe/Gather' (Gather) fails in onnxruntime at seq=129: its indices reach 128, "
        "outside [-128, 127] (axis 0 of its data [128, 64]); it runs for seq ≤ 128"]
    assert outcome("peak", str(GPT2), "-d", "batch=1", "-d", "seq=128", "--require-exact")[0] == 0
    session = ort.InferenceSession(str(GPT2), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="Name:'/model/wpe/Gather' Status Message: indices element out of data bounds, idx=128"):
        session.run(None, {"input_ids": np.zeros((1, 129), np.int64)})


def test_bert_first_failure_is_the_one_onnxruntime_hits() -> None:
    # tiny_bert at seq=0: the attention's Reshape infers no -1 from no elements (an unresolved
    # cause) before the pooler's Gather of token 0 from no tokens (a refusal): onnxruntime fails
    # at the Reshape, and graphmem names the Reshape, not the later Gather
    a = analyze(BERT, dims={"batch": 1, "seq": 0})
    assert a.shapes.causes[0].node == "/model/encoder/layer.0/attention/self/Reshape_1"
    session = ort.InferenceSession(str(BERT), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="Name:'/model/encoder/layer.0/attention/self/Reshape_1'"):
        session.run(None, {"input_ids": np.zeros((1, 0), np.int64), "attention_mask": np.ones((1, 0), np.int64)})


_ABORTS = """
import sys, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
s.run(None, {i.name: np.zeros([int(v) for v in sys.argv[2].split("x")], np.int64) for i in s.get_inputs()})
"""


def test_lstm_at_batch_zero_is_refused_as_onnxruntime_aborts() -> None:
    # tiny_lstm's LSTM at batch 0: onnxruntime's process ends in std::terminate (SIGABRT)
    with pytest.raises(KernelRefusalError) as refused:
        analyze(LSTM_MODEL, dims={"batch": 0, "seq": 8})
    assert str(refused.value) == (
        "node '/lstm/LSTM' (LSTM) fails in onnxruntime at batch=0: its input [8, 0, 32] has batch 0: "
        "onnxruntime's LSTM aborts the process; it runs for batch ≥ 1")
    done = subprocess.run([sys.executable, "-c", _ABORTS, str(LSTM_MODEL), "0x8"], capture_output=True, text=True)
    assert done.returncode == -6 and "terminate called without an active exception" in done.stderr
    assert subprocess.run([sys.executable, "-c", _ABORTS, str(LSTM_MODEL), "1x8"]).returncode == 0
    analyze(LSTM_MODEL, dims={"batch": 1, "seq": 0})  # a sequence of 0 runs (LSTM; GRU aborts)


def test_gru_at_sequence_zero_is_refused(tmp_path: Path) -> None:
    # GRU(x [seq, 1, 3], hidden 4): at seq 0 onnxruntime aborts the process
    w, r = init("W", np.ones((1, 12, 3), np.float32)), init("R", np.ones((1, 12, 4), np.float32))
    m = model(_named(helper.make_node("GRU", ["x", "W", "R"], ["y"], hidden_size=4)),
              [tensor("x", ["seq", 1, 3])], [tensor("y", None)], [w, r])
    path = save(m, tmp_path / "gru.onnx")
    with pytest.raises(KernelRefusalError, match=r"its input \[0, 1, 3\] has sequence 0: .* it runs for seq ≥ 1$"):
        analyze(path, dims={"seq": 0})
    run = "import sys, numpy as np, onnxruntime as ort; s = ort.InferenceSession(sys.argv[1]); " \
          "s.run(None, {'x': np.zeros((int(sys.argv[2]), 1, 3), np.float32)})"
    assert subprocess.run([sys.executable, "-c", run, str(path), "0"], capture_output=True).returncode == -6
    assert subprocess.run([sys.executable, "-c", run, str(path), "1"], capture_output=True).returncode == 0


def test_index_span_follows_range_views_and_shifts(tmp_path: Path) -> None:
    # p = Range(0, seq, 1) [seq] (values not kept past 65,536) -> u = Unsqueeze(p) -> a = u + 5 -> b = 3 - a
    # at seq = 100,000: p spans [0, 99999], u the same, a [5, 100004], b [3 - 100004, 3 - 5]
    nodes = [*_positions(), helper.make_node("Unsqueeze", ["pos", "zero1"], ["u"]),
             helper.make_node("Add", ["u", "five"], ["a"]), helper.make_node("Sub", ["three", "a"], ["b"])]
    m = model(_named(*nodes), [tensor("x", [1, "seq"])], [tensor("b", None, TensorProto.INT64)],
              [*_POS, init("zero1", np.array([0], np.int64)), init("five", np.int64(5)), init("three", np.int64(3))])
    g = build_graph(load_model(save(m, tmp_path / "spans.onnx")))
    order = ort_order(g)
    r = infer_types(g, order, view=RUNTIME, dims={"seq": 100_000})
    assert "pos" not in r.values
    memo: dict = {}
    spans = {t: index_span(g, r.types, r.values, t, memo) for t in ("pos", "u", "a", "b")}
    assert spans == {"pos": (0, 99_999), "u": (0, 99_999), "a": (5, 100_004), "b": (-100_001, -2)}
