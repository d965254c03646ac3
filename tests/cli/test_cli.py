"""`graphmem peak` through typer's runner and a real subprocess: exit codes, table, JSON keys."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


import graphmem

from builders import invoke

REQUIRED_KEYS = [
    "model.path",
    "model.opset",
    "model.nodes",
    "model.dims",
    "weights.params",
    "weights.bytes",
    "activations.peak_bytes",
    "activations.lower_bound_bytes",
    "activations.no_reuse_bytes",
    "activations.peak_node",
    "io.inputs_bytes",
    "io.outputs_bytes",
    "total_bytes",
    "shapes.tensors",
    "shapes.unresolved",
]


def lookup(doc: dict, dotted: str):  # type: ignore[no-untyped-def]
    for part in dotted.split("."):
        doc = doc[part]
    return doc


def test_peak_json_has_every_documented_key(models_dir: Path) -> None:
    path = models_dir / "tiny_bert.onnx"
    result = invoke("peak", str(path), "--dim", "batch=2", "--dim", "seq=16", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["schema_version"] == 1
    for key in REQUIRED_KEYS:
        lookup(doc, key)
    a = graphmem.analyze(path, dims={"batch": 2, "seq": 16})
    assert doc["activations"]["peak_bytes"] == a.activations.peak_bytes
    assert doc["model"]["dims"] == {"batch": 2, "seq": 16}
    assert doc["total_bytes"] == doc["weights"]["bytes"] + doc["activations"]["peak_bytes"] + doc["io"]["inputs_bytes"]
    for key in REQUIRED_KEYS:
        value = lookup(doc, key)
        if key.endswith("bytes"):
            assert isinstance(value, int)
    assert doc["shapes"]["unresolved"] == []


def test_peak_table_uses_named_binary_units(models_dir: Path) -> None:
    result = invoke("peak", str(models_dir / "tiny_cnn.onnx"), "--dim", "batch=8")
    assert result.exit_code == 0, result.output
    assert "KiB" in result.output or "MiB" in result.output
    assert "activations peak" in result.output and "all" in result.output


def test_subprocess_entry_point(models_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "peak", str(models_dir / "static_mlp.onnx"), "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["model"]["dims"] == {}
    assert doc["activations"]["peak_bytes"] > 0


def test_public_surface_is_small() -> None:
    assert sorted(graphmem.__all__) == ["Analysis", "GraphmemError", "__version__", "analyze"]


def test_peak_provider_cuda_table_and_errors(models_dir: Path) -> None:
    """--provider cuda prints the CUDA arena figures and the partition; an unknown provider and
    --graph-opt with cuda are usage errors (exit 2, one line)."""
    model = str(models_dir / "tiny_gpt2.onnx")
    ok = invoke("peak", model, "-d", "batch=1", "-d", "seq=16", "--provider", "cuda")
    assert ok.exit_code == 0, ok.output
    assert "CUDAExecutionProvider (emulated, not checked on a GPU)" in ok.stdout
    assert "inputs on device" in ok.stdout and "pinned host peak" in ok.stdout
    assert "Memcpy nodes" in ok.stdout
    bad = invoke("peak", model, "-d", "batch=1", "-d", "seq=16", "--provider", "tpu")
    assert bad.exit_code == 2 and "provider 'tpu'" in bad.stderr and "Traceback" not in bad.output
    opt = invoke("peak", model, "-d", "batch=1", "-d", "seq=16", "--provider", "cuda",
                              "--graph-opt", "basic")
    assert opt.exit_code == 2 and "--graph-opt none" in opt.stderr
    cpu = json.loads(invoke("peak", model, "-d", "batch=1", "-d", "seq=16", "--json").stdout)
    assert cpu["placement"] is None and cpu["activations"]["provider"] == "cpu"
