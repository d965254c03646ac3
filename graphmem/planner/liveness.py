"""Liveness: which storages exist, and from which step to which step they must be held.

A storage is the memory one or more values share without any planner's choice: a view (alias
output) shares its input's storage, and an in-place output shares its input's storage when that
input dies at the very step and the sizes are equal (one output per input storage and step, never
into a storage holding a graph output; chains merge in step order). Everything else gets a
storage of its own.
A storage lives from the step that writes it to the last step that reads any value in it;
graph outputs to the end of the run; a value nothing reads only during its own step.

From this come two runtime-independent figures: the *lower bound* (the most bytes that must be
held at one step, whatever the placement) and the *no-reuse* sum (every op output in a buffer of
its own, views excepted).
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmem.planner.program import Program

__all__ = ["Storage", "Liveness", "analyze_liveness"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Storage:
    """One piece of memory: its bytes and the inclusive step range it must be held."""

    root: int  # value id that created it
    size: int
    first: int
    last: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Liveness:
    """Storages of the intermediates and outputs (sources excluded), and the bounds."""

    storages: tuple[Storage, ...]
    storage_of: tuple[int, ...]  # value -> root value id of its storage
    live_bytes: tuple[int, ...]  # per step
    lower_bound: int
    lower_bound_step: int
    no_reuse: int


def analyze_liveness(p: Program) -> Liveness:
    """Group values into storages and compute lifetimes and the two bounds."""
    n = len(p.values)
    root = list(range(n))
    producer = [-1] * n
    last_read = [-1] * n
    for s, step in enumerate(p.steps):
        for v in step.inputs:
            last_read[v] = s
        for v in step.outputs:
            producer[v] = s
    end = len(p.steps) - 1

    def find(v: int) -> int:
        while root[v] != v:
            root[v] = root[root[v]]
            v = root[v]
        return v

    for step in p.steps:
        for i, o in step.alias:
            out = step.outputs[o]
            if not p.values[out].output:
                root[out] = find(step.inputs[i])
    # In-place merges, in step order, so that a chain x -> y -> z becomes one storage: each
    # merge extends the storage's life before the next step looks at it. One input storage is
    # taken by one output per step, and never when it holds a graph output (the caller's).
    storage_last = _storage_last(p, find, producer, last_read, end)
    holds_output = {find(v) for v, value in enumerate(p.values) if value.output}
    for s, step in enumerate(p.steps):
        taken: set[int] = set()
        for i, o in step.inplace:
            src, out = find(step.inputs[i]), step.outputs[o]
            if (
                find(out) == out
                and src not in taken
                and src not in holds_output
                and out not in holds_output
                and not p.values[src].source
                and storage_last.get(src) == s
                and p.values[src].size is not None
                and p.values[src].size == p.values[out].size
            ):
                root[out] = src
                taken.add(src)
                storage_last[src] = max(s, storage_last.pop(out, s))

    storages = []
    for v in range(n):
        value = p.values[v]
        if find(v) != v or value.source or producer[v] < 0 or value.size is None:
            continue
        storages.append(Storage(root=v, size=value.size, first=producer[v], last=storage_last[v]))
    deltas = [0] * (len(p.steps) + 1)
    for st in storages:
        deltas[st.first] += st.size
        deltas[st.last + 1] -= st.size
    live, total = [], 0
    for s in range(len(p.steps)):
        total += deltas[s]
        live.append(total)
    lower = max(live, default=0)
    views = {
        step.outputs[o] for step in p.steps for _, o in step.alias if not p.values[step.outputs[o]].output
    }
    no_reuse = sum(
        v.size
        for i, v in enumerate(p.values)
        if not v.source and producer[i] >= 0 and v.size is not None and i not in views
    )
    return Liveness(
        storages=tuple(storages),
        storage_of=tuple(find(v) for v in range(n)),
        live_bytes=tuple(live),
        lower_bound=lower,
        lower_bound_step=live.index(lower) if live else -1,
        no_reuse=no_reuse,
    )


def _storage_last(p: Program, find, producer, last_read, end) -> dict[int, int]:
    last: dict[int, int] = {}
    for v, value in enumerate(p.values):
        if producer[v] < 0 and not value.source:
            continue
        if value.output:
            t = end
        elif last_read[v] >= 0:
            t = last_read[v]
        else:
            t = producer[v]
        r = find(v)
        last[r] = max(last.get(r, -1), t)
    return last
