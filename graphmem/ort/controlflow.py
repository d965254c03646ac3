"""Run 1 of a program whose steps run subgraphs (If, Loop, Scan), as onnxruntime 1.31 runs them.

Nothing here knows ONNX: a control-flow step is described by a :class:`Kernel` (what the node
allocates itself, which of its outputs it allocates before its bodies, and each body execution
as a :class:`Frame` over a planned body :class:`~graphmem.planner.program.Program`). The rules,
with the measurements that confirm them, are in the project notes (controlflow.md); each is
cited where it is applied:

* a body execution is a fresh ExecutionFrame over the body's own plan, on the same arena
  (``core/framework/utils.cc`` ExecuteSubgraph, ``execution_frame.cc``); its samples are the
  profiler's node events of the body kernels, on top of what the enclosing frames hold;
* the memory pattern (``execution_frame.cc``, ``session_state.cc`` GetMemoryPatternGroup /
  CalculateMemoryPatternsKey, ``mem_pattern_planner.h``): the first execution of a body with a
  given feed-shape key traces its planned allocations (graph outputs excluded; sizes rounded up
  to ``kAllocAlignment`` = 256, ``core/framework/allocator.h``) with a best-fit offset planner;
  a later execution with a cached key requests one block of the pattern's peak size when its
  frame is created and places each planned value of the same size in it;
* per kernel (``providers/cpu/controlflow/if.cc``, ``loop.cc``, ``scan_8.cc``, ``scan_9.cc``,
  ``scan_utils.cc``): temporaries the kernel holds during its bodies, outputs allocated before
  the bodies, Loop outputs kept between iterations (:class:`Frame` ``kept``/``dropped_at``).

The node's own sample comes first in the timeline (the profiler's event for it starts before its
bodies' events) and is the parent plan's figure after the node: everything the kernel held is
released before it is sampled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from graphmem.ort.allocation import OrtPlan
from graphmem.planner.program import Program

__all__ = ["ALIGNMENT", "Frame", "Kernel", "PatternCache", "Replay", "Sample", "align", "replay"]

#: ``kAllocAlignment`` (``core/framework/allocator.h``): memory-pattern block sizes are rounded up to it.
ALIGNMENT = 256


def align(size: int) -> int:
    """``IAllocator::CalcMemSizeForArrayWithAlignment<kAllocAlignment>``: bytes rounded up to 256."""
    return (size + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """One execution of a body.

    ``program``/``plan``: the body as planned (values the kernel provides are sources there, so
    the plan requests nothing for them). ``body`` names the body's session state and ``key`` is
    the memory-pattern key of this execution's feeds; ``pattern`` says whether the body's session
    uses memory patterns at all. ``kept``: output values of this frame that stay held after it
    (Loop fetches); ``dropped_at``: per kept value, how many frames later the kernel releases it,
    before that frame starts (None: held until the kernel ends). ``nested``: body step index -> the kernel that
    step runs.
    """

    label: str  # prefix of this frame's sample labels, e.g. "Loop_1/body/"
    program: Program
    plan: OrtPlan
    body: str
    key: int
    pattern: bool = True
    kept: tuple[int, ...] = ()
    dropped_at: Mapping[int, int | None] = field(default_factory=dict)
    nested: Mapping[int, Kernel] = field(default_factory=dict)
    ops: tuple[str, ...] = ()  # op type of each step (for the timeline)
    delayed: Mapping[int, int] = field(default_factory=dict)  # body output -> enclosing value it is allocated into
    # outputs that are initializers of the body: copied into a buffer of their own when the frame
    # is created (IExecutionFrame init), kept as fetches: (bytes, frames until released or None)
    copies: tuple[tuple[int, int | None], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Kernel:
    """What one control-flow node does when it runs.

    ``held``: bytes of the kernel's own temporaries, requested before its first body and held
    until it ends (Loop's iteration-number and condition scalars, Scan's transposed inputs,
    loop-state buffers and temporary outputs). ``released_before``: frame index -> bytes of those
    temporaries released before that frame starts (Loop's first condition scalar).
    ``upfront``: parent values (outputs of this step) allocated before the bodies run; the rest of
    the step's outputs are allocated by its bodies or after them.
    """

    frames: tuple[Frame, ...]
    held: int = 0
    released_before: Mapping[int, int] = field(default_factory=dict)
    upfront: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    """The arena's requested bytes after one kernel (a profiler node event)."""

    label: str
    bytes: int
    depth: int  # 0: a step of the top program; n: inside n bodies
    op: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """Every sample of run 1 in the profiler's order, and the peak."""

    samples: tuple[Sample, ...]
    peak_bytes: int
    peak_label: str

    @classmethod
    def of(cls, samples: list[Sample]) -> Replay:
        best = max(samples, key=lambda s: s.bytes, default=None)
        return cls(
            samples=tuple(samples),
            peak_bytes=best.bytes if best is not None else 0,
            peak_label=best.label if best is not None else "",
        )


@dataclass(slots=True)
class PatternCache:
    """Memory patterns cached per body session: (body, key) -> (peak bytes, value -> block size)."""

    patterns: dict[tuple[str, int], tuple[int, dict[int, int]]] = field(default_factory=dict)


def replay(
    program: Program, plan: OrtPlan, kernels: Mapping[int, Kernel], *, label: str = "", ops: tuple[str, ...] = ()
) -> Replay:
    """Run 1 of ``program`` (planned as ``plan``) whose steps in ``kernels`` run bodies."""
    samples: list[Sample] = []
    _run_program(program, plan, kernels, ops, base=0, label=label, depth=0, cache=PatternCache(), out=samples)
    return Replay.of(samples)


def _sizes(program: Program, plan: OrtPlan) -> dict[int, int]:
    return {b: program.values[b].size or 0 for b in plan.fresh}


def _run_program(program, plan, kernels, ops, *, base, label, depth, cache, out, placed=frozenset(), block=0) -> None:  # type: ignore[no-untyped-def]
    """Samples of one frame over ``plan``: each fresh buffer is requested at its step and held
    to its release, except those in ``placed`` (in the frame's pattern block of ``block`` bytes,
    or provided by an enclosing kernel)."""
    sizes = _sizes(program, plan)
    requested = [(b, start, end) for b, start, end in zip(plan.fresh, plan.alloc_step, plan.free_step) if b not in placed]
    for s, step in enumerate(program.steps):
        held = block + sum(sizes[b] for b, start, end in requested if start <= s and (end is None or end >= s))
        op = ops[s] if s < len(ops) else ""
        out.append(Sample(label=label + step.label, bytes=base + held, depth=depth, op=op))
        kernel = kernels.get(s)
        if kernel is None:
            continue
        before = block + sum(sizes[b] for b, start, end in requested if start < s and (end is None or end >= s))
        upfront = sum(sizes[v] for v in kernel.upfront if v in sizes and v not in placed and _alloc_at(plan, v) == s)
        _run_kernel(kernel, base=base + before + upfront, depth=depth + 1, cache=cache, out=out, placed=placed)


def _alloc_at(plan: OrtPlan, value: int) -> int | None:
    for b, start in zip(plan.fresh, plan.alloc_step):
        if b == value:
            return start
    return None


def _run_kernel(kernel: Kernel, *, base: int, depth: int, cache: PatternCache, out: list[Sample], placed=frozenset()) -> None:  # type: ignore[no-untyped-def]
    """The samples of one control-flow node's bodies, on top of ``base`` held by its frames;
    ``placed``: values of the enclosing frame that need no request of their own."""
    held = kernel.held
    kept: list[tuple[int, int | None]] = []  # (bytes, frame index before which it is released)
    for i, frame in enumerate(kernel.frames):
        held -= kernel.released_before.get(i, 0)
        kept = [(b, until) for b, until in kept if until is None or until > i]
        outer = base + held + sum(b for b, _ in kept)
        into = frozenset(v for v, parent in frame.delayed.items() if parent in placed)
        copied = sum(size for size, _ in frame.copies)
        frame_out = _run_frame(frame, base=outer + copied, depth=depth, cache=cache, out=out, into=into)
        kept.extend((size, None if after is None else i + after) for size, after in frame.copies)
        for v in frame.kept:
            after = frame.dropped_at.get(v)
            kept.append((frame_out.get(v, 0), None if after is None else i + after))


def _run_frame(frame: Frame, *, base: int, depth: int, cache: PatternCache, out: list[Sample], into=frozenset()) -> dict[int, int]:  # type: ignore[no-untyped-def]
    """Samples of one body execution; returns the bytes of its kept output buffers. ``into``:
    outputs allocated into a buffer the enclosing frame already holds (no request)."""
    program, plan = frame.program, frame.plan
    sizes = _sizes(program, plan)
    outputs = {b for b in plan.fresh if program.values[b].output}
    cached = cache.patterns.get((frame.body, frame.key)) if frame.pattern else None
    if cached is None:
        if frame.pattern:
            cache.patterns[(frame.body, frame.key)] = _trace_pattern(plan, sizes, outputs)
        placed, block = frozenset(into), 0
    else:  # ExecutionFrame with a cached pattern: one block for the planned values of matching size
        block, blocks = cached
        placed = frozenset(b for b in plan.fresh if b not in outputs and blocks.get(b) == align(sizes[b])) | into
    _run_program(program, plan, frame.nested, frame.ops, base=base, label=frame.label, depth=depth, cache=cache, out=out, placed=placed, block=block)
    return {v: sizes[plan.buffer_of[v]] for v in frame.kept if plan.buffer_of[v] in sizes and plan.buffer_of[v] not in placed}


def _trace_pattern(plan: OrtPlan, sizes: Mapping[int, int], outputs: set[int]) -> tuple[int, dict[int, int]]:
    """MemPatternPlanner over one execution: best-fit offsets of the planned (non-output) buffers
    in request order, freed after their release step; returns (peak, buffer -> block size)."""
    allocs_at: dict[int, list[int]] = {}
    frees_at: dict[int, list[int]] = {}
    for b, start, end in zip(plan.fresh, plan.alloc_step, plan.free_step):
        if b in outputs:
            continue
        allocs_at.setdefault(start, []).append(b)
        if end is not None:
            frees_at.setdefault(end, []).append(b)
    planner = _BestFit()
    blocks: dict[int, int] = {}
    for s in range(len(plan.in_use)):
        for b in allocs_at.get(s, ()):
            blocks[b] = align(sizes[b])
            planner.allocate(b, blocks[b])
        for b in frees_at.get(s, ()):
            planner.free(b)
    return planner.peak, blocks


class _BestFit:
    """``MemPatternPlanner::TraceAllocation/TraceFree`` (``core/framework/mem_pattern_planner.h``)."""

    def __init__(self) -> None:
        self.blocks: list[tuple[int, int, int]] = []  # (offset, size, value), sorted by offset
        self.peak = 0

    def allocate(self, value: int, size: int) -> None:
        if size == 0:
            return
        best_offset = self.blocks[-1][0] + self.blocks[-1][1] if self.blocks else 0
        best_index = len(self.blocks)
        waste: int | None = None
        current = 0
        for index, (offset, length, _) in enumerate(self.blocks):
            if offset >= current:
                gap = offset - current
                if gap >= size and (waste is None or gap - size < waste):
                    best_index, waste, best_offset = index, gap - size, current
            current = offset + length
        self.peak = max(self.peak, best_offset + size)
        self.blocks.insert(best_index, (best_offset, size, value))

    def free(self, value: int) -> None:
        for index, (_, _, held) in enumerate(self.blocks):
            if held == value:
                del self.blocks[index]
                return
