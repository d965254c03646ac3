"""A bound dim onnxruntime cannot run: does graphmem say so? ``graphmem peak --json`` against a
real onnxruntime session, per model and binding.

Each tiny model below takes one symbolic dim into a node that fails at run time for some of its
values (an index past a table, a window larger than its input, sizes that do not add up, ...);
``models/*.onnx`` are bound past their tables too. A row gives graphmem's outcome (``exact``,
``not exact`` with the first cause, or ``refused`` with its one line and exit code) and
onnxruntime's (``runs``, or the first line of its error). The bar: no row where graphmem answers
``exact`` with exit 0 and onnxruntime fails (``WRONG``), and none where graphmem refuses a binding
onnxruntime runs (``FALSE REFUSAL``).

    python scripts/binding_failures.py [--only NAME ...] [--corpus]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent
F, I64 = TensorProto.FLOAT, TensorProto.INT64


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    build: Callable[[], onnx.ModelProto] | Path
    bindings: tuple[dict[str, int], ...]
    graph_opt: str = "none"


def _model(nodes, inputs, outputs, inits=(), opset=18) -> onnx.ModelProto:  # type: ignore[no-untyped-def]
    for i, node in enumerate(nodes):  # named, so that onnxruntime's error names them too
        node.name = node.name or f"{node.op_type}_{i}"
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _x(name: str, shape, dtype=F):  # type: ignore[no-untyped-def]
    return helper.make_tensor_value_info(name, dtype, shape)


def _y(name: str = "y", dtype=F):  # type: ignore[no-untyped-def]
    return helper.make_tensor_value_info(name, dtype, None)


def _c(name: str, values, dtype=np.int64):  # type: ignore[no-untyped-def]
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def _positions(prefix: str = "") -> list[onnx.NodeProto]:
    """pos = Range(0, Shape(x)[1], 1): x [1, seq] -> [seq] (GPT-2's position ids)."""
    return [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
        helper.make_node("Range", ["zero", "n", "one"], ["pos"]),
    ]


_POS_INITS = (_c("zero", 0), _c("one", 1))


def gather_table() -> onnx.ModelProto:
    # x [1, seq] -> pos [seq] = 0..seq-1 -> Gather(table [8, 4], pos) [seq, 4]: seq <= 8 runs
    nodes = [*_positions(), helper.make_node("Gather", ["table", "pos"], ["y"], axis=0)]
    return _model(nodes, [_x("x", [1, "seq"])], [_y()], [*_POS_INITS, _c("table", np.ones((8, 4)), np.float32)])


def gather_elements() -> onnx.ModelProto:
    # idx [seq, 1] = Unsqueeze(pos, 1) -> GatherElements(table [8, 1], idx, axis 0): seq <= 8 runs
    nodes = [*_positions(), helper.make_node("Unsqueeze", ["pos", "one"], ["idx"]),
             helper.make_node("GatherElements", ["table", "idx"], ["y"], axis=0)]
    return _model(nodes, [_x("x", [1, "seq"])], [_y()], [*_POS_INITS, _c("table", np.ones((8, 1)), np.float32)])


def gather_nd() -> onnx.ModelProto:
    # idx [seq, 1] -> GatherND(table [8, 4], idx) [seq, 4]: seq <= 8 runs
    nodes = [*_positions(), helper.make_node("Unsqueeze", ["pos", "one"], ["idx"]),
             helper.make_node("GatherND", ["table", "idx"], ["y"])]
    return _model(nodes, [_x("x", [1, "seq"])], [_y()], [*_POS_INITS, _c("table", np.ones((8, 4)), np.float32)])


def scatter_nd() -> onnx.ModelProto:
    # ScatterND(table [8, 4], idx [seq, 1], updates u [seq, 4]): seq <= 8 runs
    nodes = [*_positions(), helper.make_node("Unsqueeze", ["pos", "one"], ["idx"]),
             helper.make_node("ScatterND", ["table", "idx", "u"], ["y"])]
    return _model(nodes, [_x("x", [1, "seq"]), _x("u", ["seq", 4])], [_y()],
                  [*_POS_INITS, _c("table", np.ones((8, 4)), np.float32)])


def scatter_elements() -> onnx.ModelProto:
    # ScatterElements(table [8, 1], idx [seq, 1], updates u [seq, 1], axis 0): seq <= 8 runs
    nodes = [*_positions(), helper.make_node("Unsqueeze", ["pos", "one"], ["idx"]),
             helper.make_node("ScatterElements", ["table", "idx", "u"], ["y"], axis=0)]
    return _model(nodes, [_x("x", [1, "seq"]), _x("u", ["seq", 1])], [_y()],
                  [*_POS_INITS, _c("table", np.ones((8, 1)), np.float32)])


def slice_past() -> onnx.ModelProto:
    # Slice(table [8, 4], starts 0, ends seq): clamps at 8 rows, runs at every seq (control row)
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=1, end=2),
             helper.make_node("Slice", ["table", "zero1", "s"], ["y"])]
    return _model(nodes, [_x("x", [1, "seq"])], [_y()], [_c("zero1", [0]), _c("table", np.ones((8, 4)), np.float32)])


