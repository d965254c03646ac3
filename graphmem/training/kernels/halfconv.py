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
:func:`conv_backward` is :mod:`workspace`'s with these rules first (this module builds on that
one). Which kernels run, their thread split and their blocking follow the host profile
(:mod:`graphmem.host`: CPU flags, threads, physical cores, per-core L2).
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from graphmem.errors import InvariantError
from graphmem.host import HostProfile
from graphmem.training.kernels import workspace
from graphmem.training.kernels.workspace import (
    BATCH_ELEMENT,
    P4K,
    SIMD_W,
    _booked,
    _channels_last_weight_copy,
    _depthwise,
    _rnd_up,
    _shape,
    _size,
    brgemm_bwd_data_scratchpad,
)
from graphmem.training.saved import OpView

__all__ = [
    "brgemm_bwd_w_scratchpad",
    "conv_backward",
    "half_conv_backward",
    "half_kernels_known",
    "jit_bf16_weights_scratchpad",
    "unmodelled_note",
]

HALF = (TensorProto.BFLOAT16, TensorProto.FLOAT16)


def half_kernels_known(dtype: int, flags: frozenset[str]) -> bool:
    """Whether the kernels of the module doc are the ones oneDNN picks on a CPU with ``flags``:
    bf16 convolutions on ``avx512_core_amx`` (AMX tiles with bf16), f16 on ``avx512_core_fp16``."""
    # oneDNN v3.12 src/cpu/x64/cpu_isa_traits.hpp, mayiuse: avx512_core_amx = amx_tile + amx_int8 + amx_bf16;
    # avx512_core_fp16 = avx512_fp16
    if dtype == TensorProto.BFLOAT16:
        return {"amx_tile", "amx_int8", "amx_bf16"} <= flags
    return dtype == TensorProto.FLOAT16 and "avx512_fp16" in flags


def _half(op: OpView) -> int | None:
    t = op.type(op.input(1)) if len(op.inputs) > 1 else None
    return t.dtype if t is not None and t.dtype in HALF else None


def _covered(op: OpView, host: HostProfile) -> int | None:
    """The half dtype when :func:`half_conv_backward` models this conv on ``host``, else None."""
    dtype = _half(op)
    w = _shape(op, op.input(1)) if dtype is not None else None
    if (dtype is None or op.op_type != "Conv" or w is None or len(w) != 4 or _shape(op, op.input(0)) is None
            or _shape(op, op.outputs[0]) is None or not half_kernels_known(dtype, host.cpu_flags)):
        return None
    if dtype == TensorProto.BFLOAT16 and _depthwise(op) and w[-1] <= 3:
        return None  # jit_uni_dw in blocked layouts: workspace's rules
    if w[1] * op.attr("group", 1) == 1:
        return None  # one input channel: its NCHW is channels-last too (mkldnn_conv_use_channels_last): unmodelled_note
    if dtype == TensorProto.BFLOAT16 and op.channels_last(op.input(0)) and op.grad(1) and (
            brgemm_bwd_w_scratchpad(op, host) is None if not _depthwise(op)
            else jit_bf16_weights_scratchpad(op, host.torch_threads) is None):
        return None
    if op.channels_last(op.input(0)) and not _depthwise(op) and any(d != 1 for d in op.attr("dilations", ())):
        return None  # brgemm refuses dilation: workspace's rules and note
    return dtype


def jit_bf16_weights_scratchpad(op: OpView, threads: int) -> int | None:
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
    # oneDNN v3.12 src/cpu/x64/jit_avx512_core_bf16_conv_kernel.cpp,
    # jit_avx512_core_bf16_conv_bwd_weights_kernel_f32_t::init_conf and init_scratchpad
    x, w, y = _shape(op, op.input(0)), _shape(op, op.input(1)), _shape(op, op.outputs[0])
    groups = op.attr("group", 1)
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


