"""Stage "analysis": :func:`analyze` wires the stages (model → shapes → onnxruntime emulation →
planners → FLOPs) and owns the :class:`Analysis` type every view reads.

* :mod:`.pipeline` — :func:`analyze`, :func:`analyze_model`: the wiring, one screen;
* :mod:`.stages` — load, expand functions, types and shapes, CPU kernels, the session's graph;
* :mod:`.plans` — program, onnxruntime's plan and the planner's bounds, control-flow replay, FLOPs;
* :mod:`.assemble` — the stages' results as an :class:`Analysis`;
* :mod:`.graph_opt` — :func:`analyze_graph_opt`, the graph onnxruntime optimizes;
* :mod:`.request` — :class:`Bindings` and :class:`AnalysisRequest`, what one analysis is asked;
* :mod:`.result` — :class:`Analysis` and its parts;
* :mod:`.dims` — parsing and checking dim bindings;
* :mod:`.whatif` — ``--as-dtype``;
* :mod:`.scratch` — the kernel-scratch profile of an analysis.

The names below are loaded from their modules on first use (PEP 562), so that importing one
light module of the package (``.dims`` for the command line's parsing) does not load them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphmem.analysis.dims import MAX_DIM
    from graphmem.analysis.graph_opt import analyze_graph_opt
    from graphmem.analysis.pipeline import analyze, analyze_model
    from graphmem.analysis.request import AnalysisRequest, Bindings
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
    "AnalysisRequest",
    "Bindings",
    "MAX_DIM",
]

_HOME = {
    "MAX_DIM": "dims",
    **{name: "pipeline" for name in ("analyze", "analyze_model")},
    "analyze_graph_opt": "graph_opt",
    **{name: "request" for name in ("AnalysisRequest", "Bindings")},
    **{name: "result" for name in ("ActivationsInfo", "Analysis", "IOInfo", "ModelInfo", "ShapesInfo", "WeightsInfo")},
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"graphmem.analysis.{_HOME[name]}"), name)
    raise AttributeError(f"module 'graphmem.analysis' has no attribute '{name}'")
