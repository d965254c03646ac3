"""Memory as a function of one dim: a sweep with a fitted model, and the exact largest value that
fits a memory budget.

**Sweep** (:func:`sweep`): one full analysis per value of the swept dim (the others fixed), then a
least-squares fit ``total ≈ fixed + per_unit·x`` — plus ``per_unit2·x²`` only when the data needs
it. The rule (:data:`QUADRATIC_RULE`): the linear fit is kept when its worst residual is within
1% of the total's spread over the sweep (or 64 bytes); otherwise, with at least three distinct
values, a quadratic term is added when it lowers the worst residual. Attention over ``seq`` (the
``seq × seq`` score matrices) is the usual case. The activation peak is a maximum over steps, so
the step that sets it can change inside the sweep (BERT-base: from the feed-forward layer to the
attention scores near seq = 384); neither form is exact then, and the worst residual says so.
Weights, activation peak and inputs are fitted with the same terms; least squares is linear in
the data, so their coefficients add up to the total's, and the fixed part splits into weights +
dim-independent activations + dim-independent inputs.

**Search** (:func:`search_largest`): the largest value of one dim whose total (+ overhead) fits a
budget, found on real analyses, never by extrapolating the fit: probe 1, 2, 4, … until one does
not fit, then binary search between the last fit and the first miss. The answer ``n`` always has
``n`` analysed as fitting and ``n + 1`` as not. The search assumes memory grows with the dim; it
checks that on every probed point and reports each decrease (the answer is then the boundary the
search found, and another value beyond it may fit too).

**What is measured** is a cost function of each analysis (:data:`Cost`), by default its total
(inference). :func:`search_largest_training` and :func:`check_fit_training` pass the peak of one
training step instead (:func:`graphmem.training.estimate_training_analysis`, the largest of the
forward, backward and optimizer-step phases): the same search, gate and monotonicity check, with
``total_bytes`` everywhere meaning the measured figure and :class:`TrainingFit` attached.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.analysis.dims import INT64_MAX, parse_dim_value, split_dim_item
from graphmem.errors import UnknownDimError, UsageError
from graphmem.host import HostProfile, resolve_host
from graphmem.units import format_bytes

if TYPE_CHECKING:
    from graphmem.analysis.request import AnalysisRequest, Bindings
    from graphmem.analysis.result import Analysis
    from graphmem.batch.held import HeldFit, HeldPoint, HeldStep
    from graphmem.model.loading import Model
    from graphmem.training import TrainingConfig, TrainingEstimate

__all__ = [
    "SweepSpec", "SweepRow", "MemoryFit", "Sweep", "Probe", "SearchResult", "FitCheck",
    "parse_dim_values", "parse_sweep_dims", "parse_bound_dims", "sweep", "fit_memory",
    "search_largest", "check_fit", "breakdown", "dominant", "Cost", "TrainingFit",
    "training_config", "search_largest_training", "check_fit_training", "PRECISION_DTYPES",
    "INT64_MAX", "MAX_SWEEP_POINTS", "QUADRATIC_RULE", "search_held", "check_held",
]

#: Most values one sweep may have (a range expanding to more is rejected).
MAX_SWEEP_POINTS = 64
QUADRATIC_REL = 0.01
QUADRATIC_ABS = 64
QUADRATIC_RULE = (
    "linear if its worst residual is within 1% of the total's spread over the sweep (or 64 B); "
    "else, with >= 3 distinct values, a quadratic term is added when it lowers the worst residual"
)


# --- parsing ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class SweepSpec:
    """``--dim`` items of a sweep: fixed bindings and the one dim with several values."""

    fixed: dict[str, int]
    dim: str
    values: tuple[int, ...]


def parse_dim_values(item: str, text: str) -> tuple[int, ...]:
    """Values of one ``--dim`` item: ``1,2,4``; ``1..8`` (every integer); ``8..64:8`` (step);
    ``1..64:x2`` (×2 each). Sorted, duplicates dropped.

    Raises:
        UsageError: empty items ("1,,2"), non-integers, int64 overflow, values beyond 2**40, a
        range that is empty or has more than :data:`MAX_SWEEP_POINTS` values.
    """
    m = re.fullmatch(r"\s*([^.:]+)\.\.([^.:]+)(?::\s*(x?)([^.:]+))?\s*", text)
    if m is None:
        if ".." in text or ":" in text:
            raise UsageError(f"--dim '{item}': a range is LO..HI, LO..HI:STEP or LO..HI:xFACTOR")
        tokens = text.split(",")
        if any(not t.strip() for t in tokens):
            raise UsageError(f"--dim '{item}': empty value in the list (expected e.g. 1,2,4)")
        values = [parse_dim_value(item, t) for t in tokens]
    else:
        lo, hi = parse_dim_value(item, m.group(1)), parse_dim_value(item, m.group(2))
        step = parse_dim_value(item, m.group(4)) if m.group(4) else 1
        if lo > hi:
            raise UsageError(f"--dim '{item}': empty range ({lo} > {hi})")
        if m.group(3) and step < 2:
            raise UsageError(f"--dim '{item}': a geometric factor must be at least 2")
        values = []
        v = lo
        while v <= hi:
            values.append(v)
            if len(values) > MAX_SWEEP_POINTS:
                raise UsageError(f"--dim '{item}': more than {MAX_SWEEP_POINTS} values")
            v = v * step if m.group(3) else v + step
    if len(values) > MAX_SWEEP_POINTS:
        raise UsageError(f"--dim '{item}': more than {MAX_SWEEP_POINTS} values")
    return tuple(sorted(set(values)))


def _items(items: Sequence[str] | None) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for item in items or ():
        name, text = split_dim_item(item, example="batch=1,2,4,8")
        if name in out:
            raise UsageError(f"--dim {name} is given twice")
        out[name] = parse_dim_values(item, text)
    return out


def parse_sweep_dims(items: Sequence[str] | None) -> SweepSpec:
    """``["batch=1,2,4", "seq=128"]`` → :class:`SweepSpec`; exactly one dim has several values."""
    parsed = _items(items)
    swept = [n for n, v in parsed.items() if len(v) > 1]
    if len(swept) != 1:
        raise UsageError(
            "sweep needs exactly one dim with several values, e.g. --dim batch=1,2,4,8"
            + (f" (several: {', '.join(swept)})" if swept else "")
        )
    fixed = {n: v[0] for n, v in parsed.items() if len(v) == 1}
    return SweepSpec(fixed=fixed, dim=swept[0], values=parsed[swept[0]])


def parse_bound_dims(items: Sequence[str] | None) -> dict[str, int]:
    """``--dim`` items with one value each (for ``fit``); lists are rejected."""
    out = {}
    for name, values in _items(items).items():
        if len(values) != 1:
            raise UsageError(f"--dim {name}: fit takes one value per dim (sweep takes lists)")
        out[name] = values[0]
    return out


def _as_model(model: Model | str | os.PathLike[str]) -> Model:
    from graphmem.model.loading import Model, load_model

    return model if isinstance(model, Model) else load_model(model)


#: The ``shapes`` and ``values`` keywords of the search functions, as :func:`graphmem.analyze`
#: takes them (input -> whole shape; input -> values).
InputMap = Mapping[str, Sequence[int]]


def _bindings(bindings: Bindings | None, dims: Mapping[str, int] | None = None, shapes: InputMap | None = None,
              values: InputMap | None = None) -> Bindings:
    """The search functions' inputs as one :class:`Bindings` (``bindings``, or the three mappings)."""
    from graphmem.analysis.request import request_of

    return request_of(bindings=bindings, dims=dims, shapes=shapes, values=values).bindings


