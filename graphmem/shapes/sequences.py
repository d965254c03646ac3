"""Sequences in the runtime view: the type of every element, as the run builds them.

A sequence's size is the sum of its elements', so the runtime view types each sequence with its
elements (:attr:`graphmem.model.types.TensorType.elements`), following what onnxruntime's
kernels do (``core/providers/cpu/sequence/sequence_ops.cc``, ``concat_from_sequence.cc``):
SequenceEmpty has none; SequenceConstruct has its inputs; SequenceInsert its input's elements
and the tensor, at ``position`` (default: appended); SequenceErase drops the one at ``position``
(default: the last); SplitToSequence the pieces of its input; Identity passes a sequence on.
SequenceAt, SequenceLength and ConcatFromSequence read them. An optional holds a tensor or a
sequence's elements (Optional, OptionalGetElement, an optional graph input bound with ``--shape``). A position or split
that is not a
known value leaves the elements unknown (the sequence is then unresolved, never guessed).

How the elements' buffers are shared between sequences is the program's business
(:func:`graphmem.model.program.sequence_elements`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import onnx
from onnx import helper

from graphmem.errors import ShapeInferenceError
from graphmem.model.types import Dim, TensorType, is_concrete
from graphmem.optable import DEFAULT_DOMAIN, OpTable, domain_table

__all__ = ["SEQUENCE_RULES", "infer_sequence", "sequence_of", "is_sequence", "optional_of", "bound_optional"]

_SEQ = "sequence_type"


def is_sequence(t: TensorType | None) -> bool:
    return t is not None and t.kind == _SEQ


def sequence_of(dtype: int, elements: tuple[TensorType, ...] | None, declared: TensorType | None = None) -> TensorType:
    """A sequence type: ``elements`` known (or None), the common element shape as its ``shape``."""
    shape = declared.shape if declared is not None else None
    if elements:
        shape = _common(tuple(e.shape for e in elements))
    elif elements is not None and declared is None:
        shape = None
    return TensorType(
        dtype=dtype or (declared.dtype if declared is not None else 0), shape=shape, kind=_SEQ, elements=elements
    )


def _common(shapes: tuple[tuple[Dim, ...] | None, ...]) -> tuple[Dim, ...] | None:
    """onnx's union of element shapes: dims kept where every element agrees."""
    known = [s for s in shapes if s is not None]
    if len(known) != len(shapes) or len({len(s) for s in known}) != 1:
        return None
    return tuple(d[0] if all(x == d[0] for x in d) else None for d in zip(*known))


