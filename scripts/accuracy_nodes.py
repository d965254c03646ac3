"""Predicted vs measured activation peak on onnx's own node test cases (one op each).

``onnx.backend.test.case.node.collect_testcases`` builds ~1,900 small single-op models written by
the onnx project. Each one that onnxruntime 1.31 can run (CPU, ORT_DISABLE_ALL) is measured and
compared with graphmem's prediction on the case's own inputs (their shapes as ``--shape``, the
values of small integer inputs as ``--value``: TopK's k, Tile's repeats, Resize's sizes, trip
counts given as graph inputs); the script prints every mismatch with its op type and the
counts: exact, off, skipped (onnxruntime cannot run it).

Every case graphmem rejects is also handed to onnxruntime (CPU, ORT_DISABLE_ALL, the case's own
inputs) and classed by what onnxruntime does with it: cannot create a session (graphmem must
refuse it too), creates one but cannot run the case's inputs, or runs it — a *false refusal*,
printed with graphmem's message, unless its reason is one of the deliberate refusals listed in
:data:`DELIBERATE` (documented in docs/pages/exit-codes.md). The cases graphmem accepts
that onnxruntime cannot load are counted too. Exit status 1 when a case is off or falsely
refused.

    python scripts/accuracy_nodes.py [--only SUBSTRING ...] [--rejected]

``--rejected`` prints every rejected case with both verdicts, and every case graphmem accepts
that onnxruntime cannot load or run.
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


def _tensor_inputs(case) -> dict | None:  # type: ignore[no-untyped-def]
    """The case's own tensor inputs (sequence and optional inputs left out), or None."""
    import numpy as np

    raw = _raw_inputs(case)
    if raw is None:
        return None
    return {k: v for k, v in raw.items() if isinstance(v, np.ndarray)}


def _sequence_shapes(case, model) -> dict:  # type: ignore[no-untyped-def]
    """The element shapes of the case's sequence inputs (``--shape s=[…]``)."""
    import numpy as np

    raw = _raw_inputs(case) or {}
    return {k: tuple(tuple(np.asarray(e).shape) for e in v) for k, v in raw.items()
            if isinstance(v, list) and k in model.inputs and model.inputs[k].kind == "sequence_type"}


#: Reasons graphmem refuses on purpose although onnxruntime runs the model (docs/pages/exit-codes.md):
#: phrases of graphmem's message.
DELIBERATE: tuple[str, ...] = ()


def _raw_inputs(case) -> dict | None:  # type: ignore[no-untyped-def]
    """The case's own inputs as onnxruntime's Python API takes them (arrays; lists of arrays for
    sequences; absent optionals dropped), or None when the case has none."""
    import numpy as np
    from onnx import numpy_helper

    def convert(x):  # type: ignore[no-untyped-def]
        if isinstance(x, onnx.TensorProto):
            return numpy_helper.to_array(x)
        if isinstance(x, (list, tuple)):
            return [convert(e) for e in x]
        return np.asarray(x) if isinstance(x, np.generic) else x

    if not case.data_sets:
        return None
    inputs = case.data_sets[0][0]
    names = [i.name for i in case.model.graph.input]
    if len(inputs) != len(names):
        return None
    return {name: convert(x) for name, x in zip(names, inputs) if x is not None}


def ort_verdict(path: Path, feeds: dict | None) -> str:  # type: ignore[type-arg]
    """What onnxruntime 1.31 (CPU, ORT_DISABLE_ALL) does with ``path``: "runs", or
    "no session: …" / "run fails: …" with the first line of its message."""
    from graphmem.ort.runtime import onnxruntime

    ort = onnxruntime()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    options.intra_op_num_threads = 1
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises many types
        return f"no session: {_first_line(exc)}"
    if feeds is None:
        return "run fails: no inputs for the case"
    try:
        session.run(None, feeds)
    except Exception as exc:  # noqa: BLE001
        return f"run fails: {_first_line(exc)}"
    return "runs"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--rejected", action="store_true", help="print every rejected case with both verdicts")
    args = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case import node as node_cases

        cases = node_cases.collect_testcases(None)
    counts: collections.Counter[str] = collections.Counter()
    false_refusals: list[str] = []
    off_by_op: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            if args.only and not any(s in case.name for s in args.only):
                continue
            path = Path(tmp) / f"{case.name}.onnx"
            onnx.save(case.model, str(path))
            try:
                model = load_model(path)
                dims = {d: 2 for d in model.symbolic_dims}
                own = _tensor_inputs(case)
                if own is not None:  # the run's own shapes, and its small integer inputs' values (--shape, --value)
                    own = {k: v for k, v in own.items() if k in model.inputs and model.inputs[k].kind == "tensor"}
                    inputs = {"shapes": {k: v.shape for k, v in own.items()} | _sequence_shapes(case, model),
                              "values": {k: tuple(int(x) for x in v.reshape(-1)) for k, v in own.items()
                                         if v.dtype.kind in "iub" and 0 < v.size <= 64}}
                else:
                    inputs = {"dims": dims}
                predicted = graphmem.analyze(path, **inputs).activations.peak_bytes
            except GraphmemError as exc:
                refusal = f"{type(exc).__name__}: {_first_line(exc)}"
                verdict = ort_verdict(path, _raw_inputs(case))
                if verdict == "runs" and any(p in refusal for p in DELIBERATE):
                    key = "rejected by graphmem on purpose, onnxruntime runs it (documented)"
                elif verdict == "runs":
                    key = "rejected by graphmem, onnxruntime runs it (FALSE REFUSAL)"
                    false_refusals.append(f"{case.name:<60} {refusal[:150]}")
                elif verdict.startswith("no session"):
                    key = "rejected by graphmem, onnxruntime cannot load it either"
                else:
                    key = "rejected by graphmem, onnxruntime loads it but cannot run the case"
                counts[key] += 1
                if args.rejected:
                    print(f"REJECTED {case.name:<56} graphmem: {refusal[:110]} | ort: {verdict[:150]}")
                continue
            feeds = _raw_inputs(case)  # the case's own inputs (arrays, sequences), else random ones
            if feeds is None:
                try:
                    feeds = make_feeds(case.model, dims)
                except GraphmemError:
                    feeds = {}
            try:
                measured = measure(str(path), feeds, runs=1).runs[0].requested_peak
            except GraphmemError:
                verdict = ort_verdict(path, _raw_inputs(case))
                if args.rejected:
                    print(f"ACCEPTED {case.name:<56} graphmem: {predicted:,} B | ort: {verdict[:150]}")
                if verdict.startswith("no session"):
                    counts["accepted by graphmem, onnxruntime cannot load it"] += 1
                else:
                    counts["accepted by graphmem, onnxruntime loads it but cannot run the case"] += 1
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
    if false_refusals:
        print(f"\nfalse refusals ({len(false_refusals)}): graphmem refuses, onnxruntime runs")
        for line in false_refusals:
            print(f"  {line}")
    return 1 if counts["off"] or false_refusals else 0


if __name__ == "__main__":
    sys.exit(main())
