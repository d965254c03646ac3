"""Property tests for the planners on random valid programs.

A program is a random DAG: a few sources, then steps that read earlier values (repeats allowed)
and write one or two new ones, some as views (alias) or in-place requests of an input, some graph
outputs, some read by nothing. Keys come from a small pool, so reuse actually happens; each key has
one size (a static shape means one runtime size), which is what the planners assume: onnxruntime
decides reuse on keys alone. Views keep their input's bytes (a Reshape does).

``chain_free`` programs leave out in-place requests on a value that is itself an in-place output
(or a view of one) and allow one in-place pair per step: the liveness pass mis-merges those (see
``test_planner_liveness``); the full generator is kept for an expected-failure property.
"""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from graphmem.planner.check import check_ort_plan, check_placement
from graphmem.planner.greedy import plan_greedy
from graphmem.planner.liveness import analyze_liveness
from graphmem.planner.ortplan import plan_ort
from graphmem.planner.program import Key, Program, Step, Value

import pytest

# key -> its one size; keys that never match (a None dim, None) get any size.
POOL: dict[Key, int | None] = {
    (32, (2, 3)): 24,
    (32, (6,)): 24,  # same bytes, another rank
    (16, (12,)): 24,  # same bytes, other element size
    (32, ("N", 3)): 24,  # a symbol (N = 2 at run time)
    (32, (4,)): 16,
    (32, ("N", 2)): 16,
    (32, ()): 4,  # rank 0: in place only
    (8, (5,)): 5,
    (32, ("M", 5)): None,  # M unbound at run time: size unknown
}
NEVER_MATCH: tuple[Key, ...] = ((32, (None, 3)), None)

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def key_and_size(draw: st.DrawFn) -> tuple[Key, int | None]:
    if draw(st.integers(0, 4)) == 0:
        key = draw(st.sampled_from(NEVER_MATCH))
        return key, draw(st.one_of(st.none(), st.integers(0, 40)))
    key = draw(st.sampled_from(list(POOL)))
    return key, POOL[key]


@st.composite
def view_key(draw: st.DrawFn, size: int | None) -> tuple[Key, int | None]:
    """A key for a view of a ``size``-byte value: any pool key of that size, or one never matching."""
    same = [k for k, s in POOL.items() if s == size]
    if same and draw(st.booleans()):
        return draw(st.sampled_from(same)), size
    return draw(st.sampled_from(NEVER_MATCH)), size


@st.composite
def programs(draw: st.DrawFn, *, chain_free: bool = True) -> Program:
    values: list[Value] = []
    for i in range(draw(st.integers(1, 3))):
        key, size = draw(key_and_size())
        values.append(Value(name=f"in{i}", size=size, key=key, source=True))
    tainted: set[int] = set()  # in-place outputs and views of them
    steps: list[Step] = []
    for s in range(draw(st.integers(0, 8))):
        inputs = draw(st.lists(st.integers(0, len(values) - 1), min_size=1, max_size=3))
        outputs: list[int] = []
        alias: list[tuple[int, int]] = []
        inplace: list[tuple[int, int]] = []
        for o in range(draw(st.integers(1, 2))):
            kind = draw(st.sampled_from(["plain", "plain", "alias", "inplace", "inplace"]))
            i = draw(st.integers(0, len(inputs) - 1))
            source = values[inputs[i]]
            new = len(values)
            if kind == "alias":
                key, size = draw(view_key(source.size))
                alias.append((i, o))
                if inputs[i] in tainted:
                    tainted.add(new)
            elif kind == "inplace" and not (chain_free and (inplace or inputs[i] in tainted)):
                key, size = draw(st.one_of(st.just((source.key, source.size)), key_and_size()))
                inplace.append((i, o))
                tainted.add(new)
            else:
                key, size = draw(key_and_size())
            output = draw(st.integers(0, 4)) == 0
            values.append(Value(name=f"v{new}", size=size, key=key, output=output))
            outputs.append(new)
        steps.append(
            Step(label=f"s{s}", inputs=tuple(inputs), outputs=tuple(outputs), alias=tuple(alias), inplace=tuple(inplace))
        )
    return Program(values=tuple(values), steps=tuple(steps))


def _defined_at(p: Program) -> list[int]:
    """Step that writes each value; -1 for sources."""
    at = [-1] * len(p.values)
    for s, step in enumerate(p.steps):
        for v in step.outputs:
            at[v] = s
    return at


@SETTINGS
@given(programs())
def test_invariant_checks_never_raise(p: Program) -> None:
    live = analyze_liveness(p)
    placement = plan_greedy(live)
    check_placement(live, placement)
    check_ort_plan(live, plan_ort(p))


