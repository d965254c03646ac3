"""Contractions: Conv and its relatives, Gemm, MatMul, Einsum, and their quantized forms.

MACs are the multiply-accumulates of the contraction; FLOPs = 2 × MACs plus the epilogue (bias,
alpha/beta scaling, fused activation). Quantized kernels put their integer MACs ×2 and their
requantization into ``int_ops`` (see :mod:`graphmem.flops.conventions`).
"""

from __future__ import annotations

import math

from graphmem.flops.cost import Cost, MalformedNode, MissingInfo, NodeView, broadcast, counted, numel, rule
from graphmem.flops.families import activation_cost

__all__ = [
    "conv_out_elems",
    "conv_macs",
    "matmul_dims",
    "einsum_cost",
    "conv",
    "conv_transpose",
    "deform_conv",
    "gemm",
    "matmul",
    "fused_matmul",
    "einsum",
    "conv_integer",
    "qlinear_conv",
    "matmul_integer",
    "qlinear_matmul",
    "REQUANT",
    "DEQUANT",
]

#: int_ops per element to requantize (mul scale, round, add zero-point, clamp ×2) / quantize.
REQUANT = 5
#: int_ops per element to dequantize (sub zero-point, mul scale).
DEQUANT = 2


def conv_out_elems(node: NodeView, w_index: int = 1) -> int:
    """Elements of a convolution's output: from its type, else by the conv arithmetic.

    Contrib convolutions (FusedConv, NhwcConv) have no ONNX shape inference, so their output
    type is often unknown while X and W are: out_i = floor((in_i + pads - d·(k-1) - 1) / s) + 1,
    or ceil(in_i / s) for SAME_* auto_pad.
    """
    y = node.known_out(0)
    if y is not None:
        return numel(y)
    x = node.in_shape(0)
    w = node.in_shape(w_index)
    nhwc = node.op_type in ("NhwcConv", "NhwcFusedConv") or node.attr_int("channels_last", 0) == 1
    spatial_in = x[1:-1] if nhwc else x[2:]
    r = len(spatial_in)
    kernel = node.attr_ints("kernel_shape") or w[2:]  # NHWC schemas keep W in ONNX layout
    strides = node.attr_ints("strides") or (1,) * r
    dil = node.attr_ints("dilations") or (1,) * r
    pads = node.attr_ints("pads") or (0,) * (2 * r)
    auto_pad = node.attr_str("auto_pad", "NOTSET")
    out = 1
    for i in range(r):
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-spatial_in[i] // strides[i])
        else:
            extent = dil[i] * (kernel[i] - 1) + 1
            total = spatial_in[i] + (0 if auto_pad == "VALID" else pads[i] + pads[i + r])
            o = (total - extent) // strides[i] + 1
        out *= max(o, 0)
    return x[0] * w[0] * out


def conv_macs(node: NodeView, w_index: int = 1) -> int:
    """N·Cout·prod(out spatial)·(Cin/group)·prod(kernel) = numel(Y) · prod(W.shape[1:]).

    W is (Cout, Cin/group, k1, k2, ...) for every Conv form — grouped, depthwise, dilated,
    1-D/2-D/3-D — and its product over dims 1.. is the same in the NHWC variants.
    """
    w = node.in_shape(w_index)
    return conv_out_elems(node, w_index) * math.prod(w[1:])


@rule
def conv(node: NodeView) -> Cost:
    """Conv, NhwcConv, FusedConv, NhwcFusedConv, nchwc Conv: MACs + bias + Z-add + activation."""
    macs = conv_macs(node)
    n = conv_out_elems(node)
    flops = 2 * macs
    if node.has_input(2):
        flops += n  # bias, one add per output element
    if node.has_input(3):
        flops += n  # FusedConv's Z (residual sum)
    flops += n * activation_cost(node.attr_str("activation", ""))
    return counted(flops=flops, macs=macs)


@rule
def conv_transpose(node: NodeView) -> Cost:
    """ConvTranspose: each input element scatters into Cout/group × prod(kernel) outputs.

    W is (Cin, Cout/group, k...): MACs = numel(X) · prod(W.shape[1:]) (fvcore's rule).
    """
    x = node.in_shape(0)
    w = node.in_shape(1)
    macs = numel(x) * math.prod(w[1:])
    flops = 2 * macs
    bias = 3 if node.op_type == "ConvTransposeWithDynamicPads" else 2
    if node.has_input(bias):
        flops += numel(node.out_shape(0))
    return counted(flops=flops, macs=macs)


