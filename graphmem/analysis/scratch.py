"""The kernel-scratch profile of an :class:`~graphmem.analysis.Analysis`: run 1 replayed through
onnxruntime's CPU arena with each kernel's scratch (:mod:`graphmem.ort.scratch`)."""

from __future__ import annotations

from graphmem.analysis.result import Analysis
from graphmem.errors import UsageError
from graphmem.model.program import build_program
from graphmem.ort.allocation import OrtPlan, plan_ort
from graphmem.ort.inference import infer_types
from graphmem.ort.rules import sharing, unwritten_outputs
from graphmem.ort.scratch import ScratchProfile, replay_run, step_scratch
from graphmem.planner.program import Program
from graphmem.shapes.infer import ORT_STATIC

__all__ = ["scratch_profile", "scratch_bytes"]


def scratch_profile(analysis: Analysis) -> ScratchProfile:
    """:func:`replay_run` of ``analysis`` (a :class:`graphmem.Analysis`), on the host it is for."""
    program, plan = _ort_plan(analysis)
    return replay_run(program, plan, graph=analysis.graph, order=analysis.order, types=analysis.types,
                      values=analysis.values, host=analysis.host)


def _ort_plan(analysis: Analysis) -> tuple[Program, OrtPlan]:
    """The program and onnxruntime plan :func:`graphmem.analyze` built (rebuilt, as Analysis does
    not keep them; UsageError when the rebuilt plan's timeline differs from the analysis', as
    after an ``as_dtype`` what-if)."""
    if analysis.activations.provider != "cpu":
        raise UsageError("kernel scratch is modelled for the CPU provider only (CUDA workspaces are not)")
    static = infer_types(analysis.graph, analysis.order, view=ORT_STATIC)
    program, _ = build_program(
        analysis.graph,
        analysis.order,
        runtime=analysis.types,
        static=static.types,
        sharing=sharing,
        unwritten=unwritten_outputs,
    )
    plan = plan_ort(program)
    if plan.in_use != tuple(held for _, held in analysis.activations.timeline):
        raise UsageError(
            "the scratch profile could not rebuild the analysis' plan (an as-dtype what-if is not modelled)"
        )
    return program, plan


def scratch_bytes(analysis: Analysis) -> int:
    """The largest scratch one kernel of ``analysis`` requests (requested bytes, unrounded): the
    figure reported as ``activations.scratch_bytes``."""
    per_step, _ = step_scratch(analysis.graph, analysis.order, analysis.types, analysis.values, host=analysis.host)
    return max((ks.total for ks in per_step), default=0)
