"""Offset assignment: the arena a planner free of any runtime's rules could use.

Greedy by size, as TFLite's ``lite/micro/memory_planner/greedy_memory_planner.cc``: storages are
placed largest first (ties: earlier first step), each at the lowest offset where it overlaps no
already-placed storage that is live at the same time. The result sits between the lower bound
and the no-reuse sum (the invariant checker asserts it).
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmem.planner.liveness import Liveness, Storage

__all__ = ["Placement", "plan_greedy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Offsets of each storage (same order as ``Liveness.storages``) and the arena size."""

    offsets: tuple[int, ...]
    arena_bytes: int


def plan_greedy(live: Liveness) -> Placement:
    """Place every storage of ``live``; see the module doc."""
    storages = live.storages
    order = sorted(range(len(storages)), key=lambda k: (-storages[k].size, storages[k].first, k))
    offsets: list[int | None] = [None] * len(storages)
    placed: list[int] = []
    arena = 0
    for k in order:
        st = storages[k]
        busy = sorted(
            (offsets[j], offsets[j] + storages[j].size)  # type: ignore[operator]
            for j in placed
            if _overlap(st, storages[j])
        )
        offset = 0
        for lo, hi in busy:
            if offset + st.size <= lo:
                break
            offset = max(offset, hi)
        offsets[k] = offset
        placed.append(k)
        arena = max(arena, offset + st.size)
    return Placement(offsets=tuple(o or 0 for o in offsets), arena_bytes=arena)


def _overlap(a: Storage, b: Storage) -> bool:
    return a.first <= b.last and b.first <= a.last
