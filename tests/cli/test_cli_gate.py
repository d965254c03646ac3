"""``graphmem check`` and ``graphmem diff`` end to end: CliRunner and a real subprocess.

Every JSON document the commands print is validated against its schema. The models are
tiny MLPs built with onnx.helper (hand-computed figures at batch 4, 4-byte floats):

    x[batch,16] -> fc1 Gemm(16->H) -> relu Relu -> fc2 Gemm(H->8) -> y[batch,8]

    H = 32: params 16·32+32+32·8+8 = 808 (3232 B); +h 512 B at fc1, relu in place on h,
            +y 128 B at fc2 -> peak 640 B at fc2; inputs 256 B; total 3232+640+256 = 4128 B
    H = 64: params 1608 (6432 B); peak 1024+128 = 1152 B; total 7840 B
"""

from __future__ import annotations

import csv
import inspect
import io
import json
from pathlib import Path

import pytest

from graphmem.cli import peak
from graphmem.schema import validate

from builders import ROOT as REPO, gemm_mlp, invoke, run_graphmem



@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gate")
    (root / "m").mkdir()
    gemm_mlp(root / "m" / "narrow.onnx", 32)
    gemm_mlp(root / "m" / "wide.onnx", 64)
    return root


def write_config(root: Path, body: str, name: str = "graphmem.toml") -> Path:
    path = root / name
    path.write_text(body)
    return path


NARROW = '[[models]]\npath = "m/narrow.onnx"\ndims = { batch = 4 }\n'


# --- check ------------------------------------------------------------------------------------


