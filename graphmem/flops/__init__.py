"""FLOP and MAC counting for ONNX graphs — stage "flops" of the pipeline.

Per-op rules are plain functions ``(NodeView) -> Cost`` in one registry keyed by
``(domain, op_type)``; families come from factories (:mod:`.families`). Every node gets one
outcome: counted, explicitly zero, or unsupported (shown with a reason, never counted as 0).
The counting conventions are in :mod:`.conventions` (prose) and :data:`CONVENTIONS` (data).

    import graphmem
    from graphmem.flops import count_flops
    a = graphmem.analyze("model.onnx", dims={"batch": 1})
    report = count_flops(a.graph, a.types, a.order)
    report.flops, report.macs, report.unsupported
"""

from __future__ import annotations

from graphmem.flops.conventions import (
    ACTIVATION_COSTS,
    CONVENTIONS,
    ELEMENT_COSTS,
    Convention,
    conventions_text,
)
from graphmem.flops.cost import Cost, NodeView, Rule, make_view
from graphmem.flops.count import FlopReport, count_flops, node_view
from graphmem.flops.coverage import coverage
from graphmem.flops.registry import REGISTRY, Entry, evaluate, lookup

__all__ = [
    "Cost",
    "NodeView",
    "Rule",
    "FlopReport",
    "count_flops",
    "node_view",
    "make_view",
    "evaluate",
    "lookup",
    "coverage",
    "REGISTRY",
    "Entry",
    "CONVENTIONS",
    "Convention",
    "ELEMENT_COSTS",
    "ACTIVATION_COSTS",
    "conventions_text",
]
