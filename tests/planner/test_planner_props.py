"""Property tests for the planners on random valid programs.

A program is a random DAG: a few sources, then steps that read earlier values (repeats allowed)
and write one or two new ones, some as views (alias) or in-place requests of an input, some graph
outputs, some read by nothing. Keys come from a small pool, so reuse actually happens; each key has
one size (a static shape means one runtime size), which is what the planners assume: onnxruntime
decides reuse on keys alone. Views keep their input's bytes (a Reshape does).

Steps never view and take in place the same input (no kernel declares both; onnxruntime, planning
output by output, would then put a live view and a live in-place output in one buffer, see
``test_planner_ort``), except in the generator behind the shape-only properties (``mixed=True``).
"""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from graphmem.planner.check import check_placement
from graphmem.planner.greedy import plan_greedy
from graphmem.planner.liveness import analyze_liveness
from graphmem.ort.allocation import check_ort_plan, plan_ort
from graphmem.planner.program import Key, Program, Step, Value

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
def programs(draw: st.DrawFn, *, mixed: bool = False) -> Program:
    """A random valid program; ``mixed`` allows a view and an in-place output of one input in
    one step."""
    values: list[Value] = []
    for i in range(draw(st.integers(1, 3))):
        key, size = draw(key_and_size())
        values.append(Value(name=f"in{i}", size=size, key=key, source=True))
    steps: list[Step] = []
    for s in range(draw(st.integers(0, 8))):
        inputs = draw(st.lists(st.integers(0, len(values) - 1), min_size=1, max_size=3))
        outputs: list[int] = []
        alias: list[tuple[int, int]] = []
        inplace: list[tuple[int, int]] = []
        viewed: set[int] = set()  # input values this step views
        in_placed: set[int] = set()  # input values this step may take in place
        for o in range(draw(st.integers(1, 2))):
            kind = draw(st.sampled_from(["plain", "plain", "alias", "inplace", "inplace"]))
            i = draw(st.integers(0, len(inputs) - 1))
            source = values[inputs[i]]
            if kind == "alias" and (mixed or inputs[i] not in in_placed):
                key, size = draw(view_key(source.size))
                alias.append((i, o))
                viewed.add(inputs[i])
            elif kind == "inplace" and (mixed or inputs[i] not in viewed):
                key, size = draw(st.one_of(st.just((source.key, source.size)), key_and_size()))
                inplace.append((i, o))
                in_placed.add(inputs[i])
            else:
                key, size = draw(key_and_size())
            output = draw(st.integers(0, 4)) == 0
            outputs.append(len(values))
            values.append(Value(name=f"v{len(values)}", size=size, key=key, output=output))
        steps.append(
            Step(
                label=f"s{s}",
                inputs=tuple(inputs),
                outputs=tuple(outputs),
                alias=tuple(alias),
                inplace=tuple(inplace),
            )
        )
    return Program(values=tuple(values), steps=tuple(steps))


def _defined_at(p: Program) -> list[int]:
    """Step that writes each value; -1 for sources."""
    at = [-1] * len(p.values)
    for s, step in enumerate(p.steps):
        for v in step.outputs:
            at[v] = s
    return at


def _check_invariants(p: Program) -> None:
    """The invariant checker never raises."""
    live = analyze_liveness(p)
    check_placement(live, plan_greedy(live))
    check_ort_plan(live, plan_ort(p))


def _check_bounds(p: Program) -> None:
    """lower bound <= greedy arena <= no-reuse, and lower bound <= onnxruntime peak <= no-reuse."""
    live = analyze_liveness(p)
    ort = plan_ort(p)
    arena = plan_greedy(live).arena_bytes
    assert live.lower_bound <= arena <= live.no_reuse
    assert live.lower_bound <= ort.peak_bytes <= live.no_reuse


def _check_held_covers_live(p: Program) -> None:
    """Step by step, onnxruntime holds at least what must be live (a pointwise lower bound)."""
    live = analyze_liveness(p)
    ort = plan_ort(p)
    assert len(ort.in_use) == len(live.live_bytes) == len(p.steps)
    for held, needed in zip(ort.in_use, live.live_bytes):
        assert 0 <= needed <= held


def _check_taken_buffers_are_dead(p: Program) -> None:
    """onnxruntime only takes a buffer nobody reads any more: from the free list, every earlier
    occupant was last read before the taking step; in place, at that very step at the latest."""
    ort = plan_ort(p)
    at = _defined_at(p)
    end = len(p.steps) - 1
    last = list(at)
    for s, step in enumerate(p.steps):
        for v in step.inputs:
            last[v] = s
    for v, value in enumerate(p.values):
        if value.output or value.source:
            last[v] = end
    for s, step in enumerate(p.steps):
        for o, v in enumerate(step.outputs):
            b = ort.buffer_of[v]
            if b == v or any(o == oo and ort.buffer_of[step.inputs[i]] == b for i, oo in step.alias):
                continue
            in_place = any(o == oo and ort.buffer_of[step.inputs[i]] == b for i, oo in step.inplace)
            for w in range(len(p.values)):
                if w != v and ort.buffer_of[w] == b and at[w] < s:
                    assert last[w] <= s if in_place else last[w] < s, (v, w)


