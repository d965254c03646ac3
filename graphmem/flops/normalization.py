"""Normalizations and softmax-like ops: statistics per group, then an elementwise transform.

Mean/variance forms cost 6 per element plus 5 per normalized group, plus 1 per element per
affine term (scale, bias); RMS forms 4 per element plus 4 per group (see
:mod:`graphmem.flops.conventions`). Inference-mode BatchNormalization is ``x*a + b``.
"""

from __future__ import annotations

import math

from graphmem.flops.cost import Cost, MissingInfo, NodeView, counted, numel, rule
from graphmem.flops.families import activation_cost, norm_flops, rms_flops
from graphmem.flops.sequence import SOFTMAX_PER_SCORE

__all__ = [
    "batch_norm",
    "layer_norm",
    "rms_norm",
    "skip_layer_norm",
    "group_norm",
    "ms_group_norm",
    "instance_norm",
    "mean_variance_norm",
    "lp_norm",
    "lrn",
    "softmax",
    "hardmax",
    "embed_layer_norm",
]


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


@rule
def batch_norm(node: NodeView) -> Cost:
    """BatchNormalization: inference ``x*a + b`` = 2/element; training adds batch statistics.

    Training mode (``training_mode=1``, or extra outputs before opset 14, or ``is_test=0``
    before opset 7) computes mean (1) and variance (3) per element too.
    """
    n = numel(node.in_shape(0))
    extra_outputs = sum(1 for i in range(1, len(node.outputs)) if node.has_output(i))
    training = node.attr_int("training_mode", 0) == 1 or (node.opset < 14 and extra_outputs > 0)
    if node.opset < 7 and "is_test" in node.attrs:
        training = node.attr_int("is_test", 0) == 0
    return counted(flops=(6 if training else 2) * n)


@rule
def layer_norm(node: NodeView) -> Cost:
    """LayerNormalization (ONNX 17, ORT's opset-1 form, com.microsoft): over axes [axis, rank).

    Scale always, bias when given.
    """
    x = node.in_shape(0)
    axis = _axis(node.attr_int("axis", -1), len(x))
    groups = math.prod(x[:axis])
    affine = 1 + int(node.has_input(2))
    return counted(flops=norm_flops(numel(x), groups, affine))


@rule
def rms_norm(node: NodeView) -> Cost:
    """RMSNormalization (ONNX 23), SimplifiedLayerNormalization: rms over [axis, rank), scaled."""
    x = node.in_shape(0)
    axis = _axis(node.attr_int("axis", -1), len(x))
    return counted(flops=rms_flops(numel(x), math.prod(x[:axis]), scaled=node.has_input(1)))


@rule
def skip_layer_norm(node: NodeView) -> Cost:
    """SkipLayerNormalization / SkipSimplifiedLayerNormalization: x + skip (+ bias), then norm.

    Inputs: input, skip, gamma, beta (LN only), bias. Normalized over the last axis.
    """
    x = node.in_shape(0)
    n = numel(x)
    groups = n // x[-1]
    if node.op_type == "SkipSimplifiedLayerNormalization":
        adds = 1 + int(node.has_input(3))
        return counted(flops=adds * n + rms_flops(n, groups, scaled=True))
    adds = 1 + int(node.has_input(4))
    return counted(flops=adds * n + norm_flops(n, groups, 1 + int(node.has_input(3))))


@rule
def group_norm(node: NodeView) -> Cost:
    """GroupNormalization (ONNX 18/21): statistics per (n, group), affine scale and bias."""
    x = node.in_shape(0)
    groups = x[0] * node.attr_int("num_groups", 0)
    if groups <= 0:
        raise MissingInfo("num_groups missing")
    return counted(flops=norm_flops(numel(x), groups, 2))


@rule
def ms_group_norm(node: NodeView) -> Cost:
    """com.microsoft GroupNorm / SkipGroupNorm (NHWC): + skip and bias adds, optional SiLU."""
    x = node.in_shape(0)
    groups = x[0] * node.attr_int("groups", 0)
    if groups <= 0:
        raise MissingInfo("groups missing")
    n = numel(x)
    flops = norm_flops(n, groups, 2)
    if node.attr_int("activation", 0) == 1:
        flops += n * activation_cost("Silu")
    if node.op_type == "SkipGroupNorm":
        flops += n * (1 + int(node.has_input(4)))
    return counted(flops=flops)


@rule
def instance_norm(node: NodeView) -> Cost:
    """InstanceNormalization: statistics per (n, c) over the spatial dims; scale and bias."""
    x = node.in_shape(0)
    return counted(flops=norm_flops(numel(x), x[0] * x[1], 2))


@rule
def mean_variance_norm(node: NodeView) -> Cost:
    """MeanVarianceNormalization over ``axes`` (default [0, 2, 3]); no affine terms."""
    x = node.in_shape(0)
    axes = {_axis(a, len(x)) for a in node.attr_ints("axes", (0, 2, 3))}
    per_group = math.prod(x[a] for a in axes)
    return counted(flops=norm_flops(numel(x), numel(x) // per_group if per_group else 0, 0))


@rule
def lp_norm(node: NodeView) -> Cost:
    """LpNormalization: |x|^p, sum, divide per element (3); a sqrt per row when p = 2."""
    x = node.in_shape(0)
    axis = _axis(node.attr_int("axis", -1), len(x))
    rows = numel(x) // x[axis] if x[axis] else 0
    return counted(flops=3 * numel(x) + (rows if node.attr_int("p", 2) == 2 else 0))


@rule
def lrn(node: NodeView) -> Cost:
    """LRN: per element, a sum of ``size`` squares (2·size - 1), then bias + alpha·s, ^beta, divide (4)."""
    size = node.attr_int("size", 0)
    if size <= 0:
        raise MissingInfo("size missing")
    return counted(flops=(2 * size + 3) * numel(node.in_shape(0)))


def _rows(node: NodeView, x: tuple[int, ...]) -> int:
    """Rows a softmax-like op normalizes: flattened [axis:) before opset 13, one axis after."""
    if node.opset < 13 and node.domain == "":
        axis = _axis(node.attr_int("axis", 1), len(x))
        inner = math.prod(x[axis:])
    else:
        axis = _axis(node.attr_int("axis", -1), len(x))
        inner = x[axis]
    return numel(x) // inner if inner else 0


@rule
def softmax(node: NodeView) -> Cost:
    """Softmax, LogSoftmax (+ a log per row), BiasSoftmax (+ the bias add)."""
    x = node.in_shape(0)
    n = numel(x)
    flops = SOFTMAX_PER_SCORE * n
    if node.op_type == "LogSoftmax":
        flops += _rows(node, x)
    if node.op_type == "BiasSoftmax":
        flops += n
    return counted(flops=flops)


@rule
def hardmax(node: NodeView) -> Cost:
    """Hardmax: an argmax per row (n - 1 compares); writing the one-hot costs nothing."""
    x = node.in_shape(0)
    return counted(flops=numel(x) - _rows(node, x))


@rule
def embed_layer_norm(node: NodeView) -> Cost:
    """com.microsoft EmbedLayerNormalization: gathered word + position (+ segment) embeddings,
    then LayerNorm with gamma and beta; the mask index is a compare per mask element."""
    y = node.out_shape(0)
    n = numel(y)
    adds = 1 + int(node.has_input(4))
    flops = adds * n + norm_flops(n, n // y[-1], 2)
    if node.has_input(7):
        flops += numel(node.in_shape(7))
    return counted(flops=flops)
