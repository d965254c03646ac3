"""Rules for onnxruntime's contrib domains: ``com.microsoft`` and ``com.microsoft.nchwc``.

These ops have no ONNX schema, so a rule sees only the types the file (or graphmem's inference)
gives. Formulas follow each op's doc in onnxruntime (``core/graph/contrib_ops/*_defs.cc``).
"""

from __future__ import annotations

import math

from graphmem.flops import linear, normalization, quantized, sequence, special
from graphmem.flops.conventions import ELEMENT_COSTS
from graphmem.flops.cost import ZERO, Cost, MissingInfo, NodeView, Rule, counted, numel, rule
from graphmem.flops.families import (
    activation_cost,
    elementwise,
    global_pool,
    out_elems,
    pool,
    rms_flops,
    zero,
)
from graphmem.flops.linear import DEQUANT, REQUANT
from graphmem.optable import MS_DOMAIN, NCHWC_DOMAIN, OpRule, OpTable, domain_ops, domain_table, with_outcome

__all__ = ["MS_TABLE", "NCHWC_TABLE"]


def _ms_elementwise(op: str) -> Rule:
    return elementwise(ELEMENT_COSTS[(MS_DOMAIN, op)])


@rule
def fast_gelu(node: NodeView) -> Cost:
    """FastGelu: tanh-approximated Gelu (9/element) + 1 for the optional bias."""
    n = out_elems(node)
    return counted(flops=(ELEMENT_COSTS[(MS_DOMAIN, "FastGelu")] + int(node.has_input(1))) * n)


@rule
def bias_split_gelu(node: NodeView) -> Cost:
    """BiasSplitGelu: Y = (X+b)[left] · Gelu((X+b)[right]): per output 2 bias adds, Gelu 5, mul 1.

    Y is half of X (the last axis is split in two)."""
    y = node.known_out(0)
    n = numel(y) if y is not None else numel(node.in_shape(0)) // 2
    return counted(flops=8 * n)


@rule
def bias_dropout(node: NodeView) -> Cost:
    """BiasDropout (inference): data + bias (+ residual); the dropout itself is zero."""
    n = out_elems(node)
    return counted(flops=n * (1 + int(node.has_input(2))))


@rule
def gemm_fast_gelu(node: NodeView) -> Cost:
    """GemmFastGelu: X·W (+ bias) then FastGelu (9/element)."""
    x, w = node.in_shape(0), node.in_shape(1)
    y = numel(x) // x[-1] * w[-1] if x[-1] else 0
    macs = y * x[-1]
    return counted(flops=2 * macs + y * (9 + int(node.has_input(2))), macs=macs)


@rule
def cdist(node: NodeView) -> Cost:
    """CDist: per (a, b) pair, K subtract-square-adds (3K), + sqrt for 'euclidean'."""
    k = node.in_shape(0)[-1]
    extra = 1 if node.attr_str("metric", "sqeuclidean") == "euclidean" else 0
    return counted(flops=numel(node.out_shape(0)) * (3 * k + extra))


@rule
def complex_mul(node: NodeView) -> Cost:
    """ComplexMul / ComplexMulConj: 4 mul + 2 add per complex element = 3 per real output."""
    return counted(flops=3 * out_elems(node))


