"""Predicted vs measured activation peak on onnx's own node test cases (one op each).

``onnx.backend.test.case.node.collect_testcases`` builds ~1,900 small single-op models written by
the onnx project. Each one that onnxruntime 1.31 can run (CPU, ORT_DISABLE_ALL) is measured and
compared with graphmem's prediction on the case's own inputs (their shapes as ``--shape``, the
values of small integer inputs as ``--value``: TopK's k, Tile's repeats, Resize's sizes, trip
counts given as graph inputs); the script prints every mismatch with its op type and the
counts: exact, off, skipped (onnxruntime cannot run it, or graphmem rejects it as documented,
e.g. string tensors).

    python scripts/accuracy_nodes.py [--only SUBSTRING ...]
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import warnings
from pathlib import Path

import onnx

import graphmem
from graphmem.errors import GraphmemError
from graphmem.model.loading import load_model
from graphmem.verify import make_feeds, measure


def _case_feeds(case) -> dict | None:  # type: ignore[no-untyped-def]
    """The test case's own inputs (data-dependent shapes need them), or None."""
    import numpy as np

    if not case.data_sets:
        return None
    inputs = case.data_sets[0][0]
    names = [i.name for i in case.model.graph.input]
    if len(inputs) != len(names) or not all(isinstance(x, np.ndarray) for x in inputs):
        return None
    return dict(zip(names, inputs))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case import node as node_cases

        cases = node_cases.collect_testcases(None)
    counts: collections.Counter[str] = collections.Counter()
    off_by_op: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            if args.only and not any(s in case.name for s in args.only):
                continue
            path = Path(tmp) / f"{case.name}.onnx"
            try:
                onnx.save(case.model, str(path))
                model = load_model(path)
                dims = {d: 2 for d in model.symbolic_dims}
                own = _case_feeds(case)
                if own is not None:  # the run's own shapes, and its small integer inputs' values (--shape, --value)
                    own = {k: v for k, v in own.items() if k in model.inputs and model.inputs[k].kind == "tensor"}
                    inputs = {"shapes": {k: v.shape for k, v in own.items()},
                              "values": {k: tuple(int(x) for x in v.reshape(-1)) for k, v in own.items()
                                         if v.dtype.kind in "iub" and 0 < v.size <= 64}}
                else:
                    inputs = {"dims": dims}
                predicted = graphmem.analyze(path, **inputs).activations.peak_bytes
            except GraphmemError:
                counts["rejected by graphmem (documented input errors)"] += 1
                continue
            try:
                feeds = _case_feeds(case) or make_feeds(case.model, dims)
                measured = measure(str(path), feeds, runs=1).runs[0].requested_peak
            except GraphmemError:
                counts["skipped: onnxruntime cannot run it"] += 1
                continue
            if predicted == measured:
                counts["exact"] += 1
            else:
                counts["off"] += 1
                ops = ",".join(sorted({n.op_type for n in case.model.graph.node}))
                off_by_op[ops] += 1
                print(f"{case.name:<60} {ops:<24} predicted {predicted:>10,} measured {measured:>10,}")
    print()
    for key, n in counts.most_common():
        print(f"{n:>6}  {key}")
    if off_by_op:
        print("off, by op:", ", ".join(f"{k} x{v}" for k, v in off_by_op.most_common()))
    return 1 if counts["off"] else 0


if __name__ == "__main__":
    sys.exit(main())
