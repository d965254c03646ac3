"""`graphmem train` through typer's runner: exit codes, JSON keys, warnings, the table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from graphmem.training import estimate_training

from builders import IR_VERSION, invoke

TRAINING_KEYS = [
    "weights_bytes",
    "grads_bytes",
    "optimizer_state_bytes",
    "saved_bytes",
    "activation_peak_bytes",
    "step_peak_bytes",
    "peak_phase",
]


def run(*args: str):  # type: ignore[no-untyped-def]
    return invoke("train", *args)


def test_json_has_every_documented_key(models_dir: Path) -> None:
    path = models_dir / "train_bert.onnx"
    result = run(str(path), "--dim", "batch=2", "--dim", "seq=16", "--optimizer", "adamw", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1
    for key in TRAINING_KEYS:
        assert key in doc["training"], key
        if key.endswith("_bytes"):
            assert isinstance(doc["training"][key], int)
    assert doc["training"]["peak_phase"] in ("forward", "backward", "optimizer")
    est = estimate_training(path, dims={"batch": 2, "seq": 16}, optimizer="adamw")
    assert doc["training"]["step_peak_bytes"] == est.step_peak_bytes
    assert doc["training"]["saved_bytes"] == est.saved_bytes
    assert doc["config"]["optimizer"] == "adamw"
    assert doc["training"]["warnings"] == []


@pytest.mark.parametrize("optimizer,multiple", [("sgd", 0), ("momentum", 1), ("adam", 2)])
def test_optimizer_state_through_the_cli(models_dir: Path, optimizer: str, multiple: int) -> None:
    result = run(str(models_dir / "train_cnn.onnx"), "--dim", "batch=2", "--optimizer", optimizer, "--json")
    assert result.exit_code == 0, result.output
    t = json.loads(result.stdout)["training"]
    steps = 4 * 8 if multiple == 2 else 0  # 8 trainable tensors, a 4-byte Adam step each
    assert t["optimizer_state_bytes"] == multiple * t["grads_bytes"] + steps


def test_table_names_phases_and_layers(models_dir: Path) -> None:
    result = run(str(models_dir / "train_cnn.onnx"), "--dim", "batch=4", "--grads", "persistent")
    assert result.exit_code == 0, result.output
    for text in ("graphmem train:", "saved for backward", "step phases", "<- step peak", "by layer", "KiB"):
        assert text in result.stdout


def test_unknown_optimizer_is_exit_2(models_dir: Path) -> None:
    result = run(str(models_dir / "train_cnn.onnx"), "--dim", "batch=2", "--optimizer", "rmsprop")
    assert result.exit_code == 2
    assert "unknown optimizer 'rmsprop'" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("args", [["--precision", "fp8"], ["--grads", "sometimes"], []])
def test_bad_options_and_unbound_dims_are_exit_2(models_dir: Path, args: list[str]) -> None:
    dims = ["--dim", "batch=2"] if args else []
    result = run(str(models_dir / "train_cnn.onnx"), *dims, *args)
    assert result.exit_code == 2
    assert result.stderr.startswith("graphmem: error:")


def test_frozen_pattern_matching_nothing_warns_on_stderr(models_dir: Path) -> None:
    result = run(str(models_dir / "train_cnn.onnx"), "--dim", "batch=2", "--frozen", "backbone.*", "--json")
    assert result.exit_code == 0
    assert "graphmem: warning: --frozen 'backbone.*' matched no parameter" in result.stderr
    assert json.loads(result.stdout)["training"]["warnings"] == ["--frozen 'backbone.*' matched no parameter"]


def test_frozen_patterns_reduce_gradients(models_dir: Path) -> None:
    path = str(models_dir / "train_bert.onnx")
    dims = ["--dim", "batch=2", "--dim", "seq=16", "--json"]
    full = json.loads(run(path, *dims).stdout)["training"]
    part = json.loads(run(path, *dims, "--frozen", "model.embeddings.*", "--frozen", "model.encoder.layer.0.*").stdout)
    assert part["training"]["grads_bytes"] < full["grads_bytes"]
    assert part["training"]["frozen_params"] > 0


def test_model_without_trainable_weights_is_exit_2(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)
    path = tmp_path / "relu.onnx"
    path.write_bytes(proto.SerializeToString())
    result = run(str(path))
    assert result.exit_code == 2
    assert "no trainable weights" in result.stderr


def test_everything_frozen_is_exit_2(models_dir: Path) -> None:
    result = run(str(models_dir / "train_cnn.onnx"), "--dim", "batch=2", "--frozen", "*")
    assert result.exit_code == 2
    assert "froze every parameter" in result.stderr


def test_inference_export_warns(models_dir: Path) -> None:
    result = run(str(models_dir / "tiny_cnn.onnx"), "--dim", "batch=2")
    assert result.exit_code == 0
    assert "inference export" in result.stderr


def test_mixed_precision_through_the_cli(tmp_path: Path) -> None:
    w = numpy_helper.from_array(np.ones((8, 4), np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [w],
    )
    path = tmp_path / "mm.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                      ir_version=IR_VERSION).SerializeToString())
    t = json.loads(run(str(path), "--precision", "mixed-bf16", "--optimizer", "sgd", "--json").stdout)["training"]
    # autocast: the 32 params stay fp32 (128), no master copies, fp32 gradients (128); saved:
    # MatMul's cast of x bf16[2,8] (32) for W's gradient, W's cached cast is not (x needs none)
    assert (t["weights_bytes"], t["master_weights_bytes"], t["grads_bytes"]) == (128, 0, 128)
    assert t["saved_bytes"] == 32
