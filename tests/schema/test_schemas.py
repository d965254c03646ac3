"""Every JSON document the CLI emits validates against its schema in ``graphmem/schema/``.

Each command runs through typer's CliRunner on ``graphmem.cli.app`` with ``--json`` on the
committed tiny models (``tiny_cnn`` [batch], ``tiny_bert`` [batch, seq], ``train_cnn`` for
``train`` and ``fit --train``) and a 2-layer KV-cache decoder built by ``test_batch``; each
document is checked by graphmem's own validator and, when importable, by ``jsonschema``
(Draft 2020-12). Also: the schema files themselves (supported keywords only, strict top level,
``schema_version`` const 1), the validator's ``allOf``/``not``/``anyOf`` reports, and
``graphmem layers --format markdown|csv`` and ``--output``.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from graphmem.schema import SCHEMAS, load_schema, schema_errors, validate

import builders
from builders import outcome as run

CNN, BERT, TRAIN = str(builders.CNN), str(builders.BERT), str(builders.TRAIN_CNN)
_RUNS: dict[tuple[str, ...], tuple[int, str, str]] = {}


try:  # the reference implementation, as tests/test_gate.py uses it
    import jsonschema
    import referencing
    from referencing.jsonschema import DRAFT202012

    _REGISTRY: Any = referencing.Registry().with_resources(
        [(f"{n}.schema.json", DRAFT202012.create_resource(load_schema(n))) for n in SCHEMAS]
    )
except ImportError:  # pragma: no cover - jsonschema is optional
    jsonschema = None
    _REGISTRY = None


def reference_errors(doc: Any, name: str) -> list[str] | None:
    """``jsonschema``'s complaints about ``doc`` (None when it is not installed)."""
    if jsonschema is None:
        return None
    validator = jsonschema.Draft202012Validator(load_schema(name), registry=_REGISTRY)
    return [e.message for e in validator.iter_errors(doc)]


def check_document(doc: Any, name: str) -> None:
    validate(doc, name)
    assert reference_errors(doc, name) in (None, [])


def run_once(*args: str) -> tuple[int, str, str]:
    """:func:`run`, remembered: the cases below are read by more than one test."""
    if args not in _RUNS:
        _RUNS[args] = run(*args)
    return _RUNS[args]




