"""An emulation of onnxruntime 1.31's sequential allocation planner, and of run 1's arena use.

Planning, from ``onnxruntime/core/framework/allocation_planner.cc``:

* use counts (ComputeReuseCount): +1 for a source or graph output, +1 per read, +1 for the
  producing step; a reuse adds the new value's count to the buffer it joins (Reuse);
* per output of each step, in order (ComputeSingleStreamReusePlan): a graph output gets its own
  buffer; else an alias output joins its input's buffer (FindReusableInput, Alias); else a
  may-in-place output joins its input's buffer when that buffer's count is 1 and the static
  keys match (MayInplace + SameSize); else the most recently freed buffer whose *defining* value
  has a matching, non-scalar key (FindReusableTensor); else a fresh buffer;
* after each step, inputs then outputs are decremented; dead buffers go to the front of the
  free list.

Running (run 1, no memory pattern cached), from ``execution_frame.cc`` and GenerateDeallocationPlan:

* a fresh buffer is one request of exactly its bytes when its step runs;
* a buffer is released after the last step that *reads* any value sharing it; one that nothing
  reads (graph outputs, unread outputs) is held to the end of the run;
* a value planned into a freed buffer that was already released (possible only for a value
  nothing reads) gets a new request of its own, never released
  (AllocateReusedOrtValueIfNotAllocatedHelper);
* so does a value nothing reads planned (FindReusableTensor) into the freed buffer of another
  value nothing reads, although that buffer is still held: measured on onnxruntime-gpu 1.31.1
  (a 2-layer GRU's two unread Y_h; two Splits' unread second outputs), the runtime path that
  does it was not found in ``execution_frame.cc``; ``tests/ort/test_unread_outputs.py`` runs it;
* the profiler samples after each kernel, before its releases.

Streams (``allocation_planner.cc`` ComputeReusePlan): see :func:`_plan_buffers`.
Devices (``allocation_planner.cc`` FindReusableTensor compares the candidate's location with the
required one): a buffer is reused only by a value of the same device, and each device's requests
are summed apart — ``in_use``/``peak_bytes`` are those of the program's device, the others' peaks
are in ``other_peaks``.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmem.errors import PlanInvariantError
from graphmem.planner.liveness import Liveness
from graphmem.planner.program import Program, same_key

__all__ = ["OrtPlan", "plan_ort", "check_ort_plan"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OrtPlan:
    """Where each value lives and what run 1 holds after each step."""

    buffer_of: tuple[int, ...]  # value -> value id of the buffer it uses (itself if fresh)
    fresh: tuple[int, ...]  # value ids that request a buffer, in request order
    alloc_step: tuple[int, ...]  # per fresh buffer (same order): step that requests it
    free_step: tuple[int | None, ...]  # per fresh buffer: step after which it is released
    in_use: tuple[int, ...]  # bytes requested and held after each step, before its releases
    peak_bytes: int
    peak_step: int  # -1 for a program with no steps
    unknown_sizes: tuple[int, ...]  # fresh buffers whose size is unknown (not in the totals)
    other_peaks: tuple[tuple[str, int], ...] = ()  # (device, peak requested bytes) of other devices


def plan_ort(p: Program) -> OrtPlan:
    """Plan ``p`` as onnxruntime does, then replay run 1; see the module doc for the rules."""
    buffer_of, recycled = _plan_buffers(p)
    release = _release_steps(p, buffer_of)
    released_after: dict[int, list[int]] = {}
    for origin, last in release.items():
        released_after.setdefault(last, []).append(origin)
    allocated: dict[int, int] = {}  # origin buffer -> bytes currently held in its slot
    fresh: list[int] = []
    alloc_step: list[int] = []
    free_step: list[int | None] = []
    unknown: list[int] = []
    totals = {p.device: 0} | {v.device: 0 for v in p.values}
    peaks = dict(totals)
    in_use: list[int] = []
    read = {v for step in p.steps for v in step.inputs}
    for s, step in enumerate(p.steps):
        for out in step.outputs:
            origin = buffer_of[out]
            if p.values[origin].source:
                continue  # a view of a source
            # An unread value planned into a freed buffer that nothing ever reads (an unread
            # output's) gets a request of its own, never released (measured; see the module doc).
            own = origin != out and out in recycled and out not in read and origin not in release
            if origin in allocated and not own:
                continue  # a live buffer shared
            size = p.values[out].size
            fresh.append(out)
            alloc_step.append(s)
            # A slot released before this step is re-requested and never released again.
            end = None if own else release.get(origin)
            free_step.append(end if end is not None and end >= s else None)
            if size is None:
                unknown.append(out)
                size = 0
            slot = out if own else origin
            allocated[slot] = size
            totals[p.values[origin].device] += size
        in_use.append(totals[p.device])
        for device, held in totals.items():
            peaks[device] = max(peaks[device], held)
        for origin in released_after.get(s, ()):
            if origin in allocated:
                totals[p.values[origin].device] -= allocated.pop(origin)
    peak = max(in_use, default=0)
    return OrtPlan(
        buffer_of=tuple(buffer_of),
        fresh=tuple(fresh),
        alloc_step=tuple(alloc_step),
        free_step=tuple(free_step),
        in_use=tuple(in_use),
        peak_bytes=peak,
        peak_step=in_use.index(peak) if in_use else -1,
        unknown_sizes=tuple(unknown),
        other_peaks=tuple((d, b) for d, b in sorted(peaks.items()) if d != p.device),
    )


def _plan_buffers(p: Program) -> tuple[list[int], set[int]]:
    """The planning pass: which value's buffer each value uses.

    With several streams, each is planned on its own, in stream order (ComputeReusePlan: use
    counts recomputed over the whole program, the stream's steps walked, then counts and free
    list cleared), so a value that another stream reads never reaches a count of 0 or 1: it is
    neither freed for reuse nor updated in place."""
    n = len(p.values)
    buffer_of = list(range(n))
    recycled: set[int] = set()  # values planned into a buffer taken from the free list
    initial = [0] * n
    for i, value in enumerate(p.values):
        if value.source or value.output:
            initial[i] += 1
    for step in p.steps:
        for v in (*step.inputs, *step.outputs):
            initial[v] += 1
    for stream in sorted({step.stream for step in p.steps}):
        use = list(initial)
        # Free list, kept per (device, key): the front of a list is its most recently freed
        # buffer, which is what a front-to-back scan of one list with same_key finds first
        # (keys with an unknown dim never match, so they are not kept).
        freelist: dict[tuple, list[int]] = {}
        for step in p.steps:
            if step.stream != stream:
                continue
            for pos, out in enumerate(step.outputs):
                target, from_free = _choose(p, step, pos, out, use, buffer_of, freelist)
                if from_free:
                    recycled.add(out)
                if target is not None:
                    buffer_of[out] = buffer_of[target]
                    use[buffer_of[out]] += use[out]
            for v in (*step.inputs, *step.outputs):
                b = buffer_of[v]
                use[b] -= 1
                if use[b] == 0:
                    key = p.values[b].key
                    if _matchable(key):
                        freelist.setdefault((p.values[b].device, key), []).append(b)
    return buffer_of, recycled


def _release_steps(p: Program, buffer_of: list[int]) -> dict[int, int]:
    """Origin buffer -> the last step reading any value in it (fresh, non-output buffers only)."""
    release: dict[int, int] = {}
    for s, step in enumerate(p.steps):
        for v in step.inputs:
            origin = buffer_of[v]
            value = p.values[origin]
            if not value.source and not value.output:
                release[origin] = s
    return release


def _choose(p, step, pos, out, use, buffer_of, freelist) -> tuple[int | None, bool]:
    """The value whose buffer ``out`` joins (None for a fresh buffer), and whether it came from
    the free list."""
    value = p.values[out]
    if value.output:
        return None, False
    for i, o in step.alias:
        if o == pos:
            return step.inputs[i], False
    for i, o in step.inplace:
        if o == pos:
            src = step.inputs[i]
            if (
                use[buffer_of[src]] == 1
                and same_key(p.values[src].key, value.key)
                and p.values[src].device == value.device
            ):
                return src, False
    key = value.key
    if not _matchable(key) or len(key[1]) == 0:
        return None, False
    candidates = freelist.get((value.device, key))
    return (candidates.pop(), True) if candidates else (None, False)


def _matchable(key) -> bool:
    """A key that can equal another under same_key (no unknown dim), so equality is ==."""
    return key is not None and all(d is not None and d != "" for d in key[1])


def check_ort_plan(live: Liveness, plan: OrtPlan) -> None:
    """Raise :class:`PlanInvariantError` when the emulated peak is below the planner's lower bound
    or above its no-reuse sum (which includes graph outputs); the tests run it on every plan."""
    if plan.peak_bytes < live.lower_bound or plan.peak_bytes > live.no_reuse:
        raise PlanInvariantError(
            f"emulated peak {plan.peak_bytes} outside [{live.lower_bound}, {live.no_reuse}]"
        )