def _not_fixed(m: Model, dim: str, option: str, given: Bindings) -> None:
    """A swept or solved dim must not be a dim of an input whose whole shape ``--shape`` sets
    (or whose values ``--value`` gives): no value of the dim changes that input, and the option
    contradicts every value but one.

    Raises:
        UsageError: naming the input and the option that fixes it.
    """
    from graphmem.analysis.dims import fixing_input

    fixed = fixing_input(m.inputs, dim, shapes=given.shapes, values=given.values)
    if fixed is not None:
        name, typed = fixed
        raise UsageError(
            f"{option} {dim}: input '{name}' has dim '{dim}', but {typed} fixes that input's "
            f"shape, so no value of {dim} changes it; "
            + ("bind that input's dims with --dim instead of --shape, or " if typed.startswith("--shape") else "")
            + ("sweep" if option == "--dim" else "solve for") + " another dim"
        )


def _analyze(m: Model, graph_opt: str, request: AnalysisRequest) -> Analysis:
    """One analysis of ``m`` as ``request`` asks, at ``graph_opt`` (above ``none`` onnxruntime
    optimizes the file: :func:`graphmem.analysis.graph_opt.analyze_graph_opt`)."""
    from graphmem.analysis.graph_opt import analyze_graph_opt
    from graphmem.analysis.pipeline import analyze_model

    if graph_opt == "none":
        return analyze_model(m, request)
    if not request.kernel_rules:
        raise UsageError("--graph-opt applies to inference: the training step is PyTorch's graph")
    return analyze_graph_opt(m.path, graph_opt, request)


