"""Memory pictures with matplotlib (the optional ``graphmem[plot]`` extra): PNG or SVG bytes.

* :func:`timeline_figure` — ``graphmem peak --plot``: bytes onnxruntime holds after each step
  (the figures behind ``activations.peak_bytes``), the lower bound, the in-use curve with kernel
  scratch when modelled, the largest buffers live at the peak as stacked bands, the peak marked
  with its node, weights and inputs as a labelled baseline under the axis;
* :func:`training_figure` — ``graphmem train --plot``: forward, backward and optimizer step with
  weights, optimizer state, gradients, saved activations and the rest as bands;
* :func:`diff_figure` — ``graphmem diff --plot``: two timelines overlaid.

matplotlib is imported only here and only when a picture is asked for (:func:`require`); the
figures are built on the object API (``matplotlib.figure.Figure``), never pyplot, so nothing
global is touched. Text stays text in SVG (``svg.fonttype: none``) so it can be searched.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.analysis.timeline import MemoryTimeline, memory_timeline
from graphmem.errors import MissingExtraError, UsageError
from graphmem.units import format_bytes
from graphmem.views.chart import Bin, byte_ticks, peak_bands, peak_window, short_name, step_bins, tick_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from graphmem.analysis import Analysis
    from graphmem.training.estimate import TrainingEstimate
    from graphmem.views.arena_picture import ArenaPicture

__all__ = [
    "INSTALL_HINT",
    "write_plot",
    "peak_plot",
    "diff_plot",
    "PLOT_FORMATS",
    "require",
    "plot_format",
    "render",
    "timeline_figure",
    "training_figure",
    "diff_figure",
    "draw_arena",
]

INSTALL_HINT = "pip install 'graphmem[plot]'"
PLOT_FORMATS = ("png", "svg")
#: Most x positions a PNG/SVG plot draws; longer runs are gathered into bins (peak kept exact).
MAX_BINS = 600
BAND_COUNT = 6
#: Pastel fills for the bands, so the curves drawn over them stay readable.
BAND_COLOURS = ("#9ECAE9", "#FDAE6B", "#A1D99B", "#FC9272", "#BCBDDC", "#D9B38C", "#F1B6DA")
LOWER_COLOUR = "#006D2C"
IN_USE_COLOUR = "#7B3294"
#: Steps the zoom panel of a binned timeline shows around the peak, one x position each.
ZOOM_STEPS = 240
OTHER_COLOUR = "#D9D9D9"
BASELINE_COLOUR = "#E8DCC2"
WARN_COLOUR = "#B00020"
#: Training bands, bottom up: weights, optimizer state, inputs, gradients, saved, activations, temporaries.
TRAIN_COLOURS = ("#BDBDBD", "#8C96C6", "#E8DCC2", "#FDAE6B", "#74C476", "#9ECAE9", "#F1B6DA")


def require() -> Any:
    """matplotlib, set up for files; a :class:`MissingExtraError` (exit 2) naming the install
    command when it is not installed."""
    try:
        import matplotlib
    except ImportError:
        raise MissingExtraError(f"plots need matplotlib, which is not installed: {INSTALL_HINT}") from None
    matplotlib.rcParams["svg.fonttype"] = "none"
    matplotlib.rcParams["svg.hashsalt"] = "graphmem"  # the same picture gives the same file
    return matplotlib


def plot_format(path: str | Path) -> str:
    """``png`` or ``svg`` from the file name; a :class:`UsageError` for anything else."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        raise UsageError(f"--plot {path}: the file name must end in .png or .svg")
    return suffix


def render(fig: Figure, fmt: str) -> bytes:
    """The figure as PNG or SVG bytes (no date or software stamp, so reruns are identical)."""
    buf = io.BytesIO()
    metadata = {"Date": None} if fmt == "svg" else {"Software": None}
    fig.savefig(buf, format=fmt, metadata=metadata)
    return buf.getvalue()


