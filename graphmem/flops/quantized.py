"""Quantized kernels: their work goes to ``int_ops`` (see :mod:`graphmem.flops.conventions`).

Dequantize is 2 ops per element (sub zero-point, mul scale), quantize/requantize 5 (scale,
round, add zero-point, clamp twice), an integer multiply-add 2 (and 1 MAC). A QLinear
elementwise op is defined as dequantize inputs → float op → requantize, all booked as int_ops.
Float epilogues of integer matmuls (scale to float, bias) are FLOPs.
"""

from __future__ import annotations

import math

from graphmem.flops.cost import Cost, MissingInfo, NodeView, Rule, broadcast, counted, numel, rule
from graphmem.flops.linear import DEQUANT, REQUANT, matmul_dims

__all__ = [
    "quantize_linear",
    "dequantize_linear",
    "dynamic_quantize_linear",
    "qlinear_elementwise",
    "qlinear_average_pool",
    "qlinear_global_average_pool",
    "qlinear_reduce_mean",
    "qgemm",
    "matmul_integer_to_float",
    "dynamic_quantize_matmul",
    "matmul_nbits",
    "matmul_bnb4",
    "gather_block_quantized",
    "mul_integer",
    "reduce_sum_integer",
]


@rule
def quantize_linear(node: NodeView) -> Cost:
    """QuantizeLinear: 5 int_ops per element."""
    return counted(int_ops=REQUANT * numel(node.in_shape(0)))


@rule
def dequantize_linear(node: NodeView) -> Cost:
    """DequantizeLinear: 2 int_ops per element."""
    return counted(int_ops=DEQUANT * numel(node.in_shape(0)))


@rule
def dynamic_quantize_linear(node: NodeView) -> Cost:
    """DynamicQuantizeLinear: min and max over x (2 compares/element), then quantize (5)."""
    return counted(int_ops=(2 + REQUANT) * numel(node.in_shape(0)))


def qlinear_elementwise(per: int, data: tuple[int, ...] = (0,), *, concat: bool = False) -> Rule:
    """QLinearAdd/Mul/Sigmoid/LeakyRelu/Softmax/Concat/Where: ``per`` int_ops per output element
    (dequantize each quantized input, the float op, requantize). Without a known output, the
    elements are the broadcast of the ``data`` inputs (``concat``: the sum of QLinearConcat's)."""

    @rule
    def qlinear_rule(node: NodeView) -> Cost:
        y = node.known_out(0)
        if y is not None:
            n = numel(y)
        elif concat:  # inputs: Y_scale, Y_zp, then (x, scale, zp) triples
            n = sum(numel(node.in_shape(i)) for i in range(2, len(node.inputs), 3))
        else:
            n = numel(broadcast(*(node.in_shape(i) for i in data)))
        return counted(int_ops=per * n)

    return qlinear_rule


@rule
def qlinear_average_pool(node: NodeView) -> Cost:
    """QLinearAveragePool: dequantize inputs, average K taps per output, requantize outputs."""
    kernel = node.attr_ints("kernel_shape")
    if not kernel:
        raise MissingInfo("kernel_shape missing")
    n_out = numel(node.out_shape(0))
    ops = DEQUANT * numel(node.in_shape(0)) + (math.prod(kernel) + REQUANT) * n_out
    return counted(int_ops=ops)


@rule
def qlinear_global_average_pool(node: NodeView) -> Cost:
    """QLinearGlobalAveragePool: dequantize (2) and sum (1) per input, requantize per output."""
    n_in = numel(node.in_shape(0))
    return counted(int_ops=(DEQUANT + 1) * n_in + REQUANT * numel(node.out_shape(0)))


@rule
def qlinear_reduce_mean(node: NodeView) -> Cost:
    """QLinearReduceMean: dequantize, reduce (in - out adds, a divide per output), requantize."""
    n_in = numel(node.in_shape(0))
    n_out = numel(node.out_shape(0))
    return counted(int_ops=DEQUANT * n_in + (n_in - n_out) + (1 + REQUANT) * n_out)


@rule
def qgemm(node: NodeView) -> Cost:
    """com.microsoft QGemm: integer Gemm; requantized output with y_scale, else float output
    (scale multiply and C add as FLOPs)."""
    a = node.in_shape(0)
    b = node.in_shape(3)
    m, k = (a[1], a[0]) if node.attr_int("transA", 0) else (a[0], a[1])
    n = b[0] if node.attr_int("transB", 0) else b[1]
    macs = m * n * k
    c_add = m * n if node.has_input(6) else 0
    if node.has_input(7):
        return counted(int_ops=2 * macs + c_add + REQUANT * m * n, macs=macs)
    return counted(int_ops=2 * macs, flops=m * n + c_add, macs=macs)


def _int_matmul(node: NodeView) -> tuple[int, int]:
    """(MACs, output elements) of a numpy-style matmul of inputs 0 and 1."""
    batch, m, n, k = matmul_dims(node.in_shape(0), node.in_shape(1))
    return batch * m * n * k, batch * m * n


@rule
def matmul_integer_to_float(node: NodeView) -> Cost:
    """MatMulIntegerToFloat: integer matmul, then scale to float (+ bias) per output element."""
    macs, n = _int_matmul(node)
    return counted(int_ops=2 * macs, flops=n * (1 + int(node.has_input(6))), macs=macs)


@rule
def dynamic_quantize_matmul(node: NodeView) -> Cost:
    """DynamicQuantizeMatMul: quantize A dynamically (7/element), integer matmul, float epilogue."""
    macs, n = _int_matmul(node)
    a = numel(node.in_shape(0))
    return counted(
        int_ops=2 * macs + (2 + REQUANT) * a, flops=n * (1 + int(node.has_input(4))), macs=macs
    )


def _kn(node: NodeView) -> tuple[int, int]:
    k, n = node.attr_int("K", 0), node.attr_int("N", 0)
    if k <= 0 or n <= 0:
        raise MissingInfo("K / N attributes missing")
    return k, n


@rule
def matmul_nbits(node: NodeView) -> Cost:
    """MatMulNBits: float MACs M·N·K = numel(Y)·K; the N·K weights dequantized once (2 int_ops
    each); the optional bias 1 per output."""
    k, n = _kn(node)
    y = numel(node.in_shape(0)) // k * n  # A (..., K) → Y (..., N)
    macs = y * k
    return counted(flops=2 * macs + (y if node.has_input(5) else 0), macs=macs, int_ops=DEQUANT * n * k)


@rule
def matmul_bnb4(node: NodeView) -> Cost:
    """MatMulBnb4: float MACs numel(Y)·(A's last dim); N·K 4-bit weights dequantized (2 each)."""
    k, n = _kn(node)
    macs = numel(node.out_shape(0)) * node.in_shape(0)[-1]
    return counted(flops=2 * macs, macs=macs, int_ops=DEQUANT * n * k)


@rule
def gather_block_quantized(node: NodeView) -> Cost:
    """GatherBlockQuantized: a gather, then dequantize each gathered element (2)."""
    return counted(int_ops=DEQUANT * numel(node.out_shape(0)))


@rule
def mul_integer(node: NodeView) -> Cost:
    """MulInteger: (A - zpA)·(B - zpB): 3 int_ops per output element."""
    return counted(int_ops=3 * numel(broadcast(node.in_shape(0), node.in_shape(2))))


@rule
def reduce_sum_integer(node: NodeView) -> Cost:
    """ReduceSumInteger: in - out integer adds."""
    return counted(int_ops=numel(node.in_shape(0)) - numel(node.out_shape(0)))
