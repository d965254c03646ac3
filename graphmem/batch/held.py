"""Deployment answers on the memory a session holds, not only on what it requests (issue 27).

``fit``, ``sweep`` and the ``--device`` checks compare one of three figures with a memory
(:data:`BY`), named in every output:

* ``resident`` (the default): the process's predicted resident growth, ``session.resident_bytes``
  (:func:`graphmem.analysis.session.session_figures`): weights held, the arena's regions and the
  pages the runs wrote, what loading leaves in the C heap, onnxruntime's own code and objects;
* ``arena``: the CPU arena's held bytes in steady state, ``session.arena_steady_bytes`` (the arena
  alone: weights outside it and the rest of the process are not in it);
* ``requested``: ``total_bytes``, weights + the run's requested activation peak + inputs (what
  graphmem gave before the session block existed).

**Steps, not a line.** The arena grows by regions that double (kNextPowerOfTwo,
``core/framework/bfc_arena.cc``) and never returns one, so the held figures are a step function of
a dim: flat while the requests fit the regions already taken, then up by a whole region.
:func:`held_steps` groups the analysed values by the regions they hold; nothing here fits a
straight line through the steps, and :func:`graphmem.batch.search.search_held` answers by evaluating values (the same
exact
search as ``requested``: ``n`` analysed and fits, ``n + 1`` analysed and does not).

**onnxruntime's default level.** onnxruntime runs ``ORT_ENABLE_ALL`` unless told otherwise;
graphmem's static default is ``--graph-opt none`` because ``all`` needs onnxruntime to optimize the
graph (on this machine: its NCHWc layout depends on the CPU). :data:`LEVEL_NOTE` says so, and
:func:`default_level_figures` gives the ``all`` figures when onnxruntime is installed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphmem.analysis.levels import LEVEL_NOTE, DefaultLevel, default_level_figures, level_note, runtime_installed
from graphmem.errors import UsageError

if TYPE_CHECKING:
    from graphmem.analysis.result import Analysis
    from graphmem.host import HostProfile

__all__ = [
    "BY",
    "BY_FIGURES",
    "BY_LABELS",
    "BY_WORDS",
    "RESIDENT_TOLERANCE",
    "LEVEL_NOTE",
    "HeldPoint",
    "HeldStep",
    "HeldFit",
    "DefaultLevel",
    "check_by",
    "held_point",
    "held_steps",
    "held_cost",
    "session_options_of",
    "check_session_options",
    "default_level_figures",
    "runtime_installed",
    "level_note",
]

#: The figures ``fit --by`` compares with the memory, the default first.
BY = ("resident", "arena", "requested")
#: Where each lives in the peak document.
BY_FIGURES = {"resident": "session.resident_bytes", "arena": "session.arena_steady_bytes", "requested": "total_bytes"}
#: Each in a reader's words (outputs name the figure they used).
BY_LABELS = {
    "resident": "predicted resident memory (session.resident_bytes: the process's growth, "
    "session creation to steady state)",
    "arena": "the CPU arena held in steady state (session.arena_steady_bytes; weights outside it not counted)",
    "requested": "requested bytes (total_bytes: weights + run 1's activation peak + inputs)",
}
#: How close ``resident`` is to what a process shows: within 10% of the measured VmRSS growth
#: (issue 26's bar, ``scripts/held_check.py``; ``scripts/fit_check.py`` measures fit's answers).
RESIDENT_TOLERANCE = 0.10
#: Each figure in one word, for lines that name it.
BY_WORDS = {"resident": "resident", "arena": "arena held", "requested": "total requested"}


def check_by(by: str) -> str:
    """``--by`` checked (case-insensitive). Raises :class:`UsageError` naming the choices."""
    key = by.strip().lower()
    if key not in BY:
        raise UsageError(f"--by {by}: expected one of {', '.join(BY)}")
    return key


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldPoint:
    """The three figures of one analysed binding, and the arena's regions there (bytes each, in
    the order the arena took them): what makes ``resident`` and ``arena`` steps."""

    value: int
    requested_bytes: int
    resident_bytes: int
    arena_bytes: int
    weights_held_bytes: int
    regions: tuple[int, ...]
    exact: bool  # the session figures' (resident never is: it rests on measured constants)
    approximations: tuple[str, ...]  # kinds

    def figure(self, by: str) -> int:
        """The figure ``by`` names (:data:`BY`)."""
        return {"resident": self.resident_bytes, "arena": self.arena_bytes, "requested": self.requested_bytes}[by]


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldStep:
    """Consecutive analysed values ``first..last`` whose arena holds the same bytes: the held
    figures stay on one step there (resident moves only by the pages the runs write)."""

    first: int
    last: int
    regions: tuple[int, ...]
    arena_bytes: int
    resident_low: int
    resident_high: int


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldFit:
    """What a ``fit`` compared: the figure (``by``), the session options, and every analysed
    value's figures (``points``, by value)."""

    by: str
    options: dict[str, object]
    points: dict[int, HeldPoint]

    def at(self, value: int | None) -> HeldPoint | None:
        return None if value is None else self.points.get(value)


