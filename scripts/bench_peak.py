"""Speed and memory of ``graphmem peak`` beside its peers, whole process, on the same files.

    python scripts/bench_peak.py [MODEL ...] [--repeat N]   (default: the exported GPT-2 small and
                                                             BERT-base, models/'s small models, the
                                                             Llama-7B-shaped graph)
    python scripts/bench_peak.py --startup [--repeat N]     (only the start-up figures)

Every tool runs as a fresh process, the tools of one model in turn (A B C A B C …) after one
warm-up run each (``scripts/_bench.py``): medians of wall and CPU seconds, the largest peak RSS,
and each peer's wall and CPU time over graphmem's, pair by pair (median; on a busy machine the CPU
ratio is the steadier one: waiting for a core does not count). Symbolic dims are bound alike
for every tool: ``batch`` (and ``*batch*``) to 1, every other one to 128, ``seq`` of the
Llama-7B-shaped graph to 2048. The tools:

* ``graphmem peak MODEL --dim ... --json`` (the command line);
* onnxsim 0.8.1 ``plan_activation_memory`` (its C++ greedy planner: shape inference, liveness,
  placement) on the model loaded without external data, its input dims set to the binding
  (``pip install onnxsim==0.8.1``; skipped with a note when absent);
* onnx-tool 1.0.1: load, shape inference, profile, ``compress_memory`` (its memory planner)
  (``pip install onnx-tool==1.0.1``; skipped with a note when absent);
* ``onnx.load``: parsing the protobuf alone (weights inline; external data not read), a floor.

``--startup``: a fresh ``graphmem peak models/tiny_cnn.onnx`` beside fresh interpreters importing
numpy, onnx and graphmem's third-party floor; the ratio to ``python -c "import numpy"`` by best
CPU time and by median wall time pair by pair (issue 24: within 4x; ``tests/meta/test_startup.py``
keeps it there). ml_dtypes' version decides most of ``import onnx``'s time (0.7.0 registers
37,744 ufunc promoters, each checked against every earlier one by numpy).

The Llama-7B-shaped decoder (``scripts/make_llama7b.py``; 32 layers, external-data weights not
present) is written to ``$GRAPHMEM_CORPUS`` (default ``.cache/corpus``) when missing.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench import PYTHON, Run, alternate, median, pair_ratios  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("GRAPHMEM_CORPUS", ROOT / ".cache" / "corpus"))  # as scripts/corpus.py
SMALL = ("static_mlp", "tiny_cnn", "tiny_bert", "tiny_gpt2")

# argv[1] the model, argv[2:] NAME=VALUE bindings
ONNX_LOAD = "import onnx, sys; onnx.load(sys.argv[1], load_external_data=False)"
ONNXSIM = (
    "import sys, onnx, onnxsim\n"
    "m = onnx.load(sys.argv[1], load_external_data=False)\n"
    "dims = dict(a.split('=') for a in sys.argv[2:])\n"
    "for vi in m.graph.input:\n"
    "    for d in vi.type.tensor_type.shape.dim:\n"
    "        if d.dim_param in dims:\n"
    "            d.dim_value = int(dims[d.dim_param])\n"
    "plan = onnxsim.plan_activation_memory(m)\n"
    "print(plan.arena_bytes, len(plan.unplanned))"
)
ONNX_TOOL = (
    "import sys, numpy as np, onnx_tool; from onnx_tool import Model\n"
    "m = Model(sys.argv[1]); g = m.graph\n"
    "dims = dict((a.split('=')[0], int(a.split('=')[1])) for a in sys.argv[2:])\n"
    "shapes = {}\n"
    "for name in g.input:\n"
    "    t = g.tensormap[name]\n"
    "    shp = [dims.get(d, d) if isinstance(d, str) else d for d in t.shape]\n"
    "    shapes[name] = onnx_tool.create_ndarray_f32(shp) if t.dtype == np.float32 else np.zeros(shp, dtype=np.int64)\n"
    "g.shape_infer(shapes); g.profile(); g.compress_memory()"
)


def bindings(path: Path, seq: int = 128) -> list[str]:
    """NAME=VALUE for every symbolic dim of the model's inputs (batch-like 1, others ``seq``)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    names = sorted({d.dim_param for i in model.graph.input if i.name not in inits
                    for d in i.type.tensor_type.shape.dim if d.dim_param})
    return [f"{n}={1 if 'batch' in n.lower() else seq}" for n in names]


