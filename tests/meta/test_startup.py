"""Start-up: a fresh ``graphmem peak`` on a 7-node model costs a small multiple of what the same
interpreter spends importing numpy. Figures are ratios measured inside one process, so a slow or
busy machine slows both sides alike (scripts/bench_peak.py --startup prints wall times).

What it guards: ml_dtypes 0.7.0, which every ``import onnx`` imports, takes 0.5 s on a 2-core
machine (37,744 ufunc promoters, each checked against every earlier one by numpy) against 0.01 s
for 0.6.0 — pyproject.toml excludes it; and graphmem's own imports, which load the modules of
other commands only when those run.
"""

from __future__ import annotations

import json
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


@installed_per_pyproject
def test_peak_starts_within_a_few_numpy_imports() -> None:
    # measured on a 2-core machine at load 10: ratio 3.1 with ml_dtypes 0.6.0, 12.3 with 0.7.0
    body = f"from graphmem.cli import main\nassert main(['peak', {str(MODELS / 'static_mlp.onnx')!r}]) == 0"
    ratio, numpy, rest = _best_ratio(body)
    assert ratio < 8, f"graphmem peak took {rest:.2f} s after import numpy's {numpy:.3f} s (python -X importtime shows where)"