def write_plot(fig: Figure, path: str | Path, *, inputs: Sequence[str | Path] = ()) -> int:
    """Render ``fig`` in the format ``path`` names and write it atomically (never over ``inputs``);
    the bytes written."""
    from graphmem.views.output import write_atomic

    data = render(fig, plot_format(path))
    write_atomic(Path(path), data, option="--plot", inputs=inputs)
    return len(data.encode("utf-8")) if isinstance(data, str) else len(data)


def wrote(command: str, path: str | Path, size: int) -> str:
    """The line a command prints (on stderr: stdout holds its document) after writing a plot,
    as ``graphmem report`` says where it wrote."""
    return f"graphmem {command}: wrote {path} ({size:,} bytes)"


def peak_plot(a: Analysis, session: Any = None) -> Figure:
    """``graphmem peak --plot``: :func:`timeline_figure` of ``a``'s own timeline, with the
    arena's regions over run 1 and the steady state when ``session`` (the session block's
    figures) has a CPU arena (:func:`graphmem.views.arena_picture.arena_picture`)."""
    from graphmem.views.arena_picture import arena_picture

    return timeline_figure(a, memory_timeline(a), picture=arena_picture(a, session) if session is not None else None)


def diff_plot(old: Analysis, new: Analysis) -> Figure:
    """``graphmem diff --plot``: :func:`diff_figure` of the two analyses' timelines."""
    return diff_figure(old, memory_timeline(old), new, memory_timeline(new))


def _figure(width: float = 11.0, height: float = 5.6) -> Figure:
    require()
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=110, layout="constrained")


def _edges(bins: Sequence[Bin]) -> list[int]:
    return [b.first for b in bins] + [bins[-1].last + 1]


def _post(values: Sequence[int]) -> list[int]:
    """Values for a ``step='post'`` drawing over :func:`_edges` (the last one repeated)."""
    return [*values, values[-1]]


def _byte_axis(ax: Axes, top: int, *, floor: float = 0.0) -> None:
    ticks = byte_ticks(top)
    ax.set_yticks(ticks, [tick_label(t) for t in ticks])
    ax.set_ylim(floor, ticks[-1] * 1.04 if ticks[-1] else 1)
    ax.grid(axis="y", color="#E5E5E5", linewidth=0.8)
    ax.set_axisbelow(True)


def _not_exact(a: Analysis) -> str | None:
    """None when the figures are exact; else one line naming each kind of approximation."""
    if a.activations.exact:
        return None
    kinds: dict[str, int] = {}
    for x in a.activations.approximations:
        kinds[x.kind] = kinds.get(x.kind, 0) + 1
    from graphmem.views.report import approximation_effects

    listed = ", ".join(f"{k} ×{n}" for k, n in kinds.items())
    return f"NOT EXACT ({listed}): " + "; ".join(approximation_effects(a))


def _subtitle(a: Analysis) -> str:
    dims = ", ".join(f"{k}={v}" for k, v in a.model.dims.items()) or "no dims"
    return f"{dims} · graph-opt {a.model.graph_opt} · {a.activations.runtime}"


