"""graphmem — static memory and FLOP analysis of ONNX models, checked against onnxruntime.

The public surface is small and listed in ``__all__`` (a test guards it)::

    import graphmem
    result = graphmem.analyze("model.onnx", dims={"batch": 8})
    result.activations.peak_bytes

``analyze`` and ``Analysis`` are loaded on first use (PEP 562): ``import graphmem`` and the
command line's start-up do not pay for the analysis stages a command may not run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphmem.errors import GraphmemError

if TYPE_CHECKING:
    from graphmem.analysis import Analysis, analyze

__all__ = ["Analysis", "GraphmemError", "analyze", "__version__"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in ("Analysis", "analyze"):
        from graphmem import analysis

        return getattr(analysis, name)
    raise AttributeError(f"module 'graphmem' has no attribute '{name}'")