def tools(path: Path, dims: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """(label -> argv of each installed tool, notes on the missing ones)."""
    graphmem = [PYTHON, "-m", "graphmem", "peak", str(path), "--json", *(a for d in dims for a in ("--dim", d))]
    commands = {"graphmem peak": graphmem}
    notes = []
    if importlib.util.find_spec("onnxsim") is not None:
        commands["onnxsim plan"] = [PYTHON, "-c", ONNXSIM, str(path), *dims]
    else:
        notes.append("onnxsim not installed (pip install onnxsim==0.8.1)")
    if importlib.util.find_spec("onnx_tool") is not None:
        commands["onnx-tool"] = [PYTHON, "-c", ONNX_TOOL, str(path), *dims]
    else:
        notes.append("onnx-tool not installed (pip install onnx-tool==1.0.1)")
    commands["onnx.load"] = [PYTHON, "-c", ONNX_LOAD, str(path)]
    return commands, notes


def compare(path: Path, dims: list[str], repeat: int) -> None:
    """One model: every tool in turn, ``repeat`` times."""
    commands, notes = tools(path, dims)
    runs: dict[str, list[Run]] = {}
    failed: dict[str, str] = {}
    for label in list(commands):  # a tool that cannot take the model is dropped, with its reason
        try:
            alternate({label: commands[label]}, 1, warmup=0, timeout=600)
        except RuntimeError as exc:
            failed[label] = str(exc)[:120]
            del commands[label]
    runs = alternate(commands, repeat, warmup=0, timeout=600)
    size = path.stat().st_size / 2**20
    print(f"{path.name} ({size:.1f} MiB){', ' + ' '.join(dims) if dims else ''}")
    print(f"  {'':16}{'wall s':>8}{'cpu s':>8}{'max RSS':>10}   over graphmem's (pair by pair, median): wall, cpu")
    ours = runs.get("graphmem peak")
    for label, rs in runs.items():
        ratio = ""
        if ours is not None and label != "graphmem peak":
            ratio = "   ".join(f"{statistics.median(pair_ratios(rs, ours, f)):.2f}x" for f in ("wall", "cpu"))
        rss = max(r.rss for r in rs) / 2**20
        print(f"  {label:16}{median(rs, 'wall'):8.2f}{median(rs, 'cpu'):8.2f}{rss:8.0f} MiB   {ratio}")
    for label, why in failed.items():
        print(f"  {label:16}failed: {why}")
    for note in notes:
        print(f"  {note}")
    print()


def startup(repeat: int) -> None:
    """Start-up of a fresh ``graphmem peak`` on a small model beside the imports it cannot avoid."""
    import ml_dtypes

    tiny = ROOT / "models" / "tiny_cnn.onnx"
    rows = {
        "python -c pass": [PYTHON, "-c", "pass"],
        "python -c 'import numpy'": [PYTHON, "-c", "import numpy"],
        f"python -c 'import ml_dtypes' ({ml_dtypes.__version__})": [PYTHON, "-c", "import ml_dtypes"],
        "python -c 'import onnx'": [PYTHON, "-c", "import onnx"],
        "python -c 'import numpy, onnx, networkx, typer'": [PYTHON, "-c", "import numpy, onnx, networkx, typer"],
        "graphmem peak models/tiny_cnn.onnx": [PYTHON, "-m", "graphmem", "peak", str(tiny), "--dim", "batch=1"],
    }
    runs = alternate(rows, repeat)
    numpy = runs["python -c 'import numpy'"]
    print(f"start-up (fresh processes in turn, {repeat} runs each after a warm-up, bytecode cached)")
    print(f"  {'':52}{'wall s':>8}{'cpu s':>8}   cpu / import numpy's (median pair)")
    for label, rs in runs.items():
        ratio = statistics.median(pair_ratios(rs, numpy, "cpu"))
        print(f"  {label:52}{median(rs, 'wall'):8.2f}{median(rs, 'cpu'):8.2f}   {ratio:5.2f}x")
    peak = runs["graphmem peak models/tiny_cnn.onnx"]
    best = min(r.cpu for r in peak) / min(r.cpu for r in numpy)
    wall = statistics.median(pair_ratios(peak, numpy, "wall"))
    print(f"  graphmem peak / python -c 'import numpy': {best:.2f}x by best CPU time, {wall:.2f}x by wall "
          "(median pair) (bar: within 4x)\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--startup", action="store_true", help="only the start-up figures")
    ap.add_argument("--repeat", type=int, default=5, help="counted runs of each tool (default 5)")
    args = ap.parse_args()
    startup(args.repeat)
    if args.startup:
        return 0
    models = args.models or [
        *(p for p in (CORPUS / "gpt2_small.onnx", CORPUS / "bert_base.onnx") if p.exists()),
        *(ROOT / "models" / f"{n}.onnx" for n in SMALL),
    ]
    for model in models:
        if not model.exists():
            print(f"{model}: missing (python scripts/export_corpus.py)\n")
            continue
        compare(model, bindings(model, seq=64 if model.parent.name == "models" else 128), args.repeat)
    if not args.models:
        llama = CORPUS / "llama7b.onnx"
        if not llama.exists():
            subprocess.run([PYTHON, str(ROOT / "scripts" / "make_llama7b.py"), "--out", str(CORPUS)], check=True,
                           capture_output=True)
        print("Llama-7B-shaped decoder (32 layers, hidden 4096, external-data weights not present)")
        compare(llama, ["batch=1", "seq=2048"], args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
