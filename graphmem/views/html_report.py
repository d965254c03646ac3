"""``graphmem report``: one self-contained HTML file about a model's memory.

Built with the standard library: inline CSS, inline SVG charts (:mod:`graphmem.views.svg`),
no script, no font, image or style sheet from anywhere else — it renders the same in a CI
artifact viewer and on an air-gapped machine. Sections: the figures of ``graphmem peak``, the
exactness statement, the memory timeline (hover a column for its node and exact bytes), the
tensors live at the peak, FLOPs by op type, the per-layer table and any section the caller adds
(``graphmem report --sweep``: memory against the swept dim, :mod:`graphmem.batch.page`).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.analysis.timeline import MemoryTimeline, memory_timeline
from graphmem.host import host_line
from graphmem.model.dtypes import dtype_name
from graphmem.units import format_bytes, format_count
from graphmem.views.chart import peak_window, step_bins
from graphmem.views.report import approximation_effects, approximation_summary
from graphmem.views.svg import bars_svg, timeline_svg

if TYPE_CHECKING:
    from graphmem.analysis import Analysis
    from graphmem.views.layers import LayerRow

__all__ = [
    "render_report",
    "report_html",
    "layer_table_rows",
    "MAX_BINS",
    "ZOOM_STEPS",
    "MAX_LAYER_ROWS",
    "TOP_TENSORS",
]

#: A section a caller adds to the page: its heading and its HTML (escaped by the caller).
Section = tuple[str, str]

#: Most hover columns the timeline draws; longer runs are binned (each bin its highest step).
MAX_BINS = 600
#: Steps the zoom chart of a binned run shows around the peak, every one of them.
ZOOM_STEPS = 240
#: Rows of the per-layer table; a larger graph is shown by name scope (see :func:`_layer_table`).
MAX_LAYER_ROWS = 300
TOP_TENSORS = 25

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1040px;color:#222;background:#fff;line-height:1.4}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555;font-size:13px;margin:0 0 12px}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0}th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#f5f5f5;font-weight:600}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.name{max-width:420px;overflow-wrap:anywhere}tr.peak td{background:#fdecea}
.exact{padding:8px 12px;border-radius:4px;font-size:13.5px;margin:10px 0}
.exact.yes{background:#e8f5e9;border:1px solid #a5d6a7}.exact.no{background:#fdecea;border:1px solid #ef9a9a;color:#8b0000;font-weight:600}
ul.legend{list-style:none;padding:0;margin:4px 0 0 72px;font-size:12px;columns:2}
ul.legend li{margin:1px 0}.swatch{display:inline-block;width:12px;height:12px;margin-right:6px;vertical-align:-2px}
.line{display:inline-block;width:22px;margin-right:6px;border-top:2px solid;vertical-align:3px}.line.dashed{border-top-style:dashed}.line.dotted{border-top-style:dotted}
.note{color:#555;font-size:12.5px}details summary{cursor:pointer;font-size:13px;color:#333}
svg.chart{display:block;margin:4px 0}svg .hover rect:hover{fill:rgba(0,0,0,0.07)}
"""


def render_report(a: Analysis, *, sections: Sequence[Section] = ()) -> str:
    """The report page of analysis ``a`` (with the caller's ``sections``): :func:`report_html`
    with ``a``'s own timeline and :func:`layer_table_rows`."""
    rows, note = layer_table_rows(a)
    return report_html(a, memory_timeline(a), layers=rows, layers_note=note, sections=sections)


def report_html(
    a: Analysis,
    t: MemoryTimeline,
    *,
    layers: Sequence[LayerRow],
    layers_note: str = "",
    sections: Sequence[Section] = (),
) -> str:
    """The report page for analysis ``a`` with its timeline ``t``. ``layers`` are the rows of
    the per-layer table (see :func:`layer_table_rows`); ``sections`` (heading, HTML) come before
    it (the memory-vs-dim chart of a sweep)."""
    name = Path(a.model.path).name
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>graphmem report: {escape(name)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Memory of {escape(name)}</h1>",
        f'<p class="sub">{escape(_subtitle(a))}</p>',
        _exactness(a),
        "<h2>Figures</h2>",
        _figures(a),
        *(["<h2>Held by the session</h2>", _held(a.session), *_arena(a, a.session)] if a.session is not None else []),
        "<h2>Memory over the run</h2>",
        _timeline(a, t),
        "<h2>Tensors live at the peak</h2>",
        _live_at_peak(a, t),
        "<h2>FLOPs by op type</h2>",
        _flops(a),
    ]
    for heading, html in sections:
        parts += [f"<h2>{escape(heading)}</h2>", html]
    parts += ["<h2>Layers</h2>", _layers(layers, layers_note, a), "</body></html>"]
    return "\n".join(parts) + "\n"


