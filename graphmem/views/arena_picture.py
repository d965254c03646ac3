"""Where the memory a CPU session holds comes from, step by step: the arena's regions over run 1
and over the steady state, beside the bytes run 1 requests (``peak --plot`` and ``report`` draw it).

The arena (:class:`graphmem.analysis.held.ArenaFigures`) holds what session creation reserved
(small initializers, pre-packed weights: outside its regions) plus its regions, each taken from
the system allocator when a request found no free chunk and never returned. A region is known by
when it came (``run`` 0: creation; *k*: run *k*, at ``step``, -1 before the first node: the memory
pattern's block) and the request that made it, so what the arena holds after any step is the
reserved bytes plus the regions taken so far. The picture lays out two runs side by side: run 1
(steps ``0..n-1``) and the steady state (steps ``n..2n-1``: the regions every later run added,
at the step they came, by the last run that grew the arena). The requested curve is run 1's
(:attr:`graphmem.analysis.result.ActivationInfo.timeline`) on top of the reserved bytes: the
run's buffers live in the regions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ArenaPicture", "RegionSpan", "arena_picture"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RegionSpan:
    """One region in the two-run layout: held from x ``start`` (a step of the layout) to its end;
    ``size``, when it came (``run``, ``step``) and the request that made it (``request``)."""

    start: int
    size: int
    run: int
    step: int
    request: int

    @property
    def label(self) -> str:
        when = "session creation" if self.run == 0 else (
            f"run {self.run}, before its first node" if self.step < 0 else f"run {self.run}, step {self.step + 1:,}")
        return f"region of {self.size:,} B: {when} (a request of {self.request:,} B)"


@dataclass(frozen=True, slots=True, kw_only=True)
class ArenaPicture:
    """The arena over two runs (see the module doc): ``steps`` per run, ``reserved`` bytes held
    outside the regions, the regions as spans, run 1's ``requested`` bytes per step, what the
    arena holds after each step of the layout (``held``, ``2 * steps`` values), the run the
    steady half shows (``steady_run``), the memory pattern's block (``pattern_bytes``, 0: none)."""

    steps: int
    reserved: int
    regions: tuple[RegionSpan, ...]
    requested: tuple[int, ...]
    held: tuple[int, ...]
    steady_run: int
    pattern_bytes: int
    before_run_bytes: int
    first_run_bytes: int
    steady_bytes: int

    def stacked(self) -> tuple[tuple[RegionSpan, int], ...]:
        """Each region with the bytes under it: regions stack in the order they came, on the
        reserved bytes, so each is a rectangle from its start to the end of the layout."""
        out, base = [], self.reserved
        for span in self.regions:
            out.append((span, base))
            base += span.size
        return tuple(out)

    @staticmethod
    def group(span: RegionSpan) -> str:
        """Which part of the session's life took the region: creation, run 1, or a later run."""
        return "creation" if span.run == 0 else ("run 1" if span.run == 1 else "steady")


def arena_picture(analysis: Any, session: Any) -> ArenaPicture | None:
    """The picture for ``analysis`` and its session figures (:class:`graphmem.analysis.session.SessionFigures`);
    None when there is nothing to draw: no CPU arena (disabled, or a CUDA session), or a run with
    no steps."""
    arena = getattr(session, "arena", None)
    if session is None or arena is None or getattr(session, "provider", "cpu") != "cpu":
        return None
    if not arena.options.enable_cpu_mem_arena:
        return None
    requested = tuple(b for _, b in analysis.activations.timeline)
    n = len(requested)
    if n == 0:
        return None
    steady = max(arena.steady_after_run, 2)
    spans = []
    for r in sorted(arena.regions, key=lambda r: (r.run, r.step)):
        if r.run > steady:
            continue
        if r.run == 0:
            start = 0
        elif r.run == 1:
            start = min(max(r.step, 0), n - 1)
        else:
            start = n + min(max(r.step, 0), n - 1)
        spans.append(RegionSpan(start=start, size=r.size, run=r.run, step=r.step, request=r.request))
    spans.sort(key=lambda s: s.start)  # stable: the arena's order among regions of one step
    reserved = arena.reserved_bytes
    held = tuple(reserved + sum(s.size for s in spans if s.start <= x) for x in range(2 * n))
    return ArenaPicture(
        steps=n, reserved=reserved, regions=tuple(spans), requested=requested, held=held, steady_run=steady,
        pattern_bytes=arena.pattern_bytes, before_run_bytes=arena.before_run_bytes,
        first_run_bytes=arena.first_run_bytes, steady_bytes=arena.steady_bytes,
    )
