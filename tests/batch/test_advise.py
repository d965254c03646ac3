"""``graphmem.batch.advise``: each session setting changed on its own, predicted, ranked, with the
command that measures it, on the committed tiny CNN (exact bytes, hand-computed where the arena's
rules make them so)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from builders import CNN
from graphmem.analysis.graph_opt import analyze_graph_opt
from graphmem.analysis.session import session_figures
from graphmem.batch.advise import SETTINGS, advise, input_items, option_pairs, verify_command
from graphmem.errors import UsageError
from graphmem.ort.held.options import SessionOptions

ONE_THREAD = ["intra_op_num_threads=1"]


@pytest.fixture(scope="module")
def advice():  # type: ignore[no-untyped-def]
    return advise(CNN, dims={"batch": 2}, session_options=ONE_THREAD, levels=())


def _line(a, change):  # type: ignore[no-untyped-def]
    return next(x for x in a.lines if x.change == change)


def test_the_memory_pattern_costs_one_region_of_two_mib(advice) -> None:  # type: ignore[no-untyped-def]
    # tiny_cnn at batch 2, none, one thread: creation reserves the small initializers, 2,152 B;
    # run 1 requests at most 655,360 B: the arena's first region, 1 MiB (initial_chunk_size_bytes)
    #   -> 2,152 + 1,048,576 = 1,050,728 B over run 1;
    # from run 2 the memory pattern's 655,360 B block is taken first (before the first node) in
    # that region; the first node's 65,536 B request then finds no chunk left there and the arena
    # extends by its next doubling, 2 MiB (arena_figures' regions: run 2, step 0, request 65,536)
    #   -> 1,050,728 + 2,097,152 = 3,147,880 B steady. Without the pattern run 2 repeats run 1.
    c = advice.current
    assert (c.arena_before_run_bytes, c.arena_first_run_bytes, c.arena_steady_bytes) == (2_152, 1_050_728, 3_147_880)
    no_pattern = _line(advice, "enable_mem_pattern=0")
    assert no_pattern.figures.arena_steady_bytes == 1_050_728
    assert no_pattern.arena_saving_bytes == 2_097_152  # the pattern's region, nothing else
    assert no_pattern.resident_saving_bytes == c.resident_bytes - no_pattern.figures.resident_bytes
    assert "one arena allocation per tensor per run" in no_pattern.speed


def test_every_line_is_the_session_block_under_its_options(advice) -> None:  # type: ignore[no-untyped-def]
    a = analyze_graph_opt(CNN, "none", dims={"batch": 2})
    base = SessionOptions(intra_op_num_threads=1)
    expected = {
        "enable_mem_pattern=0": replace(base, enable_mem_pattern=False),
        "arena_extend_strategy=kSameAsRequested": replace(base, arena_extend_strategy="kSameAsRequested"),
        "enable_cpu_mem_arena=0": replace(base, enable_cpu_mem_arena=False),
        "session.disable_prepacking=1": replace(base, disable_prepacking=True),
        "intra_op_num_threads=2": replace(base, intra_op_num_threads=2),  # the pinned host's default
    }
    assert sorted(x.change for x in advice.lines) == sorted(expected)
    for change, opts in expected.items():
        x = _line(advice, change)
        f = session_figures(a, opts)
        assert (x.figures.arena_steady_bytes, x.figures.resident_bytes) == (f.arena_steady_bytes, f.resident_bytes)
        if opts.enable_cpu_mem_arena:
            assert x.arena_saving_bytes == advice.current.arena_steady_bytes - f.arena_steady_bytes
        else:  # no arena: 0 held there says nothing about what the session takes
            assert x.arena_saving_bytes is None
        assert x.resident_saving_bytes == advice.current.resident_bytes - f.resident_bytes


def test_lines_are_ranked_by_resident_saved_then_arena(advice) -> None:  # type: ignore[no-untyped-def]
    keys = [(-x.resident_saving_bytes, -(x.arena_saving_bytes or 0)) for x in advice.lines]
    assert keys == sorted(keys)
    assert {x.setting for x in advice.lines} <= set(SETTINGS)


def test_each_line_names_the_verify_command_that_measures_it(advice) -> None:  # type: ignore[no-untyped-def]
    x = _line(advice, "arena_extend_strategy=kSameAsRequested")
    assert x.pairs == ("arena_extend_strategy=kSameAsRequested", "intra_op_num_threads=1")
    assert x.command == (f"graphmem verify {CNN} --dim batch=2 --graph-opt none "
                         "--session-option arena_extend_strategy=kSameAsRequested --session-option intra_op_num_threads=1")
    assert advice.current_command == f"graphmem verify {CNN} --dim batch=2 --graph-opt none --session-option intra_op_num_threads=1"


def test_speed_is_stated_from_the_sources_or_said_unknown(advice) -> None:  # type: ignore[no-untyped-def]
    for x in advice.lines:
        assert x.speed and x.speed_source.startswith("core/")
    threads = _line(advice, "intra_op_num_threads=2")
    assert "not known from the sources" in threads.speed
    prepack = _line(advice, "session.disable_prepacking=1")
    assert "(none in this graph)" in prepack.speed or "Conv" in prepack.speed or "Gemm" in prepack.speed


def test_current_options_from_the_user_flip_the_other_way() -> None:
    a = advise(CNN, dims={"batch": 2}, levels=(), session_options=[
        "enable_mem_pattern=0", "arena_extend_strategy=kSameAsRequested", "intra_op_num_threads=2"])
    assert a.pairs == ("enable_mem_pattern=0", "arena_extend_strategy=kSameAsRequested", "intra_op_num_threads=2")
    changes = {x.change for x in a.lines}
    assert {"enable_mem_pattern=1", "arena_extend_strategy=kNextPowerOfTwo", "intra_op_num_threads=1"} <= changes
    back = next(x for x in a.lines if x.change == "enable_mem_pattern=1")
    assert back.pairs == ("arena_extend_strategy=kSameAsRequested", "intra_op_num_threads=2")


def test_levels_are_lines_or_skipped_with_a_reason() -> None:
    a = advise(CNN, dims={"batch": 1}, session_options=ONE_THREAD, levels=("all",))
    levels = [x for x in a.lines if x.setting == "graph_opt"]
    skipped = [s for s in a.skipped if s.setting == "graph_opt"]
    assert len(levels) + len(skipped) == 1
    for x in levels:
        assert x.graph_opt == "all" and "--graph-opt all" in x.command
        assert "not known from the sources" in x.speed
    for s in skipped:
        assert s.value == "all" and s.reason


def test_bad_input_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="enable_mem_patern"):
        advise(CNN, dims={"batch": 1}, session_options=["enable_mem_patern=0"], levels=())
    with pytest.raises(UsageError, match="--graph-opt"):
        advise(CNN, dims={"batch": 1}, graph_opt="max", levels=())
    with pytest.raises(UsageError, match="level 'max'"):
        advise(CNN, dims={"batch": 1}, levels=("max",))


def test_option_pairs_and_input_items() -> None:
    assert option_pairs(SessionOptions(intra_op_num_threads=4)) == ("intra_op_num_threads=4",)
    assert option_pairs(SessionOptions(intra_op_num_threads=1, enable_cpu_mem_arena=False, disable_prepacking=True)) == (
        "enable_cpu_mem_arena=0", "session.disable_prepacking=1", "intra_op_num_threads=1")
    assert input_items({"batch": 2}, {"x": (1, 3, 8, 8), "s": ((4, 100), (2, 100)), "o": None}, {"sr": (16000,)}) == (
        "--dim", "batch=2", "--shape", "x=1x3x8x8", "--shape", "s=[4x100,2x100]", "--shape", "o=none", "--value", "sr=16000")
    assert verify_command("my model.onnx", ("--dim", "batch=1"), "all", ("enable_mem_pattern=0",)) == (
        "graphmem verify 'my model.onnx' --dim batch=1 --graph-opt all --session-option enable_mem_pattern=0")
