"""Stage "analysis": :func:`analyze` wires the stages (model → shapes → onnxruntime emulation →
planners → FLOPs) and owns the :class:`Analysis` type every view reads.

* :mod:`.pipeline` — :func:`analyze`, :func:`analyze_model`, :func:`analyze_graph_opt`;
* :mod:`.result` — :class:`Analysis` and its parts;
* :mod:`.dims` — parsing and checking dim bindings;
* :mod:`.whatif` — ``--as-dtype``;
* :mod:`.scratch` — the kernel-scratch profile of an analysis.
"""

from graphmem.analysis.dims import MAX_DIM
from graphmem.analysis.pipeline import analyze, analyze_graph_opt, analyze_model
from graphmem.analysis.result import (
    ActivationsInfo,
    Analysis,
    IOInfo,
    ModelInfo,
    ShapesInfo,
    WeightsInfo,
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
