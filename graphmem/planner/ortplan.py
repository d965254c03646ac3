"""An emulation of onnxruntime 1.31's sequential allocation planner, and of run 1's arena use.

Rules, each from ``onnxruntime/core/framework/allocation_planner.cc`` unless said otherwise:

* use counts (ComputeReuseCount): +1 for a source or graph output, +1 per read, +1 for the
  producing step; a reuse adds the new value's count to the buffer it joins (Reuse);
* per output of each step, in order (ComputeSingleStreamReusePlan): a graph output gets its own
  buffer; else an alias output joins its input's buffer (FindReusableInput, Alias); else a
  may-in-place output joins its input's buffer when that buffer's count is 1 and the static
  keys match (MayInplace + SameSize); else an output nothing reads gets a fresh buffer; else the
  most recently freed buffer whose *defining* value has a matching, non-scalar key
  (FindReusableTensor); else a fresh buffer;
* after each step, inputs then outputs are decremented and dead buffers go to the front of the
  free list;
* run 1 (``execution_frame.cc``): each fresh buffer is one request of exactly its bytes when its
  step runs; a buffer is released after the step where its count reaches 0; graph outputs and
  unread outputs are held to the end. The profiler samples after each kernel, before releases.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmem.planner.program import Program, same_key

__all__ = ["OrtPlan", "plan_ort"]


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


def plan_ort(p: Program) -> OrtPlan:
    """Plan ``p`` as onnxruntime does; see the module doc for the rules."""
    n = len(p.values)
    use = [0] * n
    buffer_of = list(range(n))
    for i, v in enumerate(p.values):
        if v.source or v.output:
            use[i] += 1
    for step in p.steps:
        for v in step.inputs:
            use[v] += 1
        for v in step.outputs:
            use[v] += 1

    freelist: list[int] = []  # front = most recently freed
    fresh: list[int] = []
    alloc_step: dict[int, int] = {}
    free_step: dict[int, int] = {}
    for s, step in enumerate(p.steps):
        for pos, out in enumerate(step.outputs):
            target = _choose(p, step, pos, out, use, buffer_of, freelist)
            if target is None:
                fresh.append(out)
                alloc_step[out] = s
            else:
                buffer_of[out] = buffer_of[target]
                use[buffer_of[out]] += use[out]
        for v in (*step.inputs, *step.outputs):
            b = buffer_of[v]
            use[b] -= 1
            if use[b] == 0:
                freelist.insert(0, b)
                free_step[b] = s

    deltas = [0] * (len(p.steps) + 1)
    unknown = []
    for b in fresh:
        size = p.values[b].size
        if size is None:
            unknown.append(b)
            continue
        deltas[alloc_step[b]] += size
        if b in free_step:
            deltas[free_step[b] + 1] -= size
    in_use, total = [], 0
    for s, step in enumerate(p.steps):
        total += deltas[s]
        in_use.append(total)
    peak = max(in_use, default=0)
    return OrtPlan(
        buffer_of=tuple(buffer_of),
        fresh=tuple(fresh),
        alloc_step=tuple(alloc_step[b] for b in fresh),
        free_step=tuple(free_step.get(b) for b in fresh),
        in_use=tuple(in_use),
        peak_bytes=peak,
        peak_step=in_use.index(peak) if in_use else -1,
        unknown_sizes=tuple(unknown),
    )


def _choose(p, step, pos, out, use, buffer_of, freelist) -> int | None:  # type: ignore[no-untyped-def]
    """The value whose buffer ``out`` joins, or None for a fresh buffer."""
    value = p.values[out]
    if value.output:
        return None
    for i, o in step.alias:
        if o == pos:
            return step.inputs[i]
    for i, o in step.inplace:
        if o == pos:
            src = step.inputs[i]
            if use[buffer_of[src]] == 1 and same_key(p.values[src].key, value.key):
                return src
    if p.consumers[out] == 0:
        return None
    key = value.key
    if key is None or len(key[1]) == 0:
        return None
    for k, b in enumerate(freelist):
        if same_key(p.values[b].key, key):
            del freelist[k]
            return b
    return None