@rule
def inverse(node: NodeView) -> Cost:
    """Inverse: Gauss-Jordan, 2n³ FLOPs per n×n matrix."""
    x = node.in_shape(0)
    n = x[-1]
    return counted(flops=(numel(x) // (n * n) if n else 0) * 2 * n**3)


@rule
def rfft(node: NodeView) -> Cost:
    """Rfft / Irfft (1-D): one real FFT of the last-axis length n per signal."""
    real = node.in_shape(0) if node.op_type == "Rfft" else node.out_shape(0)
    n = real[-1]
    transforms = numel(real) // n if n else 0
    return counted(flops=transforms * special.fft_flops(n, real=True))


@rule
def crop_and_resize(node: NodeView) -> Cost:
    """CropAndResize: bilinear (7/output element) or nearest (zero)."""
    if node.attr_str("mode", "bilinear") == "nearest":
        return ZERO
    return counted(flops=special.interp_flops("linear", 2) * numel(node.out_shape(0)))


_MOE_ACT = {"relu": 1, "gelu": 5, "silu": 2, "identity": 0, "swiglu": 8}


@rule
def moe(node: NodeView) -> Cost:
    """MoE: each token runs k experts; per expert FC1 (+FC3), activation, FC2.

    MACs per token-expert = prod(fc1[1:]) + prod(fc2[1:]) (+ prod(fc3[1:])), whatever the weight
    layout. Plus the router softmax (5) and top-k selection per router element, expert biases,
    and the weighted combine (2 per token-expert per hidden element). SwiGLU (clamps, sigmoid,
    gating) is 8 per intermediate element.
    """
    x = node.in_shape(0)
    hidden = x[-1]
    tokens = numel(x) // hidden if hidden else 0
    k = node.attr_int("k", 1)
    fc1, fc2 = node.in_shape(2), node.in_shape(4)
    per_expert = math.prod(fc1[1:]) + math.prod(fc2[1:])
    if node.has_input(6):
        per_expert += math.prod(node.in_shape(6)[1:])
    inter = math.prod(fc2[1:]) // hidden if hidden else 0
    act = _MOE_ACT.get(node.attr_str("activation_type", "relu"))
    if act is None:
        raise MissingInfo(f"unknown MoE activation '{node.attr_str('activation_type', '')}'")
    macs = tokens * k * per_expert
    router = numel(node.in_shape(1))
    flops = 2 * macs + tokens * k * (inter * act + 2 * hidden)
    flops += router * (5 + max(1, math.ceil(math.log2(k)) if k > 1 else 1))
    if node.has_input(3):
        flops += tokens * k * (math.prod(fc1[1:]) // hidden if hidden else 0)
    if node.has_input(5):
        flops += tokens * k * hidden
    return counted(flops=flops, macs=macs)


@rule
def gated_rms_norm(node: NodeView) -> Cost:
    """GatedRMSNorm: RMS norm over C = len(scale) with scale, times act(gate) (+1 multiply)."""
    x = node.in_shape(0)
    c = node.in_shape(1)[-1]
    n = numel(x)
    gate = activation_cost(node.attr_str("activation", "silu"))
    return counted(flops=rms_flops(n, n // c if c else 0, scaled=True) + (gate + 1) * n)


def _ms_table() -> OpTable[OpRule[Rule]]:
    counted_rules: dict[str, Rule] = {
        # contractions
        "FusedConv": linear.conv,
        "NhwcConv": linear.conv,
        "NhwcFusedConv": linear.conv,
        "CausalConvWithState": linear.conv,
        "ConvTransposeWithDynamicPads": linear.conv_transpose,
        "FusedGemm": linear.gemm,
        "GemmFloat8": linear.gemm,
        "FusedMatMul": linear.fused_matmul,
        "TransposeMatMul": linear.fused_matmul,
        "FusedMatMulActivation": linear.fused_matmul,
        "GemmFastGelu": gemm_fast_gelu,
        # quantized
        "QLinearConv": linear.qlinear_conv,
        "MatMulInteger16": linear.matmul_integer,
        "MatMulIntegerToFloat": quantized.matmul_integer_to_float,
        "DynamicQuantizeMatMul": quantized.dynamic_quantize_matmul,
        "MatMulNBits": quantized.matmul_nbits,
        "MatMulBnb4": quantized.matmul_bnb4,
        "QGemm": quantized.qgemm,
        "QuantizeLinear": quantized.quantize_linear,
        "DequantizeLinear": quantized.dequantize_linear,
        "QLinearAveragePool": quantized.qlinear_average_pool,
        "QLinearGlobalAveragePool": quantized.qlinear_global_average_pool,
        "QLinearReduceMean": quantized.qlinear_reduce_mean,
        "GatherBlockQuantized": quantized.gather_block_quantized,
        "MulInteger": quantized.mul_integer,
        "ReduceSumInteger": quantized.reduce_sum_integer,
        # QLinear elementwise: dequantize each quantized input (2), the float op, requantize (5)
        "QLinearAdd": quantized.qlinear_elementwise(2 * DEQUANT + 1 + REQUANT, data=(0, 3)),
        "QLinearMul": quantized.qlinear_elementwise(2 * DEQUANT + 1 + REQUANT, data=(0, 3)),
        "QLinearSigmoid": quantized.qlinear_elementwise(DEQUANT + 1 + REQUANT),
        "QLinearLeakyRelu": quantized.qlinear_elementwise(DEQUANT + 2 + REQUANT),
        "QLinearSoftmax": quantized.qlinear_elementwise(DEQUANT + 5 + REQUANT),
        # each input requantized to the output's scale
        "QLinearConcat": quantized.qlinear_elementwise(DEQUANT + REQUANT, concat=True),
        # select, then requantize the chosen value
        "QLinearWhere": quantized.qlinear_elementwise(1 + DEQUANT + REQUANT, data=(0, 1, 4)),
        "DynamicQuantizeLSTM": sequence.dynamic_quantize_lstm,
        "QAttention": sequence.ms_attention,
        # activations and elementwise fusions
        "Gelu": _ms_elementwise("Gelu"),
        "BiasGelu": _ms_elementwise("BiasGelu"),
        "QuickGelu": _ms_elementwise("QuickGelu"),
        "ScaledSiLU": _ms_elementwise("ScaledSiLU"),
        "BiasAdd": _ms_elementwise("BiasAdd"),
        "GatedAdd": _ms_elementwise("GatedAdd"),
        "FastGelu": fast_gelu,
        "BiasSplitGelu": bias_split_gelu,
        "BiasDropout": bias_dropout,
        "ComplexMul": complex_mul,
        "ComplexMulConj": complex_mul,
        # normalizations and softmax
        "LayerNormalization": normalization.layer_norm,
        "SimplifiedLayerNormalization": normalization.rms_norm,
        "SkipLayerNormalization": normalization.skip_layer_norm,
        "SkipSimplifiedLayerNormalization": normalization.skip_layer_norm,
        "EmbedLayerNormalization": normalization.embed_layer_norm,
        "GroupNorm": normalization.ms_group_norm,
        "SkipGroupNorm": normalization.ms_group_norm,
        "GatedRMSNorm": gated_rms_norm,
        "BiasSoftmax": normalization.softmax,
        # attention
        "Attention": sequence.ms_attention,
        "DecoderMaskedSelfAttention": sequence.ms_attention,
        "MultiHeadAttention": sequence.multi_head_attention,
        "DecoderMaskedMultiHeadAttention": sequence.decoder_masked_multi_head_attention,
        "GroupQueryAttention": sequence.group_query_attention,
        "RotaryEmbedding": sequence.rotary_embedding,
        "GemmaRotaryEmbedding": sequence.gemma_rotary_embedding,
        "LinearAttention": sequence.linear_attention,
        "MoE": moe,
        # pooling, resampling, math
        "NhwcMaxPool": pool("max"),
        "MaxpoolWithMask": pool("max"),
        "GridSample": special.grid_sample,
        "CropAndResize": crop_and_resize,
        "CDist": cdist,
        "Inverse": inverse,
        "Rfft": rfft,
        "Irfft": rfft,
        "Unique": special.unique,
    }
    zero_ops = ("ExpandDims", "GatherND", "Pad", "Trilu", "Range", "TorchEmbedding", "RemovePadding", "RestorePadding")
    return OpTable(
        with_outcome("counted", domain_table(MS_DOMAIN, counted_rules)),
        with_outcome("zero", domain_ops(MS_DOMAIN, zero_ops, zero())),
    )


def _nchwc_table() -> OpTable[OpRule[Rule]]:
    """NCHWc ops (onnxruntime's level-3 layout transform): blocked channels, padded to the block
    size, so the counts include the padding channels' work."""
    return OpTable(
        with_outcome("counted", domain_table(NCHWC_DOMAIN, {
            "Conv": linear.conv,
            "MaxPool": pool("max"),
            "AveragePool": pool("avg"),
            "GlobalMaxPool": global_pool("max"),
            "GlobalAveragePool": global_pool("avg"),
            "Upsample": special.resize,
        })),
        with_outcome("zero", domain_ops(NCHWC_DOMAIN, ("ReorderInput", "ReorderOutput"), zero())),
    )


MS_TABLE: OpTable[OpRule[Rule]] = _ms_table()
NCHWC_TABLE: OpTable[OpRule[Rule]] = _nchwc_table()
