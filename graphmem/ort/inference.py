"""Shape inference as onnxruntime has it: :func:`graphmem.shapes.infer.infer_types` with
onnxruntime's contrib-op rules (:mod:`graphmem.ort.contrib_shapes`) and its execution order for
control-flow bodies (:func:`graphmem.ort.order.ort_order`). The shapes stage knows no runtime;
every caller that wants onnxruntime's view (every analysis) calls this one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import onnx

from graphmem.model.graph import OpGraph
from graphmem.model.loading import Model
from graphmem.model.types import TensorType
from graphmem.ort.contrib_shapes import infer_contrib, nchwc_block_sizes, reorder_input_channels
from graphmem.ort.order import ort_order
from graphmem.shapes.infer import ContribRule, ShapeResult, View
from graphmem.shapes.infer import infer_types as _infer_types

__all__ = ["contrib_rules", "infer_types"]


def contrib_rules(model: Model) -> ContribRule:
    """onnxruntime's contrib-op shape rules for ``model``: ReorderInput's block size and padded
    channels are read from the NCHWc filters of a graph onnxruntime saved at level all."""
    weight_dims = {name: w.dims for name, w in model.weights.items()}
    blocks = nchwc_block_sizes(model.nodes, weight_dims)
    padded = reorder_input_channels(model.nodes, weight_dims)

    def rule(
        node: onnx.NodeProto, types: Mapping[str, TensorType], values: Mapping[str, np.ndarray]
    ) -> dict[str, TensorType] | None:
        return infer_contrib(node, types, values, block_sizes=blocks, padded_channels=padded)

    return rule


def infer_types(
    g: OpGraph,
    order: tuple[int, ...],
    *,
    view: View,
    dims: Mapping[str, int] | None = None,
    shapes: Mapping[str, Sequence[Any] | None] | None = None,  # as graphmem.shapes.infer.infer_types
    input_values: Mapping[str, np.ndarray] | None = None,
    body_order: Callable[[OpGraph], tuple[int, ...]] = ort_order,
) -> ShapeResult:
    """:func:`graphmem.shapes.infer.infer_types` with onnxruntime's contrib rules; bodies run in
    ``body_order`` (onnxruntime's order unless told)."""
    return _infer_types(
        g, order, view=view, dims=dims, shapes=shapes, input_values=input_values, body_order=body_order,
        contrib=contrib_rules,
    )
