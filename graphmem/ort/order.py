"""Execution order: the order onnxruntime's sequential executor runs the nodes.

onnxruntime 1.31 runs nodes in its GraphViewer's default topological order
(``core/graph/graph_viewer.cc``: ``ReverseDFSFrom(leaf_nodes, nullptr, leave, NodeCompare)``):
a depth-first search from the leaf nodes (nodes nothing consumes) along *input* edges, recording
each node when it is left (post-order). Roots and inputs are taken highest node index first
(the stack pops the last pushed of an ascending sort). This is not the file's order, and the
order changes which freed buffer a tensor reuses, so the planner must follow it exactly.
"""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx

from graphmem.model.graph import OpGraph

__all__ = ["ort_order", "file_order"]

_ROOT = -1  # a virtual node above the leaves, so one DFS covers every leaf in order


def ort_order(g: OpGraph) -> tuple[int, ...]:
    """Node ids in onnxruntime's default execution order (see module doc)."""
    dag = g.dag
    rev = nx.DiGraph()
    rev.add_node(_ROOT)
    rev.add_nodes_from(dag)
    rev.add_edges_from((v, u) for u, v in dag.edges())
    leaves = [n for n in dag.nodes if dag.out_degree(n) == 0]
    rev.add_edges_from((_ROOT, leaf) for leaf in leaves)

    def highest_first(nodes: Iterable[int]) -> list[int]:
        return sorted(nodes, reverse=True)

    order = nx.dfs_postorder_nodes(rev, source=_ROOT, sort_neighbors=highest_first)
    return tuple(n for n in order if n != _ROOT)


def file_order(g: OpGraph) -> tuple[int, ...]:
    """The file's node order (a valid topological order for checked ONNX models)."""
    return tuple(nx.lexicographical_topological_sort(g.dag))
