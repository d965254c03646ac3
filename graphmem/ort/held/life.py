"""A session's life replayed through its CPU arena: creation, run 1, the memory pattern's runs.

The requests come from the planner's emulation (:func:`graphmem.ort.allocation.plan_ort`: which
buffer each step requests and when it is released), the kernels' scratch
(:mod:`graphmem.ort.scratch`) and session creation (:mod:`graphmem.ort.held.prepack`); the arena
is :class:`graphmem.ort.arena.BfcArena` configured by the session options. Rules, from
``core/framework/execution_frame.cc`` and ``session_state.cc`` unless said:

* run 1 (no pattern cached): per step, the kernel's scratch requested before its outputs, each
  fresh buffer one request of exactly its bytes, the scratch requested after them, the scratch
  freed, then the buffers whose last reader the step was are released; graph outputs and
  buffers nothing releases are freed when the run ends (the frame, then the caller's outputs);
* with ``enable_mem_pattern`` (and every graph input with a shape, ``ResolveMemoryPatternFlag``),
  run 1 traces each buffer it allocates that is not a graph output (``TraceAllocate``, its size
  rounded up to 256, ``kAllocAlignment``) and each release (``TraceFree``); the pattern
  (:class:`graphmem.ort.held.pattern.MemPatternPlanner`) is cached for the input shapes;
* from run 2 on, the frame first allocates the pattern's block in one request (before the first
  node), then each traced buffer whose size matches its block lives there; graph outputs, and a
  buffer whose size differs, are requested from the arena as in run 1; scratch too. The block is
  freed when the run's frame ends;
* the arena never returns a region while the session lives, so what it holds only grows; a run
  that adds no region leaves it as it started, and every later run repeats it.

The profiler samples each node after its kernel ran: the held bytes of run *k*'s events are what
the arena holds after that step; before run 1's first node it holds what creation left.
Like every planner here it knows nothing of ONNX.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from graphmem.ort.allocation import OrtPlan
from graphmem.ort.arena import BfcArena, Chunk, Reserved
from graphmem.ort.held.options import SessionOptions
from graphmem.ort.held.pattern import MemoryPattern, MemPatternPlanner
from graphmem.ort.held.prepack import ALLOC_ALIGNMENT, CreationEvent
from graphmem.ort.scratch_common import KernelScratch
from graphmem.planner.program import Program

__all__ = ["Life", "NewRegion", "replay_life", "replay_lifetimes", "MAX_RUNS"]

#: Runs replayed at most while looking for the one after which the arena stops growing.
MAX_RUNS = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class NewRegion:
    """A region the arena added: when (``run`` 0 is creation; ``step`` -1 is before the run's
    first node) and the request (rounded) that made it."""

    size: int
    run: int
    step: int
    request: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Life:
    """What the arena held: ``held_after_run[k]`` after run *k* (``[0]``: after creation), for
    every run replayed until one added nothing (``steady_after_run`` is the last that grew it, 1
    when no later run did); ``run_held[k]`` per step of run *k+1* (the profiler's
    ``mem_arena_held`` of each node event); ``reserved_bytes``: held outside the regions after
    creation; ``pattern``: the memory pattern run 1 traced (None without)."""

    held_after_run: tuple[int, ...]
    steady_after_run: int
    run_held: tuple[tuple[int, ...], ...]
    reserved_bytes: int
    regions: tuple[NewRegion, ...]
    pattern: MemoryPattern | None
    stable: bool  # a run added nothing within MAX_RUNS
    # per region (``regions``' order): bytes of its pages some request covered (BfcArena.touched)
    touched: tuple[int, ...] = ()


def arena_for(options: SessionOptions) -> BfcArena:
    """The CPU arena ``options`` configure (``OrtArenaCfg``, see :mod:`graphmem.ort.held.options`)."""
    return BfcArena(
        strategy=options.arena_extend_strategy,
        memory_limit=options.memory_limit,
        initial_region=options.initial_chunk_size_bytes,
        max_dead_bytes=options.max_dead_bytes_per_chunk,
        initial_growth=options.initial_growth_chunk_size_bytes,
        max_power_of_two_extend=options.max_power_of_two_extend_bytes,
    )


def replay_life(
    program: Program,
    plan: OrtPlan,
    scratch: Sequence[KernelScratch],
    creation: Sequence[CreationEvent],
    options: SessionOptions,
    *,
    pattern_allowed: bool = True,
    untraced: frozenset[int] = frozenset(),
    runs: int = 5,
) -> Life:
    """Replay creation and runs (at least ``runs``, more until the arena stops growing, at most
    :data:`MAX_RUNS`); see the module doc. ``pattern_allowed``: False when onnxruntime turns the
    memory pattern off whatever the option says (a graph input without a shape); ``untraced``:
    values the frame allocates without tracing them (string tensors, ``TraceAllocate``; values
    that are not tensors)."""
    arena = arena_for(options)
    seen = _RegionLog(arena)
    _replay_creation(arena, creation)
    seen.note(run=0, step=-1)
    held = [arena.held]
    reserved = arena.reserved_bytes
    tracing = options.enable_mem_pattern and pattern_allowed
    run_held: list[tuple[int, ...]] = []
    pattern: MemoryPattern | None = None
    steady, grew, k = 1, True, 0
    while k < MAX_RUNS and (k < max(runs, 2) or grew):
        k += 1
        before = len(arena.regions)
        planner = MemPatternPlanner() if k == 1 and tracing else None
        run_held.append(_run(arena, seen, program, plan, scratch, run=k, planner=planner, pattern=pattern,
                             untraced=untraced))
        if planner is not None:
            pattern = planner.pattern()
        held.append(arena.held)
        grew = len(arena.regions) > before
        if grew and k > 1:
            steady = k
    return Life(
        held_after_run=tuple(held),
        steady_after_run=steady,
        run_held=tuple(run_held),
        reserved_bytes=reserved,
        regions=seen.regions(),
        pattern=pattern,
        stable=not grew,
        touched=tuple(arena.touched(r) for r in arena.regions),
    )


def replay_lifetimes(
    lifetimes: Sequence[tuple[int, int, int | None]],
    samples: int,
    creation: Sequence[CreationEvent],
    options: SessionOptions,
    *,
    runs: int = 5,
) -> Life:
    """An estimate for a run known only as request lifetimes — (bytes, first sample, last sample
    or None for the run's end), samples in completion order, as
    :class:`graphmem.ort.controlflow.Replay` keeps them for a graph with control flow: per sample,
    its requests in order, then the sample, then the releases after it. Kernel scratch is not in
    the lifetimes, and every run repeats run 1 (the top graph's memory pattern is not traced):
    the caller says so."""
    arena = arena_for(options)
    seen = _RegionLog(arena)
    _replay_creation(arena, creation)
    seen.note(run=0, step=-1)
    held, run_held = [arena.held], []
    reserved = arena.reserved_bytes
    taking: dict[int, list[int]] = {}
    giving: dict[int, list[int]] = {}
    for i, (_, first, last) in enumerate(lifetimes):
        taking.setdefault(first, []).append(i)
        giving.setdefault(samples - 1 if last is None else last, []).append(i)
    steady, grew, k = 1, True, 0
    while k < MAX_RUNS and (k < max(runs, 2) or grew):
        k += 1
        before = len(arena.regions)
        chunks: dict[int, Chunk | None] = {}
        steps = []
        for s in range(samples):
            for i in taking.get(s, ()):
                chunks[i] = arena.alloc(lifetimes[i][0])
            seen.note(run=k, step=s)
            steps.append(arena.held)
            for i in giving.get(s, ()):
                arena.free(chunks.pop(i, None))
        for c in chunks.values():
            arena.free(c)
        run_held.append(tuple(steps))
        held.append(arena.held)
        grew = len(arena.regions) > before
        if grew and k > 1:
            steady = k
    return Life(held_after_run=tuple(held), steady_after_run=steady, run_held=tuple(run_held), reserved_bytes=reserved,
                regions=seen.regions(), pattern=None, stable=not grew,
                touched=tuple(arena.touched(r) for r in arena.regions))


def _replay_creation(arena: BfcArena, events: Sequence[CreationEvent]) -> None:
    taken: dict[str, Chunk | Reserved | None] = {}
    for e in events:
        if e.kind == "reserve":
            taken[e.key] = arena.reserve(e.nbytes)
        elif e.kind == "alloc":
            taken[e.key] = arena.alloc(e.nbytes)
        else:
            arena.free(taken.pop(e.key, None))


def _run(
    arena: BfcArena,
    seen: _RegionLog,
    program: Program,
    plan: OrtPlan,
    scratch: Sequence[KernelScratch],
    *,
    run: int,
    planner: MemPatternPlanner | None,
    pattern: MemoryPattern | None,
    untraced: frozenset[int] = frozenset(),
) -> tuple[int, ...]:
    """One run; the arena's held bytes after each step."""
    requests: dict[int, list[int]] = {}
    for value, step in zip(plan.fresh, plan.alloc_step):
        requests.setdefault(step, []).append(value)
    releases: dict[int, list[int]] = {}
    for value, end in zip(plan.fresh, plan.free_step):
        if end is not None:
            releases.setdefault(end, []).append(value)
    block = None
    if pattern is not None and pattern.peak > 0:
        block = arena.alloc(pattern.peak)
        seen.note(run=run, step=-1)
    chunks: dict[int, Chunk | None] = {}
    out: list[int] = []
    for s in range(len(program.steps)):
        ks = scratch[s] if s < len(scratch) else KernelScratch()
        temp = [arena.alloc(n) for n in ks.before]
        seen.note(run=run, step=s)
        for v in requests.get(s, ()):
            size = program.values[v].size or 0
            traced = None if v in untraced else _traced(program, plan, v)
            if traced is not None and pattern is not None and pattern.blocks.get(traced, (0, -1))[1] == _aligned(size):
                continue  # placed in the pattern's block
            chunks[v] = arena.alloc(size)
            seen.note(run=run, step=s)
            if planner is not None and traced is not None:
                planner.trace_allocation(traced, _aligned(size))
        temp += [arena.alloc(n) for n in ks.after]
        seen.note(run=run, step=s)
        for c in reversed(temp):
            arena.free(c)
        out.append(arena.held)
        for v in releases.get(s, ()):
            arena.free(chunks.pop(v, None))
            traced = None if v in untraced else _traced(program, plan, v)
            if planner is not None and traced is not None:
                planner.trace_free(traced)
    for c in chunks.values():
        arena.free(c)
    arena.free(block)
    return tuple(out)


def _traced(program: Program, plan: OrtPlan, v: int) -> int | None:
    """The value index a fresh request of ``v`` is traced under (its buffer's: a value given a
    request of its own in a released buffer re-allocates that buffer, ``execution_frame.cc``
    ``AllocateReusedOrtValueIfNotAllocatedHelper``); None for a graph output (kAllocateOutput)
    or a value its kernel allocates itself (a sequence's element)."""
    value = program.values[v]
    if value.output or value.dynamic:
        return None
    return plan.buffer_of[v]


def _aligned(size: int) -> int:
    return -(-size // ALLOC_ALIGNMENT) * ALLOC_ALIGNMENT


class _RegionLog:
    """Which regions the arena added (it only appends them here: nothing shrinks), and when."""

    def __init__(self, arena: BfcArena) -> None:
        self._arena = arena
        self._log: list[NewRegion] = []

    def note(self, *, run: int, step: int) -> None:
        for r in self._arena.regions[len(self._log):]:
            self._log.append(NewRegion(size=r.size, run=run, step=step, request=r.request))

    def regions(self) -> tuple[NewRegion, ...]:
        return tuple(self._log)