def conv() -> onnx.ModelProto:
    # Conv(x [1, 1, h, h], W [1, 1, 5, 5]), no padding: out h - 4; h >= 5 runs
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"])]
    return _model(nodes, [_x("x", [1, 1, "h", "h"])], [_y()], [_c("w", np.ones((1, 1, 5, 5)), np.float32)])


def conv_strided() -> onnx.ModelProto:
    # Conv(x [1, 1, h], W [1, 1, 5], stride 3, pads 1+1): out floor((h + 2 - 5) / 3) + 1; h >= 3 runs
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], strides=[3], pads=[1, 1])]
    return _model(nodes, [_x("x", [1, 1, "h"])], [_y()], [_c("w", np.ones((1, 1, 5)), np.float32)])


def conv_valid() -> onnx.ModelProto:
    # Conv(x [1, 1, h], W [1, 1, 5], auto_pad VALID, stride 2)
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], strides=[2], auto_pad="VALID")]
    return _model(nodes, [_x("x", [1, 1, "h"])], [_y()], [_c("w", np.ones((1, 1, 5)), np.float32)])


def conv_same() -> onnx.ModelProto:
    # Conv(x [1, 1, h], W [1, 1, 3], auto_pad SAME_UPPER): out h; h = 0 is empty
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER")]
    return _model(nodes, [_x("x", [1, 1, "h"])], [_y()], [_c("w", np.ones((1, 1, 3)), np.float32)])


def conv_channels() -> onnx.ModelProto:
    # Conv(x [1, c, 5], W [2, 3, 3]): c = 3 runs
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"])]
    return _model(nodes, [_x("x", [1, "c", 5])], [_y()], [_c("w", np.ones((2, 3, 3)), np.float32)])


def conv_transpose() -> onnx.ModelProto:
    # ConvTranspose(x [1, 1, h], W [1, 1, 3], pads 3+3): out (h - 1) + 3 - 6 = h - 4; h >= 5 runs
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["y"], pads=[3, 3])]
    return _model(nodes, [_x("x", [1, 1, "h"])], [_y()], [_c("w", np.ones((1, 1, 3)), np.float32)])


def _pool(op: str, **attrs) -> Callable[[], onnx.ModelProto]:  # type: ignore[no-untyped-def]
    def build() -> onnx.ModelProto:
        # op(x [1, 1, h, h], kernel 5x5): out h - 4 (ceil_mode, pads as given)
        nodes = [helper.make_node(op, ["x"], ["y"], kernel_shape=[5, 5], **attrs)]
        return _model(nodes, [_x("x", [1, 1, "h", "h"])], [_y()])

    return build


