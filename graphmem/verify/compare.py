"""``graphmem verify``: run the graph with onnxruntime and compare with the prediction.

The prediction is :func:`graphmem.analyze` on the graph onnxruntime runs at the chosen
optimization level; the measurement is :func:`graphmem.verify.measure` on a fresh session. Both
are activation bytes requested from the arena, run 1. Per node, the running totals are compared
in execution order; the first node where they differ by more than the tolerance is reported, so
a user sees which op the model gets wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.errors import MeasureError, UsageError
from graphmem.host import HostProfile, host_differences, resolve_host, this_host
from graphmem.tempdirs import private_dir
from graphmem.verify.resident import RUNS

if TYPE_CHECKING:
    from graphmem.analysis.request import Bindings

__all__ = [
    "Verification",
    "Divergence",
    "SessionCheck",
    "verify",
    "parse_tolerance",
    "matching_order",
    "RESIDENT_TOLERANCE",
]

#: ``resident_bytes`` against the median growth of fresh processes (issue 26: within 10%).
RESIDENT_TOLERANCE = 0.10


@dataclass(frozen=True, slots=True, kw_only=True)
class Divergence:
    """The first node whose running totals differ by more than the tolerance."""

    node: str
    step: int
    predicted_bytes: int
    measured_bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionCheck:
    """The ``session`` block predicted (``figures``) against what the session showed: the arena's
    held bytes from the profiler (before run 1, over run 1, after the last of five runs) at the
    requested peak's tolerance, the resident growth (median of fresh processes; the CUDA device's
    memory on a CUDA session) at :data:`RESIDENT_TOLERANCE`. ``measured[name]`` is None for a
    figure not measured (``weights_held_bytes`` has no measurement of its own; ``notes`` say why
    others have none); ``within[name]`` None then too."""

    figures: Any  # SessionFigures | CudaSessionFigures
    measured: dict[str, int | None]
    tolerances: dict[str, float]
    within: dict[str, bool | None]
    resident_processes: tuple[int, ...] = ()  # growth measured per fresh process
    notes: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return all(w is not False for w in self.within.values())


@dataclass(frozen=True, slots=True, kw_only=True)
class Verification:
    """Predicted against measured, for one model, binding, provider and level."""

    provider: str
    provider_reason: str
    graph_opt: str
    predicted_bytes: int
    measured_bytes: int
    measured_run2_bytes: int | None
    # in-use peak, kernel scratch included (arena chunk sizes); None when not comparable: the
    # arena's high-water mark was set at session creation (prepacking), see scratch_note
    measured_scratch_bytes: int | None
    predicted_scratch_bytes: int | None  # the same, predicted (graphmem.ort.scratch); None: unknown
    # what the session's arena held before run 1: the initializers onnxruntime places there. It
    # keeps others outside its arena (ResNet-50: 7.9 of 97 MiB in the arena), which the profiler
    # does not see: this is not the whole of the weights the session holds.
    weights_held_bytes: int
    # the same with prepacking disabled: then every initializer onnxruntime materialises stays in
    # its arena (ResNet-50: 102,121,984 B for 102,121,888 B of weights), so this is the weights
    # the session holds, measured; with prepacking (the default) part of it lives outside the arena
    weights_unpacked_bytes: int | None = None
    # the in-use peak of run 1 in the prepacking-off session, and why the default session's is
    # not compared (None when it is)
    measured_scratch_unpacked_bytes: int | None = None
    scratch_note: str | None = None
    ratio: float
    tolerance: float
    passed: bool
    # onnxruntime picks the execution order per session (order_assumed): the peaks of the orders
    # it may pick, ascending (predicted_bytes is the largest), and the one this session's
    # measured peak matched within the tolerance (None: none did, or no alternatives)
    order_peaks: tuple[int, ...] = ()
    order_matched: int | None = None
    divergence: Divergence | None
    outputs_match: bool
    output_mismatches: tuple[str, ...]
    analysis: Any = None  # the prediction (graphmem.Analysis), for budgets and reports
    cuda_outside_arena: Any = None  # CudaFootprint | None: device bytes outside the CUDA arena
    cuda_problem: str | None = None  # why there is no such figure on a CUDA session
    session: SessionCheck | None = None  # what the session holds, predicted against measured


def parse_tolerance(text: str) -> float:
    """"5%" → 0.05, "0.05" → 0.05; UsageError for anything else or a negative value."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UsageError(f"--tolerance '{text}': expected a percentage such as 5%") from None
    if value < 0:
        raise UsageError(f"--tolerance '{text}' is negative")
    return value


