"""What onnxruntime's CPU arena holds through a session's life, for an :class:`Analysis`.

``activations.peak_bytes`` is what run 1 *requests*. The arena (``core/framework/bfc_arena.cc``)
holds more: it grows by regions (doubling, kNextPowerOfTwo), never returns them while the session
lives, and from run 2 on the memory pattern's one block lands in a region of its own. The profiler
reports what it holds as ``mem_arena_held`` (the arena's ``total_allocated_bytes``: its regions
plus the buffers taken with ``Reserve``). :func:`arena_figures` predicts that figure

* before run 1 (``before_run_bytes``): what session creation put there — initializers of at most
  127 bytes, pre-packed weights (:mod:`graphmem.ort.held.prepack`);
* at the end of run 1 (``first_run_bytes``, its maximum over run 1: the arena never shrinks);
* in steady state (``steady_bytes``): after the runs that use the memory pattern, until a run
  adds nothing (``steady_after_run`` says which run that was).

Runs are replayed request by request through :class:`graphmem.ort.arena.BfcArena`, with the
session options given (:class:`graphmem.ort.held.options.SessionOptions`). Between runs the
caller's outputs are released (what ``graphmem verify`` does); a caller that keeps run *k*'s
outputs while run *k+1* runs holds them too. The process is assumed to create the session and
run it: one that frees large buffers in between moves the arena's later regions (glibc's mmap
threshold rises) and can change which of two equal free chunks a request takes
(``docs/pages/held-arena-rules.md``).

"Exact, or says why": ``approximations`` names every reason a figure may differ from the
measurement (an activation figure that is not exact, control flow not replayed through the arena,
a kernel whose pre-packing or scratch is not modelled, a thread count the scratch rules do not
cover, …); ``exact`` is True only when there is none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import onnx

from graphmem.analysis.result import Analysis, Approximation
from graphmem.errors import UsageError
from graphmem.model.types import TensorType
from graphmem.ort.held.life import replay_life, replay_lifetimes
from graphmem.ort.held.options import SessionOptions
from graphmem.ort.held.prepack import session_creation
from graphmem.ort.scratch import step_scratch
from graphmem.planner.program import Program

__all__ = ["ArenaFigures", "Region", "arena_figures", "ARENA_APPROXIMATION_KINDS"]

#: Why an arena figure is not exact (``Approximation.kind``): the activation figures it replays are
#: not exact; a control-flow body not replayed through the arena; a kernel whose pre-packed
#: weights are not modelled; a kernel whose scratch is not modelled; a thread count other than
#: one where a kernel's scratch depends on it; an arena still growing after the runs replayed.
ARENA_APPROXIMATION_KINDS = (
    "activations_not_exact",
    "control_flow_not_replayed",
    "prepack_not_modelled",
    "scratch_not_modelled",
    "threads_not_modelled",
    "not_steady",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Region:
    """One region the arena took from the system allocator (``BFCArena::Extend``): its size, and
    when: ``run`` 0 is session creation, *k* is run *k*; ``step`` is the execution step whose
    request extended the arena (-1: before the run's first node, the memory pattern's block);
    ``request`` is that request's bytes (rounded to 256)."""

    size: int
    run: int
    step: int
    request: int
    touched: int = 0  # bytes of its pages a request covered over the replayed runs (resident once written)


@dataclass(frozen=True, slots=True, kw_only=True)
class ArenaFigures:
    """The CPU arena's ``mem_arena_held`` through a session's life (see the module doc).

    ``held_after_run[k]`` is what it holds after run *k* (``[0]``: before run 1);
    ``first_run_steps``: what it holds after each step of run 1 (the profiler's node events);
    ``reserved_bytes``: the part of every figure taken with ``Reserve``, outside the regions
    (small initializers, pre-packed weights — weights the session holds, not activations);
    ``pattern_bytes``: the memory pattern's block from run 2 on (0 when there is none);
    ``prepacked_bytes``: the pre-packed weight buffers the kernels keep (reserved or in chunks);
    ``released_weights``: initializers the session frees because every use was pre-packed."""

    options: SessionOptions
    before_run_bytes: int
    first_run_bytes: int
    steady_bytes: int
    steady_after_run: int
    held_after_run: tuple[int, ...]
    reserved_bytes: int
    pattern_bytes: int
    regions: tuple[Region, ...]
    approximations: tuple[Approximation, ...] = ()
    first_run_steps: tuple[int, ...] = ()
    prepacked_bytes: int = 0
    released_weights: tuple[str, ...] = ()

    @property
    def exact(self) -> bool:
        """True only when no approximation applies."""
        return not self.approximations


