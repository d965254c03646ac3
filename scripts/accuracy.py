"""Predicted vs measured activation peak, onnxruntime CPU, graph optimizations disabled.

For every model of the corpus (``scripts/corpus.py``) and each dim binding (batch 1 and 8, other
dims 128, or 64 for the tiny models in models/), prints graphmem's predicted peak (``activations.peak_bytes``) beside the peak that
onnxruntime 1.31 really requested from its arena in run 1 (profiler field
``mem_bytes_requested_in_use``; ORT_DISABLE_ALL, CPU EP, one intra-op thread, fresh session).

    python scripts/accuracy.py [--only NAME ...] [--batches 1,8] [--provider cuda]

``--provider cuda`` predicts with the CUDA session emulation (``peak --provider cuda``) and
measures a CUDA session (the CUDA arena's requests); on a machine where onnxruntime cannot use
CUDA it prints the predictions, says why nothing was measured, and exits 2.

Exit status 1 when any model is off by more than 0.5 %.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

import graphmem  # noqa: E402
from graphmem.errors import GraphmemError  # noqa: E402
from graphmem.verify import make_feeds, measure  # noqa: E402

TOLERANCE = 0.005


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="substrings of model names to keep")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument(
        "--pytorch-converted",
        action="store_true",
        help="also the onnx wheel's pytorch-converted models (onnxruntime cannot run some: skipped)",
    )
    ap.add_argument("--provider", choices=("cpu", "cuda"), default="cpu")
    args = ap.parse_args()
    batches = tuple(int(b) for b in args.batches.split(","))
    unusable = None
    if args.provider == "cuda":
        from graphmem.verify.providers import cuda_problem

        unusable = cuda_problem()
        if unusable:
            print(f"NOT MEASURED: onnxruntime cannot use CUDA here ({unusable}); predictions only\n")
    paths, missing = corpus.select(pytorch_converted=args.pytorch_converted, only=args.only)
    print(f"{'model':<28} {'dims':<22} {'predicted':>12} {'measured':>12} {'ratio':>8}  {'analyze':>8}")
    worst = 0.0
    rows = skipped = 0
    for path in paths:
        import onnx

        proto = onnx.load(str(path), load_external_data=False)
        # models/ holds tiny transformers with 64 positions; the exported corpus is bound at 128
        seq = 64 if path.parent == corpus.MODELS else 128
        for dims in corpus.bindings(path, batches, seq=seq):
            t0 = time.perf_counter()
            result = graphmem.analyze(path, dims=dims, provider=args.provider)
            elapsed = time.perf_counter() - t0
            dim_text = ",".join(f"{k}={v}" for k, v in dims.items()) or "static"
            p = result.activations.peak_bytes
            if unusable:
                print(f"{corpus.name(path):<28} {dim_text:<22} {p:>12,} {'-':>12} {'-':>8}  {elapsed:>7.2f}s", flush=True)
                continue
            feeds = make_feeds(proto, dims, seed=0)
            try:
                measured = measure(str(path), feeds, provider=args.provider, graph_opt="none", threads=1, runs=1)
            except GraphmemError as exc:
                print(f"{corpus.name(path):<28} skipped: onnxruntime cannot run it ({str(exc)[:60]}…)")
                skipped += 1
                continue
            m = measured.runs[0].requested_peak
            ratio = p / m if m else float("nan")
            worst = max(worst, abs(ratio - 1))
            rows += 1
            print(f"{corpus.name(path):<28} {dim_text:<22} {p:>12,} {m:>12,} {ratio:>8.4f}  {elapsed:>7.2f}s", flush=True)
    for name in missing:
        print(f"{name:<28} (not exported: run python scripts/export_corpus.py)")
    if unusable:
        return 2
    print(f"\n{rows} measurements ({skipped} skipped: onnxruntime cannot run them), worst deviation {worst * 100:.3f}% (bar: {TOLERANCE * 100}%)")
    return 0 if worst <= TOLERANCE and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