def verify(
    path: str | Path,
    *,
    dims: Mapping[str, int] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
    values: Mapping[str, Sequence[int]] | None = None,
    bindings: Bindings | None = None,
    provider: str = "cpu",
    graph_opt: str = "none",
    tolerance: float = 0.05,
    random_weights: bool = False,
    int_range: tuple[int, int] | None = None,
    seed: int = 0,
    host: HostProfile | str | Path | None = None,
    session_options: Sequence[str] | None = None,
    resident_processes: int = 3,
) -> Verification:
    """Predict, run and measure ``path``; see the module doc. ``dims``, ``shapes`` and ``values``
    (or ``bindings``) as :func:`graphmem.analyze` takes them.

    The run is on this machine, so the prediction is for this machine
    (:func:`graphmem.host.this_host`); a ``host`` profile (``--host``) that differs from it is
    refused (UsageError naming the fields): a prediction for another machine cannot be checked
    by a measurement here.

    ``session_options``: ``--session-option`` pairs; the session is measured under them and its
    figures (the session stage, :func:`graphmem.analysis.hold.held_figures`) compared; unset options are onnxruntime's
    defaults except one intra-op thread (``intra_op_num_threads=0`` is this machine's cores).
    ``resident_processes``: fresh processes whose median is the resident growth (0: not measured)."""

    import onnx

    from graphmem.analysis.graph_opt import analyze_graph_opt
    from graphmem.analysis.request import request_of
    from graphmem.model.loading import load_model
    from graphmem.verify.feeds import check_seed, make_feeds
    from graphmem.verify.measure import measure
    from graphmem.verify.weights import missing_weights, with_random_weights

    path = Path(path)
    here = _this_machine(host)
    request = request_of(bindings=bindings, dims=dims, shapes=shapes, values=values, host=here)
    check_seed(seed)
    load_model(path)  # one-line errors for bad files before onnxruntime sees them
    with private_dir("graphmem-verify-") as work:
        runnable = path
        missing = missing_weights(path)
        if missing:
            if not random_weights:
                from graphmem.errors import ExternalDataError

                raise ExternalDataError(
                    f"{len(missing)} weights have no data (first: '{missing[0]}'); "
                    "pass --random-weights to synthesize them"
                )
            runnable = with_random_weights(path, work / "random_weights.onnx", seed=seed)
        # the prediction is exactly `graphmem peak --graph-opt LEVEL`'s (one code path for the
        # optimized graph: onnxruntime writes it, the session's static shapes are restored); an
        # inexact one (unresolved tensors, ...) is measured all the same and says so
        predicted = analyze_graph_opt(runnable, graph_opt, request)
        proto = onnx.load(str(runnable), load_external_data=False)
        run = predicted.model  # every dim bound, derived or given, and the inputs' shapes and values
        feeds = make_feeds(proto, run.dims, seed=seed, int_range=int_range, shapes=run.shapes, values=run.values)
        session, plan = _session_plan(predicted, session_options, here, provider)
        m = measure(str(runnable), feeds, provider=provider, graph_opt=graph_opt, threads=plan["threads"],
                    runs=RUNS, mem_pattern=plan["mem_pattern"], session_config=plan["config"],
                    arena_cfg=plan["arena_cfg"], provider_opts=plan["provider_opts"])
        unpacked = measure(
            str(runnable),
            feeds,
            provider=provider,
            graph_opt=graph_opt,
            threads=1,
            runs=1,
            session_config={"session.disable_prepacking": "1"},
        )
        from graphmem.verify.providers import CUDA

        if m.providers and m.providers[0] == CUDA and graph_opt == "none":
            # the session ran on CUDA: compare with the CUDA emulation (the CUDA arena's requests;
            # inputs the session copied in before the first kernel are in the baseline, as there)
            predicted = analyze_graph_opt(runnable, "none", replace(request, provider="cuda"))
            session, _ = _session_plan(predicted, session_options, here, provider)
        elif session is None and not (m.providers and m.providers[0] == CUDA):  # asked for CUDA, ran on CPU
            session, _ = _session_plan(predicted, [], here, "cpu")
        check = None
        if session is not None:
            check = _check_session(session, plan, m, runnable, feeds, graph_opt, tolerance, resident_processes)
    run1, run2 = m.runs[0], m.runs[1] if len(m.runs) > 1 else None
    p, q = predicted.activations.peak_bytes, run1.requested_peak
    ratio = p / q if q else (1.0 if p == 0 else float("inf"))
    alternatives = predicted.activations.order_peaks
    matched = matching_order(alternatives, q, tolerance)
    mismatches = _output_mismatches(predicted, run1)
    bare = unpacked.runs[0]
    set_at_creation = _in_use_set_at_creation(run1, bare)
    note = None
    if set_at_creation:
        from graphmem.units import format_bytes

        note = (
            f"not comparable: the arena's high-water mark ({format_bytes(run1.in_use_peak_bytes)} over the baseline) "
            f"was set at session creation (prepacking), before the first node; with prepacking off "
            f"the run's is {format_bytes(bare.in_use_peak_bytes)}"
        )
    return Verification(
        provider=m.providers[0] if m.providers else provider,
        provider_reason=m.provider_reason,
        graph_opt=graph_opt,
        predicted_bytes=p,
        measured_bytes=q,
        measured_run2_bytes=run2.requested_peak if run2 else None,
        measured_scratch_bytes=None if set_at_creation else run1.in_use_peak_bytes,
        predicted_scratch_bytes=predicted.activations.in_use_peak_bytes,
        weights_held_bytes=run1.primary.session_baseline,
        weights_unpacked_bytes=bare.primary.session_baseline,
        measured_scratch_unpacked_bytes=bare.in_use_peak_bytes,
        scratch_note=note,
        ratio=ratio,
        tolerance=tolerance,
        passed=(abs(ratio - 1) <= tolerance or matched is not None)
        and not mismatches
        and (check is None or check.passed),
        order_peaks=alternatives,
        order_matched=matched,
        # the timeline predicted is the largest order's: beside another order's run it says nothing
        divergence=_first_divergence(predicted, run1, tolerance, q) if matched in (None, p) else None,
        outputs_match=not mismatches,
        output_mismatches=mismatches,
        analysis=predicted,
        cuda_outside_arena=m.cuda_footprint,
        cuda_problem=m.cuda_footprint_problem,
        session=check,
    )


