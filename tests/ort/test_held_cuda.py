"""A CUDA session's figures (graphmem.analysis.cuda_held): what a CPU-only machine can check — the
options, the emulation's figures by hand, the document, and verify's fallback without a GPU."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from builders import BERT, init, invoke, model, save, tensor
from onnx import helper

from graphmem.analysis.graph_opt import analyze_graph_opt
from graphmem.errors import ArenaLimitError, UsageError
from graphmem.analysis.cuda_held import CONTEXT_BYTES, CudaOptions, cuda_session_figures, parse_cuda_options
from graphmem.schema import validate
from graphmem.verify.providers import CUDA, session_providers

F = np.float32


def test_options_are_onnxruntimes_defaults_unless_given() -> None:
    o = parse_cuda_options([])
    assert o == CudaOptions()
    assert (o.arena_extend_strategy, o.gpu_mem_limit, o.cudnn_conv_algo_search) == ("kNextPowerOfTwo", 0, "EXHAUSTIVE")
    assert o.provider_options() == {"arena_extend_strategy": "kNextPowerOfTwo", "cudnn_conv_algo_search": "EXHAUSTIVE",
                                    "cudnn_conv_use_max_workspace": "1"}
    g = parse_cuda_options(["gpu_mem_limit=2GiB", "arena_extend_strategy=1", "cudnn_conv_algo_search=heuristic"])
    assert (g.gpu_mem_limit, g.arena_extend_strategy, g.cudnn_conv_algo_search) == (2 << 30, "kSameAsRequested", "HEURISTIC")
    assert g.provider_options()["gpu_mem_limit"] == str(2 << 30)
    # the measurement session gets exactly these (nothing forced)
    assert session_providers(CUDA, g.provider_options())[0] == (CUDA, g.provider_options())


@pytest.mark.parametrize(("pair", "message"), [
    ("session.disable_prepacking=1", "not an option of a CUDA session's figures; known: "),
    ("cudnn_conv_algo_search=FAST", "expected one of EXHAUSTIVE, HEURISTIC, DEFAULT"),
    ("gpu_mem_limit=lots", "is not a byte size"),
    ("arena_extend_strategy", "expected KEY=VALUE"),
])
def test_bad_options_are_refused_naming_them(pair: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_cuda_options([pair])


def _matmul_add(tmp_path: Path) -> Path:
    r = np.random.default_rng(0)
    m = model([helper.make_node("MatMul", ["x", "B"], ["h"]), helper.make_node("Add", ["h", "bias"], ["y"])],
              [tensor("x", [1, 64])], [tensor("y", [1, 40])], [init("B", r.random((64, 40), F)), init("bias", r.random(40, F))])
    return save(m, tmp_path / "matmul_add.onnx")


def test_the_device_figures_by_hand(tmp_path: Path) -> None:
    # both weights are read by CUDA kernels: held 10,240 + 160 = 10,400 B; the initializer block
    # rounds each to 256: 10,240 + 256 = 10,496 B before run 1. Run 1 asks the CUDA arena for h and
    # y (160 B each, 256-byte chunks): the first region, 1 MiB; the pattern's block fits in it.
    a = analyze_graph_opt(_matmul_add(tmp_path), "none", provider="cuda")
    s = cuda_session_figures(a)
    assert s.weights_held_bytes == 10_400
    assert s.arena_before_run_bytes == 10_496
    assert s.arena_first_run_bytes == s.arena_steady_bytes == 10_496 + (1 << 20)
    context, handles = CONTEXT_BYTES["default"]
    assert s.resident_bytes == s.arena_steady_bytes + context + handles
    assert not s.exact and {x.kind for x in s.approximations} >= {"not_checked_on_gpu", "device_overhead_estimated"}
    # kSameAsRequested takes the 256-byte chunk's region alone
    same = cuda_session_figures(a, parse_cuda_options(["arena_extend_strategy=kSameAsRequested"]))
    assert same.arena_first_run_bytes < s.arena_first_run_bytes
    # gpu_mem_limit 12 KiB leaves 1,792 B beside the block: a region of that size holds the 256-byte
    # chunks; 10,600 B leaves 104, rounded down to no 256-byte chunk at all
    small = cuda_session_figures(a, parse_cuda_options(["gpu_mem_limit=12KiB"]))
    assert small.arena_first_run_bytes == 10_496 + 1_792
    with pytest.raises(ArenaLimitError):
        cuda_session_figures(a, parse_cuda_options(["gpu_mem_limit=10600"]))


def test_peak_provider_cuda_has_a_device_session_block() -> None:
    r = invoke("peak", str(BERT), "-d", "batch=2", "-d", "seq=8", "--provider", "cuda", "--json",
               "--session-option", "arena_extend_strategy=kSameAsRequested")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    validate(doc, "peak")
    block = doc["session"]
    assert block["provider"] == "cuda" and block["options"]["arena_extend_strategy"] == "kSameAsRequested"
    assert block["device"]["context_bytes"] == CONTEXT_BYTES["default"][0]
    assert block["resident_bytes"] == block["arena_steady_bytes"] + block["device"]["context_bytes"] + block["device"]["handles_bytes"]


def test_verify_on_cuda_without_a_gpu_says_so_in_one_line() -> None:
    r = invoke("verify", str(BERT), "-d", "batch=1", "-d", "seq=4", "--provider", "cuda")
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "CUDA requested but onnxruntime cannot use it" in lines[0]
