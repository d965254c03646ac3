"""``graphmem verify --graph-opt all`` repeated on the onnx wheel's light models: does the
verdict hold from session to session, and which execution order did each session run?

At level all onnxruntime's NCHWc transformer numbers the ReorderOutput nodes it adds in an order
that follows heap addresses, so a model's execution order (and its peak) may change from one
session to the next (``activations.order_peaks``). Each run below is a fresh prediction and a
fresh measured session; a row gives, per model: the runs, how many passed, the orders' peaks the
analysis names (none: one order, or every order the same peak) and the peaks measured.

    python scripts/verify_orders.py [--runs 4] [--tolerance 0%] [MODEL ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import light_models  # noqa: E402

from graphmem.verify.compare import parse_tolerance, verify  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path, help="default: the onnx wheel's light models")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--tolerance", default="0%", help="as verify --tolerance (default 0%%: exact)")
    args = parser.parse_args(argv)
    tolerance = parse_tolerance(args.tolerance)
    print(f"{'model':<28} {'runs':>4} {'passed':>6}  order peaks (B)            measured peaks (B)")
    failed = 0
    for path in args.models or light_models():
        results = [verify(path, graph_opt="all", tolerance=tolerance) for _ in range(args.runs)]
        passed = sum(v.passed for v in results)
        failed += args.runs - passed
        orders = ", ".join(f"{b:,}" for b in results[0].order_peaks) or "one"
        measured = ", ".join(f"{b:,}" for b in sorted({v.measured_bytes for v in results}))
        print(f"{path.name:<28} {args.runs:>4} {passed:>6}  {orders:<26} {measured}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
