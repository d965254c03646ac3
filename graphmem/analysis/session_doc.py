"""The ``session`` block of the peak document, below the gates that read it: the JSON of the
session stage's figures (:mod:`graphmem.analysis.hold`). :mod:`graphmem.views.session` draws the
table's section from the same figures; ``check`` and ``diff`` put the block in the documents they
gate (``--max-resident``, ``--max-arena``, ``--max-increase-resident``, ``--max-increase-arena``).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from graphmem.analysis.session import SESSION_FIGURES

__all__ = ["session_json"]


def session_json(s: Any) -> dict[str, Any]:
    """The ``session`` block: options assumed, the five figures, exactness and why not."""
    out: dict[str, Any] = {
        "provider": s.provider,
        "options": s.options.as_dict(),
        **{name: getattr(s, name) for name in SESSION_FIGURES},
        "exact": s.exact,
        "approximations": [
            {"kind": a.kind, "figures": list(a.figures), "node": a.node, "detail": a.detail} for a in s.approximations
        ],
        "resident_parts": asdict(s.parts),
        "steady_after_run": s.steady_after_run,
    }
    if s.device is not None:
        out["device"] = asdict(s.device)
    return out