def reshape_count() -> onnx.ModelProto:
    # Reshape(x [n, 4], [2, 8]): n = 4 runs
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"])]
    return _model(nodes, [_x("x", ["n", 4])], [_y()], [_c("shape", [2, 8])])


def split_sizes() -> onnx.ModelProto:
    # Split(x [n], [2, 2]): n = 4 runs
    nodes = [helper.make_node("Split", ["x", "sizes"], ["y", "z"])]
    return _model(nodes, [_x("x", ["n"])], [_y(), _y("z")], [_c("sizes", [2, 2])])


def expand_dims() -> onnx.ModelProto:
    # Expand(x [n], [3]): n in {1, 3} runs
    nodes = [helper.make_node("Expand", ["x", "shape"], ["y"])]
    return _model(nodes, [_x("x", ["n"])], [_y()], [_c("shape", [3])])


def matmul_inner() -> onnx.ModelProto:
    # MatMul(x [2, n], W [4, 3]): n = 4 runs
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    return _model(nodes, [_x("x", [2, "n"])], [_y()], [_c("w", np.ones((4, 3)), np.float32)])


def gemm_inner() -> onnx.ModelProto:
    # Gemm(x [2, n], W [4, 3]): n = 4 runs
    nodes = [helper.make_node("Gemm", ["x", "w"], ["y"])]
    return _model(nodes, [_x("x", [2, "n"])], [_y()], [_c("w", np.ones((4, 3)), np.float32)])


def einsum_inner() -> onnx.ModelProto:
    # Einsum("ij,jk->ik", x [2, n], W [4, 3]): n = 4 runs
    nodes = [helper.make_node("Einsum", ["x", "w"], ["y"], equation="ij,jk->ik")]
    return _model(nodes, [_x("x", [2, "n"])], [_y()], [_c("w", np.ones((4, 3)), np.float32)])


def concat_other_axis() -> onnx.ModelProto:
    # Concat(x [n, 2], W [3, 2], axis 1): n = 3 runs
    nodes = [helper.make_node("Concat", ["x", "w"], ["y"], axis=1)]
    return _model(nodes, [_x("x", ["n", 2])], [_y()], [_c("w", np.ones((3, 2)), np.float32)])


def add_broadcast() -> onnx.ModelProto:
    # Add(x [n], W [3]): n in {1, 3} runs
    nodes = [helper.make_node("Add", ["x", "w"], ["y"])]
    return _model(nodes, [_x("x", ["n"])], [_y()], [_c("w", np.ones(3), np.float32)])


def squeeze_dim() -> onnx.ModelProto:
    # Squeeze(x [n, 3], axes [0]): n = 1 runs
    nodes = [helper.make_node("Squeeze", ["x", "axes"], ["y"])]
    return _model(nodes, [_x("x", ["n", 3])], [_y()], [_c("axes", [0])])


def layer_norm_scale() -> onnx.ModelProto:
    # LayerNormalization(x [2, n], scale [4], bias [4]): n = 4 runs
    nodes = [helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"])]
    return _model(nodes, [_x("x", [2, "n"])], [_y()],
                  [_c("s", np.ones(4), np.float32), _c("b", np.zeros(4), np.float32)])


def batch_norm_channels() -> onnx.ModelProto:
    # BatchNormalization(x [1, c, 4], 4 x [3]): c = 3 runs
    stats = [_c(k, np.ones(3), np.float32) for k in ("s", "b", "m", "v")]
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])]
    return _model(nodes, [_x("x", [1, "c", 4])], [_y()], stats)


def topk_k() -> onnx.ModelProto:
    # TopK(x [n], k 5): n >= 5 runs
    nodes = [helper.make_node("TopK", ["x", "k"], ["y", "i"])]
    return _model(nodes, [_x("x", ["n"])], [_y(), _y("i", I64)], [_c("k", [5])])


