"""Measure what ``graphmem advise`` predicts: the current options and every setting it lists, each
in fresh onnxruntime sessions (:class:`graphmem.batch.advise.Advice`).

For each option set (the current one first, then the advice's lines in rank order):

* the arena: one fresh process (``_rss_child.py`` given a ``profile_dir``, run by path: it imports only numpy and
  onnxruntime before its session runs) creates a profiled session under those options, runs it
  :data:`graphmem.verify.resident.RUNS` times, and the profiler's ``mem_arena_held`` gives the
  held bytes before run 1, over run 1 and over the last run (:func:`graphmem.verify.resident.arena_held`'s
  reading); none without an arena (no statistics);
* the resident growth: the median of ``processes`` fresh processes
  (:func:`graphmem.verify.resident.measure_resident`), ``graphmem verify``'s measurement.

Each figure is compared with its prediction at issue 26's tolerances (:data:`ARENA_TOLERANCE`,
:data:`graphmem.verify.compare.RESIDENT_TOLERANCE`), and each saving (current minus the setting's)
measured against predicted: it holds when the two differ by at most the figure's tolerance of
the current options' measured figure.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from graphmem.errors import MeasureError
from graphmem.verify.compare import RESIDENT_TOLERANCE
from graphmem.verify.measure import split_runs
from graphmem.verify.resident import RUNS, ArenaHeld, measure_resident

if TYPE_CHECKING:
    from graphmem.verify.feeds import Feed

__all__ = ["ARENA_TOLERANCE", "OptionsMeasurement", "check_advice", "measure_arena", "FIGURES"]

#: The arena's figures against the profiler (issue 26: 0.5%).
ARENA_TOLERANCE = 0.005
#: The figures measured, with their tolerance.
FIGURES = {
    "arena_before_run_bytes": ARENA_TOLERANCE,
    "arena_first_run_bytes": ARENA_TOLERANCE,
    "arena_steady_bytes": ARENA_TOLERANCE,
    "resident_bytes": RESIDENT_TOLERANCE,
}
_CHILD = Path(__file__).with_name("_rss_child.py")  # with profile_dir: the arena, profiled


@dataclass(frozen=True, slots=True, kw_only=True)
class OptionsMeasurement:
    """One option set predicted against measured: ``change`` ("current" or the line's
    ``KEY=VALUE``), ``predicted``/``measured`` per figure of :data:`FIGURES` (measured None: not
    measurable, e.g. the arena without one), ``within`` each figure's tolerance (None when not
    measured), and the savings against the current options (None for the current row, or when
    either side is not measured): ``saving_predicted``/``saving_measured``/``saving_holds``."""

    change: str
    graph_opt: str
    pairs: tuple[str, ...]
    command: str
    predicted: dict[str, int]
    measured: dict[str, int | None]
    within: dict[str, bool | None]
    exact: dict[str, bool]
    saving_predicted: dict[str, int | None]
    saving_measured: dict[str, int | None]
    saving_holds: dict[str, bool | None]
    resident_processes: tuple[int, ...] = ()
    note: str = ""
    # why the resident figure may be off beyond the measured constants and the heap's two cases
    # (the session block's approximation kinds, e.g. arena_disabled); empty: only those
    resident_caveats: tuple[str, ...] = ()


def measure_arena(path: str | Path, feeds_file: Path, spec: dict[str, Any], workdir: Path) -> ArenaHeld:
    """The arena's held bytes of one fresh profiled session (see the module doc); ``spec`` is
    ``_rss_child.py``'s."""
    profile_dir = workdir / "profile"
    profile_dir.mkdir(exist_ok=True)
    child = {**spec, "path": str(path), "feeds": str(feeds_file), "profile_dir": str(profile_dir)}
    done = subprocess.run([sys.executable, str(_CHILD), json.dumps(child)], capture_output=True, text=True,
                          env=_env(workdir))
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise MeasureError(f"the fresh process measuring the arena failed: {tail}")
    events = json.loads(done.stdout.strip().splitlines()[-1])["events"]
    per_run = [[n for n in nodes if n.provider == "CPUExecutionProvider"] for nodes in split_runs(events, spec["runs"])]
    if not all(per_run):
        raise MeasureError("a run has no CPU node events: no arena to read")
    first = per_run[0][0]
    return ArenaHeld(
        before_run_bytes=first.arena_held - first.arena_held_delta,
        first_run_bytes=max(n.arena_held for n in per_run[0]),
        steady_bytes=max(n.arena_held for n in per_run[-1]),
        per_run=tuple(max(n.arena_held for n in nodes) for nodes in per_run),
    )


