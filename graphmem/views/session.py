"""The ``session`` block of ``graphmem peak --json`` and the table's "held by the session" section:
what a session takes from the machine (:class:`graphmem.analysis.session.SessionFigures`, or the
CUDA provider's :class:`graphmem.analysis.cuda_held.CudaSessionFigures`, computed by the session stage,
:mod:`graphmem.analysis.hold`). Tables use binary units and name them; JSON figures are exact
integers. The block is made in the analysis layer (:mod:`graphmem.analysis.session_doc`, below the
gates that read it) and re-exported here.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from graphmem.analysis.session_doc import session_json
from graphmem.units import byte_table, format_bytes

__all__ = ["session_json", "session_lines", "session_rows"]


def session_rows(s: Any) -> list[tuple[str, int, str]]:
    """(label, bytes, note) of the five figures, for the table and the HTML report."""
    resident = ("VmRSS growth, session creation to run 5" if s.provider == "cpu"
                else "device memory: arena + context and handles")
    return [
        ("weights held", s.weights_held_bytes, "initializers the session keeps + pre-packed copies"),
        ("arena before run 1", s.arena_before_run_bytes, "what session creation put in the arena"),
        ("arena over run 1", s.arena_first_run_bytes, "regions after run 1 (never returned)"),
        ("arena steady", s.arena_steady_bytes, f"after run {s.steady_after_run} on (memory pattern's block)"),
        ("resident", s.resident_bytes, resident),
    ]


def session_lines(s: Any) -> list[str]:
    """The table's "held by the session" section."""
    if s.provider == "cpu":
        where = f"onnxruntime CPU session, {s.options.intra_op_num_threads} intra-op thread(s)"
    else:
        where = "onnxruntime CUDA session, emulated from the sources, not checked on a GPU"
    parts = asdict(s.parts)
    lines = ["", f"  held by the session ({where}):", *byte_table(session_rows(s))]
    lines.append("    resident = " + " + ".join(f"{k} {format_bytes(v)}" for k, v in parts.items()))
    changed = _changed(s.options)
    if changed:
        lines.append(
            "    options: " + ", ".join(f"{k}={v}" for k, v in changed.items()) + " (others onnxruntime's defaults)"
        )
    else:
        lines.append("    options: onnxruntime's defaults")
    if s.exact:
        lines.append("    exact: every figure from emulated rules")
    else:
        lines.append("    NOT EXACT (session.approximations):")
        seen: dict[str, list[Any]] = {}
        for a in s.approximations:
            seen.setdefault(a.kind, []).append(a)
        for kind, xs in seen.items():
            first = xs[0]
            figures = ", ".join(f.removesuffix("_bytes") for f in first.figures)
            more = f" (+{len(xs) - 1} more)" if len(xs) > 1 else ""
            where_ = f"{first.node}: " if first.node else ""
            lines.append(f"      {kind} [{figures}]: {where_}{first.detail}{more}")
    return lines


def _changed(options: Any) -> dict[str, object]:
    """The options that differ from onnxruntime's defaults (thread count and level aside: the
    section names them)."""
    default = type(options)().as_dict()
    skip = {"intra_op_num_threads", "graph_optimization_level"}
    return {k: v for k, v in options.as_dict().items() if k not in skip and default.get(k) != v}
