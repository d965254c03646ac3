"""Default-domain ops whose cost needs more than an elementwise factory.

Resampling (Resize, Upsample, GridSample, AffineGrid, RoiAlign, Col2Im), signal processing
(DFT, STFT, windows), linear algebra (Det), selection (TopK, NonZero, Unique), scans (CumSum),
losses, and elementwise ops with an attribute- or input-dependent cost (Gelu, Clip, Dropout,
Scatter reductions).
"""

from __future__ import annotations

import math

from graphmem.flops.conventions import ELEMENT_COSTS, GELU_TANH_COST
from graphmem.flops.cost import ZERO, Cost, MalformedNode, MissingInfo, NodeView, Rule, counted, numel, rule
from graphmem.flops.families import out_elems
from graphmem.flops.sequence import SOFTMAX_PER_SCORE

__all__ = [
    "resize",
    "grid_sample",
    "affine_grid",
    "roi_align",
    "col2im",
    "dft",
    "stft",
    "window",
    "mel_weight_matrix",
    "det",
    "topk",
    "nonzero",
    "unique",
    "cumulative",
    "nll_loss",
    "softmax_cross_entropy",
    "gelu",
    "clip",
    "dropout",
    "scatter",
    "fft_flops",
    "interp_flops",
]


def interp_flops(mode: str, axes: int) -> int:
    """FLOPs per output element of N-linear / N-cubic interpolation over ``axes`` axes.

    taps = 2^axes (linear) or 4^axes (cubic): one multiply per tap and taps-1 adds. Nearest: 0.
    """
    if axes == 0 or mode == "nearest":
        return 0
    taps = (4 if "cubic" in mode else 2) ** axes
    return 2 * taps - 1


@rule
def resize(node: NodeView) -> Cost:
    """Resize / Upsample: interpolation per output element over the axes whose size changes.

    Nearest is explicitly zero (a gather). ``antialias`` widens the filter; it is not modelled
    (the count is then a lower bound).
    """
    mode = node.attr_str("mode", "nearest").lower()
    if mode == "nearest":
        return ZERO
    x = node.in_shape(0)
    y = node.out_shape(0)
    if len(x) != len(y):
        raise MalformedNode("Resize changes the rank")
    axes = sum(1 for a, b in zip(x, y) if a != b)
    per = interp_flops(mode, axes)
    if per == 0:
        return ZERO
    return counted(flops=per * numel(y))


@rule
def grid_sample(node: NodeView) -> Cost:
    """GridSample: per output location, unnormalize each coordinate (3 FLOPs); per output
    element, N-linear (bilinear) or N-cubic interpolation; nearest only the coordinates."""
    y = node.out_shape(0)
    r = len(y) - 2
    mode = node.attr_str("mode", "bilinear" if node.opset < 20 else "linear").lower()
    locations = numel(y) // y[1] if y[1] else 0
    return counted(flops=3 * r * locations + interp_flops(mode, r) * numel(y))


@rule
def affine_grid(node: NodeView) -> Cost:
    """AffineGrid: each grid point is theta (r × (r+1)) times (x, 1): r MACs + 1 add per coordinate."""
    g = node.out_shape(0)
    r = g[-1]
    macs = numel(g) * r
    return counted(flops=2 * macs + numel(g), macs=macs)


@rule
def roi_align(node: NodeView) -> Cost:
    """RoiAlign: s² bilinear samples per output bin (7 FLOPs each + 1 to pool it).

    ``sampling_ratio = 0`` means a data-dependent grid (ceil(roi / bin)): unsupported.
    """
    s = node.attr_int("sampling_ratio", 0)
    if s <= 0:
        raise MissingInfo("data-dependent sampling grid (sampling_ratio=0)")
    return counted(flops=8 * s * s * numel(node.out_shape(0)))


@rule
def col2im(node: NodeView) -> Cost:
    """Col2Im: every column element is added into the image: 1 add per input element."""
    return counted(flops=numel(node.in_shape(0)))


def fft_flops(n: int, *, real: bool) -> int:
    """The conventional FFT count, 5·n·log2(n) per complex transform (FFTW's benchmark
    convention), half that for a real input."""
    if n <= 1:
        return 0
    f = 5 * n * math.log2(n)
    return int(round(f / 2 if real else f))


@rule
def dft(node: NodeView) -> Cost:
    """DFT (opset 17: ``axis`` attribute; 20: axis input): one FFT per signal along the axis.

    Signal length: ``dft_length`` when known, else the input's length along the axis.
    """
    x = node.in_shape(0)
    real = x[-1] == 1
    if node.opset >= 20:
        axis_value = node.value(2)
        if node.has_input(2) and axis_value is None:
            raise MissingInfo("DFT axis is not a known constant")
        axis = int(axis_value) if axis_value is not None else -2
    else:
        axis = node.attr_int("axis", 1)
    axis = axis + len(x) if axis < 0 else axis
    n = x[axis]
    if node.has_input(1):
        length = node.value(1)
        if length is None:
            raise MissingInfo("dft_length is not a known constant")
        n = int(length)
    transforms = numel(x) // (x[axis] * x[-1]) if x[axis] else 0
    return counted(flops=transforms * fft_flops(n, real=real))