def _env(workdir: Path) -> dict[str, str]:
    import os

    return {**os.environ, "TMPDIR": str(workdir)}


def check_advice(advice: Any, *, processes: int = 3, seed: int = 0) -> tuple[OptionsMeasurement, ...]:
    """Measure the current options and every line of ``advice`` (see the module doc)."""
    import onnx

    from graphmem.verify.feeds import make_feeds

    m = advice.model
    feeds = make_feeds(onnx.load(advice.path, load_external_data=False), m.dims, seed=seed, shapes=m.shapes,
                       values=m.values)
    rows = [("current", advice.graph_opt, advice.pairs, advice.current_command, advice.current)]
    rows += [(x.change, x.graph_opt, x.pairs, x.command, x.figures) for x in advice.lines]
    out: list[OptionsMeasurement] = []
    with tempfile.TemporaryDirectory(prefix="graphmem-advice-") as tmp:
        work = Path(tmp)
        data = work / "feeds.npz"
        stored: dict[str, Any] = dict(feeds)  # a sequence's list or an optional's None too (savez pickles them)
        np.savez(data, **stored)
        base: OptionsMeasurement | None = None
        for change, level, pairs, command, figures in rows:
            row = _measure_row(advice.path, data, feeds, change, level, pairs, command, figures, work, processes, base)
            base = base or row
            out.append(row)
    return tuple(out)


def _measure_row(
    path: str, data: Path, feeds: Mapping[str, Feed], change: str, level: str, pairs: Sequence[str], command: str,
    figures: Any, work: Path, processes: int, base: OptionsMeasurement | None,
) -> OptionsMeasurement:
    o = figures.options
    spec = {"level": level, "threads": o.intra_op_num_threads, "mem_pattern": o.enable_mem_pattern,
            "cpu_arena": o.enable_cpu_mem_arena, "config": o.session_config(), "arena_cfg": o.arena_cfg(), "runs": RUNS}
    measured: dict[str, int | None] = dict.fromkeys(FIGURES)
    notes = []
    if o.enable_cpu_mem_arena:
        held = measure_arena(path, data, spec, work)
        measured.update(arena_before_run_bytes=held.before_run_bytes, arena_first_run_bytes=held.first_run_bytes,
                        arena_steady_bytes=held.steady_bytes)
    else:
        notes.append("no arena: its figures are not measurable")
    grown: tuple[int, ...] = ()
    if processes > 0:
        r = measure_resident(
            path,
            feeds,
            graph_opt=level,
            threads=o.intra_op_num_threads,
            mem_pattern=o.enable_mem_pattern,
            cpu_arena=o.enable_cpu_mem_arena,
            config=o.session_config(),
            arena_cfg=o.arena_cfg(),
            processes=processes,
        )
        measured["resident_bytes"] = r.bytes
        grown = r.grown
    predicted = {name: getattr(figures, name) for name in FIGURES}
    within = {name: _within(predicted[name], measured[name], tol) for name, tol in FIGURES.items()}
    saving_p: dict[str, int | None] = dict.fromkeys(FIGURES)
    saving_m: dict[str, int | None] = dict.fromkeys(FIGURES)
    holds: dict[str, bool | None] = dict.fromkeys(FIGURES)
    if base is not None:
        for name, tol in FIGURES.items():
            got, was = measured[name], base.measured[name]
            if got is None or was is None:
                continue
            sp, sm = base.predicted[name] - predicted[name], was - got
            saving_p[name], saving_m[name] = sp, sm
            holds[name] = abs(sp - sm) <= tol * max(was, 1)
    return OptionsMeasurement(
        change=change, graph_opt=level, pairs=tuple(pairs), command=command, predicted=predicted, measured=measured,
        within=within, exact={name: figures.exact_figure(name) for name in FIGURES}, saving_predicted=saving_p,
        saving_measured=saving_m, saving_holds=holds, resident_processes=grown, note="; ".join(notes),
        resident_caveats=tuple(sorted({a.kind for a in figures.approximations if "resident_bytes" in a.figures
                                       and a.kind not in ("measured_constant", "heap_fragmentation")})),
    )


def _within(want: int, got: int | None, tol: float) -> bool | None:
    if got is None:
        return None
    return want == got or (got > 0 and abs(want / got - 1) <= tol)
