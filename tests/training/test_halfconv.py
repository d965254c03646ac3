"""Autocast (bf16/f16) convolution backward temporaries: graphmem.training.kernels.halfconv, on the
oneDNN v3.12 kernels of an AMX-BF16 + AVX512-FP16 CPU: the pinned host (builders.PINNED_HOST:
2 threads, 2 physical cores, 2 MiB of L2 per core), passed to every rule, so the figures do not
depend on the machine running the tests."""

from __future__ import annotations

from dataclasses import replace

from onnx import TensorProto, helper

from builders import AVX2_HOST, PINNED_HOST
from graphmem.model.types import TensorType
from graphmem.training.kernels import backward_temporaries as temporaries
from graphmem.training.kernels import halfconv
from graphmem.training.saved import OpView

BF16, F16 = TensorProto.BFLOAT16, TensorProto.FLOAT16
HOST = PINNED_HOST


def backward_temporaries(op: OpView) -> int:
    return temporaries(op, HOST)


def _conv(dtype, w, x, y, *, group=1, nhwc=False, grads=("x", "W", "B"), **attrs) -> OpView:  # type: ignore[no-untyped-def]
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], name="c", group=group, **attrs)
    t = lambda shape: TensorType(dtype=dtype, shape=tuple(shape))  # noqa: E731
    types = {"x": t(x), "W": t(w), "B": t((w[0],)), "y": t(y)}
    return OpView(op_type="Conv", node=node, inputs=("x", "W", "B"), outputs=("y",), types=types,
                  needs_grad=frozenset(grads), weights=frozenset({"W", "B"}),
                  orders={"x": (0, 2, 3, 1)} if nhwc else {})


def test_bf16_depthwise_7x7_channels_last_weight_gradient() -> None:
    # ConvNeXt-T stage 4: 768 groups, 7x7 pad 3 on 7x7, 2 threads (< groups: nthr_mb = 1).
    # tr_pad = rnd_up(max(3, 3 + 1), 2) = 4, tr_iw = rnd_up(7 + 4, 2) = 12, tr_ow = 8
    #   tr_src  (768 x 12 x 16 x 7 + 4) x 2 = 2064392 (+128)
    #   tr_ddst  768 x 8 x 16 x 7 x 2      = 1376256 (+128)
    #   f32 reduction (768 x 256 x 49 + 768 x 16) x 4 = 38584320 (+128); barrier 4096 + 4096
    op = _conv(BF16, (768, 1, 7, 7), (1, 768, 7, 7), (1, 768, 7, 7), group=768, nhwc=True,
               grads=("W", "B"), pads=[3, 3, 3, 3])
    assert halfconv.jit_bf16_weights_scratchpad(op, HOST.torch_threads) == 42033544  # torch 2.13 profiler: 42,033,544
    # ideep's gOIhw16i16o gradient 768 x 256 x 49 x 2 = 19267584 beside the scratchpad, minus the
    # returned weight gradient (75264): measured 61,225,864 beyond the returned gradients
    assert backward_temporaries(op) == 19267584 + 42033544 - 75264
    # more threads than groups: the balance is not followed, named
    small = _conv(BF16, (1, 1, 7, 7), (1, 1, 9, 9), (1, 1, 9, 9), group=1, nhwc=True, grads=("W",), pads=[3, 3, 3, 3])
    assert halfconv.jit_bf16_weights_scratchpad(small, HOST.torch_threads) is None


def test_f16_depthwise_channels_last() -> None:
    # brg_conv_bwd: the weight in aCdeb16c (768 x 16 x 49 x 2 = 1204224) and its batch elements
    # (2 threads x 4120 B + 4096 + 128 = 12464); ref weight gradient: ideep's gradient and bias,
    # their dense copies and the channels-last copy: 2 x 75264 + 1536
    dx = _conv(F16, (768, 1, 7, 7), (1, 768, 7, 7), (1, 768, 7, 7), group=768, nhwc=True, grads=("x",), pads=[3] * 4)
    dw = _conv(F16, (768, 1, 7, 7), (1, 768, 7, 7), (1, 768, 7, 7), group=768, nhwc=True, grads=("W", "B"), pads=[3] * 4)
    assert backward_temporaries(dx) == 1216688  # measured 1,216,688
    assert backward_temporaries(dw) == 152064  # measured 152,064


def test_bf16_dense_contiguous_weight_gradient() -> None:
    # 32 -> 16, 3x3 pad 1 on 128x128, batch 1: tr_iw = 160, tr_ow = 128; balance: nthr_mb = 2;
    # oh_block = 32 (0.8 x 1572864 - 3 x 20480 over 28672 rows: 41, split evenly), ih_block = 34
    #   tr_src (2 x 2 x 160 x 16 x 34 + 32) x 2 = 696384 (+128)
    #   tr_ddst (2 x 1 x 128 x 16 x 32 + 160 x 16) x 2 = 267264 (+128)
    #   f32 reduction (16 x 32 x 9 + 16) x 2 x 4 = 36992 (+128), barrier 8192, tile config 64 + 128,
    #   batch 2 x 205 x 40 = 16400 (+4096), tile buffer 2 x 2 x 4096 (+4096)
    op = _conv(BF16, (16, 32, 3, 3), (1, 32, 128, 128), (1, 16, 128, 128), grads=("W", "B"), pads=[1] * 4)
    assert halfconv.brgemm_bwd_w_scratchpad(op, HOST) == 1050384  # torch 2.13 profiler: 1,050,384
    # nhwc copies of dy (524288) and x (1048576), ideep's OIhw16i16o2i gradient (9216), the
    # scratchpad and the bias (32), minus the returned gradients (9216 + 32): measured 2,623,248
    assert backward_temporaries(op) == 524288 + 1048576 + 9216 + 1050384 + 32 - 9216 - 32


