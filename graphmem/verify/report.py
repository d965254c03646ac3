"""Render a :class:`~graphmem.verify.compare.Verification` as a table or a JSON document
(``graphmem verify``; schema ``verify``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphmem.analysis.dims import shape_json
from graphmem.gate.budgets import GateResult
from graphmem.units import format_bytes
from graphmem.verify.compare import Verification
from graphmem.views.report import SCHEMA_VERSION, exactness_lines

__all__ = ["verify_json", "verify_table"]


def verify_json(
    v: Verification, *, path: str, dims: Mapping[str, int], gate: GateResult | None = None
) -> dict[str, Any]:
    """The ``verify`` document (``--json``); ``gate``: the budgets' verdict, when any was given."""
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "model": {
            "path": path,
            "dims": dict(dims),
            "shapes": {k: shape_json(s) for k, s in v.analysis.model.shapes.items()},
            "values": {k: list(x) for k, x in v.analysis.model.values.items()},
        },
        "verify": {
            "provider": v.provider,
            "provider_reason": v.provider_reason,
            "graph_opt": v.graph_opt,
            "predicted_bytes": v.predicted_bytes,
            "measured_bytes": v.measured_bytes,
            "measured_run2_bytes": v.measured_run2_bytes,
            "measured_scratch_bytes": v.measured_scratch_bytes,
            "predicted_scratch_bytes": v.predicted_scratch_bytes,
            "measured_scratch_unpacked_bytes": v.measured_scratch_unpacked_bytes,
            "scratch_note": v.scratch_note,
            "weights_held_bytes": v.weights_held_bytes,
            "predicted_weights_bytes": v.analysis.weights.bytes,
            "weights_measured_bytes": v.weights_unpacked_bytes,
            "ratio": v.ratio,
            "tolerance": v.tolerance,
            "passed": v.passed,
            "order_peaks": list(v.order_peaks),
            "order_matched": v.order_matched,
            "first_divergence": None
            if v.divergence is None
            else {
                "node": v.divergence.node,
                "step": v.divergence.step,
                "predicted_bytes": v.divergence.predicted_bytes,
                "measured_bytes": v.divergence.measured_bytes,
            },
            "output_mismatches": list(v.output_mismatches),
            "exact": v.analysis.activations.exact,
            "approximations": [
                {"kind": x.kind, "node": x.node, "detail": x.detail} for x in v.analysis.activations.approximations
            ],
            "cuda_outside_arena": _cuda_json(v),
            "session": _session_json(v),
        },
        "host": v.analysis.host.to_dict(),
    }
    if gate is not None:
        doc["gate"] = gate.to_json()
    return doc


def _session_json(v: Verification) -> dict[str, Any] | None:
    """Each session figure predicted, measured, the ratio and whether it is within its tolerance."""
    c = v.session
    if c is None:
        return None
    from graphmem.views.session import session_json

    figures = {}
    for name in c.measured:
        want, got = getattr(c.figures, name), c.measured[name]
        figures[name] = {
            "predicted": want,
            "measured": got,
            "ratio": None if got is None else (want / got if got else (1.0 if want == 0 else None)),
            "tolerance": c.tolerances.get(name),
            "within": c.within.get(name),
        }
    return {"prediction": session_json(c.figures), "figures": figures, "resident_processes": list(c.resident_processes),
            "passed": c.passed, "notes": list(c.notes)}


def _cuda_json(v: Verification) -> dict[str, Any] | None:
    """Device memory a CUDA session holds outside its arena (context, cuBLAS/cuDNN handles)."""
    f = v.cuda_outside_arena
    if f is None:
        return None if v.cuda_problem is None else {"unavailable": v.cuda_problem}
    return {
        "bytes": f.outside_arena_bytes,
        "basis": f.basis,
        "context_included": f.context_included,
        "caveats": list(f.caveats),
    }


_LABELS = {
    "weights_held_bytes": "weights held",
    "arena_before_run_bytes": "arena before run 1",
    "arena_first_run_bytes": "arena over run 1",
    "arena_steady_bytes": "arena after run 5",
    "resident_bytes": "resident growth",
}