def _session_plan(predicted, pairs, here, provider):
    """The predicted session figures under ``pairs`` (None until the session shows where it ran,
    for a CUDA request) and how to measure a session with those options: intra-op threads, memory
    pattern, config entries, environment arena, CUDA provider options."""
    from graphmem.analysis.cuda_held import parse_cuda_options

    if provider != "cpu" or predicted.activations.provider == "cuda":
        cuda = parse_cuda_options(list(pairs or []))
        plan = {"threads": 1, "mem_pattern": cuda.enable_mem_pattern, "config": {}, "arena_cfg": {},
                "provider_opts": cuda.provider_options(), "cpu_arena": True}
        if predicted.activations.provider != "cuda":
            return None, plan
        from graphmem.analysis.cuda_held import cuda_session_figures

        return cuda_session_figures(predicted, cuda), plan
    from graphmem.analysis.hold import held_figures

    figures = held_figures(predicted, list(pairs or []), here, threads=1)  # the session stage, one thread unless set
    options = figures.options
    return figures, {"threads": options.intra_op_num_threads, "mem_pattern": options.enable_mem_pattern,
                     "config": options.session_config(), "arena_cfg": options.arena_cfg(), "provider_opts": None,
                     "cpu_arena": options.enable_cpu_mem_arena}


def _check_session(figures, plan, m, runnable, feeds, graph_opt, tolerance, processes) -> SessionCheck:
    """Measure what ``figures`` predict (see :class:`SessionCheck`)."""
    from graphmem.analysis.session import ARENA_FIGURES, SESSION_FIGURES
    from graphmem.verify.resident import arena_held, measure_resident

    measured: dict[str, int | None] = dict.fromkeys(SESSION_FIGURES)
    notes: list[str] = ["weights_held_bytes has no measurement of its own (it is in the resident growth)"]
    if plan["cpu_arena"]:
        held = arena_held(m)
        measured.update(arena_before_run_bytes=held.before_run_bytes, arena_first_run_bytes=held.first_run_bytes,
                        arena_steady_bytes=held.steady_bytes)
    else:
        notes.append("enable_cpu_mem_arena=0: there is no arena to read (the figures are 0 by definition)")
    processes_grown: tuple[int, ...] = ()
    if figures.provider == "cuda":
        f = m.cuda_footprint
        if f is not None:
            measured["resident_bytes"] = f.run_bytes
        else:
            notes.append(f"device memory not read: {m.cuda_footprint_problem or 'no reading'}")
    elif processes > 0:
        try:
            r = measure_resident(
                runnable,
                feeds,
                graph_opt=graph_opt,
                threads=plan["threads"],
                mem_pattern=plan["mem_pattern"],
                cpu_arena=plan["cpu_arena"],
                config=plan["config"],
                arena_cfg=plan["arena_cfg"],
                processes=processes,
            )
        except MeasureError as exc:
            notes.append(f"resident growth not measured: {exc}")
        else:
            measured["resident_bytes"] = r.bytes
            processes_grown = r.grown
    else:
        notes.append("resident growth not measured (no fresh process asked for)")
    tolerances = {name: tolerance for name in ARENA_FIGURES}
    tolerances["resident_bytes"] = RESIDENT_TOLERANCE
    within: dict[str, bool | None] = {}
    for name, tol in tolerances.items():
        got = measured[name]
        want = getattr(figures, name)
        within[name] = None if got is None else (want == got or (got > 0 and abs(want / got - 1) <= tol))
    return SessionCheck(figures=figures, measured=measured, tolerances=tolerances, within=within,
                        resident_processes=processes_grown, notes=tuple(notes))


