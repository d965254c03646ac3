"""Stage "analysis": :func:`analyze` wires the stages (model → shapes → onnxruntime emulation →
planners → FLOPs) and owns the :class:`Analysis` type every view reads.

* :mod:`.pipeline` — :func:`analyze`, :func:`analyze_model`, :func:`analyze_graph_opt`;
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

_HOME = {
    "MAX_DIM": "dims",
    **{name: "pipeline" for name in ("analyze", "analyze_graph_opt", "analyze_model")},
    **{name: "result" for name in ("ActivationsInfo", "Analysis", "IOInfo", "ModelInfo", "ShapesInfo", "WeightsInfo")},
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"graphmem.analysis.{_HOME[name]}"), name)
    raise AttributeError(f"module 'graphmem.analysis' has no attribute '{name}'")
