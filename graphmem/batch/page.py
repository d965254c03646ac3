"""``graphmem report``: one model analysed (as ``graphmem peak``) and, with a sweep, analysed
again at every value of a dim; the page is rendered by :mod:`graphmem.views.html_report`, the
sweep's section here.
"""

from __future__ import annotations

from dataclasses import replace
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from graphmem.batch.search import Sweep
from graphmem.errors import UsageError
from graphmem.host import HostProfile
from graphmem.units import format_bytes
from graphmem.views.svg import sweep_svg

if TYPE_CHECKING:
    from graphmem.analysis.request import Bindings

__all__ = ["build_report", "sweep_section"]


def build_report(
    path: str | Path,
    *,
    dims: dict[str, int] | None = None,
    shapes: dict[str, tuple[int, ...]] | None = None,
    values: dict[str, tuple[int, ...]] | None = None,
    bindings: Bindings | None = None,
    graph_opt: str = "none",
    provider: str = "cpu",
    sweep: str | None = None,
    host: HostProfile | None = None,
    session_options: list[str] | None = None,
) -> str:
    """``graphmem report``: analyse ``path`` (as ``graphmem peak`` with the same options) and,
    with ``sweep`` (``"batch=1,2,4,8"``, any ``sweep`` value syntax), sweep that dim over the file
    as given (CPU, graph-opt none); the page's own analysis binds the swept dim to its ``dims``
    value, or else to the sweep's largest value. ``dims``, ``shapes`` and ``values`` (or
    ``bindings``) are those of :func:`graphmem.analyze` (the page's analysis; the sweep binds
    dims only); both are for a run on ``host`` (None: this machine). The page's analysis has a
    "held by the session" section under ``session_options`` (``--session-option``; None or empty:
    onnxruntime's defaults) and, on CPU, the table of :func:`graphmem.batch.advise.advise`: the
    session settings that change what it holds, ranked, each with the command that measures it.

    Raises:
        UsageError: a malformed sweep, one with fewer than two values, or the dims' errors.
    """
    from graphmem.analysis.dims import split_dim_item
    from graphmem.analysis.graph_opt import analyze_graph_opt
    from graphmem.analysis.request import request_of
    from graphmem.batch.search import SweepSpec, parse_dim_values
    from graphmem.batch.search import sweep as run_sweep
    from graphmem.views.html_report import render_report

    request = request_of(bindings=bindings, dims=dims, shapes=shapes, values=values, provider=provider, host=host)
    given = request.bindings
    dims = dict(given.dims)
    swept = None
    if sweep is not None:
        name, text = split_dim_item(sweep, example="batch=1,2,4,8")
        points = parse_dim_values(sweep, text)
        if len(points) < 2:
            raise UsageError(f"--sweep {sweep}: give at least two values, e.g. {name}=1,2,4,8")
        fixed = {k: v for k, v in dims.items() if k != name}
        swept = run_sweep(path, SweepSpec(fixed=fixed, dim=name, values=points), host=request.host)
        dims.setdefault(name, points[-1])
    held = tuple(session_options or ())
    a = analyze_graph_opt(path, graph_opt, replace(request, bindings=given.bind(dims), session_options=held))
    sections = [(f"Memory against {swept.dim}", sweep_section(swept))] if swept is not None else []
    if a.activations.provider == "cpu":
        from graphmem.batch.advice_report import advice_html
        from graphmem.batch.advise import advise

        advice = advise(path, bindings=given.bind(dims), graph_opt=graph_opt, session_options=held, host=request.host)
        sections.insert(0, ("Session settings that change what it holds", advice_html(advice)))
    return render_report(a, sections=sections)


def sweep_section(s: Sweep) -> str:
    """The HTML of a sweep's section: memory against the swept dim (chart, fit and table)."""
    fit = s.fit
    points = [
        (r.value, r.total_bytes, r.activations_peak_bytes,
         f"{s.dim}={r.value}: total {format_bytes(r.total_bytes)} ({r.total_bytes:,} B), peak at {r.peak_node}")
        for r in s.rows
    ]
    hi = max(r.value for r in s.rows)
    fitted = [(x, fit.predict(x)) for x in (hi * k / 60 for k in range(61))]
    formula = f"total ≈ {format_bytes(round(fit.fixed_bytes))} + {format_bytes(round(fit.per_unit_bytes))} × {s.dim}"
    if fit.degree == 2:
        formula += f" + {format_bytes(round(fit.per_unit2_bytes))} × {s.dim}²"
    rows = "".join(
        f'<tr><td class="n">{r.value}</td><td class="n">{r.weights_bytes:,}</td>'
        f'<td class="n">{r.activations_peak_bytes:,}</td>'
        f'<td class="n">{r.inputs_bytes:,}</td><td class="n">{r.total_bytes:,}</td>'
        f'<td class="name">{escape(r.peak_node)}</td>'
        f'<td class="n">{r.unresolved}</td></tr>'
        for r in s.rows
    )
    head = (f'<tr><th class="n">{escape(s.dim)}</th><th class="n">weights</th><th class="n">activations peak</th>'
            '<th class="n">inputs</th><th class="n">total</th><th>peak node</th><th class="n">unresolved</th></tr>')
    return (
        sweep_svg(s.dim, points, fitted)
        + '<p class="note">Black: total (weights + activations peak + inputs), blue: activations peak, '
        f"dashed: the fit {escape(formula)} (worst residual {format_bytes(round(fit.worst_residual_bytes))} "
        f"at {s.dim}={fit.worst_residual_at}). "
        "Every point is an exact analysis (of the file as given: CPU, graph-opt none); "
        "the fit is an estimate between them.</p>"
        + f"<table>{head}{rows}</table>"
    )
