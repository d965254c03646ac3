"""Run 1 of a program whose steps run subgraphs (If, Loop, Scan), as onnxruntime 1.31 runs them.

Nothing here knows ONNX: a control-flow step is described by a :class:`Kernel` (what the node
allocates itself, in which order, and each body execution as a :class:`Frame` over a planned
body :class:`~graphmem.planner.program.Program`). The run is replayed as onnxruntime makes its
requests and releases, one at a time, through the CPU arena (:class:`~graphmem.ort.arena.BfcArena`),
so both figures come out of one replay: the requested bytes the profiler samples after each kernel
and the arena's in-use high-water mark, kernel scratch included. The rules, with the measurements
that confirm them, are in ``docs/pages/controlflow-rules.md``; each is cited where it is applied:

* a body execution is a fresh ExecutionFrame over the body's own plan, on the same arena
  (``core/framework/utils.cc`` ExecuteSubgraph, ``execution_frame.cc``): its values are requested
  when their node runs and released by the body's release plan, whatever is left when the frame
  ends; its samples are the profiler's node events of the body kernels;
* the memory pattern (``execution_frame.cc``, ``session_state.cc`` GetMemoryPatternGroup /
  CalculateMemoryPatternsKey, ``mem_pattern_planner.h``): the first execution of a body with a
  given feed-shape key traces its planned allocations (graph outputs excluded; sizes rounded up
  to ``kAllocAlignment`` = 256, ``core/framework/allocator.h``) with a best-fit offset planner;
  a later execution with a cached key requests one block of the pattern's peak size when its
  frame is created (after copying initializers it returns, IExecutionFrame::Init) and places
  each planned value of the same size in it;
* per kernel (``providers/cpu/controlflow/if.cc``, ``loop.cc``, ``scan_8.cc``, ``scan_9.cc``,
  ``scan_utils.cc``): temporaries and outputs requested before the bodies, in the kernel's order
  (:attr:`Kernel.before`), outputs a body allocates for its node (:attr:`Frame.delayed`), Loop
  fetches kept between iterations (:attr:`Frame.kept`), the node's remaining outputs requested
  after its bodies, then everything the kernel held released;
* kernel scratch (:mod:`graphmem.ort.scratch`) per step, requested around the step's outputs and
  released before its sample, as in :func:`graphmem.ort.scratch.replay_run`.

The node's own sample comes first in the timeline (the profiler's event for it starts before its
bodies' events) and is the figure after the node: everything the kernel held is released before
it is sampled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from graphmem.errors import InvariantError
from graphmem.ort.allocation import OrtPlan
from graphmem.ort.arena import BfcArena, Chunk
from graphmem.planner.program import Program

__all__ = [
    "ALIGNMENT",
    "Frame",
    "Kernel",
    "Life",
    "PatternCache",
    "Replay",
    "Sample",
    "Scratch",
    "Temp",
    "Upfront",
    "align",
    "replay",
]

#: ``kAllocAlignment`` (``core/framework/allocator.h``): memory-pattern block sizes are rounded up to it.
ALIGNMENT = 256

#: One step's kernel scratch: bytes requested before its outputs, and after them.
Scratch = tuple[tuple[int, ...], tuple[int, ...]]
NO_SCRATCH: Scratch = ((), ())


def align(size: int) -> int:
    """``IAllocator::CalcMemSizeForArrayWithAlignment<kAllocAlignment>``: bytes rounded up to 256."""
    return (size + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


@dataclass(frozen=True, slots=True)
class Temp:
    """A temporary of the kernel (temp-space allocator): ``bytes``, held until the kernel ends."""

    bytes: int


@dataclass(frozen=True, slots=True)
class Upfront:
    """An output of the control-flow step (a value of the parent program) allocated before its bodies."""

    value: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """One execution of a body.

    ``program``/``plan``: the body as planned (values the kernel provides are sources there, so
    the plan requests nothing for them). ``body`` names the body's session state and ``key`` is
    the memory-pattern key of this execution's feeds; ``pattern`` says whether the body's session
    uses memory patterns at all. ``kept``: output values of this frame that stay held after it
    (Loop fetches); ``dropped_at``: per kept value, how many frames later the kernel releases it,
    before that frame starts (None: held until the kernel ends). ``nested``: body step index -> the
    kernel that step runs. ``scratch``: each step's kernel scratch (none when empty).
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
    # body output -> the enclosing step's output it is allocated as (If's delayed outputs, a Scan
    # output allocated by its first iteration): requested by the body, released by the enclosing plan
    delayed: Mapping[int, int] = field(default_factory=dict)
    # outputs that are initializers of the body: copied into a buffer of their own when the frame
    # is created (IExecutionFrame init), kept as fetches: (bytes, frames until released or None)
    copies: tuple[tuple[int, int | None], ...] = ()
    scratch: tuple[Scratch, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Kernel:
    """What one control-flow node does when it runs.

    ``before``: in request order, the kernel's own temporaries (:class:`Temp`: Loop's
    iteration-number and condition scalars, Scan's transposed inputs, loop-state buffers and
    temporary outputs), held until it ends, and the step's outputs allocated before the bodies
    (:class:`Upfront`). ``released_before``: frame index -> positions (among the temporaries) of
    those released before that frame starts (Loop's first condition scalar). The step's other
    outputs are allocated by its bodies (:attr:`Frame.delayed`) or after them.
    """

    frames: tuple[Frame, ...]
    before: tuple[Temp | Upfront, ...] = ()
    released_before: Mapping[int, tuple[int, ...]] = field(default_factory=dict)

    @property
    def held(self) -> int:
        """Bytes of the kernel's temporaries."""
        return sum(t.bytes for t in self.before if isinstance(t, Temp))

    @property
    def upfront(self) -> tuple[int, ...]:
        """Parent values allocated before the bodies."""
        return tuple(t.value for t in self.before if isinstance(t, Upfront))


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    """The arena after one kernel (a profiler node event): requested bytes (tensors), and the
    arena's in-use bytes (chunks) at the kernel's highest point, its scratch included."""

    label: str
    bytes: int
    depth: int  # 0: a step of the top program; n: inside n bodies
    op: str = ""
    in_use: int = 0
    scratch: int = 0  # kernel scratch the step requested (and released before its sample)


@dataclass(frozen=True, slots=True, kw_only=True)
class Life:
    """One request of the run: what it holds, its bytes, and the samples it is held at, ``first``
    to ``last`` (None: to the end) in completion order (:attr:`Replay.order`)."""

    name: str
    bytes: int
    first: int
    last: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """Every sample of run 1 in the profiler's order, the requested peak, and the arena's in-use
    high-water mark over the run (chunk bytes above what it held before run 1)."""

    samples: tuple[Sample, ...]
    peak_bytes: int
    peak_label: str
    in_use_peak_bytes: int = 0
    # the samples in completion order (a control-flow node's own sample after its bodies'), as
    # indices into ``samples``, and every request of the run (kernel scratch aside) over it
    order: tuple[int, ...] = ()
    lives: tuple[Life, ...] = ()

    @classmethod
    def of(
        cls, samples: list[Sample], in_use_peak: int = 0, order: Sequence[int] = (), lives: Sequence[Life] = ()
    ) -> Replay:
        best = max(samples, key=lambda s: s.bytes, default=None)
        return cls(
            samples=tuple(samples),
            peak_bytes=best.bytes if best is not None else 0,
            peak_label=best.label if best is not None else "",
            in_use_peak_bytes=in_use_peak,
            order=tuple(order) or tuple(range(len(samples))),
            lives=tuple(lives),
        )


@dataclass(slots=True)
class PatternCache:
    """Memory patterns cached per body session: (body, key) -> (peak bytes, value -> block size)."""

    patterns: dict[tuple[str, int], tuple[int, dict[int, int]]] = field(default_factory=dict)


def replay(
    program: Program,
    plan: OrtPlan,
    kernels: Mapping[int, Kernel],
    *,
    label: str = "",
    ops: tuple[str, ...] = (),
    scratch: Sequence[Scratch] = (),
    prepacked: Sequence[tuple[int, bool]] = (),
) -> Replay:
    """Run 1 of ``program`` (planned as ``plan``) whose steps in ``kernels`` run bodies.

    ``scratch``: each top step's kernel scratch; ``prepacked``: the (bytes, kept) requests kernels
    make in the arena at session creation (the in-use figures are above the kept ones)."""
    memory = _Memory()
    for size, kept in prepacked:
        chunk = memory.arena.alloc(size)
        if not kept:
            memory.arena.free(chunk)
    memory.base = memory.arena.in_use
    memory.arena.high = memory.base
    run = _Run(program, plan, kernels, ops, tuple(scratch), label=label, depth=0)
    run.execute(memory, PatternCache())
    lives = [Life(name=n, bytes=b, first=f, last=last) for n, b, f, last in memory.lives]
    samples = [s for s in memory.samples if s is not None]
    if len(samples) < len(memory.samples):  # a control-flow node fills its placeholder when it completes
        raise InvariantError(f"{label or 'the graph'}: a control-flow node's sample was never completed")
    return Replay.of(samples, memory.arena.high - memory.base, memory.order, lives)


class _Held:
    """A request held: its bytes, its arena chunk, its entry in ``_Memory.lives`` (-1: none)."""

    __slots__ = ("size", "chunk", "life")

    def __init__(self, size: int, chunk: Chunk | None, life: int) -> None:
        self.size, self.chunk, self.life = size, chunk, life


Held = _Held


class _Memory:
    """The requests and releases of run 1: requested bytes, the arena's chunks, the samples."""

    __slots__ = ("arena", "requested", "base", "samples", "step_high", "order", "lives")

    def __init__(self) -> None:
        self.arena = BfcArena()
        self.requested = 0
        self.base = 0
        self.samples: list[Sample | None] = []
        self.step_high = 0  # arena in-use at its highest since the current step began
        self.order: list[int] = []  # sample indices in completion order
        self.lives: list[list] = []  # [name, bytes, first, last] per named request

    def take(self, size: int, name: str | None = None) -> _Held:
        """Request ``size`` bytes; ``name``: what it holds (kernel scratch has none: not a buffer)."""
        self.requested += size
        chunk = self.arena.alloc(size)
        self.step_high = max(self.step_high, self.arena.in_use)
        life = -1
        if name is not None:
            life = len(self.lives)
            self.lives.append([name, size, len(self.order), None])
        return _Held(size, chunk, life)

    def give(self, held: _Held | None) -> None:
        if held is None:
            return
        self.requested -= held.size
        self.arena.free(held.chunk)
        if held.life >= 0:
            self.lives[held.life][3] = len(self.order) - 1

    def begin_step(self) -> None:
        self.step_high = self.arena.in_use

    def complete(self, at: int) -> None:
        """Sample ``at`` is complete: the next in completion order."""
        self.order.append(at)


class _Run:
    """One frame over ``plan``: requests each fresh buffer at its step (except those in
    ``placed``: in the frame's pattern block or provided by the enclosing kernel), releases it
    after its release step, runs the kernels of control-flow steps."""

    def __init__(
        self, program, plan, kernels, ops, scratch, *, label, depth, placed=frozenset(), delayed=None, outer=None
    ):
        # ``outer``: the enclosing frame (whose step outputs ``delayed`` values are allocated as)
        self.program, self.plan, self.kernels, self.ops, self.scratch = program, plan, kernels, ops, scratch
        self.label, self.depth, self.placed = label, depth, placed
        self.delayed: Mapping[int, int] = delayed or {}
        self.outer: _Run | None = outer
        self.handles: dict[int, Held] = {}
        self.requests: dict[int, list[int]] = {}
        self.releases: dict[int, list[int]] = {}
        for b, start, end in zip(plan.fresh, plan.alloc_step, plan.free_step):
            self.requests.setdefault(start, []).append(b)
            if end is not None:
                self.releases.setdefault(end, []).append(b)

    def size(self, b: int) -> int:
        return self.program.values[b].size or 0

    def request(self, memory: _Memory, b: int) -> None:
        """The buffer of fresh value ``b``, unless placed or already allocated for it."""
        if b in self.placed or b in self.handles:
            return
        parent = self.delayed.get(b)
        if parent is not None and self.outer is not None:  # allocated as the enclosing step's output, its size
            if parent in self.outer.handles:
                return  # already (a nested kernel allocated it upfront)
            outer = self.outer.program.values[parent]
            size = outer.size if outer.size is not None else self.size(b)
            self.outer.handles[parent] = memory.take(size, self.outer.label + outer.name)
        else:
            self.handles[b] = memory.take(self.size(b), self.label + self.program.values[b].name)

    def execute(self, memory: _Memory, cache: PatternCache) -> None:
        for s, step in enumerate(self.program.steps):
            memory.begin_step()
            op = self.ops[s] if s < len(self.ops) else ""
            kernel = self.kernels.get(s)
            if kernel is None:
                before, after = self.scratch[s] if s < len(self.scratch) else NO_SCRATCH
                temps = [memory.take(n) for n in before]
                for b in self.requests.get(s, ()):
                    self.request(memory, b)
                temps += [memory.take(n) for n in after]
                high = memory.step_high
                for t in reversed(temps):
                    memory.give(t)
                memory.complete(len(memory.samples))
                memory.samples.append(
                    Sample(
                        label=self.label + step.label,
                        bytes=memory.requested,
                        depth=self.depth,
                        op=op,
                        in_use=high - memory.base,
                        scratch=sum(before) + sum(after),
                    )
                )
            else:
                at = len(memory.samples)
                memory.samples.append(None)  # the node's event starts before its bodies' events
                held = _run_kernel(kernel, self, s, memory, cache)
                memory.begin_step()  # the node's own work after its bodies: its outputs, then releases
                for b in self.requests.get(s, ()):  # the node's outputs its bodies did not allocate
                    self.request(memory, b)
                high = memory.step_high
                for h in held:
                    memory.give(h)
                memory.complete(at)
                memory.samples[at] = Sample(
                    label=self.label + step.label, bytes=memory.requested, depth=self.depth, op=op,
                    in_use=high - memory.base,
                )
            for b in self.releases.get(s, ()):
                memory.give(self.handles.pop(b, None))


def _run_kernel(kernel: Kernel, parent: _Run, step: int, memory: _Memory, cache: PatternCache) -> list[Held]:
    """Run one control-flow node's bodies inside step ``step`` of ``parent``; returns what the
    kernel still holds (released when it ends, after its remaining outputs are allocated)."""
    here = set(parent.requests.get(step, ()))
    temps: list[Held | None] = []
    name = f"{parent.label}{parent.program.steps[step].label} (kernel temporary)"
    for item in kernel.before:
        if isinstance(item, Temp):
            temps.append(memory.take(item.bytes, name))
        elif item.value in here:
            parent.request(memory, item.value)
    kept: list[tuple[Held, int | None]] = []  # (buffer, frame index before which it is released)
    for i, frame in enumerate(kernel.frames):
        for t in kernel.released_before.get(i, ()):
            memory.give(temps[t])
            temps[t] = None
        for h, until in kept:
            if until is not None and until <= i:
                memory.give(h)
        kept = [(h, until) for h, until in kept if until is None or until > i]
        for h, after in _run_frame(frame, parent, memory, cache, depth=parent.depth + 1):
            kept.append((h, None if after is None else i + after))
    return [t for t in temps if t is not None] + [h for h, _ in kept]


def _run_frame(
    frame: Frame, parent: _Run, memory: _Memory, cache: PatternCache, *, depth: int
) -> list[tuple[Held, int | None]]:
    """One body execution; returns the buffers the kernel keeps after it, each with the number of
    frames after which it is released (None: when the kernel ends)."""
    program, plan = frame.program, frame.plan
    sizes = {b: program.values[b].size or 0 for b in plan.fresh}
    # graph outputs and what kernels allocate while they run (sequence elements) are not traced
    outputs = {b for b in plan.fresh if program.values[b].output or program.values[b].dynamic}
    # outputs allocated into a buffer the enclosing frame already holds (no request)
    into = frozenset(v for v, p in frame.delayed.items() if p in parent.placed)
    cached = cache.patterns.get((frame.body, frame.key)) if frame.pattern else None
    if cached is None:
        if frame.pattern:
            cache.patterns[(frame.body, frame.key)] = _trace_pattern(plan, sizes, outputs)
        placed, block_size = into, 0
    else:  # ExecutionFrame with a cached pattern: one block for the planned values of matching size
        block_size, blocks = cached
        placed = frozenset(b for b in plan.fresh if b not in outputs and blocks.get(b) == align(sizes[b])) | into
    copies = [
        (memory.take(size, f"{frame.label}(returned initializer, copied)"), after) for size, after in frame.copies
    ]
    block = memory.take(block_size, f"{frame.label}(memory-pattern block)") if block_size else None
    run = _Run(
        program, plan, frame.nested, frame.ops, frame.scratch, label=frame.label, depth=depth,
        placed=placed, delayed=frame.delayed, outer=parent,
    )
    run.execute(memory, cache)
    kept = list(copies)
    for v in frame.kept:
        b = plan.buffer_of[v]
        h = run.handles.pop(b, None) or run.handles.pop(v, None)
        if h is not None:
            kept.append((h, frame.dropped_at.get(v)))
    for h in run.handles.values():  # the frame ends: what it still holds is released
        memory.give(h)
    memory.give(block)
    return kept


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
