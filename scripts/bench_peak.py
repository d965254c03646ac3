"""Speed of ``graphmem peak`` beside ``onnx.load`` and onnx-tool 1.0.1 on the same file.

    python scripts/bench_peak.py [MODEL ...]      (default: the exported GPT-2 small, seq 128)
    python scripts/bench_peak.py --startup        (only the start-up figures)

First the start-up: a fresh ``graphmem peak`` on the 7-node ``models/static_mlp.onnx`` beside a
fresh interpreter importing numpy, ml_dtypes (whose version decides most of ``import onnx``'s
time: 0.7.0 registers 37,744 ufunc promoters, each checked against every earlier one by numpy),
onnx, and graphmem's third-party floor.

Each tool runs in a fresh subprocess (so no tool profits from another's warm caches) three
times after one warm-up run; the best time counts. The subprocesses may cache compiled bytecode
(``PYTHONDONTWRITEBYTECODE`` is removed from their environment): onnx and onnx-tool, installed by
pip, come with theirs, and an installed graphmem has its own too; without the cache a checkout
recompiles graphmem's modules on every start (about 0.1 s here). Baselines measured in the same run:
* ``onnx.load``: parsing the protobuf alone (weights inline);
* onnx-tool 1.0.1: load, shape inference, profile, compress_memory — its memory-planning path
  (``pip install onnx-tool==1.0.1``; skipped with a note when absent).
Also times ``graphmem peak`` on a Llama-7B-shaped decoder with external-data weights
(``scripts/make_llama7b.py``) and reports its maximum RSS (bars: < 5 s, < 500 MB).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("GRAPHMEM_CORPUS", ROOT / ".cache" / "corpus"))  # as scripts/corpus.py

# Each snippet imports its tool, then times its work (``WORK`` seconds, after the imports).
ONNX_LOAD = "import onnx,sys,time; t0=time.perf_counter(); onnx.load(sys.argv[1]); work=time.perf_counter()-t0"
GRAPHMEM = (
    "import sys, time, graphmem; from graphmem.views.report import peak_json; t0=time.perf_counter(); "
    "peak_json(graphmem.analyze(sys.argv[1], dims=dict((a.split('=')[0], int(a.split('=')[1])) for a in sys.argv[2:]))); "
    "work=time.perf_counter()-t0"
)
ONNX_TOOL = (
    "import sys, time, numpy as np, onnx_tool; from onnx_tool import Model; t0=time.perf_counter(); "
    "m = Model(sys.argv[1]); g = m.graph; "
    "dims = dict((a.split('=')[0], int(a.split('=')[1])) for a in sys.argv[2:]); "
    "shapes = {}\n"
    "for name in g.input:\n"
    "    t = g.tensormap[name]\n"
    "    shp = [dims.get(d, d) if isinstance(d, str) else d for d in t.shape]\n"
    "    shapes[name] = onnx_tool.create_ndarray_f32(shp) if t.dtype == np.float32 else np.zeros(shp, dtype=np.int64)\n"
    "g.shape_infer(shapes); g.profile(); g.compress_memory(); work=time.perf_counter()-t0"
)


TAIL = "\nimport resource; print('WORK', work); print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"


@dataclass(frozen=True)
class Timing:
    wall: float  # fresh interpreter, start-up and imports included (best of the repeats)
    work: float  # the tool's work after its imports, in that same process (best of the repeats)
    rss: int  # bytes, max over the repeats


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(code: str, args: list[str], repeat: int = 3) -> Timing:
    """Best wall and work time of ``repeat`` fresh interpreters running ``code`` (after a
    warm-up run that is not counted)."""
    subprocess.run([sys.executable, "-c", code + TAIL, *args], check=True, capture_output=True, env=ENV)
    wall = work = float("inf")
    rss = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", code + TAIL, *args], check=True, capture_output=True, text=True, env=ENV
        )
        wall = min(wall, time.perf_counter() - t0)
        lines = dict(line.split() for line in done.stdout.strip().splitlines()[-2:])
        work = min(work, float(lines["WORK"]))
        rss = max(rss, int(lines["RSS"]) * 1024)  # Linux: ru_maxrss in KiB
    return Timing(wall=wall, work=work, rss=rss)


def startup(modules: str = "onnx") -> float:
    return timed(f"import {modules}; work = 0.0", []).wall


def cli_wall(args: list[str], repeat: int = 5) -> float:
    """Best wall time of ``repeat`` fresh ``python ARGS`` processes (after one warm-up)."""
    subprocess.run([sys.executable, *args], check=True, capture_output=True, env=ENV)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *args], check=True, capture_output=True, env=ENV)
        best = min(best, time.perf_counter() - t0)
    return best


def startup_report() -> None:
    """Start-up of a fresh ``graphmem peak`` on a 7-node model beside the imports it cannot avoid."""
    import ml_dtypes  # noqa: F401 - its version is the point

    rows = [
        ("python -c pass", ["-c", "pass"]),
        ("python -c 'import numpy'", ["-c", "import numpy"]),
        (f"python -c 'import ml_dtypes' ({ml_dtypes.__version__})", ["-c", "import ml_dtypes"]),
        ("python -c 'import onnx'", ["-c", "import onnx"]),
        ("python -c 'import numpy, onnx, networkx, typer'", ["-c", "import numpy, onnx, networkx, typer"]),
        ("python -m graphmem peak models/static_mlp.onnx", ["-m", "graphmem", "peak", str(ROOT / "models" / "static_mlp.onnx")]),
    ]
    walls = {label: cli_wall(args) for label, args in rows}
    print("start-up (best of 5 fresh processes, bytecode cached)")
    numpy_wall = walls["python -c 'import numpy'"]
    for label, wall in walls.items():
        print(f"  {label:<52}{wall:6.2f} s   {wall - numpy_wall:+6.2f} s vs import numpy")
    print()


def main() -> int:
    args = sys.argv[1:]
    startup_report()
    if args == ["--startup"]:
        return 0
    models = [Path(p) for p in args] or [CORPUS / "gpt2_small.onnx"]
    dims = ["batch=1", "seq=128"]
    print("wall: a fresh interpreter running the tool, start-up and imports included;")
    print("work: the same process's time after its imports (what each tool does to the file).\n")
    for model in models:
        if not model.exists():
            print(f"{model}: missing (python scripts/export_corpus.py)")
            continue
        size = model.stat().st_size / 2**20
        load = timed(ONNX_LOAD, [str(model)])
        gm = timed(GRAPHMEM, [str(model), *dims])
        print(f"{model.name} ({size:.0f} MiB), graphmem max RSS {gm.rss / 2**20:.0f} MiB")
        print(f"  {'':22}{'wall':>8}{'work':>8}")
        print(f"  {'onnx.load':22}{load.wall:7.2f}s{load.work:7.2f}s")
        print(
            f"  {'graphmem peak':22}{gm.wall:7.2f}s{gm.work:7.2f}s   = {gm.wall / load.wall:.2f}x onnx.load wall,"
            f" {gm.work / load.work:.2f}x work (bar <= 2x)"
        )
        if importlib.util.find_spec("onnx_tool") is None:
            print("  onnx-tool            not installed (pip install onnx-tool==1.0.1)")
            continue
        try:
            tool = timed(ONNX_TOOL, [str(model), *dims])
        except subprocess.CalledProcessError as exc:
            err = (exc.stderr or "").strip().splitlines()[-1:]
            print(f"  onnx-tool 1.0.1      failed: {err}")
            continue
        print(
            f"  {'onnx-tool 1.0.1':22}{tool.wall:7.2f}s{tool.work:7.2f}s   = {tool.wall / gm.wall:.2f}x graphmem wall,"
            f" {tool.work / gm.work:.2f}x work (bar >= 3x)"
        )
    llama = CORPUS / "llama7b.onnx"
    if not llama.exists():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "make_llama7b.py")], check=True, capture_output=True)
    big = timed(GRAPHMEM, [str(llama), "batch=1", "seq=2048"])
    print("\nllama7b.onnx (32 layers, hidden 4096, external-data weights not present), batch 1, seq 2048")
    print(f"  graphmem peak        {big.wall:6.2f} s wall   max RSS {big.rss / 2**20:.0f} MiB (bars: < 5 s, < 500 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