def pad_reflect() -> onnx.ModelProto:
    # Pad(x [n], pads 2+2, reflect): n >= 3 runs
    nodes = [helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")]
    return _model(nodes, [_x("x", ["n"])], [_y()], [_c("pads", [2, 2])])


def pad_negative() -> onnx.ModelProto:
    # Pad(x [n], pads -2-2): out n - 4; n >= 4 runs (n = 4: empty)
    nodes = [helper.make_node("Pad", ["x", "pads"], ["y"])]
    return _model(nodes, [_x("x", ["n"])], [_y()], [_c("pads", [-2, -2])])


def depth_to_space() -> onnx.ModelProto:
    # DepthToSpace(x [1, c, 2, 2], blocksize 2): c divisible by 4 runs
    nodes = [helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2)]
    return _model(nodes, [_x("x", [1, "c", 2, 2])], [_y()])


def split_num_outputs() -> onnx.ModelProto:
    # Split(x [n], num_outputs 3): n >= 3 runs?
    nodes = [helper.make_node("Split", ["x"], ["y", "z", "w"], num_outputs=3)]
    return _model(nodes, [_x("x", ["n"])], [_y(), _y("z"), _y("w")])


def reshape_minus1() -> onnx.ModelProto:
    # Reshape(x [n, 4], [-1, 8]): n even runs
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"])]
    return _model(nodes, [_x("x", ["n", 4])], [_y()], [_c("shape", [-1, 8])])


def group_norm() -> onnx.ModelProto:
    # GroupNormalization-18(x [1, c, 4], scale [2], bias [2], 2 groups): c even runs
    nodes = [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)]
    return _model(nodes, [_x("x", [1, "c", 4])], [_y()],
                  [_c("s", np.ones(2), np.float32), _c("b", np.zeros(2), np.float32)])


def instance_norm() -> onnx.ModelProto:
    # InstanceNormalization(x [1, c, 4], scale [3], bias [3]): c = 3 runs
    nodes = [helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"])]
    return _model(nodes, [_x("x", [1, "c", 4])], [_y()],
                  [_c("s", np.ones(3), np.float32), _c("b", np.zeros(3), np.float32)])


def space_to_depth() -> onnx.ModelProto:
    # SpaceToDepth(x [1, 1, h, 4], blocksize 2): h even runs
    nodes = [helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2)]
    return _model(nodes, [_x("x", [1, 1, "h", 4])], [_y()])


def einsum_one() -> onnx.ModelProto:
    # Einsum("ij,jk->ik", x [2, n], W [4, 3]) at n = 1: a broadcast of j?
    nodes = [helper.make_node("Einsum", ["x", "w"], ["y"], equation="ij,jk->ik")]
    return _model(nodes, [_x("x", [2, "n"])], [_y()], [_c("w", np.ones((4, 3)), np.float32)])


def conv_transpose_channels() -> onnx.ModelProto:
    # ConvTranspose(x [1, c, 4], W [2, 1, 3]): c = 2 runs
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["y"])]
    return _model(nodes, [_x("x", [1, "c", 4])], [_y()], [_c("w", np.ones((2, 1, 3)), np.float32)])


def split_equal() -> onnx.ModelProto:
    # Split-13(x [n]) into 2 equal outputs: n even runs
    nodes = [helper.make_node("Split", ["x"], ["y", "z"])]
    return _model(nodes, [_x("x", ["n"])], [_y(), _y("z")], opset=13)


def _pad(mode: str, pads: list[int]) -> Callable[[], onnx.ModelProto]:
    def build() -> onnx.ModelProto:
        nodes = [helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)]
        return _model(nodes, [_x("x", [2, "n"])], [_y()], [_c("pads", pads)], opset=19)

    return build


