"""The onnxruntime planner emulation (``graphmem.ort.allocation``) on tiny inline programs.

Each test writes its program inline, then the step-by-step plan in a comment: which buffer each
output takes (fresh, a freed one, its input's), what the planning pass frees after the step
("free [..]" is the free list, front first), and what run 1 requests and releases. The expected
``in_use`` tuple is sampled after each step, before its releases. Every plan also goes through the
invariant checker (``check_ort_plan``) and the greedy placement checker (``check_placement``).

Sizes are chosen so sums are unambiguous: ``A`` and ``B`` tensors are 24 bytes, fillers 1-5.
"""

from __future__ import annotations


import pytest

from graphmem.ort.allocation import check_ort_plan
from graphmem.planner.check import PlanInvariantError, check_placement
from graphmem.planner.greedy import plan_greedy
from graphmem.planner.liveness import analyze_liveness
from graphmem.ort.allocation import OrtPlan, plan_ort
from graphmem.planner.program import Key, Program, same_key
from builders import A, B, T1, T2, T3, T5, program, src, step, val


def plan(p: Program) -> OrtPlan:
    """Plan ``p`` and run every invariant check on it (they raise on a broken plan)."""
    ort = plan_ort(p)
    live = analyze_liveness(p)
    check_ort_plan(live, ort)
    check_placement(live, plan_greedy(live))
    assert len(ort.in_use) == len(p.steps)
    assert ort.peak_bytes == max(ort.in_use, default=0)
    assert len(ort.fresh) == len(ort.alloc_step) == len(ort.free_step)
    return ort


def shares(p: Program, ort: OrtPlan) -> dict[str, str]:
    """Value name -> name of the buffer it uses, for values not in a buffer of their own."""
    return {
        p.values[v].name: p.values[b].name for v, b in enumerate(ort.buffer_of) if b != v
    }


def fresh(p: Program, ort: OrtPlan) -> tuple[str, ...]:
    return tuple(p.values[v].name for v in ort.fresh)


def test_chain_reuses_a_freed_buffer_of_the_same_key() -> None:
    p = program(
        [src(), val("a", 24, A), val("b", 24, A), val("c", 24, A), val("out", 1, T1, output=True)],
        step("conv", "in", "a"),
        step("add1", "a", "b"),
        step("add2", "b", "c"),
        step("head", "c", "out"),
    )
    # s0 a: fresh                                  run: +a 24 -> 24
    # s1 b: fresh (a dies at s1, but is freed only after it); free [a]
    #                                              run: +b 24 -> 48 (a held: its sharer c is read at s3)
    # s2 c: takes a's buffer; free [b]             run: 48, then b released -> 24
    # s3 out: its own buffer; free [a, b]          run: +out 1 -> 25, then a released
    ort = plan(p)
    assert shares(p, ort) == {"c": "a"}
    assert fresh(p, ort) == ("a", "b", "out")
    assert ort.alloc_step == (0, 1, 3)
    assert ort.free_step == (3, 2, None)
    assert ort.in_use == (24, 48, 48, 25)
    assert (ort.peak_bytes, ort.peak_step) == (48, 1)
    assert ort.unknown_sizes == ()


def test_a_reused_buffer_is_held_between_its_sharers() -> None:
    p = program(
        [
            src(),
            val("a", 24, A),
            val("p", 2, T2),
            val("q", 3, T3),
            val("c", 24, A),
            val("out", 1, T1, output=True),
        ],
        step("f", "in", "a"),
        step("g", "a", "p"),
        step("h", "p", "q"),
        step("k", "q", "c"),
        step("m", "c", "out"),
    )
    # s0 a fresh                              run: 24
    # s1 p fresh; free [a]                    run: 26 (a is not released: c shares it, read at s4)
    # s2 q fresh; free [p, a]                 run: 29, then p released -> 27
    # s3 c: p is at the front but keyed T2; a matches -> c takes a; free [q, p]
    #                                         run: 27, then q released -> 24
    # s4 out fresh                            run: 25, then a released
    ort = plan(p)
    assert shares(p, ort) == {"c": "a"}
    assert fresh(p, ort) == ("a", "p", "q", "out")
    assert ort.free_step == (4, 2, 3, None)
    assert ort.in_use == (24, 26, 29, 27, 25)
    assert (ort.peak_bytes, ort.peak_step) == (29, 2)
    # The lower bound does not hold a during s2-s3: 24 | 26 | 5 | 27 | 25.
    assert analyze_liveness(p).live_bytes == (24, 26, 5, 27, 25)


