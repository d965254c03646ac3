"""A session's life through the CPU arena (graphmem.ort.held.life, graphmem.analysis.held): a tiny
inline graph with hand-computed regions, then the same graphs and committed models against real
onnxruntime sessions (each measured in a fresh process: region addresses, which break ties
between equal free chunks, are those of a process's first session)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from builders import CNN, MODELS, arena_held, init, model, save, tensor
from onnx import TensorProto, helper

from graphmem.analysis.held import ARENA_APPROXIMATION_KINDS, arena_figures
from graphmem.analysis.graph_opt import analyze_graph_opt
from graphmem.errors import UsageError
from graphmem.ort.held.options import SessionOptions, parse_session_options

K = 1 << 10
M = 1 << 20
N = 98304  # floats: 384 KiB per tensor


def exp_chain(tmp_path: Path) -> Path:
    """x -> Exp -> a -> Exp -> b -> Exp -> y, every tensor 384 KiB (Exp writes a new buffer)."""
    nodes = [helper.make_node("Exp", ["x"], ["a"]), helper.make_node("Exp", ["a"], ["b"]), helper.make_node("Exp", ["b"], ["y"])]
    return save(model(nodes, [tensor("x", [N])], [tensor("y", [N])]), tmp_path / "chain.onnx")


def figures(path: Path, *pairs: str, level: str = "none", dims: dict[str, int] | None = None):  # type: ignore[no-untyped-def]
    options = parse_session_options([*pairs, "intra_op_num_threads=1"], graph_opt=level, default_threads=1)
    return arena_figures(analyze_graph_opt(path, level, dims=dims or {}), options)


def test_exp_chain_by_hand(tmp_path: Path) -> None:
    # Run 1 (requests a, b, then y, the output; a is released after step 1, b after step 2):
    #   a 384K: no region -> 1M region (curr -> 2M); 1M >= 768K: split, a = [0, 384K)
    #   b 384K: the free 640K < 768K: not split, b takes [384K, 1M)
    #   a released; y 384K takes a's free 384K chunk whole; b released; the run ends: all free
    # The pattern traced a @0 and b @384K (y is an output): its block is 768K.
    # Run 2: the block (768K) takes the free 1M region whole (1M < 2 x 768K); y finds nothing
    #   free -> region of curr = 2M (curr -> 4M). Run 3 starts with 1M and 2M free: the block
    #   takes the 1M chunk again (best fit), y the 2M region: no growth.
    f = figures(exp_chain(tmp_path))
    assert (f.before_run_bytes, f.first_run_bytes, f.steady_bytes) == (0, M, 3 * M)
    assert f.held_after_run == (0, M, 3 * M, 3 * M, 3 * M, 3 * M)
    assert f.pattern_bytes == 768 * K and f.steady_after_run == 2 and f.exact
    assert [(r.size, r.run, r.step) for r in f.regions] == [(M, 1, 0), (2 * M, 2, 2)]
    # Without the memory pattern every run repeats run 1: 1M.
    g = figures(exp_chain(tmp_path), "enable_mem_pattern=0")
    assert g.held_after_run == (0, M, M, M, M, M) and g.pattern_bytes == 0
    # kSameAsRequested: run 1 takes regions of 384K for a and b (y reuses a's); run 2 adds the
    # block's 768K; y fits a free 384K region.
    h = figures(exp_chain(tmp_path), "arena_extend_strategy=kSameAsRequested")
    assert h.held_after_run == (0, 768 * K, 1536 * K, 1536 * K, 1536 * K, 1536 * K)


def test_options_must_match_the_analysis_level(tmp_path: Path) -> None:
    a = analyze_graph_opt(exp_chain(tmp_path), "none")
    with pytest.raises(UsageError):
        arena_figures(a, SessionOptions(graph_optimization_level="ORT_ENABLE_ALL"))
    with pytest.raises(UsageError):
        arena_figures(a, runs=1)
    assert arena_figures(a, SessionOptions(enable_cpu_mem_arena=False)).steady_bytes == 0


# --- against onnxruntime ----------------------------------------------------------------------


@pytest.mark.parametrize("pairs", [(), ("enable_mem_pattern=0",), ("arena_extend_strategy=kSameAsRequested",)])
def test_exp_chain_as_onnxruntime_holds_it(tmp_path: Path, pairs: tuple[str, ...]) -> None:
    f = figures(exp_chain(tmp_path), *pairs)
    assert arena_held(tmp_path / "chain.onnx", f.options) == list(f.held_after_run[:5])


@pytest.mark.parametrize(
    ("path", "level", "dims"),
    [(CNN, "none", {"batch": 2}), (CNN, "all", {"batch": 2}), (MODELS / "tiny_unet.onnx", "none", {"batch": 1}),
     (MODELS / "tiny_lstm.onnx", "all", {"batch": 2, "seq": 16})],
)
def test_committed_models_as_onnxruntime_holds_them(path: Path, level: str, dims: dict[str, int]) -> None:
    # tiny_unet's ConvTranspose packs its filter into an arena chunk at creation (a 1M region
    # before run 1); tiny_lstm's LSTM and Gemm weights are MLAS-packed and reserved
    f = figures(path, level=level, dims=dims)
    assert f.exact
    assert arena_held(path, f.options, dims) == list(f.held_after_run[:5])


def test_a_loop_as_onnxruntime_holds_it(tmp_path: Path) -> None:
    # x0 = Relu(x); Loop (3 iterations) carries h and scans y; out = Relu(h_final). The loop
    # body's two 4-byte initializers and W are reserved (12 B before run 1); run 1 fits in the
    # first 1M region. Control flow is replayed from the requests' lifetimes: said, not exact.
    f32, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    x = [4, 100]
    body = helper.make_graph(
        [helper.make_node("Add", ["h_in", "one"], ["a"]), helper.make_node("Mul", ["a", "two"], ["h_out"]),
         helper.make_node("Mul", ["h_in", "W"], ["y"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [tensor("i", [], i64), tensor("cond_in", [], b), tensor("h_in", x)],
        [tensor("cond_out", [], b), tensor("h_out", x), tensor("y", x)],
        [init("one", np.ones(1, np.float32)), init("two", np.full(1, 2.0, np.float32))],
    )
    m = model(
        [helper.make_node("Relu", ["x"], ["x0"]), helper.make_node("Loop", ["M", "c", "x0"], ["hf", "ys"], body=body),
         helper.make_node("Relu", ["hf"], ["out"])],
        [tensor("x", x), tensor("M", [], i64), tensor("c", [], b)], [tensor("out", x), tensor("ys", [None, 4, 100])],
        [init("W", np.full(1, 3.0, np.float32))],
    )
    path = save(m, tmp_path / "loop.onnx")
    options = parse_session_options(["intra_op_num_threads=1"], default_threads=1)
    f = arena_figures(analyze_graph_opt(path, "none", values={"M": (3,), "c": (1,)}), options)
    assert [a.kind for a in f.approximations] == ["control_flow_not_replayed"]
    assert {a.kind for a in f.approximations} <= set(ARENA_APPROXIMATION_KINDS)
    assert f.held_after_run[:5] == (12, M + 12, M + 12, M + 12, M + 12)
    feeds = {"x": np.ones(x, np.float32), "M": np.array(3, np.int64), "c": np.array(True)}
    assert arena_held(path, options, feeds=feeds) == list(f.held_after_run[:5])


def test_the_power_of_two_cap_as_onnxruntime_applies_it(tmp_path: Path) -> None:
    # eight Exp(x) graph outputs of 1M each, all held to the run's end: regions 1M (curr -> 2M),
    # 2M (curr 2M is not below 4M / 2: capped at 4M), 4M, 4M; uncapped the last would be 8M
    # (tests/ort/test_held_bfc.py by hand). Set through an environment arena (OrtArenaCfg).
    n = 1 << 18
    m = model([helper.make_node("Exp", ["x"], [f"y{i}"]) for i in range(8)], [tensor("x", [n])],
              [tensor(f"y{i}", [n]) for i in range(8)])
    path = save(m, tmp_path / "eight.onnx")
    f = figures(path, "max_power_of_two_extend_bytes=4194304")
    assert [r.size for r in f.regions] == [M, 2 * M, 4 * M, 4 * M] and f.first_run_bytes == 11 * M
    assert arena_held(path, f.options) == list(f.held_after_run[:5])
