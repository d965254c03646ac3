"""Empirical verification: measure what onnxruntime really allocates.

Public API re-exported from the submodules; onnxruntime itself is imported
only when a function needs it.
"""

from __future__ import annotations

from graphmem.verify.feeds import make_feeds
from graphmem.verify.measure import (
    AllocatorRun,
    Measurement,
    NodeMemory,
    OutputInfo,
    RunMemory,
    measure,
)
from graphmem.verify.providers import (
    ProviderChoice,
    choose_provider,
    provider_options,
    session_options,
)

__all__ = [
    "AllocatorRun",
    "Measurement",
    "NodeMemory",
    "OutputInfo",
    "ProviderChoice",
    "RunMemory",
    "choose_provider",
    "make_feeds",
    "measure",
    "provider_options",
    "session_options",
]
