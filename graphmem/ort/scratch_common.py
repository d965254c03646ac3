"""What every kernel-scratch rule shares: the request record and the attribute and shape helpers.

The rules live in :mod:`graphmem.ort.scratch` (float kernels, the table) and
:mod:`graphmem.ort.quant_scratch` (quantized kernels); both read nodes through these helpers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from graphmem.host import HostProfile
from graphmem.model.dtypes import tensor_bytes
from graphmem.model.types import TensorType, is_concrete

__all__ = ["KernelScratch", "ScratchSite", "attr", "concrete_shape", "conv_pads", "nbytes"]


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelScratch:
    """Scratch requests of one kernel run, in request order; all are freed before it returns.

    ``before`` are requested before the kernel's outputs (Where builds its selections first),
    ``after`` once the outputs exist (the usual case)."""

    before: tuple[int, ...] = ()
    after: tuple[int, ...] = ()

    @property
    def total(self) -> int:
        return sum(self.before) + sum(self.after)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScratchSite:
    """What a rule may read about a node besides its runtime types: the machine it runs on
    (``host``: the L2 size, the CPU flags MLAS dispatches on); the model's default-domain opset; ``values[i]``, the
    value of input ``i`` when shape inference computed it (small
    tensors: zero points, GroupQueryAttention's total length), else None; ``constant[i]``, whether
    input ``i`` is an initializer (kernels prepack those when the session is created, and a
    prepacked weight needs no scratch copy: ``OpKernelInfo::TryGetConstantInput``)."""

    host: HostProfile
    opset: int = 13
    values: Sequence[np.ndarray | None] = ()
    constant: Sequence[bool] = ()

    def value(self, i: int) -> np.ndarray | None:
        """The value of input ``i``, None when unknown or absent."""
        return self.values[i] if i < len(self.values) else None

    def is_constant(self, i: int) -> bool:
        """True when input ``i`` is an initializer."""
        return i < len(self.constant) and self.constant[i]


def attr(node: onnx.NodeProto, name: str, default):
    """The value of ``node``'s attribute ``name``, or ``default``."""
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def concrete_shape(t: TensorType | None) -> tuple[int, ...] | None:
    """The shape of a tensor whose every dim is known, else None."""
    if t is None or t.kind != "tensor" or not is_concrete(t.shape):
        return None
    return tuple(t.shape)


def nbytes(t: TensorType | None) -> int | None:
    """Bytes of a tensor of known shape and sized dtype, else None."""
    s = concrete_shape(t)
    if t is None or s is None:
        return None
    return tensor_bytes(t.dtype, math.prod(s))


def conv_pads(node: onnx.NodeProto, x: Sequence[int], k: Sequence[int], y: Sequence[int]) -> list[int]:
    """Total padding per spatial dim (``ConvAttributes::InferPadsAndOutputShape``)."""
    auto_pad = attr(node, "auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    n = len(k)
    strides = attr(node, "strides", [1] * n)
    dilations = attr(node, "dilations", [1] * n)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return [max(0, (y[i] - 1) * strides[i] + (k[i] - 1) * dilations[i] + 1 - x[i]) for i in range(n)]
    if auto_pad == "VALID":
        return [0] * n
    pads = attr(node, "pads", [0] * (2 * n))
    return [pads[i] + pads[i + n] for i in range(n)]
