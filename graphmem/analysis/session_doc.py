"""The ``session`` block of the peak document, below the gates that read it: the figures for an
analysis under ``--session-option`` pairs (:func:`figures_for`: CPU or CUDA) and their JSON
(:func:`session_json`). :mod:`graphmem.views.session` draws the table's section from the same
figures; ``check`` and ``diff`` put the block in the documents they gate (``--max-resident``,
``--max-arena``, ``--max-increase-resident``, ``--max-increase-arena``).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from graphmem.analysis.session import SESSION_FIGURES

__all__ = ["figures_for", "session_json"]


def figures_for(analysis: Any, pairs: list[str] | None, *, default_threads: int, page_size: int = 4096) -> Any:
    """The session block's figures for ``analysis`` under ``--session-option`` ``pairs``
    (onnxruntime's defaults for the rest; ``default_threads``: what ``intra_op_num_threads=0``
    means on the user's machine, its physical cores; ``page_size``: its page size). CPU analyses:
    :func:`graphmem.analysis.session.session_figures`; CUDA:
    :func:`graphmem.ort.cuda.held.cuda_session_figures`. Raises :class:`graphmem.errors.UsageError`
    naming a bad option."""
    from graphmem.ort.cuda.held import cuda_session_figures, parse_cuda_options, reject_cuda_keys

    if analysis.activations.provider == "cuda":
        return cuda_session_figures(analysis, parse_cuda_options(pairs or []))
    from graphmem.analysis.session import session_figures
    from graphmem.ort.held.options import parse_session_options

    reject_cuda_keys(pairs or [])
    options = parse_session_options(pairs or [], graph_opt=analysis.model.graph_opt, default_threads=default_threads)
    return session_figures(analysis, options, page_size=page_size)


def session_json(s: Any) -> dict[str, Any]:
    """The ``session`` block: options assumed, the five figures, exactness and why not."""
    out: dict[str, Any] = {
        "provider": s.provider,
        "options": s.options.as_dict(),
        **{name: getattr(s, name) for name in SESSION_FIGURES},
        "exact": s.exact,
        "approximations": [
            {"kind": a.kind, "figures": list(a.figures), "node": a.node, "detail": a.detail} for a in s.approximations
        ],
        "resident_parts": asdict(s.parts),
        "steady_after_run": s.steady_after_run,
    }
    if s.device is not None:
        out["device"] = asdict(s.device)
    return out