def timeline_figure(
    a: Analysis, t: MemoryTimeline, *, max_bins: int = MAX_BINS, picture: ArenaPicture | None = None
) -> Figure:
    """The memory timeline of one analysis (see the module doc). A run longer than
    ``max_bins`` steps is drawn in bins (each its highest step, the peak exact) with a second
    panel showing every step of the :data:`ZOOM_STEPS` around the peak; ``picture``, when
    given, adds a last panel: the arena's regions over run 1 and the steady state
    (:func:`draw_arena`)."""
    steps = len(t.requested)
    binned = steps > max_bins
    arena = picture is not None and steps > 0
    ratios = [3.0, 2.0] if binned else [5.6]
    if arena:
        ratios.append(3.4)
    fig = _figure(height=(8.0 if binned else 5.6) + (3.4 if arena else 0.0))
    fig.suptitle(f"Activation memory over the run: {Path(a.model.path).name}", fontsize=13, x=0.01, ha="left")
    if steps == 0:
        ax = fig.add_subplot()
        ax.text(0.5, 0.5, "the graph has no steps", ha="center", transform=ax.transAxes)
        return fig
    axes = list(fig.subplots(len(ratios), 1, height_ratios=ratios)) if len(ratios) > 1 else [fig.add_subplot()]
    if binned:
        top, zoom = axes[0], axes[1]
        _draw_timeline(top, a, t, step_bins(t, max_bins), baseline=True)
        start, stop = peak_window(t, ZOOM_STEPS)
        _draw_timeline(zoom, a, t, step_bins(t, ZOOM_STEPS, start=start, stop=stop), baseline=False, legend=False)
        zoom.set_title(
            f"every step around the peak: steps {start + 1:,}–{stop:,}", fontsize=9, loc="left", color="#555555"
        )
        top.axvspan(start, stop, color=WARN_COLOUR, alpha=0.08, linewidth=0)
    else:
        _draw_timeline(axes[0], a, t, step_bins(t, max_bins), baseline=True)
    if picture is not None and arena:
        draw_arena(axes[-1], picture)
    _footer(fig, a)
    return fig


#: Fills of the arena's regions by when they came (creation, run 1, a later run), and of the
#: bytes reserved outside them.
REGION_COLOURS = {"creation": "#BDBDBD", "run 1": "#6BAED6", "steady": "#FD8D3C"}
RESERVED_COLOUR = "#E8DCC2"


def draw_arena(ax: Axes, p: ArenaPicture) -> None:
    """The arena's regions over run 1 (left half) and the steady state (right half), each a
    rectangle from the step that took it, stacked on the reserved bytes; run 1's requested bytes
    as a line over the reserved ones; the figures the session block reports marked."""
    from graphmem.views.arena_picture import ArenaPicture

    n = p.steps
    width = 2 * n
    if p.reserved:
        ax.add_patch(
            _rect(0, 0, width, p.reserved, RESERVED_COLOUR, f"reserved at creation ({format_bytes(p.reserved)})")
        )
    seen: set[str] = set()
    for span, base in p.stacked():
        group = ArenaPicture.group(span)
        label = None
        if group not in seen:
            seen.add(group)
            label = {
                "creation": "regions taken at session creation",
                "run 1": "regions taken in run 1",
                "steady": f"regions taken from run 2 (memory pattern's block: {format_bytes(p.pattern_bytes)})",
            }[group]
        ax.add_patch(_rect(span.start, base, width - span.start, span.size, REGION_COLOURS[group], label))
    xs = list(range(n + 1))
    ax.step(xs, [p.reserved + v for v in (*p.requested, p.requested[-1])], where="post", color="#222222", linewidth=1.0,
            label="run 1 requested (over the reserved bytes)", gid="arena_requested")
    ax.step(list(range(width + 1)), [*p.held, p.held[-1]], where="post", color=WARN_COLOUR, linewidth=0.9,
            label="arena held (mem_arena_held)", gid="arena_held")
    ax.axvline(n, color="#555555", linewidth=0.8, linestyle=(0, (3, 2)))
    top = max(p.held)
    _byte_axis(ax, top)
    ax.set_xlim(0, width)
    ax.set_xlabel(
        f"execution step: run 1 (steps 1–{n:,}) | steady state (run {p.steady_run} on, steps 1–{n:,})", fontsize=9
    )
    ax.set_ylabel("bytes held by the arena")
    ax.set_title(
        f"where the held memory comes from: before run 1 {format_bytes(p.before_run_bytes)}, over run 1 "
        f"{format_bytes(p.first_run_bytes)}, steady {format_bytes(p.steady_bytes)} ({p.steady_bytes:,} B), "
        f"{len(p.regions)} region(s)", fontsize=9, loc="left", color="#555555")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7.5, frameon=False, alignment="left")


def _rect(x: float, y: float, w: float, h: float, colour: str, label: str | None) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, facecolor=colour, edgecolor="white", linewidth=0.6, label=label)