# (schema, exit code, arguments); "{decoder}" is the KV-cache decoder's path.
CASES: list[tuple[str, int, tuple[str, ...]]] = [
    ("peak", 0, ("peak", CNN, "-d", "batch=1", "--json")),
    ("peak", 1, ("peak", BERT, "-d", "batch=1", "-d", "seq=4", "--device", "t4",
                 "--max-peak", "1KiB", "--format", "json")),
    ("peak", 0, ("peak", BERT, "-d", "batch=2", "-d", "seq=8", "--provider", "cuda", "--json")),
    ("peak", 0, ("peak", BERT, "-d", "batch=1", "-d", "seq=600", "--json")),  # shapes.causes: seq past the table
    ("symbolic", 0, ("peak", CNN, "--symbolic", "--json")),
    ("diff", 0, ("diff", CNN, CNN, "-d", "batch=1", "--format", "json")),
    ("layers", 0, ("layers", CNN, "-d", "batch=1", "--json")),
    ("layers", 0, ("layers", BERT, "-d", "batch=1", "-d", "seq=4", "--format", "json")),
    ("layers", 0, ("layers", BERT, "-d", "batch=2", "-d", "seq=8", "--group", "2",
                   "--sort", "flops", "--top", "5", "--json")),
    ("ops", 0, ("ops", "--json")),
    ("ops", 0, ("ops", BERT, "--json")),
    ("verify", 0, ("verify", "--resident-processes", "0", CNN, "-d", "batch=1", "--json")),
    ("verify", 1, ("verify", "--resident-processes", "0", BERT, "-d", "batch=1", "-d", "seq=4", "--max-peak", "1", "--json")),
    ("sweep", 0, ("sweep", CNN, "-d", "batch=1,2,4", "--json")),
    ("sweep", 0, ("sweep", BERT, "-d", "batch=1", "-d", "seq=4,8,16", "--as-dtype", "float16",
                  "--json")),
    ("sweep", 0, ("sweep", "{decoder}", "-d", "batch=1", "-d", "seq=1,2,4", "--json")),
    # fit: solve / check, fits / does not, --device / --device-spec / host, --train
    ("fit", 0, ("fit", CNN, "--memory", "16MiB", "--json")),
    ("fit", 1, ("fit", CNN, "--memory", "1KiB", "--json")),
    ("fit", 0, ("fit", CNN, "--memory", "16MiB", "-d", "batch=4", "--json")),
    ("fit", 0, ("fit", CNN, "--memory", "16MiB", "-d", "batch=4", "--by", "requested", "--json")),
    ("fit", 0, ("fit", CNN, "--memory", "16MiB", "--by", "arena", "--session-option", "enable_mem_pattern=0",
                "--json")),
    ("fit", 1, ("fit", CNN, "--memory", "1MiB", "-d", "batch=4", "--overhead", "512KiB",
                "--json")),
    ("fit", 0, ("fit", CNN, "--device", "t4", "-d", "batch=4", "--json")),
    ("fit", 0, ("fit", CNN, "--device", "host", "--memory", "16MiB", "--json")),
    ("fit", 0, ("fit", BERT, "--device-spec", "name=lab,memory=64MiB,fp32=1T", "-d", "batch=1",
                "--solve", "seq", "--json")),
    ("fit", 0, ("fit", "{decoder}", "--memory", "4MiB", "--dim", "batch=4", "--solve", "seq",
                "--by", "requested", "--json")),
    ("fit", 0, ("fit", TRAIN, "--train", "--memory", "16MiB", "--json")),
    ("fit", 1, ("fit", TRAIN, "--train", "--memory", "1KiB", "--json")),
    ("fit", 0, ("fit", TRAIN, "--train", "--device", "t4", "-d", "batch=2", "--optimizer", "sgd",
                "--precision", "mixed-fp16", "--frozen", "0.*", "--json")),
    ("advise", 0, ("advise", CNN, "-d", "batch=1", "--session-option", "intra_op_num_threads=1", "--json")),
    ("devices", 0, ("devices", "--json")),
    ("devices", 0, ("devices", "--device-spec", "name=lab,memory=8GiB,fp16=100T,bandwidth=1T",
                    "--json")),
    ("train", 0, ("train", TRAIN, "-d", "batch=2", "--json")),
    ("train", 0, ("train", TRAIN, "-d", "batch=2", "--optimizer", "momentum", "--grads",
                  "persistent", "--precision", "mixed-bf16", "--frozen", "nothing*", "--foreach",
                  "--json")),
]


def _case_id(case: tuple[str, int, tuple[str, ...]]) -> str:
    _, _, args = case
    return " ".join(Path(a).stem if a.endswith(".onnx") else a for a in args)


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_cli_json_matches_its_schema(case: tuple[str, int, tuple[str, ...]], request) -> None:
    name, code, args = case
    if "{decoder}" in args:
        path = request.getfixturevalue("decoder")
        args = tuple(path if a == "{decoder}" else a for a in args)
    exit_code, out, err = run_once(*args)
    assert exit_code == code, err
    doc = json.loads(out)
    assert doc["schema_version"] == 1
    check_document(doc, name)


def test_cli_json_covers_every_variant(decoder: str) -> None:
    """The cases above exercise what the schemas distinguish (so the test proves something)."""
    fit_docs = []
    for name, _, args in CASES:
        if name != "fit":
            continue
        args = tuple(decoder if a == "{decoder}" else a for a in args)
        fit_docs.append(json.loads(run_once(*args)[1]))
    seen = {(d["mode"], d["measure"], d["fits"], d["device"] is not None) for d in fit_docs}
    for mode in ("check", "solve"):
        for measure in ("resident", "total", "training_step_peak"):
            assert any(s[:2] == (mode, measure) for s in seen), (mode, measure)
    assert any(not s[2] for s in seen) and any(s[3] for s in seen)
    assert any(d["kv_cache"] is not None for d in fit_docs)
    assert any(d["mode"] == "solve" and d["largest"] == 0 for d in fit_docs)


# --- the schema files ----------------------------------------------------------------------

_SUPPORTED = {"type", "const", "enum", "properties", "required", "additionalProperties", "items",
              "minimum", "anyOf", "allOf", "not", "$ref",
              "$schema", "$id", "$comment", "$defs", "title", "description"}