@rule
def deform_conv(node: NodeView) -> Cost:
    """DeformConv: Conv MACs plus one bilinear sample (7 FLOPs; +1 with a mask) per column.

    The sampled column buffer has N·prod(out spatial)·Cin·prod(kernel) entries.
    """
    y = node.out_shape(0)
    x = node.in_shape(0)
    w = node.in_shape(1)
    macs = numel(y) * math.prod(w[1:])
    samples = (numel(y) // y[1]) * x[1] * math.prod(w[2:])
    flops = 2 * macs + samples * (7 + int(node.has_input(4)))
    if node.has_input(3):
        flops += numel(y)
    return counted(flops=flops, macs=macs)


def _gemm_mnk(node: NodeView) -> tuple[int, int, int]:
    a = node.in_shape(0)
    b = node.in_shape(1)
    m, k = (a[1], a[0]) if node.attr_int("transA", 0) else (a[0], a[1])
    n = b[0] if node.attr_int("transB", 0) else b[1]
    return m, n, k


@rule
def gemm(node: NodeView) -> Cost:
    """Gemm (and FusedGemm, GemmFloat8): Y = alpha·A'·B' + beta·C.

    MACs = M·N·K; alpha ≠ 1 adds M·N multiplies; C adds M·N adds (whatever its broadcast shape)
    and beta ∉ {0, 1} another M·N multiplies; a fused activation its per-element cost.
    """
    m, n, k = _gemm_mnk(node)
    macs = m * n * k
    flops = 2 * macs
    if node.attr_float("alpha", 1.0) != 1.0:
        flops += m * n
    beta = node.attr_float("beta", 1.0)
    if node.has_input(2) and beta != 0.0:
        flops += m * n * (1 if beta == 1.0 else 2)
    flops += m * n * activation_cost(node.attr_str("activation", ""))
    return counted(flops=flops, macs=macs)


def matmul_dims(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, int, int, int]:
    """(batch, M, N, K) of numpy matmul: 1-D operands are promoted, batch dims broadcast."""
    if not a or not b:
        raise MalformedNode("matmul of a scalar")
    a2 = (1, a[0]) if len(a) == 1 else a
    b2 = (b[0], 1) if len(b) == 1 else b
    batch = math.prod(broadcast(a2[:-2], b2[:-2]))
    return batch, a2[-2], b2[-1], a2[-1]


def _matmul_macs(node: NodeView, a: tuple[int, ...], b: tuple[int, ...]) -> int:
    batch, m, n, k = matmul_dims(a, b)
    return batch * m * n * k


@rule
def matmul(node: NodeView) -> Cost:
    """MatMul: MACs = batch·M·N·K with numpy broadcasting of the batch dims."""
    macs = _matmul_macs(node, node.in_shape(0), node.in_shape(1))
    return counted(flops=2 * macs, macs=macs)


def _fused_operand(shape: tuple[int, ...], trans: int, trans_batch: int) -> tuple[int, ...]:
    """FusedMatMul operand after transBatch (dim 0 moved behind the batch dims) and trans."""
    s = shape
    if trans_batch and len(s) > 2:
        s = (*s[1:-1], s[0], s[-1])
    if trans and len(s) >= 2:
        s = (*s[:-2], s[-1], s[-2])
    return s


@rule
def fused_matmul(node: NodeView) -> Cost:
    """com.microsoft FusedMatMul / TransposeMatMul / FusedMatMulActivation: alpha·op(A)·op(B)."""
    a = _fused_operand(node.in_shape(0), node.attr_int("transA", 0), node.attr_int("transBatchA", 0))
    b = _fused_operand(node.in_shape(1), node.attr_int("transB", 0), node.attr_int("transBatchB", 0))
    batch, m, n, _ = matmul_dims(a, b)
    macs = _matmul_macs(node, a, b)
    n_out = batch * m * n
    flops = 2 * macs
    if node.attr_float("alpha", 1.0) != 1.0:
        flops += n_out
    flops += n_out * activation_cost(node.attr_str("activation", ""))
    return counted(flops=flops, macs=macs)


def einsum_cost(equation: str, shapes: list[tuple[int, ...]]) -> tuple[int, int] | None:
    """(MACs, additions) of an Einsum; None when it only moves data.

    Two operands: MACs = the product of the sizes of all indices (each combination of index
    values is one multiply-accumulate). n operands: contracted pairwise left to right; the
    intermediate keeps the indices still needed (by the output or a later operand), and each step
    costs the product of the sizes of its pair's indices. One operand: a sum over the indices
    missing from the output is a reduction, ``prod(all sizes) - prod(output sizes)`` additions
    and no MAC; a pure transpose or diagonal (nothing summed) moves data only.
    """
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise MalformedNode(f"einsum '{equation}' has {len(terms)} operands, got {len(shapes)}")
    sizes: dict[str, int] = {}
    operand_idx: list[list[str]] = []
    ell_rank = 0
    for term, shape in zip(terms, shapes):
        before, dots, after = term.partition("...")
        letters = list(before) + list(after)
        n_ell = len(shape) - len(letters) if dots else 0
        if n_ell < 0 or (not dots and len(letters) != len(shape)):
            raise MalformedNode(f"einsum term '{term}' does not match rank {len(shape)}")
        ell_rank = max(ell_rank, n_ell)
        ell = [f".{n_ell - 1 - j}" for j in range(n_ell)]  # named from the right: they broadcast
        idx = list(before) + ell + list(after)
        for name, d in zip(idx, shape):
            prev = sizes.get(name)
            sizes[name] = d if prev is None or prev == 1 else prev  # 1 broadcasts
        operand_idx.append(idx)
    ell_all = [f".{ell_rank - 1 - j}" for j in range(ell_rank)]
    if arrow:
        before, dots, after = rhs.partition("...")
        out = set(before) | set(after) | (set(ell_all) if dots else set())
    else:
        counts: dict[str, int] = {}
        for idx in operand_idx:
            for name in idx:
                counts[name] = counts.get(name, 0) + 1
        out = {n for n, c in counts.items() if c == 1 or n.startswith(".")}
    if len(operand_idx) == 1:
        only = set(operand_idx[0])
        if only <= out:
            return None
        return 0, math.prod(sizes[n] for n in only) - math.prod(sizes[n] for n in only & out)
    macs = 0
    cur = set(operand_idx[0])
    for j in range(1, len(operand_idx)):
        pair = cur | set(operand_idx[j])
        macs += math.prod(sizes[n] for n in pair)
        later = set(out)
        for idx in operand_idx[j + 1 :]:
            later |= set(idx)
        cur = pair & later
    return macs, 0


@rule
def einsum(node: NodeView) -> Cost:
    """Einsum: see :func:`einsum_cost`; FLOPs = 2 × MACs (+ the additions of a reduction)."""
    eq = node.attr_str("equation", "")
    if not eq:
        raise MissingInfo("equation missing")
    shapes = [node.in_shape(i) for i in range(len(node.inputs))]
    cost = einsum_cost(eq, shapes)
    if cost is None:
        return Cost(outcome="zero")
    macs, adds = cost
    return counted(flops=2 * macs + adds, macs=macs)


@rule
def conv_integer(node: NodeView) -> Cost:
    """ConvInteger: integer MACs, 2 int_ops each (zero points folded into the kernel)."""
    macs = conv_macs(node)
    return counted(int_ops=2 * macs, macs=macs)


@rule
def qlinear_conv(node: NodeView) -> Cost:
    """QLinearConv: 2 int_ops per MAC, the int32 bias add, and a requantize per output."""
    macs = conv_macs(node, w_index=3)
    n = conv_out_elems(node, w_index=3)
    ops = 2 * macs + REQUANT * n + (n if node.has_input(8) else 0)
    return counted(int_ops=ops, macs=macs)


@rule
def matmul_integer(node: NodeView) -> Cost:
    """MatMulInteger (and MatMulInteger16): 2 int_ops per MAC."""
    macs = _matmul_macs(node, node.in_shape(0), node.in_shape(1))
    return counted(int_ops=2 * macs, macs=macs)


@rule
def qlinear_matmul(node: NodeView) -> Cost:
    """QLinearMatMul: 2 int_ops per MAC and a requantize per output element."""
    batch, m, n, k = matmul_dims(node.in_shape(0), node.in_shape(3))
    macs = batch * m * n * k
    return counted(int_ops=2 * macs + REQUANT * batch * m * n, macs=macs)

