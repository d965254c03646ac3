"""onnxruntime's default graph level against graphmem's static default.

onnxruntime runs ``ORT_ENABLE_ALL`` unless the session is told otherwise; graphmem's static
default is ``--graph-opt none`` because ``all`` needs onnxruntime to optimize the graph (on the
machine that runs it: its NCHWc layout depends on the CPU). Every place a user reads a total says
so (:data:`LEVEL_NOTE`: the peak table's header, the report's banner, ``fit`` and ``sweep``), and
offers the figures at ``all`` when onnxruntime is installed (:func:`default_level_figures`).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from graphmem.analysis.request import Bindings
    from graphmem.host import HostProfile

__all__ = [
    "LEVEL_NOTE",
    "DefaultLevel",
    "default_level_figures",
    "level_note",
    "runtime_installed",
    "default_level_line",
]

#: The note every total carries at graphmem's static default level.
LEVEL_NOTE = ("graphmem's static default; onnxruntime runs ORT_ENABLE_ALL unless told otherwise "
              "(--graph-opt all analyses that graph)")


def runtime_installed() -> bool:
    """Whether onnxruntime can be imported here (without importing it: start-up stays fast)."""
    return importlib.util.find_spec("onnxruntime") is not None


def level_note(graph_opt: str) -> str | None:
    """:data:`LEVEL_NOTE` at ``none``; None at a level the user chose above it."""
    return LEVEL_NOTE if graph_opt == "none" else None


@dataclass(frozen=True, slots=True, kw_only=True)
class DefaultLevel:
    """The figures at onnxruntime's default level (``all``) for one binding, beside the static
    ``none`` ones; ``error``: why they could not be had (onnxruntime refused the graph)."""

    requested_bytes: int | None
    resident_bytes: int | None
    arena_bytes: int | None
    error: str | None = None


def default_level_figures(path: str | os.PathLike[str], *, bindings: Bindings | None = None,
                          as_dtype: str | None = None, session_options: Sequence[str] = (),
                          host: HostProfile | None = None) -> DefaultLevel | None:
    """The requested, resident and arena figures at ``--graph-opt all`` (onnxruntime's default
    level) on this machine, or None when onnxruntime is not installed (``all`` needs it to optimize
    the graph). An optimization onnxruntime refuses is returned as ``error``, never raised: it is an
    offer beside the figures asked for. So is a host profile (``host`` given, or ``$GRAPHMEM_HOST``):
    the graph at ``all`` is the one onnxruntime *here* writes (its NCHWc layout follows this CPU),
    which need not be the profile's, so nothing is offered for it."""
    if not runtime_installed():
        return None
    from graphmem.host import HOST_ENV

    if host is not None or os.environ.get(HOST_ENV):
        return DefaultLevel(requested_bytes=None, resident_bytes=None, arena_bytes=None, error=(
            "not offered for a host profile (--host or $GRAPHMEM_HOST): onnxruntime on this machine would write the "
            "graph; run --graph-opt all on that host"))
    from graphmem.analysis.graph_opt import analyze_graph_opt
    from graphmem.analysis.request import AnalysisRequest, Bindings
    from graphmem.errors import GraphmemError
    from graphmem.host import resolve_host

    request = AnalysisRequest(bindings=bindings or Bindings(), as_dtype=as_dtype, host=resolve_host(None),
                              session_options=tuple(session_options))
    try:
        a = analyze_graph_opt(path, "all", request)
    except GraphmemError as exc:
        return DefaultLevel(requested_bytes=None, resident_bytes=None, arena_bytes=None, error=str(exc))
    held = a.session
    return DefaultLevel(requested_bytes=a.total_bytes, resident_bytes=held.resident_bytes,
                        arena_bytes=held.arena_steady_bytes)


def default_level_line(d: DefaultLevel | None, *, where: str = "") -> str | None:
    """One line offering the figures at ``all`` (None when there are none to offer)."""
    if d is None:
        return None
    from graphmem.units import format_bytes

    if d.error is not None:
        return f"at onnxruntime's default level (--graph-opt all){where}: {d.error}"
    return (
        f"at onnxruntime's default level (--graph-opt all, this machine's onnxruntime){where}: total requested "
        f"{format_bytes(d.requested_bytes)}, resident {format_bytes(d.resident_bytes)}, arena "
        f"{format_bytes(d.arena_bytes)}"
    )