def arena_figures(analysis: Analysis, options: SessionOptions | None = None, *, runs: int = 5) -> ArenaFigures:
    """The CPU arena's held bytes for ``analysis`` under ``options`` (onnxruntime's defaults when
    None, one intra-op thread), replaying session creation and at least ``runs`` runs (>= 2;
    more while the arena still grows, up to :data:`graphmem.ort.held.life.MAX_RUNS`).

    ``options.graph_optimization_level`` must be the level ``analysis`` was made at
    (``analysis.model.graph_opt``). With ``enable_cpu_mem_arena`` off there is no arena: every
    figure is 0 (the session's buffers come and go through the system allocator).
    Raises :class:`graphmem.errors.UsageError` on a level mismatch, ``runs`` < 2, or a CUDA
    analysis (its arena is not emulated here); :class:`graphmem.errors.ArenaLimitError` when
    ``max_mem`` is too small for the session.
    """
    opts = options if options is not None else SessionOptions(intra_op_num_threads=1)
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 2:
        raise UsageError(f"runs must be an int >= 2, got {runs!r}")
    if analysis.activations.provider != "cpu":
        raise UsageError("arena figures emulate the CPU provider's arena; this analysis is for "
                         f"{analysis.activations.provider}")
    if opts.graph_opt != analysis.model.graph_opt:
        raise UsageError(f"session options are for --graph-opt {opts.graph_opt}, the analysis for "
                         f"--graph-opt {analysis.model.graph_opt}")
    if not opts.enable_cpu_mem_arena:
        return ArenaFigures(options=opts, before_run_bytes=0, first_run_bytes=0, steady_bytes=0, steady_after_run=1,
                            held_after_run=(0,) * (runs + 1), reserved_bytes=0, pattern_bytes=0, regions=())
    graph = analysis.graph
    creation = session_creation(graph, disable_prepacking=opts.disable_prepacking, mem_pattern=opts.enable_mem_pattern)
    notes = _approximations(analysis, opts, creation.unmodelled)
    steps = analysis.steps
    if steps is None and analysis.replay is not None:  # control flow: run 1 is many plans
        replay = analysis.replay
        lifetimes = [(life.bytes, life.first, life.last) for life in replay.lives]
        life = replay_lifetimes(lifetimes, len(replay.samples), creation.events, opts, runs=runs)
    elif steps is None:
        raise UsageError("this analysis keeps no per-step plan to replay through the arena")
    else:
        scratch, _ = step_scratch(graph, analysis.order, analysis.types, analysis.values, host=analysis.host)
        life = replay_life(
            steps.program,
            steps.plan,
            scratch,
            creation.events,
            opts,
            pattern_allowed=_pattern_allowed(analysis),
            untraced=_untraced(steps.program, analysis.types),
            runs=runs,
        )
    if not life.stable:
        notes.append(Approximation(kind="not_steady", node="", detail=(
            f"the arena still grew in run {len(life.held_after_run) - 1}: steady state not reached")))
    held = life.held_after_run
    return ArenaFigures(
        options=opts,
        before_run_bytes=held[0],
        first_run_bytes=held[1],
        steady_bytes=held[-1],
        steady_after_run=life.steady_after_run,
        held_after_run=held[: runs + 1],
        reserved_bytes=life.reserved_bytes,
        pattern_bytes=life.pattern.peak if life.pattern is not None else 0,
        regions=tuple(Region(size=r.size, run=r.run, step=r.step, request=r.request, touched=t)
                      for r, t in zip(life.regions, life.touched or (0,) * len(life.regions))),
        approximations=tuple(notes),
        first_run_steps=life.run_held[0] if life.run_held else (),
        prepacked_bytes=creation.kept_packed_bytes,
        released_weights=creation.released,
    )


#: Ops whose scratch depends on the intra-op thread count (MLAS's Conv working buffer is one
#: segment per thread, ``core/mlas/lib/convolve.cpp``; the flash attention tiles of
#: GroupQueryAttention per thread): the scratch rules model one thread.
_THREAD_SCRATCH = frozenset({"Conv", "FusedConv", "NhwcFusedConv", "GroupQueryAttention"})


def _approximations(
    analysis: Analysis, opts: SessionOptions, unmodelled_prepack: tuple[str, ...]
) -> list[Approximation]:
    out = [
        Approximation(kind="activations_not_exact", node=a.node, detail=f"{a.kind}: {a.detail}")
        for a in analysis.activations.approximations
        if a.kind != "scratch_not_modelled"
    ]
    out += [
        Approximation(kind="scratch_not_modelled", node="", detail=f"{op}: kernel scratch counted 0 in the arena")
        for op in analysis.activations.scratch_unmodelled
    ]
    out += [
        Approximation(kind="prepack_not_modelled", node=n, detail="its pre-packed weights are not in the figures")
        for n in unmodelled_prepack
    ]
    if analysis.steps is None:
        out.append(Approximation(kind="control_flow_not_replayed", node="", detail=(
            "with control flow, run 1 is replayed from its requests' lifetimes without kernel scratch, and "
            "later runs repeat it without the memory pattern")))
    if opts.intra_op_num_threads != 1:
        ops = sorted({analysis.graph.node(n).op_type for n in analysis.order} & _THREAD_SCRATCH)
        out += [
            Approximation(kind="threads_not_modelled", node="", detail=(
                f"{op}: its scratch is modelled for one intra-op thread, not {opts.intra_op_num_threads}"))
            for op in ops
        ]
    return out


def _untraced(program: Program, types: Mapping[str, TensorType]) -> frozenset[int]:
    """Values the frame allocates without tracing them in the memory pattern: string tensors
    (``ExecutionFrame::AllocateMLValueTensorSelfOwnBufferHelper``) and values that are not tensors."""
    out = set()
    for i, v in enumerate(program.values):
        t = types.get(v.name)
        if t is None or t.kind != "tensor" or t.dtype == onnx.TensorProto.STRING:
            out.add(i)
    return frozenset(out)


def _pattern_allowed(analysis: Analysis) -> bool:
    """``SessionState::ResolveMemoryPatternFlag``: the pattern is off when a graph input has no
    shape at all (``NodeArg::HasTensorOrScalarShape``)."""
    return all(t is not None and t.shape is not None for t in analysis.graph.model.inputs.values())
