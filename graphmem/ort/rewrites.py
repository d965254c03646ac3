"""Graph rewrites onnxruntime 1.31 applies even with optimizations disabled (ORT_DISABLE_ALL).

EnsureUniqueDQForNodeUnit (:func:`ensure_unique_dq`) gives each further reader of a
DequantizeLinear its own copy. The other one that changes a float32 graph is the duplicate-Cast remover that
``InsertCastTransformer`` runs
on the main graph (``core/optimizer/insert_cast_transformer.cc``,
``RemoveDuplicateCastTransformer``). For each Cast, in node-index order, whose consumers include
Casts: a child Cast that casts back to the first Cast's input type (and is not a graph output)
is removed with its consumers rewired to the first Cast's input, unless the pair loses precision
(``UnsafeCast``); and the first Cast itself is removed when all its consumers are Casts and it
is not a graph output. Removed nodes keep their NodeIndex holes: the others keep their indices.
"""

from __future__ import annotations

from dataclasses import replace

import onnx
from onnx import TensorProto

from graphmem.model.graph import build_graph
from graphmem.model.loading import Model
from graphmem.model.types import TensorType
from graphmem.optable import MS_DOMAIN, is_default_domain

__all__ = ["ensure_unique_dq", "remove_duplicate_casts"]

_INT = {TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64}
_UINT = {TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64}
_FLOAT = {TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE}
_BITS: dict[int, int] = {
    TensorProto.BOOL: 1,
    TensorProto.UINT8: 8,
    TensorProto.INT8: 8,
    TensorProto.INT16: 16,
    TensorProto.UINT16: 16,
    TensorProto.BFLOAT16: 16,
    TensorProto.FLOAT16: 16,
    TensorProto.INT32: 32,
    TensorProto.UINT32: 32,
    TensorProto.FLOAT: 32,
    TensorProto.INT64: 64,
    TensorProto.UINT64: 64,
    TensorProto.DOUBLE: 64,
}


def _group(t: int) -> str:
    if t == TensorProto.BOOL:
        return "bool"
    if t in _INT:
        return "int"
    if t in _UINT:
        return "uint"
    if t in _FLOAT:
        return "float"
    return "unknown"


def _unsafe(src: int, dst: int, name: str) -> bool:
    """``UnsafeCast``: would removing a cast src -> dst lose information?"""
    gs, gd = _group(src), _group(dst)
    if "unknown" in (gs, gd):
        return True
    if gs not in ("bool", "uint") and gd == "uint":
        return True
    if gs == "float" and gd != "float":
        return True
    bs, bd = _BITS.get(src, -1), _BITS.get(dst, -1)
    if gs == "uint" and gd == "int":
        return bd <= bs
    if gs in ("int", "uint") and gd == "float":
        return bd <= bs
    if {src, dst} == {TensorProto.FLOAT16, TensorProto.BFLOAT16}:
        return True
    return bs > bd and not name.startswith("InsertedPrecisionFreeCast_")


def remove_duplicate_casts(model: Model, types: dict[str, TensorType]) -> Model:
    """The model as onnxruntime runs it after the duplicate-Cast remover (see module doc)."""
    if not any(n.op_type == "Cast" for n in model.nodes):
        return model
    entries = list(model.indexed_nodes)
    nodes = {nid: _copy(n) for nid, n in entries}
    outputs = set(model.outputs)
    changed = False

    def dtype(name: str) -> int:
        t = types.get(name)
        return t.dtype if t is not None else 0

    readers: dict[str, list[int]] = {}  # tensor -> reading node ids, one entry per input slot
    for nid, n in entries:
        for x in n.input:
            readers.setdefault(x, []).append(nid)
    for nid, _ in entries:
        node = nodes.get(nid)
        if node is None or node.op_type != "Cast" or not is_default_domain(node.domain):
            continue
        src, dst = dtype(node.input[0]), dtype(node.output[0])
        loss = _unsafe(src, dst, node.name)
        edges = [
            (cid, nodes[cid])
            for cid in readers.get(node.output[0], ())
            if cid in nodes and node.output[0] in nodes[cid].input
        ]
        remove, keep, inconsistent = [], [], False
        for cid, child in edges:
            if child.op_type != "Cast" or not is_default_domain(child.domain):
                continue
            src1, dst1 = dtype(child.input[0]), dtype(child.output[0])
            if loss and _unsafe(dst1, src1, child.name):
                inconsistent = True
                break
            if child.output[0] not in outputs and src == dst1 and src1 == dst:
                remove.append(cid)
            else:
                keep.append(cid)
        if inconsistent:
            continue
        for cid in dict.fromkeys(remove):
            gone = nodes.pop(cid)
            _rewire(nodes, readers, gone.output[0], node.input[0])
            changed = True
        if edges and len(remove) + len(keep) == len(edges) and node.output[0] not in outputs:
            del nodes[nid]
            _rewire(nodes, readers, node.output[0], node.input[0])
            changed = True
    if not changed:
        return model
    ids = tuple(nid for nid, _ in entries if nid in nodes)
    return replace(model, nodes=tuple(nodes[i] for i in ids), node_ids=ids)