def _draw_timeline(
    ax: Axes, a: Analysis, t: MemoryTimeline, bins: Sequence[Bin], *, baseline: bool, legend: bool = True
) -> None:
    act = a.activations
    steps = len(t.requested)
    first, stop = bins[0].first, bins[-1].last + 1
    if baseline:
        ax.set_title(_subtitle(a), fontsize=9, loc="left", color="#555555")
    x = _edges(bins)
    grouped = len(bins) < stop - first
    below = [0] * len(bins)
    for k, band in enumerate(peak_bands(t, bins, BAND_COUNT)):
        top = [lo + v for lo, v in zip(below, band.values)]
        ax.fill_between(
            x, _post(below), _post(top), step="post", linewidth=0, color=BAND_COLOURS[k % len(BAND_COLOURS)],
            label=f"{short_name(band.label, 44)} ({format_bytes(band.bytes)})",
        )
        below = top
    requested = [b.requested for b in bins]
    ax.fill_between(
        x, _post(below), _post(requested), step="post", linewidth=0, color=OTHER_COLOUR, label="other live buffers"
    )
    if grouped:  # how far below its highest step a bin's steps go
        ax.fill_between(x, _post([b.requested_low for b in bins]), _post(requested), step="post",
                        linewidth=0, color="#000000", alpha=0.10, label="range within a bin")
    ax.step(
        x,
        _post(requested),
        where="post",
        color="#222222",
        linewidth=1.1,
        label="requested (onnxruntime arena)",
        gid="requested",
    )
    if t.lower_bound is not None:
        ax.step(x, _post([b.lower_bound or 0 for b in bins]), where="post", color=LOWER_COLOUR, linewidth=1.0,
                linestyle=(0, (4, 2)), label="lower bound (any placement)", gid="lower_bound")
    highest = max(requested)
    if t.in_use is not None:
        in_use = [b.in_use or 0 for b in bins]
        ax.step(x, _post(in_use), where="post", color=IN_USE_COLOUR, linewidth=1.0, linestyle=(0, (1, 1.2)),
                label="in use with kernel scratch (arena chunks)", gid="in_use")
        highest = max(highest, max(in_use))
    floor = _baseline(ax, a, highest, first, stop) if baseline else 0.0
    _byte_axis(ax, highest, floor=floor)
    ax.set_xlim(first, stop)
    note = f"; {len(bins):,} bins of {bins[0].last - bins[0].first + 1} steps, each at its highest" if grouped else ""
    ax.set_xlabel(f"execution step (of {steps:,}{note})", fontsize=9)
    ax.set_ylabel("bytes held (binary units)")
    ps = t.peak_step  # the timeline's own step (a control-flow run's is in completion order)
    if first <= ps < stop:
        ax.plot([ps + 0.5], [act.peak_bytes], marker="o", color=WARN_COLOUR, markersize=6, zorder=5)
        ax.annotate(
            f"peak {format_bytes(act.peak_bytes)} ({act.peak_bytes:,} B)\nat '{short_name(act.peak_node, 56)}'\n"
            f"step {ps + 1:,} of {steps:,} ({t.op_types[ps]})",
            xy=(ps + 0.5, act.peak_bytes), xytext=(0.5, 0.97), textcoords="axes fraction",
            ha="right" if ps - first > (stop - first) / 2 else "left", va="top", fontsize=8.5,
            arrowprops={"arrowstyle": "->", "color": WARN_COLOUR, "linewidth": 0.8},
            bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": WARN_COLOUR, "linewidth": 0.8},
        )
    if legend:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7.5, frameon=False,
                  title="buffers live at the peak (tensor they hold then)", title_fontsize=8, alignment="left")


