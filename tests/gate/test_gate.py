"""Budgets, the gate, finish(), formats, the configuration and the schema validator.

Library level, on hand-written peak documents with exact figures (the CLI is driven in
tests/test_cli_gate.py). Sizes: 10 MiB = 10_485_760 bytes; 12.3 MiB ≈ 12_897_485 bytes.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import os
from pathlib import Path

import pytest

from graphmem.gate.config import ConfigError, find_config, load_config, parse_config
from graphmem.errors import UsageError
from graphmem.views.formats import render_check, render_diff, render_peak, resolve_format
from graphmem.gate.diff import Layer, Thresholds, diff_documents, parse_thresholds
from graphmem.errors import FlopsUnavailableError
from graphmem.gate.budgets import Budgets, apply_gate, budgets_from_mapping, evaluate, parse_budgets
from graphmem.units import short_bytes, short_count
from graphmem.views.output import annotation, finish, write_atomic
from graphmem.schema import SchemaError, load_schema, schema_errors, validate

from builders import PINNED_HOST

MiB = 1 << 20


def peak_doc(
    *,
    weights: int = 3 * MiB,
    params: int = 786_432,
    peak: int = 12_897_485,
    inputs: int = 1024,
    unresolved: tuple[str, ...] = (),
    flops: int | None = None,
) -> dict:
    """A peak document with chosen figures (total = weights + peak + inputs)."""
    doc = {
        "schema_version": 1,
        "model": {"path": "m.onnx", "opset": 17, "nodes": 3, "dims": {"batch": 4}},
        "weights": {
            "params": params,
            "bytes": weights,
            "external_bytes": 0,
            "by_dtype": {"float": {"params": params, "bytes": weights}},
            "unknown": [],
        },
        "activations": {
            "peak_bytes": peak,
            "peak_node": "fc2",
            "lower_bound_bytes": peak,
            "no_reuse_bytes": peak + 100,
            "best_arena_bytes": peak,
            "runtime": "onnxruntime 1.31 CPU",
            "unknown": [],
        },
        "io": {"inputs_bytes": inputs, "outputs_bytes": 128},
        "total_bytes": weights + peak + inputs,
        "shapes": {"tensors": 8, "unresolved": list(unresolved)},
        "host": PINNED_HOST.to_dict(),
    }
    if flops is not None:
        doc["flops"] = {"total": flops}
    return doc


# --- budgets ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "text", "expected"),
    [
        ("max_peak", "512MiB", 512 * MiB),
        ("max_total", "1.5GB", 1_500_000_000),
        ("max_weights", "4096", 4096),
        ("max_weights", "2G", 2 << 30),  # a bare G is binary for byte sizes
        ("max_params", "25M", 25_000_000),
        ("max_flops", "4G", 4_000_000_000),
        ("max_params", "1.2k", 1200),
    ],
)
def test_parse_budgets_units(option: str, text: str, expected: int) -> None:
    assert getattr(parse_budgets(**{option: text}), option) == expected


@pytest.mark.parametrize(
    ("option", "text", "needle"),
    [
        ("max_peak", "12XB", "--max-peak '12XB' is not a byte size"),
        ("max_weights", "-5MiB", "--max-weights '-5MiB': a budget cannot be negative"),
        ("max_params", "25MiB", "--max-params '25MiB' is not a count"),
        ("max_flops", "-1", "--max-flops '-1': a budget cannot be negative"),
        ("max_total", "", "--max-total '' is not a byte size"),
        ("max_total", "1e9", "--max-total '1e9' is not a byte size"),
    ],
)
def test_parse_budgets_rejects(option: str, text: str, needle: str) -> None:
    with pytest.raises(UsageError, match="^" + needle.replace("(", r"\(")) as info:
        parse_budgets(**{option: text})
    assert info.value.exit_code == 2


def test_budgets_are_checked_and_merge() -> None:
    with pytest.raises(UsageError, match="cannot be negative"):
        Budgets(max_peak=-1)
    with pytest.raises(UsageError, match="expected an integer"):
        Budgets(max_peak=True)  # type: ignore[arg-type]
    base = Budgets(max_peak=10, max_total=20)
    assert base.over(Budgets(max_peak=5)) == Budgets(max_peak=5, max_total=20)
    assert not Budgets().active and base.active
    assert base.to_json() == {"--max-peak": 10, "--max-total": 20}
    assert budgets_from_mapping({"max-peak": "1KiB", "max-params": 7}) == Budgets(
        max_peak=1024, max_params=7
    )
    with pytest.raises(UsageError, match="unknown budget 'max-peek'"):
        budgets_from_mapping({"max-peek": "1KiB"})


# --- evaluate -----------------------------------------------------------------------------


def test_evaluate_passes_within_every_budget() -> None:
    doc = peak_doc()
    b = Budgets(max_weights=3 * MiB, max_peak=13 * MiB, max_total=16 * MiB, max_params=786_432)
    result = evaluate(doc, b)
    assert result.passed and result.failures == ()
    gated = apply_gate(doc, result)
    assert gated["gate"] == {"passed": True, "budgets": b.to_json(), "failures": []}
    assert "gate" not in doc  # apply_gate copies
    validate(gated, "peak")


def test_evaluate_message_matches_the_spec() -> None:
    # 12_897_485 B = 12.3 MiB; limit 10 MiB; excess 2_411_725 B = 2.3 MiB = 23% of the limit.
    result = evaluate(peak_doc(), Budgets(max_peak=10 * MiB))
    (f,) = result.failures
    assert not result.passed
    assert (f.metric, f.option, f.limit, f.actual, f.excess, f.reason) == (
        "peak", "--max-peak", 10 * MiB, 12_897_485, 2_411_725, "exceeds"
    )
    assert f.message == "activations peak 12.3 MiB exceeds --max-peak 10 MiB by 2.3 MiB (23%)"


@pytest.mark.parametrize(
    ("budgets", "metric", "message"),
    [
        (Budgets(max_weights=MiB), "weights", "weights 3 MiB exceeds --max-weights 1 MiB by 2 MiB (200%)"),
        (Budgets(max_peak=12 * MiB), "peak",
         "activations peak 12.3 MiB exceeds --max-peak 12 MiB by 307 KiB (2.5%)"),
        (Budgets(max_total=15 * MiB), "total",
         "total 15.3 MiB exceeds --max-total 15 MiB by 308 KiB (2%)"),
        (Budgets(max_params=750_000), "params",
         "params 786k exceeds --max-params 750k by 36.4k (4.9%)"),
        (Budgets(max_flops=1_000_000_000), "flops",
         "FLOPs 1.5G exceeds --max-flops 1G by 500M (50%)"),
    ],
)
def test_each_budget_fails(budgets: Budgets, metric: str, message: str) -> None:
    doc = peak_doc(flops=1_500_000_000)
    result = evaluate(doc, budgets)
    assert [f.metric for f in result.failures] == [metric]
    assert result.failures[0].message == message
    validate(apply_gate(doc, result), "peak")


def test_flops_budget_without_flops_is_an_error_not_a_pass() -> None:
    with pytest.raises(FlopsUnavailableError, match="FLOPs are unavailable") as info:
        evaluate(peak_doc(), Budgets(max_flops=10**12))
    assert info.value.exit_code == 2


def test_unknown_sizes_never_pass() -> None:
    doc = peak_doc(unresolved=("nz_out",))
    (f,) = evaluate(doc, Budgets(max_peak=20 * MiB)).failures
    assert (f.reason, f.excess) == ("unknown", None)
    assert "1 tensors have no static size ('nz_out')" in f.message
    (f,) = evaluate(doc, Budgets(max_peak=10 * MiB)).failures
    assert f.reason == "exceeds" and f.message.startswith("activations peak at least 12.3 MiB")
    assert evaluate(doc, Budgets(max_params=10**9)).passed  # params do not depend on shapes


def test_flops_without_a_rule_never_pass() -> None:
    doc = peak_doc(flops=1000)
    doc["flops"]["unsupported"] = {"MyOp": 2}
    (f,) = evaluate(doc, Budgets(max_flops=10**6)).failures
    assert f.reason == "unknown" and "1 op types have no FLOP rule ('MyOp')" in f.message
    validate(doc, "peak")


def test_limit_zero() -> None:
    (f,) = evaluate(peak_doc(), Budgets(max_weights=0)).failures
    assert f.message == "weights 3 MiB exceeds --max-weights 0 B by 3 MiB"


@pytest.mark.parametrize(
    ("n", "b", "c"),
    [(0, "0 B", "0"), (999, "999 B", "999"), (1023, "1023 B", "1.02k"), (1024, "1 KiB", "1.02k"), (1_048_064, "1 MiB", "1.05M"),
     (12_897_485, "12.3 MiB", "12.9M"), (25_000_000, "23.8 MiB", "25M"), (-1536, "-1.5 KiB", "-1.54k")],
)
def test_short_units(n: int, b: str, c: str) -> None:
    assert (short_bytes(n), short_count(n)) == (b, c)


def test_annotation_escapes() -> None:
    assert annotation("peak +5% over\nlimit") == "::error title=graphmem::peak +5%25 over%0Alimit"


# --- finish (the tail of `graphmem peak`) ---------------------------------------------------


def test_finish_without_budgets_prints_the_document(capsys: pytest.CaptureFixture[str]) -> None:
    doc = peak_doc()
    assert finish(doc, budgets=Budgets(), fmt="json", output=None, table="T") == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == doc and err == ""
    assert finish(doc, budgets=Budgets(), fmt="table", output=None, table="T\n") == 0
    assert capsys.readouterr().out == "T\n"


@pytest.mark.parametrize("fmt", ["table", "json", "markdown", "csv"])
def test_finish_failing_gate(fmt: str, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    code = finish(peak_doc(), budgets=Budgets(max_peak=10 * MiB, max_params=10**6), fmt=fmt,
                  output=None, table="graphmem peak: m.onnx")
    out, err = capsys.readouterr()
    message = "activations peak 12.3 MiB exceeds --max-peak 10 MiB by 2.3 MiB (23%)"
    assert code == 1
    assert err == f"graphmem: gate failed: m.onnx: {message}\n"
    if fmt == "json":
        doc = json.loads(out)
        validate(doc, "peak")
        assert doc["gate"]["passed"] is False and doc["gate"]["failures"][0]["message"] == message
    elif fmt == "csv":
        (row,) = csv.DictReader(io.StringIO(out))
        assert row["gate"] == "fail" and row["peak_bytes"] == "12897485" and message in row["failures"]
    elif fmt == "markdown":
        assert "**Gate: ❌ failed**" in out and f"- ❌ {message}" in out
    else:
        assert out.startswith("graphmem peak: m.onnx\n")
        assert "gate: FAILED, 1 of 2 budgets not met" in out and f"FAIL  {message}" in out
        assert "ok    params 786k within --max-params 1M" in out


def test_finish_github_annotations(capsys: pytest.CaptureFixture[str], monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    budgets = Budgets(max_peak=10 * MiB)
    assert finish(peak_doc(), budgets=budgets, fmt="table", output=None, table="T") == 1
    out, err = capsys.readouterr()
    assert "::error title=graphmem::m.onnx: activations peak 12.3 MiB exceeds" in out
    # with JSON on stdout the annotation goes to stderr, keeping stdout parseable
    assert finish(peak_doc(), budgets=budgets, fmt="json", output=None, table="T") == 1
    out, err = capsys.readouterr()
    json.loads(out)
    assert "::error title=graphmem::" in err
    # with --output the document is in the file and the annotation on stdout
    target = tmp_path / "peak.json"
    assert finish(peak_doc(), budgets=budgets, fmt="json", output=target, table="T") == 1
    out, _ = capsys.readouterr()
    assert out.startswith("::error title=graphmem::")
    assert json.loads(target.read_text())["gate"]["passed"] is False


def test_finish_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--format 'yaml'"):
        finish(peak_doc(), budgets=Budgets(), fmt="yaml", output=None, table="")
    with pytest.raises(FlopsUnavailableError):
        finish(peak_doc(), budgets=Budgets(max_flops=1), fmt="json", output=None, table="")
    with pytest.raises(UsageError, match="does not exist"):
        finish(peak_doc(), budgets=Budgets(), fmt="json", output=tmp_path / "no" / "x.json", table="")


def test_write_atomic_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
    with pytest.raises(UsageError, match="is a directory"):
        write_atomic(tmp_path, "x")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_atomic(link, "via link\n")  # the link stays, its target is replaced
    assert link.is_symlink() and target.read_text() == "via link\n"
    write_atomic(Path(os.devnull), "x")  # a device is written, never replaced
    assert not Path(os.devnull).is_file()


def test_resolve_format() -> None:
    assert resolve_format("table", as_json=True) == "json"
    assert resolve_format("csv", as_json=False) == "csv"
    with pytest.raises(UsageError, match="--json conflicts with --format csv"):
        resolve_format("csv", as_json=True)


# --- diff on documents ----------------------------------------------------------------------


def _layers(hidden: int) -> dict[str, Layer]:
    # x[4,16] -> fc1 Gemm(16->hidden) -> relu -> fc2 Gemm(hidden->8); 4-byte floats
    return {
        "fc1": Layer(name="fc1", op_type="Gemm", params=17 * hidden, weight_bytes=68 * hidden,
                     output_bytes=16 * hidden),
        "relu": Layer(name="relu", op_type="Relu", params=0, weight_bytes=0, output_bytes=16 * hidden),
        "fc2": Layer(name="fc2", op_type="Gemm", params=8 * hidden + 8, weight_bytes=32 * hidden + 32,
                     output_bytes=128),
    }


def test_diff_documents_names_the_widened_layer() -> None:
    old = peak_doc(params=808, weights=3232, peak=640, inputs=256)  # the real figures at batch 4
    new = peak_doc(params=1608, weights=6432, peak=1152, inputs=256)
    th = parse_thresholds(max_increase="5%", peak="200%")
    doc = diff_documents(old, new, old_layers=_layers(32), new_layers=_layers(64), thresholds=th)
    validate(doc, "diff")
    assert [lay["name"] for lay in doc["layers"]] == ["fc1", "fc2", "relu"]
    assert doc["layers"][0]["change"] == {"params": 544, "weight_bytes": 2176, "output_bytes": 512}
    assert [r["op_type"] for r in doc["op_types"]] == ["Gemm", "Relu"]
    rows = {r["metric"]: r for r in doc["metrics"]}
    assert rows["params"]["change"] == 800 and rows["params"]["change_percent"] == pytest.approx(99.0099, abs=1e-3)
    assert rows["peak"]["status"] == "ok" and rows["peak"]["limit_percent"] == 200
    assert "flops" not in rows  # no FLOP count: left out, not shown as 0
    assert [f["metric"] for f in doc["gate"]["failures"]] == ["weights", "total", "params"]
    assert doc["gate"]["failures"][2]["message"] == (
        "params grew 99.0% (808 → 1.61k, +800), over --max-increase-params 5%"
    )
    for fmt in ("table", "markdown", "csv"):
        assert "fc1" in render_diff(doc, fmt)


def test_diff_documents_self_is_all_zero() -> None:
    doc = diff_documents(peak_doc(), peak_doc(), old_layers=_layers(32), new_layers=_layers(32),
                         thresholds=parse_thresholds(max_increase="0%"))
    assert all(r["change"] == 0 and r["status"] == "ok" for r in doc["metrics"])
    assert doc["op_types"] == [] and doc["layers"] == [] and doc["gate"]["passed"]


def test_diff_flops_threshold_requires_flops() -> None:
    with pytest.raises(FlopsUnavailableError, match="FLOPs are unavailable for either model"):
        diff_documents(peak_doc(), peak_doc(), old_layers={}, new_layers={},
                       thresholds=parse_thresholds(flops="1%"))
    doc = diff_documents(peak_doc(flops=100), peak_doc(flops=200), old_layers={}, new_layers={},
                         thresholds=parse_thresholds(max_increase="5%"))
    (f,) = [f for f in doc["gate"]["failures"] if f["metric"] == "flops"]
    assert f["change_percent"] == 100.0


@pytest.mark.parametrize("text", ["5", "-1%", "abc%", "inf%", "nan%"])
def test_parse_thresholds_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="--max-increase-peak"):
        parse_thresholds(peak=text)


def test_thresholds_override() -> None:
    th = parse_thresholds(max_increase="5%", peak="2%")
    assert (th.weights, th.peak, th.flops_required) == (5.0, 2.0, False)
    assert th.to_json()["--max-increase-peak"] == 2.0
    assert Thresholds().to_json() == {}


# --- configuration --------------------------------------------------------------------------


def _config(tmp_path: Path, text: str, name: str = "graphmem.toml") -> Path:
    (tmp_path / "m").mkdir(exist_ok=True)
    for model in ("a.onnx", "b.onnx"):
        (tmp_path / "m" / model).write_bytes(b"")
    path = tmp_path / name
    path.write_text(text)
    return path


def test_config_defaults_globs_and_overrides(tmp_path: Path) -> None:
    path = _config(tmp_path, """