def _keywords(schema: dict[str, Any], where: str) -> list[str]:
    """Every keyword outside what graphmem's validator checks, anywhere in ``schema``."""
    bad = [f"{where}: {k}" for k in sorted(set(schema) - _SUPPORTED)]
    for key in ("properties", "$defs"):
        for sub_name, sub in schema.get(key, {}).items():
            bad += _keywords(sub, f"{where}/{key}/{sub_name}")
    for key in ("items", "not", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            bad += _keywords(schema[key], f"{where}/{key}")
    for key in ("anyOf", "allOf"):
        for i, sub in enumerate(schema.get(key, ())):
            bad += _keywords(sub, f"{where}/{key}/{i}")
    return bad


@pytest.mark.parametrize("name", SCHEMAS)
def test_schema_files(name: str) -> None:
    schema = load_schema(name)
    assert _keywords(schema, name) == []
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["properties"]["schema_version"] == {"const": 1}
    assert "schema_version" in schema["required"]
    assert set(schema["required"]) <= set(schema["properties"])
    if jsonschema is not None:
        jsonschema.Draft202012Validator.check_schema(schema)


def test_every_schema_file_is_listed() -> None:
    import graphmem.schema as package

    files = {p.name for p in Path(package.__file__).parent.glob("*.schema.json")}
    assert files == {f"{n}.schema.json" for n in SCHEMAS}


# --- what the validator rejects, in agreement with jsonschema -------------------------------


@pytest.fixture(scope="module")
def fit_docs() -> dict[str, dict[str, Any]]:
    docs = {}
    for key, args in {
        "check": ("fit", CNN, "--memory", "16MiB", "-d", "batch=2", "--json"),
        "solve_train": ("fit", TRAIN, "--train", "--memory", "4MiB", "--json"),
    }.items():
        docs[key] = json.loads(run(*args)[1])
    return docs


def _rejected(doc: Any, name: str) -> list[str]:
    problems = schema_errors(doc, name)
    assert problems, f"graphmem's validator accepted {name}: {json.dumps(doc)[:300]}"
    assert reference_errors(doc, name) != [], "jsonschema accepted what graphmem rejects"
    return problems


def test_fit_schema_tells_the_modes_apart(fit_docs: dict[str, dict[str, Any]]) -> None:
    check, solve = fit_docs["check"], fit_docs["solve_train"]
    check_document(check, "fit")
    check_document(solve, "fit")
    problems = _rejected({**check, "largest": 3}, "fit")  # a solve key in a check document
    assert any("matches none of the allowed forms" in p and "largest" in p for p in problems)
    _rejected({**check, "mode": "solve"}, "fit")  # solve without its keys
    _rejected({**check, "training": solve["training"]}, "fit")  # training with measure total
    _rejected({**solve, "measure": "total"}, "fit")
    training = dict(solve["training"])
    training.pop("next_step_peak_bytes")
    _rejected({**solve, "training": training}, "fit")  # solve --train: next_* are required
    probe = {k: v for k, v in solve["probes"][0].items() if k != "step_peak_bytes"}
    _rejected({**solve, "probes": [probe]}, "fit")
    _rejected({**check, "headroom_bytes": None}, "fit")
    _rejected({**check, "unexpected": 1}, "fit")


def test_schemas_reject_what_the_cli_never_prints() -> None:
    _, out, _ = run("layers", CNN, "-d", "batch=1", "--json")
    layers = json.loads(out)
    assert "$.layers[0]: missing key 'flops'" in _rejected(
        {**layers, "layers": [{k: v for k, v in layers["layers"][0].items() if k != "flops"}]},
        "layers")
    assert "$: key 'extra' is not in the schema" in _rejected({**layers, "extra": 1}, "layers")
    _rejected({**layers, "schema_version": 2}, "layers")
    _, out, _ = run("devices", "--json")
    devices = json.loads(out)
    bad_rate = {**devices["devices"][0], "peak": {"fp64": 1.0}}
    _rejected({**devices, "devices": [bad_rate]}, "devices")
    _, out, _ = run("train", TRAIN, "-d", "batch=1", "--json")
    train = json.loads(out)
    _rejected({**train, "config": {**train["config"], "optimizer": "lion"}}, "train")


def test_validator_not_and_all_of() -> None:
    from graphmem.schema import _check

    schema = {"allOf": [{"type": "object"}, {"not": {"required": ["x"]}}]}
    out: list[str] = []
    _check({"x": 1}, schema, schema, "$", out)
    assert out == ["$: matches a form that is not allowed"]
    out = []
    _check([], schema, schema, "$", out)  # "required" holds for a non-object: "not" fails too
    assert out == ["$: expected object, got list", "$: matches a form that is not allowed"]
    if jsonschema is not None:
        assert len(list(jsonschema.Draft202012Validator(schema).iter_errors([]))) == 2
    out = []
    _check({"y": 1}, schema, schema, "$", out)
    assert out == []


# --- graphmem layers --format / --output -----------------------------------------------------


def _layers_json(*extra: str) -> dict[str, Any]:
    code, out, err = run("layers", CNN, "-d", "batch=2", *extra, "--json")
    assert code == 0, err
    return json.loads(out)


def test_layers_markdown() -> None:
    doc = _layers_json()
    code, out, err = run("layers", CNN, "-d", "batch=2", "--format", "markdown")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"### graphmem layers: `{CNN}`"
    assert "batch=2" in lines[2] and f"at `{doc['activations']['peak_node']}`" in lines[2]
    table = [line for line in lines if line.startswith("| ")]
    assert table[0].startswith("| layer | op | output shape | params | FLOPs |")
    assert len(table) == 1 + len(doc["layers"]) + 1  # header, one per layer, total
    assert table[1].startswith(f"| `{doc['layers'][0]['name']}` | Conv | 2x16x64x64 |")
    assert table[-1].startswith("| **total** |")
    live = sum(r["live_at_peak"] for r in doc["layers"])
    assert sum(line.rstrip().endswith("| ● |") for line in table) == live > 0
    assert "<details>" not in out  # 14 layers: the table shows unfolded
    code, big, _ = run("layers", BERT, "-d", "batch=1", "-d", "seq=4", "-f", "markdown")
    assert code == 0 and "<details><summary>" in big and big.rstrip().count("</details>") == 1


def test_layers_csv_one_row_per_layer() -> None:
    doc = _layers_json("--sort", "flops", "--top", "5")
    code, out, _ = run("layers", CNN, "-d", "batch=2", "--sort", "flops", "--top", "5",
                       "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == len(doc["layers"]) == 5
    for row, layer in zip(rows, doc["layers"]):
        assert row["name"] == layer["name"] and row["op_type"] == layer["op_type"]
        for key in ("params", "flops", "macs", "output_bytes", "unsupported", "nodes"):
            assert int(row[key]) == layer[key]  # exact integers
        assert float(row["flop_share"]) == layer["flop_share"]
        assert row["live_at_peak"] == ("true" if layer["live_at_peak"] else "false")
        assert row["output_shape"] == "x".join(str(d) for d in layer["output_shape"])


def test_layers_table_is_the_default_and_json_is_a_synonym() -> None:
    code, default, _ = run("layers", CNN, "-d", "batch=2")
    assert code == 0 and run("layers", CNN, "-d", "batch=2", "-f", "table")[1] == default
    assert default.splitlines()[-1].startswith("total")
    assert run("layers", CNN, "-d", "batch=2", "-f", "json")[1] == \
        run("layers", CNN, "-d", "batch=2", "--json")[1]
    code, _, err = run("layers", CNN, "-d", "batch=2", "--json", "--format", "markdown")
    assert code == 2 and "--json conflicts with --format markdown" in err
    code, _, err = run("layers", CNN, "-d", "batch=2", "--format", "yaml")
    assert code == 2 and "--format 'yaml'" in err


@pytest.mark.parametrize("fmt", ["json", "markdown", "csv", "table"])
def test_layers_output_writes_the_file_atomically(tmp_path: Path, fmt: str) -> None:
    target = tmp_path / f"layers.{fmt}"
    target.write_text("old contents\n")
    code, out, err = run("layers", CNN, "-d", "batch=2", "--format", fmt, "--output", str(target))
    assert code == 0 and out == "" and err == ""
    text = target.read_text(encoding="utf-8")
    assert text == run("layers", CNN, "-d", "batch=2", "--format", fmt)[1]
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary file left
    if fmt == "json":
        check_document(json.loads(text), "layers")
    code, _, err = run("layers", CNN, "-d", "batch=2", "-f", fmt, "-o", str(tmp_path / "no" / "x"))
    assert code == 2 and "does not exist" in err