def _subtitle(a: Analysis) -> str:
    from graphmem.analysis.levels import level_note

    dims = ", ".join(f"{k}={v}" for k, v in a.model.dims.items()) or "no symbolic dims"
    note = level_note(a.model.graph_opt)
    return (
        f"{a.model.path} · opset {a.model.opset}, {a.model.nodes:,} nodes · {dims} · "
        f"graph-opt {a.model.graph_opt}" + (f" ({note})" if note else "")
        + f" · {a.activations.runtime} · host {host_line(a.host)}"
    )


def _exactness(a: Analysis) -> str:
    if a.activations.exact:
        return '<div class="exact yes">Exact: every buffer was planned from resolved shapes under the emulated onnxruntime rules.</div>'
    items = "".join(f"<li>{escape(line)}</li>" for line in approximation_summary(a))
    effects = "; ".join(approximation_effects(a))
    return f'<div class="exact no">NOT EXACT: {escape(effects)}.<ul>{items}</ul></div>'


def _row(label: str, n: int | None, note: str = "", *, cls: str = "") -> str:
    size = format_bytes(n)
    exact = f"{n:,}" if n is not None else "unknown"
    return f'<tr class="{cls}"><td>{escape(label)}</td><td class="n">{size}</td><td class="n">{exact}</td><td>{escape(note)}</td></tr>'


def _held(s: Any) -> str:
    """The session's figures (:func:`graphmem.views.session.session_rows`) and why they are not exact."""
    from graphmem.views.session import session_rows

    head = '<tr><th></th><th class="n">size</th><th class="n">bytes</th><th>note</th></tr>'
    rows = "".join(_row(label, n, note) for label, n, note in session_rows(s))
    notes = "".join(f"<li>{escape(a.kind)} [{escape(', '.join(a.figures))}]: {escape(a.detail)}</li>" for a in s.approximations)
    verdict = "Exact." if s.exact else f"Not exact:<ul>{notes}</ul>"
    return f'<table>{head}{rows}</table><div class="exact {"yes" if s.exact else "no"}">{verdict}</div>'


def _arena(a: Analysis, s: Any) -> list[str]:
    """Where the held memory comes from: the arena's regions over run 1 and the steady state
    beside run 1's requested bytes (:func:`graphmem.views.svg.arena_svg`); nothing without a CPU arena."""
    from graphmem.views.arena_picture import arena_picture
    from graphmem.views.svg import arena_svg

    p = arena_picture(a, s)
    if p is None:
        return []
    note = (
        f'<p class="note">The arena holds what session creation reserved ({format_bytes(p.reserved)}) plus its '
        f"regions, each taken when a request found no free chunk and never returned while the session lives: "
        f"{len(p.regions)} region(s), {format_bytes(p.first_run_bytes)} held over run 1 against a requested peak of "
        f"{format_bytes(a.activations.peak_bytes)}; from run 2 the memory pattern's block "
        f"({format_bytes(p.pattern_bytes)}) is allocated before the first node. Hover a region for its size and the "
        "request that took it.</p>"
    )
    return ["<h3>Where the held memory comes from</h3>", arena_svg(p), note]