def _baseline(ax: Axes, a: Analysis, top: int, first: int, stop: int) -> float:
    """Weights and inputs, held the whole run, as a grey band under zero: to scale when they
    are no larger than the activations' top, else a fixed height marked "not to scale"."""
    base = a.weights.bytes + a.io.inputs_bytes
    to_scale = base <= top
    height = base if to_scale else top * 0.18
    if height <= 0:
        return 0.0
    ax.axhspan(
        -height, 0, facecolor=BASELINE_COLOUR, edgecolor="#C9B98F", linewidth=0, hatch=None if to_scale else "///"
    )
    label = (
        f"weights {format_bytes(a.weights.bytes)} + inputs {format_bytes(a.io.inputs_bytes)}: held all run"
        + ("" if to_scale else " (band not to scale)")
    )
    ax.text(first + (stop - first) * 0.005, -height / 2, label, va="center", ha="left", fontsize=8, color="#333333")
    ax.axhline(0, color="#777777", linewidth=0.6)
    return -height


def _footer(fig: Figure, a: Analysis) -> None:
    total = (
        f"total at the peak = weights + activations peak + inputs = {format_bytes(a.total_bytes)} ({a.total_bytes:,} B)"
    )
    _footer_note(fig, _not_exact(a), total)


def _footer_note(fig: Figure, warning: str | None, info: str) -> None:
    """A red note saying why the figures are not exact (wrapped to the figure's width), or a grey
    "exact" line with ``info``."""
    import textwrap

    from matplotlib.layout_engine import ConstrainedLayoutEngine

    width_chars = int(fig.get_figwidth() * 12.5)  # about 12 characters of bold 9-point text per inch
    style: dict[str, Any]
    if warning:
        text, style = (
            "\n".join(textwrap.wrap(warning, width_chars)),
            {"color": WARN_COLOUR, "fontsize": 9, "fontweight": "bold"},
        )
    else:
        text = "\n".join(textwrap.wrap("exact: every buffer planned from resolved shapes · " + info, width_chars))
        style = {"color": "#555555", "fontsize": 8}
    fig.text(0.01, 0.005, text, ha="left", va="bottom", **style)
    lines = text.count("\n") + 1
    share = (0.17 * lines + 0.08) / fig.get_figheight()  # inches of text over the figure's height
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):  # every figure here is made constrained (_figure)
        engine.set(rect=(0, share, 1, 1 - share))