def _session_lines(v: Verification) -> list[str]:
    """The session's figures, predicted beside measured (the table's second part)."""
    c = v.session
    if c is None:
        return []
    where = "CUDA device" if c.figures.provider == "cuda" else "fresh processes, median"
    lines = [f"  held by the session ({where}):"]
    for name, label in _LABELS.items():
        want, got = getattr(c.figures, name), c.measured.get(name)
        verdict = {True: "ok", False: "OUTSIDE", None: ""}[c.within.get(name)]
        tol = c.tolerances.get(name)
        ratio = f"{want / got:.4f}" if got else ("=" if got == 0 and want == 0 else "")
        extra = f" {ratio:>7} ({tol:.1%}) {verdict}" if tol is not None and got is not None else ""
        lines.append(f"  {label:<26} {format_bytes(want):>14} {'' if got is None else format_bytes(got):>14}{extra}")
    if c.resident_processes:
        lines.append("    resident growth per process: " + ", ".join(format_bytes(x) for x in c.resident_processes))
    lines += [f"    {note}" for note in c.notes]
    if not c.figures.exact:
        kinds = ", ".join(dict.fromkeys(a.kind for a in c.figures.approximations))
        lines.append(f"    session figures not exact: {kinds} (graphmem peak lists why)")
    return lines


def verify_table(v: Verification, *, path: str, gate: GateResult | None = None) -> str:
    """The ``verify`` table: predicted beside measured, the ratio, the verdict."""
    rows = [
        ("activation peak (run 1)", v.predicted_bytes, v.measured_bytes),
        *(
            [("CUDA outside arena", None, v.cuda_outside_arena.outside_arena_bytes)]
            if v.cuda_outside_arena is not None
            else []
        ),
        ("  run 2 (memory pattern)", None, v.measured_run2_bytes),
        ("  with kernel scratch", v.predicted_scratch_bytes, v.measured_scratch_bytes),
        *(
            [("  scratch, prepacking off", None, v.measured_scratch_unpacked_bytes)]
            if v.scratch_note is not None
            else []
        ),
        ("weights (prepacking off)", v.analysis.weights.bytes, v.weights_unpacked_bytes),
        ("arena held before run 1", None, v.weights_held_bytes),
    ]
    lines = [
        f"graphmem verify: {path}  ({v.provider}: {v.provider_reason}; graph-opt {v.graph_opt})",
        f"  {'':<26} {'predicted':>14} {'measured':>14}",
    ]
    for label, p, m in rows:
        ps = "" if p is None else format_bytes(p)
        ms = "" if m is None else format_bytes(m)
        if label == "  with kernel scratch" and v.scratch_note is not None:
            ms = "not comparable"
        lines.append(f"  {label:<26} {ps:>14} {ms:>14}")
    if v.scratch_note is not None:
        lines.append(f"  in-use with kernel scratch: {v.scratch_note}")
    lines.append(f"  ratio predicted/measured: {v.ratio:.4f} (tolerance {v.tolerance:.1%})")
    lines += order_lines(v)
    if v.divergence:
        d = v.divergence
        lines.append(
            f"  first divergence at step {d.step}, node '{d.node}': predicted "
            f"{format_bytes(d.predicted_bytes)}, measured {format_bytes(d.measured_bytes)}"
        )
    lines += [f"  output shape mismatch: {line}" for line in v.output_mismatches]
    lines += _session_lines(v)
    if not v.analysis.activations.exact:  # measured all the same; the prediction says why it is not exact
        lines += exactness_lines(v.analysis)
    lines.append("  prediction: PASS" if v.passed else "  prediction: FAIL")
    if gate is not None:
        lines.append(f"  budgets: {'ok' if gate.passed else 'FAILED'}")
    return "\n".join(lines)


def order_lines(v: Verification) -> list[str]:
    """When onnxruntime picks the execution order per session: the orders' peaks and which one
    this session's measured peak matched (the prediction is the largest)."""
    if not v.order_peaks:
        return []
    peaks = ", ".join(f"{b:,}" for b in v.order_peaks)
    head = f"  execution order: onnxruntime picks one of the orders per session (peaks {peaks} B)"
    if v.order_matched is None:
        return [f"{head}; this session's {v.measured_bytes:,} B matches none of them"]
    which = (
        "the largest, as predicted"
        if v.order_matched == v.predicted_bytes
        else "not the largest, which is the prediction"
    )
    return [f"{head}; this session ran the order of peak {v.order_matched:,} B ({which})"]
