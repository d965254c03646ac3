"""`graphmem verify` end to end with real onnxruntime sessions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from builders import init, invoke, model, save, tensor
from onnx import helper

from graphmem.verify.compare import parse_tolerance, verify


def test_verify_passes_on_committed_model(models_dir: Path) -> None:
    v = verify(models_dir / "tiny_lstm.onnx", dims={"batch": 2, "seq": 9})
    assert v.passed and v.ratio == 1.0 and v.divergence is None
    assert v.measured_bytes == v.predicted_bytes > 0
    assert v.measured_scratch_bytes >= v.measured_bytes


def test_verify_json_and_exit_codes(models_dir: Path) -> None:
    r = invoke("verify", str(models_dir / "tiny_cnn.onnx"), "--dim", "batch=2", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)["verify"]
    for key in ("provider", "graph_opt", "predicted_bytes", "measured_bytes", "measured_scratch_bytes", "ratio"):
        assert key in doc
    assert doc["provider"] == "CPUExecutionProvider"
    # A zero tolerance still passes an exact prediction; a malformed one is a usage error.
    r = invoke("verify", str(models_dir / "tiny_cnn.onnx"), "--dim", "batch=2", "--tolerance", "0%")
    assert r.exit_code == 0, r.output
    r = invoke("verify", str(models_dir / "tiny_cnn.onnx"), "--dim", "batch=2", "--tolerance", "x")
    assert r.exit_code == 2


def test_random_weights_for_stripped_model(tmp_path: Path) -> None:
    # A MatMul whose 256x256 weight lost its payload: not runnable as is, runnable with
    # --random-weights (memory does not depend on the values).
    w = init("W", np.ones((256, 256), np.float32))
    m = model([helper.make_node("MatMul", ["X", "W"], ["Y"])], [tensor("X", [4, 256])], [tensor("Y", [4, 256])], [w])
    m.graph.initializer[0].ClearField("raw_data")
    path = save(m, tmp_path / "stripped.onnx")
    r = invoke("verify", str(path))
    assert r.exit_code == 2 and "--random-weights" in r.output
    v = verify(path, random_weights=True)
    assert v.passed and v.measured_bytes == 4 * 256 * 4
    assert onnx.load(str(path)).graph.initializer[0].raw_data == b""  # the user's file is untouched


def test_tolerance_parsing() -> None:
    assert parse_tolerance("5%") == 0.05
    assert parse_tolerance("0.1") == 0.1


def test_verify_gates_budgets_on_the_prediction(models_dir: Path) -> None:
    # tiny_cnn at batch 4: predicted peak 1.25 MiB (= 4 x 320 KiB), measured the same.
    args = ["verify", str(models_dir / "tiny_cnn.onnx"), "--dim", "batch=4", "--json"]
    r = invoke(*args, "--max-peak", "100KiB")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["verify"]["passed"] is True and doc["gate"]["passed"] is False
    r = invoke(*args, "--max-peak", "2MiB")
    assert r.exit_code == 0, r.output
    r = invoke(*args, "--max-peak", "12XB")
    assert r.exit_code == 2


def test_verify_predicts_what_peak_predicts_at_level_all(models_dir: Path, tmp_path: Path) -> None:
    # tiny_bert quantized to QDQ: at level all onnxruntime fuses DequantizeLinear-Add-QuantizeLinear
    # into QLinearAdd, whose outputs keep the unk__ dims the session gave them ([unk__49, unk__50,
    # 64] uint8), which the file it writes no longer carries (graphmem.analysis.pipeline.
    # with_session_shapes). Without them buffers are matched that onnxruntime does not share:
    # verify's former path of its own predicted 13,432 B where peak and onnxruntime give 15,480.
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    from graphmem.analysis import analyze_graph_opt

    class Tokens(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(0)
            ids = [rng.integers(0, 100, (1, 8)).astype(np.int64) for _ in range(2)]
            self.batches = iter([{"input_ids": x, "attention_mask": np.ones_like(x)} for x in ids])

        def get_next(self):  # type: ignore[no-untyped-def]
            return next(self.batches, None)

    path = tmp_path / "tiny_bert_qdq.onnx"
    quantize_static(str(models_dir / "tiny_bert.onnx"), str(path), Tokens(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    dims = {"batch": 1, "seq": 8}
    peak = analyze_graph_opt(path, "all", dims=dims).activations.peak_bytes
    v = verify(path, dims=dims, graph_opt="all")
    assert v.predicted_bytes == peak == v.measured_bytes == 15_480