def _check_storages_hold_one_value_at_a_time(p: Program) -> None:
    """Values merged into one storage (views aside) follow each other: the next is written at the
    earliest at the step the data before it is last needed (in place); a graph output is needed
    after the last step."""
    live = analyze_liveness(p)
    at = _defined_at(p)
    last = list(at)
    for s, step in enumerate(p.steps):
        for v in step.inputs:
            last[v] = s
    viewed_by: dict[int, int] = {}  # view -> its input, for views sharing the input's storage
    for step in p.steps:
        for i, o in step.alias:
            out = step.outputs[o]
            if live.storage_of[out] == live.storage_of[step.inputs[i]]:
                viewed_by[out] = step.inputs[i]
    for v, value in enumerate(p.values):
        if value.output:
            last[v] = len(p.steps)
    for v in reversed(range(len(p.values))):  # a view comes after its input
        if v in viewed_by:
            last[viewed_by[v]] = max(last[viewed_by[v]], last[v])
    for st_ in live.storages:
        members = sorted(
            (at[v], last[v])
            for v in range(len(p.values))
            if live.storage_of[v] == st_.root and v not in viewed_by
        )
        needed = -1
        for first, end in members:
            assert first >= needed, (st_.root, members)
            needed = max(needed, end)


_A: Key = (32, (2, 3))
_T: Key = (8, (1,))


def _program(values: tuple[tuple[str, Key, bool], ...], *steps: Step) -> Program:
    """Values as (name, key, graph output) after one 24-byte source ``in``; sizes from the keys."""
    return Program(
        values=(Value(name="in", size=24, key=_A, source=True),)
        + tuple(Value(name=n, size=24 if k == _A else 1, key=k, output=out) for n, k, out in values),
        steps=steps,
    )


# Regressions once found here (liveness in-place merging), kept as explicit examples.
IN_PLACE_CHAIN = _program(
    (("x", _A, False), ("y", _A, False), ("z", _A, False), ("out", _T, True)),
    Step(label="f", inputs=(0,), outputs=(1,)),
    Step(label="relu", inputs=(1,), outputs=(2,), inplace=((0, 0),)),
    Step(label="sigmoid", inputs=(2,), outputs=(3,), inplace=((0, 0),)),
    Step(label="k", inputs=(3,), outputs=(4,)),
)
TWO_IN_PLACE_OUTPUTS = _program(
    (("x", _A, False), ("y", _A, False), ("z", _A, False), ("out", _T, True)),
    Step(label="f", inputs=(0,), outputs=(1,)),
    Step(label="op", inputs=(1,), outputs=(2, 3), inplace=((0, 0), (0, 1))),
    Step(label="k", inputs=(2, 3), outputs=(4,)),
)
IN_PLACE_ON_A_GRAPH_OUTPUT = _program(
    (("o", _A, True), ("y", _A, False)),
    Step(label="f", inputs=(0,), outputs=(1,)),
    Step(label="relu", inputs=(1,), outputs=(2,), inplace=((0, 0),)),
)


@SETTINGS
@given(programs())
@example(IN_PLACE_CHAIN)
@example(TWO_IN_PLACE_OUTPUTS)
@example(IN_PLACE_ON_A_GRAPH_OUTPUT)
def test_plans_keep_every_invariant(p: Program) -> None:
    _check_invariants(p)
    _check_bounds(p)
    _check_held_covers_live(p)
    _check_taken_buffers_are_dead(p)
    _check_storages_hold_one_value_at_a_time(p)


def _check_ort_plan_shape(p: Program) -> None:
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


def _check_liveness_shape(p: Program) -> None:
    live = analyze_liveness(p)
    at = _defined_at(p)
    end = len(p.steps) - 1
    assert live.lower_bound == max(live.live_bytes, default=0)
    assert all(b >= 0 for b in live.live_bytes)
    for st_ in live.storages:
        assert at[st_.root] == st_.first <= st_.last <= end
        assert st_.size == p.values[st_.root].size
        if p.values[st_.root].output:
            assert st_.last == end
    for step in p.steps:
        for i, o in step.alias:
            out = step.outputs[o]
            if not p.values[out].output:
                assert live.storage_of[out] == live.storage_of[step.inputs[i]]


def _check_deterministic(p: Program) -> None:
    copy = Program(values=tuple(p.values), steps=tuple(p.steps))
    assert plan_ort(p) == plan_ort(copy)
    assert analyze_liveness(p) == analyze_liveness(copy)
    assert plan_greedy(analyze_liveness(p)) == plan_greedy(analyze_liveness(copy))


@SETTINGS
@given(programs(mixed=True))
def test_plans_are_well_formed(p: Program) -> None:
    _check_ort_plan_shape(p)
    _check_liveness_shape(p)
    _check_deterministic(p)
