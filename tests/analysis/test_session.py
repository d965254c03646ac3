"""What a session holds (graphmem.analysis.session, the peak document's session block): weights
held by hand, the arena and the resident growth against real sessions in fresh processes, the
options, and the document."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from builders import CNN, arena_held, init, invoke, model, save, tensor
from onnx import helper

from graphmem.analysis.graph_opt import analyze_graph_opt
from graphmem.analysis.session import SESSION_FIGURES, session_figures
from graphmem.ort.held.options import parse_session_options
from graphmem.schema import validate
from graphmem.verify import make_feeds
from graphmem.verify.resident import measure_resident

F = np.float32


def _mlp(tmp_path: Path) -> Path:
    """x [1, 64] -> MatMul(B [64, 40]) -> Add(bias [40]) -> Mul(s [1]) -> y."""
    r = np.random.default_rng(0)
    m = model(
        [helper.make_node("MatMul", ["x", "B"], ["h"]), helper.make_node("Add", ["h", "bias"], ["a"]),
         helper.make_node("Mul", ["a", "s"], ["y"])],
        [tensor("x", [1, 64])], [tensor("y", [1, 40])],
        [init("B", r.random((64, 40), F)), init("bias", r.random(40, F)), init("s", np.array([2.0], F))],
    )
    return save(m, tmp_path / "mlp.onnx")


def _options(*pairs: str, level: str = "none"):  # type: ignore[no-untyped-def]
    return parse_session_options(["intra_op_num_threads=1", *pairs], graph_opt=level, default_threads=1)


def test_weights_held_by_hand(tmp_path: Path) -> None:
    # B [64, 40] (10,240 B) is pre-packed for the MatMul: MlasGemmPackBSize(N=40, K=64) = 48 x 64
    # x 4 = 12,288 B, and B is released (its only use was packed); bias (160 B) stays in its buffer,
    # s (4 B, <= 127) is reserved in the arena. Held: 12,288 + 160 + 4 = 12,452.
    path = _mlp(tmp_path)
    a = analyze_graph_opt(path, "none")
    s = session_figures(a, _options())
    assert s.weights_held_bytes == 12_452
    assert s.arena_before_run_bytes == 12_288 + 4  # the packed B and s, reserved
    # prepacking off: B stays, 10,240 + 160 + 4; the initializer block the memory pattern reserves
    # (each rounded to 256: 10,240 + 256 + 256) is held by the arena but never written
    off = session_figures(a, _options("session.disable_prepacking=1"))
    assert off.weights_held_bytes == 10_404
    assert off.arena_before_run_bytes == 4 + 10_240 + 256 + 256
    for figures, pairs in ((s, ()), (off, ("session.disable_prepacking=1",))):
        measured = arena_held(path, _options(*pairs))
        assert measured[0] == figures.arena_before_run_bytes


def test_resident_growth_of_fresh_processes_within_ten_percent() -> None:
    a = analyze_graph_opt(CNN, "none", dims={"batch": 4})
    s = session_figures(a, _options())
    feeds = make_feeds(__import__("onnx").load(str(CNN), load_external_data=False), a.model.dims, seed=0)
    m = measure_resident(CNN, feeds, threads=1, processes=2)
    assert abs(s.resident_bytes / m.bytes - 1) <= 0.10, (s.resident_bytes, m.grown)
    # the parts sum to it; it rests on measured constants, and says so
    p = s.parts
    assert p.weights + p.arena + p.loading + p.runtime == s.resident_bytes
    assert not s.exact_figure("resident_bytes") and s.exact_figure("arena_steady_bytes")
    assert {x.kind for x in s.approximations if "resident_bytes" in x.figures} >= {"measured_constant"}


def test_the_arena_and_resident_follow_the_options(tmp_path: Path) -> None:
    # at batch 8 the memory pattern's block (run 2 on) needs a region of its own: 4 MiB more
    a = analyze_graph_opt(CNN, "none", dims={"batch": 8})
    default = session_figures(a, _options())
    no_pattern = session_figures(a, _options("enable_mem_pattern=0"))
    assert no_pattern.arena_steady_bytes == no_pattern.arena_first_run_bytes < default.arena_steady_bytes
    assert no_pattern.resident_bytes < default.resident_bytes
    no_arena = session_figures(a, _options("enable_cpu_mem_arena=0"))
    assert (no_arena.arena_before_run_bytes, no_arena.arena_steady_bytes) == (0, 0)
    assert "arena_disabled" in {x.kind for x in no_arena.approximations}
    two = session_figures(a, _options("intra_op_num_threads=3"))  # two extra threads' stacks and buffers
    from graphmem.ort.held.constants import RESIDENT_CONSTANTS

    assert two.parts.runtime - default.parts.runtime == 2 * RESIDENT_CONSTANTS.thread_bytes


def test_peak_json_session_block_and_table() -> None:
    r = invoke("peak", str(CNN), "-d", "batch=2", "--session-option", "intra_op_num_threads=1", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    validate(doc, "peak")
    block = doc["session"]
    assert set(SESSION_FIGURES) <= set(block) and block["provider"] == "cpu"
    assert block["options"]["intra_op_num_threads"] == 1 and block["options"]["enable_mem_pattern"] is True
    assert block["options"]["session.disable_prepacking"] == "0" and block["options"]["arena_extend_strategy"] == "kNextPowerOfTwo"
    assert block["exact"] is False and all(set(x["figures"]) <= set(SESSION_FIGURES) for x in block["approximations"])
    assert sum(block["resident_parts"].values()) == block["resident_bytes"]
    # the rest of the document is as before
    plain = json.loads(invoke("peak", str(CNN), "-d", "batch=2", "--json").output)
    assert {k: v for k, v in plain.items() if k != "session"} == {k: v for k, v in doc.items() if k != "session"}
    table = invoke("peak", str(CNN), "-d", "batch=2").output
    assert "held by the session" in table and "resident" in table and "MiB" in table


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--session-option", "enable_mem_patern=0"), "--session-option enable_mem_patern: unknown option; known: "),
        (("--session-option", "enable_mem_pattern=2"), "expected 0 or 1"),
        (("--session-option", "gpu_mem_limit=1GiB"), "a CUDA provider option; use it with --provider cuda"),
        (("--session-option", "execution_mode=ORT_PARALLEL"), "not emulated"),
        (("--session-option", "enable_mem_pattern"), "expected KEY=VALUE"),
    ],
)
def test_bad_session_options_exit_2_with_one_line(args: tuple[str, ...], message: str) -> None:
    r = invoke("peak", str(CNN), "-d", "batch=1", *args)
    assert r.exit_code == 2
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_a_max_mem_too_small_is_refused() -> None:
    r = invoke("peak", str(CNN), "-d", "batch=4", "--session-option", "max_mem=4096")
    assert r.exit_code == 2 and "max_mem" in r.stderr


def test_the_schemas_list_every_kind_of_approximation() -> None:
    from graphmem.analysis.session import SESSION_APPROXIMATION_KINDS
    from graphmem.schema import load_schema

    block = load_schema("peak")["properties"]["session"]
    assert tuple(block["properties"]["approximations"]["items"]["properties"]["kind"]["enum"]) == SESSION_APPROXIMATION_KINDS
    verify = load_schema("verify")["properties"]["verify"]["properties"]["session"]["anyOf"][1]
    prediction = verify["properties"]["prediction"]
    assert tuple(prediction["properties"]["approximations"]["items"]["properties"]["kind"]["enum"]) == SESSION_APPROXIMATION_KINDS


def test_the_session_stage_runs_when_asked_and_assemble_records_it(tmp_path: Path) -> None:
    # the stage (graphmem.analysis.hold) on the assembled analysis: no session options, no block;
    # the defaults (or pairs) give the same figures as session_figures on that analysis
    from dataclasses import replace

    from graphmem.analysis.assemble import record_session
    from graphmem.analysis.hold import held
    from graphmem.analysis.pipeline import analyze
    from graphmem.analysis.request import request_of
    from graphmem.errors import UsageError

    path = _mlp(tmp_path)
    plain = analyze(path)
    assert plain.session is None
    asked = analyze(path, session_options=["intra_op_num_threads=1"])
    direct = session_figures(plain, _options())
    assert asked.session == direct
    assert asked.session.weights_held_bytes == 12_452  # as test_weights_held_by_hand computes it
    request = request_of(session_options=("intra_op_num_threads=1", "session.disable_prepacking=1"))
    off = held(plain, request)
    assert off.weights_held_bytes == 10_404
    assert record_session(plain, off).session is off and record_session(plain, None) is plain
    assert analyze_graph_opt(path, "none", replace(request, session_options=None)).session is None
    with pytest.raises(UsageError, match="not_an_option"):
        analyze(path, session_options=["not_an_option=1"])
    with pytest.raises(UsageError, match="tuple of KEY=VALUE"):
        request_of(session_options=["enable_mem_pattern=0"])


def test_a_folded_constant_rewritten_again_is_said(tmp_path: Path) -> None:
    # W [16, 16, 3, 3] = ConstantOfShape(shape): constant folding computes it (level all), then the
    # NCHWc transformer re-lays it out: the resident replay treats the two steps apart (not exact)
    from onnx import TensorProto

    shape = helper.make_tensor("wshape", TensorProto.INT64, [4], [16, 16, 3, 3])
    m = model(
        [helper.make_node("ConstantOfShape", ["wshape"], ["W"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5])),
         helper.make_node("Conv", ["x", "W"], ["y"], pads=[1, 1, 1, 1])],
        [tensor("x", [1, 16, 8, 8])], [tensor("y", [1, 16, 8, 8])], [shape],
    )
    path = save(m, tmp_path / "folded.onnx")
    at_all = session_figures(analyze_graph_opt(path, "all"), _options(level="all"))
    at_none = session_figures(analyze_graph_opt(path, "none"), _options())
    said = [a for a in at_all.approximations if a.kind == "rewrite_not_replayed"]
    assert said and said[0].node == "W" and said[0].figures == ("resident_bytes",)
    assert not [a for a in at_none.approximations if a.kind == "rewrite_not_replayed"]
