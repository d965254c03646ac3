"""The later stages of one analysis: from the session's graph to the figures.

6. :func:`program` — the steps and values onnxruntime's planner sees (:mod:`graphmem.model.program`);
7. :func:`plan_memory` — onnxruntime's allocation plan (:func:`graphmem.ort.allocation.plan_ort`),
   run 1 replayed through the BFC arena with kernel scratch (:mod:`graphmem.ort.scratch`), and
   the runtime-independent bounds of :mod:`graphmem.planner` (lower bound, best arena);
8. :func:`replay_control_flow` — with If/Loop/Scan, every body planned and run 1 replayed
   request by request (:mod:`graphmem.analysis.controlflow`, :mod:`graphmem.ort.controlflow`);
9. :func:`count_flops` — FLOPs, through the bodies too (:mod:`graphmem.analysis.bodyflops`).

The headline activation peak is onnxruntime's plan's (:func:`plan_headline`) or, with control
flow, the replay's (:func:`replay_headline`); never the planner's, which gives the bounds beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphmem.analysis.bodyflops import flops_with_bodies
from graphmem.analysis.request import AnalysisRequest
from graphmem.analysis.stages import Session
from graphmem.errors import UsageError
from graphmem.flops import FlopReport
from graphmem.model.program import build_program
from graphmem.ort.allocation import OrtPlan, plan_ort
from graphmem.ort.rules import sharing, unwritten_outputs
from graphmem.ort.scratch import ScratchProfile, prepacked_in_arena, replay_run, step_scratch
from graphmem.ort.session import main_device_only
from graphmem.planner.greedy import Placement, plan_greedy
from graphmem.planner.liveness import Liveness, analyze_liveness
from graphmem.planner.program import Program

if TYPE_CHECKING:  # control flow's modules load only for a graph that has it (replay_control_flow)
    from graphmem.analysis.controlflow import ControlFlowPlan
    from graphmem.ort.controlflow import Replay

__all__ = [
    "Programmed", "Plans", "ControlFlowRun", "Headline", "Flops",
    "program", "plan_memory", "replay_control_flow", "plan_headline", "replay_headline", "count_flops",
]


# --- 6. the program -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Programmed:
    """The session's graph as a planner program: steps, values, and each value's tensor name."""

    program: Program
    names: tuple[str, ...]


def program(session: Session) -> Programmed:
    """Steps in the session's order, values sized from the run's types, onnxruntime's reuse
    rules (:mod:`graphmem.ort.rules`) and, on CUDA, each value's device."""
    s = session.provider
    built, names = build_program(
        s.graph, s.order, runtime=s.runtime, static=s.static, sharing=sharing, unwritten=unwritten_outputs,
        devices=s.devices, values_known=session.runtime.values,
    )
    return Programmed(program=built, names=names)


# --- 7. the plans ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Plans:
    """onnxruntime's plan of the program (its peak is the headline without control flow), run 1
    through the arena, and the planner's bounds for the main device's values."""

    plan: OrtPlan
    run: ScratchProfile | None  # None: not modelled (CUDA kernels' workspaces)
    liveness: Liveness  # lower bound (bytes live at the fullest step) and the no-reuse sum
    arena: Placement  # the best arena an offline planner finds


def plan_memory(session: Session, programmed: Programmed, request: AnalysisRequest) -> Plans:
    """:func:`graphmem.ort.allocation.plan_ort`, :func:`graphmem.ort.scratch.replay_run` (CPU, its
    kernel scratch on the request's host) and the planner's liveness and greedy placement of the
    main device's values."""
    p = programmed.program
    plan = plan_ort(p)
    run = None
    if session.provider.devices is None:
        run = replay_run(
            p, plan, graph=session.graph, order=session.order, types=session.runtime.types,
            values=session.runtime.values, host=request.host,
        )
    live = analyze_liveness(main_device_only(p))
    return Plans(plan=plan, run=run, liveness=live, arena=plan_greedy(live))


# --- 8. control flow --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlFlowRun:
    """Every body planned (``flow``: kernels, branch choices, what is unresolved) and run 1
    replayed through them (``replay``: the headline figures of a graph with control flow)."""

    flow: ControlFlowPlan
    replay: Replay


