"""The greedy placement searches only the storages live with the one it places (an interval
sweep); its offsets are those of the plain definition, which compares every pair of storages.

``reference`` below is that definition written out (largest first, ties by first step then
index; each storage at the lowest offset clearing the placed storages whose steps overlap its
own, taken by offset then index, first fit): on random lifetimes, and on the storages of random
programs, both give the same offsets and arena, and the invariant checker accepts them.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from test_planner_props import SETTINGS, programs

from graphmem.planner.check import check_placement
from graphmem.planner.greedy import Placement, plan_greedy
from graphmem.planner.liveness import Liveness, Storage, analyze_liveness


def reference(live: Liveness) -> Placement:
    """The quadratic definition: every placed storage is tested for overlap."""
    st_ = live.storages
    lo: dict[int, int] = {}
    arena = 0
    for k in sorted(range(len(st_)), key=lambda k: (-st_[k].size, st_[k].first, k)):
        near = sorted(
            (lo[j], j) for j in lo if st_[j].first <= st_[k].last and st_[j].last >= st_[k].first
        )
        offset = 0
        for at, j in near:
            if offset + st_[k].size <= at:
                break
            offset = max(offset, at + st_[j].size)
        lo[k] = offset
        arena = max(arena, offset + st_[k].size)
    return Placement(offsets=tuple(lo[k] for k in range(len(st_))), arena_bytes=arena)


def _liveness(spans: list[tuple[int, int, int]]) -> Liveness:
    """Storages from (first, length, size); the bounds computed as liveness does."""
    storages = tuple(Storage(root=i, size=s, first=f, last=f + n) for i, (f, n, s) in enumerate(spans))
    steps = max((x.last for x in storages), default=-1) + 1
    held = [sum(x.size for x in storages if x.first <= t <= x.last) for t in range(steps)]
    lower = max(held, default=0)
    return Liveness(
        storages=storages, storage_of=(), live_bytes=tuple(held), lower_bound=lower,
        lower_bound_step=held.index(lower) if held else -1, no_reuse=sum(x.size for x in storages),
    )


spans = st.lists(
    st.tuples(st.integers(0, 40), st.one_of(st.integers(0, 3), st.integers(0, 60)), st.integers(0, 64)),
    max_size=60,
)


@SETTINGS
@given(spans)
def test_sweep_places_as_the_definition_on_random_lifetimes(s: list[tuple[int, int, int]]) -> None:
    live = _liveness(s)
    placement = plan_greedy(live)
    assert placement == reference(live)
    check_placement(live, placement)


@SETTINGS
@given(programs(mixed=True))
def test_sweep_places_as_the_definition_on_random_programs(p) -> None:  # type: ignore[no-untyped-def]
    live = analyze_liveness(p)
    assert plan_greedy(live) == reference(live)


def test_a_long_lived_storage_is_found_from_both_sides() -> None:
    # steps 0..9; g (100 B) lives 0-9, a (60 B) 2-3, b (60 B) 3-5, c (60 B) 6-6, d (10 B) 9-9.
    # g first @0; a overlaps g -> @100; b (first 3) overlaps g and a -> @160; c overlaps g only
    # -> @100; d overlaps g only -> @100. Arena 220 = 100 + 60 + 60 (steps 3: g, a, b).
    live = _liveness([(0, 9, 100), (2, 1, 60), (3, 2, 60), (6, 0, 60), (9, 0, 10)])
    placement = plan_greedy(live)
    assert placement.offsets == (0, 100, 160, 100, 100)
    assert placement.arena_bytes == 220 == live.lower_bound
    assert placement == reference(live)
