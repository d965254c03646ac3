"""Files onnxruntime loads although onnx's checker alone refuses them (graphmem.model.validate):
ops onnxruntime registers in the ONNX domain, Constant nodes whose value_info disagrees with
their tensor. Real onnxruntime sessions; hand-computed figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from builders import init, model, save, tensor
from onnx import TensorProto, helper

import graphmem
from graphmem.errors import InvalidModelError
from graphmem.model.loading import load_model
from graphmem.model.validate import ORT_ONNX_DOMAIN_OPS
from graphmem.optable import is_default_domain
from graphmem.ort.runtime import onnxruntime
from graphmem.verify import make_feeds, measure


def measured(path: Path) -> int:
    feeds = make_feeds(onnx.load(str(path)), {}, seed=0)
    return measure(str(path), feeds, graph_opt="none", threads=1, runs=1).runs[0].requested_peak


def test_simplified_layer_norm_in_the_onnx_domain(tmp_path: Path) -> None:
    # onnxruntime-genai writes SimplifiedLayerNormalization in the default domain (opset 21+),
    # an op only onnxruntime registers there. x [2,8,32] -> SLN -> n [2,8,32] (2,048 B) -> Relu
    # in place -> y (graph output, its own buffer: 2,048 B): peak 4,096 B.
    nodes = [helper.make_node("SimplifiedLayerNormalization", ["x", "g"], ["n"], axis=-1, epsilon=1e-5),
             helper.make_node("Relu", ["n"], ["y"])]
    m = model(nodes, [tensor("x", [2, 8, 32])], [tensor("y", [2, 8, 32])], [init("g", np.ones(32, np.float32))], opset=21)
    path = save(m, tmp_path / "sln.onnx")
    result = graphmem.analyze(path)
    assert result.activations.peak_bytes == measured(path) == 4096


def test_constant_declared_as_a_scalar_is_its_tensor(tmp_path: Path) -> None:
    # A Constant [1] int64 declared a scalar in value_info: onnxruntime makes it an initializer of
    # its tensor's type and loads the file. Expand(x [4], shape=[1]) -> y [4] float: 16 B.
    value = helper.make_tensor("c", TensorProto.INT64, [1], [1])
    nodes = [helper.make_node("Constant", [], ["c"], value=value), helper.make_node("Expand", ["x", "c"], ["y"])]
    m = model(nodes, [tensor("x", [4])], [tensor("y", [4])], value_info=[helper.make_tensor_value_info("c", TensorProto.INT64, [])])
    path = save(m, tmp_path / "const.onnx")
    assert graphmem.analyze(path).activations.peak_bytes == measured(path) == 16


def test_op_nobody_registers_is_still_refused(tmp_path: Path) -> None:
    nodes = [helper.make_node("NoSuchNorm", ["x"], ["y"])]
    path = save(model(nodes, [tensor("x", [4])], [tensor("y", [4])], opset=21), tmp_path / "nosuch.onnx")
    with pytest.raises(InvalidModelError, match="No Op registered for NoSuchNorm"):
        load_model(path)


def test_the_onnx_domain_table_is_the_installed_onnxruntimes() -> None:
    # every (op, since) onnxruntime's schema registry has in the ONNX domain that onnx's has not
    registered = set()
    for schema in onnxruntime().capi.onnxruntime_pybind11_state.get_all_operator_schema():
        if is_default_domain(schema.domain):
            try:
                known = onnx.defs.get_schema(schema.name, schema.since_version, "").since_version == schema.since_version
            except onnx.defs.SchemaError:
                known = False
            if not known:
                registered.add((schema.name, schema.since_version))
    assert registered == ORT_ONNX_DOMAIN_OPS