max-total = "1MiB"
dims = { batch = 2 }
[[models]]
path = "m/*.onnx"
max-peak = "10KiB"
[[models]]
path = "m/a.onnx"
name = "big-a"
dims = { batch = 16 }
max-total = 2000000
""")
    cfg = load_config(path)
    assert [m.name for m in cfg.models] == ["m/a.onnx", "m/b.onnx", "big-a"]
    a, _, big = cfg.models
    assert a.budgets == Budgets(max_total=MiB, max_peak=10240)
    assert big.budgets == Budgets(max_total=2_000_000) and big.dims == {"batch": 16}
    assert a.default_dims == {"batch": 2} and a.dims == {}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[[models]]\npath = "m/a.onnx"\nmax-peek = "1MiB"', "unknown key 'models[0].max-peek'; did you mean 'max-peak'?"),
        ('colour = 1\n[[models]]\npath = "m/a.onnx"', "unknown key 'colour'"),
        ('[[models]]\npath = "m/missing.onnx"', "model file 'm/missing.onnx' does not exist"),
        ('[[models]]\npath = "m/*.pt"', "'m/*.pt' matches no model file"),
        ('[[models]]\npath = "m/a.onnx"\nmax-peak = "12XB"', "models[0].max-peak '12XB' is not a byte size"),
        ('[[models]]\npath = "m/a.onnx"\nmax-peak = "-5MiB"', "models[0].max-peak '-5MiB': a budget cannot be negative"),
        ('[[models]]\npath = "m/a.onnx"\ndims = { batch = -1 }', "models[0].dims.batch = -1"),
        ('[[models]]\npath = "m/a.onnx"\nshapes = { x = [1, -3] }', "models[0].shapes.x"),
        ('[[models]]\npath = "m/a.onnx"\nrequire-exact = 1', "require-exact"),
        ('[[models]]\nname = "x"', "models[0]: missing key 'path'"),
        ("models = []", "'models' must be a non-empty array"),
        ("models = [", "not valid TOML"),
    ],
)
def test_config_errors_name_the_key(tmp_path: Path, text: str, needle: str) -> None:
    path = _config(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert needle in str(info.value) and str(path) in str(info.value)
    assert info.value.exit_code == 2


def test_parse_config_needs_a_table() -> None:
    with pytest.raises(ConfigError, match="x.toml: the configuration must be a table"):
        parse_config(["models"], path=Path("x.toml"))


def test_config_in_pyproject_is_found_upwards(tmp_path: Path, monkeypatch) -> None:
    _config(tmp_path, '[project]\nname = "x"\n[tool.graphmem]\nmodels = [{ path = "m/a.onnx" }]\n',
            name="pyproject.toml")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert find_config() == tmp_path / "pyproject.toml"
    cfg = load_config(None)
    assert [m.name for m in cfg.models] == ["m/a.onnx"] and cfg.models[0].path == "../m/a.onnx"
    with pytest.raises(ConfigError, match="no configuration found"):
        find_config(Path("/"))
    (tmp_path / "other").mkdir()
    bare = tmp_path / "other" / "pyproject.toml"
    bare.write_text('[project]\nname = "x"\n')
    with pytest.raises(ConfigError, match=r"has no \[tool.graphmem\] table"):
        load_config(bare)


# --- schema validator --------------------------------------------------------------------------


def test_validator_reports_paths() -> None:
    doc = peak_doc()
    doc["extra"] = 1
    doc["weights"]["bytes"] = -1
    doc["schema_version"] = True  # a bool is not the integer 1 in JSON
    doc["activations"].pop("peak_node")
    problems = schema_errors(doc, "peak")
    assert "$.schema_version: must be 1" in problems
    assert "$.weights.bytes: -1 is below the minimum 0" in problems
    assert "$: key 'extra' is not in the schema" in problems
    assert "$.activations: missing key 'peak_node'" in problems
    with pytest.raises(SchemaError, match="peak.schema.json"):
        validate(doc, "peak")


def test_check_document_schema_and_render() -> None:
    gated = apply_gate(peak_doc(), evaluate(peak_doc(), Budgets(max_peak=10 * MiB)))
    entry = {"name": "a", "path": "a.onnx", "dims": {"batch": 4}, "provider": "cpu"}
    doc = {
        "schema_version": 1, "host": PINNED_HOST.to_dict(), "config": "graphmem.toml", "passed": False,
        "summary": {"models": 2, "passed": 0, "failed": 1, "errors": 1},
        "models": [
            {**entry, "status": "fail", "error": None, "report": gated},
            {**entry, "name": "b", "status": "error", "error": "unbound dims", "report": None},
        ],
    }
    validate(doc, "check")
    broken = copy.deepcopy(doc)
    broken["models"][1]["report"] = {"schema_version": 1}
    assert any("matches none" in p for p in schema_errors(broken, "check"))
    table = render_check(doc, "table")
    assert "FAIL  a: activations peak 12.3 MiB" in table and "ERROR b: unbound dims" in table
    rows = list(csv.DictReader(io.StringIO(render_check(doc, "csv"))))
    assert [r["status"] for r in rows] == ["fail", "error"]
    assert "❌ FAIL" in render_check(doc, "markdown")


def test_schemas_are_valid_json_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    referencing = pytest.importorskip("referencing")
    from referencing.jsonschema import DRAFT202012

    names = ("peak", "check", "diff", "host")
    registry = referencing.Registry().with_resources(
        [(f"{n}.schema.json", DRAFT202012.create_resource(load_schema(n))) for n in names]
    )
    for n in names:
        jsonschema.Draft202012Validator.check_schema(load_schema(n))
    doc = apply_gate(peak_doc(), evaluate(peak_doc(), Budgets(max_peak=1)))
    jsonschema.Draft202012Validator(load_schema("peak"), registry=registry).validate(doc)


def test_render_peak_markdown_and_csv() -> None:
    md = render_peak(peak_doc(flops=10**9), "markdown")
    assert md.startswith("### graphmem peak: `m.onnx`") and "FLOPs: 1G" in md
    (row,) = csv.DictReader(io.StringIO(render_peak(peak_doc(), "csv")))
    assert row["total_bytes"] == str(3 * MiB + 12_897_485 + 1024) and row["gate"] == ""
