"""Typed shapes, shared by every stage after loading.

A dim is an ``int`` (known), a ``str`` (a named symbol such as ``batch``) or ``None`` (unknown,
unnamed). A shape is a tuple of dims; ``None`` in place of the tuple means the rank is unknown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TypeGuard

import onnx

__all__ = [
    "CONTAINERS",
    "Dim",
    "Shape",
    "TensorType",
    "type_from_proto",
    "type_to_proto",
    "is_concrete",
    "numel",
    "known_dims",
]

#: Kinds whose value holds tensors of its own (``TensorType.elements``): a sequence, an optional.
CONTAINERS = frozenset({"sequence_type", "optional_type"})

Dim = int | str | None
Shape = tuple[Dim, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TensorType:
    """Element type (ONNX enum; 0 = unknown) and shape (None = rank unknown) of one value.

    ``kind`` is "tensor" for dense tensors; sequences, maps and optionals keep their kind. A
    sequence (``sequence_type``) has its elements' element type and, as ``shape``, the shape the
    file or ONNX inference gives every element; ``elements`` are the types of its elements in
    order when the runtime view knows them (None: unknown), the only way its size is known. An
    optional (``optional_type``) has what it holds as ``holds`` ("tensor" or "sequence_type"; ""
    when not known), that value's element type and shape, and as ``elements`` the tensors it
    holds (``()`` holding nothing, ``holds`` "": an optional without a value).
    """

    dtype: int
    shape: Shape | None
    kind: str = "tensor"
    elements: tuple[TensorType, ...] | None = None
    holds: str = ""


UNKNOWN = TensorType(dtype=0, shape=None)


def type_from_proto(tp: onnx.TypeProto) -> TensorType:
    """Read an ONNX TypeProto; dims without value or name become ``None``."""
    which = tp.WhichOneof("value")
    if which == "sequence_type" and tp.sequence_type.elem_type.WhichOneof("value") == "tensor_type":
        element = type_from_proto(tp.sequence_type.elem_type)
        return TensorType(dtype=element.dtype, shape=element.shape, kind="sequence_type")
    if which == "optional_type" and tp.optional_type.elem_type.WhichOneof("value") in ("tensor_type", "sequence_type"):
        held = type_from_proto(tp.optional_type.elem_type)
        if held.kind in ("tensor", "sequence_type"):
            return TensorType(dtype=held.dtype, shape=held.shape, kind="optional_type", holds=held.kind)
    if which != "tensor_type":
        return TensorType(dtype=0, shape=None, kind=which or "unknown")
    tt = tp.tensor_type
    if not tt.HasField("shape"):
        return TensorType(dtype=tt.elem_type, shape=None)
    dims: list[Dim] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.dim_param:
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return TensorType(dtype=tt.elem_type, shape=tuple(dims))


def type_to_proto(t: TensorType) -> onnx.TypeProto:
    """Write a TensorType back as an ONNX TypeProto (for per-node shape inference)."""
    tp = onnx.TypeProto()
    if t.kind == "sequence_type":  # a sequence of tensors: its element type
        tp.sequence_type.elem_type.CopyFrom(type_to_proto(TensorType(dtype=t.dtype, shape=t.shape)))
        return tp
    if t.kind == "optional_type" and t.holds and t.dtype:  # an optional: what it holds
        tp.optional_type.elem_type.CopyFrom(type_to_proto(TensorType(dtype=t.dtype, shape=t.shape, kind=t.holds)))
        return tp
    tt = tp.tensor_type
    tt.elem_type = t.dtype
    if t.shape is not None:
        shape = tt.shape
        shape.SetInParent()
        for d in t.shape:
            dim = shape.dim.add()
            if isinstance(d, int):
                dim.dim_value = d
            elif isinstance(d, str):
                dim.dim_param = d
    return tp


def known_dims(t: TensorType) -> TensorType:
    """``t`` with its negative dim values made unknown (``None``). onnxruntime clears them from the
    types a file declares (``core/graph/node_arg.cc`` RemoveInvalidValues); onnx's inference
    writes one where a shape value holds -1 (Expand's shape from a Where that kept a -1, fuzz case
    17951), which no kernel runs (``core/framework/tensor.cc``: "Tensor shape.Size() must be >= 0").
    Either way the dim is not known: a tensor with one is unresolved, never -1 in a document."""
    if t.shape is None or not any(isinstance(d, int) and d < 0 for d in t.shape):
        return t
    return replace(t, shape=tuple(None if isinstance(d, int) and d < 0 else d for d in t.shape))


def is_concrete(shape: Shape | None) -> TypeGuard[tuple[int, ...]]:
    """True when the rank and every dim are known integers."""
    return shape is not None and all(isinstance(d, int) for d in shape)


def numel(shape: tuple[int, ...]) -> int:
    """Element count of a concrete shape."""
    return math.prod(shape)