@SETTINGS
@given(programs())
def test_bounds_hold(p: Program) -> None:
    live = analyze_liveness(p)
    ort = plan_ort(p)
    arena = plan_greedy(live).arena_bytes
    assert live.lower_bound <= arena <= live.no_reuse
    assert live.lower_bound <= ort.peak_bytes <= live.no_reuse


@SETTINGS
@given(programs())
def test_onnxruntime_holds_at_least_the_live_bytes_at_every_step(p: Program) -> None:
    live = analyze_liveness(p)
    ort = plan_ort(p)
    assert len(ort.in_use) == len(live.live_bytes) == len(p.steps)
    for held, needed in zip(ort.in_use, live.live_bytes):
        assert 0 <= needed <= held


@SETTINGS
@given(programs(chain_free=False))
def test_ort_plan_shape(p: Program) -> None:
    ort = plan_ort(p)
    at = _defined_at(p)
    assert all(b >= 0 for b in ort.in_use)
    assert ort.peak_bytes == max(ort.in_use, default=0)
    assert ort.peak_step == (ort.in_use.index(ort.peak_bytes) if p.steps else -1)
    assert len(ort.fresh) == len(ort.alloc_step) == len(ort.free_step)
    for v, b in enumerate(ort.buffer_of):
        assert b == v or at[b] < at[v], f"value {v} uses the buffer of {b}, defined later"
    for v, value in enumerate(p.values):
        if value.output:
            assert ort.buffer_of[v] == v
    for v, s, end in zip(ort.fresh, ort.alloc_step, ort.free_step):
        assert s == at[v]
        assert end is None or end >= s
        if p.values[v].output:
            assert end is None
    assert set(ort.unknown_sizes) == {v for v in ort.fresh if p.values[v].size is None}


@SETTINGS
@given(programs())
def test_storages_sharing_an_onnxruntime_buffer_are_never_live_together(p: Program) -> None:
    live = analyze_liveness(p)
    ort = plan_ort(p)
    by_buffer: dict[int, list[tuple[int, int]]] = {}
    for st_ in live.storages:
        by_buffer.setdefault(ort.buffer_of[st_.root], []).append((st_.first, st_.last))
    for spans in by_buffer.values():
        spans.sort()
        for (_, last), (first, _) in zip(spans, spans[1:]):
            assert last < first


@SETTINGS
@given(programs(chain_free=False))
def test_liveness_shape(p: Program) -> None:
    live = analyze_liveness(p)
    at = _defined_at(p)
    end = len(p.steps) - 1
    assert live.lower_bound == max(live.live_bytes, default=0)
    for st_ in live.storages:
        assert at[st_.root] == st_.first <= st_.last <= end
        assert st_.size == p.values[st_.root].size
        if p.values[st_.root].output:
            assert st_.last == end
    for s, step in enumerate(p.steps):
        for i, o in step.alias:
            out = step.outputs[o]
            if not p.values[out].output:
                assert live.storage_of[out] == live.storage_of[step.inputs[i]]


@SETTINGS
@given(programs(chain_free=False))
def test_plans_are_deterministic(p: Program) -> None:
    copy = Program(values=tuple(p.values), steps=tuple(p.steps))
    assert plan_ort(p) == plan_ort(copy)
    assert analyze_liveness(p) == analyze_liveness(copy)
    assert plan_greedy(analyze_liveness(p)) == plan_greedy(analyze_liveness(copy))


_A: Key = (32, (2, 3))
CHAIN = Program(
    values=(
        Value(name="in", size=24, key=_A, source=True),
        Value(name="x", size=24, key=_A),
        Value(name="y", size=24, key=_A),
        Value(name="z", size=24, key=_A),
        Value(name="out", size=1, key=(8, (1,)), output=True),
    ),
    steps=(
        Step(label="f", inputs=(0,), outputs=(1,)),
        Step(label="relu", inputs=(1,), outputs=(2,), inplace=((0, 0),)),
        Step(label="sigmoid", inputs=(2,), outputs=(3,), inplace=((0, 0),)),
        Step(label="k", inputs=(3,), outputs=(4,)),
    ),
)


@pytest.mark.xfail(
    strict=True,
    reason="liveness does not merge in-place chains (stale storage_last): the lower bound can "
    "exceed onnxruntime's peak; see test_planner_liveness.test_an_in_place_chain_is_one_storage",
)
@SETTINGS
@given(programs(chain_free=False))
@example(CHAIN)
def test_invariant_checks_never_raise_with_in_place_chains(p: Program) -> None:
    live = analyze_liveness(p)
    check_placement(live, plan_greedy(live))
    check_ort_plan(live, plan_ort(p))