# --- sweep and fit ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class SweepRow:
    """One binding's figures, equal to ``graphmem.analyze`` at ``dims``."""

    value: int
    dims: dict[str, int]
    weights_bytes: int
    activations_peak_bytes: int
    lower_bound_bytes: int
    inputs_bytes: int
    outputs_bytes: int
    total_bytes: int
    peak_node: str
    flops: int | None  # None: the FLOP counter is not available
    flops_unsupported: int  # nodes the counter could not cost: ``flops`` is then "at least"
    kv_cache_bytes: int | None  # None: the model has no KV cache
    unresolved: int  # tensors without a static size: the figures are lower estimates
    approximations: tuple[str, ...] = ()  # kind: detail of each approximation (empty: exact)
    held: HeldPoint | None = None  # what the session holds there (None: not computed)


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryFit:
    """``total ≈ fixed + per_unit·x + per_unit2·x²`` in bytes (``per_unit2`` 0 when linear)."""

    dim: str
    degree: int
    fixed_bytes: float
    per_unit_bytes: float
    per_unit2_bytes: float
    worst_residual_bytes: float  # of the chosen fit, |actual - fitted|
    worst_residual_at: int
    linear_worst_residual_bytes: float
    parts: dict[str, tuple[float, float, float]]  # weights/activations/inputs: (c0, c1, c2)

    def predict(self, x: float) -> float:
        """The fitted total at ``x`` (an estimate; :func:`search_largest` gives exact answers)."""
        return self.fixed_bytes + self.per_unit_bytes * x + self.per_unit2_bytes * x * x


@dataclass(frozen=True, slots=True, kw_only=True)
class Sweep:
    path: str
    dim: str
    fixed: dict[str, int]
    as_dtype: str | None
    rows: tuple[SweepRow, ...]
    fit: MemoryFit
    host: HostProfile  # the machine every row is for
    shapes: dict[str, tuple | None] = dataclasses.field(default_factory=dict)  # --shape, every row
    values: dict[str, tuple[int | float, ...]] = dataclasses.field(default_factory=dict)  # --value, every row
    graph_opt: str = "none"
    session_options: tuple[str, ...] = ()  # --session-option, every row's session figures
    steps: tuple[HeldStep, ...] = ()  # the rows grouped by the arena regions they hold (resident's steps)


def sweep(model: Model | str | os.PathLike[str], spec: SweepSpec, *,
          shapes: InputMap | None = None, values: InputMap | None = None, bindings: Bindings | None = None,
          as_dtype: str | None = None, flops: bool = True, host: HostProfile | None = None,
          graph_opt: str = "none", held: bool = True, session_options: Sequence[str] = ()) -> Sweep:
    """Analyze ``model`` at each value of ``spec.dim`` and fit total memory against it, for a
    run on ``host`` (None: this machine), at ``graph_opt``.

    ``held``: each row also gets what the session holds under ``session_options``
    (:func:`graphmem.batch.held.held_point`), and the sweep its steps
    (:func:`graphmem.batch.held.held_steps`): the requested total is fitted, the held figures
    are steps and are not.

    ``shapes`` and ``values`` (as :func:`graphmem.analyze` takes them, or ``bindings``) apply to
    every row; the swept dim must not be a dim of an input they fix.

    Raises:
        UnknownDimError, UnboundDimError: as :func:`graphmem.analyze` (naming the model's dims).
        UsageError: bad ``shapes``/``values``, or the swept dim is a dim of an input they fix.
    """
    from graphmem.analysis.request import AnalysisRequest
    from graphmem.batch.held import held_steps
    from graphmem.views.kvcache import kv_cache
    from graphmem.views.roofline import total_flops

    m = _as_model(model)
    host = resolve_host(host)
    given = _bindings(bindings, shapes=shapes, values=values)
    _not_fixed(m, spec.dim, "--dim", given)
    if held:  # a bad --session-option is refused here, not shown as rows without session figures
        from graphmem.batch.held import check_session_options

        check_session_options(session_options, graph_opt, host)
    rows = []
    for v in spec.values:
        point = given.bind({**spec.fixed, spec.dim: v})
        a = _analyze(m, graph_opt, AnalysisRequest(bindings=point, as_dtype=as_dtype, host=host))
        kv = kv_cache(a)
        counted = total_flops(a) if flops else None
        rows.append(SweepRow(
            value=v, dims=dict(a.model.dims), weights_bytes=a.weights.bytes,
            activations_peak_bytes=a.activations.peak_bytes,
            lower_bound_bytes=a.activations.lower_bound_bytes, inputs_bytes=a.io.inputs_bytes,
            outputs_bytes=a.io.outputs_bytes, total_bytes=a.total_bytes,
            peak_node=a.activations.peak_node,
            flops=counted[0] if counted else None, flops_unsupported=counted[1] if counted else 0,
            kv_cache_bytes=kv.total_bytes if kv is not None else None,
            unresolved=len(a.shapes.unresolved),
            approximations=tuple(f"{x.kind}: {x.detail}" for x in a.activations.approximations),
            held=_held_or_none(a, v, session_options, host) if held else None,
        ))
    points = [r.held for r in rows if r.held is not None]
    return Sweep(path=m.path, dim=spec.dim, fixed=dict(spec.fixed), as_dtype=as_dtype,
                 rows=tuple(rows), fit=fit_memory(spec.dim, rows), host=host,
                 shapes=dict(given.shapes), values=dict(given.values),
                 graph_opt=graph_opt, session_options=tuple(session_options), steps=held_steps(points))


