"""Session options as a value (graphmem.ort.held.options): onnxruntime's names and defaults, the
parser's one-line errors, and what graphmem must set on onnxruntime to get them."""

from __future__ import annotations

import pytest

from graphmem.errors import UsageError
from graphmem.ort.held.options import SessionOptions, parse_session_options


def test_defaults_are_onnxruntimes() -> None:
    o = parse_session_options([], default_threads=4)
    assert o == SessionOptions(intra_op_num_threads=4)  # 0 (onnxruntime's default) resolved from the host
    d = o.as_dict()
    assert d["enable_cpu_mem_arena"] is True and d["enable_mem_pattern"] is True
    assert d["session.disable_prepacking"] == "0" and d["session.use_device_allocator_for_initializers"] == "0"
    assert d["arena_extend_strategy"] == "kNextPowerOfTwo" and d["initial_chunk_size_bytes"] == 1 << 20
    assert d["max_dead_bytes_per_chunk"] == 128 << 20 and d["initial_growth_chunk_size_bytes"] == 2 << 20
    assert d["max_power_of_two_extend_bytes"] == 1 << 30 and d["max_mem"] == 0
    assert d["graph_optimization_level"] == "ORT_DISABLE_ALL" and d["execution_mode"] == "ORT_SEQUENTIAL"
    assert not o.uses_env_arena() and o.arena_cfg() == {}


def test_values_and_the_graph_level() -> None:
    o = parse_session_options(
        ["enable_mem_pattern=0", "arena_extend_strategy=1", "session.disable_prepacking=true", "intra_op_num_threads=3"],
        graph_opt="all", default_threads=2,
    )
    assert not o.enable_mem_pattern and o.disable_prepacking and o.intra_op_num_threads == 3
    assert o.arena_extend_strategy == "kSameAsRequested" and o.graph_optimization_level == "ORT_ENABLE_ALL"
    assert o.graph_opt == "all"
    # the CPU arena's strategy needs an environment arena (OrtArenaCfg) and session.use_env_allocators
    assert o.arena_cfg() == {"arena_extend_strategy": 1} and o.uses_env_arena()
    assert o.session_config() == {
        "session.disable_prepacking": "1", "session.use_device_allocator_for_initializers": "0",
        "session.use_env_allocators": "1",
    }
    assert parse_session_options(["intra_op_num_threads=0"], default_threads=6).intra_op_num_threads == 6


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["enable_mem_patern=0"], "unknown option; known: arena_extend_strategy, enable_cpu_mem_arena"),
        (["enable_mem_pattern=2"], "enable_mem_pattern=2: expected 0 or 1"),
        (["arena_extend_strategy=kDouble"], "expected one of kNextPowerOfTwo, kSameAsRequested"),
        (["max_mem=-1"], "max_mem=-1: expected an integer in [0,"),
        (["initial_chunk_size_bytes=ten"], "expected an integer"),
        (["execution_mode=ORT_PARALLEL"], "execution_mode: not emulated"),
        (["enable_mem_reuse=0"], "enable_mem_reuse: not emulated"),
        (["graph_optimization_level=99"], "use --graph-opt"),
        (["enable_mem_pattern"], "expected KEY=VALUE"),
    ],
)
def test_bad_input_is_one_line_naming_it(pairs: list[str], message: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_session_options(pairs, default_threads=1)
    text = str(info.value)
    assert message in text and "\n" not in text and info.value.exit_code == 2


def test_bad_graph_level_or_thread_default() -> None:
    with pytest.raises(UsageError):
        parse_session_options([], graph_opt="max", default_threads=1)
    with pytest.raises(UsageError):
        parse_session_options([], default_threads=0)