@rule
def stft(node: NodeView) -> Cost:
    """STFT: per frame, the window multiply (n) and one FFT of the frame length n."""
    y = node.out_shape(0)  # (batch, frames, bins, 2)
    x = node.in_shape(0)
    if node.has_input(2):
        n = node.in_shape(2)[0]
    else:
        length = node.value(3)
        if length is None:
            raise MissingInfo("frame_length is not a known constant")
        n = int(length)
    frames = y[0] * y[1]
    window = n if node.has_input(2) else 0
    return counted(flops=frames * (window + fft_flops(n, real=x[-1] == 1)))


def window(per_element: int) -> Rule:
    """Hann/Hamming (5: div, mul, cos, mul, sub) and Blackman (9: two cosine terms)."""

    @rule
    def window_rule(node: NodeView) -> Cost:
        return counted(flops=per_element * numel(node.out_shape(0)))

    return window_rule


@rule
def mel_weight_matrix(node: NodeView) -> Cost:
    """MelWeightMatrix: a triangle-filter weight (sub, div) per element — an upper bound."""
    return counted(flops=2 * numel(node.out_shape(0)))


@rule
def det(node: NodeView) -> Cost:
    """Det: LU factorization, 2n³/3 FLOPs per n×n matrix, plus the n-1 diagonal products."""
    x = node.in_shape(0)
    n = x[-1]
    return counted(flops=(numel(x) // (n * n) if n else 0) * ((2 * n**3) // 3 + max(n - 1, 0)))


@rule
def topk(node: NodeView) -> Cost:
    """TopK: heap selection, n·max(1, ceil(log2 k)) comparisons per row (an estimate)."""
    x = node.in_shape(0)
    y = node.out_shape(0)
    axis = node.attr_int("axis", -1)
    axis = axis + len(x) if axis < 0 else axis
    k = y[axis]
    return counted(flops=numel(x) * max(1, math.ceil(math.log2(k))) if k > 0 else 0)


@rule
def nonzero(node: NodeView) -> Cost:
    """NonZero: one compare per input element (its output size is data, its work is not)."""
    return counted(flops=numel(node.in_shape(0)))


@rule
def unique(node: NodeView) -> Cost:
    """Unique: a sort, n·ceil(log2 n) comparisons (an estimate)."""
    n = numel(node.in_shape(0))
    return counted(flops=n * max(1, math.ceil(math.log2(n))) if n > 1 else 0)


@rule
def cumulative(node: NodeView) -> Cost:
    """CumSum / CumProd: one add (multiply) per element."""
    return counted(flops=numel(node.in_shape(0)))


@rule
def nll_loss(node: NodeView) -> Cost:
    """NegativeLogLikelihoodLoss: per target, negate (+ weight multiply); sum unless 'none'."""
    n = numel(node.in_shape(1))
    per = 1 + int(node.has_input(2)) + int(node.attr_str("reduction", "mean") != "none")
    return counted(flops=per * n)


@rule
def softmax_cross_entropy(node: NodeView) -> Cost:
    """SoftmaxCrossEntropyLoss: log-softmax over the classes (axis 1), then the NLL loss."""
    scores = node.in_shape(0)
    n_labels = numel(node.in_shape(1))
    rows = numel(scores) // scores[1] if scores[1] else 0
    per = 1 + int(node.has_input(2)) + int(node.attr_str("reduction", "mean") != "none")
    return counted(flops=SOFTMAX_PER_SCORE * numel(scores) + rows + per * n_labels)


@rule
def gelu(node: NodeView) -> Cost:
    """Gelu (opset 20): erf form 5/element, ``approximate="tanh"`` 9/element."""
    tanh = node.attr_str("approximate", "none") == "tanh"
    return counted(flops=(GELU_TANH_COST if tanh else ELEMENT_COSTS[("", "Gelu")]) * out_elems(node))


@rule
def clip(node: NodeView) -> Cost:
    """Clip: one min/max per bound — attributes before opset 11 (both), optional inputs after."""
    bounds = 2 if node.opset < 11 else int(node.has_input(1)) + int(node.has_input(2))
    if bounds == 0:
        return ZERO
    return counted(flops=bounds * out_elems(node))


@rule
def dropout(node: NodeView) -> Cost:
    """Dropout: zero in inference; with ``training_mode`` a known true constant, mask compare and
    scale multiply (2/element); with an unknown ``training_mode``, unsupported."""
    if node.opset >= 12 and node.has_input(2):
        mode = node.value(2)
        if mode is None:
            raise MissingInfo("training_mode is not a known constant")
        if bool(mode):
            return counted(flops=2 * numel(node.in_shape(0)))
    elif node.opset < 7 and node.attr_int("is_test", 0) == 0:  # Dropout-1/6 default: training
        return counted(flops=2 * numel(node.in_shape(0)))
    return ZERO


@rule
def scatter(node: NodeView) -> Cost:
    """ScatterElements / ScatterND: zero (data movement) unless ``reduction`` combines: then one
    add/mul/max/min per update element."""
    if node.attr_str("reduction", "none") == "none":
        return ZERO
    return counted(flops=numel(node.in_shape(2)))