def held_point(a: Analysis, value: int, pairs: Sequence[str], host: HostProfile) -> HeldPoint:
    """The three figures of analysis ``a`` under ``--session-option`` ``pairs`` on ``host``."""
    from graphmem.analysis.hold import held_figures

    s = held_figures(a, list(pairs), host)
    regions = tuple(r.size for r in s.arena.regions) if hasattr(s, "arena") else ()
    return HeldPoint(
        value=value, requested_bytes=a.total_bytes, resident_bytes=s.resident_bytes, arena_bytes=s.arena_steady_bytes,
        weights_held_bytes=s.weights_held_bytes, regions=regions, exact=s.exact,
        approximations=tuple(dict.fromkeys(x.kind for x in s.approximations)),
    )


def held_cost(by: str, dim: str | None, pairs: Sequence[str], host: HostProfile,
              points: dict[int, HeldPoint]) -> Callable[[Analysis], int]:
    """The search's cost function: the figure ``by`` of each analysis, every point recorded by the
    value of ``dim`` (0 when None: a bound model's one point)."""

    from graphmem.errors import GraphmemError

    def cost(a: Analysis) -> int:
        value = a.model.dims.get(dim, 0) if dim is not None else 0
        try:
            p = held_point(a, value, pairs, host)
        except GraphmemError as exc:
            if by == "requested":  # the session's figures are beside the answer, not its ground
                points.pop(value, None)
                return a.total_bytes
            if isinstance(exc, UsageError):
                raise UsageError(f"--by {by}: {exc} (--by requested compares the requested total)") from None
            raise
        points[value] = p
        return p.figure(by)

    return cost


def check_session_options(pairs: Sequence[str], graph_opt: str, host: HostProfile) -> None:
    """Refuse a bad ``--session-option`` (a UsageError naming it) before any analysis: a CPU
    session's keys and values at ``graph_opt`` on ``host``."""
    from graphmem.analysis.cuda_held import reject_cuda_keys
    from graphmem.ort.held.options import parse_session_options

    reject_cuda_keys(list(pairs))
    parse_session_options(list(pairs), graph_opt=graph_opt, default_threads=host.ort_intra_op_threads)


def session_options_of(a: Analysis | None, pairs: Sequence[str], host: HostProfile) -> dict[str, object]:
    """The session options every point assumed (onnxruntime's names)."""
    if a is None:
        return {}
    from graphmem.ort.held.options import parse_session_options

    return parse_session_options(list(pairs), graph_opt=a.model.graph_opt,
                                 default_threads=host.ort_intra_op_threads).as_dict()


def held_steps(points: Mapping[int, HeldPoint] | Sequence[HeldPoint]) -> tuple[HeldStep, ...]:
    """Group the points, by value, into runs of consecutive analysed values whose arena holds the
    same bytes (a new step starts where a value's arena takes another region; ``regions``: the
    first value's)."""
    ordered = sorted(points.values() if isinstance(points, Mapping) else points, key=lambda p: p.value)
    steps: list[HeldStep] = []
    for p in ordered:
        last = steps[-1] if steps else None
        if last is not None and last.arena_bytes == p.arena_bytes:
            steps[-1] = dataclasses.replace(last, last=p.value, resident_low=min(last.resident_low, p.resident_bytes),
                                            resident_high=max(last.resident_high, p.resident_bytes))
        else:
            steps.append(HeldStep(first=p.value, last=p.value, regions=p.regions, arena_bytes=p.arena_bytes,
                                  resident_low=p.resident_bytes, resident_high=p.resident_bytes))
    return tuple(steps)
