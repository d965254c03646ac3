"""String tensors are sized as onnxruntime's arena holds them: one ``std::string`` object (32 B on
x86-64) per element (``graphmem.model.program.tensor_size``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx import TensorProto, helper

import graphmem
from graphmem.analysis.scratch import scratch_profile
from graphmem.model.dtypes import STRING_OBJECT_BYTES
from graphmem.verify import measure

from builders import model, save, tensor

S = TensorProto.STRING


def _concat(tmp_path: Path) -> Path:
    # StringConcat(x, y) -> z, Identity(z) -> out, a graph output (its own buffer). Run 1 requests
    # z (6 strings x 32 B = 192 B), then out (192 B); z is freed after Identity: peak 384 B.
    m = model(
        [helper.make_node("StringConcat", ["x", "y"], ["z"]), helper.make_node("Identity", ["z"], ["out"])],
        [tensor("x", [3, 2], S), tensor("y", [3, 2], S)],
        [tensor("out", [3, 2], S)],
        opset=20,
    )
    return save(m, tmp_path / "concat.onnx")


def test_string_tensor_is_its_std_string_objects(tmp_path: Path) -> None:
    path = _concat(tmp_path)
    result = graphmem.analyze(path)
    assert STRING_OBJECT_BYTES == 32
    assert result.activations.peak_bytes == 2 * 6 * 32
    assert result.activations.exact
    feeds = {"x": np.array([["a", "bb"], ["c", "d"], ["e", "a much longer string than sixteen"]], dtype=object),
             "y": np.array([["1", "2"], ["3", "4"], ["5", "6"]], dtype=object)}
    run = measure(str(path), feeds, runs=1).runs[0]
    assert run.requested_peak == result.activations.peak_bytes
    # StringConcat takes no arena scratch (the long string's characters are on the heap): chunks of
    # 256 B, 512 B in use at the peak.
    assert scratch_profile(result).peak_bytes == run.in_use_peak_bytes == 512
