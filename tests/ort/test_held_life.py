"""A session's life through the CPU arena (graphmem.ort.held.life, graphmem.analysis.held): a tiny
inline graph with hand-computed regions, then the same graphs and committed models against real
onnxruntime sessions (each measured in a fresh process: region addresses, which break ties
between equal free chunks, are those of a process's first session)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from builders import CNN, MODELS, model, save, tensor
from onnx import helper

from graphmem.analysis.held import arena_figures
from graphmem.analysis.pipeline import analyze_graph_opt
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

_MEASURE = """
import json, sys, tempfile
from pathlib import Path
import onnx, onnxruntime as ort
from graphmem.verify import make_feeds
from graphmem.verify.measure import load_events, split_runs
spec = json.loads(sys.argv[1])
if spec["arena_cfg"]:
    info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
    ort.create_and_register_allocator(info, ort.OrtArenaCfg(spec["arena_cfg"]))
so = ort.SessionOptions()
so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, spec["level"])
so.intra_op_num_threads = 1
so.enable_mem_pattern = spec["pattern"]
so.enable_profiling = True
so.log_severity_level = 3
for k, v in spec["config"].items():
    so.add_session_config_entry(k, v)
with tempfile.TemporaryDirectory() as tmp:
    so.profile_file_prefix = tmp + "/p"
    s = ort.InferenceSession(spec["path"], so, providers=["CPUExecutionProvider"])
    feeds = make_feeds(onnx.load(spec["path"], load_external_data=False), spec["dims"], seed=0)
    for _ in range(4):
        out = s.run(None, feeds)
        del out
    runs = split_runs(load_events(Path(s.end_profiling())), 4)
first = runs[0][0]
print(json.dumps([first.arena_held - first.arena_held_delta] + [max(n.arena_held for n in r) for r in runs]))
"""


def measured(path: Path, options: SessionOptions, dims: dict[str, int] | None = None) -> list[int]:
    """``mem_arena_held`` before run 1 and at the end of runs 1-4, in a fresh process."""
    spec = {"path": str(path), "dims": dims or {}, "level": options.graph_optimization_level,
            "pattern": options.enable_mem_pattern, "config": options.session_config(), "arena_cfg": options.arena_cfg()}
    done = subprocess.run([sys.executable, "-c", _MEASURE, json.dumps(spec)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("pairs", [(), ("enable_mem_pattern=0",), ("arena_extend_strategy=kSameAsRequested",)])
def test_exp_chain_as_onnxruntime_holds_it(tmp_path: Path, pairs: tuple[str, ...]) -> None:
    f = figures(exp_chain(tmp_path), *pairs)
    assert measured(tmp_path / "chain.onnx", f.options) == list(f.held_after_run[:5])


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
    assert measured(path, f.options, dims) == list(f.held_after_run[:5])