CASES = (
    Case("gather_table", gather_table, ({"seq": 8}, {"seq": 9}, {"seq": 100_000})),
    Case("gather_elements", gather_elements, ({"seq": 8}, {"seq": 9})),
    Case("gather_nd", gather_nd, ({"seq": 8}, {"seq": 9})),
    Case("scatter_nd", scatter_nd, ({"seq": 8}, {"seq": 9})),
    Case("scatter_elements", scatter_elements, ({"seq": 8}, {"seq": 9})),
    Case("slice_past", slice_past, ({"seq": 8}, {"seq": 9})),
    Case("conv", conv, ({"h": 5}, {"h": 4}, {"h": 2})),
    Case("conv_strided", conv_strided, ({"h": 3}, {"h": 2}, {"h": 1})),
    Case("conv_valid", conv_valid, ({"h": 5}, {"h": 4}, {"h": 3}, {"h": 2})),
    Case("conv_same", conv_same, ({"h": 1}, {"h": 0})),
    Case("conv_channels", conv_channels, ({"c": 3}, {"c": 4})),
    Case("conv_transpose", conv_transpose, ({"h": 5}, {"h": 4}, {"h": 3})),
    Case("maxpool", _pool("MaxPool"), ({"h": 5}, {"h": 4}, {"h": 2})),
    Case("maxpool_ceil", _pool("MaxPool", ceil_mode=1, strides=[2, 2]), ({"h": 5}, {"h": 4}, {"h": 3})),
    Case("avgpool", _pool("AveragePool"), ({"h": 5}, {"h": 4}, {"h": 2})),
    Case("avgpool_pads", _pool("AveragePool", pads=[1, 1, 1, 1]), ({"h": 3}, {"h": 2}, {"h": 1})),
    Case("lppool", _pool("LpPool"), ({"h": 5}, {"h": 4})),
    Case("reshape_count", reshape_count, ({"n": 4}, {"n": 3})),
    Case("split_sizes", split_sizes, ({"n": 4}, {"n": 5})),
    Case("expand_dims", expand_dims, ({"n": 3}, {"n": 2})),
    Case("matmul_inner", matmul_inner, ({"n": 4}, {"n": 5})),
    Case("gemm_inner", gemm_inner, ({"n": 4}, {"n": 5})),
    Case("einsum_inner", einsum_inner, ({"n": 4}, {"n": 5})),
    Case("concat_other_axis", concat_other_axis, ({"n": 3}, {"n": 4})),
    Case("add_broadcast", add_broadcast, ({"n": 3}, {"n": 2})),
    Case("squeeze_dim", squeeze_dim, ({"n": 1}, {"n": 2})),
    Case("layer_norm_scale", layer_norm_scale, ({"n": 4}, {"n": 5})),
    Case("batch_norm_channels", batch_norm_channels, ({"c": 3}, {"c": 4})),
    Case("topk_k", topk_k, ({"n": 5}, {"n": 4})),
    Case("pad_reflect", pad_reflect, ({"n": 3}, {"n": 2})),
    Case("pad_negative", pad_negative, ({"n": 4}, {"n": 3})),
    Case("depth_to_space", depth_to_space, ({"c": 4}, {"c": 6})),
    Case("split_num_outputs", split_num_outputs, ({"n": 3}, {"n": 2}, {"n": 4})),
    Case("split_equal", split_equal, ({"n": 4}, {"n": 3})),
    Case("reshape_minus1", reshape_minus1, ({"n": 4}, {"n": 3})),
    Case("group_norm", group_norm, ({"c": 4}, {"c": 3})),
    Case("instance_norm", instance_norm, ({"c": 3}, {"c": 4})),
    Case("space_to_depth", space_to_depth, ({"h": 4}, {"h": 3})),
    Case("einsum_one", einsum_one, ({"n": 1},)),
    Case("conv_transpose_channels", conv_transpose_channels, ({"c": 2}, {"c": 3})),
    Case("pad_edge", _pad("edge", [0, 1, 0, 1]), ({"n": 1}, {"n": 0})),
    Case("pad_wrap", _pad("wrap", [0, 0, 0, 0]), ({"n": 1}, {"n": 0})),
    Case("pad_reflect_slice", _pad("reflect", [0, -1, 0, 2]), ({"n": 4}, {"n": 3})),
    Case("conv@all", conv, ({"h": 5}, {"h": 4}), graph_opt="all"),
    Case("maxpool@all", _pool("MaxPool"), ({"h": 4}, {"h": 2}), graph_opt="all"),
    Case("tiny_gpt2.onnx", ROOT / "models/tiny_gpt2.onnx", ({"batch": 1, "seq": 128}, {"batch": 1, "seq": 129}, {"batch": 1, "seq": 100_000})),
    Case("tiny_gpt2.onnx@all", ROOT / "models/tiny_gpt2.onnx", ({"batch": 1, "seq": 129},), graph_opt="all"),
    Case("tiny_gpt2.onnx ", ROOT / "models/tiny_gpt2.onnx", ({"batch": 0, "seq": 8}, {"batch": 1, "seq": 0})),
    Case("tiny_bert.onnx", ROOT / "models/tiny_bert.onnx",
         ({"batch": 1, "seq": 512}, {"batch": 1, "seq": 513}, {"batch": 0, "seq": 8}, {"batch": 1, "seq": 0})),
    Case("tiny_bert.onnx@all", ROOT / "models/tiny_bert.onnx", ({"batch": 1, "seq": 513},), graph_opt="all"),
    Case("train_bert.onnx", ROOT / "models/train_bert.onnx", ({"batch": 1, "seq": 513},)),
    Case("tiny_lstm.onnx", ROOT / "models/tiny_lstm.onnx", ({"batch": 1, "seq": 0}, {"batch": 0, "seq": 8})),
    Case("tiny_cnn.onnx", ROOT / "models/tiny_cnn.onnx", ({"batch": 0},)),
    Case("tiny_unet.onnx", ROOT / "models/tiny_unet.onnx", ({"batch": 0},)),
)

