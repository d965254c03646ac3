"""graphmem — static memory and FLOP analysis of ONNX models, checked against onnxruntime.

The public surface is small and listed in ``__all__`` (a test guards it)::

    import graphmem
    result = graphmem.analyze("model.onnx", dims={"batch": 8})
    result.activations.peak_bytes
"""

from graphmem.analysis import Analysis, analyze
from graphmem.errors import GraphmemError

__all__ = ["Analysis", "GraphmemError", "analyze", "__version__"]
__version__ = "0.1.0"
