"""Where one ``graphmem peak`` spends its CPU time: seconds per stage of the analysis.

    python scripts/bench_stages.py MODEL [graphmem peak options, e.g. --dim batch=1]

Runs ``graphmem peak MODEL --json`` twice in this process (:func:`graphmem.cli.main`): the first
run loads the modules, the second is timed, each stage of :mod:`graphmem.analysis.pipeline` (and
the file's parsing and checking, ``load_model``) wrapped by a CPU-time counter. Prints each
stage's CPU seconds and microseconds per node of the file, largest first, and the run's total:
what ``scripts/bench_scale.py``'s per-node figure is made of.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import io
import sys
import time
from collections.abc import Callable
from typing import Any

import onnx

STAGES = ("load", "expand_functions", "types_and_shapes", "expand_for_kernels", "cpu_kernels", "session_graph",
          "program", "plan_memory", "replay_control_flow", "plan_headline", "replay_headline", "count_flops",
          "assemble")


def timed(spent: collections.Counter[str], label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] += time.process_time() - start

    return wrapper


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    import graphmem.analysis.graph_opt as graph_opt
    import graphmem.analysis.pipeline as pipeline
    from graphmem.cli import main as cli

    spent: collections.Counter[str] = collections.Counter()
    for name in STAGES:
        if hasattr(pipeline, name):
            setattr(pipeline, name, timed(spent, name, getattr(pipeline, name)))
    graph_opt.load_model = timed(spent, "load_model (parse, check)", graph_opt.load_model)
    argv = ["peak", sys.argv[1], "--json", *sys.argv[2:]]
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli(argv)  # the modules a run needs, loaded
    if code:
        return code
    spent.clear()
    start = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        cli(argv)
    total = time.process_time() - start
    nodes = len(onnx.load(sys.argv[1], load_external_data=False).graph.node)
    print(f"graphmem peak {' '.join(sys.argv[1:])}: {nodes:,} nodes, CPU time after the imports")
    print(f"  {'stage':28}{'cpu s':>8}{'us/node':>9}")
    for label, seconds in spent.most_common():
        print(f"  {label:28}{seconds:8.2f}{seconds / nodes * 1e6:9.1f}")
    print(f"  {'total':28}{total:8.2f}{total / nodes * 1e6:9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