def _figures(a: Analysis) -> str:
    act = a.activations
    top = " (top graph only: bodies not included)" if a.bodies else ""
    rows = [
        _row("weights", a.weights.bytes, f"{format_count(a.weights.params)} params"),
        _row("activations peak", act.peak_bytes, f"at node '{act.peak_node}'", cls="peak"),
        _row("lower bound", act.lower_bound_bytes, "most bytes that must be live at one step" + top),
        _row("best arena", act.best_arena_bytes, "greedy offset planner, same lifetimes" + top),
        _row("no reuse", act.no_reuse_bytes, "every op output in its own buffer" + top),
    ]
    if act.in_use_peak_bytes is not None:
        rows.append(
            _row("with scratch", act.in_use_peak_bytes, "arena in-use high, kernel scratch included (chunk bytes)")
        )
        rows.append(_row("largest scratch", act.scratch_bytes, "one kernel's temporary buffers"))
    rows += [
        _row("inputs", a.io.inputs_bytes),
        _row("outputs", a.io.outputs_bytes, "included in the activations peak"),
        _row("total", a.total_bytes, "weights + activations peak + inputs"),
    ]
    f = a.flops
    flops = f'<tr><td>FLOPs</td><td class="n">{format_count(f.flops)}</td><td class="n">{f.flops:,}</td><td>{format_count(f.macs)} MACs; work per run</td></tr>'
    head = '<tr><th></th><th class="n">size</th><th class="n">bytes</th><th>note</th></tr>'
    return f"<table>{head}{''.join(rows)}{flops}</table>"


def _timeline(a: Analysis, t: MemoryTimeline) -> str:
    steps = len(t.requested)
    bins = step_bins(t, MAX_BINS) if steps else ()
    act = a.activations
    base = a.weights.bytes + a.io.inputs_bytes
    out = [
        timeline_svg(
            t, bins, peak_bytes=act.peak_bytes, peak_node=act.peak_node, caption="activation memory per execution step"
        ),
        f'<p class="note">Bytes onnxruntime has requested and still holds after each step (the figures behind the activations peak); '
        f"bands: the largest buffers live at the peak, over the steps they are held. Weights and inputs "
        f"({format_bytes(base)}) are held the whole run and not drawn. Hover a column for its node and exact bytes.</p>",
    ]
    if steps > MAX_BINS:
        start, stop = peak_window(t, ZOOM_STEPS)
        out.append(f'<p class="note">Every step around the peak (steps {start + 1:,}–{stop:,}):</p>')
        out.append(timeline_svg(t, step_bins(t, ZOOM_STEPS, start=start, stop=stop), peak_bytes=act.peak_bytes,
                                peak_node=act.peak_node, height=300, caption="steps around the peak"))
    return "\n".join(out)


def _shape(shape) -> str:
    if shape is None:
        return "?"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _live_at_peak(a: Analysis, t: MemoryTimeline) -> str:
    ps = t.peak_step
    if ps < 0:
        return '<p class="note">The graph has no steps.</p>'
    held = t.held_at(ps)
    rows = []
    for b in held[:TOP_TENSORS]:
        life = t.buffers[b]
        tensor = t.tensor_at(b, ps)
        name = tensor.name if tensor is not None else f"buffer {b}"
        ty = a.types.get(name)
        dtype = dtype_name(ty.dtype) if ty is not None else "?"
        writer = t.labels[tensor.writer] if tensor is not None else t.labels[life.first]
        reader = (
            t.labels[tensor.last_reader]
            if tensor is not None and tensor.last_reader is not None
            else "(none: held to the end)"
        )
        released = t.labels[life.last] if life.last is not None else "end of run"
        hover = f"requested at step {life.first + 1:,} ({t.labels[life.first]}); released after {released}"
        rows.append(
            f'<tr title="{escape(hover)}"><td class="name">{escape(name)}</td><td>{escape(_shape(ty.shape if ty else None))}</td>'
            f'<td>{escape(dtype)}</td><td class="n">{format_bytes(life.bytes)}</td><td class="n">{(life.bytes or 0):,}</td>'
            f'<td class="name">{escape(writer)}</td><td class="name">{escape(reader)}</td></tr>'
        )
    shown = sum(t.buffers[b].bytes or 0 for b in held[:TOP_TENSORS])
    total = sum(t.buffers[b].bytes or 0 for b in held)
    rest = ""
    if len(held) > TOP_TENSORS:
        rest = f'<tr><td colspan="3">{len(held) - TOP_TENSORS} more buffers</td><td class="n">{format_bytes(total - shown)}</td><td class="n">{total - shown:,}</td><td colspan="2"></td></tr>'
    head = (
        '<tr><th>tensor (held at the peak)</th><th>shape</th><th>dtype</th><th class="n">size</th><th class="n">bytes</th>'
        "<th>written by</th><th>last read by</th></tr>"
    )
    note = (f'<p class="note">{len(held)} buffers are held at step {ps + 1:,} ({escape(t.labels[ps])}), '
            f"{total:,} B in all = the activations peak. A buffer onnxruntime reuses holds the tensor written last; "
            "hover a row for when its buffer was requested and released.</p>")
    return f"<table>{head}{''.join(rows)}{rest}</table>{note}"


