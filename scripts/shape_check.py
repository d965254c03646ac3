"""Every intermediate's shape and dtype, graphmem's against what onnxruntime produces at run time.

For each corpus model (``scripts/corpus.py``: light, models/, exported) and binding (batch 1 and
8, other dims 128, or 64 for models/), runs onnxruntime (CPU, ORT_DISABLE_ALL) with every node
output exposed as a graph output and compares each tensor's shape and dtype with graphmem's
runtime shape view. Prints per model: tensors compared, mismatches, unresolved; exits 1 on any.

    python scripts/shape_check.py [--only NAME ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

import graphmem  # noqa: E402
from graphmem.verify.shapes import runtime_types  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    paths, missing = corpus.select(only=args.only)
    bad = 0
    print(f"{'model':<24} {'dims':<20} {'tensors':>8} {'mismatch':>9} {'unresolved':>11}")
    for path in paths:
        seq = 64 if path.parent == corpus.MODELS else 128
        for dims in corpus.bindings(path, (1, 8), seq=seq):
            a = graphmem.analyze(path, dims=dims)
            seen = runtime_types(path, dims)
            wrong = [
                n for n, (shape, dtype) in seen.items()
                if a.types.get(n) is None or a.types[n].shape != shape or a.types[n].dtype != dtype
            ]
            bad += len(wrong) + len(a.shapes.unresolved)
            text = ",".join(f"{k}={v}" for k, v in dims.items()) or "static"
            print(f"{corpus.name(path):<24} {text:<20} {len(seen):>8} {len(wrong):>9} {len(a.shapes.unresolved):>11}")
            for n in wrong[:3]:
                print(f"    {n}: graphmem {a.types.get(n)}, onnxruntime {seen[n]}")
    for name in missing:
        print(f"{name:<24} (not exported: run python scripts/export_corpus.py)")
    print(f"\n{bad} mismatched or unresolved tensors")
    return 1 if bad or missing else 0


if __name__ == "__main__":
    sys.exit(main())
