"""Start-up: a fresh ``graphmem peak`` on a small model costs a small multiple of a fresh
``python -c "import numpy"`` in the same environment (issue 24: within 4x). Both are measured as
whole processes, alternately, in this test run, and compared by their best (lowest) CPU time: a
busy machine slows both alike and waiting for a core does not count (``scripts/bench_peak.py
--startup`` prints the wall times too).

What it guards: ml_dtypes 0.7.0, which every ``import onnx`` imports, takes 0.5 s on a 2-core
machine (37,744 ufunc promoters, each checked against every earlier one by numpy) against 0.01 s
for 0.6.0 — pyproject.toml excludes it; and graphmem's own imports, which load the modules of
other commands (and control flow's) only when those run, and no pydantic (typer's converters of
plain options, :mod:`graphmem.cli.coercion`).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest
from builders import MODELS, ROOT

import ml_dtypes

# The figures hold for an environment installed from pyproject.toml (CI: pip install -e '.[test]').
# An environment that kept ml_dtypes 0.7 (a shared development env whose versions are pinned by
# hand) cannot pass them; that is what the constraint is for.
_ML_DTYPES = tuple(int(p) for p in ml_dtypes.__version__.split(".")[:2])
installed_per_pyproject = pytest.mark.skipif(
    _ML_DTYPES >= (0, 7),
    reason=f"ml_dtypes {ml_dtypes.__version__} installed; pyproject.toml asks <0.7 (pip install -e '.[test]')",
)

PROBE = """
import json, sys, time
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
{body}
t2 = time.perf_counter()
print(json.dumps([t1 - t0, t2 - t1]))
"""


def _best_ratio(body: str, repeat: int = 3) -> tuple[float, float, float]:
    """Lowest (rest / numpy import) over ``repeat`` fresh interpreters, with its two times."""
    best = (float("inf"), 0.0, 0.0)
    for _ in range(repeat + 1):  # the first run warms the bytecode and file caches
        done = subprocess.run([sys.executable, "-c", PROBE.format(body=body)], capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        numpy, rest = json.loads(done.stdout.strip().splitlines()[-1])
        best = min(best, (rest / numpy, numpy, rest))
    return best


@installed_per_pyproject
def test_ml_dtypes_imports_no_slower_than_numpy() -> None:
    # measured on a 2-core machine at load 10: ratio 0.05 with ml_dtypes 0.6.0, 6.1 with 0.7.0
    ratio, numpy, rest = _best_ratio("import ml_dtypes")
    assert ratio < 1.5, f"import ml_dtypes {rest:.3f} s after import numpy {numpy:.3f} s (ml_dtypes>=0.7 is excluded in pyproject.toml)"


#: Bytecode may be cached, as in any installed package (a checkout without it recompiles graphmem's
#: modules on every start).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
NUMPY = [sys.executable, "-c", "import numpy"]
PEAK = [sys.executable, "-m", "graphmem", "peak", str(MODELS / "tiny_cnn.onnx"), "--dim", "batch=1"]


def _cpu_seconds(argv: list[str]) -> float:
    """User + system CPU time of one fresh process running ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=ENV)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def startup_ratio(repeat: int = 7) -> tuple[float, float, float]:
    """(best peak / best numpy, best peak, best numpy) over ``repeat`` alternating pairs of fresh
    processes, after one warm-up run of each (bytecode and file caches)."""
    _cpu_seconds(PEAK), _cpu_seconds(NUMPY)
    peak = numpy = float("inf")
    for _ in range(repeat):
        peak = min(peak, _cpu_seconds(PEAK))
        numpy = min(numpy, _cpu_seconds(NUMPY))
    return peak / numpy, peak, numpy


#: The bar of issue 24 is 4x (``scripts/bench_peak.py --startup`` prints the ratio); the test
#: allows 4.5x: on the shared 2-core machine the best-of-7 ratio moves by about 0.3 from run to
#: run under load (3.7-4.0 measured with the collector off from process start, 4.1-4.2 before),
#: and a test that fails when nothing changed is no guard. What it still catches: ml_dtypes 0.7
#: (+2.5x), the pre-lazy-import start-up (5.1x), onnxruntime or pydantic imported on the way
#: (+2x, +0.4x), the collector left on (+0.3x) together with anything else.
STARTUP_BOUND = 4.5


@installed_per_pyproject
def test_peak_starts_within_four_numpy_imports() -> None:
    # CPU time, not wall: waiting for a core does not count; best of 7 alternating pairs, so a
    # burst of load on one run is not the figure. Measured on a 2-core machine at load 10-11
    # (other jobs): numpy 0.216-0.222 s, peak 0.826-0.861 s of CPU, ratio 3.8-3.9. What remains
    # above the floor of numpy + onnx + networkx + typer (2.9x): graphmem's modules (about 0.5x,
    # most of it making ~60 frozen slotted dataclasses, 1.6 ms of CPU each), onnx's schema
    # registry on first use and the CPU kernel table
    ratio, peak, numpy = startup_ratio()
    assert ratio < STARTUP_BOUND, (
        f"graphmem peak took {peak:.2f} s of CPU, python -c 'import numpy' {numpy:.2f} s: {ratio:.2f}x "
        "(python -X importtime shows where)"
    )


UNWANTED = {"pydantic", "onnxruntime", "onnx.reference", "graphmem.training", "graphmem.verify",
            "graphmem.batch", "graphmem.analysis.controlflow", "graphmem.ort.controlflow",
            "graphmem.shapes.controlflow", "graphmem.views.html_report", "graphmem.views.plot"}


@pytest.mark.parametrize(
    ("options", "allowed"),
    [
        (["--json"], set()),
        # the table at --graph-opt none offers onnxruntime's default level beside it (issue 27:
        # graphmem.analysis.levels), which has onnxruntime optimize the graph: that import only
        ([], {"onnxruntime"}),
    ],
    ids=["json", "table"],
)
def test_peak_loads_what_it_runs_only(options: list[str], allowed: set[str]) -> None:
    """A model without control flow: no pydantic, no onnxruntime (but for the table's offer of
    the default level), no other command's modules."""
    argv = ["peak", str(MODELS / "tiny_cnn.onnx"), "--dim", "batch=1", *options]
    code = (
        "import io, contextlib, json, sys\n"
        "from graphmem.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main({argv!r}) == 0\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=ENV)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    assert not (UNWANTED - allowed) & loaded, sorted((UNWANTED - allowed) & loaded)
