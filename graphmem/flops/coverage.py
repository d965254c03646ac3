"""Which ops have a FLOP rule: every default-domain op at an opset, plus the contrib ops we know.

The answer is the registry's static ``kind`` per op (a "counted" op may still be unsupported for a
node whose shapes are unknown). Ops without an entry are "unsupported".
"""

from __future__ import annotations

from onnx import defs

from graphmem.errors import UsageError
from graphmem.flops.registry import REGISTRY
from graphmem.optable import is_default_domain

__all__ = ["coverage", "default_domain_ops"]


def default_domain_ops(opset: int) -> list[str]:
    """Ops of the default ONNX domain defined at ``opset``: the newest version ≤ opset exists
    and is not deprecated (Upsample after 10, Scatter after 11, ...)."""
    latest: dict[str, tuple[int, bool]] = {}
    for s in defs.get_all_schemas_with_history():
        if not is_default_domain(s.domain) or s.since_version > opset:
            continue
        have = latest.get(s.name)
        if have is None or s.since_version > have[0]:
            latest[s.name] = (s.since_version, s.deprecated)
    return sorted(name for name, (_, deprecated) in latest.items() if not deprecated)


def coverage(opset: int) -> list[tuple[str, str, str]]:
    """``(domain, op_type, outcome)`` for every default-domain op at ``opset`` and every
    contrib-domain op with a rule; outcome is "counted", "zero" or "unsupported".

    Raises :class:`UsageError` when ``opset`` is not a positive integer.
    """
    if isinstance(opset, bool) or not isinstance(opset, int) or opset < 1:
        raise UsageError(f"opset must be a positive integer, got {opset!r}")
    rows: list[tuple[str, str, str]] = []
    for op in default_domain_ops(opset):
        entry = REGISTRY.get(("", op))
        rows.append(("", op, entry.outcome if entry is not None else "unsupported"))
    contrib = sorted((d, op) for d, op in REGISTRY if d != "")
    rows.extend((d, op, REGISTRY[(d, op)].outcome) for d, op in contrib)
    return rows
