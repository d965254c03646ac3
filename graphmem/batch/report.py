"""Tables and JSON documents of ``graphmem sweep`` and ``graphmem fit`` (see :mod:`graphmem.batch.search`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphmem.analysis.dims import inputs_text, shape_json
from graphmem.batch.search import (
    QUADRATIC_RULE,
    FitCheck,
    MemoryFit,
    SearchResult,
    Sweep,
    TrainingFit,
    breakdown,
    dominant,
)
from graphmem.units import format_bytes, format_count

if TYPE_CHECKING:
    from graphmem.analysis.result import Analysis
    from graphmem.batch.held import DefaultLevel, HeldFit, HeldPoint
    from graphmem.training import TrainingEstimate
    from graphmem.views.devices import Device

__all__ = ["sweep_json", "sweep_table", "fit_json", "fit_table", "fit_formula"]


def _exactness(a: Any) -> dict[str, Any]:
    """``exact`` and ``approximations`` of the analysis a fit answer rests on (None: none)."""
    if a is None:
        return {"exact": None, "approximations": []}
    return {"exact": a.activations.exact, "approximations": [
        {"kind": x.kind, "node": x.node, "detail": x.detail} for x in a.activations.approximations]}


def sweep_json(s: Sweep) -> dict[str, Any]:
    """The ``graphmem sweep --json`` document (schema_version 1; bytes exact in rows, float
    coefficients in the fit; ``flops`` null when the counter is not available)."""
    f = s.fit
    return {
        "schema_version": 1,
        "model": {"path": s.path},
        "dim": s.dim,
        "fixed_dims": dict(s.fixed),
        "shapes": {k: shape_json(v) for k, v in s.shapes.items()},
        "values": {k: list(v) for k, v in s.values.items()},
        "as_dtype": s.as_dtype,
        "rows": [
            {"value": r.value, "dims": r.dims, "weights_bytes": r.weights_bytes,
             "activations_peak_bytes": r.activations_peak_bytes,
             "lower_bound_bytes": r.lower_bound_bytes, "inputs_bytes": r.inputs_bytes,
             "outputs_bytes": r.outputs_bytes, "total_bytes": r.total_bytes,
             "peak_node": r.peak_node, "flops": r.flops,
             "flops_unsupported_nodes": r.flops_unsupported, "kv_cache_bytes": r.kv_cache_bytes,
             "unresolved_tensors": r.unresolved, "exact": not r.approximations,
             "approximations": list(r.approximations),
             "held": _point_json(r.held)}
            for r in s.rows
        ],
        "graph_opt": s.graph_opt,
        "level_note": _note(s.graph_opt),
        "session_options": list(s.session_options),
        "steps": _steps_json([r.held for r in s.rows if r.held is not None]),
        "fit": {
            "model": "total = fixed + per_unit*x + per_unit2*x^2 (bytes)",
            "degree": f.degree,
            "fixed_bytes": f.fixed_bytes,
            "per_unit_bytes": f.per_unit_bytes,
            "per_unit2_bytes": f.per_unit2_bytes,
            "worst_residual_bytes": f.worst_residual_bytes,
            "worst_residual_at": f.worst_residual_at,
            "linear_worst_residual_bytes": f.linear_worst_residual_bytes,
            "parts": {k: {"fixed_bytes": c0, "per_unit_bytes": c1, "per_unit2_bytes": c2}
                      for k, (c0, c1, c2) in f.parts.items()},
            "rule": QUADRATIC_RULE,
        },
        "host": s.host.to_dict(),
    }


def _note(graph_opt: str) -> str | None:
    from graphmem.batch.held import level_note

    return level_note(graph_opt)


def _b(x: float) -> str:
    return format_bytes(round(x))


def fit_formula(f: MemoryFit) -> str:
    """"98.4 MiB + 11.2 MiB × batch (+ 24 B × batch²)"."""
    text = f"{_b(f.fixed_bytes)} {_signed(f.per_unit_bytes)} × {f.dim}"
    if f.degree == 2:
        sign = "-" if f.per_unit2_bytes < 0 else "+"
        text += f" {sign} {_f(abs(f.per_unit2_bytes))} B × {f.dim}²"
    return text


def _f(x: float) -> str:
    return f"{0.0 if abs(x) < 0.05 else x:,.1f}"


def _signed(x: float) -> str:
    return f"- {_b(-x)}" if round(x) < 0 else f"+ {_b(x)}"


def sweep_table(s: Sweep) -> str:
    """The ``graphmem sweep`` table and the fit under it."""
    fixed = ", ".join(f"{k}={v}" for k, v in s.fixed.items()) or "none"
    kv = any(r.kv_cache_bytes is not None for r in s.rows)
    held = any(r.held is not None for r in s.rows)
    note = _note(s.graph_opt)
    lines = [f"graphmem sweep: {s.path}",
             f"  sweeping {s.dim}; fixed dims: {fixed}" + inputs_text(s.shapes, s.values)
             + (f"; as {s.as_dtype}" if s.as_dtype else ""),
             f"  graph-opt {s.graph_opt}" + (f": {note}" if note else "")
             + (f"; session options: {' '.join(s.session_options)}" if s.session_options else ""), "",
             f"  {s.dim:>8} {'weights':>11} {'act peak':>11} {'lower bnd':>11} {'inputs':>11} "
             f"{'total':>11}" + (f" {'resident':>11} {'arena':>11}" if held else "")
             + f" {'FLOPs':>11}" + (f" {'kv cache':>11}" if kv else "")]
    for r in s.rows:
        fl = "unavailable" if r.flops is None else (
            ("≥ " if r.flops_unsupported else "") + format_count(r.flops))
        lines.append(
            f"  {r.value:>8} {format_bytes(r.weights_bytes):>11} "
            f"{format_bytes(r.activations_peak_bytes):>11} {format_bytes(r.lower_bound_bytes):>11} "
            f"{format_bytes(r.inputs_bytes):>11} {format_bytes(r.total_bytes):>11}"
            + (f" {_held_cell(r.held, 'resident')} {_held_cell(r.held, 'arena')}" if held else "")
            + f" {fl:>11}"
            + (f" {format_bytes(r.kv_cache_bytes):>11}" if kv else "")
            + (f"  * {r.unresolved} unresolved" if r.unresolved else "")
        )
    f = s.fit
    worst_row = next(r for r in s.rows if r.value == f.worst_residual_at)
    share = 100.0 * f.worst_residual_bytes / max(worst_row.total_bytes, 1)
    w, act, inp = f.parts["weights"], f.parts["activations"], f.parts["inputs"]
    lines += [
        "",
        f"  fit: requested total ≈ {fit_formula(f)}   ({'quadratic' if f.degree == 2 else 'linear'}, "
        "least squares)",
        f"    worst residual {_b(f.worst_residual_bytes)} ({share:.3f}% of the total) at "
        f"{s.dim}={f.worst_residual_at}"
        + (f"; linear would be off by {_b(f.linear_worst_residual_bytes)}"
           if f.degree == 2 else ""),
        f"    fixed {_b(f.fixed_bytes)} = weights {_b(w[0])} + activations independent of "
        f"{s.dim} {_b(act[0])} + inputs {_b(inp[0])}",
        f"    per {s.dim}: activations {_b(act[1])} + inputs {_b(inp[1])}"
        + (f"; per {s.dim}²: activations {_f(act[2])} B + inputs {_f(inp[2])} B"
           if f.degree == 2 else ""),
        f"    rule: {QUADRATIC_RULE}",
    ]
    if held:
        lines += _steps_lines(s)
    if any(r.unresolved for r in s.rows):
        lines.append("  * rows with tensors of no static size: their figures are lower estimates "
                     "(graphmem peak lists the tensors); the fit includes them")
    if all(r.flops is None for r in s.rows):
        lines.append("  FLOPs unavailable: the FLOP counter (graphmem.flops) is not installed")
    elif any(r.flops_unsupported for r in s.rows):
        lines.append("  ≥ FLOPs: some nodes have no FLOP rule (graphmem flops lists them); the "
                     "count is a lower bound")
    return "\n".join(lines)


def _held_cell(p: HeldPoint | None, by: str) -> str:
    return f"{'-' if p is None else format_bytes(p.figure(by)):>11}"


def _steps_lines(s: Sweep) -> list[str]:
    """The held figures' steps under the sweep's fit: no line through them."""
    from graphmem.batch.held import held_steps

    steps = held_steps([r.held for r in s.rows if r.held is not None])
    lines = ["", f"  held (resident, arena): step functions of {s.dim}, not fitted: the arena takes power-of-two "
                 "regions and never returns one; within a step resident grows only by the pages the runs write"]
    for st in steps:
        span = f"{st.first}" if st.first == st.last else f"{st.first}..{st.last}"
        resident = (format_bytes(st.resident_low) if st.resident_low == st.resident_high
                    else f"{format_bytes(st.resident_low)} .. {format_bytes(st.resident_high)}")
        lines.append(
            f"    {s.dim} {span:<12} arena {format_bytes(st.arena_bytes):>11} (regions {_regions(st.regions)}), "
            f"resident {resident}"
        )
    return lines


def _device_json(device: Device | None) -> dict[str, Any] | None:
    from graphmem.views.devices import device_json

    return device_json(device) if device is not None else None


def _training_json(t: TrainingFit, *, next_value: int | None = None) -> dict[str, Any]:
    c, e = t.config, t.estimate
    doc: dict[str, Any] = {
        "optimizer": c.optimizer, "grads": c.grads, "precision": c.precision,
        "frozen": list(c.frozen), "foreach": c.foreach,
    }
    figures = {
        "step_peak_bytes": "step_peak_bytes", "peak_phase": "peak_phase",
        "weights_bytes": "weights_bytes", "master_weights_bytes": "master_weights_bytes",
        "grads_bytes": "grads_bytes", "optimizer_state_bytes": "optimizer_state_bytes",
        "optimizer_temp_bytes": "optimizer_temp_bytes", "saved_bytes": "saved_bytes",
        "activation_peak_bytes": "activation_peak_bytes",
        "backward_peak_bytes": "backward_peak_bytes", "inputs_bytes": "inputs_bytes",
        "params": "params", "trainable_params": "trainable_params",
    }
    doc.update({k: getattr(e, attr) if e is not None else None for k, attr in figures.items()})
    doc["phases"] = ({p.phase: {"total_bytes": p.total_bytes, "at": p.at} for p in e.phases}
                     if e is not None else None)
    doc["inference_total_bytes"] = e.analysis.total_bytes if e is not None else None
    if next_value is not None:
        after = t.probes.get(next_value)
        doc["next_step_peak_bytes"] = after[0] if after else None
        doc["next_peak_phase"] = after[1] if after else None
    doc["warnings"] = list(t.warnings)
    return doc


def _phase_totals(e: TrainingEstimate) -> dict[str, int]:
    return {p.phase: p.total_bytes for p in e.phases}


def fit_json(r: SearchResult | FitCheck, *, device: Device | None = None,
             default_level: DefaultLevel | None = None) -> dict[str, Any]:
    """The ``graphmem fit --json`` document (schema_version 1): mode "solve" or "check".

    ``measure`` says what ``total_bytes`` (top level, probes, violations) is: ``"resident"``
    (``session.resident_bytes``, ``fit``'s default), ``"arena"`` (``session.arena_steady_bytes``),
    ``"total"``, the analysis total (``--by requested``), or ``"training_step_peak"`` (``fit --train``; then
    ``breakdown`` holds the
    phase peaks, ``dominant`` the phase that sets the step peak, and ``training`` the
    configuration and the training figures at the answer)."""
    from graphmem.views.kvcache import kv_cache, kv_json

    a, t = r.analysis, r.training
    e = t.estimate if t is not None else None
    h = r.held
    measure = "training_step_peak" if t is not None else "total" if h is None or h.by == "requested" else h.by
    doc: dict[str, Any] = {"schema_version": 1, "device": _device_json(device),
                           "budget_bytes": r.budget_bytes, "overhead_bytes": r.overhead_bytes,
                           "measure": measure}
    if h is not None:
        doc["held"] = held_json(h, r, default_level=default_level)

    def parts(a: Analysis) -> tuple[dict[str, int], str]:
        if e is None:  # inference: the analysis' own breakdown
            return breakdown(a), dominant(a)
        return _phase_totals(e), e.peak_phase

    if isinstance(r, FitCheck):
        c = r.analysis
        split, top = parts(c)
        doc.update(mode="check", host=c.host.to_dict(), model={"path": c.model.path}, dims=dict(c.model.dims),
                   shapes={k: shape_json(v) for k, v in c.model.shapes.items()},
                   values={k: list(v) for k, v in c.model.values.items()},
                   fits=r.fits, total_bytes=r.total_bytes, needed_bytes=r.needed_bytes,
                   headroom_bytes=r.headroom_bytes, breakdown=split, dominant=top,
                   kv_cache=kv_json(kv_cache(c)), unresolved=list(c.shapes.unresolved), **_exactness(c))
        if t is not None:
            doc["training"] = _training_json(t)
        return doc
    found_split, found_top = parts(a) if a is not None else (None, None)
    probes = []
    for p in r.probes:
        row: dict[str, Any] = {"value": p.value, "total_bytes": p.total_bytes, "fits": p.fits,
                               "unresolved_tensors": p.unresolved, "complete": p.complete}
        if t is not None:
            peak, phase = t.probes.get(p.value, (p.total_bytes, None))
            row.update(step_peak_bytes=peak, peak_phase=phase,
                       analysis_total_bytes=p.analysis_total_bytes)
        point = h.at(p.value) if h is not None else None
        if point is not None:
            row.update(requested_bytes=point.requested_bytes, resident_bytes=point.resident_bytes,
                       arena_bytes=point.arena_bytes)
        probes.append(row)
    doc.update(
        mode="solve", host=r.host.to_dict(), solve=r.dim, dims=dict(r.dims), largest=r.largest, fits=r.largest > 0,
        shapes={k: shape_json(v) for k, v in r.shapes.items()}, values={k: list(v) for k, v in r.values.items()},
        unbounded=r.unbounded, limit=r.limit,
        total_bytes=r.total_bytes, next_total_bytes=r.next_total_bytes,
        next_complete=r.next_complete,
        headroom_bytes=r.headroom_bytes, breakdown=found_split,
        dominant=found_top, kv_cache=kv_json(kv_cache(a)) if a else None,
        monotone=r.monotone, **_exactness(a),
        violations=[{"value": x0, "total_bytes": t0, "larger_value": x1, "smaller_total_bytes": t1}
                    for x0, t0, x1, t1 in r.violations],
        probes=probes,
    )
    if t is not None:
        doc["training"] = _training_json(t, next_value=r.largest + 1)
    if a is not None:
        doc["model"] = {"path": a.model.path}
    return doc


def _point_json(p: HeldPoint | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"value": p.value, "requested_bytes": p.requested_bytes, "resident_bytes": p.resident_bytes,
            "arena_bytes": p.arena_bytes, "weights_held_bytes": p.weights_held_bytes, "regions": list(p.regions),
            "exact": p.exact, "approximations": list(p.approximations)}


def _steps_json(points: Any) -> list[dict[str, Any]]:
    from graphmem.batch.held import held_steps

    return [{"first": s.first, "last": s.last, "regions": list(s.regions), "arena_bytes": s.arena_bytes,
             "resident_low_bytes": s.resident_low, "resident_high_bytes": s.resident_high}
            for s in held_steps(points)]


def _level_json(d: DefaultLevel | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {"graph_opt": "all", "requested_bytes": d.requested_bytes, "resident_bytes": d.resident_bytes,
            "arena_bytes": d.arena_bytes, "error": d.error}


def held_json(h: HeldFit, r: SearchResult | FitCheck, *, default_level: DefaultLevel | None = None) -> dict[str, Any]:
    """The ``held`` object of ``fit --json``: the figure compared (``by``, where it lives in the peak
    document), the session options, the level and its note, each analysed value's three figures,
    their steps (the arena's regions), and the figures at onnxruntime's default level."""
    from graphmem.batch.held import BY_FIGURES, BY_LABELS, RESIDENT_TOLERANCE, level_note

    graph_opt = getattr(r, "graph_opt", None) or (r.analysis.model.graph_opt if r.analysis is not None else "none")
    if isinstance(r, FitCheck):
        at, after = next(iter(h.points.values()), None), None
    else:
        at, after = h.at(r.largest), h.at(r.largest + 1)
    return {
        "by": h.by, "figure": BY_FIGURES[h.by], "label": BY_LABELS[h.by], "options": dict(h.options),
        "graph_opt": graph_opt, "level_note": level_note(graph_opt),
        "resident_tolerance": RESIDENT_TOLERANCE,
        "at": _point_json(at), "next": _point_json(after),
        "points": [_point_json(p) for _, p in sorted(h.points.items())],
        "steps": _steps_json(h.points),
        "default_level": _level_json(default_level),
    }


def _parts_line(a: Analysis) -> str:
    parts = breakdown(a)
    total = max(a.total_bytes, 1)
    return ", ".join(f"{k} {format_bytes(v)} ({100 * v / total:.1f}%)" for k, v in parts.items())


def _training_config_line(t: TrainingFit) -> str:
    c = t.config
    return (f"  training step: optimizer {c.optimizer}, grads {c.grads}, precision {c.precision}"
            + (f", frozen {' '.join(c.frozen)}" if c.frozen else "")
            + (", foreach" if c.foreach else "")
            + "; measured: the step peak (largest of forward, backward, optimizer step)")


def _training_lines(e: TrainingEstimate, where: str, indent: str) -> list[str]:
    phases = ", ".join(f"{p.phase} {format_bytes(p.total_bytes)}" for p in e.phases)
    at = next(p.at for p in e.phases if p.phase == e.peak_phase)
    return [
        f"{indent}{where}the step peaks in {e.peak_phase} (at '{at}'); phases: {phases}",
        f"{indent}weights {format_bytes(e.weights_bytes)}, gradients "
        f"{format_bytes(e.grads_bytes)}, optimizer state {format_bytes(e.optimizer_state_bytes)}"
        f", saved for backward {format_bytes(e.saved_bytes)}; inference total "
        f"{format_bytes(e.analysis.total_bytes)}",
    ]


def _mib(n: int | None) -> str:
    return "?" if n is None else format_bytes(n)


def _regions(regions: tuple[int, ...]) -> str:
    return " + ".join(format_bytes(x) for x in regions) if regions else "none"


def held_head(h: HeldFit, graph_opt: str) -> list[str]:
    """The lines under ``fit``'s budget: the figure compared, the options, the level."""
    from graphmem.batch.held import BY_LABELS, level_note
    from graphmem.ort.held.options import SessionOptions

    others = "|".join(b for b in ("resident", "arena", "requested") if b != h.by)
    default = SessionOptions().as_dict()
    skip = ("graph_optimization_level", "intra_op_num_threads")
    changed = {k: v for k, v in h.options.items() if k not in skip and default.get(k) != v}
    lines = [f"  compared: {BY_LABELS[h.by]} + overhead (--by {others} for the others)"]
    if h.by != "requested" and h.options:
        lines.append(
            "  session: "
            + (", ".join(f"{k}={v}" for k, v in changed.items()) or "onnxruntime's default options")
            + f", {h.options.get('intra_op_num_threads')} intra-op thread(s)"
        )
    note = level_note(graph_opt)
    lines.append(f"  graph-opt {graph_opt}: " + (note or "the graph onnxruntime on this machine writes at that level"
                                                   + (" (onnxruntime's default)" if graph_opt == "all" else "")))
    return lines


def held_lines(h: HeldFit, r: SearchResult | FitCheck, *, default_level: DefaultLevel | None = None,
               indent: str = "    ") -> list[str]:
    """What the session holds at the answer (and the value after it): requested and resident side
    by side, the arena's regions, the steps the analysed values fall on, the tolerance, and the
    figures at onnxruntime's default level."""
    from graphmem.batch.held import BY_WORDS, RESIDENT_TOLERANCE, held_steps

    lines: list[str] = []
    if isinstance(r, FitCheck):
        at, after, dim = next(iter(h.points.values()), None), None, ""
    else:
        at, after, dim = h.at(r.largest), h.at(r.largest + 1), r.dim
    where = f"at {dim}={at.value}: " if dim and at is not None else ""
    if at is not None:
        lines.append(f"{indent}{where}requested {format_bytes(at.requested_bytes)}, resident "
                     f"{format_bytes(at.resident_bytes)}, arena {format_bytes(at.arena_bytes)} in regions "
                     f"{_regions(at.regions)}, weights held {format_bytes(at.weights_held_bytes)}")
    if at is not None and after is not None:
        if after.regions != at.regions:
            lines.append(f"{indent}{dim}={after.value} takes another arena region ({_regions(after.regions)}): "
                         f"{BY_WORDS[h.by]} {format_bytes(after.figure(h.by))}")
        else:
            lines.append(f"{indent}{dim}={after.value} holds the same arena regions; resident grows by the pages "
                         f"its runs write: {format_bytes(after.resident_bytes)}")
    if len(h.points) > 1:
        steps = held_steps(h.points)
        shown = "; ".join(
            f"{s.first}" + (f"..{s.last}" if s.last != s.first else "") + f": arena {format_bytes(s.arena_bytes)}"
            for s in steps[:8]) + (" …" if len(steps) > 8 else "")
        lines.append(f"{indent}resident and arena are step functions of {dim or 'the dim'}, not lines: the arena "
                     "takes power-of-two regions and never returns one (over the analysed values: "
                     f"{shown}); no line is fitted, values are analysed")
    if h.by == "resident" and r.headroom_bytes is not None:
        share = r.headroom_bytes / max(r.budget_bytes, 1)
        lines.append(f"{indent}resident is predicted within {RESIDENT_TOLERANCE:.0%} of a process's measured growth"
                     + (f"; the headroom is {share:.1%} of the budget, inside that tolerance"
                        if 0 <= share < RESIDENT_TOLERANCE else ""))
    if default_level is not None:
        if default_level.error is not None:
            lines.append(f"{indent}at onnxruntime's default level (--graph-opt all): {default_level.error}")
        else:
            lines.append(f"{indent}at onnxruntime's default level (--graph-opt all, this machine's onnxruntime)"
                         + (f" {dim}={at.value}" if dim and at is not None else "")
                         + f": requested {_mib(default_level.requested_bytes)}, resident "
                         f"{_mib(default_level.resident_bytes)}, arena {_mib(default_level.arena_bytes)}"
                         + ("; fit --graph-opt all answers at that level" if dim else ""))
    return lines


def fit_table(r: SearchResult | FitCheck, *, device: Device | None = None,
              path: str = "", default_level: DefaultLevel | None = None) -> str:
    """The ``graphmem fit`` report (``fit --train`` when ``r.training`` is set; what the session
    holds when ``r.held`` is set, and the figures at onnxruntime's default level when given)."""
    from graphmem.batch.held import BY_WORDS
    from graphmem.views.kvcache import kv_cache, kv_lines

    h = r.held
    word = BY_WORDS[h.by] if h is not None else "total"
    t = r.training
    e = t.estimate if t is not None else None
    where = (f"{device.title} ({device.memory})" if device is not None
             else format_bytes(r.budget_bytes))
    avail = r.budget_bytes - r.overhead_bytes
    command = "graphmem fit --train" if t is not None else "graphmem fit"
    lines = [f"{command}: {path or (r.analysis.model.path if r.analysis else '')} on {where}",
             f"  budget {format_bytes(r.budget_bytes)} - overhead {format_bytes(r.overhead_bytes)}"
             f" = {format_bytes(avail)} ({avail:,} bytes) for the model"
             + (" and its training step" if t is not None else "")]
    if t is not None:
        lines.append(_training_config_line(t))
    if h is not None:
        lines += held_head(h, r.analysis.model.graph_opt if r.analysis is not None else getattr(r, "graph_opt", "none"))
    if isinstance(r, FitCheck):
        c = r.analysis
        dims = ", ".join(f"{k}={v}" for k, v in c.model.dims.items()) or "none"
        verdict = "fits" if r.fits else "DOES NOT FIT"
        what = "one training step peaks at" if t is not None else word
        lines += [f"  dims: {dims}" + inputs_text(dict(c.model.shapes), dict(c.model.values)),
                  f"  {what} {format_bytes(r.total_bytes)} ({r.total_bytes:,} bytes): {verdict}; "
                  + (f"headroom {format_bytes(r.headroom_bytes)}" if r.fits
                     else f"short by {format_bytes(-r.headroom_bytes)}")]
        if e is not None:
            lines += _training_lines(e, "", "  ")
        else:
            lines.append(f"  requested: {_parts_line(c)}; dominated by {dominant(c)}")
        if h is not None:
            lines += held_lines(h, r, default_level=default_level, indent="  ")
        lines += kv_lines(kv_cache(c))
        if c.shapes.unresolved:
            lines.append(f"  WARNING: {len(c.shapes.unresolved)} tensors have no static size; the "
                         "total is a lower estimate (graphmem peak lists them)")
        return "\n".join(lines)
    fixed = ", ".join(f"{k}={v}" for k, v in r.dims.items()) or "none"
    lines.append(f"  solving {r.dim}; fixed dims: {fixed}" + inputs_text(r.shapes, r.values))
    a = r.analysis
    if a is None or r.total_bytes is None:
        first = r.probes[0]
        if t is not None:
            phase = t.probes.get(first.value, (0, "?"))[1]
            lines.append(f"  NOTHING FITS: at {r.dim}=1 one training step peaks at "
                         f"{format_bytes(first.total_bytes)} (in {phase}), over the budget by "
                         f"{format_bytes(first.total_bytes - avail)}")
        else:
            lines.append(f"  NOTHING FITS: at {r.dim}=1 the {word} is "
                         f"{format_bytes(first.total_bytes)}, over the budget by "
                         f"{format_bytes(first.total_bytes - avail)}")
    else:
        if r.next_total_bytes is None:
            nxt = f"the search stops at the limit {r.limit}"
        elif not r.next_complete:
            nxt = f"at {r.dim}={r.largest + 1} the shapes no longer resolve"
        else:
            nxt = (f"{r.dim}={r.largest + 1} needs {format_bytes(r.next_total_bytes)} "
                   f"({r.next_total_bytes:,} bytes)")
        uses = "one training step peaks at" if t is not None else ("uses" if h is None else f"needs {word}")
        lines += [f"  largest {r.dim} that fits" + (" for training" if t is not None else "")
                  + f": {r.largest}"
                  + ("  (memory does not grow enough with it to stop before the limit)"
                     if r.unbounded else ""),
                  f"    {r.dim}={r.largest} {uses} {format_bytes(r.total_bytes)} "
                  f"({r.total_bytes:,} bytes); {nxt}; headroom "
                  f"{format_bytes(r.headroom_bytes)}"]
        if e is not None:
            lines += _training_lines(e, f"at {r.dim}={r.largest} ", "    ")
        else:
            lines.append(f"    at {r.dim}={r.largest}, requested: {_parts_line(a)}; dominated by "
                         f"{dominant(a)}")
        if h is not None:
            lines += held_lines(h, r, default_level=default_level)
        lines += kv_lines(kv_cache(a), indent="    ")
    values = ", ".join(str(p.value) for p in r.probes[:12]) + (" …" if len(r.probes) > 12 else "")
    lines.append(f"  search: {len(r.probes)} analyses"
                 + (" and training estimates" if t is not None else "")
                 + f" ({values}), exponential probe then binary search; no extrapolation")
    broken = sorted(p.value for p in r.probes if not p.complete)
    if broken:
        lines.append(f"  shapes stop resolving at {r.dim}={', '.join(map(str, broken[:6]))}"
                     + (" …" if len(broken) > 6 else "") + ": more tensors without a static "
                     f"size than at {r.dim}=1, so those values count as not fitting (the model "
                     "cannot be sized there, e.g. past its position embeddings)")
    elif r.analysis is not None and r.analysis.shapes.unresolved:
        lines.append(f"  WARNING: {len(r.analysis.shapes.unresolved)} tensors have no static size "
                     "at every value; the totals are lower estimates (graphmem peak lists them)")
    measured = "the training step peak" if t is not None else "memory" if h is None else f"the {word} figure"
    if r.monotone:
        lines.append(f"  {measured} is monotone in {r.dim} on every probed point")
    else:
        x0, t0, x1, t1 = r.violations[0]
        lines.append(f"  WARNING: {measured} is NOT monotone in {r.dim}: {r.dim}={x0} needs "
                     f"{format_bytes(t0)} but {r.dim}={x1} only {format_bytes(t1)} "
                     f"({len(r.violations)} decreases); the answer is the boundary the search "
                     "found, a larger value may fit too")
    return "\n".join(lines)
