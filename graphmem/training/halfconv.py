"""A 2-D convolution's backward temporaries under ``torch.autocast('cpu')`` (bfloat16 or float16
operands), on the oneDNN v3.12 kernels torch 2.13 picks on an AMX/AVX512-FP16 machine.

PyTorch runs every half CPU convolution through oneDNN (``ConvParams::use_mkldnn``: a bf16 or
half input on a CPU that passes ``mkldnn_bf16_device_check``/``mkldnn_fp16_device_check``, whatever
its size). ``ideep`` creates each primitive with ``format_kind::any`` for the data and the
weights, so the primitive's preferred layouts decide the reorders. On this ISA (ONEDNN_VERBOSE on
torch 2.13, and the sources cited below):

* **input gradient, contiguous input**: the brgemm kernels (``brg_conv_bwd``/``brgconv_strided``,
  ``avx512_core_amx`` for bf16, ``avx512_core_fp16`` for f16) take only ``nhwc``
  (``jit_brgemm_conv_bwd_utils.cpp`` ``init_conf``), so ideep reorders the output gradient to
  nhwc, the weight into the kernel's blocks, computes the gradient in nhwc and
  ``mkldnn_to_dense`` copies it out: ``to_public`` reorders it into the dense tensor's buffer *in
  nhwc* (a public format is kept: ``ideep/tensor.hpp`` ``to_public``), and the ``.contiguous()``
  that follows makes a third copy. Only bfloat16 3x3 depthwise convs go to ``jit_uni_dw`` in
  blocked layouts instead (the fp32 rules of :mod:`workspace` hold for them).
* **weight gradient, float16**: no jit kernel (``ref:any``), in the given layouts: ideep's
  gradient and bias, then their dense copies (``mkldnn_to_dense``), plus the channels-last copy
  ``.to(ChannelsLast)`` of ``mkldnn_convolution_backward_weights`` on a channels-last input.
* **weight gradient, bfloat16, dense**: ``brgconv_bwd_w`` (``avx512_core_amx``) on nhwc source and
  output gradient (reordered from a contiguous input) into ``OIhw16i16o2i`` (input channels
  padded to 32, output channels to 16), with its f32 reduction and transpose buffers
  (:func:`unmodelled_note`: not modelled).
* **weight gradient, bfloat16, depthwise with kw > 3** on a channels-last input:
  ``jit_avx512_core_bf16_convolution_bwd_weights`` (``jit_uni_dw`` refuses ``kw > 3``), gradient
  in ``gOIhw16i16o`` (16x16 per group), with the scratchpad of :func:`jit_bf16_weights_scratchpad`.

What the kernels' own scratchpads hold beyond these is named by :func:`unmodelled_note`.
"""

from __future__ import annotations

import functools
import math

from onnx import TensorProto

from graphmem.training.saved import OpView
from graphmem.training.workspace import (
    P4K, SIMD_W, _booked, _depthwise, _rnd_up, _shape, _size, brgemm_bwd_data_scratchpad, torch_threads,
)

__all__ = ["cpu_flags", "half_conv_backward", "half_kernels_known", "jit_bf16_weights_scratchpad", "unmodelled_note"]

HALF = (TensorProto.BFLOAT16, TensorProto.FLOAT16)