def _held_or_none(a: Analysis, value: int, session_options: Sequence[str], host: HostProfile) -> HeldPoint | None:
    """A sweep row's session figures, None (shown as "-") when the session cannot be emulated for
    it: the requested figures do not depend on them."""
    from graphmem.batch.held import held_point
    from graphmem.errors import GraphmemError

    try:
        return held_point(a, value, session_options, host)
    except GraphmemError:
        return None


def _lstsq(xs: Sequence[int], ys: Sequence[float], degree: int) -> tuple[list[float], float, int]:
    """Coefficients (c0, c1[, c2]), worst |residual| and where; x scaled for conditioning."""
    import numpy as np

    x = np.asarray(xs, dtype=np.float64)
    y = np.asarray(ys, dtype=np.float64)
    scale = float(np.max(np.abs(x))) or 1.0
    design = np.vander(x / scale, degree + 1, increasing=True)
    solved, *_ = np.linalg.lstsq(design, y, rcond=None)
    coef = [float(c) / scale**k for k, c in enumerate(solved)]
    fitted = sum(c * x**k for k, c in enumerate(coef))
    res = np.abs(y - fitted)
    i = int(np.argmax(res))
    return coef, float(res[i]), int(xs[i])


def fit_memory(dim: str, rows: Sequence[SweepRow]) -> MemoryFit:
    """Fit the rows' totals (and parts) against ``dim`` by :data:`QUADRATIC_RULE`.

    Raises:
        UsageError: fewer than two distinct values.
    """
    xs = [r.value for r in rows]
    if len(set(xs)) < 2:
        raise UsageError(f"a fit over {dim} needs at least two distinct values")
    totals = [r.total_bytes for r in rows]
    lin, lin_worst, lin_at = _lstsq(xs, totals, 1)
    coef, worst, at, degree = lin, lin_worst, lin_at, 1
    if len(set(xs)) >= 3:
        quad, q_worst, q_at = _lstsq(xs, totals, 2)
        spread = max(totals) - min(totals)
        if lin_worst > max(QUADRATIC_REL * spread, QUADRATIC_ABS) and q_worst < lin_worst:
            coef, worst, at, degree = quad, q_worst, q_at, 2
    series = {
        "weights": [r.weights_bytes for r in rows],
        "activations": [r.activations_peak_bytes for r in rows],
        "inputs": [r.inputs_bytes for r in rows],
    }
    parts = {}
    for name, ys in series.items():
        c = _lstsq(xs, ys, degree)[0]
        parts[name] = (c[0], c[1], c[2] if degree == 2 else 0.0)
    return MemoryFit(
        dim=dim, degree=degree, fixed_bytes=coef[0], per_unit_bytes=coef[1],
        per_unit2_bytes=coef[2] if degree == 2 else 0.0, worst_residual_bytes=worst,
        worst_residual_at=at, linear_worst_residual_bytes=lin_worst, parts=parts,
    )