#: Exported models (scripts/export_corpus.py, under $GRAPHMEM_CORPUS), with --corpus.
CORPUS = (
    ("gpt2_small.onnx", ({"batch": 1, "seq": 1024}, {"batch": 1, "seq": 1025}), "none"),
    ("gpt2_small.onnx", ({"batch": 1, "seq": 1025},), "all"),
    ("bert_base.onnx", ({"batch": 1, "seq": 512}, {"batch": 1, "seq": 513}), "none"),
    ("bert_base.onnx", ({"batch": 1, "seq": 513},), "all"),
    ("lstm.onnx", ({"batch": 0, "seq": 8}, {"batch": 1, "seq": 0}), "none"),
    ("resnet18.onnx", ({"batch": 0},), "none"),
    ("vit_b16.onnx", ({"batch": 0},), "none"),
)


def graphmem_outcome(path: Path, dims: dict[str, int], graph_opt: str) -> tuple[str, str]:
    """(outcome, detail): ``exact``, ``not exact`` (the first cause, else the first approximation),
    ``refused (exit N)`` (the error line)."""
    args = [sys.executable, "-m", "graphmem", "peak", str(path), "--json", "--graph-opt", graph_opt]
    for k, v in dims.items():
        args += ["-d", f"{k}={v}"]
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return f"refused (exit {done.returncode})", lines[-1] if lines else ""
    doc = json.loads(done.stdout)
    act = doc["activations"]
    if act["exact"]:
        return "exact", f"peak {act['peak_bytes']:,} B"
    causes = doc["shapes"].get("causes") or []
    if causes:
        return "not exact", "cause: " + causes[0]["detail"]
    return "not exact", "approximation: " + act["approximations"][0]["detail"]