def _copy(node: onnx.NodeProto) -> onnx.NodeProto:
    c = onnx.NodeProto()
    c.CopyFrom(node)
    return c


def _rewire(nodes: dict[int, onnx.NodeProto], readers: dict[str, list[int]], old: str, new: str) -> None:
    """Make every reader of ``old`` read ``new`` instead, keeping the reader index current."""
    for rid in readers.pop(old, ()):
        n = nodes.get(rid)
        if n is None:
            continue
        for k, x in enumerate(n.input):
            if x == old:
                n.input[k] = new
                readers.setdefault(new, []).append(rid)


def ensure_unique_dq(model: Model) -> Model:
    """The model after EnsureUniqueDQForNodeUnit (core/optimizer/qdq_transformer/
    ensure_unique_dq_for_node_unit.cc; inference_session.cc TransformGraph step 2, at every level,
    before partitioning and InsertCastTransformer).

    For each DequantizeLinear (ONNX or com.microsoft domain, ``QDQ::MatchDQNode``), in the
    session's topological order: its output edges, ordered as ``Node::EdgeSet`` orders them (by
    consumer NodeIndex, then input slot; an edge to a subgraph's implicit input sorts after the
    consumer's explicit ones) — the first keeps the original unless the DQ also feeds a graph
    output or a subgraph; every other explicit edge gets a new DequantizeLinear with the same
    inputs, attributes and domain writing ``<output>/duplicated`` (``Graph::AddNode``: the next
    NodeIndex, so onnxruntime's order runs the copy where its reader needs it, often before the
    original). Names follow ``Graph::GenerateNodeArgName``/``GenerateNodeName`` (one
    ``_token_N`` counter). Subgraphs are not rewritten here (see the analysis' approximations)."""
    from graphmem.ort.order import ort_order  # order imports the graph module; keep rewrites light

    entries = list(model.indexed_nodes)
    if not any(_is_dq(n) for _, n in entries):
        return model
    g = build_graph(model)
    nodes = {nid: n for nid, n in entries}
    edges: dict[str, list[tuple[int, int]]] = {}  # tensor -> (consumer, slot), explicit then implicit
    for nid, n in entries:
        for slot, x in enumerate(n.input):
            if x:
                edges.setdefault(x, []).append((nid, slot))
        for k, x in enumerate(g.implicit.get(nid, ())):
            edges.setdefault(x, []).append((nid, len(n.input) + k))
    outputs = set(model.outputs)
    taken_args = {x for _, n in entries for x in (*n.input, *n.output)} | set(model.inputs) | set(model.weights)
    taken_nodes = {n.name for _, n in entries}
    counter = [0]

    def generate(base: str, taken: set[str]) -> str:
        name = base
        while name in taken:
            name = f"{base}_token_{counter[0]}"
            counter[0] += 1
        taken.add(name)
        return name

    next_id = max(nodes, default=-1) + 1
    added: list[tuple[int, onnx.NodeProto]] = []
    changed: dict[int, onnx.NodeProto] = {}
    for nid in ort_order(g):
        dq = nodes[nid]
        if not _is_dq(dq) or not dq.output or not dq.output[0]:
            continue
        out = dq.output[0]
        out_edges = sorted(edges.get(out, ()))
        graph_output = out in outputs
        if not out_edges or (len(out_edges) == 1 and not graph_output):
            continue
        explicit = [(c, slot) for c, slot in out_edges if slot < len(nodes[c].input)]
        keep_first = not graph_output and len(explicit) == len(out_edges)
        for consumer, slot in explicit[1 if keep_first else 0:]:
            arg = generate(out + "/duplicated", taken_args)
            copy = onnx.NodeProto()
            copy.CopyFrom(dq)
            copy.name = generate(dq.name + "/duplicated", taken_nodes)
            del copy.output[:]
            copy.output.append(arg)
            reader = changed.get(consumer)
            if reader is None:
                reader = changed[consumer] = _copy(nodes[consumer])
            reader.input[slot] = arg
            added.append((next_id, copy))
            next_id += 1
    if not added:
        return model
    ids = tuple(nid for nid, _ in entries) + tuple(nid for nid, _ in added)
    new_nodes = tuple(changed.get(nid, n) for nid, n in entries) + tuple(n for _, n in added)
    return replace(model, nodes=new_nodes, node_ids=ids)


def _is_dq(node: onnx.NodeProto) -> bool:
    """``QDQ::MatchDQNode``: DequantizeLinear of the ONNX domain (every version onnx defines,
    10 to 25: each duplicated on onnxruntime 1.31, probed) or com.microsoft."""
    return node.op_type == "DequantizeLinear" and (is_default_domain(node.domain) or node.domain == MS_DOMAIN)
