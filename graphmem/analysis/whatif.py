"""What-ifs: the same model sized as if its floating tensors had another dtype (``--as-dtype``).

Every floating tensor, weights included, is re-typed; integer shape tensors are untouched.
"""

from __future__ import annotations

from dataclasses import replace

from graphmem.model.dtypes import is_float, tensor_bytes
from graphmem.model.loading import Weight
from graphmem.model.types import TensorType

__all__ = ["cast_floats", "cast_weights"]


def cast_floats(types: dict[str, TensorType], target: int) -> dict[str, TensorType]:
    """The same types with every floating tensor re-typed to ``target`` (shapes untouched)."""
    return {k: replace(t, dtype=target) if is_float(t.dtype) else t for k, t in types.items()}


def cast_weights(weights: dict[str, Weight], target: int) -> dict[str, Weight]:
    """The same weights with every floating one re-sized as ``target``."""
    out = {}
    for k, w in weights.items():
        if is_float(w.dtype):
            w = replace(w, dtype=target, nbytes=tensor_bytes(target, w.numel))
        out[k] = w
    return out
