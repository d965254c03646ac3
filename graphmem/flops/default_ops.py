"""The rule table of the default ONNX domain (and the experimental ops onnxruntime still runs).

Each entry is ``("", op_type) -> OpRule(rule, outcome)``; the outcome is what :func:`graphmem.flops.coverage`
reports for the op ("counted", "zero" or "unsupported" for ops we know but cannot count). A
"counted" rule may still answer zero (Resize nearest) or unsupported (a shape is unknown) for a
given node.
"""

from __future__ import annotations

from graphmem.flops import control, linear, normalization, sequence, special
from graphmem.flops.conventions import ELEMENT_COSTS
from graphmem.flops.cost import Rule
from graphmem.flops.families import (
    elementwise,
    global_pool,
    not_modelled,
    pool,
    reduction,
    variadic,
    zero,
)
from graphmem.flops.quantized import dequantize_linear, dynamic_quantize_linear, quantize_linear
from graphmem.optable import OpRule, OpTable, default_domain_ops, domain_table, with_outcome

__all__ = ["DEFAULT_TABLE", "ZERO_OPS"]

#: Ops that move, select, convert or generate data, or are plumbing: explicitly 0 FLOPs.
ZERO_OPS: tuple[str, ...] = (
    # shape and layout
    "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Shape", "Size",
    "DepthToSpace", "SpaceToDepth", "Crop", "DynamicSlice",
    # copying and selecting
    "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND", "Scatter", "Expand",
    "Tile", "Pad", "ReverseSequence", "Compress", "CenterCropPad", "MaxUnpool", "TensorScatter",
    "Trilu", "OneHot", "MemcpyFromHost", "MemcpyToHost",
    # type conversion (no arithmetic on the values)
    "Cast", "CastLike", "BitCast",
    # generators: iota, fills, random sampling (the RNG is not floating-point work we count)
    "Constant", "ConstantOfShape", "Range", "EyeLike", "GivenTensorFill", "RandomNormal",
    "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli", "Multinomial",
    # sequences and optionals: containers, no arithmetic
    "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert",
    "SequenceLength", "SplitToSequence", "ConcatFromSequence", "Optional", "OptionalGetElement",
    "OptionalHasElement",
    # strings: text processing, not numeric work
    "StringConcat", "StringNormalizer", "StringSplit", "RegexFullMatch",
)

_UNARY = (
    "Abs", "Neg", "Reciprocal", "Sign", "Floor", "Ceil", "Round", "IsNaN", "IsInf", "Not",
    "BitwiseNot", "Relu", "ThresholdedRelu", "Exp", "Log", "Sqrt", "Erf", "Tanh", "Sigmoid",
    "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    "LeakyRelu", "Softsign", "Softplus", "Shrink", "Swish", "Elu", "HardSigmoid", "HardSwish",
    "Selu", "Mish", "Celu", "Affine", "ImageScaler", "Scale", "ScaledTanh", "ParametricSoftplus",
)
_BINARY = (
    "Add", "Sub", "Mul", "Div", "Mod", "Pow", "Equal", "Greater", "GreaterOrEqual", "Less",
    "LessOrEqual", "And", "Or", "Xor", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
    "Where", "PRelu", "SwiGLU",
)


