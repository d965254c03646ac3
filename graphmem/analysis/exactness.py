"""Exact, or says why: the approximations an analysis made, one :class:`Approximation` each.

An activation figure is exact only when every buffer was planned from a resolved shape under the
emulated runtime's rules. Each thing that breaks this is listed with the node it concerns, so a
user (and a gate: ``--require-exact``) can tell an exact figure from an estimate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import onnx

from graphmem.analysis.result import Approximation
from graphmem.flops.registry import REGISTRY
from graphmem.model.graph import OpGraph
from graphmem.optable import is_default_domain, op_key
from graphmem.ort.contrib_shapes import RULES as CONTRIB_SHAPES
from graphmem.ort.rules import ALIAS, MAY_INPLACE
from graphmem.shapes.infer import op_schema

__all__ = ["approximations", "has_subgraph"]

_GRAPH_ATTRS = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)


def has_subgraph(node: onnx.NodeProto) -> bool:
    """True for control-flow nodes (If, Loop, Scan, …): an attribute holds a graph."""
    return any(a.type in _GRAPH_ATTRS for a in node.attribute)


def approximations(
    g: OpGraph,
    order: Sequence[int],
    *,
    unresolved: Iterable[str],
    scratch_unmodelled: Iterable[str],
    provider: str,
    planned: frozenset[int] = frozenset(),
    causes: Mapping[str, str] | None = None,
) -> tuple[Approximation, ...]:
    """The approximations of an analysis of ``g`` run in ``order``; ``planned``: control-flow
    nodes whose bodies were planned (:mod:`graphmem.analysis.controlflow`); ``causes``: why a
    tensor has no size, when known (:mod:`graphmem.analysis.causes`)."""
    out: list[Approximation] = []
    label = {nid: g.node(nid).name or f"{g.node(nid).op_type}_{nid}" for nid in order}
    causes = causes or {}
    for name in unresolved:
        nid = g.producer.get(name)
        why = f" ({causes[name]})" if name in causes else ""
        out.append(Approximation(
            kind="unresolved_tensor", node=label.get(nid, "") if nid is not None else "",
            detail=f"tensor '{name}' has no static size{why}: it is not in the figures",
        ))
    known: dict[tuple[str, str], bool] = {}  # (domain, op) -> _known_kernel, looked up once per op
    for nid in order:
        node = g.node(nid)
        op = (node.domain, node.op_type)
        if op not in known and nid not in planned:
            known[op] = _known_kernel(node, g.model.opsets)
        if node.attribute and has_subgraph(node) and nid not in planned:
            out.append(Approximation(
                kind="unplanned_subgraph", node=label[nid],
                detail=f"the buffers of {node.op_type}'s body are not planned: they are not in the figures",
            ))
        elif nid not in planned and not known[op]:
            out.append(Approximation(
                kind="unknown_kernel", node=label[nid],
                detail=f"no rules for {node.domain}:{node.op_type}: planned from the file's shapes, sharing no buffer",
            ))
    if provider == "cpu":
        out += [
            Approximation(
                kind="scratch_not_modelled", node="", detail=f"{op}: kernel scratch counted 0 in in_use_peak_bytes"
            )
            for op in scratch_unmodelled
        ]
    else:
        out.append(Approximation(
            kind="scratch_not_modelled", node="",
            detail="CUDA kernel workspaces (cuDNN, cuBLAS) and the CUDA context are not modelled",
        ))
    return tuple(out)


def _known_kernel(node: onnx.NodeProto, opsets: Mapping[str, int]) -> bool:
    """True when graphmem has rules for the op: an ONNX schema of the default domain (or another
    domain onnx defines), or onnxruntime contrib rules (shapes, sharing or FLOPs)."""
    key = op_key(node)
    if key in CONTRIB_SHAPES or key in ALIAS or key in MAY_INPLACE or key in REGISTRY:
        return True
    domain = "" if is_default_domain(node.domain) else node.domain
    return op_schema(node.op_type, opsets.get(domain, 1), domain) is not None
