"""Kernel scratch and prepacked weights of onnxruntime 1.31's quantized CPU kernels.

Each rule reads the kernel's ``Compute`` (paths in microsoft/onnxruntime) and returns the
temporaries it takes from the arena (``GetTempSpaceAllocator``), in request order; the
``prepack_*`` functions give what a kernel's ``PrePack`` allocates from the arena when the
session is created — kept (the packed weight) or freed before ``PrePack`` returns (a reordering
buffer) — because those chunks shape the arena that run 1 then allocates from. Weights packed
with ``IAllocator::MakeUniquePtr(..., use_reserve=true)`` (MatMulIntegerBase: QLinearMatMul,
QGemm, MatMulInteger, MatMulIntegerToFloat, DynamicQuantizeMatMul) are reserved outside the
arena's regions and do not count.

Whether QLinearConv takes the symmetric-convolution path depends on the CPU (:mod:`graphmem.ort.mlas`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import onnx
from onnx import TensorProto

from graphmem.model.types import TensorType
from graphmem.optable import MS_DOMAIN, OpTable
from graphmem.ort.mlas import conv_sym_output_alignment
from graphmem.ort.scratch_common import KernelScratch, ScratchSite, attr, concrete_shape

__all__ = [
    "PREPACK_RULES",
    "qlinear_conv",
    "conv_integer",
    "qlinear_matmul",
    "qgemm",
    "dynamic_quantize_matmul",
    "nhwc_max_pool",
    "prepack_requests",
]

#: ``sizeof(const T*)``: one pointer per indirection-buffer entry (x86-64).
POINTER_BYTES = 8
#: ``MLAS_SYMM_QGEMM_BUF_OVERRUN`` (``core/mlas/inc/mlas.h``): 0 off ARM64.
SYMM_QGEMM_BUF_OVERRUN = 0
#: ``FilterOutputChannelPackCount`` and ``KernelInputChannelAlignment`` of every x86-64
#: symmetric-convolution dispatch (``core/mlas/lib/convsym.cpp``); depthwise groups align to 16.
CONV_SYM_OUTPUT_PACK = 16
CONV_SYM_INPUT_ALIGNMENT = 4
CONV_SYM_GROUP_ALIGNMENT = 16


def _strides_one_no_padding(node: onnx.NodeProto, rank: int) -> bool:
    """``ConvAttributes::HasStridesOneAndNoPadding``: the ``strides`` and ``pads`` attributes
    (not the padding ``auto_pad`` implies)."""
    return all(s == 1 for s in attr(node, "strides", [1] * rank)) and all(
        p == 0 for p in attr(node, "pads", [0] * (2 * rank))
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _QConvPlan:
    """How ``QLinearConv<ActType>`` holds its filter: ``packed`` is "sym" (MlasConvSymPackW),
    "gemm" (MlasGemmPackB per group), "reordered" (the filter reordered at PrePack) or ""
    (not prepacked: ``Compute`` reorders it into scratch); ``prepack``: (bytes, kept) arena
    requests of ``PrePack``. Measured on onnxruntime 1.31.1 (``scripts/probes/probe_scratch.py
    --check``, one-node sessions): only the symmetric filter is an arena chunk; the GEMM-packed
    and reordered filters, and the GEMM path's one-group reordering buffer, stay out of the
    arena's regions (the in-use baseline counts the packed and reordered filters, unrounded:
    reserved)."""

    packed: str
    prepack: tuple[tuple[int, bool], ...]


def _qconv_plan(node: onnx.NodeProto, ins: Sequence[TensorType | None], site: ScratchSite) -> _QConvPlan | None:
    """``QLinearConv<ActType>::PrePack`` and ``TryConvSymPrepack`` (``core/providers/cpu/
    quantization/qlinearconv.cc``), or None when a needed type, shape or zero point is unknown."""
    if len(node.input) < 8 or len(ins) < 4 or ins[0] is None or ins[3] is None:
        return None
    w = concrete_shape(ins[3])
    if w is None:
        return None
    group = attr(node, "group", 1)
    if not isinstance(group, int) or group < 1:
        return None
    if not site.is_constant(3) or len(w) <= 2 or w[0] % group:
        return _QConvPlan(packed="", prepack=())
    act_signed, w_signed = ins[0].dtype == TensorProto.INT8, ins[3].dtype == TensorProto.INT8
    m, gi, ks = w[0], w[1], math.prod(w[2:])
    go = m // group
    if w_signed:
        x_zp, w_zp = site.value(2), site.value(5)
        if site.is_constant(2) and site.is_constant(5) and (x_zp is None or w_zp is None):
            return None  # constant zero points too large to be kept: the path is unknown
        if site.is_constant(2) and site.is_constant(5) and x_zp is not None and x_zp.size == 1 \
                and w_zp is not None and not w_zp.any():
            size = _conv_sym_pack_size(group, gi, go, ks, act_signed, site.host.cpu_flags)
            if size:
                return _QConvPlan(packed="sym", prepack=((size, True),))
            # MlasSymmQgemmPackBSize is 0 off ARM64: no symmetric GEMM packing either
    if gi != 1 or go != 1:
        return _QConvPlan(packed="gemm", prepack=())
    return _QConvPlan(packed="reordered", prepack=())  # reserved


def _conv_sym_pack_size(group: int, gi: int, go: int, ks: int, act_signed: bool, flags: frozenset[str]) -> int:
    """``MlasConvSymPackWSize`` (``core/mlas/lib/convsym.cpp``) on an x86-64 CPU with ``flags``."""
    alignment = conv_sym_output_alignment(flags)
    if act_signed or alignment is None:
        return 0
    if group > 1:
        if gi == 1 and go == 1 and group % CONV_SYM_GROUP_ALIGNMENT == 0:
            return group * ks
        return 0
    if go < CONV_SYM_OUTPUT_PACK or gi % CONV_SYM_INPUT_ALIGNMENT or go % alignment:
        return 0
    return -(-go // CONV_SYM_OUTPUT_PACK) * CONV_SYM_OUTPUT_PACK * gi * ks


def qlinear_conv(node, ins, outs, site):
    """``QLinearConv<ActType>::Compute`` (``core/providers/cpu/quantization/qlinearconv.cc``;
    com.microsoft's channels-last variant is the same kernel), after Y: the filter reordered
    when it was not prepacked; the int32 GEMM output of one image (``M·out_image``) unless the
    symmetric convolution requantizes in its kernel; for channels-first data a transposed input
    and output image; then for a depthwise or (symmetric, non-pointwise) convolution the
    indirection buffer (a pointer per kernel tap and output pixel; of every image for a symmetric
    channels-last convolution, which runs the batch in one parallel section), else for a non-pointwise one
    the im2col buffer of one group (all groups beyond 2-D kernels)."""
    plan = _qconv_plan(node, ins, site)
    x, w, y = concrete_shape(ins[0]), concrete_shape(ins[3]), concrete_shape(outs[0]) if outs else None
    if plan is None or x is None or w is None or y is None or len(x) < 3:
        return None
    channels_last = attr(node, "channels_last", 0) != 0
    rank = len(w) - 2
    kernel = list(attr(node, "kernel_shape", w[2:]))
    ks = math.prod(kernel)
    c = x[-1] if channels_last else x[1]
    in_image = math.prod(x[1:-1] if channels_last else x[2:])
    out_image = math.prod(y[1:-1] if channels_last else y[2:])
    act = 1  # uint8_t / int8_t
    m, group = w[0], attr(node, "group", 1)
    gi, go = w[1], m // group
    req: list[int] = []
    if plan.packed == "":
        req.append(math.prod(w))  # Compute's ReorderFilter into a temporary
    sym = plan.packed == "sym"
    depthwise = (sym or plan.packed in ("", "reordered")) and gi == 1 and go == 1
    if depthwise:
        gi, go, group = group, group, 1
    y_image = m * out_image
    if not sym:
        req.append(4 * y_image)
    if not channels_last:
        req += [act * (c * in_image + SYMM_QGEMM_BUF_OVERRUN), act * y_image]
    pointwise = ks == 1 and _strides_one_no_padding(node, rank)
    if depthwise or (sym and not pointwise):
        # parallel_batch (symmetric and channels-last): one indirection buffer per image
        images = x[0] if sym and channels_last else 1
        req.append(POINTER_BYTES * ks * out_image * images)
    elif not pointwise:
        col = gi * ks * out_image
        req.append(act * ((group * col if rank > 2 else col) + SYMM_QGEMM_BUF_OVERRUN))
    return KernelScratch(after=tuple(req))


def conv_integer(node, ins, outs, site):
    """``ConvInteger::Compute`` (``core/providers/cpu/quantization/conv_integer.cc``): unless
    pointwise, an im2col buffer of ``C/group·prod(kernel)·out_image`` bytes, after Y."""
    x, w, y = (
        concrete_shape(ins[0]),
        concrete_shape(ins[1]) if len(ins) > 1 else None,
        concrete_shape(outs[0]) if outs else None,
    )
    group = attr(node, "group", 1)
    if x is None or w is None or y is None or len(x) < 3 or not isinstance(group, int) or group < 1:
        return None
    kernel = list(attr(node, "kernel_shape", w[2:]))
    if math.prod(kernel) == 1 and _strides_one_no_padding(node, len(kernel)):
        return KernelScratch()
    return KernelScratch(after=(x[1] // group * math.prod(kernel) * math.prod(y[2:]),))


def qlinear_matmul(node, ins, outs, site):
    """``QLinearMatMul::Compute`` (``core/providers/cpu/quantization/quantize_linear_matmul.cc``):
    the int32 GEMM outputs of every batch (``M·N·num_gemms``, as many as Y's elements), after Y."""
    y = concrete_shape(outs[0]) if outs else None
    return None if y is None else KernelScratch(after=(4 * math.prod(y),))


def qgemm(node, ins, outs, site):
    """``QGemm::Compute`` (``contrib_ops/cpu/quantization/quant_gemm.cc``), after Y: A transposed
    (transA), B transposed when it was not prepacked (transB), the int32 GEMM output when Y is
    requantized (a y_scale is given)."""
    a, b = concrete_shape(ins[0]), concrete_shape(ins[3]) if len(ins) > 3 else None
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return None
    trans_a, trans_b = attr(node, "transA", 0) != 0, attr(node, "transB", 0) != 0
    m, k = (a[1], a[0]) if trans_a else a
    n = b[0] if trans_b else b[1]
    req = []
    if trans_a:
        req.append(m * k)
    if trans_b and not site.is_constant(3):
        req.append(n * k)
    if len(node.input) > 7 and node.input[7]:
        req.append(4 * m * n)
    return KernelScratch(after=tuple(req))


def dynamic_quantize_matmul(node, ins, outs, site):
    """``DynamicQuantizeMatMul::Compute`` (``contrib_ops/cpu/quantization/
    dynamic_quantize_matmul.cc``): A quantized to uint8, before Y."""
    a = concrete_shape(ins[0]) if ins else None
    return None if a is None else KernelScratch(before=(math.prod(a),))


def nhwc_max_pool(node, ins, outs, site):
    """``NhwcMaxPool<T8Bits>::Compute`` (``contrib_ops/cpu/quantization/nhwc_max_pool.cc``): an
    indirection buffer of a pointer per kernel tap for up to 512 output pixels, after Y."""
    y = concrete_shape(outs[0]) if outs else None
    kernel = attr(node, "kernel_shape", None)
    if y is None or kernel is None or len(y) < 3:
        return None
    return KernelScratch(after=(POINTER_BYTES * math.prod(kernel) * min(math.prod(y[1:-1]), 512),))


def _qlinear_conv_prepack(node: onnx.NodeProto, ins: Sequence[TensorType | None],
                          site: ScratchSite) -> tuple[tuple[int, bool], ...]:
    """QLinearConv keeps its symmetric packed filter (``alloc->Alloc`` in ``TryConvSymPrepack``;
    see :class:`_QConvPlan` for the other paths)."""
    plan = _qconv_plan(node, ins, site)
    return () if plan is None else plan.prepack


def _qgemm_prepack(node: onnx.NodeProto, ins: Sequence[TensorType | None],
                   site: ScratchSite) -> tuple[tuple[int, bool], ...]:
    """QGemm with transB transposes a constant B into a temporary tensor before packing it
    (``quantization::TransPoseInputData``; the packed B is reserved outside the regions)."""
    if len(node.input) > 3 and site.is_constant(3) and attr(node, "transB", 0):
        b = concrete_shape(ins[3]) if len(ins) > 3 else None
        if b is not None and len(b) == 2:
            return ((math.prod(b), False),)
    return ()


PrepackRule = Callable[[onnx.NodeProto, Sequence[TensorType | None], ScratchSite], tuple[tuple[int, bool], ...]]

#: The kernels whose ``PrePack`` allocates from the arena -> the requests it makes.
PREPACK_RULES: OpTable[PrepackRule] = OpTable(
    {("", "QLinearConv"): _qlinear_conv_prepack, (MS_DOMAIN, "QLinearConv"): _qlinear_conv_prepack,
     (MS_DOMAIN, "QGemm"): _qgemm_prepack}
)


def prepack_requests(
    node: onnx.NodeProto, ins: Sequence[TensorType | None], site: ScratchSite
) -> tuple[tuple[int, bool], ...]:
    """Arena requests ``node``'s kernel makes in ``PrePack`` when the session is created, as
    (bytes, kept) in order (:data:`PREPACK_RULES`; none for another kernel); a buffer not kept is
    freed before the next request of another kernel."""
    rule = PREPACK_RULES.of(node)
    return () if rule is None else rule(node, ins, site)