def _this_machine(host: HostProfile | str | Path | None) -> HostProfile:
    """This machine's profile; ``host``, when given, must be the same (see :func:`verify`)."""
    here = this_host()
    if host is None:
        return here
    given = resolve_host(host)
    differences = host_differences(given, here)
    if differences:
        raise UsageError(
            f"verify measures on this machine, and the host given differs from it ({'; '.join(differences)}): "
            "a prediction for another machine cannot be checked here; "
            "leave --host out (graphmem host shows this machine)"
        )
    return here


def matching_order(peaks: Sequence[int], measured: int, tolerance: float) -> int | None:
    """The peak among ``peaks`` (the execution orders a session may pick) that ``measured`` is
    within ``tolerance`` of, the closest when several are; None when none is (or no peaks).

    >>> matching_order((131_072, 135_168), 131_072, 0.0)
    131072
    >>> matching_order((131_072, 135_168), 133_000, 0.0) is None
    True
    """
    def off(peak: int) -> float:
        return abs(peak / measured - 1) if measured else (0.0 if peak == 0 else float("inf"))

    near = [peak for peak in peaks if off(peak) <= tolerance]
    return min(near, key=lambda peak: (off(peak), peak)) if near else None


def _in_use_set_at_creation(run, unpacked) -> bool:
    """Whether run 1's in-use high-water mark is the session's, set before the first node.

    The allocator's mark is cumulative over the session, and prepacking at session creation
    (``PrePack``: packed copies of weights, the originals freed; the arena's held bytes fall back,
    so they do not bound the mark) can leave it above anything run 1 reaches (a 64x64 weight
    shared by two transB Gemms: 16,384 B over the baseline for a run of 512). Each node event
    samples the mark when its kernel ends, so it never falls: the run set it when two events
    sampled different marks, or when one event's in-use equals it. Otherwise (every event the
    same mark, above every in-use) it is the session's when the prepacking-off session's run
    stays below it."""
    nodes = [n for n in run.nodes if n.provider == run.primary.provider]
    if not nodes:
        return False
    high = max(n.in_use_peak for n in nodes)
    uniform = min(n.in_use_peak for n in nodes) == high and not any(n.in_use == high for n in nodes)
    return uniform and run.in_use_peak_bytes > unpacked.in_use_peak_bytes


def _first_divergence(predicted, run, tolerance: float, peak: int) -> Divergence | None:
    """Steps are matched by position (the profile lists kernels in execution order; names of
    nodes onnxruntime's optimizers create, such as ReorderOutput's, vary between sessions);
    None when the two orders do not have the same op types."""
    ops = list(predicted.activations.step_ops)
    if ops != [n.op_type for n in run.nodes]:
        return None
    base = run.primary.session_baseline
    slack = tolerance * max(peak, 1)
    for step, ((name, held), node) in enumerate(zip(predicted.activations.timeline, run.nodes)):
        if node.provider != run.primary.provider:
            continue  # a CPU kernel of a CUDA session samples the CPU arena
        got = node.requested_in_use - base
        if abs(got - held) > slack:
            return Divergence(node=name, step=step, predicted_bytes=held, measured_bytes=got)
    return None


def _output_mismatches(predicted, run) -> tuple[str, ...]:
    bad = []
    for out in run.outputs:
        t = predicted.types.get(out.name)
        if out.shape is not None and (t is None or t.shape != out.shape):
            bad.append(f"{out.name}: predicted {None if t is None else t.shape}, ran {out.shape}")
    return tuple(bad)
