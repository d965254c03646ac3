"""Graph rewrites onnxruntime 1.31 applies even with optimizations disabled (ORT_DISABLE_ALL).

Only one changes a float32 graph: the duplicate-Cast remover that ``InsertCastTransformer`` runs
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

from graphmem.optable import is_default_domain
from graphmem.model.loading import Model
from graphmem.model.types import TensorType

__all__ = ["remove_duplicate_casts"]

_INT = {TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64}
_UINT = {TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64}
_FLOAT = {TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE}
_BITS = {
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
