"""Invariant checks for plans; the planner tests run them on every plan and they raise.

* no two storages that are live at the same step overlap in memory;
* lower bound <= greedy arena <= no-reuse sum;
* lower bound <= onnxruntime-emulated peak <= no-reuse sum (which includes graph outputs).
"""

from __future__ import annotations

from graphmem.errors import PlanInvariantError
from graphmem.planner.greedy import Placement
from graphmem.planner.liveness import Liveness
from graphmem.ort.allocation import OrtPlan

__all__ = ["PlanInvariantError", "check_placement", "check_ort_plan"]


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


def check_ort_plan(live: Liveness, plan: OrtPlan) -> None:
    """Raise when the emulated peak is below the lower bound or above the no-reuse sum."""
    if plan.peak_bytes < live.lower_bound or plan.peak_bytes > live.no_reuse:
        raise PlanInvariantError(
            f"emulated peak {plan.peak_bytes} outside [{live.lower_bound}, {live.no_reuse}]"
        )
