"""The session stage: what the session the analysis emulates holds from the machine (issue 26),
run on the assembled analysis of the graph that session runs and recorded by
:func:`graphmem.analysis.assemble.record_session`.

It runs once per asked analysis (:func:`graphmem.analysis.pipeline.analyze`,
:func:`graphmem.analysis.graph_opt.analyze_graph_opt`), not in the inner analyses (one per
execution order, the graph as onnxruntime writes it, a sweep's points): its replay reads the plan,
the graph, the weights and the file the assembly gathered, and loading the file again costs a
second read. A request without ``session_options`` (None) asks for no session block.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphmem.analysis.request import AnalysisRequest
from graphmem.analysis.result import Analysis
from graphmem.host import HostProfile

__all__ = ["held", "held_figures"]


def held(analysis: Analysis, request: AnalysisRequest) -> Any:
    """The session figures the request asks for (None when ``request.session_options`` is None):
    a CPU analysis's :class:`graphmem.analysis.session.SessionFigures`, a CUDA analysis's
    :class:`graphmem.analysis.cuda_held.CudaSessionFigures`."""
    if request.session_options is None:
        return None
    return held_figures(analysis, request.session_options, request.host)


def held_figures(
    analysis: Analysis, pairs: Sequence[str], host: HostProfile, *, threads: int | None = None
) -> Any:
    """The session figures of ``analysis`` under ``--session-option`` ``pairs`` (onnxruntime's
    defaults for the rest) on ``host``: ``intra_op_num_threads=0`` is its physical cores, pages
    are its page size. ``threads``: the intra-op threads when ``pairs`` do not set them (None:
    onnxruntime's default, 0; ``graphmem verify`` measures with one).

    Raises :class:`graphmem.errors.UsageError` naming a bad or unemulated option (a CUDA option for
    a CPU session too) and :class:`graphmem.errors.ArenaLimitError` when ``max_mem`` is too small."""
    from graphmem.analysis.cuda_held import cuda_session_figures, parse_cuda_options, reject_cuda_keys

    if analysis.activations.provider == "cuda":
        return cuda_session_figures(analysis, parse_cuda_options(list(pairs)))
    from graphmem.analysis.session import session_figures
    from graphmem.ort.held.options import SessionOptions, parse_session_options

    reject_cuda_keys(list(pairs))
    base = SessionOptions(intra_op_num_threads=threads) if threads is not None else None
    options = parse_session_options(
        list(pairs), graph_opt=analysis.model.graph_opt, default_threads=host.ort_intra_op_threads, base=base
    )
    return session_figures(analysis, options, page_size=host.page_size)
