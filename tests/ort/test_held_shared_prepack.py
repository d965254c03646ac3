"""Identical pre-packed buffers are held once per session (graphmem.ort.held.prepack), by hand and
against real sessions' arena before run 1."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from builders import arena_held, init, model, save, tensor
from onnx import helper

from graphmem.analysis.graph_opt import analyze_graph_opt
from graphmem.analysis.session import session_figures
from graphmem.ort.held.options import parse_session_options

# Two nodes read one 64x64 weight W (16,384 B). MlasGemmPackBSize(64, 64) = 64 x 64 x 4 = 16,384:
# the same packed bytes from the same op type are kept once; a transB Gemm and a plain one pack
# different bytes (transposed), a Gemm and a MatMul are different op types: two copies.
CASES = {
    "two transB Gemms": ((("Gemm", {"transB": 1}), ("Gemm", {"transB": 1})), 16_384),
    "two MatMuls": ((("MatMul", {}), ("MatMul", {})), 16_384),
    "transB and plain Gemm": ((("Gemm", {"transB": 1}), ("Gemm", {})), 32_768),
    "Gemm and MatMul": ((("Gemm", {}), ("MatMul", {})), 32_768),
}


@pytest.mark.parametrize("case", list(CASES))
def test_identical_packed_buffers_are_held_once(case: str, tmp_path: Path) -> None:
    (first, second), packed = CASES[case]
    w = init("W", np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32))
    m = model([helper.make_node(first[0], ["x", "W"], ["h"], **first[1]),
               helper.make_node(second[0], ["h", "W"], ["y"], **second[1])],
              [tensor("x", [1, 64])], [tensor("y", [1, 64])], [w])
    path = save(m, tmp_path / "shared.onnx")
    options = parse_session_options(["intra_op_num_threads=1"], graph_opt="none", default_threads=1)
    s = session_figures(analyze_graph_opt(path, "none"), options)
    # W is released (both uses packed): the session holds the packed bytes only
    assert s.weights_held_bytes == s.arena_before_run_bytes == packed
    assert arena_held(path, options, runs=1)[0] == packed
