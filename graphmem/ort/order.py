"""Execution order: the order onnxruntime's sequential executor runs the nodes.

onnxruntime 1.31 runs nodes in its GraphViewer's default topological order
(``core/graph/graph_viewer.cc``: ``ReverseDFSFrom(leaf_nodes, nullptr, leave, NodeCompare)``):
a depth-first search from the leaf nodes (nodes nothing consumes) along *input* edges, recording
each node when it is left (post-order). Roots and inputs are taken highest node index first
(the stack pops the last pushed of an ascending sort). This is not the file's order, and the
order changes which freed buffer a tensor reuses, so the planner must follow it exactly.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import networkx as nx
import onnx

from graphmem.model.graph import OpGraph
from graphmem.optable import MS_DOMAIN, NCHWC_DOMAIN

__all__ = ["ort_order", "file_order", "session_orders", "finalize_reorders", "node_key", "node_stages"]

#: At most this many distinct orders are enumerated (:func:`session_orders`); each is planned.
MAX_SESSION_ORDERS = 64

_ROOT = -1  # a virtual node above the leaves, so one DFS covers every leaf in order


def ort_order(g: OpGraph) -> tuple[int, ...]:
    """Node ids in onnxruntime's default execution order (see module doc)."""
    dag = g.dag
    rev: nx.DiGraph[int] = nx.DiGraph()
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


def finalize_reorders(g: OpGraph) -> tuple[int, ...]:
    """The ReorderOutput nodes the NCHWc transformer's ``Finalize`` added (they carry ``channels``
    and no ``channels_last``; TransformTranspose's have ``channels_last=1``)."""
    out = []
    for nid in g.dag.nodes:
        node = g.node(nid)
        if node.op_type == "ReorderOutput" and node.domain == NCHWC_DOMAIN:
            if not any(a.name == "channels_last" and a.i for a in node.attribute):
                out.append(nid)
    return tuple(sorted(out))


def session_orders(g: OpGraph, written: Sequence[int]) -> tuple[tuple[int, ...], ...] | None:
    """Every execution order an onnxruntime session may pick for the optimized graph ``g``, which
    one session wrote in its order ``written``; that order first. None: not enumerable.

    ``NchwcTransformerImpl::Finalize`` (core/optimizer/nchwc_transformer.cc) adds a ReorderOutput
    node per entry of ``nchwc_args_``, an ``unordered_map`` keyed by ``NodeArg*``: the nodes get
    consecutive indices, above every node made before them, in an order that follows heap
    addresses and so changes from session to session. The reverse DFS (``Graph::ReverseDFSFrom``)
    compares indices only among one node's inputs and among the leaves, so the order depends on
    the Finalize nodes' ranks only where two of them not yet visited are such siblings. The DFS is
    replayed: the Finalize nodes rank above the rest, the other nodes keep their relative rank
    from ``written``; at each such point every ranking consistent with the ones already taken is
    followed (a replay per branch). The replay must give ``written`` back for one ranking, else
    None; None too past :data:`MAX_SESSION_ORDERS` orders or :data:`MAX_REPLAYS` replays.
    """
    written = tuple(written)
    block = frozenset(finalize_reorders(g))
    if len(block) < 2:
        return (written,)
    position = {n: i for i, n in enumerate(written)}
    if len(position) != g.dag.number_of_nodes():
        return None
    found: list[tuple[int, ...]] = []
    pending: list[frozenset[tuple[int, int]]] = [frozenset()]  # rankings: (visited first, second)
    replays = 0
    while pending:
        replays += 1
        if replays > MAX_REPLAYS or len(found) > MAX_SESSION_ORDERS:
            return None
        ranking = pending.pop()
        order, contested = _replay(g, block, position, ranking)
        if contested is None:
            if order not in found:
                found.append(order)
            continue
        before = nx.DiGraph(list(ranking))
        before.add_nodes_from(contested)
        for perm in itertools.permutations(contested):
            pairs = list(zip(perm, perm[1:]))
            if all(not nx.has_path(before, b, a) for a, b in itertools.combinations(perm, 2)):
                pending.append(ranking | frozenset(pairs))
    if written not in found:
        return None
    return (written, *(o for o in found if o != written))


#: At most this many replays of the DFS (:func:`session_orders`).
MAX_REPLAYS = 4096


def _replay(
    g: OpGraph, block: frozenset[int], position: dict[int, int], ranking: frozenset[tuple[int, int]]
) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """``Graph::ReverseDFSFrom`` (core/graph/graph.cc) over ``g``: a stack of (node, leaving)
    entries, each node's inputs pushed in ascending index order, so the highest is visited first.
    Non-Finalize nodes rank by ``position`` (earlier = higher index), Finalize nodes above them,
    ordered among themselves by ``ranking``. Returns the order and None, or, at the first point
    where two or more unvisited Finalize siblings are not ordered by ``ranking``, those nodes."""
    before = nx.transitive_closure_dag(nx.DiGraph(list(ranking))) if ranking else nx.DiGraph()

    def visit_order(nodes: Iterable[int]) -> list[int] | tuple[int, ...]:
        nodes = list(dict.fromkeys(nodes))
        ranked = [n for n in nodes if n in block and n not in visited]
        for a, b in itertools.combinations(ranked, 2):
            if not (before.has_edge(a, b) or before.has_edge(b, a)):
                return tuple(sorted(ranked))
        first = sorted(ranked, key=lambda n: sum(before.has_edge(n, m) for m in ranked), reverse=True)
        rest = sorted((n for n in nodes if n not in ranked), key=lambda n: (n not in block, position[n]))
        return first + rest

    visited: set[int] = set()
    out: list[int] = []
    leaves = [n for n in g.dag.nodes if g.dag.out_degree(n) == 0]
    stack: list[tuple[int, bool]] = []
    roots = visit_order(leaves)
    if isinstance(roots, tuple):
        return (), roots
    stack.extend((n, False) for n in reversed(roots))
    while stack:
        nid, leaving = stack.pop()
        if leaving:
            out.append(nid)
            continue
        if nid in visited:
            continue
        visited.add(nid)
        stack.append((nid, True))
        inputs = visit_order(g.dag.predecessors(nid))
        if isinstance(inputs, tuple):
            return (), inputs
        stack.extend((n, False) for n in reversed(inputs))
    return tuple(out), None


def node_stages(written: Sequence[onnx.NodeProto], original: Sequence[onnx.NodeProto]) -> dict[str, int]:
    """Which pass made each node of a graph onnxruntime optimized and wrote, by :func:`node_key`: 0 a node
    of the ``original`` file (same name, domain and op), 2 a node the layout transformer made (a
    com.microsoft node with ``channels_last=1``: ``core/optimizer/nhwc_transformer.cc``, which runs
    after the fusions), 1 any other (a fusion's). ``Graph::AddNode`` (``core/graph/graph.cc``)
    gives a new node the next NodeIndex, so NodeIndex order is stage order, and within a stage the
    passes' topological order, which the written file (in execution order) keeps."""
    kept = {(n.name, n.domain, n.op_type, node_key(n)) for n in original}
    stages: dict[str, int] = {}
    for node in written:
        if (node.name, node.domain, node.op_type, node_key(node)) in kept:
            stages[node_key(node)] = 0
        elif node.domain == MS_DOMAIN and any(a.name == "channels_last" and a.i for a in node.attribute):
            stages[node_key(node)] = 2
        else:
            stages[node_key(node)] = 1
    return stages


def node_key(node: onnx.NodeProto) -> str:
    """A node's first output (unique in a graph; names may be empty or repeated), else its name."""
    return next((y for y in node.output if y), node.name)
