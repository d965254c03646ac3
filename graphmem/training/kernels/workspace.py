"""Kernel temporaries: bytes a PyTorch CPU kernel allocates beyond its outputs and frees before
it returns, forward and backward. One table keyed by ``(domain, op_type)``; ops not in it make
none (most elementwise and reduction kernels write straight into their outputs).

These follow PyTorch 2.13 on CPU with oneDNN, more than one thread, fp32, as traced with
``torch.profiler(profile_memory=True)`` (``scripts/train_check.py``):

* **Conv**, oneDNN path (``aten::mkldnn_convolution``): the weight is reordered into a blocked
  layout on every call, and so is the input when its channels are a multiple of the block (8);
  the result is computed into a blocked buffer (``aBcd16b``: channels padded to 16) and copied out.
  Backward computes the input gradient from reordered output gradient and weight into a blocked
  buffer, then the weight gradient from reordered output gradient and input into another: each
  blocked result lives while it is copied out.
* **Conv**, native path (``thnn_conv2d``, chosen by ``ConvParams::use_mkldnn`` in
  ``aten/src/ATen/native/Convolution.cpp`` for a single small image with few channels): an
  im2col buffer of ``C_in·kh·kw × H_out·W_out`` per image, forward and backward.
* **Conv** on a channels-last input (:func:`~graphmem.training.patterns.memory_orders`: ConvNeXt's
  permutes make the residual stream channels-last): oneDNN works in nhwc, so only the weight is
  reordered, beside ATen's channels-last copy of a dense weight; the weight gradient is computed
  in oneDNN's ``gOIhw16i16o`` layout, each group padded to 16x16 (256x the weight of a depthwise
  conv whose ``kw > 3``: ``jit_uni_dw`` refuses those). The dense input gradient's brgemm
  scratchpad (:func:`brgemm_bwd_data_scratchpad`) is per thread: the host's ``torch_threads``. Sources in
  :func:`_nhwc_backward`; a 3x3 depthwise weight gradient (``jit_uni_dw``) books per-thread
  reduction buffers, :func:`jit_dw_weights_scratchpad`.
* **Mul/Div** backward: a broadcast operand's gradient at the output's size, before the engine
  sums it down (``engine.cpp`` ``validate_outputs``).
* **LayerNormalization** on a non-contiguous (permuted) input: a contiguous copy, forward and
  backward (``layer_norm.cpp``, ``expect_contiguous``).
* **ReduceMean** of a float16/bfloat16 tensor (autocast): an fp32 result and an fp32 copy of
  the input while it sums (``ReduceOps.cpp``, ``mean_out``).
* **ConvTranspose** (oneDNN): the blocked result, the output and a contiguous clone of it:
  two outputs beyond the output; backward as Conv.
* **LSTM** (``mkldnn_rnn_layer``, per direction): both weight matrices re-laid with a padded
  leading dimension, oneDNN's scratchpad (the gates of every step, page-aligned,
  :func:`lstm_scratchpad_bytes`) and the summed bias; backward: each weight gradient in oneDNN's
  layout and in PyTorch's, the scratchpad. In bf16 (autocast) oneDNN runs its brgemm RNN instead:
  blocked bf16 weights and its own scratchpads (:mod:`graphmem.training.kernels.onednn_rnn`), and the
  backward makes every gradient in f32 first.
* **GRU** (op by op, ``RNN.cpp``): the input gates of every step, computed at once; backward:
  the engine's buffer summing the recurrent weight's per-step gradients (the second added out of
  place), then the input gates' gradients stacked. Under autocast the gates are half and every step's output
  waits for the stack (no full-precision state is saved).

What is known and not modelled is named by the notes (:func:`rnn_note`, :func:`conv_note`,
:func:`ic_padding_note`: the estimate's ``warnings``). Every rule takes the op and the host
profile (:mod:`graphmem.host`: threads, cores, CPU flags, L2) and reads the machine only through
it; the table that maps ops to these rules is :data:`graphmem.training.kernels.KERNELS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from onnx import TensorProto

from graphmem.host import HostProfile
from graphmem.model.program import tensor_size
from graphmem.model.types import is_concrete
from graphmem.training.autocast import CAST_MARK, is_cast
from graphmem.training.kernels.onednn_rnn import has_brgemm_bf16, lstm_bf16_scratchpad, lstm_bf16_weights
from graphmem.training.saved import OpView, good_ld, lstm_workspace_bytes

__all__ = [
    "brgemm_bwd_data_scratchpad", "conv_uses_onednn", "jit_dw_threads", "jit_dw_weights_scratchpad",
    "lstm_scratchpad_bytes", "conv_forward", "conv_backward", "conv_transpose_forward", "lstm_forward",
    "lstm_backward", "gru_forward", "gru_backward", "broadcast_grads", "layer_norm_copy", "half_mean_copies",
    "no_temporaries", "rnn_note", "conv_note", "ic_padding_note", "Temp", "Note",
]

#: A kernel rule: bytes beyond the op's outputs (or returned gradients) on a host.
Temp = Callable[[OpView, HostProfile], int]
#: What a kernel's figures leave out on a host, as a warning line (None: nothing known).
Note = Callable[[OpView, HostProfile], "str | None"]

#: channels an input must be a multiple of for ATen to reorder it into oneDNN's blocked layout
#: (measured on AVX-512; fewer channels go to oneDNN's first-convolution kernels in plain layout).
BLOCK = 8

#: fp32 lanes of oneDNN's avx512_core kernels (``jcp.simd_w``): the channel block of blocked
#: results and the padding of channels-last weights
SIMD_W = 16


def _size(op: OpView, name: str) -> int:
    return tensor_size(op.type(name)) or 0


def _shape(op: OpView, name: str) -> tuple[int, ...] | None:
    t = op.type(name)
    if t is None or not is_concrete(t.shape):
        return None
    return t.shape


def conv_uses_onednn(op: OpView) -> bool:
    """``ConvParams::use_mkldnn`` for fp32 CPU tensors with more than one thread."""
    x, w = _shape(op, op.input(0)), _shape(op, op.input(1))
    if x is None or w is None or len(x) < 3:
        return True
    groups = op.attr("group", 1)
    big_kernel = len(w) >= 4 and w[-1] > 3 and w[-2] > 3
    return groups > 1 or big_kernel or x[0] > 1 or math.prod(x) > 20480


def _reordered(op: OpView, name: str) -> int:
    """Bytes of a blocked copy of an input: made only when its channels fill whole blocks."""
    shape = _shape(op, name)
    return _size(op, name) if shape is not None and len(shape) > 1 and shape[1] % BLOCK == 0 else 0


def _blocked(op: OpView, name: str) -> int:
    """Bytes of a result computed in the blocked layout: an ungrouped conv's channels padded to
    whole ``SIMD_W`` blocks, ``aBcd16b`` (a 1-channel result takes 16 channels' bytes;
    ONEDNN_VERBOSE shows ``dst:f32:ap:blocked:aBcd16b`` for ``oc1`` and ``oc24``). A grouped
    conv is not padded (``ok_to_pad_channels`` needs one group; it tries 8- and 4-wide blocks
    instead): kept at the old whole-``BLOCK`` figure, measured."""
    # oneDNN v3.12 src/cpu/x64/jit_avx512_common_conv_kernel.cpp, jit_avx512_common_conv_fwd_kernel::init_conf:
    # ok_to_pad_channels = ngroups == 1; oc = rnd_up(oc, simd_w)
    shape, size = _shape(op, name), _size(op, name)
    if shape is None or len(shape) < 2 or not shape[1]:
        return size
    block = SIMD_W if op.attr("group", 1) == 1 else BLOCK
    return size // shape[1] * _rnd_up(shape[1], block)


def _columns(op: OpView) -> int:
    """im2col buffer of the native convolution: C_in·kh·kw per output position, per image."""
    x, w, y = _shape(op, op.input(0)), _shape(op, op.input(1)), _shape(op, op.outputs[0])
    if x is None or w is None or y is None:
        return 0
    elem = _size(op, op.outputs[0]) // max(math.prod(y), 1)
    return x[0] * w[1] * math.prod(w[2:]) * math.prod(y[2:]) * elem


def _depthwise(op: OpView) -> bool:
    w = _shape(op, op.input(1))
    return w is not None and len(w) > 1 and w[1] == 1 and op.attr("group", 1) == w[0] > 1


def _rnd_up(n: int, m: int) -> int:
    return -(-n // m) * m


def _elem_of(op: OpView, name: str) -> int:
    shape = _shape(op, name)
    return _size(op, name) // max(math.prod(shape), 1) if shape else 4


def _elem(op: OpView) -> int:
    shape = _shape(op, op.input(1))
    return _size(op, op.input(1)) // max(math.prod(shape), 1) if shape else 4


def _channels_last_weight_copy(op: OpView) -> int:
    """ATen's ``weight_t.contiguous(memory_format)`` on the channels-last path (``Conv.cpp``
    ``_mkldnn_convolution_out`` and ``mkldnn_convolution_backward``): a copy of the
    ``[O, I/g, kh, kw]`` weight unless it already is channels-last, i.e. ``I/g == 1`` (depthwise)
    or a 1x1 kernel; forward it lives for the call, backward for both gradients."""
    w = _shape(op, op.input(1))
    if w is None or len(w) < 3 or w[1] == 1 or math.prod(w[2:]) == 1:
        return 0
    return _size(op, op.input(1))


def _padded_weight_grad(op: OpView) -> int:
    """The weight gradient in oneDNN's layout, ``gOIhw16i16o``: each group's ``O/g x I/g`` padded
    to ``SIMD_W x SIMD_W``; ideep allocates it (``convolution_backward_weights::compute_impl``)
    and ATen keeps it until ``mkldnn_convolution_backward_weights`` returns."""
    # oneDNN v3.12 src/cpu/x64/jit_avx512_common_conv_kernel.cpp,
    # jit_avx512_common_conv_bwd_weights_kernel_f32_t::init_conf
    w = _shape(op, op.input(1))
    if w is None or len(w) < 3:
        return _size(op, op.input(1))
    groups = op.attr("group", 1)
    return (groups * _rnd_up(w[0] // groups, SIMD_W) * _rnd_up(w[1], SIMD_W) * math.prod(w[2:])
            * _elem(op))



#: oneDNN's page (``P4K``): the alignment of every brgemm scratchpad entry and the rounding of its
#: per-thread buffers
P4K = 4096
#: ``sizeof(brgemm_batch_element_t)`` on x86-64: two pointers, two ``dim_t`` paddings and one ``dim_t``
BATCH_ELEMENT = 40


def _booked(nbytes: int, alignment: int = P4K) -> int:
    """What ``registry_t::book`` adds for one entry: its bytes plus its alignment (at least 128)."""
    # oneDNN v3.12 src/common/memory_tracking.hpp, registry_t::book: capacity = size + get_alignment(max(data_align,
    # perf_align))
    return nbytes + max(alignment, 128) if nbytes else 0


def _batch_elements(threads: int, kernel_volume: int) -> int:
    """``key_brgemm_primitive_batch``: per thread, the batch of one brgemm call (at most the kernel's
    volume) in ``brgemm_batch_element_t``, rounded up to whole pages."""
    # oneDNN v3.12 src/cpu/x64/jit_brgemm_conv_bwd_utils.cpp, init_conf: adjusted_batch_size =
    # div_up(rnd_up(gemm_batch_size * sc_size, P4K), sc_size)
    per_thread = -(-_rnd_up(kernel_volume * BATCH_ELEMENT, P4K) // BATCH_ELEMENT) * BATCH_ELEMENT
    return _booked(threads * per_thread)


def _dilated(op: OpView) -> bool:
    return any(d != 1 for d in op.attr("dilations", ()))


def brgemm_bwd_data_scratchpad(op: OpView, threads: int) -> int:
    """oneDNN's scratchpad for a dense (not depthwise) convolution's input gradient on nhwc
    tensors, fp32 on avx512_core (AVX-512 without AMX for fp32), which ideep allocates as a tensor
    for the call (``attr-scratchpad:user``); ``threads``: PyTorch's (the host's ``torch_threads``).

    * **stride 1**: ``brg_conv_bwd`` runs the forward brgemm conv on the inverted problem
      (``jit_brgemm_conv_bwd.cpp``) and books its registry nested (+128); that forward, in
      ``exec_base``/``exec_vpad`` with ``brgemm_addr``, books only the batch elements.
    * **stride > 1**: ``brgconv_strided`` books per thread the output gradient copied with its
      overflow rows and columns (``odp·ohp·owp·C_out`` elements rounded up to a page), one mask
      byte per input block and group (counted as one page: the blocks follow oneDNN's
      cache-driven ``ih_block``/``iw_block``, and over 4096 of them would take rows of a few
      pixels; measured one page on 80x80 and 112x112 inputs), the batch elements and, when the input width is not
      a multiple of the stride (``exec_trans``), an output row buffer of ``iw_block·stride_w·C_in``
      (upper bound ``iw_block`` = the whole padded row). Every entry is aligned to a page.

    The minibatch does not enter: the buffers are per thread. None for a dilated conv (brgemm
    refuses dilation; another kernel runs) or a ConvTranspose (its input gradient is a forward
    conv): both named by :func:`conv_note`."""
    x, w, y = _shape(op, op.input(0)), _shape(op, op.input(1)), _shape(op, op.outputs[0])
    if op.op_type != "Conv" or x is None or w is None or y is None or len(x) < 3 or len(x) != len(y):
        return 0
    spatial = len(x) - 2
    if _dilated(op):
        return 0
    strides = list(op.attr("strides", [1] * spatial))
    pads = list(op.attr("pads", [0] * 2 * spatial))
    kernel = w[2:]
    groups = op.attr("group", 1)
    if all(s == 1 for s in strides):
        # oneDNN v3.12 src/cpu/x64/jit_brgemm_conv_bwd.cpp, pd_t::init: scratchpad.book(key_nested,
        # fwd_pd_->scratchpad_registry())
        # oneDNN v3.12 src/cpu/x64/jit_brgemm_conv_utils.cpp, init_scratchpad: only key_brgemm_primitive_batch
        # (uses_batch_elements)
        return _booked(_batch_elements(threads, math.prod(kernel)), 128)
    # oneDNN v3.12 src/cpu/x64/jit_brgemm_conv_bwd_utils.cpp, init_conf: l_ovf/r_ovf/t_ovf/b_ovf; odp/ohp/owp = o + both
    # overflows
    padded = 1
    for k, (i, o, s, pad) in enumerate(zip(x[2:], y[2:], strides, pads)):
        end = (o - 1) * s + kernel[k] - (i + pad)  # calculate_end_padding
        padded *= o + max(0, kernel[k] - 1 - pad) // s + max(0, kernel[k] - 1 - end) // s
    dy_elem = _size(op, op.outputs[0]) // max(math.prod(y), 1)
    dx_elem = _size(op, op.input(0)) // max(math.prod(x), 1)
    # oneDNN v3.12 src/cpu/x64/jit_brgemm_conv_bwd_utils.cpp, init_conf: inp_buffer_size =
    # rnd_up(odp*ohp*owp*ngroups*nb_oc*oc_block, P4K); oc_block = oc for f32 (vnni_block 1)
    total = _booked(threads * _rnd_up(padded * y[1], P4K) * dy_elem)
    # init_conf: inp_buffer_mask_size = rnd_up(nb_id*nb_ih*nb_iw*ngroups*nb_oc, P4K): one page while the blocks are <=
    # 4096
    total += _booked(threads * _rnd_up(groups, P4K))
    total += _batch_elements(threads, math.prod(kernel))
    if x[-1] % strides[-1]:  # has_uneven_iw: exec_trans
        # init_conf: out_buffer_size = rnd_up(iw_block * stride_w * ic_without_padding, P4K); iw_block <= sp =
        # rnd_up(iw, stride_w)
        total += _booked(threads * _rnd_up(_rnd_up(x[-1], strides[-1]) * strides[-1] * x[1], P4K) * dx_elem)
    return total


def _jit_dw_weights(op: OpView) -> bool:
    """Whether ``jit_uni_dw``'s weight-gradient kernel takes this depthwise conv: 2-D, undilated,
    ``kw <= 3``, ``stride_w <= kw``, each pad at most half the kernel, a pad above 1 a multiple
    of the stride, and the input at least as tall as the kernel."""
    # oneDNN v3.12 src/cpu/x64/jit_uni_dw_conv_kernel_utils.cpp, jit_uni_dw_conv_bwd_weights_kernel_t::init_conf: the
    # VDISPATCH checks and boundaries_ok
    x, w, y = _shape(op, op.input(0)), _shape(op, op.input(1)), _shape(op, op.outputs[0])
    if x is None or w is None or y is None or len(x) != 4 or len(y) != 4 or _dilated(op):
        return False
    (sh, sw), (kh, kw) = op.attr("strides", [1, 1]), w[2:]
    t, l, b, r = op.attr("pads", [0, 0, 0, 0])
    b, r = (max(0, (o - 1) * s + k - (i + p)) for o, s, k, i, p in ((y[2], sh, kh, x[2], t), (y[3], sw, kw, x[3], l)))
    return (kw <= 3 and sw <= kw and max(t, b) <= kh // 2 and max(l, r) <= kw // 2 and x[2] >= kh + (-t % sh)
            and (t <= 1 or t % sh == 0) and (b <= 1 or b % sh == 0)
            and y[2] == (x[2] + t + b - kh) // sh + 1 and y[3] == (x[3] + l + r - kw) // sw + 1)


def jit_dw_threads(op: OpView, threads: int) -> int:
    """The threads ``jit_uni_dw``'s nhwc weight gradient splits its work over (``nthr_g · nthr_mb
    · nthr_oh``), searched as ``partition_nthr_nxc`` does (prioritize_threading): the most threads
    used, then the least imbalance, over channel blocks of 16 (4 per kernel call), minibatch and
    output-row blocks; in float32 like the C++."""
    # oneDNN v3.12 src/cpu/x64/jit_uni_dw_conv_kernel_utils.cpp,
    # jit_uni_dw_conv_bwd_weights_kernel_t::partition_nthr_nxc
    x, w, y = _shape(op, op.input(0)), _shape(op, op.input(1)), _shape(op, op.outputs[0])
    if x is None or w is None or y is None:
        return threads
    f32 = np.float32
    nb_ch = -(-w[0] // SIMD_W)
    ch_blocks = -(-nb_ch // min(nb_ch, 4, 31 // (2 * w[3])))  # nb_ch_blocking: is_fast_depthwise unroll 4
    mb, oh = x[0], y[2]
    best_eff, best_imbalance, best = f32(0), f32(1), 1
    for g in range(min(ch_blocks, threads), 0, -1):
        per_g = threads // g
        for m in range(min(mb, per_g), 0, -1):
            avail_oh, under = min(oh, per_g // m), False
            for oh_block in range(oh, 0, -1):
                n_oh = min(avail_oh, -(-oh // oh_block))
                eff = f32(g * m * n_oh) / f32(threads)
                if under and avail_oh < -(-oh // oh_block):
                    break
                imb_g = f32(abs(-(-ch_blocks // g) * g - ch_blocks)) / f32(ch_blocks)
                imb_mb = f32(abs(-(-mb // m) * m - mb)) / f32(mb)
                imb_oh = f32(abs(oh_block * n_oh - oh)) / f32(oh)
                imbalance = imb_g * f32(mb * oh) + imb_mb * f32(ch_blocks * oh) + imb_oh * f32(ch_blocks * mb)
                if best_eff <= eff and not (best_eff == eff and best_imbalance <= imbalance):
                    best_eff, best_imbalance, best = eff, imbalance, g * m * n_oh
                under = oh_block * n_oh < oh
    return best


def jit_dw_weights_scratchpad(op: OpView, threads: int) -> int:
    """``jit_uni_dw``'s nhwc weight-gradient scratchpad: fp32 reduction buffers, one per thread
    but the first (every thread's for a bfloat16 gradient), of the weight with its groups padded
    to 16 and of the bias (an fp32 gradient on one thread: none)."""
    # oneDNN v3.12 src/cpu/x64/jit_uni_dw_conv_kernel_utils.cpp, jit_uni_dw_conv_bwd_weights_kernel_t::init_scratchpad
    # (harness_nxc): buff_count = nthr - 1
    w, t = _shape(op, op.input(1)), op.type(op.input(1))
    if w is None:
        return 0
    # buff_count = jcp.dwei_dt == bf16 ? nthr : nthr - 1 (a bfloat16 gradient is reduced in f32)
    bf16 = t is not None and t.dtype == TensorProto.BFLOAT16
    extra = jit_dw_threads(op, threads) - (0 if bf16 else 1)
    weights = _booked(extra * _rnd_up(w[0], SIMD_W) * math.prod(w[2:]) * 4, 128)  # book<float>: default alignment
    bias = _booked(extra * w[0] * 4, 128) if op.grad(2) else 0
    return weights + bias


def _nhwc_forward(op: OpView) -> int:
    """oneDNN on a channels-last input: source and result stay nhwc (``Conv.cpp`` note "MKLDNN
    Convolution Memory Formats"); the weight is reordered into the primitive's blocked layout
    (once) beside ATen's channels-last copy of it (none for a depthwise or 1x1 weight)."""
    return _size(op, op.input(1)) + _channels_last_weight_copy(op)


def _nhwc_backward(op: OpView, threads: int) -> int:
    """oneDNN backward on a channels-last input (``Conv.cpp`` ``mkldnn_convolution_backward``),
    beside ATen's channels-last weight copy for both phases:

    * input gradient: the weight reordered into the primitive's layout, plus (dense conv) the
      brgemm kernel's scratchpad, :func:`brgemm_bwd_data_scratchpad`;
    * weight gradient of a depthwise conv with ``kw > 3``: ``jit_uni_dw`` refuses it
      (``jit_uni_dw_conv_bwd_weights_kernel_t::init_conf``, "kw > 3"), so the generic
      ``jit:avx512_core`` runs with the gradient in ``gOIhw16i16o`` — 16x16 per group, 256x the
      weight — beside its dense copy (``mkldnn_to_dense``) and the bias gradient; its minibatch
      reduction buffers exist only with at least as many threads as groups (``balance``; see
      :func:`conv_note`);
    * weight gradient of a dense conv: the padded gradient and its dense copy, as above;
    * weight gradient of a depthwise conv that ``jit_uni_dw`` takes (``kw <= 3``,
      :func:`_jit_dw_weights`): ideep's gradient in ``Abcde16a`` (groups padded to 16) beside,
      first, the kernel's per-thread reduction buffers (:func:`jit_dw_weights_scratchpad`) and
      ideep's bias gradient, then, while it is copied out, the dense copy (``mkldnn_to_dense``)
      and the bias gradient's copy (torch 2.13 profiler, in this order: Abcde16a, scratchpad,
      bias; scratchpad freed; bias, dense weight, the returned weight)."""
    weight, shape = _size(op, op.input(1)), _shape(op, op.input(1))
    copy = _channels_last_weight_copy(op)
    if _depthwise(op) and shape is not None:  # jit_dw's Abcde16a: the groups padded to SIMD_W
        reordered = _rnd_up(shape[0], SIMD_W) * math.prod(shape[1:]) * _elem(op)
    else:  # the reordered weight and the brgemm kernel's scratchpad
        reordered = weight + brgemm_bwd_data_scratchpad(op, threads)
    data = copy + reordered if op.grad(0) else 0
    if not op.grad(1):
        return data
    bias = _size(op, op.input(2)) if op.grad(2) else 0
    if _depthwise(op) and shape is not None and _jit_dw_weights(op):
        # the returned weight and bias gradients are counted by the caller: while the kernel
        # runs, the blocked gradient, the scratchpad and ideep's bias gradient stand for them
        blocked = _rnd_up(shape[0], SIMD_W) * math.prod(shape[1:]) * _elem(op)
        running = blocked + jit_dw_weights_scratchpad(op, threads) - weight
        return max(data, running, blocked + weight + bias)
    return max(data, copy + _padded_weight_grad(op) + weight + bias)


def _half_weight_grad_reduction(op: OpView) -> int:
    """A bfloat16 (autocast) weight gradient of an ungrouped conv is accumulated in f32: oneDNN
    books ``nthr_mb`` f32 buffers of the weights in ``OIhw16i16o`` blocks, at least one (``num_wei_buffers =
    jcp.wei_dt == data_type::bf16 ? jcp.nthr_mb : jcp.nthr_mb - 1``), beside the transposed
    source and output-gradient buffers (not modelled: the autocast warning)."""
    # oneDNN src/cpu/x64/jit_avx512_core_bf16_convolution.cpp, bwd_weights key_conv_wei_bia_reduction
    w, t = _shape(op, op.input(1)), op.type(op.input(1))
    if t is None or t.dtype != TensorProto.BFLOAT16 or w is None or len(w) < 3 or op.attr("group", 1) != 1:
        # float16 (measured: none, as the source's wei_dt == bf16 says); grouped and depthwise
        # convs run other kernels (jit_uni_dw), measured without it
        return 0
    return _rnd_up(w[0], SIMD_W) * _rnd_up(w[1], SIMD_W) * math.prod(w[2:]) * 4


def conv_forward(op: OpView, host: HostProfile) -> int:
    if op.channels_last(op.input(0)):
        return _nhwc_forward(op)
    if not conv_uses_onednn(op):
        return _columns(op)
    out, blocked = _size(op, op.outputs[0]), _blocked(op, op.outputs[0])
    return max(_reordered(op, op.input(0)) + _size(op, op.input(1)) + blocked, blocked + out) - out


def conv_backward(op: OpView, host: HostProfile) -> int:
    if op.channels_last(op.input(0)):
        return _nhwc_backward(op, host.torch_threads)
    if not conv_uses_onednn(op):
        return _columns(op)
    grad_out, x, weight = _reordered(op, op.outputs[0]), _reordered(op, op.input(0)), _size(op, op.input(1))
    gi = _size(op, op.input(0)) if op.grad(0) else 0
    gi_blocked = _blocked(op, op.input(0)) if op.grad(0) else 0
    gw = weight if op.grad(1) else 0
    # input gradient: grad_out' + weight' + blocked result, then the result copied out;
    # weight gradient: grad_out' + input' + blocked result (+ its f32 reduction buffer when it
    # is half), then copied out
    data = max(grad_out + weight + gi_blocked, gi_blocked + gi) if gi else 0
    filt = gi + max(grad_out + x + gw + _half_weight_grad_reduction(op), 2 * gw) if gw else 0
    return max(data, filt, gi + gw) - gi - gw


def conv_transpose_forward(op: OpView, host: HostProfile) -> int:
    return 2 * _size(op, op.outputs[0])


def lstm_scratchpad_bytes(steps: int, batch: int, hidden: int, *, forward: bool) -> int:
    """oneDNN's scratchpad for one ``mkldnn_rnn_layer`` call (one layer, one direction, fp32
    training; the ``ref`` RNN, as ONEDNN_VERBOSE shows): ideep allocates it beside the workspace.

    Its ``key_rnn_space`` holds, each at a page-aligned offset, the gates of every step
    (``n_iter_scratch_gates`` = T when the layer GEMM is merged over the steps: always backward,
    forward below a minibatch of 128; else one step), the ``h`` scratch and the ``diff_h``
    scratch (``[B, good_ld(H)]`` each), and a final page rounding (the empty ``scratch_cell``
    registered after them); booked with a page of alignment. Then three weight-pointer arrays and
    the bias-pointer array, each one pointer (bias: 4 per fp32 element) + 128 alignment."""
    # oneDNN v3.12 src/cpu/rnn/rnn_utils.hpp, set_rnn_conf: merge_gemm_layer, n_iter_scratch_gates,
    # scratch_gates/ht/diff_ht sizes
    merged = not forward or batch < 128
    parts = ((steps if merged else 1) * batch * good_ld(4 * hidden) * 4,  # scratch_gates
             batch * good_ld(hidden) * 4,  # scratch_ht (proj_ht_ld = good_ld(dhc))
             batch * good_ld(hidden) * 4,  # scratch_diff_ht (training)
             0)  # scratch_cell: LSTM none, but register_space still rounds the offset up
    # oneDNN v3.12 src/cpu/rnn/rnn_utils.cpp, set_offsets: register_space rounds each offset up to page_size 4096
    offset = 0
    for part in parts:
        offset = _rnd_up(offset, P4K) + part
    # oneDNN v3.12 src/cpu/rnn/ref_rnn.cpp, pd_t::init_scratchpad: key_rnn_space (perf_align 4096), 3 x book<float
    # *>(1), book<void *>(1 * 4)
    return _booked(offset) + 3 * _booked(8, 128) + _booked(4 * 8, 128)


def lstm_forward(op: OpView, host: HostProfile) -> int:
    """One direction's ``mkldnn_rnn_layer`` at a time: both weights re-laid, the gates of every
    step and the summed bias, freed when it returns. Only then does ``mkldnn_impl``
    (``aten/src/ATen/native/mkldnn/RNN.cpp``) ``at::cat`` the two directions' outputs into the
    graph's Y and ``at::stack`` the final states into Y_h and Y_c: outputs the step already
    holds, so the temporaries count only beyond them (one direction: Y is the layer's own
    result, allocated before its temporaries, and only the states come after). A transposed
    (batch-first) input is first copied contiguous, beside everything."""
    x, hidden = _shape(op, op.input(0)), op.attr("hidden_size", None)
    if x is None or hidden is None:
        return 0
    steps, batch, size = (x[1], x[0], x[2]) if op.attr("layout", 0) else x
    elem = _size(op, op.input(0)) // max(math.prod(x), 1)
    if elem < 4:
        # bf16 (autocast): oneDNN's brgemm RNN, not ref: both weights reordered into its blocked
        # bf16 layout, the summed bias in the layer's type and the brgemm scratchpad
        # (graphmem.training.kernels.onednn_rnn; ideep allocates them in this order after the outputs)
        temps = (lstm_bf16_weights(size, hidden, forward=True, flags=host.cpu_flags) + 4 * hidden * elem
                 + lstm_bf16_scratchpad(steps, batch, size, hidden, forward=True, threads=host.torch_threads,
                                        flags=host.cpu_flags, l2=host.l2_per_core_bytes))
    else:
        ld = good_ld(4 * hidden)
        weights = (size + hidden) * ld * 4
        scratch = lstm_scratchpad_bytes(steps, batch, hidden, forward=True)
        temps = weights + scratch + 4 * hidden * 4
    # mkldnn_impl: ``input = input.contiguous()`` after the batch-first transpose, a copy of a
    # transposed input alive for the whole call (each direction saves it for backward); under
    # autocast the copy is made before mkldnn_rnn_layer's cast, in the cast's source type
    source = op.input(0).partition(CAST_MARK)[0] if is_cast(op.input(0)) else op.input(0)
    copy = 0 if op.contiguous(op.input(0)) else _size(op, source) or _size(op, op.input(0))
    bidirectional = op.attr("direction", b"forward") in (b"bidirectional", "bidirectional")
    later = [name for k, name in enumerate(op.outputs[:3]) if name and (k > 0 or bidirectional)]
    after = sum(_size(op, name) for name in later)
    return copy + max(temps, after) - after


def lstm_backward(op: OpView, host: HostProfile) -> int:
    """``mkldnn_rnn_layer_backward`` (``aten/src/ATen/native/mkldnn/RNN.cpp``), one direction at a
    time: oneDNN computes each weight gradient in its own layout (``[good_ld(in), 4H]``) and
    reorders it into PyTorch's (``[in, good_ld(4H)]``) before copying it out, for the input and
    the hidden weights; with them the contiguous output and final-state gradients, two
    bias-gradient buffers and the scratchpad (:func:`lstm_scratchpad_bytes`)."""
    x, hidden = _shape(op, op.input(0)), op.attr("hidden_size", None)
    if x is None or hidden is None:
        return 0
    steps, batch, size = (x[1], x[0], x[2]) if op.attr("layout", 0) else x
    elem = _size(op, op.input(0)) // max(math.prod(x), 1)
    ld = good_ld(4 * hidden)
    grads = (steps * batch * hidden + batch * hidden) * elem
    if elem < 4:
        temps = grads + _lstm_bf16_backward(op, steps, batch, size, hidden, elem, host)
    else:
        # a layout equal to PyTorch's (no padding) needs no buffer of its own
        weights = sum((good_ld(n) * 4 * hidden if good_ld(n) != n else 0) + (n * ld if ld != 4 * hidden else 0)
                      for n in (size, hidden)) * 4
        temps = weights + grads + 2 * 4 * hidden * 4 + lstm_scratchpad_bytes(steps, batch, hidden, forward=False)
    if op.attr("direction", b"forward") in (b"bidirectional", "bidirectional"):
        # one backward node per direction, the reverse one first: the node's step holds every
        # gradient at once, but the first direction returns only its own weight gradients, and
        # by the second its saved output, final states and workspace are released (its weight
        # gradients too, when they are added into a persistent .grad) while the second's input
        # gradient is a new buffer added into the first's
        released = (steps * batch * hidden + 2 * batch * hidden) * elem + lstm_workspace_bytes(
            steps, batch, size, hidden, elem
        )
        dw = (4 * hidden * (size + hidden) + 2 * 4 * hidden) * _elem_of(op, op.input(1))  # autocast: half
        dx = _size(op, op.input(0)) if op.grad(0) else 0
        if op.weight_grads_kept:
            temps += max(-dw, dx - released)
        else:
            temps += max(0, dx - released) - dw
        temps = max(temps, 0)
    return temps


def _lstm_bf16_backward(op: OpView, steps: int, batch: int, size: int, hidden: int, elem: int,
                        host: HostProfile) -> int:
    """One direction of a bf16 ``mkldnn_rnn_layer_backward`` beyond the output and state gradients
    it copies and the gradients it returns (``aten/src/ATen/native/mkldnn/RNN.cpp``): the summed
    bias in the layer's type; every gradient it returns made in f32 (``diff_x_`` .. ``diff_cx_``,
    ``at::empty`` f32 whether or not the input needs it; the step counts them in the inputs'
    half type, which the engine's ``validate_outputs`` converts them to after the call); the
    output and final-state gradients converted to f32 (``grad_y_``, ``grad_hy_``, ``grad_cy_``);
    then ideep's buffers: both weights reordered into the backward brgemm layout, both weight
    gradients and the bias gradient in oneDNN's f32 layout (``[in, good_ld(4H)]``, allocated
    whatever its padding) and the brgemm scratchpad (:mod:`graphmem.training.kernels.onednn_rnn`)."""
    dirs = 2 if op.attr("direction", b"forward") in (b"bidirectional", "bidirectional") else 1
    f32 = {0: steps * batch * size, 1: 4 * hidden * size, 2: 4 * hidden * hidden, 5: batch * hidden, 6: batch * hidden}
    made = sum(4 * n - (_size(op, op.input(k)) // dirs if op.grad(k) else 0) for k, n in f32.items())
    converted = (steps * batch * hidden + 2 * batch * hidden) * 4
    onednn = (lstm_bf16_weights(size, hidden, forward=False, flags=host.cpu_flags)
              + (size + hidden) * good_ld(4 * hidden) * 4 + 4 * hidden * 4
              + lstm_bf16_scratchpad(steps, batch, size, hidden, forward=False, threads=host.torch_threads,
                                     flags=host.cpu_flags, l2=host.l2_per_core_bytes))
    return 4 * hidden * elem + made + converted + onednn


def gru_forward(op: OpView, host: HostProfile) -> int:
    """``FullLayer`` on CPU computes ``linear_ih`` of every step at once (``[T, B, 3H]``, alive
    through the layer, saved by nothing) and the last step's hidden state, which only the
    stacked output copies (``aten/src/ATen/native/RNN.cpp``). ``FullBidirectionalLayer`` runs the
    directions one after the other and concatenates their stacked outputs: at the ``cat`` both
    ``[T, B, H]`` stacks, the reverse direction's input gates and both last hidden states are
    alive beside the result."""
    x, hidden = _shape(op, op.input(0)), op.attr("hidden_size", None)
    if x is None or hidden is None:
        return 0
    steps, batch = (x[1], x[0]) if op.attr("layout", 0) else (x[0], x[1])
    elem = _size(op, op.input(0)) // max(math.prod(x), 1)
    if _gru_gate_elem(op) != elem:
        return _gru_autocast_forward(op, x, hidden)
    if op.attr("direction", b"forward") in (b"bidirectional", "bidirectional"):
        return (steps * batch * (2 + 3) * hidden + 2 * batch * hidden) * elem
    return (steps * batch * 3 * hidden + batch * hidden) * elem


def _gru_gate_elem(op: OpView) -> int:
    """Bytes of a GRU's gates: its weights' type (autocast's half casts; else the input's)."""
    return _elem_of(op, op.input(1)) if _shape(op, op.input(1)) else _elem_of(op, op.input(0))


def _gru_autocast_forward(op: OpView, x: tuple[int, ...], hidden: int) -> int:
    """:func:`gru_forward` under autocast: the gates are half (``linear_ih``'s ``[T, B, 3H]``
    among them) and no hidden state is saved in the state's dtype (each step's half cast is:
    :func:`graphmem.training.saved.gru`), so every step's output waits in ``FullLayer``'s
    ``step_outputs`` until ``at::stack`` copies them (``aten/src/ATen/native/RNN.cpp``): at the
    stack, the gates, the ``T`` step outputs and the stacked output. A transposed input's half
    cast keeps its strides (``_to_copy`` preserves a dense layout) and lives while ``linear_ih``
    copies it contiguous and computes the gates. ``FullBidirectionalLayer``: the forward
    direction's step outputs and stack stay alive through the reverse direction (locals of the
    call until it returns); at the ``cat``, both directions' step outputs and stacks and the
    reverse direction's gates beside the result; at the reverse direction's ``linear_ih``, both
    directions' gates (``step_inputs`` still views the first) and the cast, before the result.
    Without an ``initial_h`` in the graph, nn.GRU's zero state lives through the call."""
    steps, batch, size = (x[1], x[0], x[2]) if op.attr("layout", 0) else x
    elem, gate = _elem_of(op, op.input(0)), _gru_gate_elem(op)
    gates = steps * batch * 3 * hidden * gate
    states = steps * batch * hidden * elem  # one direction's step outputs, or its stack
    cast = 0 if op.contiguous(op.input(0)) else steps * batch * size * gate
    bidirectional = op.attr("direction", b"forward") in (b"bidirectional", "bidirectional")
    # no initial_h in the graph: nn.GRU's zeros h0 (torch/nn/modules/rnn.py), in the input's
    # dtype, alive through the call; saved only without autocast (then its own saved item)
    h0 = 0 if op.act(5) else (2 if bidirectional else 1) * batch * hidden * elem
    if bidirectional:
        return h0 + max(4 * states + gates, 2 * gates + cast)
    return h0 + max(gates + states, gates + cast)


def gru_backward(op: OpView, host: HostProfile) -> int:
    """The GRU's backward is the autograd engine running ``GRUCell``'s ops step by step, one
    direction after the other (``aten/src/ATen/native/RNN.cpp``; the reverse direction's ops were
    recorded last, so they run first). Per direction, three moments:

    * **the loop over the steps**: each step's ``linear_hh`` backward gives a gradient for the
      recurrent weight ``W_hh`` and its bias. Every step's contribution goes to the parameter's
      ``AccumulateGrad`` node, which runs once all have arrived; until then the engine sums them
      in its ``InputBuffer`` (``torch/csrc/autograd/input_buffer.cpp``, ``accumulate``). The first
      contribution is a view (``W_hh``'s gradient arrives through ``TBackward0``, a ``t()``; the
      bias's through the engine's ``sum_to``, a ``view`` of a keepdim sum:
      ``aten/src/ATen/ExpandUtils.h``), and a view shares its storage with its base, so
      ``can_accumulate_inplace`` (``storage().use_count() == 1``) fails: the second is added out
      of place (first, second and their sum alive at once), the later ones in place. Busiest at
      the second step: three ``W_hh``-sized tensors and the bias's sum. The buffer is handed to
      ``AccumulateGrad`` after the loop: added into ``.grad`` and freed (gradients persistent) or
      kept as ``.grad`` (released).
    * **the input gates' gradients stacked**: the per-step ``[B, 3H]`` gradients wait in
      ``unbind``'s buffer and are stacked into one ``[T, B, 3H]`` (derivatives.yaml ``unbind:
      unbind_backward`` = ``at::stack``): both alive; by then every step's saved tensors are
      released.
    * **``linear_ih``'s backward** on the stacked gradient: the input gradient (if needed), the
      input weight's and bias's gradients.

    The step of the backward pass counts the gradients the node returns (input, every weight)
    alive together; this returns what the busiest moment holds beyond them (never below 0).
    Under autocast the gates' gradients are half, and so is the engine's ``W_hh`` buffer (the
    cached cast's gradient); ``linear_ih``'s input gradient is half, then converted to the
    input's dtype by the cast's ``ToCopyBackward0``."""
    x, hidden = _shape(op, op.input(0)), op.attr("hidden_size", None)
    if x is None or hidden is None:
        return 0
    steps, batch, size = (x[1], x[0], x[2]) if op.attr("layout", 0) else x
    elem = _size(op, op.input(0)) // max(math.prod(x), 1)
    dirs = 2 if op.attr("direction", b"forward") in (b"bidirectional", "bidirectional") else 1
    w_ih = _size(op, op.input(1)) // dirs if op.grad(1) else 0
    w_hh = _size(op, op.input(2)) // dirs if op.grad(2) else 0
    b_ih = b_hh = _size(op, op.input(3)) // dirs // 2 if op.grad(3) else 0
    dx = steps * batch * size * elem if op.grad(0) else 0
    gate = _gru_gate_elem(op)
    gates = steps * batch * 3 * hidden * gate
    if gate == elem:
        per_step_saved = steps * batch * 6 * hidden * elem + (steps - 1) * batch * hidden * elem
        # a direction's own copy of a non-contiguous input (saved by its linear_ih) goes with it
        copy = steps * batch * size * elem if op.act(0) and not op.contiguous(op.input(0)) else 0
        kept = w_hh + b_hh if op.weight_grads_kept else 0  # W_hh's buffer kept as .grad after the loop
    else:
        # autocast: what saved.gru holds per direction (half gates and state casts, the state's
        # clones), the direction's half input cast; the half W_hh buffer goes to the cached
        # cast's ToCopyBackward0 after the loop, whose f32 result is .grad (released) or is
        # added into it (persistent)
        per_step_saved = steps * batch * (5 * hidden * gate + hidden * elem) + steps * batch * hidden * gate
        copy = steps * batch * size * gate if op.act(0) else 0
        kept = (w_hh + b_hh) * elem // gate if op.weight_grads_kept else 0
    counted = dx + dirs * (w_ih + w_hh + b_ih + b_hh)
    peak, held = 0, 0  # held: what earlier directions leave (kept gradients, the input's gradient)
    for d in range(dirs):
        # the second direction's input gradient is added out of place into the first's (a view
        # of linear_ih's mat1 gradient): both and their sum
        dx_now = dx if d == 0 else 2 * dx
        loop = held + (3 * w_hh + b_hh if steps > 1 else w_hh + b_hh)
        stack = held - per_step_saved + 2 * gates + kept
        if gate == elem:
            linear_ih = held - per_step_saved + gates + dx_now + w_ih + b_ih + kept
        else:
            # autocast: linear_ih's mat1 gradient is half; the direction's input cast's
            # ToCopyBackward0 then makes the input's f32 gradient beside it, a new tensor the
            # second direction's is added into in place
            half_dx = steps * batch * size * gate if op.grad(0) else 0
            linear_ih = held - per_step_saved + max(gates + half_dx, half_dx + dx) + w_ih + b_ih + kept
        peak = max(peak, loop, stack, linear_ih)
        held += dx - per_step_saved - copy + (kept + w_ih + b_ih if op.weight_grads_kept else 0) - (dx if d else 0)
    return max(peak - counted, 0)


def no_temporaries(op: OpView, host: HostProfile) -> int:
    """Kernels that write straight into their outputs."""
    return 0


def broadcast_grads(op: OpView, host: HostProfile) -> int:
    """Mul/Div: the gradient of a broadcast operand is first computed at the output's size
    (derivatives.yaml ``mul.Tensor: other: mul_tensor_backward(grad, self)``) and only then
    summed down to the operand's shape by the engine (``torch/csrc/autograd/engine.cpp``,
    ``validate_outputs`` → ``InputMetadata::reduce_grad``, ``at::sum_to``)."""
    out = op.type(op.outputs[0]) if op.outputs else None
    if out is None:
        return 0
    size = tensor_size(out) or 0
    return sum(
        size
        for k in range(min(len(op.inputs), 2))
        if op.grad(k) and (t := op.type(op.input(k))) is not None and t.shape != out.shape
    )


def layer_norm_copy(op: OpView, host: HostProfile) -> int:
    """``layer_norm_cpu`` and its backward make a non-contiguous input contiguous first
    (``aten/src/ATen/native/layer_norm.cpp``: ``input.expect_contiguous()``): a copy of it."""
    return 0 if op.contiguous(op.input(0)) else _size(op, op.input(0))


def half_mean_copies(op: OpView, host: HostProfile) -> int:
    """ReduceMean of a float16/bfloat16 tensor on CPU sums in fp32: an fp32 result and an fp32
    copy of the input, both alive while the sum runs (measured: ``aten::mean`` of a bf16
    [1, 64, 10000] allocates 128, 256 and 2,560,000 B). An fp32 input makes neither."""
    # aten/src/ATen/native/ReduceOps.cpp mean_out: result.to(kFloat), then sum_out(..., kFloat), whose
    # make_reduction_from_out_ty casts self to kFloat on CPU
    x, y = op.type(op.input(0)), op.type(op.outputs[0]) if op.outputs else None
    if x is None or y is None or x.dtype not in (TensorProto.FLOAT16, TensorProto.BFLOAT16):
        return 0
    return sum(tensor_size(replace(t, dtype=TensorProto.FLOAT)) or 0 for t in (x, y))



def ic_padding_note(op: OpView, host: HostProfile) -> str | None:
    """The dense nhwc input gradient's weight is reordered into ``Bcda{ic_block}b``, and its input
    channels padded to that block: the block is 16·(1..4), 64 only when ``rnd_up(ic, 16)`` is a
    multiple of 64 below 192, 48 only for a multiple of 48 up to 384 on a large output
    (``fast_check_ic_block``), else 32 or 16 as ``brg_blocking_t::est_eff`` (cache sizes, threads)
    decides. With ``ic`` a multiple of 32 no block pads it; otherwise it may (measured: 80 input
    channels padded to 96 in ``Bcda32b``), not modelled."""
    # oneDNN v3.12 src/cpu/x64/jit_brgemm_conv_bwd_utils.cpp, init_conf try_exec_type (icb 4..1) and fast_check_ic_block
    w = _shape(op, op.input(1))
    if (op.op_type != "Conv" or not op.grad(0) or not op.channels_last(op.input(0)) or _depthwise(op)
            or w is None or len(w) < 3 or w[1] % 32 == 0):
        return None
    return (f"Conv '{op.node.name or 'Conv'}' (channels-last, {w[1]} input channels per group): oneDNN may "
            "pad the input gradient's reordered weight to its input-channel block (32 or 48; "
            "measured: 80 padded to 96); not modelled")


def _autocast_input(op: OpView) -> bool:
    """Autograd saves a half cast of the RNN's input rather than the input: an LSTM's input is
    autocast's cast (``mkldnn_rnn_layer``), a GRU casts inside (``linear_ih``, see
    :func:`_gru_autocast_forward`)."""
    if op.op_type == "LSTM":
        return is_cast(op.input(0))
    return bool(_shape(op, op.input(0))) and _gru_gate_elem(op) != _elem_of(op, op.input(0))


def _rnn_hold_note(op: OpView) -> str | None:
    """A batch-first LSTM/GRU of several layers: the exporter writes one node per layer, but one
    PyTorch call runs them all and its caller holds the input's storage to the end (measured:
    GRU 2x512 and LSTM 2x512 at batch 4, the 256 KiB embedding output, -2.4 % and -1.0 % of the
    forward activation peak). Under autocast the same holds for a contiguous input, which
    autograd no longer saves itself (its half cast instead), and an LSTM's contiguous copy of a
    transposed input is made in the input's type before the casts and lives as long."""
    name, label = op.node.name or op.op_type, op.op_type
    if not op.contiguous(op.input(0)) and not _autocast_input(op):
        # aten/src/ATen/native/mkldnn/RNN.cpp mkldnn_impl (LSTM) and RNN.cpp _rnn_impl (GRU) copy
        # the transposed input contiguous; the caller's original outlives every layer of the call
        return (f"{label} '{name}' reads a transposed (batch-first) input "
                f"({_size(op, op.input(0))} B): PyTorch copies it contiguous, and when more layers of "
                "the same nn.LSTM/nn.GRU follow this node, the caller keeps the original alive until "
                "the last of them returns; that hold is not modelled")
    if not _autocast_input(op):
        return None
    copy = " (and mkldnn_rnn its contiguous copy of the transposed input)" if (
        label == "LSTM" and not op.contiguous(op.input(0))) else ""
    return (f"{label} '{name}' (autocast) saves a half cast of its input, not the input: when more "
            "layers of the same nn.LSTM/nn.GRU follow this node, the caller keeps the original alive"
            f"{copy} until the last of them returns; that hold is not modelled (measured: -0.5 % to "
            "-2.3 % of the forward activation peak, LSTM and GRU 2x512)")


def _rnn_half_note(op: OpView, host: HostProfile) -> str | None:
    """What the 2-byte LSTM's figures leave out: a float16 LSTM cannot run on this CPU; a bf16 one
    runs oneDNN's reference RNN without ``avx512_bf16`` (not modelled)."""
    x_type = op.type(op.input(0))
    name = op.node.name or op.op_type
    if op.op_type != "LSTM" or x_type is None or not _shape(op, op.input(0)) or _elem_of(op, op.input(0)) >= 4:
        return None
    if x_type.dtype == TensorProto.FLOAT16:
        return (f"LSTM '{name}' in float16 (autocast): torch 2.13 on CPU cannot run "
                "it (oneDNN creates no f16 LSTM primitive: 'could not create a primitive descriptor'); "
                "its figures are those of the bf16 kernel")
    if not has_brgemm_bf16(host.cpu_flags):
        # oneDNN v3.12 src/cpu/rnn/ref_rnn.cpp, init_brgemm: a bf16 conf needs avx512_core_bf16, else init_ref
        return (f"LSTM '{name}' in bfloat16 (autocast): this CPU has no avx512_bf16, so oneDNN runs its "
                "reference RNN, whose scratchpad and weight layouts are not modelled (counted as the "
                "brgemm kernel's)")
    return None


def rnn_note(op: OpView, host: HostProfile) -> str | None:
    """The known gaps of an LSTM/GRU's kernels: :func:`_rnn_hold_note` and :func:`_rnn_half_note`."""
    if not op.input(0):
        return None
    notes = [note for note in (_rnn_hold_note(op), _rnn_half_note(op, host)) if note]
    return "; ".join(notes) or None


def conv_note(op: OpView, host: HostProfile) -> str | None:
    """The known gaps of a Conv/ConvTranspose's fp32 kernels on ``host``.

    oneDNN's weight-gradient scratchpad of a dense convolution with a kernel larger than 7x7 on
    a contiguous input depends on the primitive it picks (measured on torch 2.13: none for some
    sizes, up to 8x the weight for others, e.g. 4.3x for ViT-B/16's 16x16 patch embedding).
    """
    w = _shape(op, op.input(1))
    if (op.grad(0) and op.channels_last(op.input(0)) and not _depthwise(op)
            and (op.op_type == "ConvTranspose" or _dilated(op))):
        kind = "ConvTranspose" if op.op_type == "ConvTranspose" else "dilated Conv"
        return (f"{op.op_type} '{op.node.name or op.op_type}' (channels-last {kind}): oneDNN's "
                "input-gradient scratchpad is not modelled (brgemm_bwd_data_scratchpad covers "
                "undilated Convs)")
    if not op.grad(1):
        return None
    if op.op_type == "Conv" and op.channels_last(op.input(0)) and w is not None and len(w) > 2:
        groups = op.attr("group", 1)
        if _depthwise(op) and w[-1] <= 3 and not _jit_dw_weights(op):
            # jit_uni_dw_conv_bwd_weights_kernel_t::init_conf refuses it (pads, stride, dilation)
            return (f"Conv '{op.node.name or 'Conv'}' (channels-last depthwise {w[-2]}x{w[-1]}): jit_uni_dw "
                    "refuses its weight gradient (padding, stride or dilation), and the kernel oneDNN "
                    "falls back to is not modelled (measured: jit:avx2 in aBCde8c8b, 64x the weight, "
                    "for a 3x3 with pad 2); counted as the generic kernel's 16x16-padded gradient")
        if not _depthwise(op) or (w[-1] > 3 and groups <= host.torch_threads):
            # jit_avx512_common_conv_bwd_weights_kernel_f32_t::balance splits the minibatch only
            # with at least as many threads as groups; then init_scratchpad books nthr_mb - 1
            # more padded weight gradients (key_conv_wei_bia_reduction)
            return (f"Conv '{op.node.name or 'Conv'}' (channels-last, {groups} group(s)): oneDNN may "
                    "split its weight gradient's minibatch across threads and book a padded weight "
                    "gradient per extra thread; not modelled (never when the threads are fewer "
                    "than the groups)")
        return None
    if w is None or len(w) < 3 or max(w[2:]) <= 7 or op.channels_last(op.input(0)) or _depthwise(op):
        return None
    kernel = "x".join(str(d) for d in w[2:])
    return (f"{op.op_type} '{op.node.name or op.op_type}' (kernel {kernel}): oneDNN's weight-gradient "
            "scratchpad for kernels larger than 7x7 is not modelled (measured: up to 8x the weight, "
            "during its backward)")
