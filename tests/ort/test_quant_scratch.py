"""Scratch and prepacked arena chunks of the quantized CPU kernels (``graphmem.ort.quant_scratch``;
qlinearconv.cc, conv_integer.cc, quantize_linear_matmul.cc, quant_gemm.cc,
dynamic_quantize_matmul.cc, nhwc_max_pool.cc), hand-computed, and real sessions."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import graphmem
from graphmem.analysis import analyze_graph_opt
from graphmem.analysis.scratch import scratch_profile
from graphmem.model.types import TensorType
from graphmem.model.graph import build_graph
from graphmem.model.loading import load_model
from graphmem.ort.order import node_stages
from graphmem.ort.quant_scratch import prepack_requests
from graphmem.ort.scratch import KernelScratch, prepack_order
from graphmem.ort.scratch import kernel_scratch as scratch_rule
from graphmem.ort.scratch_common import ScratchSite
from graphmem.verify import make_feeds, measure

from builders import PINNED_HOST

F, U8, I8, I32 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32
HOST = PINNED_HOST  # AVX-512: the symmetric convolution, output channels by 4 (graphmem.ort.mlas)
QCONV_INPUTS = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]


def tt(*dims: int, dtype: int = U8) -> TensorType:
    return TensorType(dtype=dtype, shape=tuple(dims))


def kernel_scratch(node, ins, outs, **kw):  # type: ignore[no-untyped-def]
    """:func:`graphmem.ort.scratch.kernel_scratch` on the pinned host."""
    return scratch_rule(node, ins, outs, host=HOST, **kw)


def qconv(x, w, y, *, wdtype=I8, wz=0, constant_w=True, domain="", **attrs):  # type: ignore[no-untyped-def]
    """kernel_scratch and prepack of a QLinearConv with scalar zero points (wz for the filter)."""
    node = helper.make_node("QLinearConv", QCONV_INPUTS, ["y"], domain=domain, **attrs)
    ins = [tt(*x), tt(dtype=F), tt(), tt(*w, dtype=wdtype), tt(dtype=F), tt(dtype=wdtype), tt(dtype=F), tt()]
    values = [None, None, np.array(128, np.uint8), None, None, np.array(wz, np.int8), None, np.array(128, np.uint8)]
    constant = [False] + [True] * 7 if constant_w else [False, True, True, False, True, True, True, True]
    site = ScratchSite(host=HOST, values=values, constant=constant)
    return kernel_scratch(node, ins, [tt(*y)], values=values, constant=constant), prepack_requests(node, ins, site)


def test_qlinear_conv_symmetric_3x3() -> None:
    # int8 filter, zero point 0, 64 -> 64 channels: MlasConvSymPackW packs 16-aligned 64 x 64 x 9 =
    # 36,864 B into an arena chunk; Compute requantizes in its kernel (no int32 output). Channels
    # first: the input image transposed (64 x 56 x 56 = 200,704 B), the output likewise, then the
    # indirection buffer, a pointer per tap and output pixel: 8 x 9 x 3,136 = 225,792 B.
    got, prepack = qconv((1, 64, 56, 56), (64, 64, 3, 3), (1, 64, 56, 56), pads=[1, 1, 1, 1])
    assert got == KernelScratch(after=(200704, 200704, 225792))
    assert prepack == ((36864, True),)


def test_qlinear_conv_gemm_path_when_channels_do_not_align() -> None:
    # 3 input channels (not a multiple of 4): no symmetric packing; the GEMM path keeps its packed
    # filter outside the arena. Y 64 x 112 x 112 = 802,816 elements: int32 GEMM output 3,211,264 B,
    # input transposed 3 x 224 x 224 = 150,528 B, output 802,816 B, im2col 3 x 49 x 12,544 = 1,843,968 B.
    got, prepack = qconv((1, 3, 224, 224), (64, 3, 7, 7), (1, 64, 112, 112), strides=[2, 2], pads=[3, 3, 3, 3])
    assert got == KernelScratch(after=(3211264, 150528, 802816, 1843968))
    assert prepack == ()


def test_qlinear_conv_depthwise_not_16_aligned() -> None:
    # 40 groups of one channel (40 % 16 != 0): the filter is reordered (reserved), the depthwise
    # kernel writes int32: 4 x 40 x 3,136 = 501,760 B; transposes 125,440 B each; indirection 225,792 B.
    got, prepack = qconv((1, 40, 56, 56), (40, 1, 3, 3), (1, 40, 56, 56), group=40, pads=[1, 1, 1, 1])
    assert got == KernelScratch(after=(501760, 125440, 125440, 225792))
    assert prepack == ()


def test_qlinear_conv_channels_last_pointwise_takes_none() -> None:
    # com.microsoft's NHWC variant, 1x1 stride 1, symmetric: no transposes, no buffer at all.
    got, prepack = qconv((1, 56, 56, 64), (128, 64, 1, 1), (1, 56, 56, 128), domain="com.microsoft", channels_last=1)
    assert got == KernelScratch()
    assert prepack == ((128 * 64, True),)


def test_qlinear_conv_dynamic_or_asymmetric_filter() -> None:
    # A filter that is not an initializer is reordered in Compute first (16 x 8 x 1 = 128 B), then
    # the GEMM path's int32 output (4 x 16 x 100) and the transposes (8 x 100, 16 x 100).
    got, prepack = qconv((1, 8, 10, 10), (16, 8, 1, 1), (1, 16, 10, 10), constant_w=False)
    assert got == KernelScratch(after=(128, 6400, 800, 1600))
    assert prepack == ()
    # A filter zero point of 1 is not symmetric: the GEMM path although the channels align.
    got, _ = qconv((1, 16, 10, 10), (16, 16, 1, 1), (1, 16, 10, 10), wz=1)
    assert got == KernelScratch(after=(6400, 1600, 1600))


def test_qlinear_conv_without_the_zero_point_values_is_unmodelled() -> None:
    node = helper.make_node("QLinearConv", QCONV_INPUTS, ["y"])
    ins = [tt(1, 8, 4, 4), tt(dtype=F), tt(), tt(16, 8, 1, 1, dtype=I8), tt(dtype=F), tt(16, dtype=I8), tt(dtype=F), tt()]
    assert kernel_scratch(node, ins, [tt(1, 16, 4, 4)], constant=[False] + [True] * 7) is None


def test_conv_integer_im2col_unless_pointwise() -> None:
    node = helper.make_node("ConvInteger", ["x", "w"], ["y"], strides=[2, 2], pads=[3, 3, 3, 3])
    # 3 x 49 taps x 12,544 output pixels, one byte each.
    assert kernel_scratch(node, [tt(1, 3, 224, 224), tt(64, 3, 7, 7)], [tt(1, 64, 112, 112, dtype=I32)]) == KernelScratch(after=(1843968,))
    pointwise = helper.make_node("ConvInteger", ["x", "w"], ["y"])
    assert kernel_scratch(pointwise, [tt(1, 8, 5, 5), tt(4, 8, 1, 1)], [tt(1, 4, 5, 5, dtype=I32)]) == KernelScratch()


def test_qlinear_matmul_int32_output_of_every_gemm() -> None:
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    # Y [1, 12, 128, 64]: 98,304 int32 values, 12 GEMMs of 128 x 64.
    assert kernel_scratch(node, [tt(1, 12, 128, 128), *[None] * 2, tt(1, 12, 128, 64)] + [None] * 4, [tt(1, 12, 128, 64)]) == KernelScratch(after=(393216,))


def test_qgemm_transposes_and_requantization() -> None:
    names = ["a", "as", "az", "b", "bs", "bz", "c", "ys", "yz"]
    ins = [tt(1, 512), None, None, tt(1000, 512, dtype=I8)] + [None] * 5
    node = helper.make_node("QGemm", names, ["y"], domain="com.microsoft", transB=1)
    site = ScratchSite(host=HOST, constant=[False, True, True, True, True, True, True, True, True])
    # Constant B: prepacked (the transposed copy is a PrePack temporary); requantized Y: 4 x 1 x 1000.
    assert kernel_scratch(node, ins, [tt(1, 1000)], constant=site.constant) == KernelScratch(after=(4000,))
    assert prepack_requests(node, ins, site) == ((512000, False),)
    # B computed at run time: transposed in Compute too (1000 x 512 B); no y_scale: Y is the GEMM output.
    dynamic = helper.make_node("QGemm", names[:6], ["y"], domain="com.microsoft", transA=1, transB=1)
    ins = [tt(512, 4), None, None, tt(1000, 512, dtype=I8), None, None]
    assert kernel_scratch(dynamic, ins, [tt(4, 1000, dtype=F)]) == KernelScratch(after=(2048, 512000))


def test_dynamic_quantize_matmul_and_nhwc_max_pool() -> None:
    node = helper.make_node("DynamicQuantizeMatMul", ["a", "b", "bs", "bz"], ["y"], domain="com.microsoft")
    # A [1, 128, 768] quantized to uint8 before Y: 98,304 B.
    assert kernel_scratch(node, [tt(1, 128, 768, dtype=F), tt(768, 768, dtype=I8)], [tt(1, 128, 768, dtype=F)]) == KernelScratch(before=(98304,))
    pool = helper.make_node("NhwcMaxPool", ["x"], ["y"], domain="com.microsoft", kernel_shape=[3, 3], strides=[2, 2])
    # 8-byte pointers for 9 taps x min(56 x 56, 512) output pixels; 49 pixels when fewer.
    assert kernel_scratch(pool, [tt(1, 112, 112, 64)], [tt(1, 56, 56, 64)]) == KernelScratch(after=(36864,))
    assert kernel_scratch(pool, [tt(1, 14, 14, 64)], [tt(1, 7, 7, 64)]) == KernelScratch(after=(3528,))


def _quant_model(path: Path) -> Path:
    """QLinearConv (symmetric 3x3) -> QLinearConv (depthwise, 40 groups) -> QGemm on a large A."""
    rng = np.random.default_rng(0)
    scale, zp = numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(np.array(128, np.uint8), "z")
    wz = numpy_helper.from_array(np.array(0, np.int8), "wz")
    w1 = numpy_helper.from_array(rng.integers(-8, 8, (40, 16, 3, 3)).astype(np.int8), "w1")
    w2 = numpy_helper.from_array(rng.integers(-8, 8, (40, 1, 3, 3)).astype(np.int8), "w2")
    b = numpy_helper.from_array(rng.integers(-8, 8, (64, 640)).astype(np.int8), "b")
    shape = numpy_helper.from_array(np.array([-1, 640], np.int64), "shape")
    nodes = [
        helper.make_node("QLinearConv", ["x", "s", "z", "w1", "s", "wz", "s", "z"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("QLinearConv", ["c1", "s", "z", "w2", "s", "wz", "s", "z"], ["c2"], group=40, pads=[1, 1, 1, 1]),
        helper.make_node("Reshape", ["c2", "shape"], ["a"]),
        helper.make_node("QGemm", ["a", "s", "z", "b", "s", "wz", "", "s", "z"], ["y"], domain="com.microsoft", transB=1),
    ]
    graph = helper.make_graph(nodes, "q", [helper.make_tensor_value_info("x", U8, [4, 16, 32, 32])],
                              [helper.make_tensor_value_info("y", U8, [64, 64])], [scale, zp, wz, w1, w2, b, shape])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)], ir_version=8)
    onnx.save(model, str(path))
    return path


def test_quantized_kernels_in_a_real_session(tmp_path: Path) -> None:
    # The replay (tensors, every kernel's scratch, the symmetric filter's prepacked chunk) gives
    # onnxruntime's in-use high-water mark byte for byte, on this machine's MLAS choices.
    path = _quant_model(tmp_path / "quant.onnx")
    result = graphmem.analyze(path)
    profile = scratch_profile(result)
    assert profile.unmodelled == ()
    run = measure(str(path), make_feeds(onnx.load(str(path)), {}, seed=0), graph_opt="none", threads=1, runs=1).runs[0]
    assert result.activations.peak_bytes == run.requested_peak
    assert max(profile.peak_bytes, profile.prepack_high_bytes) == run.in_use_peak_bytes
    assert list(profile.in_use) == [n.in_use - run.primary.in_use_session_baseline for n in run.nodes]


def test_qlinear_conv_channels_last_symmetric_indirection_per_image() -> None:
    # qlinearconv.cc: a symmetric channels-last convolution runs the whole batch in one parallel
    # section (parallel_batch), so its indirection buffer holds every image's pointers:
    # 8 B x 9 taps x 3,136 pixels x 4 images = 903,168 B. The depthwise filter (32 groups, 16-
    # aligned) is packed at PrePack: 32 x 9 = 288 B kept.
    got, prepack = qconv((4, 56, 56, 32), (32, 1, 3, 3), (4, 56, 56, 32), group=32, pads=[1, 1, 1, 1],
                         domain="com.microsoft", channels_last=1)
    assert got == KernelScratch(after=(903168,))
    assert prepack == ((288, True),)
    # Channels first loops over the images: one image's transposes and indirection, as at batch 1.
    got, _ = qconv((2, 64, 56, 56), (64, 64, 3, 3), (2, 64, 56, 56), pads=[1, 1, 1, 1])
    assert got == KernelScratch(after=(200704, 200704, 225792))


def _qdq_conv_then_gemm(path: Path) -> Path:
    """QDQ Conv 16 -> 64 (1x1, 128x128) -> GlobalAveragePool -> Flatten -> QDQ Gemm 64 -> 20,480
    (transB): at graph-opt all onnxruntime fuses a QGemm and a QLinearConv that its layout
    transformer then makes channels-last."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(np.array(128, np.uint8), "z"),
             numpy_helper.from_array(np.array(0, np.int8), "wz"),
             numpy_helper.from_array(rng.integers(-8, 8, (64, 16, 1, 1)).astype(np.int8), "w"),
             numpy_helper.from_array(rng.integers(-8, 8, (20480, 64)).astype(np.int8), "b")]

    def qdq(a: str, b: str) -> list[onnx.NodeProto]:
        return [helper.make_node("QuantizeLinear", [a, "s", "z"], [a + "q"]), helper.make_node("DequantizeLinear", [a + "q", "s", "z"], [b])]

    nodes = [*qdq("x", "xd"), helper.make_node("DequantizeLinear", ["w", "s", "wz"], ["wd"]),
             helper.make_node("Conv", ["xd", "wd"], ["c"]), *qdq("c", "cd"),
             helper.make_node("GlobalAveragePool", ["cd"], ["p"]), *qdq("p", "pd"),
             helper.make_node("Flatten", ["pd"], ["f"]), *qdq("f", "fd"),
             helper.make_node("DequantizeLinear", ["b", "s", "wz"], ["bd"]),
             helper.make_node("Gemm", ["fd", "bd"], ["g"], transB=1), *qdq("g", "y")]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", F, [1, 16, 128, 128])],
                              [helper.make_tensor_value_info("y", F, [1, 20480])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    return path


def test_prepack_in_node_index_order_at_graph_opt_all(tmp_path: Path) -> None:
    # session_state.cc prepacks in NodeIndex order: the fused QGemm (made before the layout
    # transformer ran) before the channels-last QLinearConv, although the written graph runs the
    # convolution first. QGemm transposes B into a temporary 20,480 x 64 = 1,310,720 B: the arena's
    # first region grows to 2 MiB for it, takes it whole and frees it; the filter's 1,024 B pack
    # (64 x 16) then sits at the region's start (baseline 1,024; the PrePack high 2,096,128 above it).
    # Run 1: QuantizeLinear 262,144 B, Transpose 262,144 B (in use 524,288), the QuantizeLinear's
    # chunk freed; the convolution's 1,048,576 B output takes the 1,571,840 B remainder whole
    # (less than twice the request): 262,144 + 1,571,840 = 1,833,984. (In the written order the
    # filter would sit in a 1 MiB region, the temporary in a 2 MiB one, and the output would split
    # it: 1,310,720.)
    path = _qdq_conv_then_gemm(tmp_path / "qdq.onnx")
    result = analyze_graph_opt(path, "all")
    profile = scratch_profile(result)
    assert (profile.baseline_bytes, profile.prepack_high_bytes, profile.in_use[:3]) == (1024, 2096128, (262144, 524288, 1833984))
    run = measure(str(path), make_feeds(onnx.load(str(path)), {}, seed=0), graph_opt="all", threads=1, runs=1).runs[0]
    assert list(profile.in_use) == [n.in_use - run.primary.in_use_session_baseline for n in run.nodes]
    assert max(profile.peak_bytes, profile.prepack_high_bytes) == run.in_use_peak_bytes


def test_node_stages_of_a_written_graph() -> None:
    # A node of the user's file keeps stage 0 (even nameless), a fusion's node is 1, a
    # com.microsoft channels-last node (the layout transformer's) 2; keyed by first output.
    original = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]), helper.make_node("Gemm", ["a", "b"], ["g"])]
    written = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
               helper.make_node("QGemm", ["a"], ["g"], domain="com.microsoft"),
               helper.make_node("QLinearConv", ["c"], ["y"], domain="com.microsoft", channels_last=1)]
    assert node_stages(written, original) == {"xq": 0, "g": 1, "y": 2}


def test_prepack_order_follows_stages_then_name_tokens(tmp_path: Path) -> None:
    # NodeIndex order: the file's own nodes (stage 0) first, then a pass's nodes in the order
    # Graph::GenerateNodeName numbered them (_token_N), not the written (execution) order.
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="conv_token_5"), helper.make_node("Relu", ["a"], ["b"], name="down_token_2"),
             helper.make_node("Relu", ["b"], ["c"], name="gemm")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [4])], [helper.make_tensor_value_info("c", F, [4])])
    path = tmp_path / "chain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    g = build_graph(replace(load_model(path), node_stage={"a": 2, "b": 2, "c": 1}))
    assert [g.node(n).name for n in prepack_order(g)] == ["gemm", "down_token_2", "conv_token_5"]
