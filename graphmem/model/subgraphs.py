"""Subgraphs (If branches, Loop and Scan bodies) as models of their own.

A body is planned by onnxruntime like a graph (its own session state and plan), reading two kinds
of values it does not own: its graph inputs (what the kernel feeds each execution) and the
outer-scope values it uses (``core/framework/allocation_planner.cc``: both are pre-existing for
the body's planner). :func:`body_model` turns a body GraphProto into a :class:`Model` whose
``inputs`` are both, typed by the caller, so every later stage (graph, order, shapes, program)
runs on it unchanged. Its Constant nodes become weights, as onnxruntime turns them into
initializers of the body (``core/graph/graph.cc``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import onnx

from graphmem.model.loading import Model, Weight, model_from_graph
from graphmem.model.types import TensorType
from graphmem.optable import OpTable

__all__ = ["CONTROL_FLOW_OPS", "all_weights", "body_graphs", "body_model", "is_control_flow", "outer_names"]

#: Ops that run subgraphs -> the attributes that hold them.
CONTROL_FLOW_OPS: OpTable[tuple[str, ...]] = OpTable(
    {("", "If"): ("then_branch", "else_branch"), ("", "Loop"): ("body",), ("", "Scan"): ("body",)}
)


def is_control_flow(node: onnx.NodeProto) -> bool:
    """Whether ``node`` is an If, Loop or Scan of the default domain."""
    return CONTROL_FLOW_OPS.of(node) is not None


def body_graphs(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    """(attribute name, graph) of every subgraph attribute of ``node``."""
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.name, attr.g


def outer_names(graph: onnx.GraphProto) -> tuple[str, ...]:
    """Names ``graph`` (and the bodies nested in it) reads without defining: outer-scope values."""
    bound = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    free: dict[str, None] = {}
    for node in graph.node:
        reads = [x for x in node.input if x]
        for _, sub in body_graphs(node):
            reads.extend(outer_names(sub))
        for name in reads:
            if name not in bound:
                free.setdefault(name)
        bound.update(o for o in node.output if o)
    for o in graph.output:
        if o.name not in bound:
            free.setdefault(o.name)
    return tuple(free)


def body_model(
    parent: Model,
    graph: onnx.GraphProto,
    *,
    inputs: Mapping[str, TensorType],
    outer: Mapping[str, TensorType],
    label: str,
) -> Model:
    """``graph`` as a :class:`Model`: ``inputs`` types its graph inputs (in the body's order),
    ``outer`` the outer-scope values it reads; both become the model's inputs."""
    typed = dict(inputs)
    for name in outer_names(graph):
        if name not in typed:
            typed[name] = outer.get(name, TensorType(dtype=0, shape=None))
    return model_from_graph(
        graph,
        path=f"{parent.path}::{label}",
        ir_version=parent.ir_version,
        opsets=parent.opsets,
        inputs=typed,
    )


def all_weights(model: Model) -> Iterator[Weight]:
    """The model's weights and those of every body nested in its nodes (each body's
    initializers and Constant outputs, materialised once per session by onnxruntime)."""
    yield from model.weights.values()
    for node in model.nodes:
        for name, sub in body_graphs(node):
            yield from all_weights(body_model(model, sub, inputs={}, outer={}, label=name))
