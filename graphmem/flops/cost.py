"""The two types every FLOP rule speaks: :class:`NodeView` in, :class:`Cost` out.

A rule is a plain function ``(NodeView) -> Cost``. It reads shapes through the view's helpers
(:meth:`NodeView.in_shape`, :meth:`NodeView.out_shape`), which raise :class:`MissingInfo` when a
shape is not concrete; the :func:`rule` decorator turns that into an *unsupported* cost with the
reason ``"shape unknown"``. So a rule never returns 0 for what it could not see. A node whose
shapes contradict its op raises :class:`MalformedNode` (unsupported too). Both are internal
signals: neither leaves :func:`rule`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import wraps
from typing import TypeGuard

import numpy as np
import onnx

from graphmem.errors import InvariantError
from graphmem.model.types import Shape, TensorType

__all__ = [
    "Cost",
    "NodeView",
    "Rule",
    "MissingInfo",
    "MalformedNode",
    "AttrValue",
    "ZERO",
    "counted",
    "unsupported",
    "rule",
    "numel",
    "broadcast",
    "make_view",
    "SHAPE_UNKNOWN",
    "OUTCOMES",
]

SHAPE_UNKNOWN = "shape unknown"

AttrValue = int | float | str | tuple[int, ...] | tuple[float, ...] | tuple[str, ...] | onnx.TensorProto | object

OUTCOMES = ("counted", "zero", "unsupported")


@dataclass(frozen=True, slots=True, kw_only=True)
class Cost:
    """What one op costs: floating-point work, contraction MACs, integer work, and the outcome.

    ``outcome`` is "counted" (the numbers are the op's cost), "zero" (the op does no arithmetic,
    by rule) or "unsupported" (no rule, or the rule lacked a shape or constant: ``reason`` says
    which; the numbers are 0 and must not be read as a cost).
    """

    flops: int = 0
    macs: int = 0
    int_ops: int = 0
    outcome: str = "counted"
    reason: str = ""

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise InvariantError(f"outcome must be one of {OUTCOMES}, not {self.outcome!r}")

    def scaled(self, k: int) -> Cost:
        """This cost repeated ``k`` times (a Loop body, a Scan step)."""
        if self.outcome != "counted":
            return self
        return Cost(flops=self.flops * k, macs=self.macs * k, int_ops=self.int_ops * k)

    @property
    def work(self) -> int:
        """flops + int_ops: used to pick an If's larger branch."""
        return self.flops + self.int_ops


ZERO = Cost(outcome="zero")


def counted(*, flops: int = 0, macs: int = 0, int_ops: int = 0) -> Cost:
    """A counted cost (integers; a negative count comes from shapes the op cannot have:
    :class:`MalformedNode`)."""
    if flops < 0 or macs < 0 or int_ops < 0:
        raise MalformedNode(f"negative cost: flops={flops} macs={macs} int_ops={int_ops}")
    return Cost(flops=int(flops), macs=int(macs), int_ops=int(int_ops))


def unsupported(reason: str) -> Cost:
    """An unsupported outcome with its reason."""
    return Cost(outcome="unsupported", reason=reason)


class MissingInfo(Exception):
    """Raised inside a rule when a shape or constant it needs is unknown.

    Internal signal, never leaves :func:`rule`: it becomes ``unsupported(reason)``.
    """

    def __init__(self, reason: str = SHAPE_UNKNOWN) -> None:
        super().__init__(reason)
        self.reason = reason


