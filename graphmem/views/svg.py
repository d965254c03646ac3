"""Inline SVG charts for the HTML report, with the standard library only.

Every chart is a string holding one ``<svg>`` element meant to sit inside an HTML page (no XML
namespace declaration, no external reference, no script). Hovering a point, bar or band shows
its ``<title>``: the node, the step and the exact bytes. The per-step figures are also kept as
``data-*`` attributes on each hover column, exact integers, so a reader (or a test) can check
every point against the planner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

from graphmem.analysis.timeline import MemoryTimeline
from graphmem.units import format_bytes
from graphmem.views.chart import Bin, byte_ticks, peak_bands, short_name, tick_label

if TYPE_CHECKING:
    from graphmem.views.arena_picture import ArenaPicture

__all__ = ["Frame", "timeline_svg", "bars_svg", "sweep_svg", "arena_svg", "BAND_COLOURS"]

BAND_COLOURS = ("#9ECAE9", "#FDAE6B", "#A1D99B", "#FC9272", "#BCBDDC", "#D9B38C", "#F1B6DA")
OTHER_COLOUR = "#D9D9D9"
REQUESTED_COLOUR = "#222222"
LOWER_COLOUR = "#006D2C"
IN_USE_COLOUR = "#7B3294"
PEAK_COLOUR = "#B00020"


@dataclass(frozen=True, slots=True)
class Frame:
    """Pixel geometry of a chart: the plot area inside margins, and the data ranges it maps."""

    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    x0: float
    x1: float
    y1: float  # the y range is 0..y1

    def x(self, v: float) -> float:
        span = (self.x1 - self.x0) or 1
        return self.left + (v - self.x0) / span * (self.width - self.left - self.right)

    def y(self, v: float) -> float:
        return self.height - self.bottom - v / (self.y1 or 1) * (self.height - self.top - self.bottom)


def _n(v: float) -> str:
    """A coordinate with one decimal (enough for a screen, short in the file)."""
    return f"{v:.1f}".rstrip("0").rstrip(".")


def _text(
    x: float, y: float, s: str, *, anchor: str = "start", size: int = 11, fill: str = "#333", extra: str = ""
) -> str:
    return f'<text x="{_n(x)}" y="{_n(y)}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"{extra}>{escape(s)}</text>'


def _step_path(f: Frame, bins: Sequence[Bin], values: Sequence[int]) -> str:
    """``M … H … V …``: a step line, each bin flat from its first step to the next bin."""
    parts = [f"M{_n(f.x(bins[0].first))},{_n(f.y(values[0]))}"]
    for i, b in enumerate(bins):
        parts.append(f"H{_n(f.x(b.last + 1))}")
        if i + 1 < len(bins):
            parts.append(f"V{_n(f.y(values[i + 1]))}")
    return "".join(parts)


def _area_path(f: Frame, bins: Sequence[Bin], low: Sequence[int], high: Sequence[int]) -> str:
    """A closed step area between two series (``high`` forward, ``low`` back)."""
    top = _step_path(f, bins, high)
    back = []
    for i in range(len(bins) - 1, -1, -1):
        b = bins[i]
        back.append(f"L{_n(f.x(b.last + 1))},{_n(f.y(low[i]))}H{_n(f.x(b.first))}")
    return top + "".join(back) + "Z"


def _byte_axis(f: Frame, ticks: Sequence[int]) -> list[str]:
    out = []
    for t in ticks:
        y = f.y(t)
        out.append(f'<line x1="{f.left}" x2="{f.width - f.right}" y1="{_n(y)}" y2="{_n(y)}" stroke="#E5E5E5"/>')
        out.append(_text(f.left - 6, y + 4, tick_label(t), anchor="end", size=10))
    return out


def _step_ticks(first: int, stop: int, most: int = 8) -> list[int]:
    span = max(1, stop - first)
    step = 1
    for m in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000, 20000, 50000):
        step = m
        if span / m <= most:
            break
    start = -(-first // step) * step
    return list(range(start, stop + 1, step))


def timeline_svg(
    t: MemoryTimeline,
    bins: Sequence[Bin],
    *,
    peak_bytes: int,
    peak_node: str,
    band_count: int = 6,
    width: int = 980,
    height: int = 380,
    caption: str = "",
) -> str:
    """The memory timeline over ``bins``: bands of the largest buffers live at the peak, the
    requested, lower-bound and in-use curves, the peak marked, one hover column per bin."""
    if not bins:
        return '<svg width="200" height="40" role="img"><text x="4" y="24">the graph has no steps</text></svg>'
    first, stop = bins[0].first, bins[-1].last + 1
    requested = [b.requested for b in bins]
    in_use = [b.in_use or 0 for b in bins] if t.in_use is not None else None
    top = max(requested + (in_use or []))
    ticks = byte_ticks(top)
    f = Frame(
        width=width, height=height, left=72, right=16, top=16, bottom=44, x0=first, x1=stop, y1=ticks[-1] * 1.04 or 1
    )
    out = [
        f'<svg class="chart timeline" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" font-family="sans-serif">'
    ]
    if caption:
        out.append(f"<title>{escape(caption)}</title>")
    out += _byte_axis(f, ticks)
    below = [0] * len(bins)
    legend = []
    for k, band in enumerate(peak_bands(t, bins, band_count)):
        above = [lo + v for lo, v in zip(below, band.values)]
        colour = BAND_COLOURS[k % len(BAND_COLOURS)]
        out.append(
            f'<path class="band" d="{_area_path(f, bins, below, above)}" fill="{colour}" stroke="none">'
            f"<title>{escape(band.label)}: {format_bytes(band.bytes)} ({band.bytes:,} B), live at the peak</title></path>"
        )
        legend.append((colour, f"{short_name(band.label, 52)} ({format_bytes(band.bytes)})"))
        below = above
    out.append(
        f'<path class="band other" d="{_area_path(f, bins, below, requested)}" fill="{OTHER_COLOUR}" stroke="none"><title>other live buffers</title></path>'
    )
    legend.append((OTHER_COLOUR, "other live buffers"))
    if len(bins) < bins[-1].last + 1 - bins[0].first:  # how far below its highest step a bin's steps go
        out.append(
            f'<path class="range" d="{_area_path(f, bins, [b.requested_low for b in bins], requested)}" fill="#000" fill-opacity="0.10" stroke="none"><title>range of the steps within each bin</title></path>'
        )
        legend.append(("rgba(0,0,0,0.25)", "range of the steps within a bin"))
    out.append(
        f'<path class="curve requested" d="{_step_path(f, bins, requested)}" fill="none" stroke="{REQUESTED_COLOUR}" stroke-width="1.3"/>'
    )
    if t.lower_bound is not None:
        out.append(
            f'<path class="curve lower-bound" d="{_step_path(f, bins, [b.lower_bound or 0 for b in bins])}" fill="none" stroke="{LOWER_COLOUR}" stroke-width="1.1" stroke-dasharray="5 3"/>'
        )
    if in_use is not None:
        out.append(
            f'<path class="curve in-use" d="{_step_path(f, bins, in_use)}" fill="none" stroke="{IN_USE_COLOUR}" stroke-width="1.1" stroke-dasharray="1.5 2"/>'
        )
    base = height - f.bottom
    out.append(f'<line x1="{f.left}" x2="{width - f.right}" y1="{base}" y2="{base}" stroke="#777"/>')
    for s in _step_ticks(first, stop):
        out.append(f'<line x1="{_n(f.x(s))}" x2="{_n(f.x(s))}" y1="{base}" y2="{base + 4}" stroke="#777"/>')
        out.append(_text(f.x(s), base + 16, f"{s:,}", anchor="middle", size=10))
    grouped = len(bins) < stop - first
    axis = (
        f"execution step ({stop - first:,} steps"
        + (f", {len(bins):,} bins, each at its highest step" if grouped else "")
        + ")"
    )
    out.append(_text(f.left + (width - f.left - f.right) / 2, height - 6, axis, anchor="middle", size=11))
    out += _hover_columns(f, t, bins)
    ps = t.peak_step
    if first <= ps < stop:
        cx, cy = f.x(ps + 0.5), f.y(peak_bytes)
        out.append(
            f'<circle class="peak" cx="{_n(cx)}" cy="{_n(cy)}" r="4.5" fill="{PEAK_COLOUR}" data-step="{ps}" data-bytes="{peak_bytes}">'
            f"<title>peak {format_bytes(peak_bytes)} ({peak_bytes:,} B) at step {ps + 1:,}: {escape(peak_node)}</title></circle>"
        )
        label = f"peak {format_bytes(peak_bytes)} ({peak_bytes:,} B) at {short_name(peak_node, 60)}"
        right = cx > f.left + (width - f.left - f.right) * 0.6
        out.append(
            _text(
                cx + (-8 if right else 8),
                max(cy - 8, 12),
                label,
                anchor="end" if right else "start",
                size=11,
                fill=PEAK_COLOUR,
            )
        )
    out.append("</svg>")
    return "".join(out) + _legend_html(legend, in_use is not None, lower=t.lower_bound is not None)


def _hover_columns(f: Frame, t: MemoryTimeline, bins: Sequence[Bin]) -> list[str]:
    """One transparent column per bin whose title names its step(s), node and figures."""
    out = ['<g class="hover" fill="transparent">']
    y0, y1 = f.top, f.height - f.bottom
    for b in bins:
        x0, x1 = f.x(b.first), f.x(b.last + 1)
        steps = (
            f"step {b.first + 1:,}"
            if b.first == b.last
            else f"steps {b.first + 1:,}–{b.last + 1:,} (highest at {b.at + 1:,})"
        )
        lines = [
            f"{steps}: {t.labels[b.at]} ({t.op_types[b.at]})",
            f"requested {format_bytes(b.requested)} ({b.requested:,} B)",
        ]
        attrs = f'data-first="{b.first}" data-last="{b.last}" data-requested="{b.requested}"'
        if b.lower_bound is not None:
            lines.append(f"lower bound {format_bytes(b.lower_bound)} ({b.lower_bound:,} B)")
            attrs += f' data-lower-bound="{b.lower_bound}"'
        if b.in_use is not None:
            lines.append(f"in use with scratch {format_bytes(b.in_use)} ({b.in_use:,} B)")
            attrs += f' data-in-use="{b.in_use}"'
        out.append(
            f'<rect x="{_n(x0)}" y="{y0}" width="{_n(max(x1 - x0, 0.5))}" height="{y1 - y0}" {attrs}>'
            f"<title>{escape(chr(10).join(lines))}</title></rect>"
        )
    out.append("</g>")
    return out


def _legend_html(items: Sequence[tuple[str, str]], in_use: bool, *, lower: bool = True) -> str:
    lines = [
        f'<li><span class="swatch" style="background:{c}"></span>{escape(label)}</li>' for c, label in items
    ]
    lines.append(
        f'<li><span class="line" style="border-color:{REQUESTED_COLOUR}"></span>requested (onnxruntime arena)</li>'
    )
    if lower:
        lines.append(
            f'<li><span class="line dashed" style="border-color:{LOWER_COLOUR}"></span>lower bound (any placement)</li>'
        )
    if in_use:
        lines.append(
            f'<li><span class="line dotted" style="border-color:{IN_USE_COLOUR}"></span>in use with kernel scratch (arena chunks)</li>'
        )
    return '<ul class="legend">' + "".join(lines) + "</ul>"


def bars_svg(rows: Sequence[tuple[str, int, str, str]], *, width: int = 720) -> str:
    """Horizontal bars, largest first: ``(label, value, value as shown, hover text)``."""
    rows = [r for r in rows if r[1] > 0]
    if not rows:
        return ""
    bar, gap, label_w = 16, 4, 170
    height = len(rows) * (bar + gap) + 8
    top = max(r[1] for r in rows)
    out = [
        f'<svg class="chart bars" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" font-family="sans-serif">'
    ]
    for i, (label, value, shown, hover) in enumerate(rows):
        y = 4 + i * (bar + gap)
        w = max(1.0, value / top * (width - label_w - 110))
        out.append(_text(label_w - 6, y + bar - 4, short_name(label, 26), anchor="end", size=11))
        out.append(
            f'<rect x="{label_w}" y="{y}" width="{_n(w)}" height="{bar}" fill="#6BAED6" data-value="{value}"><title>{escape(hover)}</title></rect>'
        )
        out.append(_text(label_w + w + 6, y + bar - 4, shown, size=10, fill="#555"))
    out.append("</svg>")
    return "".join(out)


def sweep_svg(
    dim: str,
    points: Sequence[tuple[int, int, int, str]],
    fitted: Sequence[tuple[float, float]],
    *,
    width: int = 720,
    height: int = 320,
) -> str:
    """Memory against one dim: ``points`` are ``(value, total, activations peak, hover)``,
    ``fitted`` the fit's curve as ``(value, bytes)`` pairs."""
    xs = [p[0] for p in points]
    top = max([p[1] for p in points] + [y for _, y in fitted])
    ticks = byte_ticks(int(top))
    f = Frame(
        width=width,
        height=height,
        left=72,
        right=16,
        top=12,
        bottom=40,
        x0=0,
        x1=max(xs) * 1.05,
        y1=ticks[-1] * 1.04 or 1,
    )
    out = [
        f'<svg class="chart sweep" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" font-family="sans-serif">'
    ]
    out += _byte_axis(f, ticks)
    base = height - f.bottom
    out.append(f'<line x1="{f.left}" x2="{width - f.right}" y1="{base}" y2="{base}" stroke="#777"/>')
    for v in xs:
        out.append(_text(f.x(v), base + 16, str(v), anchor="middle", size=10))
    out.append(_text(f.left + (width - f.left - f.right) / 2, height - 6, dim, anchor="middle", size=11))
    if fitted:
        d = "M" + "L".join(f"{_n(f.x(x))},{_n(f.y(y))}" for x, y in fitted)
        out.append(
            f'<path class="fit" d="{d}" fill="none" stroke="#DD8452" stroke-width="1.3" stroke-dasharray="6 3"><title>fit of the total</title></path>'
        )
    for value, total, act, hover in points:
        out.append(
            f'<circle class="total" cx="{_n(f.x(value))}" cy="{_n(f.y(total))}" r="4" fill="#222" data-value="{value}" data-bytes="{total}"><title>{escape(hover)}</title></circle>'
        )
        out.append(
            f'<circle class="activations" cx="{_n(f.x(value))}" cy="{_n(f.y(act))}" r="3.5" fill="#6BAED6" data-value="{value}" data-bytes="{act}"><title>{dim}={value}: activations peak {format_bytes(act)} ({act:,} B)</title></circle>'
        )
    out.append("</svg>")
    return "".join(out)


