"""Offset assignment: the arena a planner free of any runtime's rules could use.

Greedy by size, as TFLite's ``lite/micro/memory_planner/greedy_memory_planner.cc``: storages are
placed largest first (ties: earlier first step), each at the lowest offset where it overlaps no
already-placed storage that is live at the same time. The result sits between the lower bound
and the no-reuse sum (the invariant checker asserts it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphmem.planner.liveness import Liveness

__all__ = ["Placement", "plan_greedy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Offsets of each storage (same order as ``Liveness.storages``) and the arena size."""

    offsets: tuple[int, ...]
    arena_bytes: int


def plan_greedy(live: Liveness) -> Placement:
    """Place every storage of ``live``; see the module doc."""
    storages = live.storages
    n = len(storages)
    order = sorted(range(n), key=lambda k: (-storages[k].size, storages[k].first, k))
    first = np.array([s.first for s in storages], dtype=np.int64)
    last = np.array([s.last for s in storages], dtype=np.int64)
    lo = np.zeros(n, dtype=np.int64)
    hi = np.zeros(n, dtype=np.int64)
    placed = np.zeros(n, dtype=bool)
    arena = 0
    for k in order:
        st = storages[k]
        live_now = placed & (first <= st.last) & (last >= st.first)
        idx = np.flatnonzero(live_now)
        offset = 0
        for j in idx[np.argsort(lo[idx], kind="stable")]:
            if offset + st.size <= lo[j]:
                break
            offset = max(offset, int(hi[j]))
        lo[k], hi[k] = offset, offset + st.size
        placed[k] = True
        arena = max(arena, offset + st.size)
    return Placement(offsets=tuple(int(x) for x in lo), arena_bytes=arena)