def diff_figure(
    old: Analysis, t_old: MemoryTimeline, new: Analysis, t_new: MemoryTimeline, *, max_bins: int = MAX_BINS
) -> Figure:
    """Two timelines overlaid, each with its peak marked (x: each run's own steps)."""
    fig = _figure()
    ax = fig.add_subplot()
    fig.suptitle(
        f"Activation memory: {Path(old.model.path).name} vs {Path(new.model.path).name}", fontsize=13, x=0.01, ha="left"
    )
    ax.set_title(_subtitle(new), fontsize=9, loc="left", color="#555555")
    highest, longest = 1, 1
    for a, t, colour, name, gid in ((old, t_old, "#4C72B0", "old", "old"), (new, t_new, "#DD8452", "new", "new")):
        if not t.requested:
            continue
        bins = step_bins(t, max_bins)
        ax.step(
            _edges(bins),
            _post([b.requested for b in bins]),
            where="post",
            color=colour,
            linewidth=1.3,
            label=f"{name}: {Path(a.model.path).name}, peak {format_bytes(a.activations.peak_bytes)} "
            f"({a.activations.peak_bytes:,} B) at '{short_name(a.activations.peak_node, 40)}'",
            gid=gid,
        )
        ax.plot([t.peak_step + 0.5], [a.activations.peak_bytes], marker="o", color=colour, markersize=6)
        highest = max(highest, a.activations.peak_bytes)
        longest = max(longest, len(t.requested))
    change = new.activations.peak_bytes - old.activations.peak_bytes
    pct = f" ({change / old.activations.peak_bytes:+.1%})" if old.activations.peak_bytes else ""
    ax.text(
        0.99,
        0.02,
        f"peak change {'+' if change >= 0 else '-'}{format_bytes(abs(change))}{pct}",
        transform=ax.transAxes,
        ha="right",
        fontsize=9,
    )
    _byte_axis(ax, highest)
    ax.set_xlim(0, longest)
    ax.set_xlabel("execution step")
    ax.set_ylabel("bytes requested and held (binary units)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=8, frameon=False)
    notes = [f"{which}: {n}" for which, n in (("old", _not_exact(old)), ("new", _not_exact(new))) if n]
    _footer_note(fig, " · ".join(notes) or None, "both timelines")
    return fig


def training_figure(e: TrainingEstimate) -> Figure:
    """One training step: forward, backward and optimizer step with stacked memory bands."""
    from graphmem.training.timeline import training_timeline

    tl = training_timeline(e)
    fig = _figure()
    ax = fig.add_subplot()
    fig.suptitle(f"Training step memory: {Path(e.analysis.model.path).name}", fontsize=13, x=0.01, ha="left")
    c = e.config
    dims = ", ".join(f"{k}={v}" for k, v in e.analysis.model.dims.items()) or "no dims"
    ax.set_title(f"{dims} · optimizer {c.optimizer}, gradients {c.grads}, precision {c.precision} · eager PyTorch, CPU",
                 fontsize=9, loc="left", color="#555555")
    steps = len(tl.totals)
    # The optimizer step is one step; draw it 3% of the width wide so that it can be seen.
    width = max(1.0, steps * 0.03)
    x = [*range(steps), steps - 1 + width]
    below = [0] * steps
    for k, (name, values) in enumerate(tl.bands):
        if not any(values):
            continue
        top = [lo + v for lo, v in zip(below, values)]
        ax.fill_between(x, _post(below), _post(top), step="post", linewidth=0,
                        color=TRAIN_COLOURS[k % len(TRAIN_COLOURS)], label=name)
        below = top
    ax.step(x, _post(list(tl.totals)), where="post", color="#222222", linewidth=1.0, gid="total")
    for span in tl.phases:
        x0 = span.first
        x1 = x[span.last + 1]
        ax.axvline(x0, color="#777777", linewidth=0.6)
        ax.text((x0 + x1) / 2, 0.99, span.name, transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=9,
                color="#444444", fontweight="bold")
        mid = span.peak_at + (width / 2 if span.name == "optimizer" else 0.5)
        is_top = span.name == e.peak_phase
        ax.plot([mid], [span.total_bytes], marker="o", markersize=6 if is_top else 4,
                color=WARN_COLOUR if is_top else "#222222", zorder=5)
    top_span = next(p for p in tl.phases if p.name == e.peak_phase)
    peak_x = top_span.peak_at + (width / 2 if top_span.name == "optimizer" else 0.5)
    ax.annotate(
        f"step peak {format_bytes(e.step_peak_bytes)} ({e.step_peak_bytes:,} B)\n"
        f"in {e.peak_phase}, at '{short_name(top_span.at, 48)}'",
        xy=(peak_x, e.step_peak_bytes),
        xytext=(0.02, 0.90),
        textcoords="axes fraction",
        fontsize=8.5,
        va="top",
        arrowprops={"arrowstyle": "->", "color": WARN_COLOUR, "linewidth": 0.8},
        bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": WARN_COLOUR, "linewidth": 0.8},
    )
    _byte_axis(ax, max(tl.totals))
    ax.set_xlim(0, x[-1])
    ax.set_xlabel(f"forward ops, backward ops, optimizer step ({steps - 1:,} op steps)", fontsize=9)
    ax.set_ylabel("bytes held (binary units)")
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles[::-1], labels[::-1], loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    note = _not_exact(e.analysis)
    if e.unknown_sizes and not note:
        note = f"NOT EXACT: {len(e.unknown_sizes)} tensors of unknown size (not in the bands)"
    _footer_note(fig, note, "phase peaks: " + ", ".join(f"{p.name} {format_bytes(p.total_bytes)}" for p in tl.phases))
    return fig