def _div_up(a: int, b: int) -> int:
    return -(-a // b)


def _bwd_w_balance(jcp: dict, nthr: int, physical_cores: int) -> tuple[int, int, int, int] | None:
    """``balance_bwd_w``: the threads over minibatch·rows, groups, output- and input-channel
    chunks (``nthr_mb, nthr_g, nthr_oc_b, nthr_ic_b``): the lowest ``calc_mem_cost`` (float32, as
    the C++), then the AMX heuristic for a minibatch of at most half the threads (``cubic``
    pieces); None for the branches not followed here (1x1 with 28+ threads, 2048+ channels,
    ``kw > 100``)."""
    # oneDNN v3.12 src/cpu/x64/jit_brgemm_conv_utils.cpp, balance_bwd_w
    f = np.float32
    mb, g, ic, oc = jcp["mb"], jcp["ngroups"], jcp["ic"], jcp["oc"]
    nb_ic, nb_oc, nb_icb, nb_ocb = jcp["nb_ic"], jcp["nb_oc"], jcp["nb_ic_blocking"], jcp["nb_oc_blocking"]
    os_chunks = jcp["nthr_mb_work"]
    oc_chunks, ic_chunks = _div_up(nb_oc, nb_ocb), _div_up(nb_ic, nb_icb)
    ks = jcp["kh"] * jcp["kw"]

    def cost(nthr_mb: int, nthr_g: int, nthr_oc_b: int, nthr_ic_b: int) -> np.float32:
        src_spatial = mb * jcp["ih"] * jcp["tr_iw"]
        dst_spatial = mb * jcp["oh"] * jcp["tr_ow"]
        src_size, dst_size, wei_size = src_spatial * ic * 2, dst_spatial * oc * 2, oc * ic * ks * 4
        wei_scale = f(0.5) * f(dst_size + src_size) / f(wei_size)
        ratio = f(oc_chunks) / f(ic_chunks)
        src_coef = max(f(1) / ratio, f(1)) * (f(4) if wei_scale < 1 else f(1))
        dst_coef, wei_coef = max(ratio, f(1)), max(wei_scale, f(1))
        thr_mb = _div_up(os_chunks, nthr_mb)
        oc_job, ic_job = SIMD_W * nb_ocb, SIMD_W * nb_icb
        thr_g, thr_ic_b = _div_up(g, nthr_g), _div_up(ic_chunks, nthr_ic_b)
        thr_src_sp = thr_mb * (src_spatial // os_chunks) // jcp["sh"] // jcp["sw"]
        thr_dst_sp = thr_mb * (dst_spatial // os_chunks)
        thr_ic = thr_ic_b * ic_job
        thr_oc = (
            _div_up(oc_chunks, oc_job * nthr_oc_b) * oc_job
        )  # (sic) thr_oc_b = div_up(oc_chunks, nb_oc_job * nthr_oc_b)
        src_v = f(2) * src_coef * f(thr_g) * f(thr_ic) * f(thr_src_sp)
        dst_v = f(2) * dst_coef * f(thr_g) * f(thr_oc) * f(thr_dst_sp)
        wei_v = f(4) * wei_coef * f(thr_g) * f(thr_oc) * f(thr_ic) * f(ks)
        return f(f(src_v + dst_v) + wei_v)

    if nthr < g:
        best = (1, nthr, 1, 1)
    else:
        n = nthr // g
        best, best_cost = (1, g, 1, 1), cost(1, g, 1, 1)
        for nthr_mb in range(1, min(n, os_chunks) + 1):
            par = n // nthr_mb
            for nthr_oc_b in range(1, min(par, oc_chunks) + 1):
                nthr_ic_b = min(par // nthr_oc_b, nb_ic // nb_icb)
                c = cost(nthr_mb, g, nthr_oc_b, nthr_ic_b)
                if c <= best_cost:
                    best, best_cost = (nthr_mb, g, nthr_oc_b, nthr_ic_b), c
        if n // 2 < best[0] < n:
            best = (min(os_chunks, n), *best[1:])
    neat_1x1 = jcp["kh"] == jcp["kw"] == g == jcp["sh"] == 1
    if (neat_1x1 and nthr >= 28 and mb >= nthr) or (g == 1 and (oc > 2048 or ic > 2048)) or jcp["kw"] > 100:
        return None
    if nthr <= physical_cores and mb <= nthr // 2 and oc >= 64 and ic >= 64 and g == 1:
        return _bwd_w_cubic(jcp, nthr)
    return best


def _bwd_w_cubic(jcp: dict, nthr: int) -> tuple[int, int, int, int]:
    """``balance_bwd_w``'s AMX heuristic: the work cut into near-cubic (g, ic, oc, sp) pieces."""
    # oneDNN v3.12 src/cpu/x64/jit_brgemm_conv_utils.cpp, balance_bwd_w (is_amx && mb <= nthr / 2 ...)
    nd = 4
    ks = jcp["kh"] * jcp["kw"]
    amx_h, amx_w = 16, 32  # init_jcp: amx_w = 64 / src_dsz
    maxv = {"g": jcp["ngroups"], "ic": _div_up(jcp["nb_ic"], 2), "oc": _div_up(jcp["nb_oc"], 2),
            "sp": jcp["mb"] * jcp["oh"]}
    dv = [[1.0, "g"], [5.0 * _div_up(jcp["ic"], amx_h) * ks, "ic"], [3.0 * _div_up(jcp["oc"], amx_h) * ks, "oc"],
          [float(_div_up(jcp["mb"] * jcp["oh"] * jcp["ow"], amx_w)), "sp"]]
    key = {"g": 0, "ic": 1, "oc": 2, "sp": 3}  # enum order: std::sort on pairs breaks ties by it
    sort = lambda: dv.sort(key=lambda p: (p[0], key[p[1]]))  # noqa: E731
    third = float(np.float32(1) / np.float32(nd))
    xd = 1.0
    for v, _ in dv:
        xd *= v
    xd = (xd / nthr) ** third
    sort()
    tot = 1.0
    for i in range(nd):
        if dv[i][0] < xd:
            v = 1.0
            xd = 1.0
            for j in range(i + 1, nd):
                xd *= dv[j][0]
            xd = (xd / nthr) ** float(np.float32(1) / np.float32(nd - i - 1)) if nd - i - 1 else xd
        else:
            v = min(dv[i][0] / xd, float(maxv[dv[i][1]]))
        tot *= v
        dv[i][0] = v
    sort()
    knorm = (nthr / tot) ** third
    tot = 1.0
    for i in range(nd):
        new = dv[i][0] * knorm
        dv[i][0] = min(max(new, 1.0), float(maxv[dv[i][1]]))
        if nd - i - 1:
            knorm *= (new / dv[i][0]) ** float(np.float32(1) / np.float32(nd - i - 1))
        else:
            knorm *= math.inf if new / dv[i][0] > 1 else (0.0 if new / dv[i][0] < 1 else 1.0)
        tot *= dv[i][0]
    sort()
    knorm = nthr / tot
    for i in range(nd):
        new = dv[i][0] * knorm
        dv[i][0] = min(max(new, 1.0), float(maxv[dv[i][1]]))
        knorm = new / dv[i][0]
    sort()

    def diff(cv: list[list]) -> float:
        tot_n, res = 1, 1.0
        for i in range(nd):
            nvf, n, v = dv[i][0], cv[i][0], maxv[cv[i][1]]
            disb = nvf * float(_rnd_up(v, n)) / v
            var = n / nvf if n > nvf else nvf / n
            tot_n *= n
            res *= disb * var
        return res * (nthr / tot_n)

    nv = [[min(max(int(dv[i][0] + np.float32(0.5)), 1), maxv[dv[i][1]]), dv[i][1]] for i in range(nd)]
    nv[nd - 1][0] = nthr // (nv[0][0] * nv[1][0] * nv[2][0])
    best = diff(nv)
    cv = [list(p) for p in nv]
    for n0 in range(1, nthr + 1):
        if n0 > maxv[dv[0][1]]:
            continue
        cv[0][0] = n0
        for n1 in range(1, nthr // n0 + 1):
            if n1 > maxv[dv[1][1]]:
                continue
            cv[1][0] = n1
            for n2 in range(1, nthr // n0 // n1 + 1):
                if n2 > maxv[dv[2][1]]:
                    continue
                cv[2][0] = n2
                for n3 in range(nthr // n0 // n1 // n2, 0, -1):
                    if n3 > maxv[dv[3][1]]:
                        continue
                    cv[3][0] = n3
                    c = diff(cv)
                    if c < best and n0 * n1 * n2 * n3 <= nthr:
                        best = c
                        nv = [list(p) for p in cv]
    got = {name: n for n, name in nv}
    return got["sp"], got["g"], got["oc"], got["ic"]


def brgemm_bwd_w_scratchpad(op: OpView, host: HostProfile) -> int | None:
    """The scratchpad of ``brgconv_bwd_w`` (``avx512_core_amx``, bf16 nhwc source and output
    gradient) for a 2-D undilated ungrouped conv on ``host`` (its threads, physical cores and
    per-core L2); None where :func:`_bwd_w_balance` does not follow the source.

    ``init_conf_bwd_w`` transposes the source in rows of ``tr_iw = rnd_up(⌈(iw + l + r) /
    stride_w⌉, 32)·stride_w`` and the output gradient in rows of ``tr_ow`` (``ow`` rounded to the
    vnni 2, widened up to a multiple of 32 when that needs fewer row blocks), blocked over
    ``oh_block`` rows (what fits 0.8 of ¾ of the L2 beside ``kh`` input rows) and the ``ih_block``
    input rows they read; one buffer per minibatch thread and channel block (global transpose).
    ``init_scratchpad_bwd_w`` books them (plus ``tr_pad`` and a ``tr_iw·16`` row of guard), the
    f32 reduction of the 16x16-blocked weights and bias (``nthr_mb`` of each: a bf16 gradient),
    barrier contexts, the AMX tile config, the brgemm batch (``oh`` elements per thread, rounded
    to pages) and two pages of tile buffer per thread."""
    # oneDNN v3.12 src/cpu/x64/jit_brgemm_conv_utils.cpp, init_conf_bwd_w and init_scratchpad_bwd_w
    x, w, y = _shape(op, op.input(0)), _shape(op, op.input(1)), _shape(op, op.outputs[0])
    if x is None or w is None or y is None or len(w) != 4 or op.attr("group", 1) != 1:
        return None
    if any(d != 1 for d in op.attr("dilations", ())):
        return None
    threads = host.torch_threads
    (kh, kw), (ih, iw), (oh, ow) = w[2:], x[2:], y[2:]
    sh, sw = op.attr("strides", [1, 1])
    t, l = op.attr("pads", [0, 0, 0, 0])[:2]
    r = max(0, (ow - 1) * sw + kw - (iw + l))
    b = max(0, (oh - 1) * sh + kh - (ih + t))
    if not (l < kw and r < kw and t <= kh // 2 and b <= kh // 2):  # boundaries_ok
        return None
    if kh == kw == sh == sw == 1 and t == b == l == r == 0 and iw <= 28:  # make_1d
        iw, ih, ow, oh = iw * ih, 1, ow * oh, 1
    ic, oc, mb = w[1], w[0], x[0]
    tr_pad = _rnd_up(max(l, r + 1), 32)
    tr_iw = _rnd_up(_div_up(iw + l + r, sw), 32) * sw
    tr_ow = _rnd_up(ow, 2)
    if tr_ow > 32:  # a wider tr_ow for fewer brgemm row blocks
        best_bdb, best_tr_ow = tr_ow // 2, tr_ow
        for cand in range(tr_ow, _rnd_up(tr_ow, 32) + 1, 2):
            for i in range(32, 0, -2):
                if cand % i == 0:
                    if cand // i < best_bdb:
                        best_bdb, best_tr_ow = cand // i, cand
                    break
        tr_ow = best_tr_ow
    nb_ic, nb_oc = _div_up(ic, SIMD_W), _div_up(oc, SIMD_W)
    jcp = {"mb": mb, "ngroups": 1, "ic": ic, "oc": oc, "ih": ih, "oh": oh, "ow": ow, "kh": kh, "kw": kw,
           "sh": sh, "sw": sw, "tr_iw": tr_iw, "tr_ow": tr_ow, "nb_ic": nb_ic, "nb_oc": nb_oc,
           "nb_ic_blocking": 2 if nb_ic > 1 else 1, "nb_oc_blocking": 2 if nb_oc > 1 else 1, "nthr_mb_work": mb * oh}
    balance = _bwd_w_balance(jcp, threads, host.physical_cores)
    if balance is None:
        return None
    nthr_mb, _, nthr_oc_b, nthr_ic_b = balance
    nthr = nthr_mb * nthr_oc_b * nthr_ic_b
    irow = 2 * tr_iw * SIMD_W * _div_up(nb_ic, nthr_ic_b) * 2
    orow = 2 * tr_ow * SIMD_W * _div_up(nb_oc, nthr_oc_b) * 2
    l2 = host.l2_per_core_bytes * 3 // 4  # init_jcp: brg_blocking_t::L2 = 3/4 of the per-core L2
    limit = int(max(np.float32(1), max(np.float32(0), np.float32(0.8) * np.float32(l2) - np.float32(kh * irow))
                    / np.float32(irow + orow)))
    limit = _div_up(oh, _div_up(oh, limit))
    oh_block = min(max(1, limit), oh)
    ih_block = min(ih, sh * min(ih, (oh_block - 1) * min(kh, sh) + kh))  # get_inp_size
    tr_src = (nthr_mb * nb_ic * tr_iw * SIMD_W * ih_block + tr_pad) * 2
    tr_diff_dst = (nthr_mb * nb_oc * tr_ow * SIMD_W * oh_block + tr_iw * SIMD_W) * 2
    total = _booked(tr_src, 128) + _booked(tr_diff_dst, 128)
    ctx = _booked(4096, P4K)  # one simple_barrier::ctx_t (alignas 4096)
    if nthr_oc_b > 1:  # key_conv_tr_src_bctx
        total += _booked(nthr // nthr_oc_b * 4096, P4K)
    if nthr_ic_b > 1:  # key_conv_tr_diff_dst_bctx
        total += _booked(nthr // nthr_ic_b * 4096, P4K)
    weights = nb_oc * SIMD_W * nb_ic * SIMD_W * kh * kw
    bias = nb_oc * SIMD_W if op.grad(2) else 0
    total += _booked((weights + bias) * nthr_mb * 4, 128) + ctx  # wei_bia_reduction (bf16: nthr_mb) + its bctx
    total += _booked(64, 128)  # key_conv_amx_tilecfg: one 64-byte cache line
    batch = _div_up(_rnd_up(oh * BATCH_ELEMENT, P4K), BATCH_ELEMENT)  # adjusted_batch_size, max_batch = od·oh
    total += _booked(nthr * batch * BATCH_ELEMENT, P4K)
    total += _booked(nthr * 2 * P4K, P4K)  # key_conv_amx_tile_buffer
    return total


def _filter_dims(op: OpView) -> tuple[int, ...]:
    """The filter's dims, known for every conv :func:`_covered` accepts (else a bug: InvariantError)."""
    w = _shape(op, op.input(1))
    if w is None:
        raise InvariantError(
            f"Conv '{op.node.name}': its filter shape is unknown, yet the half-precision rules took it"
        )
    return w


def _depthwise_weight_blocks(op: OpView, dtype: int) -> int:
    """The input gradient's reordered depthwise weight: ``aCdeb16c`` (f16) or ``aCdeB16c2b`` (bf16):
    each group's single input channel padded to 16 (and, bf16, its output channel to the vnni 2)."""
    return _size(op, op.input(1)) * SIMD_W * (2 if dtype == TensorProto.BFLOAT16 else 1)


def _dense_nhwc(op: OpView, dtype: int, gw: int, gb: int, host: HostProfile) -> int:
    """A dense conv on a channels-last input, beside ATen's channels-last weight copy for both
    phases: the input gradient as in fp32 (the reordered weight and
    :func:`brgemm_bwd_data_scratchpad`; the reduced-precision kernels' accumulation and AMX tile
    buffers: :func:`unmodelled_note`); the weight gradient by ``brgconv_bwd_w`` (bf16: ideep's
    ``OIhw16i16o2i`` gradient beside :func:`brgemm_bwd_w_scratchpad` and ideep's bias) or
    ``ref:any`` (f16: ideep's plain gradient), then the dense copies and ``.to(ChannelsLast)``."""
    w = _filter_dims(op)
    copy = _channels_last_weight_copy(op)
    data = copy + _size(op, op.input(1)) + brgemm_bwd_data_scratchpad(op, host.torch_threads) if op.grad(0) else 0
    if not (gw or gb):
        return data
    if dtype == TensorProto.BFLOAT16:
        blocked = _rnd_up(w[0], SIMD_W) * _rnd_up(w[1], 2 * SIMD_W) * math.prod(w[2:]) * 2
        scratch = brgemm_bwd_w_scratchpad(op, host) or 0
        return max(data, copy + blocked + scratch - gw, copy + blocked + gw + gb)
    return max(data, copy + 2 * gw + gb)


def half_conv_backward(op: OpView, host: HostProfile) -> int | None:
    """Bytes the backward holds beyond the gradients it returns on ``host`` (see the module doc);
    None when the conv is not one of the cases modelled here (``workspace``'s rules apply)."""
    dtype = _covered(op, host)
    if dtype is None:
        return None
    bf16 = dtype == TensorProto.BFLOAT16
    weight = _size(op, op.input(1))
    gi = _size(op, op.input(0)) if op.grad(0) else 0
    gw = weight if op.grad(1) else 0
    gb = _size(op, op.input(2)) if op.grad(2) and len(op.inputs) > 2 and op.input(2) else 0
    if op.channels_last(op.input(0)) and not _depthwise(op):
        return _dense_nhwc(op, dtype, gw, gb, host)
    if op.channels_last(op.input(0)):  # depthwise
        w = _filter_dims(op)
        if bf16:  # jit_uni_dw's input gradient: the weight in Abcde16a, groups padded to 16
            data = _rnd_up(w[0], SIMD_W) * math.prod(w[1:]) * 2 if gi else 0
        else:  # brg_conv_bwd on nhwc: the padded weight and the brgemm scratchpad
            data = _depthwise_weight_blocks(op, dtype) + brgemm_bwd_data_scratchpad(op, host.torch_threads) if gi else 0
        if not (gw or gb):
            return data
        if bf16:
            padded = w[0] * SIMD_W * SIMD_W * math.prod(w[2:]) * 2  # gOIhw16i16o, ideep's gradient
            scratch = jit_bf16_weights_scratchpad(op, host.torch_threads) or 0
            # running: ideep's gradient, the scratchpad, ideep's bias; then the dense copies
            # (bias, weight) and the channels-last copy of the weight
            return max(data, padded + scratch + gb - gw - gb, padded + gw + gb)
        # ref: ideep's gradient and bias, their dense copies, the channels-last weight copy
        return max(data, 2 * gw + gb)
    # contiguous input: the input gradient in nhwc, copied out and made contiguous
    dy = _size(op, op.outputs[0])
    w_blocks = _depthwise_weight_blocks(op, dtype) if _depthwise(op) else weight
    scratch = 0 if bf16 else brgemm_bwd_data_scratchpad(op, host.torch_threads)  # bf16 AMX: unmodelled_note
    data = max(dy + w_blocks + gi + scratch, 3 * gi) if gi else 0
    if not bf16 or _depthwise(op):
        # f16: ref:any in the given layouts; bf16 depthwise (kw > 3): gemm in plain layouts,
        # its im2col scratchpad unmodelled: ideep's gradients, then their dense copies
        filt = 2 * gw + 2 * gb
    else:
        w = _filter_dims(op)
        x = _size(op, op.input(0))
        blocked = _rnd_up(w[0], SIMD_W) * _rnd_up(w[1], 2 * SIMD_W) * math.prod(w[2:]) * 2  # OIhw16i16o2i
        # nhwc copies of the output gradient and the source beside ideep's gradient and bias;
        # then the gradient's dense copy and the bias's
        scratch = brgemm_bwd_w_scratchpad(op, host) or 0  # None: unmodelled_note
        filt = max(dy + x + blocked + scratch + gb, blocked + gw + 2 * gb) if gw or gb else 0
    return max(data, gi + filt, gi + gw + gb) - gi - gw - gb


def unmodelled_note(op: OpView, host: HostProfile) -> str | None:
    """What :func:`half_conv_backward` leaves out for this conv on ``host``, as a warning line."""
    dtype = _half(op)
    if dtype is None or op.op_type not in ("Conv", "ConvTranspose") or not (op.grad(0) or op.grad(1)):
        return None
    name = op.node.name or op.op_type
    kind = "bfloat16" if dtype == TensorProto.BFLOAT16 else "float16"
    if not half_kernels_known(dtype, host.cpu_flags):
        return (f"{op.op_type} '{name}' in {kind} (autocast): this CPU lacks "
                f"{'AMX-BF16' if kind == 'bfloat16' else 'AVX512-FP16'}, so oneDNN picks other kernels than "
                "the modelled ones; its backward temporaries follow the fp32 layouts")
    if op.op_type == "ConvTranspose":
        return (f"ConvTranspose '{name}' in {kind} (autocast): its backward's reorders and scratchpads "
                "are not modelled (counted as the fp32 kernels')")
    if _covered(op, host) is None:
        w = _shape(op, op.input(1))
        if w is not None and len(w) == 4 and w[1] * op.attr("group", 1) == 1 and op.grad(1):
            return (f"Conv '{name}' in {kind} (autocast): a one-channel input is channels-last as well, "
                    "and the kernels oneDNN then picks for its weight gradient are not modelled "
                    "(measured: a 1.3 MB scratchpad for 16 3x3 filters on 128x128)")
        if dtype == TensorProto.BFLOAT16 and _depthwise(op) and w is not None and w[-1] > 3:
            return (f"Conv '{name}' in bfloat16 (autocast): the jit_bf16 depthwise weight-gradient "
                    "scratchpad with fewer groups than threads (or a refused shape) is not modelled")
        return None
    notes = []
    if op.channels_last(op.input(0)) and not _depthwise(op) and op.grad(0):
        notes.append("the reduced-precision brgemm input gradient's accumulation (and AMX tile) buffers "
                     "(measured: 6 kB to 30 kB)")
    if dtype == TensorProto.BFLOAT16 and not op.channels_last(op.input(0)):
        if op.grad(0):
            notes.append("the AMX brgemm input-gradient scratchpad (measured: 0.16 to 0.56 MB)")
        if op.grad(1) and _depthwise(op):
            notes.append("the gemm weight gradient's im2col and f32 accumulation scratchpad (measured: "
                         "98 kB for a 5x5 depthwise conv of 144 channels at 56x56)")
        elif op.grad(1) and brgemm_bwd_w_scratchpad(op, host) is None:
            notes.append("the brgconv_bwd_w weight-gradient scratchpad (its thread balance is not followed "
                         "for this shape)")
    if not notes:
        return None
    return f"Conv '{name}' in {kind} (autocast): not modelled: " + "; ".join(notes)


def conv_backward(op: OpView, host: HostProfile) -> int:
    """A Conv/ConvTranspose backward on ``host``: an autocast Conv by :func:`half_conv_backward`,
    else :func:`workspace.conv_backward`."""
    half = half_conv_backward(op, host)
    return workspace.conv_backward(op, host) if half is None else half
