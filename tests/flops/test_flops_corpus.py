"""FLOP counting on real third-party models: the onnx wheel's ``backend/test/data/light`` zoo.

For every Conv, Gemm and MatMul node, the MACs graphmem reports must equal an independent
count made here from the input shapes and attributes with plain numpy arithmetic (the output
size recomputed from the conv arithmetic, not read from graphmem's types) — within 0.1%. And no
light model may leave any op unsupported.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import helper

import graphmem
from graphmem.flops import count_flops

from builders import LIGHT

MODELS = sorted(str(p) for p in LIGHT.glob("*.onnx"))


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _conv_macs(x: tuple[int, ...], w: tuple[int, ...], at: dict) -> int:
    """out_i = floor((in_i + pad_begin + pad_end - dilation·(k-1) - 1) / stride) + 1, then
    N·Cout·prod(out)·(Cin/group)·prod(k)."""
    spatial = len(x) - 2
    kernel = at.get("kernel_shape", w[2:])
    strides = at.get("strides", [1] * spatial)
    dilations = at.get("dilations", [1] * spatial)
    pads = at.get("pads", [0] * (2 * spatial))
    group = at.get("group", 1)
    ins = np.array(x[2:], dtype=np.int64)
    k = np.array(kernel, dtype=np.int64)
    out = (ins + np.array(pads[:spatial]) + np.array(pads[spatial:]) - np.array(dilations) * (k - 1) - 1)
    out = out // np.array(strides) + 1
    return int(x[0] * w[0] * np.prod(out) * (x[1] // group) * np.prod(k))


def _gemm_macs(a: tuple[int, ...], b: tuple[int, ...], at: dict) -> int:
    m, k = (a[1], a[0]) if at.get("transA", 0) else (a[0], a[1])
    n = b[0] if at.get("transB", 0) else b[1]
    return int(np.int64(m) * n * k)


def _matmul_macs(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    batch = np.prod(np.broadcast_shapes(a2[:-2], b2[:-2]), dtype=np.int64)
    return int(batch * a2[-2] * b2[-1] * a2[-1])


def _shape(a: graphmem.Analysis, name: str) -> tuple[int, ...]:
    w = a.graph.model.weights.get(name)
    if w is not None:
        return w.dims
    return tuple(a.types[name].shape)  # type: ignore[arg-type]


@pytest.fixture(scope="module", params=MODELS, ids=[os.path.basename(p) for p in MODELS])
def counted(request):
    a = graphmem.analyze(request.param)
    return a, count_flops(a.graph, a.types, a.order)


def test_corpus_present():
    assert len(MODELS) >= 5, f"expected the onnx light models in {LIGHT}"


def test_no_unsupported_ops(counted):
    _, report = counted
    assert report.unsupported == {}
    assert report.flops > 0 and report.macs > 0


def test_contraction_macs_match_independent_count(counted):
    a, report = counted
    checked = 0
    total_ours = total_ref = 0
    for nid in a.order:
        node = a.graph.node(nid)
        at = _attrs(node)
        if node.op_type == "Conv":
            ref = _conv_macs(_shape(a, node.input[0]), _shape(a, node.input[1]), at)
        elif node.op_type == "Gemm":
            ref = _gemm_macs(_shape(a, node.input[0]), _shape(a, node.input[1]), at)
        elif node.op_type == "MatMul":
            ref = _matmul_macs(_shape(a, node.input[0]), _shape(a, node.input[1]))
        else:
            continue
        ours = report.costs[nid].macs
        assert abs(ours - ref) <= 1e-3 * ref, f"{node.op_type} {node.name}: {ours} vs {ref}"
        total_ours += ours
        total_ref += ref
        checked += 1
    assert checked > 0
    assert abs(total_ours - total_ref) <= 1e-3 * total_ref


def test_flops_are_at_least_twice_the_macs(counted):
    # every MAC is 2 FLOPs; bias, activations and pooling only add
    _, report = counted
    assert report.flops >= 2 * report.macs
    assert report.int_ops == 0  # float models: no quantized kernels, no integer tensors worked on