def replay_control_flow(
    session: Session, programmed: Programmed, plans: Plans, request: AnalysisRequest
) -> ControlFlowRun | None:
    """None without If/Loop/Scan bodies; else the bodies planned
    (:func:`graphmem.analysis.controlflow.plan_control_flow`) and the run replayed
    (:func:`graphmem.ort.controlflow.replay`), top-level kernel scratch and prepacked weights in."""
    runtime = session.runtime
    if not runtime.bodies:
        return None
    if session.provider.devices is not None:
        raise UsageError("--provider cuda: control flow (If/Loop/Scan) is emulated on CPU only")
    from graphmem.analysis.controlflow import plan_control_flow
    from graphmem.ort.controlflow import replay

    s = session.provider
    flow = plan_control_flow(
        programmed.program, plans.plan, programmed.names, s.order, s.graph.protos, runtime.bodies,
        session.static.bodies, s.static, s.runtime, session.model.opset, session.model, host=request.host,
    )
    top_scratch, _ = step_scratch(session.graph, session.order, runtime.types, runtime.values, host=request.host)
    run = replay(
        programmed.program, plans.plan, flow.kernels, ops=tuple(s.graph.node(nid).op_type for nid in s.order),
        scratch=[(ks.before, ks.after) for ks in top_scratch],
        prepacked=prepacked_in_arena(session.graph, runtime.types, runtime.values, host=request.host),
    )
    return ControlFlowRun(flow=flow, replay=run)


# --- the headline -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Headline:
    """The activation figures reported, and the stage that computed them (``source``)."""

    source: str  # "ort.allocation.plan_ort" or "ort.controlflow.replay"
    peak_bytes: int
    peak_step: int
    peak_node: str
    timeline: tuple[tuple[str, int], ...]  # (step label, bytes held after it)
    step_ops: tuple[str, ...]
    in_use_peak_bytes: int | None  # the arena's high-water mark with scratch; None: not modelled
    scratch_bytes: int  # the largest scratch one kernel requests
    scratch_unmodelled: tuple[str, ...]
    live_at_peak: frozenset[str]


def plan_headline(session: Session, programmed: Programmed, plans: Plans) -> Headline:
    """The figures of onnxruntime's plan (:attr:`Plans.plan`) and its run through the arena."""
    p, plan, run = programmed.program, plans.plan, plans.run
    step = plan.peak_step
    return Headline(
        source="ort.allocation.plan_ort",
        peak_bytes=plan.peak_bytes,
        peak_step=step,
        peak_node=p.steps[step].label if step >= 0 else "",
        timeline=tuple((s.label, held) for s, held in zip(p.steps, plan.in_use)),
        step_ops=tuple(session.provider.graph.node(nid).op_type for nid in session.provider.order),
        in_use_peak_bytes=run.peak_bytes if run is not None else None,
        scratch_bytes=max(run.per_step, default=0) if run is not None else 0,
        scratch_unmodelled=run.unmodelled if run is not None else ("every CUDA kernel",),
        live_at_peak=_live_at(plan, programmed.names, step),
    )


def replay_headline(plans: Plans, cf: ControlFlowRun) -> Headline:
    """The figures of the control-flow replay (:attr:`ControlFlowRun.replay`): its peak sample,
    its timeline through the bodies; scratch the larger of the top steps' and the bodies'."""
    samples, top = cf.replay.samples, plans.run  # control flow runs on CPU only: ``top`` is modelled
    top_scratch = max(top.per_step, default=0) if top is not None else 0
    unmodelled = top.unmodelled if top is not None else ()
    return Headline(
        source="ort.controlflow.replay",
        peak_bytes=cf.replay.peak_bytes,
        peak_step=next(i for i, x in enumerate(samples) if x.bytes == cf.replay.peak_bytes),
        peak_node=cf.replay.peak_label,
        timeline=tuple((x.label, x.bytes) for x in samples),
        step_ops=tuple(x.op for x in samples),
        in_use_peak_bytes=cf.replay.in_use_peak_bytes,
        scratch_bytes=max(top_scratch, cf.flow.scratch_bytes),
        scratch_unmodelled=tuple(dict.fromkeys((*unmodelled, *cf.flow.scratch_unmodelled))),
        live_at_peak=frozenset(),
    )


def _live_at(plan: OrtPlan, names: tuple[str, ...], step: int) -> frozenset[str]:
    """Tensors whose buffer is requested and not yet released at ``step``."""
    held = set()
    for b, start, end in zip(plan.fresh, plan.alloc_step, plan.free_step):
        if start <= step and (end is None or end >= step):
            held.add(b)
    return frozenset(names[v] for v, b in enumerate(plan.buffer_of) if b in held)


# --- 9. FLOPs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Flops:
    """The FLOP count, and per control-flow node the bodies it ran (:class:`BodyLayers`)."""

    report: FlopReport
    bodies: dict[int, tuple[Any, ...]]


def count_flops(session: Session, cf: ControlFlowRun | None) -> Flops:
    """FLOPs of the session's graph (before a CUDA partition), an unknown If counted on the
    branch the memory replay assumed."""
    assumed = {c.node: c.assumed for c in cf.flow.choices} if cf is not None else {}
    report, bodies = flops_with_bodies(session.graph, session.runtime, session.order, assumed=assumed)
    return Flops(report=report, bodies=bodies)
