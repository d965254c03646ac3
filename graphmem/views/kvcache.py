"""The KV cache of decoder exports, reported as its own line.

A decoder exported for incremental decoding takes the cache of earlier tokens as graph inputs
and returns the grown cache as outputs. Names, as the exporters write them: inputs
``past_key_values.0.key`` (Hugging Face / optimum), ``past.0`` or ``past_key.0`` (older GPT-2
exports); outputs ``present.0.key`` or ``present_key.0``. Here an input whose name starts with
``past`` and an output whose name starts with ``present`` (case-insensitive) is cache.

The cache is *already in* the totals: past inputs are graph inputs (``io.inputs_bytes``), present
outputs are graph outputs, inside the activation peak. The KV line breaks them out; it is never
added a second time. Its sequence axis (axis -2 of ``[batch, heads, seq, head_dim]``) names the
dim to solve for the longest context that fits (``graphmem fit --solve``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphmem.units import format_bytes

if TYPE_CHECKING:
    from graphmem.analysis.result import Analysis
    from graphmem.model.loading import Model

__all__ = ["KVCache", "kv_names", "context_dim", "kv_cache", "kv_json", "kv_lines"]


@dataclass(frozen=True, slots=True, kw_only=True)
class KVCache:
    """Past (input) and present (output) cache tensors of one analysis, in bytes."""

    past: tuple[str, ...]
    present: tuple[str, ...]
    past_bytes: int
    present_bytes: int
    unknown: tuple[str, ...]  # cache tensors without a static size (not in the figures)
    context_dim: str | None

    @property
    def total_bytes(self) -> int:
        """Past inputs + present outputs."""
        return self.past_bytes + self.present_bytes


def kv_names(model: Model) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(past inputs, present outputs) of ``model``, by the naming rule above."""
    past = tuple(n for n in model.inputs if n.lower().startswith("past"))
    present = tuple(n for n in model.outputs if n.lower().startswith("present"))
    return past, present


def context_dim(model: Model) -> str | None:
    """The symbolic dim of the past inputs' sequence axis, or None without a KV cache.

    Axis -2 of ``[batch, heads, seq, head_dim]``; failing that, the first named dim after the
    batch axis.
    """
    past, _ = kv_names(model)
    for name in past:
        shape = model.inputs[name].shape or ()
        if len(shape) >= 3 and isinstance(shape[-2], str):
            return shape[-2]
        for d in shape[1:]:
            if isinstance(d, str):
                return d
    return None


def kv_cache(a: Analysis) -> KVCache | None:
    """The KV cache of an analysed model, or None when it has no past/present tensors."""
    from graphmem.model.program import tensor_size

    past, present = kv_names(a.graph.model)
    if not past and not present:
        return None
    unknown = []
    sizes = {}
    for name in past + present:
        size = tensor_size(a.types.get(name))
        if size is None:
            unknown.append(name)
        sizes[name] = size or 0
    return KVCache(
        past=past,
        present=present,
        past_bytes=sum(sizes[n] for n in past),
        present_bytes=sum(sizes[n] for n in present),
        unknown=tuple(unknown),
        context_dim=context_dim(a.graph.model),
    )


def kv_json(kv: KVCache | None) -> dict[str, Any] | None:
    """The ``kv_cache`` JSON object (null without a cache)."""
    if kv is None:
        return None
    return {
        "past_bytes": kv.past_bytes,
        "present_bytes": kv.present_bytes,
        "total_bytes": kv.total_bytes,
        "past": list(kv.past),
        "present": list(kv.present),
        "context_dim": kv.context_dim,
        "unknown": list(kv.unknown),
    }


def kv_lines(kv: KVCache | None, *, indent: str = "  ") -> list[str]:
    """Table lines: the cache as its own line (empty without a cache)."""
    if kv is None:
        return []
    lines = [
        f"{indent}kv cache {format_bytes(kv.total_bytes):>12} {kv.total_bytes:>16,}  past "
        f"inputs {format_bytes(kv.past_bytes)} ({len(kv.past)}) + present outputs "
        f"{format_bytes(kv.present_bytes)} ({len(kv.present)}); already in inputs and "
        "activations peak",
    ]
    if kv.context_dim:
        lines.append(f"{indent}  context dim: {kv.context_dim} (fit --solve {kv.context_dim} "
                     "gives the longest context that fits)")
    if kv.unknown:
        lines.append(f"{indent}  cache tensors of unknown size: {', '.join(kv.unknown[:4])}")
    return lines
