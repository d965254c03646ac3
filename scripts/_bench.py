"""Whole-process timing shared by ``bench_peak.py`` and ``bench_scale.py``.

Each command runs as a fresh process; the commands of one comparison run in turn (A B C A B C …)
after one warm-up run each, so that a machine whose speed drifts (other work starting or
stopping) slows every command alike; medians are quoted and ratios are taken pair by pair.
Per run: wall seconds, CPU seconds (user + system, the process's own: waiting for a core does not
count) and the peak resident set size, from ``os.wait4``; each process may use as much stack as
the hard limit allows. Bytecode may be cached
(``PYTHONDONTWRITEBYTECODE`` is removed from the environment), as it is in an installed package.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
PYTHON = sys.executable


@dataclass(frozen=True)
class Run:
    wall: float  # seconds
    cpu: float  # user + system seconds
    rss: int  # bytes, peak resident set


def run_once(argv: Sequence[str], *, timeout: float | None = None) -> Run:
    """One fresh process, measured from its own resource usage (``os.wait4``); raises
    ``RuntimeError`` with its last stderr line when it fails or outlives ``timeout``."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=err, env=ENV, preexec_fn=_large_stack)
        deadline = None if timeout is None else t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG if deadline else 0)
            if pid:
                break
            if time.perf_counter() > deadline:  # type: ignore[operator]
                proc.kill()
                os.wait4(proc.pid, 0)
                proc.returncode = -9
                raise RuntimeError(f"timed out after {timeout} s")
            time.sleep(0.01)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            lines = err.read().decode(errors="replace").strip().splitlines()
            raise RuntimeError(lines[-1] if lines else f"exit {proc.returncode}")
    return Run(wall=wall, cpu=usage.ru_utime + usage.ru_stime, rss=usage.ru_maxrss * 1024)  # Linux: KiB


def _large_stack() -> None:
    """The child's stack limit raised to the hard limit: onnxsim 0.8.1's planner recurses once per
    node and dies of a segmentation fault on a 100k-node chain under the usual 8 MiB (every
    command gets the same limit)."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_STACK)
    resource.setrlimit(resource.RLIMIT_STACK, (hard, hard))


def alternate(commands: Mapping[str, Sequence[str]], repeat: int, *, warmup: int = 1,
              timeout: float | None = None) -> dict[str, list[Run]]:
    """``repeat`` counted runs of each command, in turn, after ``warmup`` runs of each."""
    runs: dict[str, list[Run]] = {label: [] for label in commands}
    for k in range(warmup + repeat):
        for label, argv in commands.items():
            r = run_once(argv, timeout=timeout)
            if k >= warmup:
                runs[label].append(r)
    return runs


def median(runs: Sequence[Run], field: str) -> float:
    return statistics.median(getattr(r, field) for r in runs)


def pair_ratios(a: Sequence[Run], b: Sequence[Run], field: str) -> list[float]:
    """A/B run by run (the i-th runs of both were made one after the other)."""
    return [getattr(x, field) / getattr(y, field) for x, y in zip(a, b)]
