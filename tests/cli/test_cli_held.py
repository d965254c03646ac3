"""Deployment answers on what the session holds (issue 27 items 1, 2, 5), through typer's CliRunner:
``fit --by``, ``sweep``'s held columns and steps, ``--max-resident``/``--max-arena`` on ``peak``, in
``check``'s config and ``diff``'s ``--max-increase-*``, ``peak --device`` on resident, and the note on
onnxruntime's default level. Every JSON document is validated against its schema.

The models are the gate tests' tiny MLPs (onnx.helper, 4-byte floats), with one intra-op thread:

    x[batch,16] -> fc1 Gemm(16->H) -> relu Relu -> fc2 Gemm(H->8) -> y[batch,8]

The arena's figures by hand (``bfc_arena.cc``, ``session_state.cc``; onnxruntime's default options):

* session creation: MLAS pre-packs both Gemms' B, in panels of 16 columns (N rounded up to 16):
  fc1 16·H·4 B, fc2 16·H·4 B (N = 8 → 16); and reserves fc2's bias (8·4 = 32 B, at most 127 B)
  in the arena. H = 32: 2,048 + 2,048 + 32 = 4,128 B; H = 64: 4,096 + 4,096 + 32 = 8,224 B.
* run 1: the first request extends the arena by its initial region, 1 MiB (1,048,576 B); h
  (batch·H·4) and y (batch·8·4) fit in it until h alone is 1 MiB: H = 64 at batch 4,096
  (4,096·64·4 = 1,048,576 B), when a second region of twice the size (2,097,152 B) is taken.
* from run 2 the memory pattern's block (h) lands in the same regions: nothing more.

So ``arena_steady_bytes`` = 1,048,576 + 4,128 = 1,052,704 B (H = 32, batch 4); H = 64:
1,048,576 + 8,224 = 1,056,800 B up to batch 2,048, and 1,048,576 + 2,097,152 + 8,224 =
3,153,952 B at batch 4,096: a step, not a line. ``resident_bytes`` rests on measured constants
(onnxruntime's code and objects), so it is checked against ``peak``'s own session block to the byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphmem.schema import validate
from graphmem.units import format_bytes

from builders import CNN, gemm_mlp, invoke

ONE = ("--session-option", "intra_op_num_threads=1")


@pytest.fixture(scope="module")
def mlps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("held")
    (root / "m").mkdir()
    gemm_mlp(root / "m" / "narrow.onnx", 32)
    gemm_mlp(root / "m" / "wide.onnx", 64)
    return root


def _session(path: Path, batch: int) -> dict:  # type: ignore[type-arg]
    result = invoke("peak", str(path), "--dim", f"batch={batch}", *ONE, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["session"]


def test_peak_session_block_is_the_hand_computed_arena(mlps: Path) -> None:
    s = _session(mlps / "m" / "narrow.onnx", 4)
    assert (s["arena_before_run_bytes"], s["arena_first_run_bytes"], s["arena_steady_bytes"]) == (
        4_128, 1_048_576 + 4_128, 1_052_704)
    # weights held: the packed copies 4,096 + fc1's bias 128 + fc2's bias 32 (the B matrices released)
    assert s["weights_held_bytes"] == 4_096 + 128 + 32
    wide = mlps / "m" / "wide.onnx"
    assert _session(wide, 2_048)["arena_steady_bytes"] == 1_056_800
    assert _session(wide, 4_096)["arena_steady_bytes"] == 3_153_952


@pytest.mark.parametrize(("option", "figure", "metric"), [
    ("--max-arena", "arena_steady_bytes", "arena"), ("--max-resident", "resident_bytes", "resident")])
def test_peak_gates_on_held_memory_to_the_byte(mlps: Path, option: str, figure: str, metric: str) -> None:
    narrow = str(mlps / "m" / "narrow.onnx")
    held = _session(mlps / "m" / "narrow.onnx", 4)[figure]
    ok = invoke("peak", narrow, "-d", "batch=4", *ONE, option, str(held), "--json")
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["gate"]["passed"] is True
    over = invoke("peak", narrow, "-d", "batch=4", *ONE, option, str(held - 1), "--json")
    assert over.exit_code == 1
    doc = json.loads(over.stdout)
    validate(doc, "peak")
    (failure,) = doc["gate"]["failures"]
    assert (failure["metric"], failure["option"], failure["actual"], failure["excess"]) == (metric, option, held, 1)
    assert f"exceeds {option}" in over.stderr


def test_require_exact_on_held_budgets(mlps: Path) -> None:
    narrow = str(mlps / "m" / "narrow.onnx")
    # one thread: the arena figures have no approximation; resident's measured constants are its tolerance
    result = invoke("peak", narrow, "-d", "batch=4", *ONE, "--max-arena", "2MiB", "--max-resident", "1GiB",
                    "--require-exact", "--json")
    assert result.exit_code == 0, result.output
    # two threads: Conv's scratch (MLAS's working buffer, one segment per thread) is modelled for one
    two = invoke("peak", str(CNN), "-d", "batch=2", "--session-option", "intra_op_num_threads=2",
                 "--max-arena", "1GiB", "--require-exact", "--json")
    assert two.exit_code == 1
    (failure,) = json.loads(two.stdout)["gate"]["failures"]
    assert (failure["metric"], failure["reason"]) == ("exact", "approximate")
    assert "arena held is not exact" in two.stderr and "threads_not_modelled" in two.stderr
    assert invoke("peak", str(CNN), "-d", "batch=2", *ONE, "--max-arena", "1GiB", "--require-exact").exit_code == 0


def test_check_config_gates_on_held_memory(mlps: Path) -> None:
    held = _session(mlps / "m" / "narrow.onnx", 4)
    body = '[[models]]\npath = "m/narrow.onnx"\ndims = { batch = 4 }\n'
    # the check runs with onnxruntime's default threads (the pinned host's cores): the arena is the same
    cfg = mlps / "held.toml"
    cfg.write_text(body + f'max-arena = {held["arena_steady_bytes"]}\n')
    result = invoke("check", "--config", str(cfg), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    validate(doc, "check")
    assert doc["models"][0]["report"]["session"]["arena_steady_bytes"] == 1_052_704
    cfg.write_text(body + 'max-arena = 1052703\nmax-resident = "1MiB"\n')
    result = invoke("check", "--config", str(cfg), "--json")
    assert result.exit_code == 1
    failures = json.loads(result.stdout)["models"][0]["report"]["gate"]["failures"]
    assert [(f["metric"], f["excess"]) for f in failures][0] == ("resident", failures[0]["actual"] - 2**20)
    assert [(f["metric"], f["excess"]) for f in failures][1] == ("arena", 1)
    cfg.write_text(body + 'max-arena = "-1"\n')
    bad = invoke("check", "--config", str(cfg))
    assert bad.exit_code == 2 and "max-arena" in bad.stderr


def test_diff_shows_and_gates_the_held_cost(mlps: Path) -> None:
    narrow, wide = str(mlps / "m" / "narrow.onnx"), str(mlps / "m" / "wide.onnx")
    result = invoke("diff", narrow, wide, "-d", "batch=4", "--max-increase-arena", "0.3%", "--json")
    doc = json.loads(result.stdout)
    validate(doc, "diff")
    rows = {r["metric"]: r for r in doc["metrics"]}
    # the packed copies grow by 4,096 B (fc1 and fc2 panels 2,048 -> 4,096 each): 1,052,704 -> 1,056,800
    assert (rows["arena"]["old"], rows["arena"]["new"], rows["arena"]["change"]) == (1_052_704, 1_056_800, 4_096)
    assert rows["arena"]["status"] == "exceeded" and result.exit_code == 1  # 0.389% > 0.3%
    assert "arena held grew 0.4%" in result.stderr
    assert rows["resident"]["old"] == doc["old"]["session"]["resident_bytes"]
    assert rows["resident"]["new"] == doc["new"]["session"]["resident_bytes"]
    ok = invoke("diff", narrow, wide, "-d", "batch=4", "--max-increase-arena", "1%")
    assert ok.exit_code == 0 and "arena held" in ok.stdout and "resident (predicted)" in ok.stdout


def test_fit_by_arena_answers_below_the_step(mlps: Path) -> None:
    wide = str(mlps / "m" / "wide.onnx")
    # a budget one byte short of the two-region arena: the answer stays on the first step
    result = invoke("fit", wide, "--memory", str(3_153_952 - 1), "--by", "arena", *ONE, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    validate(doc, "fit")
    n, held = doc["largest"], doc["held"]
    assert doc["measure"] == "arena" and held["by"] == "arena" and held["figure"] == "session.arena_steady_bytes"
    assert doc["total_bytes"] == held["at"]["arena_bytes"] == 1_056_800
    assert held["next"]["arena_bytes"] == 3_153_952 and held["next"]["value"] == n + 1
    assert held["at"]["regions"] == [1_048_576] and held["next"]["regions"] == [1_048_576, 2_097_152]
    # h + y of batch n fit the 1 MiB region beside the 8,224 reserved bytes; at n + 1 they do not
    assert 2_048 <= n < 4_096
    assert held["steps"][-1]["arena_bytes"] == 3_153_952 and held["steps"][-1]["first"] == n + 1
    table = invoke("fit", wide, "--memory", str(3_153_952 - 1), "--by", "arena", *ONE)
    assert "compared: the CPU arena held in steady state" in table.stdout
    assert f"batch={n + 1} takes another arena region (1.00 MiB + 2.00 MiB)" in table.stdout
    assert "step functions of batch, not lines" in table.stdout


def test_fit_by_resident_is_peaks_figure(mlps: Path) -> None:
    narrow = mlps / "m" / "narrow.onnx"
    at_four = _session(narrow, 4)["resident_bytes"]
    result = invoke("fit", str(narrow), "--memory", str(at_four + 2**20), "--overhead", "1MiB", *ONE, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    validate(doc, "fit")
    n, held = doc["largest"], doc["held"]
    assert doc["measure"] == "resident" and held["by"] == "resident" and held["figure"] == "session.resident_bytes"
    assert n >= 4
    assert doc["total_bytes"] == held["at"]["resident_bytes"] == _session(narrow, n)["resident_bytes"]
    assert doc["headroom_bytes"] == at_four - doc["total_bytes"]  # budget - overhead - resident at n
    assert held["next"]["resident_bytes"] == _session(narrow, n + 1)["resident_bytes"] > at_four
    assert held["at"]["requested_bytes"] < held["at"]["resident_bytes"]  # side by side
    assert {p["value"]: p["resident_bytes"] for p in doc["probes"]}[n] == doc["total_bytes"]
    assert held["level_note"].startswith("graphmem's static default; onnxruntime runs ORT_ENABLE_ALL")
    # the pinned host is a profile: the figures at all (this machine's onnxruntime) are not offered for it
    assert held["default_level"]["resident_bytes"] is None
    assert held["default_level"]["error"].startswith("not offered for a host profile")
    # a bound model: the gate on the same figure, exit 1 a byte short
    fits = invoke("fit", str(narrow), "--memory", str(at_four), "-d", "batch=4", *ONE, "--json")
    assert fits.exit_code == 0 and json.loads(fits.stdout)["headroom_bytes"] == 0
    short = invoke("fit", str(narrow), "--memory", str(at_four - 1), "-d", "batch=4", *ONE)
    assert short.exit_code == 1 and "DOES NOT FIT" in short.stdout
    assert "compared: predicted resident memory (session.resident_bytes" in short.stdout


@pytest.mark.parametrize(("args", "needle"), [
    (["--by", "vram"], "--by vram: expected one of resident, arena, requested"),
    (["--by", "arena", "--train"], "--train measures the PyTorch training step"),
    (["--by", "requested", "--session-option", "enable_mem_pattern=0"], "needs --by resident or arena"),
    (["--session-option", "enable_mem_pattern=maybe"], "enable_mem_pattern"),
    (["--graph-opt", "most"], "--graph-opt most: expected none, basic, extended or all"),
])
def test_fit_bad_held_options(mlps: Path, args: list[str], needle: str) -> None:
    result = invoke("fit", str(mlps / "m" / "narrow.onnx"), "--memory", "64MiB", *args)
    assert result.exit_code == 2 and needle in result.stderr and "Traceback" not in result.output


def test_sweep_shows_requested_and_resident_and_the_steps(mlps: Path) -> None:
    wide = str(mlps / "m" / "wide.onnx")
    result = invoke("sweep", wide, "--dim", "batch=1,2048,4096", *ONE, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    validate(doc, "sweep")
    assert [r["held"]["arena_bytes"] for r in doc["rows"]] == [1_056_800, 1_056_800, 3_153_952]
    assert [r["held"]["requested_bytes"] for r in doc["rows"]] == [r["total_bytes"] for r in doc["rows"]]
    assert [(s["first"], s["last"], s["arena_bytes"]) for s in doc["steps"]] == [
        (1, 2_048, 1_056_800), (4_096, 4_096, 3_153_952)]
    table = invoke("sweep", wide, "--dim", "batch=1,2048,4096", *ONE).stdout
    assert "resident" in table.splitlines()[4] and "arena" in table.splitlines()[4]
    assert "fit: requested total ≈" in table
    assert "held (resident, arena): step functions of batch, not fitted" in table
    assert "graph-opt none: graphmem's static default; onnxruntime runs ORT_ENABLE_ALL" in table


def test_peak_device_fits_on_resident(mlps: Path) -> None:
    narrow = str(mlps / "m" / "narrow.onnx")
    held = _session(mlps / "m" / "narrow.onnx", 4)["resident_bytes"]
    result = invoke("peak", narrow, "-d", "batch=4", *ONE, "--device", "host", "--memory", str(held), "--json")
    memory = json.loads(result.stdout)["device"]["memory"]
    assert (memory["figure"], memory["used_bytes"], memory["fits"], memory["headroom_bytes"]) == (
        "session.resident_bytes", held, True, 0)
    table = invoke("peak", narrow, "-d", "batch=4", *ONE, "--device", "host", "--memory", str(held - 1)).stdout
    assert "memory: resident (predicted)" in table and "DOES NOT FIT" in table


def test_peak_header_says_the_default_level(mlps: Path) -> None:
    narrow = str(mlps / "m" / "narrow.onnx")
    lines = invoke("peak", narrow, "-d", "batch=4").stdout.splitlines()
    assert lines[2] == ("  graph-opt none: graphmem's static default; onnxruntime runs ORT_ENABLE_ALL unless "
                        "told otherwise (--graph-opt all analyses that graph)")
    assert lines[3].startswith("  at onnxruntime's default level (--graph-opt all): not offered for a host profile")
    at_all = invoke("peak", narrow, "-d", "batch=4", "--graph-opt", "all").stdout
    assert "graphmem's static default" not in at_all and "at onnxruntime's default level" not in at_all
    assert "at onnxruntime's default level" not in invoke("peak", narrow, "-d", "batch=4", "--json").stdout


@pytest.mark.reads_machine
def test_the_default_level_is_offered_on_this_machine(mlps: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import graphmem.host

    monkeypatch.delenv(graphmem.host.HOST_ENV)
    narrow = str(mlps / "m" / "narrow.onnx")
    line = invoke("peak", narrow, "-d", "batch=4", *ONE).stdout.splitlines()[3]
    at_all = json.loads(invoke("peak", narrow, "-d", "batch=4", "--graph-opt", "all", *ONE, "--json").stdout)
    # the offer is peak --graph-opt all's own figures (Gemm and Relu: no NCHWc layout on this graph)
    assert line == (f"  at onnxruntime's default level (--graph-opt all, this machine's onnxruntime): total requested "
                    f"{format_bytes(at_all['total_bytes'])}, resident {format_bytes(at_all['session']['resident_bytes'])}, "
                    f"arena {format_bytes(at_all['session']['arena_steady_bytes'])}")
    doc = json.loads(invoke("fit", narrow, "--memory", "64MiB", *ONE, "--json").stdout)
    assert doc["held"]["default_level"]["error"] is None and doc["held"]["default_level"]["resident_bytes"] > 0


def test_help_shows_the_held_options() -> None:
    fit = invoke("fit", "--help").stdout
    assert "--by" in fit and "--session-option" in fit and "--graph-opt" in fit
    peak = invoke("peak", "--help").stdout
    assert "--max-resident" in peak and "--max-arena" in peak
    diff = invoke("diff", "--help").stdout
    assert "--max-increase-resident" in diff and "--max-increase-arena" in diff


def test_sweep_refuses_a_bad_session_option(mlps: Path) -> None:
    result = invoke("sweep", str(mlps / "m" / "narrow.onnx"), "--dim", "batch=1,2", "--session-option", "gpu_mem_limit=1")
    assert result.exit_code == 2 and "gpu_mem_limit: a CUDA provider option" in result.stderr
