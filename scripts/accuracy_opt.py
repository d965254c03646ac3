"""Predicted vs measured activation peak of onnxruntime's *optimized* sessions (CPU).

For every model of the corpus (``scripts/corpus.py``) and each dim binding (batch 1 and 8, other
dims 128), analyses the graph onnxruntime runs at ``--level`` (the file
:func:`graphmem.verify.optimized.optimized_model` makes it write) and measures a fresh session of
the *original* file at the same level (CPU EP, one intra-op thread, run 1):

* ``predicted`` / ``measured``: requested activation bytes (``activations.peak_bytes`` vs the
  profiler's ``mem_bytes_requested_in_use`` peak), and their ratio;
* ``pred+scr`` / ``in-use``: the scratch-inclusive prediction (:mod:`graphmem.scratch`) vs the
  profiler's in-use high-water mark (``RunMemory.in_use_peak_bytes``), and their ratio;
* ``unres``: tensors of the optimized graph whose shape graphmem could not resolve.

    python scripts/accuracy_opt.py [--level all|extended|basic] [--only NAME ...] [--batches 1,8]
                                   [--nodes]

``--nodes`` prints, per model, the first nodes whose running totals differ (the optimized file
keeps onnxruntime's node names, so the profile's events can be matched by name).
Exit status 1 when any requested peak is off by more than 5 % or any scratch-inclusive peak by
more than 10 %, or a tensor is unresolved.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

import graphmem  # noqa: E402
from graphmem.scratch import scratch_profile  # noqa: E402
from graphmem.verify import make_feeds, measure  # noqa: E402
from graphmem.verify.optimized import optimized_model  # noqa: E402

TOLERANCE = 0.05
SCRATCH_TOLERANCE = 0.10


def analyze_optimized(path: Path, dims: dict[str, int]) -> graphmem.Analysis:
    """:func:`graphmem.analyze` of a file onnxruntime wrote after optimizing, in the file's order.

    onnxruntime writes the optimized graph in its session's execution order
    (``Graph::ToGraphProto`` walks ``GraphViewer::GetNodesInTopologicalOrder``), but the
    renumbered file no longer gives its reverse DFS the session's node indices: the file's order
    is the execution order, ``ort_order`` of the file is not. Until ``analyze`` takes an order
    argument (proposed core change), the file order is substituted here.
    """
    import inspect

    import graphmem.analysis as analysis
    from graphmem.order import file_order

    if "order" in inspect.signature(graphmem.analyze).parameters:
        return graphmem.analyze(path, dims=dims, order="file")  # type: ignore[call-arg]
    saved = analysis.ort_order
    analysis.ort_order = file_order
    try:
        return graphmem.analyze(path, dims=dims)
    finally:
        analysis.ort_order = saved


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--level", default="all", choices=("basic", "extended", "all"))
    ap.add_argument("--only", nargs="*", default=None, help="substrings of model names to keep")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--nodes", action="store_true", help="show the first diverging nodes")
    args = ap.parse_args()
    batches = tuple(int(b) for b in args.batches.split(","))
    exported, missing = corpus.exported_models()
    paths = corpus.light_models() + corpus.committed_models() + exported
    if args.only:
        paths = [p for p in paths if any(s in p.name for s in args.only)]
    print(f"graph-opt {args.level}")
    print(
        f"{'model':<24} {'dims':<18} {'predicted':>12} {'measured':>12} {'ratio':>7} "
        f"{'pred+scr':>12} {'in-use':>12} {'ratio':>7} {'unres':>5} {'analyze':>8}"
    )
    worst = worst_scratch = 0.0
    rows = unresolved = 0
    for path in paths:
        import onnx

        proto = onnx.load(str(path), load_external_data=False)
        with tempfile.TemporaryDirectory(prefix="graphmem-accuracy-opt-") as tmp:
            optimized = optimized_model(path, args.level, Path(tmp))
            for dims in corpus.bindings(path, batches):
                t0 = time.perf_counter()
                result = analyze_optimized(optimized, dims)
                profile = scratch_profile(result)
                elapsed = time.perf_counter() - t0
                feeds = make_feeds(proto, dims, seed=0)
                run = measure(str(path), feeds, graph_opt=args.level, threads=1, runs=1).runs[0]
                p, m = result.activations.peak_bytes, run.requested_peak
                ps, ms = profile.peak_bytes, run.in_use_peak_bytes
                ratio = p / m if m else float("nan")
                sratio = ps / ms if ms else float("nan")
                worst = max(worst, abs(ratio - 1))
                worst_scratch = max(worst_scratch, abs(sratio - 1))
                n_unres = len(result.shapes.unresolved)
                unresolved += n_unres
                rows += 1
                dim_text = ",".join(f"{k}={v}" for k, v in dims.items()) or "static"
                print(
                    f"{path.stem[:24]:<24} {dim_text[:18]:<18} {p:>12,} {m:>12,} {ratio:>7.4f} "
                    f"{ps:>12,} {ms:>12,} {sratio:>7.4f} {n_unres:>5} {elapsed:>7.2f}s",
                    flush=True,
                )
                if args.nodes:
                    _show_divergence(result, run, profile)
    for name in missing:
        print(f"{name:<24} (not exported: run python scripts/export_corpus.py)")
    print(
        f"\n{rows} measurements at graph-opt {args.level}: worst requested deviation "
        f"{worst * 100:.3f}% (bar {TOLERANCE * 100:.0f}%), worst scratch-inclusive deviation "
        f"{worst_scratch * 100:.3f}% (bar {SCRATCH_TOLERANCE * 100:.0f}%), {unresolved} unresolved tensors"
    )
    ok = worst <= TOLERANCE and worst_scratch <= SCRATCH_TOLERANCE and not unresolved and not missing
    return 0 if ok else 1


def _show_divergence(result, run, profile, limit: int = 8) -> None:  # type: ignore[no-untyped-def]
    """Nodes whose predicted running total (or scratch-inclusive high) differs from the profile."""
    base = run.primary.session_baseline
    in_use_base = run.primary.in_use_session_baseline
    measured = {n.name: n for n in run.nodes}
    order_pred = [name for name, _ in result.activations.timeline]
    order_meas = [n.name for n in run.nodes]
    if order_pred != order_meas:
        first = next((i for i, (a, b) in enumerate(zip(order_pred, order_meas)) if a != b), None)
        print(f"    execution order differs (first at step {first}; {len(order_pred)} vs {len(order_meas)} nodes)")
    shown = 0
    prev_peak = 0
    for step, (name, held) in enumerate(result.activations.timeline):
        n = measured.get(name)
        if n is None:
            continue
        got = n.requested_in_use - base
        high = n.in_use_peak - in_use_base
        scr = profile.per_step[step]
        if got != held or (high > prev_peak and abs(high - profile.high[step]) > 0):
            print(
                f"    step {step:>4} {name[:40]:<40} {n.op_type:<22} held {held:>11,} meas {got:>11,} "
                f"scratch {scr:>10,} high {profile.high[step]:>11,} meas-high {high:>11,}"
            )
            shown += 1
            if shown >= limit:
                break
        prev_peak = max(prev_peak, high)


if __name__ == "__main__":
    sys.exit(main())
