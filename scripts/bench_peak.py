"""Speed of ``graphmem peak`` beside ``onnx.load`` and onnx-tool 1.0.1 on the same file.

    python scripts/bench_peak.py [MODEL ...]      (default: the exported GPT-2 small, seq 128)

Each tool runs in a fresh subprocess (so no tool profits from another's warm caches) three
times; the best time counts. Baselines measured in the same run:
* ``onnx.load``: parsing the protobuf alone (weights inline);
* onnx-tool 1.0.1: load, shape inference, profile, compress_memory — its memory-planning path
  (``pip install onnx-tool==1.0.1``; skipped with a note when absent).
Also times ``graphmem peak`` on a Llama-7B-shaped decoder with external-data weights
(``scripts/make_llama7b.py``) and reports its maximum RSS (bars: < 5 s, < 500 MB).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / ".cache" / "corpus"

ONNX_LOAD = "import onnx,sys; onnx.load(sys.argv[1])"
GRAPHMEM = (
    "import sys, graphmem; from graphmem.report import peak_json; "
    "peak_json(graphmem.analyze(sys.argv[1], dims=dict(a.split('=') and (a.split('=')[0], int(a.split('=')[1])) for a in sys.argv[2:])))"
)
ONNX_TOOL = (
    "import sys, numpy as np, onnx_tool; from onnx_tool import Model; "
    "m = Model(sys.argv[1]); g = m.graph; "
    "dims = dict((a.split('=')[0], int(a.split('=')[1])) for a in sys.argv[2:]); "
    "shapes = {}\n"
    "for name in g.input:\n"
    "    t = g.tensormap[name]\n"
    "    shp = [dims.get(d, d) if isinstance(d, str) else d for d in t.shape]\n"
    "    shapes[name] = onnx_tool.create_ndarray_f32(shp) if t.dtype == np.float32 else np.zeros(shp, dtype=np.int64)\n"
    "g.shape_infer(shapes); g.profile(); g.compress_memory()"
)


RSS_LINE = "\nimport resource; print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"


def timed(code: str, args: list[str], repeat: int = 3) -> tuple[float, int]:
    """Best wall time of ``repeat`` fresh interpreters running ``code``, and their max RSS (bytes)."""
    best = float("inf")
    rss = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", code + RSS_LINE, *args], check=True, capture_output=True, text=True
        )
        best = min(best, time.perf_counter() - t0)
        kib = int(done.stdout.strip().splitlines()[-1].split()[1])  # Linux: ru_maxrss in KiB
        rss = max(rss, kib * 1024)
    return best, rss


def startup() -> float:
    t, _ = timed("import onnx", [])
    return t


def main() -> int:
    models = [Path(p) for p in sys.argv[1:]] or [CORPUS / "gpt2_small.onnx"]
    dims = ["batch=1", "seq=128"]
    base = startup()
    print(f"python + import onnx start-up: {base:.2f} s (included in every figure below)\n")
    for model in models:
        if not model.exists():
            print(f"{model}: missing (python scripts/export_corpus.py)")
            continue
        size = model.stat().st_size / 2**20
        t_load, _ = timed(ONNX_LOAD, [str(model)])
        t_gm, rss_gm = timed(GRAPHMEM, [str(model), *dims])
        print(f"{model.name} ({size:.0f} MiB), graphmem max RSS {rss_gm / 2**20:.0f} MiB")
        print(f"  onnx.load            {t_load:6.2f} s")
        print(f"  graphmem peak        {t_gm:6.2f} s   = {t_gm / t_load:.2f}x onnx.load (bar <= 2x)")
        if importlib.util.find_spec("onnx_tool") is None:
            print("  onnx-tool            not installed (pip install onnx-tool==1.0.1)")
        else:
            try:
                t_tool, _ = timed(ONNX_TOOL, [str(model), *dims], repeat=1)
                print(f"  onnx-tool 1.0.1      {t_tool:6.2f} s   = {t_tool / t_gm:.2f}x graphmem (bar >= 3x)")
            except subprocess.CalledProcessError as exc:
                err = exc.stderr.decode(errors="replace").strip().splitlines()[-1:]
                print(f"  onnx-tool 1.0.1      failed: {err}")
    llama = CORPUS / "llama7b.onnx"
    if not llama.exists():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "make_llama7b.py")], check=True, capture_output=True)
    t_llama, rss = timed(GRAPHMEM, [str(llama), "batch=1", "seq=2048"])
    print("\nllama7b.onnx (32 layers, hidden 4096, external-data weights not present), batch 1, seq 2048")
    print(f"  graphmem peak        {t_llama:6.2f} s   max RSS {rss / 2**20:.0f} MiB (bars: < 5 s, < 500 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