#: Fills of the arena's regions by when they came, and of the bytes reserved outside them.
REGION_COLOURS = {"creation": "#BDBDBD", "run 1": "#6BAED6", "steady": "#FD8D3C"}
RESERVED_COLOUR = "#E8DCC2"
HELD_COLOUR = "#B00020"


def _unit_steps(f: Frame, values: Sequence[int]) -> str:
    """A step line with one step per x unit from 0."""
    parts = [f"M{_n(f.x(0))},{_n(f.y(values[0]))}"]
    for i, v in enumerate(values):
        if i:
            parts.append(f"V{_n(f.y(v))}")
        parts.append(f"H{_n(f.x(i + 1))}")
    return "".join(parts)


def arena_svg(p: ArenaPicture, *, width: int = 980, height: int = 300) -> str:
    """The arena's regions over run 1 (left half) and the steady state (right half): each region
    a rectangle from the step that took it (hover: its size, when, the request that made it),
    stacked on the bytes reserved at creation; run 1's requested bytes over the reserved ones;
    the held bytes (``mem_arena_held``) as a line. Each region keeps its exact figures as
    ``data-*`` attributes."""
    from graphmem.views.arena_picture import ArenaPicture

    n = p.steps
    top = max(p.held)
    ticks = byte_ticks(top)
    f = Frame(width=width, height=height, left=72, right=16, top=14, bottom=44, x0=0, x1=2 * n, y1=ticks[-1] * 1.04 or 1)
    out = [f'<svg class="chart arena" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" font-family="sans-serif">']
    out += _byte_axis(f, ticks)
    if p.reserved:
        y0, y1 = f.y(p.reserved), f.y(0)
        out.append(f'<rect class="reserved" x="{_n(f.x(0))}" y="{_n(y0)}" width="{_n(f.x(2 * n) - f.x(0))}" height="{_n(y1 - y0)}" '
                   f'fill="{RESERVED_COLOUR}" data-bytes="{p.reserved}"><title>reserved at session creation, outside the regions: '
                   f"{format_bytes(p.reserved)} ({p.reserved:,} B)</title></rect>")
    for span, base in p.stacked():
        y0, y1 = f.y(base + span.size), f.y(base)
        colour = REGION_COLOURS[ArenaPicture.group(span)]
        out.append(
            f'<rect class="region" x="{_n(f.x(span.start))}" y="{_n(y0)}" width="{_n(f.x(2 * n) - f.x(span.start))}" '
            f'height="{_n(y1 - y0)}" fill="{colour}" stroke="#fff" stroke-width="0.8" data-bytes="{span.size}" '
            f'data-run="{span.run}" data-step="{span.step}" data-request="{span.request}"><title>{escape(span.label)}</title></rect>'
        )
    requested = [p.reserved + v for v in p.requested]
    out.append(f'<path class="curve requested" d="{_unit_steps(f, requested)}" fill="none" '
               f'stroke="{REQUESTED_COLOUR}" stroke-width="1.2"/>')
    out.append(f'<path class="curve held" d="{_unit_steps(f, list(p.held))}" fill="none" stroke="{HELD_COLOUR}" stroke-width="1.2"/>')
    base = height - f.bottom
    out.append(f'<line x1="{f.left}" x2="{width - f.right}" y1="{base}" y2="{base}" stroke="#777"/>')
    split = f.x(n)
    out.append(f'<line x1="{_n(split)}" x2="{_n(split)}" y1="{f.top}" y2="{base}" stroke="#555" stroke-dasharray="4 3"/>')
    out.append(_text((f.left + split) / 2, height - 6, f"run 1 ({n:,} steps)", anchor="middle", size=11))
    out.append(_text((split + width - f.right) / 2, height - 6, f"steady state (run {p.steady_run} on)", anchor="middle", size=11))
    out.append("</svg>")
    legend = [
        (RESERVED_COLOUR, f"reserved at creation ({format_bytes(p.reserved)})"),
        *[(c, {"creation": "regions taken at session creation", "run 1": "regions taken in run 1",
               "steady": f"regions taken from run 2 (memory pattern's block: {format_bytes(p.pattern_bytes)})"}[g])
          for g, c in REGION_COLOURS.items() if any(ArenaPicture.group(s) == g for s in p.regions)],
    ]
    items = "".join(f'<li><span class="swatch" style="background:{c}"></span>{escape(label)}</li>' for c, label in legend)
    items += (f'<li><span class="line" style="border-color:{REQUESTED_COLOUR}"></span>run 1 requested (over the reserved bytes)</li>'
              f'<li><span class="line" style="border-color:{HELD_COLOUR}"></span>arena held (mem_arena_held)</li>')
    return "".join(out) + f'<ul class="legend">{items}</ul>'