def test_half_contiguous_input_gradient() -> None:
    # the input gradient computed in nhwc, copied out by to_public (nhwc kept) and made
    # contiguous: three copies of dx (1048576 B) at once, minus the returned one
    op = _conv(BF16, (16, 32, 3, 3), (1, 32, 128, 128), (1, 16, 128, 128), grads=("x",), pads=[1] * 4)
    assert backward_temporaries(op) == 2 * 1048576  # measured 2,097,152
    # f16, 16 -> 32 on 64x64: dy' 262144 + W 9216 + dx 131072 + brgemm batch 12464 > 3 x 131072
    op = _conv(F16, (32, 16, 3, 3), (1, 16, 64, 64), (1, 32, 64, 64), grads=("x",), pads=[1] * 4)
    assert backward_temporaries(op) == 262144 + 9216 + 131072 + 12464 - 131072  # measured 283,824


def test_unmodelled_notes() -> None:
    op = _conv(BF16, (16, 32, 3, 3), (1, 32, 128, 128), (1, 16, 128, 128), grads=("x",), pads=[1] * 4)
    assert "AMX brgemm input-gradient scratchpad" in (halfconv.unmodelled_note(op, HOST) or "")
    first = _conv(BF16, (16, 1, 3, 3), (1, 1, 128, 128), (1, 16, 128, 128), grads=("W", "B"), pads=[1] * 4)
    assert "one-channel input" in (halfconv.unmodelled_note(first, HOST) or "")
    assert halfconv.unmodelled_note(_conv(F16, (32, 16, 3, 3), (1, 16, 64, 64), (1, 32, 64, 64), pads=[1] * 4), HOST) is None


def test_other_cpu_falls_back() -> None:
    op = _conv(BF16, (16, 32, 3, 3), (1, 32, 128, 128), (1, 16, 128, 128), grads=("x",), pads=[1] * 4)
    assert halfconv.half_conv_backward(op, HOST) is not None
    assert halfconv.half_conv_backward(op, AVX2_HOST) is None
    assert "lacks AMX-BF16" in (halfconv.unmodelled_note(op, AVX2_HOST) or "")
    # AMX without AVX512-FP16: bf16 still modelled, f16 falls back
    amx_only = replace(HOST, cpu_flags=HOST.cpu_flags - {"avx512_fp16"})
    f16 = _conv(F16, (32, 16, 3, 3), (1, 16, 64, 64), (1, 32, 64, 64), grads=("x",), pads=[1] * 4)
    assert halfconv.half_conv_backward(op, amx_only) is not None and halfconv.half_conv_backward(f16, amx_only) is None


def test_dense_channels_last_weight_gradient() -> None:
    # ConvNeXt-T's first downsample at batch 4, bf16: 96 -> 192, 2x2 stride 2 on 56x56 nhwc.
    # tr_iw = rnd_up(28, 32) x 2 = 64, tr_ow = 28; balance (calc_mem_cost): nthr_mb = 2;
    # rows: input 2 x 64 x 16 x 6 x 2 = 24576, output 2 x 28 x 16 x 12 x 2 = 21504 ->
    # oh_block = 14 (26 split evenly over 28), ih_block = 56
    #   tr_src (2 x 6 x 64 x 16 x 56 + 32) x 2 = 1376320 (+128)
    #   tr_ddst (2 x 12 x 28 x 16 x 14 + 64 x 16) x 2 = 303104 (+128)
    #   f32 reduction (192 x 96 x 4 + 192) x 2 x 4 = 591360 (+128), barrier 8192, tile config 192,
    #   batch 2 x 103 x 40 = 8240 (+4096), tile buffer 16384 (+4096)
    op = _conv(BF16, (192, 96, 2, 2), (4, 96, 56, 56), (4, 192, 28, 28), nhwc=True, grads=("W", "B"), strides=[2, 2])
    assert halfconv.brgemm_bwd_w_scratchpad(op, HOST) == 2312368
    # ATen's channels-last weight copy (147456) + ideep's OIhw16i16o2i gradient (147456) + the
    # scratchpad, minus the returned weight gradient: measured 2,459,824
    assert backward_temporaries(op) == 147456 + 147456 + 2312368 - 147456
    # f16: ref:any, the copy, ideep's gradient and bias, their dense copies, .to(ChannelsLast):
    # 40 -> 80 (not a multiple of 16: no padding), W 25600 B, B 160 B; measured 76,960
    f16 = _conv(F16, (80, 40, 2, 2), (1, 40, 56, 56), (1, 80, 28, 28), nhwc=True, grads=("W", "B"), strides=[2, 2])
    assert backward_temporaries(f16) == 25600 + 2 * 25600 + 160