def test_check_pass(models: Path) -> None:
    cfg = write_config(models, NARROW + 'max-peak = "640"\nmax-total = "4128"\nmax-params = "808"\n'
                       'max-weights = 3232\n')
    result = invoke("check", "--config", str(cfg), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    validate(doc, "check")
    (entry,) = doc["models"]
    assert doc["passed"] and entry["status"] == "pass" and entry["name"] == "m/narrow.onnx"
    report = entry["report"]
    assert (report["weights"]["params"], report["activations"]["peak_bytes"], report["total_bytes"]) == (
        808, 640, 4128
    )
    assert report["gate"]["passed"] and report["gate"]["failures"] == []
    assert "[1/1] ok    m/narrow.onnx" in result.stderr  # plain progress lines: not a terminal


@pytest.mark.parametrize(
    ("budget", "metric", "message"),
    [
        ('max-weights = "3KiB"', "weights", "weights 3.16 KiB exceeds --max-weights 3 KiB by 160 B (5.2%)"),
        ('max-peak = "512"', "peak", "activations peak 640 B exceeds --max-peak 512 B by 128 B (25%)"),
        ('max-total = "4000"', "total", "total 4.03 KiB exceeds --max-total 3.91 KiB by 128 B (3.2%)"),
        ('max-params = "800"', "params", "params 808 exceeds --max-params 800 by 8 (1%)"),
    ],
)
def test_check_each_failing_budget(models: Path, budget: str, metric: str, message: str) -> None:
    cfg = write_config(models, NARROW + budget + "\n")
    result = invoke("check", "-c", str(cfg), "--format", "json", "--jobs", "1")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    validate(doc, "check")
    (failure,) = doc["models"][0]["report"]["gate"]["failures"]
    assert (failure["metric"], failure["message"]) == (metric, message)
    assert f"graphmem: gate failed: m/narrow.onnx: {message}" in result.stderr


def test_check_table_and_github_annotation(models: Path) -> None:
    cfg = write_config(models, NARROW + 'max-peak = "512"\n')
    result = invoke("check", "-c", str(cfg), env={"GITHUB_ACTIONS": "true"})
    assert result.exit_code == 1
    assert "FAIL  m/narrow.onnx: activations peak 640 B exceeds" in result.stdout
    assert "1 models: 0 passed, 1 failed, 0 errors" in result.stdout
    assert "::error title=graphmem::m/narrow.onnx: activations peak 640 B exceeds" in result.stdout


@pytest.mark.parametrize(
    ("value", "needle"),
    [("12XB", "max-peak '12XB' is not a byte size"), ("-5MiB", "max-peak '-5MiB': a budget cannot be negative")],
)
def test_check_malformed_budget(models: Path, value: str, needle: str) -> None:
    cfg = write_config(models, NARROW + f'max-peak = "{value}"\n')
    result = invoke("check", "-c", str(cfg))
    assert result.exit_code == 2
    assert result.stderr.startswith("graphmem: error: ") and needle in result.stderr
    assert result.stdout == ""


def test_check_missing_model_file(models: Path) -> None:
    cfg = write_config(models, NARROW + '[[models]]\npath = "m/gone.onnx"\n')
    result = invoke("check", "-c", str(cfg))
    assert result.exit_code == 2
    assert "models[1].path: model file 'm/gone.onnx' does not exist" in result.stderr


def test_check_unknown_config_key(models: Path) -> None:
    cfg = write_config(models, NARROW + 'max_peak = "1MiB"\n')
    result = invoke("check", "-c", str(cfg))
    assert result.exit_code == 2
    assert "unknown key 'models[0].max_peak'; did you mean 'max-peak'?" in result.stderr


def test_check_flops_budget(models: Path) -> None:
    """Without a FLOP count in the document a FLOP budget is an error (exit 2), never a pass."""
    cfg = write_config(models, NARROW + 'max-flops = "100"\n')
    result = invoke("check", "-c", str(cfg), "--json")
    doc = json.loads(result.stdout)
    validate(doc, "check")
    (entry,) = doc["models"]
    if entry["report"] is None:  # a graphmem without FLOP counting
        assert result.exit_code == 2
        assert entry["status"] == "error" and "FLOPs are unavailable" in entry["error"]
    else:  # 2·4·(16·32 + 32·8) multiply-adds alone exceed 100
        assert result.exit_code == 1
        assert [f["metric"] for f in entry["report"]["gate"]["failures"]] == ["flops"]


def test_check_many_models_in_processes_to_a_file(models: Path, tmp_path: Path) -> None:
    cfg = write_config(models, 'dims = { batch = 4 }\n[[models]]\npath = "m/*.onnx"\nmax-peak = "1000"\n'
                       '[[models]]\npath = "m/narrow.onnx"\ndims = { batch = 8 }\n')
    out = tmp_path / "check.csv"
    result = invoke("check", "-c", str(cfg), "-j", "2", "-f", "csv", "-o", str(out))
    assert result.exit_code == 1 and result.stdout == ""
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [(r["name"], r["status"], r["peak_bytes"]) for r in rows] == [
        ("m/narrow.onnx", "pass", "640"), ("m/wide.onnx", "fail", "1152"), ("m/narrow.onnx", "pass", "1280"),
    ]


def test_check_markdown(models: Path) -> None:
    cfg = write_config(models, NARROW)
    result = invoke("check", "-c", str(cfg), "-f", "markdown")
    assert result.exit_code == 0
    assert result.stdout.startswith("### graphmem check: ✅ passed")
    assert "| `m/narrow.onnx` | batch=4 |" in result.stdout


# --- diff -------------------------------------------------------------------------------------


def test_diff_against_itself_is_all_zero(models: Path) -> None:
    narrow = str(models / "m" / "narrow.onnx")
    result = invoke("diff", narrow, narrow, "--dim", "batch=4", "--max-increase", "0%", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    validate(doc, "diff")
    changes = {r["metric"]: r["change"] for r in doc["metrics"]}
    assert {"weights", "peak", "total", "params", "nodes"} <= set(changes)  # and flops if counted
    assert set(changes.values()) == {0}
    assert doc["op_types"] == [] and doc["layers"] == [] and doc["layers_changed"] == 0
    assert doc["gate"]["passed"]


def test_diff_names_the_widened_layer(models: Path) -> None:
    narrow, wide = str(models / "m" / "narrow.onnx"), str(models / "m" / "wide.onnx")
    result = invoke("diff", narrow, wide, "-d", "batch=4", "--max-increase", "5%", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    validate(doc, "diff")
    rows = {r["metric"]: r for r in doc["metrics"]}
    assert (rows["params"]["old"], rows["params"]["new"]) == (808, 1608)
    assert (rows["peak"]["old"], rows["peak"]["new"], rows["peak"]["status"]) == (640, 1152, "exceeded")
    top = doc["layers"][0]
    assert (top["name"], top["op_type"], top["status"]) == ("fc1", "Gemm", "changed")
    assert top["change"] == {"params": 544, "weight_bytes": 2176, "output_bytes": 512}
    assert [lay["name"] for lay in doc["layers"]] == ["fc1", "fc2", "relu"]
    assert doc["op_types"][0]["op_type"] == "Gemm"
    assert "graphmem: gate failed: activations peak grew 80.0% (640 B → 1.12 KiB, +512 B)" in result.stderr
    # without thresholds the same diff passes; the table still names the layer
    result = invoke("diff", narrow, wide, "-d", "batch=4")
    assert result.exit_code == 0
    assert "fc1    Gemm  changed    +544  +2.12 KiB   +512 B" in result.stdout
    result = invoke("diff", narrow, wide, "-d", "batch=4", "--max-increase", "100%", "-f", "markdown")
    assert result.exit_code == 0 and "| `fc1` | Gemm | changed |" in result.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--max-increase", "5"], "--max-increase '5': give a percentage such as 5%"),
        (["--max-increase-peak", "-2%"], "--max-increase-peak '-2%'"),
        (["--json", "--format", "csv"], "--json conflicts with --format csv"),
    ],
)
def test_diff_usage_errors(models: Path, args: list[str], needle: str) -> None:
    narrow = str(models / "m" / "narrow.onnx")
    result = invoke("diff", narrow, narrow, "-d", "batch=4", *args)
    assert result.exit_code == 2 and needle in result.stderr


def token_model(tmp: Path) -> Path:
    """input_ids, attention_mask [batch, seq] (int64) -> Add -> y: tiny_bert's inputs, exact at any seq."""
    from onnx import TensorProto, helper

    from builders import model, save, tensor

    ids, mask = (tensor(n, ["batch", "seq"], TensorProto.INT64) for n in ("input_ids", "attention_mask"))
    nodes = [helper.make_node("Add", ["input_ids", "attention_mask"], ["y"])]
    return save(model(nodes, [ids, mask], [tensor("y", ["batch", "seq"], TensorProto.INT64)]), tmp / "tokens.onnx")


SEQ_PAST_TABLE = ("-d", "batch=1", "-d", "seq=600")  # tiny_bert's token-type table has 512 entries
BERT_CAUSE = ("node '/model/embeddings/Expand_1' (Expand) cannot take seq=600 (its inputs: [1, 512], [2] = [1, 600]); "
              "its shapes resolve for seq ≤ 512")


def test_diff_shows_each_sides_exactness_and_warns_of_unresolved(tmp_path: Path) -> None:
    old, new = str(token_model(tmp_path)), str(REPO / "models" / "tiny_bert.onnx")
    result = invoke("diff", old, new, *SEQ_PAST_TABLE)
    assert result.exit_code == 0, result.output
    assert "  old: exact" in result.stdout.splitlines()
    assert (f"  new: NOT EXACT: 137 tensors have no static size, so its figures are lower estimates; cause: {BERT_CAUSE}"
            in result.stdout.splitlines())
    assert result.stderr.splitlines() == [
        f"graphmem: warning: NEW {new}: 137 tensors have no static size (cause: {BERT_CAUSE}): its figures leave "
        "them out, so the changes against it are not like for like"
    ]
    doc = json.loads(invoke("diff", old, new, *SEQ_PAST_TABLE, "--json").stdout)
    validate(doc, "diff")
    assert doc["exact"] == {"old": True, "new": False}
    assert doc["gate"] == {"passed": True, "thresholds": {}, "require_exact": False, "failures": []}


def test_diff_require_exact(tmp_path: Path) -> None:
    old, new = str(token_model(tmp_path)), str(REPO / "models" / "tiny_bert.onnx")
    result = invoke("diff", old, new, *SEQ_PAST_TABLE, "--require-exact", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    validate(doc, "diff")
    (failure,) = doc["gate"]["failures"]
    assert {k: failure[k] for k in ("metric", "option", "side")} == {"metric": "exact", "option": "--require-exact", "side": "new"}
    # 137 unresolved tensors, and two kernels whose scratch rule needs their shapes (Where, Softmax)
    assert failure["approximations"] == len(doc["new"]["activations"]["approximations"]) == 139
    assert "graphmem: gate failed: NEW (" in result.stderr
    # both sides exact: --require-exact passes
    assert invoke("diff", old, old, *SEQ_PAST_TABLE, "--require-exact").exit_code == 0
    # at seq 512, within the table, tiny_bert is exact too
    result = invoke("diff", old, new, "-d", "batch=1", "-d", "seq=512", "--require-exact")
    assert result.exit_code == 0 and result.stderr == ""
    assert "  new: exact" in result.stdout.splitlines()


# --- a real process ---------------------------------------------------------------------------


def test_subprocess_check_and_diff(models: Path) -> None:
    ok = write_config(models, NARROW + 'max-peak = "640"\n', name="ok.toml")
    proc = run_graphmem("check", "--config", str(ok), "--json")
    assert proc.returncode == 0, proc.stderr
    validate(json.loads(proc.stdout), "check")

    over = write_config(models, '[[models]]\npath = "m/*.onnx"\ndims = { batch = 4 }\nmax-peak = "1000"\n',
                        name="over.toml")
    proc = run_graphmem("check", "--config", str(over), "--json", "--jobs", "2")
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    validate(doc, "check")
    assert [m["status"] for m in doc["models"]] == ["pass", "fail"]

    bad = write_config(models, NARROW + 'max-peak = "12XB"\n', name="bad.toml")
    proc = run_graphmem("check", "--config", str(bad))
    assert proc.returncode == 2 and "'12XB' is not a byte size" in proc.stderr

    narrow, wide = str(models / "m" / "narrow.onnx"), str(models / "m" / "wide.onnx")
    proc = run_graphmem("diff", narrow, wide, "--dim", "batch=4", "--max-increase-peak", "2%", "--json")
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    validate(doc, "diff")
    assert doc["layers"][0]["name"] == "fc1"
    assert [f["option"] for f in doc["gate"]["failures"]] == ["--max-increase-peak"]


def test_peak_json_matches_schema() -> None:
    """The document `graphmem peak --json` prints today (no budgets yet) matches the schema."""
    result = invoke("peak", str(REPO / "models" / "tiny_bert.onnx"), "-d", "batch=2", "-d", "seq=16", "--json")
    assert result.exit_code == 0, result.output
    validate(json.loads(result.stdout), "peak")


PEAK_HAS_BUDGETS = "max_peak" in inspect.signature(peak).parameters


@pytest.mark.skipif(not PEAK_HAS_BUDGETS, reason="gate.finish is not wired into `graphmem peak` yet")
def test_peak_budgets(models: Path) -> None:
    narrow = str(models / "m" / "narrow.onnx")
    result = invoke("peak", narrow, "-d", "batch=4", "--max-peak", "640", "--max-params", "808",
                     "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    validate(doc, "peak")
    assert doc["gate"] == {"passed": True, "budgets": {"--max-peak": 640, "--max-params": 808},
                           "failures": []}
    for option, value, metric in [("--max-weights", "3KiB", "weights"), ("--max-peak", "512", "peak"),
                                  ("--max-total", "4000", "total"), ("--max-params", "800", "params")]:
        result = invoke("peak", narrow, "-d", "batch=4", option, value, "--format", "json")
        assert result.exit_code == 1, (option, result.output)
        doc = json.loads(result.stdout)
        validate(doc, "peak")
        assert [f["metric"] for f in doc["gate"]["failures"]] == [metric]
    for value in ("12XB", "-5MiB"):
        result = invoke("peak", narrow, "-d", "batch=4", "--max-peak", value)
        assert result.exit_code == 2 and value in result.stderr
    result = invoke("peak", narrow, "-d", "batch=4", "--max-peak", "512", "-f", "markdown")
    assert result.exit_code == 1 and "**Gate: ❌ failed**" in result.stdout
    proc = run_graphmem("peak", narrow, "--dim", "batch=4", "--max-total", "4000", "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["gate"]["passed"] is False
