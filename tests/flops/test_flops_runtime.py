"""graphmem's MACs against the shapes onnxruntime really produces, on the committed models.

Each model in ``models/`` is run with onnxruntime CPU (optimizations off) with every node output
added as a graph output, so every tensor's run-time shape is read from the run — graphmem's own
shape inference is not used. The MACs of each Conv, ConvTranspose, Gemm and MatMul (and LSTM/GRU/
RNN) node are computed here from those shapes and the node's attributes, and graphmem's count
for the same node must agree within 0.1 %, as must the per-model total. No op may be
unsupported. (``scripts/flops_report.py`` does the same over the whole corpus, with onnx-tool.)
"""

from __future__ import annotations

import math

import onnx
import pytest
from onnx import helper

import graphmem
from graphmem.verify.feeds import make_feeds
from graphmem.verify.shapes import runtime_shapes

from builders import COMMITTED_MODELS

MODELS = COMMITTED_MODELS
BAR = 1e-3  # 0.1 %
BINDINGS = ({"batch": 1, "seq": 64}, {"batch": 3, "seq": 17})  # train_bert has 64 positions
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _macs(node: onnx.NodeProto, s: dict[str, tuple[int, ...]]) -> int:
    """Independent MACs from run-time shapes (see scripts/flops_report.py for the formulas)."""
    at = _attrs(node)
    x, w = s[node.input[0]], s[node.input[1]]
    y = s[node.output[0]]
    group = at.get("group", 1)
    if node.op_type == "Conv":  # N·Cout·prod(out)·(Cin/group)·prod(kernel)
        return y[0] * y[1] * math.prod(y[2:]) * (x[1] // group) * math.prod(w[2:])
    if node.op_type == "ConvTranspose":  # N·Cin·prod(in)·(Cout/group)·prod(kernel)
        return x[0] * x[1] * math.prod(x[2:]) * (y[1] // group) * math.prod(w[2:])
    if node.op_type == "Gemm":  # M·N·K
        m, k = (x[1], x[0]) if at.get("transA", 0) else (x[0], x[1])
        n = w[0] if at.get("transB", 0) else w[1]
        assert tuple(y) == (m, n)
        return m * n * k
    if node.op_type == "MatMul":  # prod(Y)·K
        return math.prod(y) * x[-1]
    if node.op_type in GATES:  # seq·batch·dirs·G·H·(I + H)
        seq, batch = (x[1], x[0]) if at.get("layout", 0) else (x[0], x[1])
        hidden = at.get("hidden_size", s[node.input[2]][-1])
        dirs = 2 if at.get("direction", b"forward") == b"bidirectional" else 1
        return seq * batch * dirs * GATES[node.op_type] * hidden * (x[2] + hidden)
    raise AssertionError(node.op_type)


CHECKED = ("Conv", "ConvTranspose", "Gemm", "MatMul", *GATES)


@pytest.fixture(
    scope="module",
    params=[(p, b) for p in MODELS for b in BINDINGS],
    ids=[f"{p.stem}-b{b['batch']}s{b['seq']}" for p in MODELS for b in BINDINGS],
)
def case(request):
    path, binding = request.param
    model = onnx.load(str(path))
    symbolic = {d.dim_param for vi in model.graph.input for d in vi.type.tensor_type.shape.dim if d.dim_param}
    dims = {k: v for k, v in binding.items() if k in symbolic}
    a = graphmem.analyze(path, dims=dims)
    shapes = runtime_shapes(model, make_feeds(model, dims))
    return model, a, shapes


def test_models_present():
    assert len(MODELS) >= 5


def test_nothing_unsupported(case):
    _, a, _ = case
    assert a.flops.unsupported == {}
    assert a.flops.flops > 0 and a.flops.macs > 0


def test_contraction_macs_matchruntime_shapes(case):
    model, a, shapes = case
    graphmem_macs = {}
    for nid in a.order:
        node = a.graph.node(nid)
        if node.output:
            graphmem_macs[node.output[0]] = a.flops.costs[nid].macs
    mine_total = theirs_total = checked = 0
    off = []
    for node in model.graph.node:
        if node.op_type not in CHECKED:
            continue
        mine = _macs(node, shapes)
        assert node.output[0] in graphmem_macs, f"graphmem lost {node.op_type} {node.name}"
        theirs = graphmem_macs[node.output[0]]
        checked += 1
        mine_total += mine
        theirs_total += theirs
        if abs(theirs - mine) > BAR * max(mine, 1):
            off.append((node.op_type, node.name, theirs, mine))
    assert checked > 0
    assert off == [], f"nodes off by > 0.1% (graphmem, runtime): {off}"
    assert abs(theirs_total - mine_total) <= BAR * mine_total