# --- exact search ----------------------------------------------------------------------------

#: What the search and the gate compare with the budget (minus overhead), in bytes, for one
#: analysis. ``None`` where a cost is optional means the analysis total (inference).
Cost = Callable[["Analysis"], int]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingFit:
    """What ``fit --train`` adds to a :class:`SearchResult` or :class:`FitCheck`."""

    config: TrainingConfig
    estimate: TrainingEstimate | None  # at the answer (or the bound dims); None: nothing fits
    probes: dict[int, tuple[int, str]]  # probed value -> (step peak bytes, phase that sets it)
    warnings: tuple[str, ...]  # the estimate's (a --frozen pattern matching nothing, …)


@dataclass(frozen=True, slots=True, kw_only=True)
class Probe:
    value: int
    total_bytes: int  # the measured figure (the cost): the analysis total unless a cost is given
    analysis_total_bytes: int  # the analysis total (inference), whatever the cost
    fits: bool
    unresolved: int  # tensors without a static size: the total is a lower estimate
    complete: bool  # no more unresolved tensors than at value 1 (else: never "fits")


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchResult:
    """The largest ``dim`` that fits; ``largest`` 0 when even 1 does not fit."""

    dim: str
    dims: dict[str, int]  # the other dims, fixed
    budget_bytes: int
    overhead_bytes: int
    largest: int
    analysis: Analysis | None  # at ``largest``
    total_bytes: int | None  # measured at ``largest`` (the cost); None when nothing fits
    next_total_bytes: int | None  # measured at ``largest + 1``; None when ``unbounded``
    next_complete: bool  # False: ``largest + 1`` does not fit because its shapes do not resolve
    unbounded: bool  # fits even at the limit (memory does not grow enough with the dim)
    limit: int
    probes: tuple[Probe, ...]  # in the order analysed
    monotone: bool
    violations: tuple[tuple[int, int, int, int], ...]  # (x, total, larger x, smaller total)
    host: HostProfile  # the machine every probe is for
    training: TrainingFit | None = None  # set by :func:`search_largest_training`
    held: HeldFit | None = None  # set by :func:`graphmem.batch.held.search`: the figure compared, every point's figures
    graph_opt: str = "none"
    shapes: dict[str, tuple | None] = dataclasses.field(default_factory=dict)  # --shape, every probe
    values: dict[str, tuple[int | float, ...]] = dataclasses.field(default_factory=dict)  # --value, every probe

    @property
    def headroom_bytes(self) -> int | None:
        """Budget left at ``largest`` after its measured total and the overhead."""
        if self.total_bytes is None:
            return None
        return self.budget_bytes - self.overhead_bytes - self.total_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class FitCheck:
    """Whether one fully bound analysis fits: ``needed`` = total + overhead ≤ budget."""

    analysis: Analysis
    budget_bytes: int
    overhead_bytes: int
    total_bytes: int  # the measured figure (the cost): the analysis total unless a cost is given
    needed_bytes: int
    fits: bool
    headroom_bytes: int  # negative: the shortfall
    training: TrainingFit | None = None  # set by :func:`check_fit_training`
    held: HeldFit | None = None  # set by :func:`graphmem.batch.held.check`


def _budget(budget_bytes: int, overhead_bytes: int) -> int:
    if budget_bytes <= 0:
        raise UsageError("the memory budget must be more than 0 bytes")
    if overhead_bytes < 0:
        raise UsageError("--overhead must not be negative")
    if overhead_bytes >= budget_bytes:
        raise UsageError(f"--overhead {format_bytes(overhead_bytes)} leaves nothing of the "
                         f"{format_bytes(budget_bytes)} budget")
    return budget_bytes - overhead_bytes