def ort_outcome(path: Path, dims: dict[str, int], graph_opt: str) -> str:
    """``runs``, or onnxruntime's error (load or run) on one line; in a child process, since a
    kernel may abort the process (``crashes``: LSTM at batch 0)."""
    done = subprocess.run([sys.executable, __file__, "--ort", str(path), graph_opt, json.dumps(dims)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return f"fails: crashes (exit {done.returncode}): {' '.join(done.stderr.split())[-200:]}"
    return done.stdout.strip()


def _ort_run(path: str, graph_opt: str, dims: dict[str, int]) -> str:
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.graph_optimization_level = _LEVELS[graph_opt]
    try:
        session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types
        return "load fails: " + " ".join(str(exc).split())
    feeds = {}
    for i in session.get_inputs():
        shape = [dims[d] if isinstance(d, str) else d for d in i.shape]
        dtype = np.int64 if "int64" in i.type else np.float32
        feeds[i.name] = np.ones(shape, dtype) if "mask" in i.name else np.zeros(shape, dtype)
    try:
        session.run(None, feeds)
    except Exception as exc:  # noqa: BLE001
        return "fails: " + " ".join(str(exc).split())
    return "runs"


_LEVELS = {"none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL, "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}


def verdict(gm: str, why: str, rt: str) -> str:
    """``ok``; ``WRONG`` (exact, exit 0, onnxruntime fails); ``MISSED`` (not exact for another
    reason: no cause names the failing node); ``OTHER NODE`` (graphmem names another node than
    onnxruntime's error); ``FALSE REFUSAL`` (refused, onnxruntime runs)."""
    if rt == "runs":
        return "FALSE REFUSAL" if gm.startswith("refused") else "ok"
    if gm == "exact":
        return "WRONG"
    if gm == "not exact" and not why.startswith("cause:"):
        return "MISSED"
    failing = re.search(r"Name:'([^']*)'", rt)
    named = re.search(r"node '([^']*)'", why)
    if failing and failing.group(1) and (named is None or named.group(1) != failing.group(1)):
        return "OTHER NODE"
    return "ok"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="case names")
    parser.add_argument("--width", type=int, default=150, help="characters of each detail shown")
    parser.add_argument("--corpus", action="store_true", help="also the exported models of $GRAPHMEM_CORPUS")
    args = parser.parse_args(argv)
    cases = list(CASES)
    if args.corpus:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from corpus import EXPORTED

        cases += [Case(name + ("@all" if opt == "all" else ""), EXPORTED / name, bindings, opt)
                  for name, bindings, opt in CORPUS if (EXPORTED / name).exists()]
    bad = rows = 0
    print(f"{'case':<24} {'binding':<16} {'graphmem':<16} {'onnxruntime':<11} verdict")
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            if args.only and case.name not in args.only:
                continue
            if isinstance(case.build, Path):
                path = case.build
            else:
                path = Path(tmp) / f"{case.name}.onnx"
                onnx.save(case.build(), str(path))
            for dims in case.bindings:
                gm, why = graphmem_outcome(path, dims, case.graph_opt)
                rt = ort_outcome(path, dims, case.graph_opt)
                v = verdict(gm, why, rt)
                rows += 1
                bad += v != "ok"
                binding = ",".join(f"{k}={n}" for k, n in dims.items())
                print(f"{case.name:<24} {binding:<16} {gm:<16} {'runs' if rt == 'runs' else 'fails':<11} {v}")
                if gm != "exact":
                    print(f"{'':<6}graphmem:    {why[:args.width]}")
                if rt != "runs":
                    print(f"{'':<6}onnxruntime: {rt.split('Status Message: ')[-1][:args.width]}"
                          f"{'' if not re.search(r'Name:', rt) else ' [' + re.search(r'Name:(.[^ ]*)', rt).group(1) + ']'}")
    print(f"\n{rows} rows, {bad} fail the bar (WRONG, MISSED, OTHER NODE, FALSE REFUSAL)")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--ort"]:  # the child process of ort_outcome
        print(_ort_run(sys.argv[2], sys.argv[3], json.loads(sys.argv[4])))
        sys.exit(0)
    sys.exit(main())
