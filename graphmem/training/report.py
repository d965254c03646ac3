"""Render a :class:`~graphmem.training.estimate.TrainingEstimate` as a table or a JSON document.

JSON: ``schema_version`` 1 at the top level, the training figures under ``training``; every byte
figure an exact integer. Keys are added later, never renamed.
"""

from __future__ import annotations

from typing import Any

from graphmem.analysis.dims import inputs_text
from graphmem.analysis.document import model_json
from graphmem.host import host_line
from graphmem.training.estimate import TrainingEstimate
from graphmem.units import byte_table, format_bytes, format_count

__all__ = ["SCHEMA_VERSION", "training_json", "training_table"]

SCHEMA_VERSION = 1


def training_json(e: TrainingEstimate) -> dict[str, Any]:
    """The ``graphmem train --json`` document."""
    a, c = e.analysis, e.config
    return {
        "schema_version": SCHEMA_VERSION,
        "model": model_json(a),
        "config": {
            "optimizer": c.optimizer,
            "grads": c.grads,
            "precision": c.precision,
            "frozen": list(c.frozen),
            "foreach": c.foreach,
        },
        "training": {
            "weights_bytes": e.weights_bytes,
            "grads_bytes": e.grads_bytes,
            "optimizer_state_bytes": e.optimizer_state_bytes,
            "saved_bytes": e.saved_bytes,
            "activation_peak_bytes": e.activation_peak_bytes,
            "step_peak_bytes": e.step_peak_bytes,
            "peak_phase": e.peak_phase,
            "params": e.params,
            "trainable_params": e.trainable_params,
            "frozen_params": e.frozen_params,
            "master_weights_bytes": e.master_weights_bytes,
            "optimizer_temp_bytes": e.optimizer_temp_bytes,
            "inputs_bytes": e.inputs_bytes,
            "saved_inputs_bytes": e.saved_inputs_bytes,
            "activation_peak_at": e.activation_peak_at,
            "backward_peak_bytes": e.backward_peak_bytes,
            "backward_peak_at": e.backward_peak_at,
            "phases": {p.phase: {"total_bytes": p.total_bytes, "at": p.at} for p in e.phases},
            "saved_by_layer": [
                {"layer": r.layer, "bytes": r.bytes, "storages": r.storages} for r in e.saved_by_layer
            ],
            "unknown_ops": dict(e.unknown_ops),
            "unknown_sizes": list(e.unknown_sizes),
            "warnings": list(e.warnings),
        },
        "host": a.host.to_dict(),
    }


def training_table(e: TrainingEstimate, *, top: int = 10) -> str:
    """The human-readable ``graphmem train`` report (binary units, exact bytes beside them)."""
    a, c = e.analysis, e.config
    dims = ", ".join(f"{k}={v}" for k, v in a.model.dims.items()) or "none"
    frozen = f", frozen: {' '.join(c.frozen)}" if c.frozen else ""
    params = f"{format_count(e.trainable_params)} of {format_count(e.params)} params trainable"
    weights_note = params + (f"; incl. fp32 master {format_bytes(e.master_weights_bytes)}"
                             if e.master_weights_bytes else "")
    rows = [
        ("weights", e.weights_bytes, weights_note),
        ("gradients", e.grads_bytes, f"trainable weights, {c.grads}"),
        ("optimizer state", e.optimizer_state_bytes, c.optimizer),
        ("saved for backward", e.saved_bytes, "unique storages autograd holds"),
        ("activation peak", e.activation_peak_bytes, f"forward, at '{e.activation_peak_at}'"),
        ("backward peak", e.backward_peak_bytes, f"saved + gradients, at '{e.backward_peak_at}'"),
        ("inputs", e.inputs_bytes, ""),
    ]
    lines = [
        f"graphmem train: {a.model.path}",
        f"  dims: {dims}{inputs_text(a.model.shapes, a.model.values)}; optimizer {c.optimizer}, grads {c.grads}, "
        f"precision {c.precision}{frozen}",
        f"  host: {host_line(a.host)}, PyTorch threads {a.host.torch_threads}",
        "",
        *byte_table(rows, width=20),
    ]
    lines += ["", "  step phases (totals: weights, state, inputs and gradients included)"]
    for p in e.phases:
        mark = "  <- step peak" if p.phase == e.peak_phase else ""
        lines.append(f"  {p.phase:<20} {format_bytes(p.total_bytes):>12} {p.total_bytes:>16,}  at '{p.at}'{mark}")
    if e.saved_by_layer:
        lines += [
            "",
            f"  saved for backward by layer (top {min(top, len(e.saved_by_layer))} of {len(e.saved_by_layer)})",
        ]
        for r in e.saved_by_layer[:top]:
            share = r.bytes / e.saved_bytes if e.saved_bytes else 0.0
            lines.append(f"  {format_bytes(r.bytes):>12} {share:6.1%}  {r.layer}")
    if e.unknown_ops:
        ops = ", ".join(f"{k} x{n}" for k, n in e.unknown_ops)
        lines += ["", f"  ops without a saved-tensor rule (assumed to save their inputs): {ops}"]
    if e.unknown_sizes:
        lines += [f"  tensors of unknown size (not counted): {', '.join(e.unknown_sizes[:10])}"]
    return "\n".join(lines)