@functools.cache
def cpu_flags() -> frozenset[str]:
    """This machine's CPU feature flags (``/proc/cpuinfo``), which oneDNN's ISA dispatch follows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def half_kernels_known(dtype: int) -> bool:
    """Whether the kernels of the module doc are the ones oneDNN picks here: bf16 convolutions on
    ``avx512_core_amx`` (AMX tiles with bf16), f16 on ``avx512_core_fp16``."""
    # oneDNN v3.12 src/cpu/x64/cpu_isa_traits.hpp, mayiuse: avx512_core_amx = amx_tile + amx_int8 + amx_bf16; avx512_core_fp16 = avx512_fp16
    flags = cpu_flags()
    if dtype == TensorProto.BFLOAT16:
        return {"amx_tile", "amx_int8", "amx_bf16"} <= flags
    return dtype == TensorProto.FLOAT16 and "avx512_fp16" in flags


def _half(op: OpView) -> int | None:
    t = op.type(op.input(1)) if len(op.inputs) > 1 else None
    return t.dtype if t is not None and t.dtype in HALF else None


def _covered(op: OpView) -> int | None:
    """The half dtype when :func:`half_conv_backward` models this conv, else None."""
    dtype = _half(op)
    w = _shape(op, op.input(1)) if dtype is not None else None
    if (dtype is None or op.op_type != "Conv" or w is None or len(w) != 4 or _shape(op, op.input(0)) is None
            or _shape(op, op.outputs[0]) is None or not half_kernels_known(dtype)):
        return None
    if dtype == TensorProto.BFLOAT16 and _depthwise(op) and w[-1] <= 3:
        return None  # jit_uni_dw in blocked layouts: workspace's rules
    if op.channels_last(op.input(0)) and not _depthwise(op):
        return None  # dense brgemm on nhwc: workspace's rules
    if (dtype == TensorProto.BFLOAT16 and op.channels_last(op.input(0)) and op.grad(1)
            and jit_bf16_weights_scratchpad(op) is None):
        return None
    return dtype


def jit_bf16_weights_scratchpad(op: OpView, threads: int | None = None) -> int | None:
    """The scratchpad of ``jit_avx512_core_bf16_convolution_bwd_weights`` for a grouped conv on an
    nhwc input with at least as many groups as threads (``balance``: then ``nthr_g = nthr``,
    ``nthr_mb = 1``); None when the kernel refuses the conv or the threads exceed the groups.

    With a global transpose (OpenMP: ``dnnl_thr_syncable``) it books the source transposed per
    group and input-channel block (``tr_iw·16·ih`` bf16, ``tr_iw = rnd_up(⌈iw/stride_w⌉ + tr_pad,
    2)·stride_w``, ``tr_pad = rnd_up(max(l_pad, r_pad + 1), 2)``, plus ``tr_pad`` guard elements),
    the output gradient transposed per group and output-channel block (``rnd_up(ow, 2)·16·oh``
    bf16), one f32 reduction buffer of the 16x16-padded weights and bias (a bf16 gradient is
    reduced in f32 even on one minibatch thread) and one barrier context (4096 B, page-aligned);
    each entry aligned as ``registry_t::book`` does."""
    # oneDNN v3.12 src/cpu/x64/jit_avx512_core_bf16_conv_kernel.cpp, jit_avx512_core_bf16_conv_bwd_weights_kernel_f32_t::init_conf and init_scratchpad
    x, w, y = _shape(op, op.input(0)), _shape(op, op.input(1)), _shape(op, op.outputs[0])
    groups = op.attr("group", 1)
    threads = threads or torch_threads()
    if x is None or w is None or y is None or len(w) != 4 or groups < threads:
        return None
    (kh, kw), (ih, iw), (oh, ow) = w[2:], x[2:], y[2:]
    sh, sw = op.attr("strides", [1, 1])
    t, l = op.attr("pads", [0, 0, 0, 0])[:2]
    if any(d != 1 for d in op.attr("dilations", ())):
        return None
    r = max(0, (ow - 1) * sw + kw - (iw + l))  # calculate_end_padding
    b = max(0, (oh - 1) * sh + kh - (ih + t))
    # init_conf: boundaries_ok and kw <= max_kw (14; the 1st-conv case needs one group)
    if not (l < kw and r < kw and t <= kh // 2 and b <= kh // 2 and kw <= 14):
        return None
    nb_ic, nb_oc = -(-w[1] // SIMD_W), -(-(w[0] // groups) // SIMD_W)
    tr_pad = _rnd_up(max(l, r + 1), 2)
    tr_iw = _rnd_up(-(-iw // sw) + tr_pad, 2) * sw
    tr_ow = _rnd_up(ow, 2)
    tr_src = (groups * nb_ic * tr_iw * SIMD_W * ih + tr_pad) * 2  # key_conv_tr_src, typesize_in 2
    tr_diff_dst = groups * nb_oc * tr_ow * SIMD_W * oh * 2  # key_conv_tr_diff_dst
    weights = groups * nb_oc * SIMD_W * nb_ic * SIMD_W * kh * kw
    bias = groups * nb_oc * SIMD_W if op.grad(2) else 0
    reduction = (weights + bias) * 4  # key_conv_wei_bia_reduction: num_wei_buffers = nthr_mb = 1 (bf16)
    barrier = _booked(4096, P4K)  # key_conv_wei_bia_reduction_bctx: one simple_barrier::ctx_t (alignas 4096)
    return _booked(tr_src, 128) + _booked(tr_diff_dst, 128) + _booked(reduction, 128) + barrier


def _depthwise_weight_blocks(op: OpView, dtype: int) -> int:
    """The input gradient's reordered depthwise weight: ``aCdeb16c`` (f16) or ``aCdeB16c2b`` (bf16):
    each group's single input channel padded to 16 (and, bf16, its output channel to the vnni 2)."""
    w = _shape(op, op.input(1))
    assert w is not None
    return _size(op, op.input(1)) * SIMD_W * (2 if dtype == TensorProto.BFLOAT16 else 1)


