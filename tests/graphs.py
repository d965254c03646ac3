"""Tiny inline ONNX graphs for tests, built with onnx.helper."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, outputs, initializers=(), opset=17, value_info=()):  # type: ignore[no-untyped-def]
    graph = helper.make_graph(
        list(nodes), "g", list(inputs), list(outputs), list(initializers), value_info=list(value_info)
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def tensor(name: str, shape, dtype=TensorProto.FLOAT):  # type: ignore[no-untyped-def]
    return helper.make_tensor_value_info(name, dtype, shape)


def init(name: str, array) -> onnx.TensorProto:  # type: ignore[no-untyped-def]
    return numpy_helper.from_array(np.asarray(array), name)


def save(m: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(m.SerializeToString())
    return path
