"""Stage 2 — the model as a networkx DiGraph: ops are nodes, tensors ride on the edges.

Node keys are integers, each op's position among the file's non-Constant nodes (the index
onnxruntime gives it, since Constant nodes become initializers before nodes are numbered).
Each edge ``producer -> consumer`` carries ``tensors``: the names flowing along it.
Graph inputs and weights are not nodes; they are sources the graph reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import onnx

from graphmem.errors import GraphStructureError
from graphmem.model.loading import Model

__all__ = ["OpGraph", "build_graph", "node_inputs"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OpGraph:
    """The op DAG with the tensor maps every later stage needs."""

    model: Model
    dag: nx.DiGraph[int]
    producer: dict[str, int]  # tensor -> node id that writes it
    consumers: dict[str, tuple[int, ...]]  # tensor -> node ids reading it (ascending, unique)
    implicit: dict[int, tuple[str, ...]]  # node id -> outer-scope tensors its subgraphs read
    protos: dict[int, onnx.NodeProto]  # node id -> its NodeProto (also the dag's "proto" attribute)

    def node(self, nid: int) -> onnx.NodeProto:
        """The NodeProto of op ``nid``."""
        return self.protos[nid]


def node_inputs(g: OpGraph, nid: int) -> tuple[str, ...]:
    """Explicit inputs that exist (empty names are omitted optional inputs)."""
    return tuple(x for x in g.node(nid).input if x)


def build_graph(model: Model) -> OpGraph:
    """Build the DAG; raise :class:`GraphStructureError` on a dangling input or a cycle."""
    dag: nx.DiGraph[int] = nx.DiGraph()
    producer: dict[str, int] = {}
    indexed = model.indexed_nodes
    dag.add_nodes_from((nid, {"proto": node}) for nid, node in indexed)
    for nid, node in indexed:
        for out in node.output:
            if not out:
                continue
            if out in producer or out in model.weights or out in model.inputs:
                raise GraphStructureError(
                    f"tensor '{out}' is written twice (by node '{node.name or node.op_type}')"
                )
            producer[out] = nid
    sources = set(model.weights) | set(model.inputs)
    consumers: dict[str, set[int]] = {}
    implicit: dict[int, tuple[str, ...]] = {}
    edges: dict[tuple[int, int], list[str]] = {}  # added at once, in the order first seen
    for nid, node in indexed:
        outer = _outer_scope_names(node) if node.attribute else set()
        if outer:
            implicit[nid] = tuple(sorted(outer))
        for name in (*[x for x in node.input if x], *outer):
            if name in producer:
                edges.setdefault((producer[name], nid), []).append(name)
            elif name not in sources:
                if name in outer:
                    continue  # a name bound inside an enclosing subgraph scope we don't model
                raise GraphStructureError(
                    f"node '{node.name or node.op_type}' reads '{name}', which no node, input or "
                    "initializer provides (dangling input)"
                )
            consumers.setdefault(name, set()).add(nid)
    dag.add_edges_from((u, v, {"tensors": names}) for (u, v), names in edges.items())
    for out in model.outputs:
        if out not in producer and out not in sources:
            raise GraphStructureError(f"graph output '{out}' is produced by no node")
    if not nx.is_directed_acyclic_graph(dag):
        cycle = nx.find_cycle(dag)
        names = " -> ".join(dag.nodes[u]["proto"].name or dag.nodes[u]["proto"].op_type for u, _ in cycle)
        raise GraphStructureError(f"the graph has a cycle: {names}")
    return OpGraph(
        model=model,
        dag=dag,
        producer=producer,
        consumers={k: tuple(sorted(v)) for k, v in consumers.items()},
        implicit=implicit,
        protos=dict(indexed),
    )


def _outer_scope_names(node: onnx.NodeProto) -> set[str]:
    """Names a node's subgraphs (If/Loop/Scan bodies) read from the enclosing graph."""
    names: set[str] = set()
    for attr in node.attribute:
        subgraphs = list(attr.graphs)
        if attr.type == onnx.AttributeProto.GRAPH:
            subgraphs.append(attr.g)
        for sg in subgraphs:
            names |= _free_names(sg)
    return names


def _free_names(g: onnx.GraphProto) -> set[str]:
    bound = {i.name for i in g.input} | {t.name for t in g.initializer}
    free: set[str] = set()
    for node in g.node:
        for name in node.input:
            if name and name not in bound:
                free.add(name)
        for sub in _outer_scope_names(node):
            if sub not in bound:
                free.add(sub)
        bound.update(o for o in node.output if o)
    for o in g.output:
        if o.name not in bound:
            free.add(o.name)
    return free