def search_largest(model: Model | str | os.PathLike[str], *, solve: str, budget_bytes: int,
                   dims: Mapping[str, int] | None = None, shapes: InputMap | None = None,
                   values: InputMap | None = None, bindings: Bindings | None = None, overhead_bytes: int = 0,
                   as_dtype: str | None = None, limit: int | None = None,
                   cost: Cost | None = None, kernel_rules: bool = True,
                   host: HostProfile | None = None, graph_opt: str = "none") -> SearchResult:
    """The largest value of ``solve`` with total + overhead ≤ budget (exact, see module doc), for
    a run on ``host`` (None: this machine).

    ``cost``: what is compared with the budget at each probed value (default: the analysis
    total); the monotonicity check and every ``total_bytes`` of the result are in its terms.
    ``shapes`` and ``values`` (as :func:`graphmem.analyze` takes them; or all three inputs as
    ``bindings``) apply to every probe; ``solve`` must not be a dim of an input they fix. ``kernel_rules`` as
    :func:`graphmem.analysis.pipeline.analyze_model` takes it (False for a training cost: the
    PyTorch step runs no onnxruntime kernel).

    Raises:
        UsageError: ``solve`` also in ``dims``, or a dim of an input ``shapes``/``values`` fix;
        bad budget or overhead; bad ``shapes``/``values``.
        UnknownDimError, UnboundDimError: ``solve`` or a ``dims`` name is not a model dim, or a
        dim is left unbound (the messages name the model's dims).
    """
    from graphmem.analysis.dims import MAX_DIM, check_dims
    from graphmem.analysis.request import AnalysisRequest

    m = _as_model(model)
    host = resolve_host(host)
    given = _bindings(bindings, dims, shapes, values)
    dims = dict(given.dims)
    if solve in dims:
        raise UsageError(f"--solve {solve} is also bound by --dim {solve}=…; give one of them")
    if solve not in m.symbolic_dims and all(d in m.symbolic_dims for d in dims):
        try:
            check_dims(m, {solve: 1})
        except UnknownDimError as exc:  # same message, naming the option the user gave
            raise UnknownDimError(str(exc).replace("--dim", "--solve", 1)) from None
    _not_fixed(m, solve, "--solve", given)
    given.bind({solve: 1}).resolve(m.inputs)
    available = _budget(budget_bytes, overhead_bytes)
    limit = MAX_DIM if limit is None else limit
    probes: list[Probe] = []
    best: list[Analysis] = []
    base: list[int] = []  # unresolved tensors at value 1: the model's own unknowns

    def fits(v: int) -> bool:
        request = AnalysisRequest(
            bindings=given.bind({solve: v}), as_dtype=as_dtype, kernel_rules=kernel_rules, host=host
        )
        a = _analyze(m, graph_opt, request)
        unresolved = len(a.shapes.unresolved)
        base[:] = base or [unresolved]
        complete = unresolved <= base[0]
        measured = a.total_bytes if cost is None else cost(a)
        ok = complete and measured <= available
        probes.append(Probe(value=v, total_bytes=measured, analysis_total_bytes=a.total_bytes,
                            fits=ok, unresolved=unresolved, complete=complete))
        if ok and (not best or v > best[0].model.dims[solve]):
            best[:] = [a]
        return ok

    lo, hi, v = 0, None, 1
    while hi is None:
        if not fits(v):
            hi = v
        elif v >= limit:
            lo = v
            break
        else:
            lo, v = v, min(2 * v, limit)
    if hi is not None:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    by_x = sorted({p.value: p.total_bytes for p in probes if p.complete}.items())
    violations = tuple(
        (x0, t0, x1, t1) for (x0, t0), (x1, t1) in zip(by_x, by_x[1:]) if t1 < t0
    )
    after = next((p for p in probes if p.value == lo + 1), None)
    at = next((p for p in probes if p.value == lo), None) if lo else None
    return SearchResult(
        dim=solve,
        dims=dims,
        budget_bytes=budget_bytes,
        overhead_bytes=overhead_bytes,
        largest=lo,
        analysis=best[0] if lo else None,
        total_bytes=at.total_bytes if at is not None else None,
        next_total_bytes=after.total_bytes if after is not None else None,
        next_complete=after is None or after.complete,
        unbounded=hi is None,
        limit=limit,
        probes=tuple(probes),
        monotone=not violations,
        violations=violations,
        host=host,
        shapes=dict(given.shapes),
        values=dict(given.values),
        graph_opt=graph_opt,
    )


def check_fit(model: Model | str | os.PathLike[str], *, budget_bytes: int,
              dims: Mapping[str, int] | None = None, shapes: InputMap | None = None,
              values: InputMap | None = None, bindings: Bindings | None = None, overhead_bytes: int = 0,
              as_dtype: str | None = None, cost: Cost | None = None,
              kernel_rules: bool = True, host: HostProfile | None = None, graph_opt: str = "none") -> FitCheck:
    """Whether the model with every dim bound (``dims``, ``shapes``, ``values`` as
    :func:`graphmem.analyze` takes them) fits ``budget_bytes`` after ``overhead_bytes``
    (``cost``: what is compared, default the analysis total; ``kernel_rules`` as in
    :func:`search_largest`)."""
    from graphmem.analysis.request import AnalysisRequest

    available = _budget(budget_bytes, overhead_bytes)
    given = _bindings(bindings, dims, shapes, values)
    request = AnalysisRequest(bindings=given, as_dtype=as_dtype, kernel_rules=kernel_rules, host=resolve_host(host))
    a = _analyze(_as_model(model), graph_opt, request)
    measured = a.total_bytes if cost is None else cost(a)
    return FitCheck(analysis=a, budget_bytes=budget_bytes, overhead_bytes=overhead_bytes,
                    total_bytes=measured, needed_bytes=measured + overhead_bytes,
                    fits=measured <= available, headroom_bytes=available - measured)