def _attr(node: onnx.NodeProto, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _int(values: Mapping[str, np.ndarray], name: str) -> int | None:
    v = values.get(name)
    if v is None or v.size != 1:
        return None
    return int(v.reshape(-1)[0])


#: What a rule gives: output types (and values), or None when it does not type the node.
Typed = tuple[dict[str, TensorType], dict[str, np.ndarray]] | None
#: ``(node, input types, output 0's name, known values) -> Typed``.
SequenceRule = Callable[[onnx.NodeProto, list[TensorType | None], str, Mapping[str, np.ndarray]], Typed]


def infer_sequence(
    node: onnx.NodeProto, types: Mapping[str, TensorType], values: Mapping[str, np.ndarray]
) -> tuple[dict[str, TensorType], dict[str, np.ndarray]] | None:
    """Output types (and SequenceLength's value) of a sequence op in the runtime view
    (:data:`SEQUENCE_RULES`); None when this module does not type ``node`` (the caller infers it
    as any op)."""
    rule = SEQUENCE_RULES.of(node)
    if rule is None:
        return None
    ins = [types.get(x) if x else None for x in node.input]
    out = node.output[0] if node.output else ""
    return rule(node, ins, out, values)


def _identity(node, ins, out, values):
    """Identity passes a sequence on (a tensor is typed as any op)."""
    return ({out: ins[0]}, {}) if ins and is_sequence(ins[0]) else None


def _optional_rule(node, ins, out, values):
    """optional.cc: copies its input (a tensor, or a sequence's elements) in."""
    return {out: _optional(node, ins[0] if ins else None)}, {}


def _optional_has_element(node, ins, out, values):
    x = ins[0] if ins else None
    if x is not None and x.kind == "optional_type" and x.elements is not None:
        # empty only as Optional() without an input makes it (or `--shape o=none`: holding nothing):
        # an optional of an empty sequence holds no tensor, yet has its element
        # (`core/providers/cpu/optional/optional_ops.cc`)
        empty = x.elements == () and not x.holds
        return {out: TensorType(dtype=onnx.TensorProto.BOOL, shape=())}, {out: np.array(not empty)}
    if x is not None and x.kind in ("tensor", _SEQ) and x.dtype:
        # opset 18 takes a tensor or a sequence itself (a Loop feeding its carried sequence back
        # into an optional body input): it has its element (optional_ops.cc: IsAllocated)
        return {out: TensorType(dtype=onnx.TensorProto.BOOL, shape=())}, {out: np.array(True)}
    return None


def _optional_get_element(node, ins, out, values):
    held = _held(ins[0]) if ins and ins[0] is not None else None
    return ({out: held}, {}) if held is not None else None


def _sequence_empty(node, ins, out, values):
    return {out: sequence_of(_attr(node, "dtype", onnx.TensorProto.FLOAT), ())}, {}


def _sequence_construct(node, ins, out, values):
    elements = tuple(t for t in ins if t is not None)
    known = len(elements) == len(ins) and all(t.kind == "tensor" for t in elements)
    return {out: sequence_of(elements[0].dtype if elements else 0, elements if known else None)}, {}


def _split_to_sequence(node, ins, out, values):
    return {out: _split(node, ins[0] if ins else None, values)}, {}


def _on_sequence(rule: Callable[..., Typed]) -> SequenceRule:
    """A rule reading the sequence of input 0 (``rule(node, seq, ins, out, values)``); None when
    input 0 is not a known sequence."""

    def on_sequence(node, ins, out, values):
        seq = ins[0] if ins else None
        if seq is None or not is_sequence(seq):
            return None
        return rule(node, seq, ins, out, values)

    return on_sequence


def _sequence_insert(node, seq, ins, out, values):
    elements = seq.elements
    x = ins[1] if len(ins) > 1 else None
    pos = _int(values, node.input[2]) if len(node.input) > 2 and node.input[2] else len(elements or ())
    if elements is None or x is None or pos is None:
        return {out: sequence_of(seq.dtype, None, seq)}, {}
    pos = pos + len(elements) if pos < 0 else pos
    return {out: sequence_of(seq.dtype, elements[:pos] + (x,) + elements[pos:])}, {}


def _sequence_erase(node, seq, ins, out, values):
    elements = seq.elements
    pos = _int(values, node.input[1]) if len(node.input) > 1 and node.input[1] else -1
    if elements is None or pos is None or not elements:
        return {out: sequence_of(seq.dtype, None, seq)}, {}
    pos = pos + len(elements) if pos < 0 else pos
    return {out: sequence_of(seq.dtype, elements[:pos] + elements[pos + 1 :])}, {}


def _sequence_length(node, seq, ins, out, values):
    if seq.elements is None:
        return None
    return {out: TensorType(dtype=onnx.TensorProto.INT64, shape=())}, {out: np.array(len(seq.elements), np.int64)}


def _sequence_at(node, seq, ins, out, values):
    elements = seq.elements
    pos = _int(values, node.input[1]) if len(node.input) > 1 else None
    if elements is None or pos is None or not -len(elements) <= pos < len(elements):
        return None
    return {out: elements[pos]}, {}


def _concat_from_sequence(node, seq, ins, out, values):
    concat = _concat(node, seq.elements)
    return ({out: concat}, {}) if concat is not None else None


def _optional(node: onnx.NodeProto, x: TensorType | None) -> TensorType:
    """An optional: of ``x`` (its elements when it is a sequence, itself when a tensor), empty
    without an input."""
    if not node.input or not node.input[0]:
        return TensorType(dtype=0, shape=None, kind="optional_type", elements=())
    if x is None:
        return TensorType(dtype=0, shape=None, kind="optional_type")
    return optional_of(x)


def optional_of(x: TensorType) -> TensorType:
    """An optional holding ``x`` (a tensor, or a sequence: its elements)."""
    if is_sequence(x):
        return TensorType(dtype=x.dtype, shape=x.shape, kind="optional_type", elements=x.elements, holds=_SEQ)
    tensor = x.kind == "tensor"
    return TensorType(dtype=x.dtype, shape=x.shape, kind="optional_type", elements=(x,) if tensor else None,
                      holds="tensor" if tensor else "")


def bound_optional(declared: TensorType, binding: Sequence[Any] | None) -> TensorType:
    """An optional graph input as ``--shape`` binds it: ``None`` (``o=none``) an optional without
    a value; otherwise the shape of the tensor it holds, or its sequence's element shapes."""
    if binding is None:
        return TensorType(dtype=0, shape=None, kind="optional_type", elements=())
    if declared.holds == _SEQ:
        elements = tuple(TensorType(dtype=declared.dtype, shape=tuple(e)) for e in binding)
        return optional_of(sequence_of(declared.dtype, elements, replace(declared, kind=_SEQ)))
    return optional_of(TensorType(dtype=declared.dtype, shape=tuple(binding)))


def _held(x: TensorType) -> TensorType | None:
    """What OptionalGetElement returns for ``x`` (opset 18 also takes a tensor or a sequence
    itself: returned as is); None when not known (or an optional without a value: an error at run)."""
    if x.kind in ("tensor", _SEQ):
        return x
    if x.kind != "optional_type" or x.elements is None or (x.elements == () and not x.holds):
        return None
    if x.holds == _SEQ:
        return sequence_of(x.dtype, x.elements)
    if x.holds == "tensor" and len(x.elements) == 1:
        return x.elements[0]
    return None


def _concat(node: onnx.NodeProto, elements: tuple[TensorType, ...] | None) -> TensorType | None:
    """``ConcatFromSequence`` (``sequence/concat_from_sequence.cc``): the elements concatenated
    on ``axis``, or stacked on a new one with ``new_axis``."""
    shapes = [e.shape for e in elements or () if is_concrete(e.shape)]
    if not elements or len(shapes) != len(elements):
        return None
    new_axis = _attr(node, "new_axis", 0)
    rank = len(shapes[0]) + (1 if new_axis else 0)
    axis = _attr(node, "axis", 0)
    axis = axis + rank if axis < 0 else axis
    if new_axis:
        first = list(shapes[0])
        first.insert(axis, len(elements))
        return TensorType(dtype=elements[0].dtype, shape=tuple(first))
    shape = list(shapes[0])
    shape[axis] = sum(int(s[axis]) for s in shapes)
    return TensorType(dtype=elements[0].dtype, shape=tuple(shape))


#: The most pieces a SplitToSequence is given elements for (each is a tensor of the program).
MAX_PIECES = 1 << 16


def _split_error(node: onnx.NodeProto, why: str) -> ShapeInferenceError:
    return ShapeInferenceError(f"node '{node.name}' (SplitToSequence): {why}; onnxruntime fails it at run time")


def _split(node: onnx.NodeProto, x: TensorType | None, values: Mapping[str, np.ndarray]) -> TensorType:
    """``SplitToSequence``: pieces of ``split`` lengths (a scalar: that length, the last shorter),
    of length 1 without one, the axis dropped when ``keepdims`` is 0 (without ``split``, or with a
    scalar one: onnxruntime's kernel keeps the dims only for a list, sequence_ops.cc ComputeImpl).
    What the kernel refuses at run time (axis out of range, a scalar split not > 0, lengths that do not
    add up, a negative length, keepdims 0 on pieces longer than 1) is an error naming the node; more than
    :data:`MAX_PIECES` pieces leave the sequence's
    elements unknown (bounded before the list is built)."""
    if x is None or not is_concrete(x.shape):
        return sequence_of(x.dtype if x is not None else 0, None)
    shape = list(x.shape)
    rank = len(shape)
    axis = _attr(node, "axis", 0)
    if not -rank <= axis < rank:  # HandleNegativeAxis in PrepareForCompute (sequence_ops.cc)
        raise _split_error(node, f"axis {axis} is out of range for its input of rank {rank}")
    axis = axis + rank if axis < 0 else axis
    total = int(shape[axis])
    given = node.input[1] if len(node.input) > 1 and node.input[1] else ""
    keep = bool(_attr(node, "keepdims", 1))
    if not given:
        count, lengths = total, None
    else:
        v = values.get(given)
        if v is None:
            return sequence_of(x.dtype, None)
        if v.ndim == 0:
            step = int(v)
            if step <= 0:  # ORT_ENFORCE(split_scalar > 0)
                raise _split_error(node, f"its split {step} is not > 0")
            count, lengths = -(-total // step), None
        else:
            keep = True
            lengths = [int(n) for n in v.reshape(-1)]
            if any(n < 0 for n in lengths):  # 1.31's kernel runs 0-length pieces, fails negative ones
                raise _split_error(node, f"its split {lengths} has a negative value")
            if sum(lengths) != total:  # split_size_sum != split_dim_size
                raise _split_error(node, f"its split adds up to {sum(lengths)}, not to the dim {total} it splits")
            count = len(lengths)
    if count > MAX_PIECES:
        return sequence_of(x.dtype, None)
    if lengths is None:
        step = int(values[given]) if given else 1
        lengths = [step] * (total // step) + ([total % step] if total % step else [])
        if not keep and any(n != 1 for n in lengths):  # Tensor::Reshape fails: the piece is not 1 long
            raise _split_error(node, f"keepdims 0 drops axis {axis}, but its pieces are {lengths[0]} long, not 1")
    pieces = []
    for n in lengths:
        piece = list(shape)
        if keep:
            piece[axis] = n
        else:
            del piece[axis]
        pieces.append(TensorType(dtype=x.dtype, shape=tuple(piece)))
    return sequence_of(x.dtype, tuple(pieces))


#: Ops of the default domain whose runtime types this module gives -> the rule.
SEQUENCE_RULES: OpTable[SequenceRule] = OpTable(domain_table(DEFAULT_DOMAIN, {
    "Identity": _identity,
    "Optional": _optional_rule,
    "OptionalHasElement": _optional_has_element,
    "OptionalGetElement": _optional_get_element,
    "SequenceEmpty": _sequence_empty,
    "SequenceConstruct": _sequence_construct,
    "SplitToSequence": _split_to_sequence,
    "SequenceInsert": _on_sequence(_sequence_insert),
    "SequenceErase": _on_sequence(_sequence_erase),
    "SequenceLength": _on_sequence(_sequence_length),
    "SequenceAt": _on_sequence(_sequence_at),
    "ConcatFromSequence": _on_sequence(_concat_from_sequence),
}))
