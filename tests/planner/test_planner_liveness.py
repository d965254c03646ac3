"""Liveness (storages, lower bound, no-reuse sum) and greedy placement on tiny inline programs.

Each test writes its program inline; the comment lists each storage as ``name size [first, last]``
(inclusive steps) and the bytes live at each step. Every liveness result goes through the greedy
placement and its checker (no two simultaneously live storages overlap; lower bound <= arena <=
no-reuse sum), and through the onnxruntime-emulation bound check.
"""

from __future__ import annotations


import pytest

from graphmem.planner.check import check_placement
from graphmem.planner.greedy import Placement, plan_greedy
from graphmem.planner.liveness import Liveness, analyze_liveness
from graphmem.ort.allocation import check_ort_plan, plan_ort
from graphmem.planner.program import Key, Program
from builders import A, B, T1, T2, T3, program, src, step, val


def analyze(p: Program) -> tuple[Liveness, Placement]:
    """Liveness and greedy placement of ``p``, with every invariant check run (they raise)."""
    live = analyze_liveness(p)
    placement = plan_greedy(live)
    check_placement(live, placement)
    check_ort_plan(live, plan_ort(p))
    assert live.lower_bound == max(live.live_bytes, default=0)
    assert live.lower_bound <= placement.arena_bytes <= live.no_reuse
    return live, placement


def storages(p: Program, live: Liveness) -> dict[str, tuple[int, int, int]]:
    """Root name -> (size, first, last)."""
    return {p.values[s.root].name: (s.size, s.first, s.last) for s in live.storages}


def storage_of(p: Program, live: Liveness) -> dict[str, str]:
    """Value name -> root name, for values in another value's storage."""
    return {p.values[v].name: p.values[r].name for v, r in enumerate(live.storage_of) if r != v}


def offsets(p: Program, live: Liveness, placement: Placement) -> dict[str, int]:
    return {p.values[s.root].name: o for s, o in zip(live.storages, placement.offsets)}


CHAIN = program(
    [src(), val("a", 24, A), val("b", 24, A), val("c", 24, A), val("out", 1, T1, output=True)],
    step("conv", "in", "a"),
    step("add1", "a", "b"),
    step("add2", "b", "c"),
    step("head", "c", "out"),
)


def test_chain() -> None:
    # a 24 [0,1] | b 24 [1,2] | c 24 [2,3] | out 1 [3,3]
    # live: 24 | 48 | 48 | 25
    live, placement = analyze(CHAIN)
    assert storages(CHAIN, live) == {"a": (24, 0, 1), "b": (24, 1, 2), "c": (24, 2, 3), "out": (1, 3, 3)}
    assert live.live_bytes == (24, 48, 48, 25)
    assert (live.lower_bound, live.lower_bound_step) == (48, 1)
    assert live.no_reuse == 73
    # greedy, largest first (ties: earlier first): a@0; b overlaps a -> @24; c overlaps only b -> @0;
    # out overlaps only c -> @24. The arena meets the lower bound.
    assert offsets(CHAIN, live, placement) == {"a": 0, "b": 24, "c": 0, "out": 24}
    assert placement.arena_bytes == 48