KEY_CASES = [
    # (id, key of a, key of c, size of c, reused)
    ("same shape", A, (32, (2, 3)), 24, True),
    ("element bits", A, (16, (2, 3)), 12, False),
    ("rank", A, (32, (2, 3, 1)), 24, False),
    ("a dim", A, (32, (3, 2)), 24, False),
    ("symbol vs number", (32, ("N", 3)), (32, (2, 3)), 24, False),
    ("same symbol", (32, ("N", 3)), (32, ("N", 3)), 24, True),
    ("other symbol", (32, ("N", 3)), (32, ("M", 3)), 24, False),
    ("unknown dim", (32, (None, 3)), (32, (None, 3)), 24, False),
    ("unknown dim vs number", (32, (None, 3)), (32, (2, 3)), 24, False),
    ("key None", None, None, 24, False),
    ("key None vs known", None, A, 24, False),
]


@pytest.mark.parametrize(
    ("ka", "kc", "size_c", "reused"), [c[1:] for c in KEY_CASES], ids=[c[0] for c in KEY_CASES]
)
def test_reuse_needs_the_same_static_key(ka: Key, kc: Key, size_c: int, reused: bool) -> None:
    p = program(
        [src(), val("a", 24, ka), val("p", 2, T2), val("c", size_c, kc), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("g", "a", "p"),
        step("h", "p", "c"),
        step("k", "c", "out"),
    )
    # s0 a fresh; s1 p fresh, free [a]; s2 c takes a iff the keys match; s3 out fresh.
    # reused:  24 | 26 (a held for c) | 26, p released -> 24 | 25
    # fresh c: 24 | 26, a released -> 2 | 2 + c, p released -> c | c + 1
    ort = plan(p)
    assert same_key(ka, kc) is reused
    if reused:
        assert shares(p, ort) == {"c": "a"}
        assert fresh(p, ort) == ("a", "p", "out")
        assert ort.in_use == (24, 26, 26, 25)
    else:
        assert shares(p, ort) == {}
        assert fresh(p, ort) == ("a", "p", "c", "out")
        assert ort.in_use == (24, 26, 2 + size_c, size_c + 1)


def test_scalars_are_never_reused_from_the_free_list() -> None:
    S: Key = (32, ())
    p = program(
        [src(), val("a", 4, S), val("p", 2, T2), val("c", 4, S), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("g", "a", "p"),
        step("h", "p", "c"),
        step("k", "c", "out"),
    )
    # s0 a fresh                 run: 4
    # s1 p fresh; free [a]       run: 6, a released -> 2
    # s2 c: same rank-0 key as a, but scalars never match -> fresh
    #                            run: 6, p released -> 4
    # s3 out fresh               run: 5
    ort = plan(p)
    assert shares(p, ort) == {}
    assert fresh(p, ort) == ("a", "p", "c", "out")
    assert ort.in_use == (4, 6, 6, 5)
    assert (ort.peak_bytes, ort.peak_step) == (6, 1)


def test_scalars_may_be_computed_in_place() -> None:
    S: Key = (32, ())
    p = program(
        [src(), val("a", 4, S), val("y", 4, S), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("relu", "a", "y", inplace=[(0, 0)]),
        step("k", "y", "out"),
    )
    # s0 a fresh                                 run: 4
    # s1 y in place: a's buffer count is 1 and the keys match (rank 0 is fine here)
    #                                            run: 4
    # s2 out fresh                               run: 5, then a's buffer released
    ort = plan(p)
    assert shares(p, ort) == {"y": "a"}
    assert fresh(p, ort) == ("a", "out")
    assert ort.free_step == (2, None)
    assert ort.in_use == (4, 4, 5)


def test_the_most_recently_freed_buffer_is_taken_first() -> None:
    p = program(
        [
            src(),
            val("a", 24, A),
            val("b", 24, A),
            val("c", 3, T3),
            val("d", 5, T5),
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
    # s0 a fresh                      run: 24
    # s1 b fresh                      run: 48
    # s2 c fresh; free [a]            run: 51, a released -> 27
    # s3 d fresh; free [b, a]         run: 32 (b held: e shares it, read at s5)
    # s4 e takes b (front), not a; free [d, c, a]
    #                                 run: 32, c and d released -> 24
    # s5 out fresh                    run: 25, b released
    ort = plan(p)
    assert shares(p, ort) == {"e": "b"}
    assert fresh(p, ort) == ("a", "b", "c", "d", "out")
    assert ort.free_step == (2, 5, 4, 4, None)
    assert ort.in_use == (24, 48, 51, 32, 32, 25)
    assert (ort.peak_bytes, ort.peak_step) == (51, 2)


@pytest.mark.parametrize(("kw", "reused"), [(B, False), (A, True)], ids=["sharer's key", "defining key"])
def test_the_defining_values_key_is_compared(kw: Key, reused: bool) -> None:
    p = program(
        [
            src(),
            val("a", 24, A),
            val("v", 24, B),
            val("p", 1, T1),
            val("w", 24, kw),
            val("out", 2, T2, output=True),
        ],
        step("f", "in", "a"),
        step("reshape", "a", "v", alias=[(0, 0)]),
        step("g", "v", "p"),
        step("h", "p", "w"),
        step("k", "w", "out"),
    )
    # s0 a fresh (key A)                   run: 24
    # s1 v is a view: joins a's buffer     run: 24
    # s2 p fresh; a's buffer dies (a and v both read) -> free [a], a buffer *defined* with key A
    #                                      run: 25
    # s3 w keyed B (like v, the buffer's last sharer): no match -> fresh
    #    w keyed A (like a, its defining value): takes a's buffer
    #                                      run: 25 either way, p released -> 24
    # s4 out fresh                         run: 26
    ort = plan(p)
    if reused:
        assert shares(p, ort) == {"v": "a", "w": "a"}
        assert fresh(p, ort) == ("a", "p", "out")
        assert ort.free_step == (4, 3, None)
    else:
        assert shares(p, ort) == {"v": "a"}
        assert fresh(p, ort) == ("a", "p", "w", "out")
        assert ort.free_step == (2, 3, 4, None)
    assert ort.in_use == (24, 24, 25, 25, 26)


def test_a_view_of_an_intermediate_extends_its_buffers_life() -> None:
    p = program(
        [src(), val("a", 24, A), val("v", 24, B), val("b", 3, T3), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("reshape", "a", "v", alias=[(0, 0)]),
        step("g", "in", "b"),
        step("k", "v b", "out"),
    )
    # s0 a fresh                               run: 24
    # s1 v joins a's buffer (a's last read)    run: 24
    # s2 b fresh                               run: 27
    # s3 out fresh; a's buffer released only now, after v's read
    #                                          run: 28
    ort = plan(p)
    assert shares(p, ort) == {"v": "a"}
    assert fresh(p, ort) == ("a", "b", "out")
    assert ort.alloc_step == (0, 2, 3)
    assert ort.free_step == (3, 3, None)
    assert ort.in_use == (24, 24, 27, 28)
    assert (ort.peak_bytes, ort.peak_step) == (28, 3)


def test_a_view_of_a_source_allocates_nothing() -> None:
    p = program(
        [src(), val("v", 24, B), val("y", 24, B), val("out", 1, T1, output=True)],
        step("reshape", "in", "v", alias=[(0, 0)]),
        step("relu", "v", "y", inplace=[(0, 0)]),
        step("k", "y", "out"),
    )
    # s0 v joins the input's buffer, owned by the caller    run: 0
    # s1 y cannot run in place: the source's count never drops to 1 -> fresh
    #                                                       run: 24
    # s2 out fresh                                          run: 25
    ort = plan(p)
    assert shares(p, ort) == {"v": "in"}
    assert fresh(p, ort) == ("y", "out")
    assert ort.in_use == (0, 24, 25)
    assert (ort.peak_bytes, ort.peak_step) == (25, 2)


def test_in_place_when_the_input_dies_and_keys_match() -> None:
    p = program(
        [src(), val("a", 24, A), val("y", 24, A), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("relu", "a", "y", inplace=[(0, 0)]),
        step("k", "y", "out"),
    )
    # s0 a fresh                       run: 24
    # s1 y in a's buffer (count 1)     run: 24
    # s2 out fresh                     run: 25, a's buffer released
    ort = plan(p)
    assert shares(p, ort) == {"y": "a"}
    assert fresh(p, ort) == ("a", "out")
    assert ort.free_step == (2, None)
    assert ort.in_use == (24, 24, 25)


def test_no_in_place_when_a_later_step_still_reads_the_input() -> None:
    p = program(
        [src(), val("a", 24, A), val("y", 24, A), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("relu", "a", "y", inplace=[(0, 0)]),
        step("k", "y a", "out"),
    )
    # s0 a fresh                                  run: 24
    # s1 y: a's count is 2 (s1 and s2 read it) -> fresh
    #                                             run: 48
    # s2 out fresh                                run: 49, a and y released
    ort = plan(p)
    assert shares(p, ort) == {}
    assert fresh(p, ort) == ("a", "y", "out")
    assert ort.free_step == (2, 2, None)
    assert ort.in_use == (24, 48, 49)


def test_no_in_place_when_keys_differ() -> None:
    p = program(
        [src(), val("a", 24, A), val("y", 12, (16, (2, 3))), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("cast", "a", "y", inplace=[(0, 0)]),
        step("k", "y", "out"),
    )
    # s0 a fresh                                          run: 24
    # s1 y: a dies here but y has 16-bit elements -> fresh
    #                                                     run: 36, a released -> 12
    # s2 out fresh                                        run: 13
    ort = plan(p)
    assert shares(p, ort) == {}
    assert fresh(p, ort) == ("a", "y", "out")
    assert ort.in_use == (24, 36, 13)
    assert (ort.peak_bytes, ort.peak_step) == (36, 1)


def test_in_place_counts_the_buffer_not_the_value() -> None:
    p = program(
        [src(), val("a", 24, A), val("v", 24, B), val("y", 24, A), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("reshape", "a", "v", alias=[(0, 0)]),
        step("relu", "a", "y", inplace=[(0, 0)]),
        step("k", "v y", "out"),
    )
    # s0 a fresh                       run: 24
    # s1 v joins a's buffer            run: 24
    # s2 y: s2 is a's own last read, but the buffer still has v's read at s3 -> fresh
    #                                  run: 48
    # s3 out fresh                     run: 49
    ort = plan(p)
    assert shares(p, ort) == {"v": "a"}
    assert fresh(p, ort) == ("a", "y", "out")
    assert ort.in_use == (24, 24, 48, 49)


def test_in_place_through_a_view() -> None:
    p = program(
        [src(), val("a", 24, A), val("v", 24, B), val("y", 24, B), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("reshape", "a", "v", alias=[(0, 0)]),
        step("relu", "v", "y", inplace=[(0, 0)]),
        step("k", "y", "out"),
    )
    # s0 a fresh; s1 v joins a; s2 y: the buffer's count is 1 and v, y are both keyed B -> joins a
    # run: 24 | 24 | 24 | 25
    ort = plan(p)
    assert shares(p, ort) == {"v": "a", "y": "a"}
    assert fresh(p, ort) == ("a", "out")
    assert ort.in_use == (24, 24, 24, 25)


def test_a_buffer_taken_in_place_is_not_taken_again_by_the_next_output() -> None:
    p = program(
        [src(), val("x", 24, A), val("y", 24, A), val("z", 24, A), val("out", 1, T1, output=True)],
        step("f", "in", "x"),
        step("op", "x", "y z", inplace=[(0, 0), (0, 1)]),
        step("k", "y z", "out"),
    )
    # s0 x fresh                                               run: 24
    # s1 y in x's buffer (count 1); the buffer's count is now 1 + y's 2 = 3,
    #    so z's in-place request on the same input is refused -> fresh
    #                                                          run: 48
    # s2 out fresh                                             run: 49
    ort = plan(p)
    assert shares(p, ort) == {"y": "x"}
    assert fresh(p, ort) == ("x", "z", "out")
    assert ort.in_use == (24, 48, 49)


def test_a_graph_output_is_never_taken_in_place() -> None:
    p = program(
        [src(), val("o", 24, A, output=True), val("y", 24, A)],
        step("f", "in", "o"),
        step("relu", "o", "y", inplace=[(0, 0)]),
    )
    # s0 o fresh (count: 1 output + 1 producer + 1 read)          run: 24
    # s1 y: o's count is 2 at its last read (the caller holds it) -> fresh, never released (unread)
    #                                                             run: 48
    ort = plan(p)
    assert shares(p, ort) == {}
    assert fresh(p, ort) == ("o", "y")
    assert ort.free_step == (None, None)
    assert ort.in_use == (24, 48)


def test_an_in_place_output_planned_before_a_view_of_the_same_input_shares_with_it() -> None:
    # No kernel declares both an alias and an in-place pair on one input; this pins down what the
    # emulation (like onnxruntime's FindReusableInput, output by output) would do if one did.
    values = [src(), val("x", 24, A), val("y", 24, A), val("v", 24, B), val("out", 1, T1, output=True)]
    p = program(
        values,
        step("f", "in", "x"),
        step("op", "x", "y v", inplace=[(0, 0)], alias=[(0, 1)]),
        step("k", "y v", "out"),
    )
    # s0 x fresh                                                    run: 24
    # s1 y first: x's buffer count is 1 -> y in place; then v, a view, joins the same buffer
    #    although y and v are both read at s2                       run: 24
    # s2 out fresh                                                  run: 25
    ort = plan_ort(p)
    assert shares(p, ort) == {"y": "x", "v": "x"}
    assert ort.in_use == (24, 24, 25)
    # Liveness refuses the merge (x's storage lives on in v), so its lower bound (49) is above the
    # emulated peak and the checker flags the plan.
    with pytest.raises(PlanInvariantError):
        check_ort_plan(analyze_liveness(p), ort)

    q = program(
        values,
        step("f", "in", "x"),
        step("op", "x", "v y", inplace=[(0, 1)], alias=[(0, 0)]),
        step("k", "y v", "out"),
    )
    # s1 v first joins x's buffer (count 1 + v's 2 = 3), so y is refused -> fresh
    # run: 24 | 48 | 49
    ort = plan(q)
    assert shares(q, ort) == {"v": "x"}
    assert ort.in_use == (24, 48, 49)


def test_graph_outputs_get_their_own_buffer_never_released_nor_reused() -> None:
    p = program(
        [
            src(),
            val("a", 24, A),
            val("p", 1, T1),
            val("o", 24, A, output=True),
            val("c", 24, A),
            val("out2", 2, T2, output=True),
        ],
        step("f", "in", "a"),
        step("g", "a", "p"),
        step("h", "p", "o"),
        step("k", "o", "c"),
        step("m", "c", "out2"),
    )
    # s0 a fresh                                   run: 24
    # s1 p fresh; free [a]                         run: 25 (a held: c shares it)
    # s2 o is a graph output: its own buffer, though a's matches
    #                                              run: 49, p released -> 48
    # s3 c takes a (o's buffer is never freed)     run: 48, o not released
    # s4 out2 fresh                                run: 50, a released
    ort = plan(p)
    assert shares(p, ort) == {"c": "a"}
    assert fresh(p, ort) == ("a", "p", "o", "out2")
    assert ort.free_step == (4, 2, None, None)
    assert ort.in_use == (24, 25, 49, 48, 50)
    assert (ort.peak_bytes, ort.peak_step) == (50, 4)


def test_a_graph_output_view_gets_its_own_buffer() -> None:
    p = program(
        [src(), val("a", 24, A), val("o", 24, B, output=True)],
        step("f", "in", "a"),
        step("reshape", "a", "o", alias=[(0, 0)]),
    )
    # s0 a fresh                                         run: 24
    # s1 o: a graph output, so not a view of a -> fresh   run: 48, a released
    ort = plan(p)
    assert shares(p, ort) == {}
    assert fresh(p, ort) == ("a", "o")
    assert ort.free_step == (1, None)
    assert ort.in_use == (24, 48)


def test_an_unread_output_in_an_already_released_buffer_is_a_new_request() -> None:
    p = program(
        [src(), val("a", 24, A), val("b", 3, T3), val("u", 24, A), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("g", "a", "b"),
        step("h", "b", "u"),
        step("k", "b", "out"),
    )
    # s0 a fresh                               run: 24
    # s1 b fresh; free [a]                     run: 27, a released (no later sharer reads it) -> 3
    # s2 u (nothing reads it) takes a's buffer in the plan; free [a] again
    #                                          run: a's slot is gone -> a new request of 24,
    #                                          never released -> 27
    # s3 out fresh                             run: 28, b released
    ort = plan(p)
    assert shares(p, ort) == {"u": "a"}
    assert fresh(p, ort) == ("a", "b", "u", "out")
    assert ort.alloc_step == (0, 1, 2, 3)
    assert ort.free_step == (1, 3, None, None)
    assert ort.in_use == (24, 27, 27, 28)
    assert (ort.peak_bytes, ort.peak_step) == (28, 3)


def test_an_unread_output_in_a_still_held_buffer_shares_it() -> None:
    p = program(
        [
            src(),
            val("a", 24, A),
            val("b", 3, T3),
            val("u", 24, A),
            val("w", 24, A),
            val("out", 1, T1, output=True),
        ],
        step("f", "in", "a"),
        step("g", "a", "b"),
        step("h", "b", "u"),
        step("k", "b", "w"),
        step("m", "w", "out"),
    )
    # s0 a fresh                               run: 24
    # s1 b fresh; free [a]                     run: 27 (a held: w shares it, read at s4)
    # s2 u (unread) takes a; free [a] again    run: 27, shares the held buffer
    # s3 w takes a again; free [b]             run: 27, b released -> 24
    # s4 out fresh                             run: 25, a released
    ort = plan(p)
    assert shares(p, ort) == {"u": "a", "w": "a"}
    assert fresh(p, ort) == ("a", "b", "out")
    assert ort.free_step == (4, 3, None)
    assert ort.in_use == (24, 27, 27, 27, 25)
    assert (ort.peak_bytes, ort.peak_step) == (27, 1)


def test_a_value_read_twice_by_one_step_counts_twice() -> None:
    p = program(
        [src(), val("a", 24, A), val("y", 24, A), val("c", 24, A), val("out", 1, T1, output=True)],
        step("f", "in", "a"),
        step("mul", "a a", "y", inplace=[(0, 0)]),
        step("g", "y", "c"),
        step("k", "c", "out"),
    )
    # s0 a fresh (count: 1 producer + 2 reads = 3, then 2)      run: 24
    # s1 y: a's count is 2, not 1 -> no in place, fresh; both reads decrement: a dies, free [a]
    #                                                           run: 48 (a held: c shares it)
    # s2 c takes a; free [y]                                    run: 48, y released -> 24
    # s3 out fresh                                              run: 25
    ort = plan(p)
    assert shares(p, ort) == {"c": "a"}
    assert fresh(p, ort) == ("a", "y", "out")
    assert ort.in_use == (24, 48, 48, 25)


def test_multiple_outputs_are_planned_in_order() -> None:
    p = program(
        [
            src(),
            val("a", 24, A),
            val("p", 1, T1),
            val("c", 24, A),
            val("d", 24, A),
            val("out", 2, T2, output=True),
        ],
        step("f", "in", "a"),
        step("g", "a", "p"),
        step("split", "p", "c d"),
        step("k", "c d", "out"),
    )
    # s0 a fresh                                   run: 24
    # s1 p fresh; free [a]                         run: 25
    # s2 c takes a (first output first); d finds the list empty -> fresh
    #                                              run: 49, p released -> 48
    # s3 out fresh                                 run: 50
    ort = plan(p)
    assert shares(p, ort) == {"c": "a"}
    assert fresh(p, ort) == ("a", "p", "d", "out")
    assert ort.in_use == (24, 25, 49, 50)
    assert (ort.peak_bytes, ort.peak_step) == (50, 3)


def test_unknown_sizes_are_listed_and_left_out_of_the_totals() -> None:
    p = program(
        [src(), val("a", None), val("b", 3, T3), val("y", 3, T3), val("out", None, output=True)],
        step("f", "in", "a"),
        step("g", "in", "b"),
        step("relu", "b", "y", inplace=[(0, 0)]),
        step("k", "y a", "out"),
    )
    # s0 a fresh, size unknown -> counted 0      run: 0
    # s1 b fresh                                 run: 3
    # s2 y in b's buffer                         run: 3
    # s3 out fresh, size unknown                 run: 3
    ort = plan(p)
    assert shares(p, ort) == {"y": "b"}
    assert fresh(p, ort) == ("a", "b", "out")
    assert ort.unknown_sizes == (1, 4)
    assert ort.in_use == (0, 3, 3, 3)
    assert (ort.peak_bytes, ort.peak_step) == (3, 1)


def test_a_program_with_no_steps() -> None:
    ort = plan(program([src()]))
    assert ort.in_use == ()
    assert (ort.peak_bytes, ort.peak_step) == (0, -1)
    assert ort.fresh == ()


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ((32, (2, "N")), (32, (2, "N")), True),
        ((32, ()), (32, ()), True),  # rank 0 is refused by the free-list search, not by same_key
        ((32, (2, "N")), (32, (2, "M")), False),
        ((32, (2, 3)), (32, (2, "3")), False),
        ((32, (None,)), (32, (None,)), False),
        ((32, ("", 3)), (32, ("", 3)), False),  # an empty symbol is no name (SameShape)
        ((32, (2,)), None, False),
        (None, None, False),
    ],
)
def test_same_key(a: Key, b: Key, same: bool) -> None:
    assert same_key(a, b) is same
    assert same_key(b, a) is same


def test_buffers_are_reused_only_within_one_device() -> None:
    """A freed CUDA buffer is not reused by a CPU value of the same key (FindReusableTensor
    compares locations), and each device's requests are summed apart."""
    from dataclasses import replace

    values = [
        src(),
        replace(val("a", 24, A), device="cuda"),  # on the device, freed after step 1
        replace(val("b", 24, A), device="cuda"),
        replace(val("c", 24, A), device="cpu"),  # same key as the freed 'a', other device: fresh
        replace(val("d", 24, A), device="cuda"),
        replace(val("out", 24, A, output=True), device="cuda"),
    ]
    p = replace(
        program(
            values,
            step("s0", "in", "a"),
            step("s1", "a", "b"),
            step("s2", "b", "c"),
            step("s3", "c", "d"),
            step("s4", "d", "out"),
        ),
        device="cuda",
    )
    ort = plan(p)
    # 'c' would take the freed 'a' if devices were ignored; 'd' takes the most recently freed
    # CUDA buffer, 'b' (released after s2, so d's step requests 24 again).
    assert shares(p, ort) == {"d": "b"}
    # cuda held after each step: a; a+b; b (a released after s1); d; d+out
    assert ort.in_use == (24, 48, 24, 24, 48)
    assert ort.peak_bytes == 48
    assert ort.other_peaks == (("cpu", 24),)


def test_a_value_another_stream_reads_is_never_reused_nor_updated_in_place() -> None:
    """ComputeReusePlan plans each stream apart with use counts over the whole program: 'a'
    (written by stream 0, read by stream 1) keeps the writer's count, so 'b' may not take it in
    place — as it does when all steps are one stream."""
    from dataclasses import replace

    values = [src(), val("a", 24, A), val("b", 24, A), val("c", 24, A), val("out", 24, A, output=True)]
    steps = (
        step("s0", "in", "a"),
        step("s1", "a", "b", inplace=[(0, 0)]),
        step("s2", "b", "c"),
        step("s3", "c", "out"),
    )
    one = program(values, *steps)
    assert shares(one, plan(one)) == {"b": "a"}
    two = replace(one, steps=(one.steps[0], *(replace(s, stream=1) for s in one.steps[1:])))
    ort = plan(two)
    assert shares(two, ort) == {}
    assert ort.in_use == (24, 48, 48, 48)