# --- what the session holds as the cost -----------------------------------------------------

def search_held(model: Model | str | os.PathLike[str], *, solve: str, budget_bytes: int, by: str = "resident",
                session_options: Sequence[str] = (), graph_opt: str = "none", host: HostProfile | None = None,
                **kwargs: Any) -> SearchResult:
    """:func:`search_largest` comparing the figure ``by`` (+ overhead) with
    the budget, every probed value's three figures in ``result.held``. ``kwargs`` as
    ``search_largest`` takes them (``dims``, ``shapes``, ``values``, ``overhead_bytes``, ``limit``,
    ``as_dtype``)."""
    from graphmem.batch.held import HeldFit, check_by, check_session_options, held_cost, session_options_of

    by = check_by(by)
    host = resolve_host(host)
    check_session_options(session_options, graph_opt, host)
    points: dict[int, HeldPoint] = {}
    r = search_largest(
        model,
        solve=solve,
        budget_bytes=budget_bytes,
        cost=held_cost(by, solve, session_options, host, points),
        graph_opt=graph_opt,
        host=host,
        **kwargs,
    )
    return dataclasses.replace(
        r, held=HeldFit(by=by, options=session_options_of(r.analysis, session_options, host), points=points)
    )


def check_held(model: Model | str | os.PathLike[str], *, budget_bytes: int, by: str = "resident",
               session_options: Sequence[str] = (), graph_opt: str = "none", host: HostProfile | None = None,
               **kwargs: Any) -> FitCheck:
    """:func:`check_fit` on the figure ``by`` (see :func:`search_held`)."""
    from graphmem.batch.held import HeldFit, check_by, check_session_options, held_cost, session_options_of

    by = check_by(by)
    host = resolve_host(host)
    check_session_options(session_options, graph_opt, host)
    points: dict[int, HeldPoint] = {}
    r = check_fit(model, budget_bytes=budget_bytes, cost=held_cost(by, None, session_options, host, points),
                  graph_opt=graph_opt, host=host, **kwargs)
    return dataclasses.replace(
        r, held=HeldFit(by=by, options=session_options_of(r.analysis, session_options, host), points=points)
    )


# --- training: the step peak as the cost -----------------------------------------------------

#: ``--precision`` → the dtype what-if of the analysis (as ``graphmem train`` does): none, the
#: file's dtypes; autocast re-types the activations in the training estimate.
PRECISION_DTYPES: dict[str, str | None] = {"fp32": None, "mixed-fp16": None, "mixed-bf16": None}


def training_config(*, optimizer: str = "adam", grads: str = "released",
                    precision: str = "fp32", frozen: Sequence[str] = (),
                    foreach: bool = False) -> TrainingConfig:
    """A checked :class:`~graphmem.training.TrainingConfig` (names case-insensitive).

    Raises:
        UsageError: an unknown optimizer, gradient mode or precision (naming the choices).
    """
    from graphmem.training import GRAD_MODES, OPTIMIZERS, PRECISIONS, TrainingConfig
    from graphmem.training.optimizer import check_choice

    return TrainingConfig(
        optimizer=check_choice("optimizer", optimizer, tuple(OPTIMIZERS)),
        grads=check_choice("gradient mode", grads, GRAD_MODES),
        precision=check_choice("precision", precision, tuple(PRECISIONS)),
        frozen=tuple(frozen), foreach=foreach,
    )


def _checked(config: TrainingConfig | None) -> TrainingConfig:
    c = config
    if c is None:
        return training_config()
    return training_config(optimizer=c.optimizer, grads=c.grads, precision=c.precision,
                           frozen=c.frozen, foreach=c.foreach)


