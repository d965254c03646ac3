"""Stage "analysis": :func:`analyze` wires the stages (model → shapes → onnxruntime emulation →
planners → FLOPs) and owns the :class:`Analysis` type every view reads."""

from graphmem.analysis.pipeline import (
    MAX_DIM,
    ActivationsInfo,
    Analysis,
    IOInfo,
    ModelInfo,
    ShapesInfo,
    WeightsInfo,
    analyze,
    analyze_graph_opt,
    analyze_model,
)

__all__ = [
    "Analysis",
    "ModelInfo",
    "WeightsInfo",
    "ActivationsInfo",
    "IOInfo",
    "ShapesInfo",
    "analyze",
    "analyze_model",
    "analyze_graph_opt",
    "MAX_DIM",
]
