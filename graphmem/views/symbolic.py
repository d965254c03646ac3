"""Symbolic output: memory as a formula of the dims left unbound.

``graphmem peak --symbolic`` analyses the model at a grid of values of every unbound dim (the
same exact analysis as a bound ``peak``), fits each figure with a polynomial in those dims
(each dim to the power 0, 1 or 2, and all products of such powers, so batch·seq² is a term) by
least squares, and
checks the formula at a point outside the grid. Activation memory of a static graph is a
piecewise polynomial of the dims: exact when the peak stays at the same node over the grid,
an approximation (with its worst error shown) when it moves.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graphmem.errors import UsageError
from graphmem.host import HostProfile, resolve_host
from graphmem.model.loading import Model

__all__ = [
    "Formula", "SymbolicPeak", "symbolic_peak", "symbolic_analysis", "symbolic_json", "symbolic_table",
    "GRID", "CHECK_VALUE",
]

#: Values each unbound dim takes in the grid, and the held-out value the formula is checked at.
GRID = (1, 2, 3, 4, 6, 8)
CHECK_VALUE = 16
FIGURES = ("weights_bytes", "peak_bytes", "lower_bound_bytes", "inputs_bytes", "outputs_bytes", "total_bytes")


@dataclass(frozen=True, slots=True, kw_only=True)
class Formula:
    """A polynomial: ``terms`` maps a monomial (sorted dim names, () for the constant) to its
    coefficient; ``worst_error`` is the largest |formula - analysis| over grid and check point."""

    terms: tuple[tuple[tuple[str, ...], float], ...]
    worst_error: float

    def __call__(self, dims: Mapping[str, int]) -> float:
        total = 0.0
        for monomial, c in self.terms:
            v = c
            for d in monomial:
                v *= dims[d]
            total += v
        return total

    def text(self) -> str:
        """``"4096 + 5120·batch + 16·batch·seq"`` (zero terms left out)."""
        parts = []
        for monomial, c in self.terms:
            if abs(c) < 1e-9:
                continue
            coef = f"{c:,.0f}" if abs(c - round(c)) < 1e-6 else f"{c:,.3f}"
            parts.append("·".join([coef, *monomial]) if monomial else coef)
        return " + ".join(parts).replace("+ -", "- ") or "0"


@dataclass(frozen=True, slots=True, kw_only=True)
class SymbolicPeak:
    """Formulas of the peak figures in the unbound dims, the bound ones held fixed."""

    free: tuple[str, ...]
    bound: dict[str, int]
    formulas: dict[str, Formula]
    points: int
    exact: bool
    host: HostProfile  # the machine every analysis of the grid is for


def symbolic_peak(model: Model, bound: Mapping[str, int], *, grid: tuple[int, ...] = GRID,
                  host: HostProfile | None = None) -> SymbolicPeak:
    """Fit every figure of :func:`graphmem.analyze` (for a run on ``host``; None: this machine)
    over the dims ``bound`` leaves free."""
    import numpy as np

    from graphmem.analysis.pipeline import analyze_model
    from graphmem.analysis.request import AnalysisRequest, Bindings

    host = resolve_host(host)
    free = tuple(d for d in model.symbolic_dims if d not in bound)
    if not free:
        raise UsageError("--symbolic: every dim is bound; drop a --dim to get a formula in it")
    if len(free) > 3:
        raise UsageError(f"--symbolic: at most 3 unbound dims ({len(free)} given: {', '.join(free)})")
    # every dim to the power 0, 1 or 2, and their products: batch·seq² (attention scores) included
    monomials = [
        tuple(d for d, k in zip(free, powers) for _ in range(k))
        for powers in itertools.product(range(3), repeat=len(free))
    ]
    if len(free) == 3:
        grid = grid[:4]
    points = [dict(zip(free, values)) for values in itertools.product(grid, repeat=len(free))]
    check = {d: CHECK_VALUE for d in free}
    rows: dict[str, list[int]] = {name: [] for name in FIGURES}
    for dims in (*points, check):
        a = analyze_model(model, AnalysisRequest(bindings=Bindings.of(dims={**bound, **dims}), host=host))
        figures = {
            "weights_bytes": a.weights.bytes,
            "peak_bytes": a.activations.peak_bytes,
            "lower_bound_bytes": a.activations.lower_bound_bytes,
            "inputs_bytes": a.io.inputs_bytes,
            "outputs_bytes": a.io.outputs_bytes,
            "total_bytes": a.total_bytes,
        }
        for name in FIGURES:
            rows[name].append(figures[name])
    design = np.array([[_value(m, dims) for m in monomials] for dims in (*points, check)], dtype=float)
    formulas = {}
    for name in FIGURES:
        y = np.array(rows[name], dtype=float)
        coef, *_ = np.linalg.lstsq(design[:-1], y[:-1], rcond=None)
        coef = np.where(np.abs(coef - np.round(coef)) < 1e-6, np.round(coef), coef)
        error = float(np.max(np.abs(design @ coef - y)))
        formulas[name] = Formula(terms=tuple(zip(monomials, (float(c) for c in coef))), worst_error=error)
    exact = all(f.worst_error < 0.5 for f in formulas.values())
    return SymbolicPeak(free=free, bound=dict(bound), formulas=formulas, points=len(points) + 1, exact=exact,
                        host=host)


def _value(monomial: tuple[str, ...], dims: Mapping[str, int]) -> float:
    v = 1.0
    for d in monomial:
        v *= dims[d]
    return v


def symbolic_analysis(path: str | os.PathLike[str], dims: Mapping[str, int],
                      host: HostProfile | None = None) -> SymbolicPeak:
    """:func:`symbolic_peak` of the file at ``path`` with ``dims`` bound (names and values checked)."""
    from graphmem.analysis.dims import check_dims
    from graphmem.model.loading import load_model

    loaded = load_model(path)
    check_dims(loaded, {**{d: 1 for d in loaded.symbolic_dims}, **dims})
    return symbolic_peak(loaded, dims, host=host)


def symbolic_json(s: SymbolicPeak, *, path: str, dims: Mapping[str, int]) -> dict[str, Any]:
    """The ``symbolic`` document (``peak --symbolic --json``)."""
    from graphmem.views.report import SCHEMA_VERSION

    return {
        "schema_version": SCHEMA_VERSION,
        "model": {"path": path, "dims": dict(dims)},
        "symbolic": {
            "free": list(s.free),
            "grid": list(GRID),
            "check_value": CHECK_VALUE,
            "exact": s.exact,
            "formulas": {
                name: {
                    "text": f.text(),
                    "terms": [{"monomial": list(m), "coefficient": c} for m, c in f.terms if c],
                    "worst_error_bytes": f.worst_error,
                }
                for name, f in s.formulas.items()
            },
        },
        "host": s.host.to_dict(),
    }


def symbolic_table(s: SymbolicPeak, *, path: str, dims: Mapping[str, int]) -> str:
    """The ``peak --symbolic`` table: one formula per figure, and whether it is exact."""
    bound = ", ".join(f"{k}={v}" for k, v in dims.items()) or "none"
    lines = [
        f"graphmem peak --symbolic: {path}",
        f"  bound: {bound}; free: {', '.join(s.free)} (bytes, fitted on {s.points} exact analyses)",
        "",
    ]
    for name, f in s.formulas.items():
        note = "" if f.worst_error < 0.5 else f"   (approximate: off by up to {f.worst_error:,.0f} B)"
        lines.append(f"  {name:<18} {f.text()}{note}")
    lines.append("")
    if s.exact:
        lines.append(f"  exact at every grid point ({', '.join(map(str, GRID))}) and at {CHECK_VALUE}")
    else:
        lines.append("  approximate: the node at the peak changes with the dims, so memory is piecewise;")
        lines.append("  bind the dims (--dim) for exact figures, or use graphmem sweep over one dim")
    return "\n".join(lines)
