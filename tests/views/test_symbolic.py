"""`graphmem peak --symbolic`: figures as formulas of the unbound dims."""

from __future__ import annotations

import json
from pathlib import Path


import graphmem
from graphmem.model.loading import load_model
from graphmem.schema import validate
from graphmem.views.symbolic import symbolic_peak

from builders import invoke


def test_formula_is_exact_and_predicts_unseen_dims(models_dir: Path) -> None:
    path = models_dir / "tiny_gpt2.onnx"
    s = symbolic_peak(load_model(path), {"batch": 2})
    assert s.free == ("seq",) and s.exact
    for seq in (5, 40):  # neither in the grid nor the check point
        a = graphmem.analyze(path, dims={"batch": 2, "seq": seq})
        assert round(s.formulas["peak_bytes"]({"seq": seq})) == a.activations.peak_bytes
        assert round(s.formulas["total_bytes"]({"seq": seq})) == a.total_bytes


def test_linear_in_batch_for_a_cnn(models_dir: Path) -> None:
    s = symbolic_peak(load_model(models_dir / "tiny_cnn.onnx"), {})
    # the peak is linear in batch: zero constant, zero square, slope = the batch-1 peak
    per_sample = graphmem.analyze(models_dir / "tiny_cnn.onnx", dims={"batch": 1}).activations.peak_bytes
    assert s.formulas["peak_bytes"].terms == (((), 0.0), (("batch",), float(per_sample)), (("batch", "batch"), 0.0))


def test_cli_symbolic_json_validates_and_errors(models_dir: Path) -> None:
    r = invoke("peak", str(models_dir / "tiny_cnn.onnx"), "--symbolic", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    validate(doc, "symbolic")
    assert doc["symbolic"]["exact"] is True
    r = invoke("peak", str(models_dir / "tiny_cnn.onnx"), "--symbolic", "--dim", "batch=2")
    assert r.exit_code == 2
    r = invoke("peak", str(models_dir / "tiny_cnn.onnx"), "--symbolic", "--max-peak", "1MiB")
    assert r.exit_code == 2
