"""Invariant checks for the planner's plans; the planner tests run them on every plan and they raise.

* no two storages that are live at the same step overlap in memory;
* lower bound <= greedy arena <= no-reuse sum.

onnxruntime's emulated plan is checked against the same bounds by
:func:`graphmem.ort.allocation.check_ort_plan` (the planner knows nothing of onnxruntime).
"""

from __future__ import annotations

from graphmem.errors import PlanInvariantError
from graphmem.planner.greedy import Placement
from graphmem.planner.liveness import Liveness

__all__ = ["PlanInvariantError", "check_placement"]


def check_placement(live: Liveness, placement: Placement) -> None:
    """Raise when two simultaneously live storages overlap or the arena is out of bounds."""
    st = live.storages
    for a in range(len(st)):
        for b in range(a + 1, len(st)):
            if st[a].first <= st[b].last and st[b].first <= st[a].last:
                lo_a, lo_b = placement.offsets[a], placement.offsets[b]
                if lo_a < lo_b + st[b].size and lo_b < lo_a + st[a].size:
                    raise PlanInvariantError(
                        f"storages of values {st[a].root} and {st[b].root} overlap in memory"
                    )
    if not live.lower_bound <= placement.arena_bytes <= live.no_reuse:
        raise PlanInvariantError(
            f"arena {placement.arena_bytes} outside [{live.lower_bound}, {live.no_reuse}]"
        )
