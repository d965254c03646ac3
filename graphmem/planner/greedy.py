"""Offset assignment: the arena a planner free of any runtime's rules could use.

Greedy by size, as TFLite's ``lite/micro/memory_planner/greedy_memory_planner.cc``: storages are
placed largest first (ties: earlier first step), each at the lowest offset where it overlaps no
already-placed storage that is live at the same time. The result sits between the lower bound
and the no-reuse sum (the invariant checker asserts it).

Finding the placed storages that share a step with the next one is the only search; it looks at
those storages alone, never at all of them, so a plan costs O(n log n + P log P) for n storages
and P pairs of storages live at the same step (a chain or a transformer: P grows like n):

* those live at the storage's first step: every placed storage is recorded in the O(log steps)
  nodes of a segment tree over the steps that cover its lifetime exactly; the nodes on the path
  from the root to that step hold each placed storage live there once;
* those written later, while it still lives: a range of the storages sorted by first step.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from graphmem.planner.liveness import Liveness

__all__ = ["Placement", "plan_greedy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Offsets of each storage (same order as ``Liveness.storages``) and the arena size."""

    offsets: tuple[int, ...]
    arena_bytes: int


def plan_greedy(live: Liveness) -> Placement:
    """Place every storage of ``live``; see the module doc.

    Each storage goes at the lowest offset that clears the placed storages live with it, taken
    in order of offset (ties: storage index), first fit.
    """
    storages = live.storages
    n = len(storages)
    first = [s.first for s in storages]
    last = [s.last for s in storages]
    size = [s.size for s in storages]
    by_first = sorted(range(n), key=lambda k: (first[k], k))
    firsts = [first[k] for k in by_first]
    steps = max(last, default=-1) + 1
    width = 1
    while width < steps:
        width *= 2
    tree: dict[int, list[int]] = {}  # segment-tree node -> placed storages it covers (only nodes that have some)
    placed = [False] * n
    lo = [0] * n
    arena = 0
    for k in sorted(range(n), key=lambda k: (-size[k], first[k], k)):
        a, b = first[k], last[k]
        near: list[int] = []
        node = a + width
        while node:  # placed storages live at step a
            if node in tree:
                near += tree[node]
            node >>= 1
        for i in range(bisect_right(firsts, a), bisect_right(firsts, b)):  # written in (a, b]
            j = by_first[i]
            if placed[j]:
                near.append(j)
        near.sort(key=lambda j: (lo[j], j))
        offset, need = 0, size[k]
        for j in near:
            if offset + need <= lo[j]:
                break
            offset = max(offset, lo[j] + size[j])
        lo[k] = offset
        placed[k] = True
        arena = max(arena, offset + need)
        left, right = a + width, b + width + 1  # record k in the nodes covering [a, b]
        while left < right:
            if left & 1:
                tree.setdefault(left, []).append(k)
                left += 1
            if right & 1:
                right -= 1
                tree.setdefault(right, []).append(k)
            left >>= 1
            right >>= 1
    return Placement(offsets=tuple(lo), arena_bytes=arena)