def search_largest_training(model: Model | str | os.PathLike[str], *, solve: str,
                            budget_bytes: int, config: TrainingConfig | None = None,
                            dims: Mapping[str, int] | None = None, shapes: InputMap | None = None,
                            values: InputMap | None = None, bindings: Bindings | None = None,
                            overhead_bytes: int = 0, limit: int | None = None,
                            host: HostProfile | None = None) -> SearchResult:
    """The largest value of ``solve`` whose training step peak + overhead ≤ budget:
    :func:`search_largest` with the step peak of ``config`` (default Adam, fp32, gradients
    released) as its cost, and ``result.training`` set (the estimate at the answer, the step
    peak and phase of every probed value).

    Raises:
        as :func:`search_largest`, and UsageError for a bad training option or a model with
        nothing to train.
    """
    from graphmem.training import estimate_training_analysis

    config = _checked(config)
    seen: dict[int, tuple[int, str]] = {}
    kept: dict[int, TrainingEstimate] = {}  # the largest value whose step peak was in budget
    warnings: list[tuple[str, ...]] = []

    def step_peak(a: Analysis) -> int:
        e = estimate_training_analysis(a, config)
        v = a.model.dims[solve]
        seen[v] = (e.step_peak_bytes, e.peak_phase)
        warnings[:] = warnings or [e.warnings]
        if e.step_peak_bytes <= budget_bytes - overhead_bytes and all(v > k for k in kept):
            kept.clear()
            kept[v] = e
        return e.step_peak_bytes

    r = search_largest(
        model,
        solve=solve,
        budget_bytes=budget_bytes,
        bindings=_bindings(bindings, dims, shapes, values),
        overhead_bytes=overhead_bytes,
        limit=limit,
        cost=step_peak,
        as_dtype=PRECISION_DTYPES[config.precision],
        kernel_rules=False,
        host=host,
    )
    est = kept.get(r.largest) if r.analysis is not None else None
    if r.analysis is not None and est is None:  # the kept value did not count (shapes)
        est = estimate_training_analysis(r.analysis, config)
    return dataclasses.replace(r, training=TrainingFit(
        config=config, estimate=est, probes=seen, warnings=warnings[0] if warnings else ()))


def check_fit_training(model: Model | str | os.PathLike[str], *, budget_bytes: int,
                       config: TrainingConfig | None = None,
                       dims: Mapping[str, int] | None = None, shapes: InputMap | None = None,
                       values: InputMap | None = None, bindings: Bindings | None = None,
                       overhead_bytes: int = 0, host: HostProfile | None = None) -> FitCheck:
    """Whether one training step of the fully bound model fits: :func:`check_fit` with the
    step peak as its cost and ``result.training`` set."""
    from graphmem.training import estimate_training_analysis

    config = _checked(config)
    held: list[TrainingEstimate] = []

    def step_peak(a: Analysis) -> int:
        held[:] = [estimate_training_analysis(a, config)]
        return held[0].step_peak_bytes

    r = check_fit(model, budget_bytes=budget_bytes, bindings=_bindings(bindings, dims, shapes, values),
                  overhead_bytes=overhead_bytes,
                  as_dtype=PRECISION_DTYPES[config.precision], cost=step_peak, kernel_rules=False, host=host)
    e = held[0]
    return dataclasses.replace(r, training=TrainingFit(
        config=config, estimate=e, probes={}, warnings=e.warnings))


def breakdown(a: Analysis) -> dict[str, int]:
    """The total's parts: weights, activation peak, inputs."""
    return {"weights": a.weights.bytes, "activations": a.activations.peak_bytes,
            "inputs": a.io.inputs_bytes}


def dominant(a: Analysis) -> str:
    """The largest part of the total ("weights", "activations" or "inputs")."""
    parts = breakdown(a)
    return max(parts, key=parts.__getitem__)


def genai_past_buffer(model_path: str | Path) -> int | None:
    """onnxruntime-genai's past buffer length for the model at ``model_path``: ``search.max_length``
    of the ``genai_config.json`` beside it when ``search.past_present_share_buffer`` is true
    (genai then allocates every past input at that length, and GroupQueryAttention returns
    ``present`` of that length); None without such a file."""
    import json

    config = Path(model_path).with_name("genai_config.json")
    if not config.is_file():
        return None
    try:
        search = json.loads(config.read_text()).get("search", {})
    except (OSError, ValueError, AttributeError):
        return None
    length = search.get("max_length")
    if search.get("past_present_share_buffer") and isinstance(length, int) and length > 0:
        return length
    return None

