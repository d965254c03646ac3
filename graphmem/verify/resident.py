"""Measure what a CPU session holds: its arena (the profiler's ``mem_arena_held``) through the
session's life, and the resident growth of a fresh process.

* :func:`arena_held` reads a :class:`graphmem.verify.measure.Measurement` of several runs: the
  arena's held bytes before run 1's first node (the first event's value minus its delta), the
  largest over run 1, the largest over the last run;
* :func:`measure_resident` starts ``processes`` fresh Python processes (``_rss_child.py``, run by
  path: it imports numpy and onnxruntime only), each of which loads the inputs, reads ``VmRSS``,
  creates the session, runs it ``runs`` times dropping the outputs, and reads ``VmRSS`` again; the
  growth (the inputs excluded: they were loaded before the first reading) is the median over the
  processes, which differ by how glibc's heap fragments while the model loads.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from graphmem.errors import MeasureError, UsageError
from graphmem.verify.measure import Measurement

if TYPE_CHECKING:
    from graphmem.verify.feeds import Feed

__all__ = ["ArenaHeld", "ResidentMeasurement", "arena_held", "measure_resident", "RUNS", "PROCESSES"]

#: Runs a session makes before its steady state is read (issue 26: after the 5th run).
RUNS = 5
#: Fresh processes whose median is the resident growth.
PROCESSES = 3
_CHILD = Path(__file__).with_name("_rss_child.py")


@dataclass(frozen=True, slots=True, kw_only=True)
class ArenaHeld:
    """The CPU arena's held bytes measured: before run 1, over run 1, after the last run."""

    before_run_bytes: int
    first_run_bytes: int
    steady_bytes: int
    per_run: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ResidentMeasurement:
    """``VmRSS`` growth of fresh processes: per process, at creation and after the last run;
    ``bytes`` is the median of the latter."""

    created: tuple[int, ...]
    grown: tuple[int, ...]

    @property
    def bytes(self) -> int:
        return int(statistics.median(self.grown))


def arena_held(m: Measurement, provider: str | None = None) -> ArenaHeld:
    """The arena figures of ``m`` (at least two runs) for ``provider`` (the session's main one)."""
    name = provider or (m.providers[0] if m.providers else "")
    per_run = []
    for run in m.runs:
        nodes = [n for n in run.nodes if n.provider == name]
        if not nodes:
            raise MeasureError(f"run {run.run} has no {name} node events: no arena to read")
        per_run.append(nodes)
    first = per_run[0][0]
    return ArenaHeld(
        before_run_bytes=first.arena_held - first.arena_held_delta,
        first_run_bytes=max(n.arena_held for n in per_run[0]),
        steady_bytes=max(n.arena_held for n in per_run[-1]),
        per_run=tuple(max(n.arena_held for n in nodes) for nodes in per_run),
    )


def measure_resident(
    path: str | Path,
    feeds: Mapping[str, Feed],
    *,
    graph_opt: str = "none",
    threads: int = 1,
    mem_pattern: bool = True,
    cpu_arena: bool = True,
    config: Mapping[str, str] | None = None,
    arena_cfg: Mapping[str, int] | None = None,
    runs: int = RUNS,
    processes: int = PROCESSES,
) -> ResidentMeasurement:
    """The resident growth of ``processes`` fresh processes creating a session of ``path`` with
    these options and running it ``runs`` times on ``feeds`` (see the module doc)."""
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise UsageError(f"processes must be an int >= 1, got {processes!r}")
    if not all(isinstance(v, np.ndarray) for v in feeds.values()):
        raise MeasureError("resident growth is measured with tensor inputs only")
    created, grown = [], []
    with tempfile.TemporaryDirectory(prefix="graphmem-rss-") as tmp:
        data = Path(tmp) / "feeds.npz"
        arrays = {k: v for k, v in feeds.items() if isinstance(v, np.ndarray)}  # all of them: checked above
        np.savez(data, allow_pickle=True, **arrays)  # allow_pickle: numpy's default (named for the types)
        spec = {
            "path": str(path), "feeds": str(data), "level": graph_opt, "threads": threads, "mem_pattern": mem_pattern,
            "cpu_arena": cpu_arena, "config": dict(config or {}), "arena_cfg": dict(arena_cfg or {}), "runs": runs,
        }
        # the child's temporary files (importing onnxruntime in a new interpreter writes one) go
        # into this private folder, removed with it
        env = {**os.environ, "TMPDIR": tmp}
        for _ in range(processes):
            done = subprocess.run(
                [sys.executable, str(_CHILD), json.dumps(spec)], capture_output=True, text=True, env=env
            )
            if done.returncode != 0:
                tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
                raise MeasureError(f"the fresh process measuring resident memory failed: {tail}")
            rows = json.loads(done.stdout.strip().splitlines()[-1])["vm_rss"]
            created.append(rows[1] - rows[0])
            grown.append(rows[-1] - rows[0])
    return ResidentMeasurement(created=tuple(created), grown=tuple(grown))
