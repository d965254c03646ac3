"""What a FLOP is here — stated once, as prose and as data the CLI prints in ``--help``.

Counting conventions
--------------------
* FLOPs are **work** (a count of operations for one run of the graph), never a rate (FLOP/s).
* A multiply-add is **1 MAC = 2 FLOPs**. ``macs`` counts the multiply-accumulates of
  *contractions* — Conv, ConvTranspose, Gemm, MatMul, Einsum, the matmuls inside attention and
  RNN cells, quantized matmuls and convolutions — the number people quote as "MACs". An
  elementwise ``x*a + b`` (BatchNormalization, say) is 2 FLOPs and no MAC.
* Add, sub, mul, div, compare, max, min, abs, neg, select (Where) and the like: **1 FLOP per
  output element**; numpy broadcasting is counted on the output, not on the inputs.
* Basic math functions — exp, log, sqrt, reciprocal, pow, erf, tanh, sigmoid, sin, cos, tan and
  their inverse/hyperbolic forms, floor, ceil, round, sign — **1 FLOP per element each**. We
  follow the hardware-agnostic convention of the PyTorch/DeepSpeed FLOP profilers rather than
  onnx-tool's per-function cycle estimates (exp = 16, ...), because instruction counts depend on the
  math library and the vector width, and a static count should not pretend to know them.
* Composite activations cost the sum of their defining formula's basic operations (e.g.
  HardSigmoid ``max(0, min(1, a*x + b))`` = 4; Gelu ``0.5*x*(1 + erf(x/sqrt 2))`` = 5). The per-op
  numbers are the :data:`ELEMENT_COSTS` table below.
* A reduction of ``n`` elements into one costs ``n - 1`` operations (so ``in - out`` over a
  tensor), plus the per-element pre-op (square, abs, exp) and per-output post-op (divide for a
  mean, sqrt, log). Pooling follows the same rule per window; a global pool is a reduction.
* Normalizations: mean 1/element, variance 3/element (sub, square, add), normalize 2/element
  (sub, mul by the inverse std), plus 5 per normalized group (two divides, +eps, sqrt,
  reciprocal); the affine scale and bias add 1/element each. RMS forms: 4/element (square, add,
  normalize, scale) plus 4 per group. Inference-mode BatchNormalization folds into ``x*a + b``:
  2 FLOPs per element (the per-channel fold is negligible and not counted).
* Softmax/LogSoftmax: 5 per element (max, subtract, exp, sum, divide-or-subtract), plus a log
  per row for LogSoftmax.
* Padding is not discounted: a convolution or pooling window counts every kernel tap at every
  output position, as the dense kernels compute them (the fvcore / onnx-tool convention).
* Dense attention counts the full score matrix even when it is causal or windowed — what a
  dense kernel does; recurrent ops count every step of the full sequence (``sequence_lens``
  may shorten it at run time: the count is an upper bound then).
* ``int_ops`` counts integer work: quantized kernels (QLinear*, *Integer, Quantize/Dequantize,
  weight dequantization of MatMulNBits and friends) and any op all of whose tensors are integer or
  bool (shape arithmetic, logic). A quantized kernel's integer multiply-add is 2 int_ops and one
  MAC; dequantize is 2 ops/element (sub zero-point, mul scale), quantize and requantize 5
  (scale, round, add zero-point, clamp twice).
* Data movement (Reshape, Transpose, Gather, Concat, Cast, Pad, ...), generators (Range,
  ConstantOfShape, random ops) and control/IO plumbing are **explicitly zero**. An op with no rule,
  or whose rule lacks a shape or a constant it needs, is **unsupported**: it is listed with a
  reason and contributes nothing — never a silent 0.
* Control flow: a Loop counts its body times its trip count when that is a constant; an If
  counts its larger branch (an upper bound: the branch taken is data); a Scan counts its body
  once per scanned slice.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmem.optable import DEFAULT_DOMAIN, MS_DOMAIN, OpTable, default_domain_ops, domain_table

__all__ = ["Convention", "CONVENTIONS", "ELEMENT_COSTS", "GELU_TANH_COST", "ACTIVATION_COSTS", "conventions_text"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Convention:
    """One counting rule, as a row the CLI prints."""

    topic: str
    rule: str


CONVENTIONS: tuple[Convention, ...] = (
    Convention(topic="unit", rule="FLOPs are work per run of the graph, not FLOP/s"),
    Convention(topic="multiply-add", rule="1 MAC = 2 FLOPs; macs counts contractions only"),
    Convention(topic="add/sub/mul/div", rule="1 FLOP per output element (broadcast output)"),
    Convention(topic="compare/max/min/where", rule="1 FLOP per output element"),
    Convention(topic="exp/log/sqrt/tanh/…", rule="1 FLOP per element each (hardware-agnostic)"),
    Convention(topic="activations", rule="sum of the formula's basic ops (ELEMENT_COSTS)"),
    Convention(topic="reduce n -> 1", rule="n-1 ops, plus per-element pre-op and per-output post-op"),
    Convention(topic="normalization", rule="6/elem (mean, var, normalize) + 5/group + 1 per affine term"),
    Convention(topic="softmax", rule="5 per element (+1 log per row for LogSoftmax)"),
    Convention(topic="conv/pool padding", rule="not discounted: every tap at every output"),
    Convention(topic="attention/RNN", rule="dense full scores; every step of the full sequence"),
    Convention(topic="quantized", rule="int_ops: 2 per integer MAC, dequant 2, (re)quant 5 per element"),
    Convention(topic="integer tensors", rule="ops on integer/bool tensors only go to int_ops"),
    Convention(topic="data movement", rule="explicitly zero (Reshape, Gather, Cast, Pad, …)"),
    Convention(topic="no rule / no shape", rule="unsupported: listed with a reason, never 0"),
    Convention(topic="Loop / If / Scan", rule="body × constant trip count / larger branch / per slice"),
)

#: FLOPs per output element of elementwise ops (unary, binary, activations). Sources: each op's
#: defining formula in the ONNX spec (or onnxruntime's contrib-op doc), every basic operation counted 1.
ELEMENT_COSTS: OpTable[int] = OpTable(
    # basic arithmetic, comparison, logic: 1 each
    default_domain_ops(
        (
            "Add", "Sub", "Mul", "Div", "Mod", "Pow", "Max", "Min",
            "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual",
            "And", "Or", "Xor", "Not", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
            "BitwiseNot", "Where", "Abs", "Neg", "Reciprocal", "Sign", "Floor", "Ceil", "Round",
            "IsNaN", "IsInf", "Relu", "ThresholdedRelu", "Scale",
        ),
        1,
    ),
    # basic math functions: 1 each
    default_domain_ops(
        (
            "Exp", "Log", "Sqrt", "Erf", "Tanh", "Sigmoid", "Sin", "Cos", "Tan", "Asin", "Acos",
            "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
        ),
        1,
    ),
    domain_table(DEFAULT_DOMAIN, {
        "LeakyRelu": 2,  # x < 0 ? a*x : x -> compare, mul
        "PRelu": 2,  # compare, mul (slope broadcast)
        "Clip": 2,  # min, max (1 per bound given, opset >= 11)
        "Affine": 2,  # a*x + b
        "ImageScaler": 2,  # scale*x + bias
        "Softsign": 3,  # x / (1 + |x|)
        "Softplus": 3,  # log(exp(x) + 1)
        "Shrink": 3,  # two compares, one add/sub
        "Swish": 3,  # x * sigmoid(a*x)
        "ScaledTanh": 3,  # a * tanh(b*x)
        "Elu": 4,  # x < 0 ? a*(exp(x) - 1) : x
        "HardSigmoid": 4,  # max(0, min(1, a*x + b))
        "SwiGLU": 4,  # A * sigmoid(a*A) * B
        "HardSwish": 5,  # x * HardSigmoid(x)
        "Selu": 5,  # g * (x > 0 ? x : a*(exp(x) - 1))
        "Mish": 5,  # x * tanh(log(1 + exp(x)))
        "Gelu": 5,  # 0.5*x*(1 + erf(x/sqrt 2)); approximate="tanh": GELU_TANH_COST
        "ParametricSoftplus": 5,  # a * log(exp(b*x) + 1)
        "Celu": 7,  # max(0, x) + min(0, a*(exp(x/a) - 1))
    }),
    domain_table(MS_DOMAIN, {
        "Gelu": 5,
        "FastGelu": 9,  # +1 with the bias input
        "BiasGelu": 6,  # bias add + Gelu
        "QuickGelu": 3,  # x * sigmoid(a*x)
        "ScaledSiLU": 3,  # z = s*x; z * sigmoid(z)
        "BiasAdd": 2,  # x + bias + skip
        "GatedAdd": 2,  # x + y*gate
    }),
)

#: Gelu with ``approximate="tanh"``: 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))).
GELU_TANH_COST = 9

#: FLOPs per element of the activation named by a fused op's ``activation`` attribute
#: (FusedConv, FusedGemm, RNN ``activations``, GroupNorm's SiLU, ...).
ACTIVATION_COSTS: dict[str, int] = {
    "": 0,
    "none": 0,
    "identity": 0,
    "Relu": 1,
    "Tanh": 1,
    "Sigmoid": 1,
    "LeakyRelu": 2,
    "ThresholdedRelu": 1,
    "Clip": 2,
    "Affine": 2,
    "ScaledTanh": 3,
    "HardSigmoid": 4,
    "Elu": 4,
    "Softsign": 3,
    "Softplus": 3,
    "Silu": 2,  # x * sigmoid(x)
    "silu": 2,
    "swish": 2,
    "Swish": 2,
    "gelu": 5,
    "Gelu": 5,
    "relu": 1,
    "NONE": 0,  # GemmFloat8 spells them in capitals
    "RELU": 1,
    "GELU": 5,
}


def conventions_text() -> str:
    """The conventions as aligned text lines, for ``--help`` and the report footer."""
    width = max(len(c.topic) for c in CONVENTIONS)
    return "\n".join(f"{c.topic.ljust(width)}  {c.rule}" for c in CONVENTIONS)