def _flops(a: Analysis) -> str:
    f = a.flops
    items = sorted(f.by_op_type.items(), key=lambda kv: -kv[1])
    total = max(f.flops, 1)
    bars = bars_svg(
        [
            (op, n, f"{format_count(n)} ({n / total:.1%})", f"{op}: {format_count(n)} FLOPs ({n:,}), {n / total:.1%}")
            for op, n in items[:20]
        ]
    )
    rows = "".join(
        f'<tr><td>{escape(op)}</td><td class="n">{format_count(n)}</td><td class="n">{n:,}</td><td class="n">{n / total:.1%}</td></tr>'
        for op, n in items
    )
    table = f'<details><summary>all {len(items)} op types</summary><table><tr><th>op type</th><th class="n">FLOPs</th><th class="n">exact</th><th class="n">share</th></tr>{rows}</table></details>'
    unsupported = ""
    if f.unsupported:
        ops = ", ".join(f"{k} ×{v}" for k, v in sorted(f.unsupported.items()))
        unsupported = (
            f'<p class="exact no">FLOPs unsupported (not counted, so the total is a lower bound): {escape(ops)}</p>'
        )
    return bars + table + unsupported


def _layers(rows: Sequence[LayerRow], note: str, a: Analysis) -> str:
    total = max(a.flops.flops, 1)
    body = []
    for r in rows:
        cls = ' class="peak"' if r.live_at_peak else ""
        hover = f"{r.nodes} node(s); {r.flops:,} FLOPs; output {r.output_bytes:,} B" + (
            "; live at the peak" if r.live_at_peak else ""
        )
        body.append(
            f'<tr{cls} title="{escape(hover)}"><td class="name">{escape(r.name)}</td><td class="name">{escape(r.op_type)}</td>'
            f'<td>{escape(_shape(r.output_shape))}</td><td class="n">{format_count(r.params)}</td>'
            f'<td class="n">{format_count(r.flops)}</td><td class="n">{r.flops / total:.1%}</td>'
            f'<td class="n">{format_bytes(r.output_bytes)}</td><td>{"yes" if r.live_at_peak else ""}</td></tr>'
        )
    head = ('<tr><th>layer</th><th>op</th><th>output shape</th><th class="n">params</th><th class="n">FLOPs</th>'
            '<th class="n">share</th><th class="n">output</th><th>live at peak</th></tr>')
    lead = f'<p class="note">{escape(note)}</p>' if note else ""
    return f"{lead}<details open><summary>{len(rows):,} rows</summary><table>{head}{''.join(body)}</table></details>"


def layer_table_rows(a: Analysis, *, most: int = MAX_LAYER_ROWS) -> tuple[list[LayerRow], str]:
    """The per-layer rows the report shows and a note saying how they were chosen: every node
    in execution order when there are at most ``most``; else the nodes folded into their name
    scope at the deepest depth that gives at most ``most`` rows; else the ``most`` scopes of
    depth 1 with the largest outputs."""
    from graphmem.views.layers import group_rows, layer_rows

    rows = layer_rows(a)
    if len(rows) <= most:
        return rows, ""
    best: list[LayerRow] | None = None
    depth_used = 0
    for depth in range(1, 9):
        grouped = group_rows(rows, depth, a.flops.flops)
        if len(grouped) > most:
            break
        best, depth_used = grouped, depth
    if best is not None:
        return (
            best,
            f"{len(rows):,} nodes, folded into {len(best):,} name scopes of depth {depth_used} (graphmem layers --group {depth_used}).",
        )
    top = sorted(group_rows(rows, 1, a.flops.flops), key=lambda r: r.output_bytes, reverse=True)[:most]
    return (
        top,
        f"{len(rows):,} nodes: the {most} name scopes of depth 1 with the largest outputs (graphmem layers --group 1 --sort memory).",
    )
