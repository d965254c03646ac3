"""Who trains: trainable weights, weight preprocessing, and the tensors that need gradients.

Three questions every later training stage asks, answered once here:

* **Which weights train?** A floating initializer (never a Constant node's output) that reaches
  some op at an input that has a gradient — BatchNormalization's running mean and variance,
  Dropout's ratio, Clip's bounds do not — and whose name no ``--frozen`` pattern (fnmatch)
  matches. PyTorch exports parameters and buffers alike as initializers; this rule separates them.
* **Which nodes are weight preprocessing?** A node whose every ancestor source is a weight or a
  constant (the exporter's ``Transpose`` of a Linear weight, the ``Slice``/``Concat`` that
  re-lay LSTM weights). In PyTorch these are views of the parameters or live inside one kernel:
  they are not activations, and a tensor they produce is a *weight* to the ops reading it.
* **Which tensors need a gradient?** PyTorch's ``requires_grad``: a trainable weight, or a
  floating output of a differentiable op with a differentiable input that needs one. A frozen
  backbone fed by a graph input needs none, so autograd saves nothing there.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx

from graphmem.model.dtypes import is_float
from graphmem.model.graph import OpGraph
from graphmem.model.types import TensorType
from graphmem.optable import OpTable, domain_table

__all__ = [
    "WeightRoles",
    "NON_DIFFERENTIABLE_INPUTS",
    "NON_DIFFERENTIABLE_OUTPUTS",
    "NON_DIFFERENTIABLE_OPS",
    "weight_only_nodes",
    "weight_roles",
    "weight_sources",
    "requires_grad",
    "differentiable_input",
]

#: Input positions that carry no gradient (indices, shapes, statistics, hyper-parameters).
NON_DIFFERENTIABLE_INPUTS: OpTable[frozenset[int]] = OpTable({
    ("", k): frozenset(v)
    for k, v in {
        "BatchNormalization": (3, 4),
        "Dropout": (1, 2),
        "Clip": (1, 2),
        "Resize": (1, 2, 3),
        "Upsample": (1,),
        "Pad": (1, 2, 3),
        "Reshape": (1,),
        "Expand": (1,),
        "Tile": (1,),
        "Slice": (1, 2, 3, 4),
        "Squeeze": (1,),
        "Unsqueeze": (1,),
        "Split": (1,),
        "Gather": (1,),
        "GatherElements": (1,),
        "GatherND": (1,),
        "ScatterND": (1,),
        "ScatterElements": (1,),
        "TopK": (1,),
        "Where": (0,),
        "CumSum": (1,),
        "Trilu": (1,),
        "OneHot": (0, 1, 2),
        "ReduceSum": (1,),
        "ReduceMean": (1,),
        "ReduceMax": (1,),
        "ReduceMin": (1,),
        "ReduceProd": (1,),
        "ReduceL2": (1,),
        "ReduceSumSquare": (1,),
        "ReduceLogSumExp": (1,),
        "LSTM": (4,),
        "GRU": (4,),
        "RNN": (4,),
    }.items()
})
#: Output positions that are not differentiable (updated statistics, masks, indices).
NON_DIFFERENTIABLE_OUTPUTS: OpTable[frozenset[int]] = OpTable(domain_table("", {
    "BatchNormalization": frozenset({1, 2}),
    "Dropout": frozenset({1}),
    "MaxPool": frozenset({1}),
    "TopK": frozenset({1}),
    "LayerNormalization": frozenset({1, 2}),
}))
#: Ops with no gradient at all (their outputs never need one).
NON_DIFFERENTIABLE_OPS = frozenset(
    {
        "Shape", "Size", "NonZero", "ArgMax", "ArgMin", "ConstantOfShape", "Range", "EyeLike",
        "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli",
        "Multinomial", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And",
        "Or", "Xor", "IsNaN", "IsInf", "Sign", "Floor", "Ceil", "Round", "OneHot",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightRoles:
    """What each initializer is to training."""

    trainable: frozenset[str]  # parameters the optimizer updates
    frozen: frozenset[str]  # parameters matched by a --frozen pattern
    buffers: frozenset[str]  # floating initializers no gradient reaches (BN running stats, ...)
    unmatched_patterns: tuple[str, ...]  # --frozen patterns that matched no parameter


def differentiable_input(op_type: str, position: int, domain: str = "") -> bool:
    """True when input ``position`` of ``op_type`` can carry a gradient."""
    return position not in NON_DIFFERENTIABLE_INPUTS.lookup(domain, op_type, frozenset())


def weight_only_nodes(g: OpGraph) -> frozenset[int]:
    """Nodes whose every ancestor source is a weight or a constant (weight preprocessing).

    Equivalent to checking, for each node, that ``networkx.ancestors`` reaches no node reading a
    graph input; computed in one topological pass instead of one ancestor set per node.
    A node with no inputs at all (a constant generator) is weight-only too.

    >>> from graphmem.model.loading import model_from_proto
    >>> from graphmem.model.graph import build_graph
    >>> import onnx, numpy as np
    >>> from onnx import helper, numpy_helper, TensorProto
    >>> w = numpy_helper.from_array(np.ones((3, 2), np.float32), "W")
    >>> x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])
    >>> y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])
    >>> nodes = [helper.make_node("Transpose", ["W"], ["Wt"]),
    ...          helper.make_node("Transpose", ["Wt"], ["W2"]),
    ...          helper.make_node("MatMul", ["x", "W2"], ["y"])]
    >>> g = build_graph(model_from_proto(helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w]))))
    >>> sorted(weight_only_nodes(g))
    [0, 1]
    """
    weights = g.model.weights
    only: set[int] = set()
    for nid in nx.topological_sort(g.dag):
        names = (*[x for x in g.node(nid).input if x], *g.implicit.get(nid, ()))
        if all(n in weights or (n in g.producer and g.producer[n] in only) for n in names):
            only.add(nid)
    return frozenset(only)


def weight_sources(g: OpGraph, name: str, weight_only: frozenset[int]) -> frozenset[str]:
    """The initializers a weight or weight-derived tensor is computed from (itself for a weight)."""
    if name in g.model.weights:
        return frozenset({name})
    if name not in g.producer or g.producer[name] not in weight_only:
        return frozenset()
    found: set[str] = set()
    stack, seen = [g.producer[name]], set()
    while stack:
        nid = stack.pop()
        if nid in seen:
            continue
        seen.add(nid)
        for x in (*[i for i in g.node(nid).input if i], *g.implicit.get(nid, ())):
            if x in g.model.weights:
                found.add(x)
            elif x in g.producer:
                stack.append(g.producer[x])
    return frozenset(found)


def weight_roles(
    g: OpGraph, weight_only: frozenset[int], frozen_patterns: Sequence[str] = ()
) -> WeightRoles:
    """Split the floating initializers into trainable, frozen and buffers (see module doc)."""
    reached: set[str] = set()
    for nid in g.dag.nodes:
        if nid in weight_only:
            continue
        node = g.node(nid)
        for k, x in enumerate(node.input):
            if x and differentiable_input(node.op_type, k, node.domain):
                reached |= weight_sources(g, x, weight_only)
    params = {
        n
        for n in reached
        if not g.model.weights[n].from_constant_node and is_float(g.model.weights[n].dtype)
    }
    frozen: set[str] = set()
    unmatched = []
    for pattern in frozen_patterns:
        hits = {n for n in params if fnmatch.fnmatchcase(n, pattern)}
        if not hits:
            unmatched.append(pattern)
        frozen |= hits
    buffers = {
        n
        for n, w in g.model.weights.items()
        if n not in params and not w.from_constant_node and is_float(w.dtype)
    }
    return WeightRoles(
        trainable=frozenset(params - frozen),
        frozen=frozenset(frozen),
        buffers=frozenset(buffers),
        unmatched_patterns=tuple(unmatched),
    )


def requires_grad(
    g: OpGraph,
    order: Iterable[int],
    types: dict[str, TensorType],
    trainable: frozenset[str],
) -> frozenset[str]:
    """Tensors that need a gradient, PyTorch's ``requires_grad`` (see module doc)."""
    need: set[str] = set(trainable)
    for nid in order:
        node = g.node(nid)
        if node.op_type in NON_DIFFERENTIABLE_OPS:
            continue
        if not any(
            x in need and differentiable_input(node.op_type, k, node.domain) for k, x in enumerate(node.input)
        ):
            continue
        skip = NON_DIFFERENTIABLE_OUTPUTS.of(node, frozenset())
        for k, out in enumerate(node.output):
            t = types.get(out)
            if out and k not in skip and t is not None and is_float(t.dtype):
                need.add(out)
    return frozenset(need)