def _table() -> OpTable[OpRule[Rule]]:
    counted_rules: dict[str, Rule] = {
        "Sum": variadic(),
        "Max": variadic(),
        "Min": variadic(),
        "Mean": variadic(extra_per_output=1),
        "Gelu": special.gelu,
        "Clip": special.clip,
        # contractions
        "Conv": linear.conv,
        "ConvTranspose": linear.conv_transpose,
        "DeformConv": linear.deform_conv,
        "CausalConvWithState": linear.conv,
        "Gemm": linear.gemm,
        "MatMul": linear.matmul,
        "Einsum": linear.einsum,
        # quantized
        "ConvInteger": linear.conv_integer,
        "QLinearConv": linear.qlinear_conv,
        "MatMulInteger": linear.matmul_integer,
        "QLinearMatMul": linear.qlinear_matmul,
        "QuantizeLinear": quantize_linear,
        "DequantizeLinear": dequantize_linear,
        "DynamicQuantizeLinear": dynamic_quantize_linear,
        # pooling
        "MaxPool": pool("max"),
        "AveragePool": pool("avg"),
        "LpPool": pool("lp"),
        "GlobalMaxPool": global_pool("max"),
        "GlobalAveragePool": global_pool("avg"),
        "GlobalLpPool": global_pool("lp"),
        "RoiAlign": special.roi_align,
        # reductions
        "ReduceSum": reduction(),
        "ReduceMean": reduction(post=1),
        "ReduceMax": reduction(),
        "ReduceMin": reduction(),
        "ReduceProd": reduction(),
        "ReduceSumSquare": reduction(pre=1),
        "ReduceL1": reduction(pre=1),
        "ReduceL2": reduction(pre=1, post=1),
        "ReduceLogSum": reduction(post=1),
        "ReduceLogSumExp": reduction(pre=1, post=1),
        "ArgMax": reduction(),
        "ArgMin": reduction(),
        "CumSum": special.cumulative,
        "CumProd": special.cumulative,
        "TopK": special.topk,
        "NonZero": special.nonzero,
        "Unique": special.unique,
        "Hardmax": normalization.hardmax,
        # normalizations and softmax
        "BatchNormalization": normalization.batch_norm,
        "LayerNormalization": normalization.layer_norm,
        "SimplifiedLayerNormalization": normalization.rms_norm,
        "RMSNormalization": normalization.rms_norm,
        "GroupNormalization": normalization.group_norm,
        "InstanceNormalization": normalization.instance_norm,
        "MeanVarianceNormalization": normalization.mean_variance_norm,
        "LpNormalization": normalization.lp_norm,
        "LRN": normalization.lrn,
        "Softmax": normalization.softmax,
        "LogSoftmax": normalization.softmax,
        # resampling
        "Resize": special.resize,
        "Upsample": special.resize,
        "GridSample": special.grid_sample,
        "AffineGrid": special.affine_grid,
        "Col2Im": special.col2im,
        # sequence models
        "RNN": sequence.rnn,
        "GRU": sequence.gru,
        "LSTM": sequence.lstm,
        "Attention": sequence.onnx_attention,
        "RotaryEmbedding": sequence.rotary_embedding,
        "LinearAttention": sequence.linear_attention,
        # signal processing and linear algebra
        "DFT": special.dft,
        "STFT": special.stft,
        "HannWindow": special.window(5),
        "HammingWindow": special.window(5),
        "BlackmanWindow": special.window(9),
        "MelWeightMatrix": special.mel_weight_matrix,
        "Det": special.det,
        # losses
        "NegativeLogLikelihoodLoss": special.nll_loss,
        "SoftmaxCrossEntropyLoss": special.softmax_cross_entropy,
        # control flow (bodies counted by graphmem.flops.count)
        "If": control.if_rule,
        "Loop": control.loop_rule,
        "Scan": control.scan_rule,
    }
    # zero in the usual case (no reduction; inference), counted when the node says otherwise
    usually_zero: dict[str, Rule] = {
        "ScatterElements": special.scatter,
        "ScatterND": special.scatter,
        "Dropout": special.dropout,
    }
    known_unsupported = {
        "NonMaxSuppression": "data-dependent: the boxes kept decide the IoU work",
        "MaxRoiPool": "data-dependent: pooled region sizes come from the ROI values",
        "TfIdfVectorizer": "data-dependent n-gram matching",
        "ImageDecoder": "image decoding is not arithmetic we model",
        "SequenceMap": "iteration count is the run-time length of a sequence",
    }
    return OpTable(
        with_outcome("zero", default_domain_ops(ZERO_OPS, zero())),
        with_outcome("counted", {("", op): elementwise(ELEMENT_COSTS[("", op)]) for op in _UNARY + _BINARY}),
        with_outcome("counted", domain_table("", counted_rules)),
        with_outcome("zero", domain_table("", usually_zero)),
        with_outcome("unsupported", {("", op): not_modelled(reason) for op, reason in known_unsupported.items()}),
    )


DEFAULT_TABLE: OpTable[OpRule[Rule]] = _table()