def half_conv_backward(op: OpView) -> int | None:
    """Bytes the backward holds beyond the gradients it returns (see the module doc); None when
    the conv is not one of the cases modelled here (``workspace``'s rules apply)."""
    dtype = _covered(op)
    if dtype is None:
        return None
    bf16 = dtype == TensorProto.BFLOAT16
    weight = _size(op, op.input(1))
    gi = _size(op, op.input(0)) if op.grad(0) else 0
    gw = weight if op.grad(1) else 0
    gb = _size(op, op.input(2)) if op.grad(2) and len(op.inputs) > 2 and op.input(2) else 0
    if op.channels_last(op.input(0)):  # depthwise (dense nhwc is workspace's)
        w = _shape(op, op.input(1))
        assert w is not None
        if bf16:  # jit_uni_dw's input gradient: the weight in Abcde16a, groups padded to 16
            data = _rnd_up(w[0], SIMD_W) * math.prod(w[1:]) * 2 if gi else 0
        else:  # brg_conv_bwd on nhwc: the padded weight and the brgemm scratchpad
            data = _depthwise_weight_blocks(op, dtype) + brgemm_bwd_data_scratchpad(op) if gi else 0
        if not (gw or gb):
            return data
        if bf16:
            padded = w[0] * SIMD_W * SIMD_W * math.prod(w[2:]) * 2  # gOIhw16i16o, ideep's gradient
            scratch = jit_bf16_weights_scratchpad(op) or 0
            # running: ideep's gradient, the scratchpad, ideep's bias; then the dense copies
            # (bias, weight) and the channels-last copy of the weight
            return max(data, padded + scratch + gb - gw - gb, padded + gw + gb)
        # ref: ideep's gradient and bias, their dense copies, the channels-last weight copy
        return max(data, 2 * gw + gb)
    # contiguous input: the input gradient in nhwc, copied out and made contiguous
    dy = _size(op, op.outputs[0])
    w_blocks = _depthwise_weight_blocks(op, dtype) if _depthwise(op) else weight
    scratch = 0 if bf16 else brgemm_bwd_data_scratchpad(op)  # bf16 AMX: unmodelled_note
    data = max(dy + w_blocks + gi + scratch, 3 * gi) if gi else 0
    if not bf16 or _depthwise(op):
        # f16: ref:any in the given layouts; bf16 depthwise (kw > 3): gemm in plain layouts,
        # its im2col scratchpad unmodelled: ideep's gradients, then their dense copies
        filt = 2 * gw + 2 * gb
    else:
        w = _shape(op, op.input(1))
        assert w is not None
        x = _size(op, op.input(0))
        blocked = _rnd_up(w[0], SIMD_W) * _rnd_up(w[1], 2 * SIMD_W) * math.prod(w[2:]) * 2  # OIhw16i16o2i
        # nhwc copies of the output gradient and the source beside ideep's gradient and bias;
        # then the gradient's dense copy and the bias's
        filt = max(dy + x + blocked + gb, blocked + gw + 2 * gb) if gw or gb else 0
    return max(data, gi + filt, gi + gw + gb) - gi - gw - gb


def unmodelled_note(op: OpView) -> str | None:
    """What :func:`half_conv_backward` leaves out for this conv, as a warning line."""
    dtype = _half(op)
    if dtype is None or op.op_type not in ("Conv", "ConvTranspose") or not (op.grad(0) or op.grad(1)):
        return None
    name = op.node.name or op.op_type
    kind = "bfloat16" if dtype == TensorProto.BFLOAT16 else "float16"
    if not half_kernels_known(dtype):
        return (f"{op.op_type} '{name}' in {kind} (autocast): this CPU lacks "
                f"{'AMX-BF16' if kind == 'bfloat16' else 'AVX512-FP16'}, so oneDNN picks other kernels than "
                "the modelled ones; its backward temporaries follow the fp32 layouts")
    if op.op_type == "ConvTranspose":
        return (f"ConvTranspose '{name}' in {kind} (autocast): its backward's reorders and scratchpads "
                "are not modelled (counted as the fp32 kernels')")
    if _covered(op) is None:
        w = _shape(op, op.input(1))
        if dtype == TensorProto.BFLOAT16 and _depthwise(op) and w is not None and w[-1] > 3:
            return (f"Conv '{name}' in bfloat16 (autocast): the jit_bf16 depthwise weight-gradient "
                    "scratchpad with fewer groups than threads (or a refused shape) is not modelled")
        return None
    notes = []
    if dtype == TensorProto.BFLOAT16 and not op.channels_last(op.input(0)):
        if op.grad(0):
            notes.append("the AMX brgemm input-gradient scratchpad (measured: 0.16 to 0.56 MB)")
        if op.grad(1):
            notes.append("the weight gradient's f32 reduction and transpose buffers (brgconv_bwd_w, or "
                         "gemm im2col for a depthwise conv; measured: up to 1.0 MB on a 32x128x128 input)")
    if not notes:
        return None
    return f"Conv '{name}' in {kind} (autocast): not modelled: " + "; ".join(notes)
