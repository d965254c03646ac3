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
outputs while run *k+1* runs holds them too.

"Exact, or says why": ``approximations`` names every reason a figure may differ from the
measurement (an activation figure that is not exact, control flow not replayed through the arena,
a kernel whose pre-packing or scratch is not modelled, a thread count the scratch rules do not
cover, …); ``exact`` is True only when there is none.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmem.analysis.result import Analysis, Approximation
from graphmem.ort.held.options import SessionOptions

__all__ = ["ArenaFigures", "Region", "arena_figures", "ARENA_APPROXIMATION_KINDS"]

#: Why an arena figure is not exact (``Approximation.kind``): the activation figures it replays are
#: not exact; a control-flow body not replayed through the arena; a kernel whose pre-packed
#: weights are not modelled; a kernel whose scratch is not modelled; a thread count other than
#: one where a kernel's scratch depends on it; a provider other than CPU.
ARENA_APPROXIMATION_KINDS = (
    "activations_not_exact",
    "control_flow_not_replayed",
    "prepack_not_modelled",
    "scratch_not_modelled",
    "threads_not_modelled",
    "provider_not_modelled",
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


@dataclass(frozen=True, slots=True, kw_only=True)
class ArenaFigures:
    """The CPU arena's ``mem_arena_held`` through a session's life (see the module doc).

    ``held_after_run[k]`` is what it holds after run *k* (``[0]``: before run 1);
    ``reserved_bytes``: the part of every figure taken with ``Reserve``, outside the regions
    (small initializers, pre-packed weights — weights the session holds, not activations);
    ``pattern_bytes``: the memory pattern's block from run 2 on (0 when there is none)."""

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

    @property
    def exact(self) -> bool:
        """True only when no approximation applies."""
        return not self.approximations


def arena_figures(analysis: Analysis, options: SessionOptions | None = None, *, runs: int = 5) -> ArenaFigures:
    """The CPU arena's held bytes for ``analysis`` under ``options`` (onnxruntime's defaults when
    None, one intra-op thread), replaying session creation and ``runs`` runs (at least 2).

    ``options.graph_optimization_level`` must be the level ``analysis`` was made at
    (``analysis.model.graph_opt``). Raises :class:`graphmem.errors.UsageError` otherwise, or when
    ``runs`` < 2.
    """
    raise NotImplementedError("interface only; the replay lands in the next commits")
