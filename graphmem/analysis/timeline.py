"""Memory over the run, step by step: the curves and buffer lifetimes behind the peak figures.

:func:`build_timeline` reads the planner's own objects — the program, onnxruntime's plan
(:class:`~graphmem.ort.allocation.OrtPlan`), the liveness bounds and the arena replay with kernel
scratch — and keeps, per execution step, exactly the figures the headline numbers are the
maxima of:

* ``requested``: bytes onnxruntime has requested and still holds after the step (its profiler
  samples before the step's releases); its maximum is ``activations.peak_bytes``;
* ``lower_bound``: bytes that must be live at the step whatever the placement; maximum
  ``activations.lower_bound_bytes``; ``None`` for a run with control flow (the bound is not
  computed through bodies);
* ``in_use``: the arena's in-use bytes at the step's highest point, kernel scratch included
  (chunk bytes); maximum ``activations.in_use_peak_bytes``; ``None`` when not modelled (CUDA);

and which buffer every tensor lives in, from which step to which (for "what is live when").
Nothing here is estimated: a figure the plan does not have is absent, never filled in.

A run with If/Loop/Scan (:func:`replay_timeline`) is drawn from the control-flow replay
(:class:`graphmem.ort.controlflow.Replay`): every profiler sample is a step, body steps under their
node (``Loop_1/body/Add``), each control-flow node's own step after its bodies' (it is sampled when
they are done), and every request of the run (bodies, kernel temporaries, memory-pattern blocks)
a buffer of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from graphmem.analysis.result import Analysis
from graphmem.errors import InvariantError, UsageError
from graphmem.ort.allocation import OrtPlan
from graphmem.ort.controlflow import Replay
from graphmem.planner.program import Program

__all__ = ["TensorLife", "BufferLife", "MemoryTimeline", "build_timeline", "memory_timeline", "replay_timeline"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TensorLife:
    """One tensor a step writes: its bytes, the buffer it lives in and its first and last use."""

    name: str
    bytes: int | None  # None: no static size (not in any figure)
    buffer: int  # index into ``MemoryTimeline.buffers``; -1: no buffer of its own (view of a source)
    writer: int  # step writing it
    last_reader: int | None  # last step reading it; None: nothing reads it


@dataclass(frozen=True, slots=True, kw_only=True)
class BufferLife:
    """One request onnxruntime makes: its bytes, when it is made and when it is released."""

    bytes: int | None  # None: unknown size (counted 0 in ``requested``)
    first: int  # the step that requests it
    last: int | None  # the step after which it is released; None: held to the end of the run
    tensors: tuple[int, ...]  # indices into ``MemoryTimeline.tensors``, in writing order

    def held_at(self, step: int) -> bool:
        """True when the buffer is requested and not yet released at ``step``."""
        return self.first <= step and (self.last is None or step <= self.last)


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryTimeline:
    """Per-step memory of one analysis (all byte figures exact integers)."""

    labels: tuple[str, ...]  # node name of each step
    op_types: tuple[str, ...]  # op type of each step
    requested: tuple[int, ...]
    lower_bound: tuple[int, ...] | None  # None: not computed (a run with control flow)
    in_use: tuple[int, ...] | None
    scratch: tuple[int, ...] | None  # kernel scratch requested per step; None: not modelled
    buffers: tuple[BufferLife, ...]
    tensors: tuple[TensorLife, ...]
    peak_step: int  # step of the first maximum of ``requested``; -1 without steps

    def tensor_at(self, buffer: int, step: int) -> TensorLife | None:
        """The tensor buffer ``buffer`` holds at ``step``: the last one written by then."""
        held = None
        for t in self.buffers[buffer].tensors:
            if self.tensors[t].writer <= step:
                held = self.tensors[t]
        return held

    def held_at(self, step: int) -> list[int]:
        """Indices of the buffers held at ``step``, largest first."""
        held = [b for b, life in enumerate(self.buffers) if life.held_at(step)]
        return sorted(held, key=lambda b: -(self.buffers[b].bytes or 0))


def memory_timeline(a: Analysis) -> MemoryTimeline:
    """The timeline of analysis ``a``, from the planner results it keeps (:attr:`Analysis.steps`)."""
    s = a.steps
    if s is None and a.replay is not None:
        return replay_timeline(a.replay)
    if s is None:
        raise UsageError(f"{a.model.path}: this analysis keeps no per-step planner results to draw")
    return build_timeline(
        s.program,
        s.plan,
        lower_bound=s.lower_bound,
        op_types=a.activations.step_ops,
        in_use=s.in_use,
        scratch=s.scratch,
    )


def build_timeline(
    program: Program,
    plan: OrtPlan,
    *,
    lower_bound: Sequence[int],
    op_types: Sequence[str],
    in_use: Sequence[int] | None = None,
    scratch: Sequence[int] | None = None,
) -> MemoryTimeline:
    """The timeline of ``program`` run under ``plan`` (see the module doc).

    ``lower_bound`` is the liveness pass's live bytes per step, ``in_use`` the arena replay's
    per-step high with scratch (``None`` when not modelled), ``op_types`` one per step.
    """
    steps = program.steps
    values = program.values
    n = len(steps)
    if not (len(plan.in_use) == len(lower_bound) == len(op_types) == n):
        raise InvariantError("every per-step series must have one entry per program step")
    writer: dict[int, int] = {}
    last_read: dict[int, int] = {}
    for s, step in enumerate(steps):
        for v in step.inputs:
            last_read[v] = s
        for v in step.outputs:
            writer.setdefault(v, s)
    # Which request a value lives in: the open request of its buffer when it is written.
    fresh_at = {v: i for i, v in enumerate(plan.fresh)}
    open_request: dict[int, int] = {}  # origin buffer -> index of its current request
    members: list[list[int]] = [[] for _ in plan.fresh]
    tensors: list[TensorLife] = []
    for s, step in enumerate(steps):
        for v in step.outputs:
            if writer.get(v) != s or values[v].source:
                continue
            origin = plan.buffer_of[v]
            if v in fresh_at:
                open_request[origin] = fresh_at[v]
            request = open_request.get(origin, -1)
            if values[origin].source:
                request = -1  # a view of a graph input or weight: outside the planned memory
            if request >= 0:
                members[request].append(len(tensors))
            tensors.append(
                TensorLife(
                    name=values[v].name,
                    bytes=values[v].size,
                    buffer=request,
                    writer=s,
                    last_reader=last_read.get(v),
                )
            )
    buffers = tuple(
        BufferLife(bytes=values[v].size, first=first, last=last, tensors=tuple(m))
        for v, first, last, m in zip(plan.fresh, plan.alloc_step, plan.free_step, members)
    )
    return MemoryTimeline(
        labels=tuple(step.label for step in steps),
        op_types=tuple(op_types),
        requested=tuple(plan.in_use),
        lower_bound=tuple(lower_bound),
        in_use=tuple(in_use) if in_use is not None else None,
        scratch=tuple(scratch) if scratch is not None else None,
        buffers=buffers,
        tensors=tuple(tensors),
        peak_step=plan.peak_step,
    )


def replay_timeline(r: Replay) -> MemoryTimeline:
    """The timeline of a control-flow replay (see the module doc): steps in completion order,
    every named request a buffer holding one tensor."""
    samples = [r.samples[i] for i in r.order]
    n = len(samples)
    buffers: list[BufferLife] = []
    tensors: list[TensorLife] = []
    for life in r.lives:
        if life.last is not None and life.last < life.first:
            continue  # released before any step completed
        tensors.append(TensorLife(name=life.name, bytes=life.bytes, buffer=len(buffers), writer=life.first,
                                  last_reader=life.last))
        buffers.append(BufferLife(bytes=life.bytes, first=life.first, last=life.last, tensors=(len(tensors) - 1,)))
    requested = tuple(x.bytes for x in samples)
    peak = max(requested, default=0)
    first = next((i for i, x in enumerate(r.samples) if x.bytes == peak), -1)
    return MemoryTimeline(
        labels=tuple(x.label for x in samples),
        op_types=tuple(x.op for x in samples),
        requested=requested,
        lower_bound=None,
        in_use=tuple(x.in_use for x in samples),
        scratch=tuple(x.scratch for x in samples),
        buffers=tuple(buffers),
        tensors=tuple(tensors),
        peak_step=r.order.index(first) if n else -1,
    )