def test_a_view_shares_its_inputs_storage_and_is_not_in_no_reuse() -> None:
    p = program(
        [src(), val("a", 24, A), val("v", 24, B), val("b", 3, T3), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("reshape", "a", "v", alias=[(0, 0)]),
        step("g", "in", "b"),
        step("k", "v b", "out"),
    )
    # a 24 [0,3] (v read at s3) | b 3 [2,3] | out 1 [3,3]
    # live: 24 | 24 | 27 | 28
    live, placement = analyze(p)
    assert storage_of(p, live) == {"v": "a"}
    assert storages(p, live) == {"a": (24, 0, 3), "b": (3, 2, 3), "out": (1, 3, 3)}
    assert live.live_bytes == (24, 24, 27, 28)
    assert (live.lower_bound, live.lower_bound_step) == (28, 3)
    assert live.no_reuse == 28  # a, b, out: the view v is not counted
    # a@0; b overlaps a -> @24; out overlaps both -> @27
    assert offsets(p, live, placement) == {"a": 0, "b": 24, "out": 27}
    assert placement.arena_bytes == 28


def test_a_view_of_a_source_has_no_storage() -> None:
    p = program(
        [src(), val("v", 24, B), val("y", 24, B), val("out", 1, T1, output=True)],
        step("reshape", "in", "v", alias=[(0, 0)]),
        step("relu", "v", "y", inplace=[(0, 0)]),
        step("k", "y", "out"),
    )
    # v is the input's memory; y cannot be in place in a source -> y 24 [1,2] | out 1 [2,2]
    # live: 0 | 24 | 25
    live, _ = analyze(p)
    assert storage_of(p, live) == {"v": "in"}
    assert storages(p, live) == {"y": (24, 1, 2), "out": (1, 2, 2)}
    assert live.live_bytes == (0, 24, 25)
    assert live.no_reuse == 25


def test_a_graph_output_view_is_a_storage_of_its_own() -> None:
    p = program(
        [src(), val("a", 24, A), val("o", 24, B, output=True)],
        step("f", "in", "a"),
        step("reshape", "a", "o", alias=[(0, 0)]),
    )
    # a 24 [0,1] | o 24 [1,1]; live: 24 | 48
    live, _ = analyze(p)
    assert storage_of(p, live) == {}
    assert storages(p, live) == {"a": (24, 0, 1), "o": (24, 1, 1)}
    assert live.live_bytes == (24, 48)
    assert live.no_reuse == 48


# (id, key of y, size of y, y is a graph output, a read again at s2, merged, live bytes, no_reuse)
IN_PLACE_CASES = [
    ("input dies, same size", A, 24, False, False, True, (24, 24, 25), 49),
    ("input read later", A, 24, False, True, False, (24, 48, 49), 49),
    ("sizes differ", (16, (2, 3)), 12, False, False, False, (24, 36, 13), 37),
    ("same size, other key", (16, (3, 4)), 24, False, False, True, (24, 24, 25), 49),
    ("size unknown", A, None, False, False, False, (24, 24, 1), 25),
    ("output is a graph output", A, 24, True, False, False, (24, 48, 25), 49),
]


@pytest.mark.parametrize(
    ("ky", "size_y", "y_out", "a_later", "merged", "live_bytes", "no_reuse"),
    [c[1:] for c in IN_PLACE_CASES],
    ids=[c[0] for c in IN_PLACE_CASES],
)
def test_in_place_merging(
    ky: Key,
    size_y: int | None,
    y_out: bool,
    a_later: bool,
    merged: bool,
    live_bytes: tuple[int, ...],
    no_reuse: int,
) -> None:
    p = program(
        [src(), val("a", 24, A), val("y", size_y, ky, output=y_out), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("relu", "a", "y", inplace=[(0, 0)]),
        step("k", "y a" if a_later else "y", "out"),
    )
    # merged:     a+y 24 [0,2] | out 1 [2,2]                -> 24 | 24 | 25
    # not merged: a 24 [0,1 or 2] | y [1,2] | out 1 [2,2]   (liveness ignores keys; sizes must be equal)
    live, _ = analyze(p)
    assert storage_of(p, live) == ({"y": "a"} if merged else {})
    assert live.live_bytes == live_bytes
    assert live.no_reuse == no_reuse  # in-place outputs are op outputs: counted in no-reuse


def test_in_place_through_a_view_merges_into_the_root() -> None:
    p = program(
        [src(), val("a", 24, A), val("v", 24, B), val("y", 24, B), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("reshape", "a", "v", alias=[(0, 0)]),
        step("relu", "v", "y", inplace=[(0, 0)]),
        step("k", "y", "out"),
    )
    # a+v+y 24 [0,3] | out 1 [3,3]; live: 24 | 24 | 24 | 25
    live, _ = analyze(p)
    assert storage_of(p, live) == {"v": "a", "y": "a"}
    assert storages(p, live) == {"a": (24, 0, 3), "out": (1, 3, 3)}
    assert live.live_bytes == (24, 24, 24, 25)
    assert live.no_reuse == 49


def test_no_in_place_while_a_view_of_the_input_is_still_read() -> None:
    p = program(
        [src(), val("a", 24, A), val("v", 24, B), val("y", 24, A), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("reshape", "a", "v", alias=[(0, 0)]),
        step("relu", "a", "y", inplace=[(0, 0)]),
        step("k", "v y", "out"),
    )
    # a+v 24 [0,3] (v read at s3, so a's storage does not die at s2) | y 24 [2,3] | out 1 [3,3]
    # live: 24 | 24 | 48 | 49
    live, _ = analyze(p)
    assert storage_of(p, live) == {"v": "a"}
    assert storages(p, live) == {"a": (24, 0, 3), "y": (24, 2, 3), "out": (1, 3, 3)}
    assert live.live_bytes == (24, 24, 48, 49)


def test_graph_outputs_live_to_the_end() -> None:
    p = program(
        [
            src(),
            val("o", 24, A, output=True),
            val("p", 1, T1),
            val("q", 2, T2),
            val("out", 3, T3, output=True),
        ],
        step("f", "in", "o"),
        step("g", "o", "p"),
        step("h", "p", "q"),
        step("k", "q", "out"),
    )
    # o 24 [0,3] (last read at s1, held to the end) | p 1 [1,2] | q 2 [2,3] | out 3 [3,3]
    # live: 24 | 25 | 27 | 29
    live, placement = analyze(p)
    assert storages(p, live) == {"o": (24, 0, 3), "p": (1, 1, 2), "q": (2, 2, 3), "out": (3, 3, 3)}
    assert live.live_bytes == (24, 25, 27, 29)
    assert (live.lower_bound, live.lower_bound_step) == (29, 3)
    assert live.no_reuse == 30
    # o@0; out overlaps o -> @24; q overlaps o and out -> @27; p overlaps o (0-24) and q (27-29):
    # the gap at 24 fits it (out, also at 24, is not live with p)
    assert offsets(p, live, placement) == {"o": 0, "p": 24, "q": 27, "out": 24}
    assert placement.arena_bytes == 29


def test_a_value_nothing_reads_lives_only_during_its_step() -> None:
    p = program(
        [src(), val("a", 24, A), val("b", 1, T1, output=True)],
        step("f", "in", "a"),
        step("g", "in", "b"),
    )
    # a 24 [0,0] | b 1 [1,1]; live: 24 | 1
    live, placement = analyze(p)
    assert storages(p, live) == {"a": (24, 0, 0), "b": (1, 1, 1)}
    assert live.live_bytes == (24, 1)
    assert (live.lower_bound, live.lower_bound_step) == (24, 0)
    assert live.no_reuse == 25
    assert offsets(p, live, placement) == {"a": 0, "b": 0}
    assert placement.arena_bytes == 24


def test_unknown_sizes_have_no_storage() -> None:
    p = program(
        [src(), val("a", None), val("b", 3, T3), val("out", None, output=True)],
        step("f", "in", "a"),
        step("g", "in", "b"),
        step("k", "a b", "out"),
    )
    # a ? [0,2] | b 3 [1,2] | out ? [2,2]: only b counts; live: 0 | 3 | 3
    live, _ = analyze(p)
    assert storages(p, live) == {"b": (3, 1, 2)}
    assert live.live_bytes == (0, 3, 3)
    assert live.no_reuse == 3


def test_greedy_leaves_a_gap_the_lower_bound_does_not() -> None:
    p = program(
        [
            src(),
            val("a", 24, A),
            val("b", 24, A),
            val("c", 3, T3),
            val("d", 5, (8, (5,))),
            val("e", 24, A),
            val("out", 1, T1, output=True),
        ],
        step("f1", "in", "a"),
        step("f2", "in", "b"),
        step("g1", "a", "c"),
        step("g2", "b", "d"),
        step("h", "c d", "e"),
        step("k", "e", "out"),
    )
    # a 24 [0,2] | b 24 [1,3] | c 3 [2,4] | d 5 [3,4] | e 24 [4,5] | out 1 [5,5]
    # live: 24 | 48 | 51 | 32 | 32 | 25
    live, placement = analyze(p)
    assert live.live_bytes == (24, 48, 51, 32, 32, 25)
    assert (live.lower_bound, live.lower_bound_step) == (51, 2)
    assert live.no_reuse == 81
    # order a, b, e (24, by first step), d (5), c (3), out (1):
    # a@0; b overlaps a -> @24; e overlaps neither -> @0; d overlaps b, e -> @48;
    # c overlaps a, b, d, e -> @53; out overlaps e -> @24. Arena 56 > lower bound 51.
    assert offsets(p, live, placement) == {"a": 0, "b": 24, "c": 53, "d": 48, "e": 0, "out": 24}
    assert placement.arena_bytes == 56


def test_greedy_places_largest_first() -> None:
    p = program(
        [src(), val("a", 8), val("b", 32), val("c", 16), val("d", 8, output=True)],
        step("f", "in", "a"),
        step("g", "in", "b"),
        step("h", "b", "c"),
        step("k", "a c", "d"),
    )
    # a 8 [0,3] | b 32 [1,2] | c 16 [2,3] | d 8 [3,3]; live: 8 | 40 | 56 | 32
    live, placement = analyze(p)
    assert live.live_bytes == (8, 40, 56, 32)
    assert live.no_reuse == 64
    # b@0; c overlaps b -> @32; a overlaps b, c -> @48; d overlaps c, a (not b) -> @0
    assert offsets(p, live, placement) == {"a": 48, "b": 0, "c": 32, "d": 0}
    assert placement.arena_bytes == 56 == live.lower_bound


def test_no_steps() -> None:
    live, placement = analyze(program([src()]))
    assert live.storages == ()
    assert (live.lower_bound, live.lower_bound_step, live.no_reuse) == (0, -1, 0)
    assert placement.arena_bytes == 0


def test_an_in_place_chain_is_one_storage() -> None:
    p = program(
        [src(), val("x", 24, A), val("y", 24, A), val("z", 24, A), val("out", 1, T1, output=True)],
        step("f", "in", "x"),
        step("relu", "x", "y", inplace=[(0, 0)]),
        step("sigmoid", "y", "z", inplace=[(0, 0)]),
        step("k", "z", "out"),
    )
    # x+y+z 24 [0,3] | out 1 [3,3]; live: 24 | 24 | 24 | 25 (onnxruntime: 24 | 24 | 24 | 25 too)
    # Regression: the second merge once compared against the life of x's storage computed before
    # the first merge (it ended at s1), so z got a storage of its own and the lower bound (48)
    # exceeded onnxruntime's peak (25).
    live = analyze_liveness(p)
    assert storage_of(p, live) == {"y": "x", "z": "x"}
    assert live.live_bytes == (24, 24, 24, 25)
    analyze(p)


def test_one_input_is_taken_in_place_by_one_output_only() -> None:
    p = program(
        [src(), val("x", 24, A), val("y", 24, A), val("z", 24, A), val("out", 1, T1, output=True)],
        step("f", "in", "x"),
        step("op", "x", "y z", inplace=[(0, 0), (0, 1)]),
        step("k", "y z", "out"),
    )
    # x+y 24 [0,2] | z 24 [1,2] | out 1 [2,2]; live: 24 | 48 | 49
    # Regression: both pairs once merged, putting y and z, live together, in one 24-byte storage.
    live, _ = analyze(p)
    assert storage_of(p, live) == {"y": "x"}
    assert live.live_bytes == (24, 48, 49)


def test_an_in_place_output_never_merges_into_a_graph_output() -> None:
    p = program(
        [src(), val("o", 24, A, output=True), val("y", 24, A)],
        step("f", "in", "o"),
        step("relu", "o", "y", inplace=[(0, 0)]),
    )
    # o 24 [0,1] | y 24 [1,1]; live: 24 | 48 (onnxruntime: 24 | 48)
    # Regression: o's storage "ends" at the last step, so y once merged into it, over the
    # caller's value.
    live, _ = analyze(p)
    assert storage_of(p, live) == {}
    assert live.live_bytes == (24, 48)
