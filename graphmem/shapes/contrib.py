"""Shape rules for ops that onnx has no schema for: onnxruntime's contrib ops.

onnxruntime's optimizers (``--graph-opt basic|extended|all``) rewrite graphs into ops of the
``com.microsoft`` and ``com.microsoft.nchwc`` domains. onnxruntime knows their shapes from its
own schemas (``onnxruntime/core/graph/contrib_ops/*.cc``); these rules reproduce them.

A rule takes the node, its input types (None for an omitted input) and the known small values,
and returns the output types (or None when it cannot tell).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import onnx

from graphmem.shapes.types import TensorType

__all__ = ["RULES", "infer_contrib"]

Rule = Callable[
    [onnx.NodeProto, Sequence[TensorType | None], Mapping[str, np.ndarray]],
    "list[TensorType | None] | None",
]

#: (domain, op_type) -> rule
RULES: dict[tuple[str, str], Rule] = {}


def infer_contrib(
    node: onnx.NodeProto, types: Mapping[str, TensorType], values: Mapping[str, np.ndarray]
) -> dict[str, TensorType] | None:
    """Output types of a contrib op by its rule; None when there is no rule or it cannot tell."""
    rule = RULES.get((node.domain, node.op_type))
    if rule is None:
        return None
    ins = [types.get(x) if x else None for x in node.input]
    outs = rule(node, ins, values)
    if outs is None:
        return None
    return {name: t for name, t in zip(node.output, outs) if name and t is not None}
