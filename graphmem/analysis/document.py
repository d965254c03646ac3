"""The ``graphmem peak --json`` document of an :class:`Analysis`: the data every consumer reads
(the views render it, the gates check budgets and diffs on it, ``graphmem check`` reports it).

JSON: ``schema_version`` 1, every byte figure an exact integer. Keys are added by later
features, never renamed (``graphmem/schema/peak.schema.json``).
"""

from __future__ import annotations

from typing import Any

from graphmem.analysis.dims import shape_json
from graphmem.analysis.result import Analysis
from graphmem.ort.session import PlacementInfo

__all__ = ["SCHEMA_VERSION", "model_json", "peak_json"]

SCHEMA_VERSION = 1


def model_json(a: Analysis) -> dict[str, Any]:
    """The ``model`` object every document shares: file, opset, nodes, dims, graph-opt level."""
    return {
        "path": a.model.path,
        "opset": a.model.opset,
        "nodes": a.model.nodes,
        "dims": dict(a.model.dims),
        "graph_opt": a.model.graph_opt,
        "shapes": {k: shape_json(s) for k, s in a.model.shapes.items()},
        "values": {k: list(x) for k, x in a.model.values.items()},
    }


def peak_json(a: Analysis) -> dict[str, Any]:
    """The ``graphmem peak --json`` document."""
    return {
        "schema_version": SCHEMA_VERSION,
        "model": model_json(a),
        "weights": {
            "params": a.weights.params,
            "bytes": a.weights.bytes,
            "external_bytes": a.weights.external_bytes,
            "by_dtype": {
                k: {"params": p, "bytes": b} for k, (p, b) in sorted(a.weights.by_dtype.items())
            },
            "unknown": list(a.weights.unknown),
        },
        "activations": {
            "peak_bytes": a.activations.peak_bytes,
            "peak_node": a.activations.peak_node,
            "lower_bound_bytes": a.activations.lower_bound_bytes,
            "no_reuse_bytes": a.activations.no_reuse_bytes,
            "best_arena_bytes": a.activations.best_arena_bytes,
            "scratch_bytes": a.activations.scratch_bytes,
            "in_use_peak_bytes": a.activations.in_use_peak_bytes,
            "scratch_unmodelled": list(a.activations.scratch_unmodelled),
            "runtime": a.activations.runtime,
            "provider": a.activations.provider,
            "unknown": list(a.activations.unknown),
            "exact": a.activations.exact,
            "approximations": [
                {"kind": x.kind, "node": x.node, "detail": x.detail} for x in a.activations.approximations
            ],
        },
        "placement": _placement_json(a.placement),
        "io": {"inputs_bytes": a.io.inputs_bytes, "outputs_bytes": a.io.outputs_bytes},
        "total_bytes": a.total_bytes,
        "shapes": {
            "tensors": a.shapes.tensors, "unresolved": list(a.shapes.unresolved),
            "causes": [c.to_json() for c in a.shapes.causes],
        },
        "flops": {
            "total": a.flops.flops,
            "macs": a.flops.macs,
            "int_ops": a.flops.int_ops,
            "by_op_type": dict(sorted(a.flops.by_op_type.items(), key=lambda kv: -kv[1])),
            "unsupported": dict(sorted(a.flops.unsupported.items())),
            "zero": list(a.flops.zero),
        },
        "host": a.host.to_dict(),
    }


def _placement_json(p: PlacementInfo | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "cuda_nodes": p.cuda_nodes,
        "cpu_nodes": p.cpu_nodes,
        "memcpy_nodes": p.memcpy_nodes,
        "cpu_preferred": p.cpu_preferred,
        "fp32_nodes": p.fp32_nodes,
        "cast_nodes": p.cast_nodes,
        "no_cuda_kernel": dict(p.no_cuda_kernel),
        "inputs_on_device_bytes": p.inputs_on_device_bytes,
        "cpu_peak_bytes": p.cpu_peak_bytes,
        "pinned_peak_bytes": p.pinned_peak_bytes,
    }