class MalformedNode(MissingInfo):
    """Raised inside a rule when the node's shapes contradict its op (shapes that do not
    broadcast, a scalar operand of MatMul, an Einsum term of another rank, a Resize that changes
    the rank). Internal, as :class:`MissingInfo`: it becomes ``unsupported("malformed node: …")``."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"malformed node: {reason}")


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeView:
    """Everything a FLOP rule may read about one node, with concrete types where known.

    ``inputs``/``outputs`` hold one :class:`TensorType` per position (``None`` for an omitted
    optional input or output). ``weights`` are the input positions fed by initializers;
    ``values`` the known values of small constant inputs (by position); ``trip_count`` a Loop's
    constant ``M`` if known; ``subgraphs`` the already counted cost of each graph attribute
    (``body``, ``then_branch``, ...), so control-flow rules stay pure functions of the view.
    com.microsoft ops have no ONNX schema: only these types are known about them.
    """

    op_type: str
    domain: str = ""
    attrs: Mapping[str, AttrValue] = field(default_factory=dict)
    inputs: tuple[TensorType | None, ...] = ()
    outputs: tuple[TensorType | None, ...] = ()
    opset: int = 0
    weights: frozenset[int] = frozenset()
    values: Mapping[int, np.ndarray] = field(default_factory=dict)
    trip_count: int | None = None
    subgraphs: Mapping[str, Cost] = field(default_factory=dict)

    def has_input(self, i: int) -> bool:
        """True when input ``i`` is given (not omitted)."""
        return i < len(self.inputs) and self.inputs[i] is not None

    def has_output(self, i: int) -> bool:
        return i < len(self.outputs) and self.outputs[i] is not None

    def in_shape(self, i: int) -> tuple[int, ...]:
        """Concrete shape of input ``i``; raises :class:`MissingInfo` when unknown."""
        return _concrete(self.inputs[i] if i < len(self.inputs) else None)

    def out_shape(self, i: int = 0) -> tuple[int, ...]:
        """Concrete shape of output ``i``; raises :class:`MissingInfo` when unknown."""
        return _concrete(self.outputs[i] if i < len(self.outputs) else None)

    def known_in(self, i: int) -> tuple[int, ...] | None:
        """Concrete shape of input ``i`` or None (for optional refinements)."""
        t = self.inputs[i] if i < len(self.inputs) else None
        return _maybe(t)

    def known_out(self, i: int = 0) -> tuple[int, ...] | None:
        t = self.outputs[i] if i < len(self.outputs) else None
        return _maybe(t)

    def value(self, i: int) -> np.ndarray | None:
        """Known constant value of input ``i`` (small initializers, propagated constants)."""
        return self.values.get(i)

    def attr_int(self, name: str, default: int) -> int:
        v = self.attrs.get(name, default)
        return int(v) if isinstance(v, (int, float, np.integer)) else default

    def attr_float(self, name: str, default: float) -> float:
        v = self.attrs.get(name, default)
        return float(v) if isinstance(v, (int, float, np.number)) else default

    def attr_str(self, name: str, default: str) -> str:
        v = self.attrs.get(name, default)
        return v if isinstance(v, str) else default

    def attr_ints(self, name: str, default: tuple[int, ...] = ()) -> tuple[int, ...]:
        v = self.attrs.get(name)
        if isinstance(v, (list, tuple)):
            return tuple(int(x) for x in v)
        return default

    def attr_strs(self, name: str) -> tuple[str, ...]:
        v = self.attrs.get(name)
        if isinstance(v, (list, tuple)):
            return tuple(str(x) for x in v)
        return ()


Rule = Callable[[NodeView], Cost]


def rule(fn: Rule) -> Rule:
    """Make ``fn`` total: a :class:`MissingInfo` it raises becomes an unsupported cost.

    :class:`MalformedNode` is a MissingInfo. Malformed shapes a rule does not check (a rank too
    small for the op, a zero group count) raise IndexError or ZeroDivisionError inside it, and
    numpy may raise ValueError; they become unsupported too, with the error as reason.
    """

    @wraps(fn)
    def wrapped(node: NodeView) -> Cost:
        try:
            return fn(node)
        except MissingInfo as exc:
            return unsupported(exc.reason)
        except (IndexError, ZeroDivisionError, ValueError) as exc:
            return unsupported(f"malformed node: {type(exc).__name__}: {exc}")

    return wrapped


def _maybe(t: TensorType | None) -> tuple[int, ...] | None:
    return t.shape if t is not None and _sizes_known(t.shape) else None


def _sizes_known(shape: Shape | None) -> TypeGuard[tuple[int, ...]]:
    """Every dim a known size (an int, not negative); one pass (this runs for every operand)."""
    if shape is None:
        return False
    for d in shape:
        if not isinstance(d, int) or d < 0:
            return False
    return True


def _concrete(t: TensorType | None) -> tuple[int, ...]:
    s = _maybe(t)
    if s is None:
        raise MissingInfo(SHAPE_UNKNOWN)
    return s


def numel(shape: tuple[int, ...]) -> int:
    """Element count of a concrete shape (1 for a scalar)."""
    return math.prod(shape)


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """Numpy broadcast of concrete shapes; raises :class:`MalformedNode` when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate(s, start=rank - len(s)):
            if d == out[i] or d == 1:
                continue
            if out[i] == 1:
                out[i] = d
            else:
                raise MalformedNode(f"shapes {shapes} do not broadcast")
    return tuple(out)


def make_view(
    op_type: str,
    inputs: tuple[tuple[int, ...] | None, ...] | list[tuple[int, ...] | None] = (),
    outputs: tuple[tuple[int, ...] | None, ...] | list[tuple[int, ...] | None] = (),
    *,
    domain: str = "",
    opset: int = 21,
    dtype: int = onnx.TensorProto.FLOAT,
    attrs: Mapping[str, AttrValue] | None = None,
    weights: frozenset[int] = frozenset(),
    values: Mapping[int, np.ndarray] | None = None,
    trip_count: int | None = None,
    subgraphs: Mapping[str, Cost] | None = None,
) -> NodeView:
    """A :class:`NodeView` from bare shapes, all of one dtype — to cost a hypothetical op.

    ``None`` in ``inputs``/``outputs`` is an omitted optional tensor; use ``()`` for a scalar.
    """

    def t(s: tuple[int, ...] | None) -> TensorType | None:
        return None if s is None else TensorType(dtype=dtype, shape=tuple(s))

    return NodeView(
        op_type=op_type,
        domain=domain,
        attrs=dict(attrs or {}),
        inputs=tuple(t(s) for s in inputs),
        outputs=tuple(t(s) for s in outputs),
        opset=opset,
        weights=weights,
        values=dict(values or {}),
        trip_count=trip_count,
        subgraphs=dict(subgraphs or {}),
    )
