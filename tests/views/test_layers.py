"""`graphmem layers` and `graphmem ops`: the per-layer table and the rule coverage."""

from __future__ import annotations

import json
from pathlib import Path


import graphmem
from graphmem.views.layers import layer_rows

from builders import invoke


def test_layer_rows_sum_to_the_totals(models_dir: Path) -> None:
    a = graphmem.analyze(models_dir / "tiny_cnn.onnx", dims={"batch": 2})
    rows = layer_rows(a)
    assert len(rows) == a.model.nodes
    assert sum(r.flops for r in rows) == a.flops.flops
    assert sum(r.params for r in rows) == a.weights.params
    assert any(r.live_at_peak for r in rows)
    # the first Conv: 3->16 channels, 3x3, 64x64 output at batch 2: 2*16*64*64*27 MACs
    conv = rows[0]
    assert conv.op_type == "Conv" and conv.macs == 2 * 16 * 64 * 64 * 27
    grouped = layer_rows(a, group_depth=1, sort="flops", top=3)
    assert len(grouped) == 3 and grouped[0].flops >= grouped[1].flops >= grouped[2].flops


def test_layers_cli_json_and_errors(models_dir: Path) -> None:
    r = invoke("layers", str(models_dir / "tiny_lstm.onnx"), "--dim", "batch=1", "--dim", "seq=5", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["totals"]["flops"] == sum(layer["flops"] for layer in doc["layers"])
    r = invoke("layers", str(models_dir / "tiny_cnn.onnx"), "--dim", "batch=1", "--sort", "size")
    assert r.exit_code == 2


def test_ops_lists_every_default_op_with_an_outcome() -> None:
    r = invoke("ops", "--json", "--opset", "17")
    assert r.exit_code == 0, r.output
    ops = json.loads(r.output)["ops"]
    outcomes = {(o["domain"], o["op_type"]): o["outcome"] for o in ops}
    assert outcomes[("ai.onnx", "Conv")] == "counted"
    assert outcomes[("ai.onnx", "Reshape")] == "zero"
    assert ("com.microsoft", "Attention") in outcomes
    assert set(outcomes.values()) <= {"counted", "zero", "unsupported"}


def test_peak_json_reports_flops(models_dir: Path) -> None:
    r = invoke("peak", str(models_dir / "tiny_cnn.onnx"), "--dim", "batch=1", "--json")
    doc = json.loads(r.output)
    for key in ("total", "macs", "by_op_type", "unsupported", "zero", "int_ops"):
        assert key in doc["flops"]
    assert doc["flops"]["total"] >= 2 * doc["flops"]["macs"] > 0
    assert doc["flops"]["unsupported"] == {}


def test_ops_for_a_model_uses_its_opset_and_counts_nodes(models_dir: Path) -> None:
    r = invoke("ops", str(models_dir / "tiny_cnn.onnx"), "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["opset"] == 17
    nodes = {o["op_type"]: o["nodes"] for o in doc["ops"] if o["nodes"]}
    assert nodes["Conv"] == 4 and nodes["Relu"] == 4
    assert all(o["outcome"] != "unsupported" for o in doc["ops"] if o["nodes"])


def test_top_says_which_rows_it_shows(models_dir: Path) -> None:
    # tiny_cnn has 14 nodes: --top 3 without --sort is the first three in graph order
    cnn = str(models_dir / "tiny_cnn.onnx")
    r = invoke("layers", cnn, "--dim", "batch=1", "--top", "3")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == ("first 3 of 14 layers, in graph order (the order onnxruntime runs them; "
                        "--sort flops|params|memory for the largest)")
    assert [line.split()[0] for line in lines[2:5]] == ["/stem/stem.0/Conv", "/stem/stem.2/Relu", "/pool/MaxPool"]
    r = invoke("layers", cnn, "--dim", "batch=1", "--top", "3", "--sort", "flops")
    assert r.stdout.splitlines()[0] == "top 3 of 14 layers by flops"
    doc = json.loads(invoke("layers", cnn, "--dim", "batch=1", "--top", "3", "--json").stdout)
    assert doc["rows"] == {"sort": "order", "shown": 3, "of": 14}
    md = invoke("layers", cnn, "--dim", "batch=1", "--top", "3", "--format", "markdown").stdout
    assert "first 3 of 14 layers, in graph order" in md
    # every row shown: no such line
    assert invoke("layers", cnn, "--dim", "batch=1").stdout.splitlines()[0].startswith("layer ")
    help_text = " ".join(invoke("layers", "--help").stdout.replace("│", " ").split())  # the words, as wrapped
    assert "Show only the first N rows: in graph order unless --sort ranks them (then the N largest)." in help_text
    assert "Rows are in graph order (the order onnxruntime runs the nodes) unless --sort ranks them" in help_text
