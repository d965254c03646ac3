"""Rule factories for op families: one small function makes the rule of many ops.

Each factory returns a :func:`~graphmem.flops.cost.rule`-wrapped function; the tables in
:mod:`graphmem.flops.default_ops` and :mod:`graphmem.flops.contrib` call them. The costs follow
:mod:`graphmem.flops.conventions`.
"""

from __future__ import annotations

import math

from graphmem.flops.conventions import ACTIVATION_COSTS
from graphmem.flops.cost import (
    ZERO,
    Cost,
    MissingInfo,
    NodeView,
    Rule,
    broadcast,
    counted,
    numel,
    rule,
    unsupported,
)

__all__ = [
    "zero",
    "always_zero",
    "not_modelled",
    "elementwise",
    "variadic",
    "reduction",
    "pool",
    "global_pool",
    "out_elems",
    "activation_cost",
    "norm_flops",
    "rms_flops",
]


def always_zero(node: NodeView) -> Cost:
    """The rule of ops that never do arithmetic (one shared function, so the counter can skip
    building a view for them)."""
    return ZERO


def zero() -> Rule:
    """Explicitly zero: the op moves, selects or generates data without arithmetic."""
    return always_zero


def not_modelled(reason: str) -> Rule:
    """An op we know but cannot count statically; the reason is shown with it."""

    def unsupported_rule(node: NodeView) -> Cost:
        return unsupported(reason)

    return unsupported_rule


def out_elems(node: NodeView) -> int:
    """Elements of output 0; from the broadcast of the inputs when the output is unknown."""
    y = node.known_out(0)
    if y is not None:
        return numel(y)
    shapes = [node.in_shape(i) for i in range(len(node.inputs)) if node.has_input(i)]
    if not shapes:
        raise MissingInfo()
    return numel(broadcast(*shapes))


def elementwise(per_element: int) -> Rule:
    """Unary, binary (broadcast) and ternary elementwise ops: ``per_element`` × output elements."""

    @rule
    def elementwise_rule(node: NodeView) -> Cost:
        return counted(flops=per_element * out_elems(node))

    return elementwise_rule


def variadic(*, extra_per_output: int = 0) -> Rule:
    """Sum/Max/Min/Mean of k inputs: k-1 ops per output element (+1 divide for Mean)."""

    @rule
    def variadic_rule(node: NodeView) -> Cost:
        k = sum(1 for i in range(len(node.inputs)) if node.has_input(i))
        n = out_elems(node)
        return counted(flops=max(k - 1, 0) * n + extra_per_output * n)

    return variadic_rule


def reduction(*, pre: int = 0, post: int = 0) -> Rule:
    """Reduce ``n`` elements to one with ``n - 1`` combines (``in - out`` over the tensor).

    ``pre`` ops per input element (square, abs, exp), ``post`` per output element (divide for a
    mean, sqrt, log). ArgMax/ArgMin are reductions by comparison.
    """

    @rule
    def reduction_rule(node: NodeView) -> Cost:
        n_in = numel(node.in_shape(0))
        n_out = numel(node.out_shape(0))
        return counted(flops=pre * n_in + max(n_in - n_out, 0) + post * n_out)

    return reduction_rule


def pool(kind: str) -> Rule:
    """Windowed pooling over ``kernel_shape``: per output, max K-1, average K, Lp 3K.

    Average: K-1 adds and a divide; Lp: |x| and x^p per tap, K-1 adds, one root.
    """
    per_tap, per_out = {"max": (1, -1), "avg": (1, 0), "lp": (3, 0)}[kind]

    @rule
    def pool_rule(node: NodeView) -> Cost:
        kernel = node.attr_ints("kernel_shape")
        if not kernel:
            raise MissingInfo("kernel_shape missing")
        k = math.prod(kernel)
        return counted(flops=numel(node.out_shape(0)) * max(per_tap * k + per_out, 0))

    return pool_rule


def global_pool(kind: str) -> Rule:
    """Global pooling: a reduction of every spatial element (``in - out`` combines)."""

    @rule
    def global_pool_rule(node: NodeView) -> Cost:
        n_in = numel(node.in_shape(0))
        n_out = numel(node.out_shape(0))
        if kind == "max":
            return counted(flops=n_in - n_out)
        if kind == "avg":  # S-1 adds + 1 divide per output = S
            return counted(flops=n_in)
        return counted(flops=3 * n_in)  # lp: abs, pow, add per element; root per output

    return global_pool_rule


def activation_cost(name: str) -> int:
    """FLOPs per element of a fused activation named by an attribute (unknown: MissingInfo)."""
    if name in ACTIVATION_COSTS:
        return ACTIVATION_COSTS[name]
    raise MissingInfo(f"unknown fused activation '{name}'")


def norm_flops(elements: int, groups: int, affine_terms: int) -> int:
    """Mean/variance normalization: 6 per element, 5 per group, 1 per element per affine term."""
    return (6 + affine_terms) * elements + 5 * groups


def rms_flops(elements: int, groups: int, scaled: bool) -> int:
    """RMS normalization: square, add, normalize (+ scale) per element; 4 per group."""
    return (3 + int(scaled)) * elements + 4 * groups
