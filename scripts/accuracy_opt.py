"""Predicted vs measured activation peak of onnxruntime's *optimized* sessions (CPU).

For every model of the corpus (``scripts/corpus.py``) and each dim binding (batch 1 and 8, other
dims 128), analyses the graph onnxruntime runs at ``--level`` (the file
:func:`graphmem.ort.optimized.optimized_model` makes it write) and measures a fresh session of
the *original* file at the same level (CPU EP, one intra-op thread, run 1):

* ``predicted`` / ``measured``: requested activation bytes (``activations.peak_bytes`` vs the
  profiler's ``mem_bytes_requested_in_use`` peak), and their ratio;
* ``pred+scr`` / ``in-use``: the scratch-inclusive prediction (:mod:`graphmem.ort.scratch`) vs the
  profiler's in-use high-water mark (``RunMemory.in_use_peak_bytes``), and their ratio;
* ``unres``: tensors of the optimized graph whose shape graphmem could not resolve.

    python scripts/accuracy_opt.py [--level all|extended|basic] [--only NAME ...] [--batches 1,8]
                                   [--nodes] [--pytorch-converted]

``--nodes`` prints, per model, the first nodes whose running totals differ (the optimized file
is written in the session's execution order, so profile events are matched by position).

The arena's in-use figure depends on where glibc puts the arena's regions: a process's first
session gets them from mmap (each below the previous); once freed mmap chunks have raised glibc's
dynamic mmap threshold, later sessions get them from the heap, which changes which of two
equal-sized free chunks the arena picks (on the corpus only tiny_bert at batch 8, graph-opt basic,
moves: 6.03 MB vs 4.98 MB). So every measurement runs in a fresh interpreter, as a process's first
session, with ``MALLOC_MMAP_THRESHOLD_=131072`` pinning the threshold: the placement
:class:`graphmem.ort.arena.BfcArena` models.

Exit status 1 when any requested peak is off by more than 5 % or any scratch-inclusive peak by
more than 10 %, a tensor is unresolved, or an analysis fails; models onnxruntime cannot load or
run (old opsets, feeds its kernels reject) are skipped and listed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402
import onnx  # noqa: E402

import graphmem  # noqa: E402
from graphmem.analysis import analyze_graph_opt  # noqa: E402
from graphmem.errors import GraphmemError  # noqa: E402
from graphmem.analysis.scratch import scratch_profile
from graphmem.ort.scratch import ScratchProfile  # noqa: E402
from graphmem.verify import RunMemory, make_feeds, measure  # noqa: E402
from graphmem.ort.optimized import optimized_model  # noqa: E402

TOLERANCE = 0.05
SCRATCH_TOLERANCE = 0.10


def analyze_optimized(path: Path, level: str, dims: dict[str, int]) -> tuple[graphmem.Analysis, ScratchProfile]:
    """:func:`graphmem.analysis.analyze_graph_opt` of ``path`` at ``level`` (what ``graphmem peak
    --graph-opt`` and ``verify`` report) and its scratch profile.

    It analyses the file onnxruntime writes after optimizing, as onnxruntime runs it, with the
    static shapes its session kept for the tensors the optimizers left in place
    (:func:`graphmem.analysis.graph_opt.with_session_shapes`), and:

    * the execution order is the file's order: onnxruntime writes the optimized graph in its
      session's execution order (``Graph::ToGraphProto`` walks
      ``GraphViewer::GetNodesInTopologicalOrder``), but renumbered, so the reverse DFS of
      :func:`graphmem.ort.order.ort_order` over the file is not that order;
    * the NCHWc block sizes the file's padded filters allow
      (:func:`graphmem.ort.contrib_shapes.nchwc_block_sizes`) reach ReorderInput's shape rule.
    """
    result = analyze_graph_opt(path, level, dims=dims)
    return result, scratch_profile(result)


#: glibc's default mmap threshold; setting it explicitly disables the dynamic threshold.
MMAP_THRESHOLD = "131072"


def measure_fresh(path: Path, feeds: dict, level: str) -> RunMemory:  # type: ignore[type-arg]
    """Run 1 of a session of ``path`` at ``level``, made in a fresh interpreter (module doc)."""
    os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", MMAP_THRESHOLD)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        job = pool.submit(measure, str(path), feeds, graph_opt=level, threads=1, runs=1)
        return job.result().runs[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--level", default="all", choices=("basic", "extended", "all"))
    ap.add_argument("--only", nargs="*", default=None, help="substrings of model names to keep")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--nodes", action="store_true", help="show the first diverging nodes")
    ap.add_argument(
        "--pytorch-converted", action="store_true", help="also the onnx wheel's pytorch-converted models"
    )
    args = ap.parse_args()
    batches = tuple(int(b) for b in args.batches.split(","))
    paths, missing = corpus.select(pytorch_converted=args.pytorch_converted, only=args.only)
    print(f"graph-opt {args.level}")
    print(
        f"{'model':<24} {'dims':<18} {'predicted':>12} {'measured':>12} {'ratio':>7} "
        f"{'pred+scr':>12} {'in-use':>12} {'ratio':>7} {'unres':>5} {'analyze':>8}"
    )
    worst = worst_scratch = 0.0
    rows = unresolved = 0
    failed: list[str] = []
    skipped: list[str] = []
    unmodelled: set[str] = set()
    for path in paths:
        with tempfile.TemporaryDirectory(prefix="graphmem-accuracy-opt-") as tmp:
            try:
                optimized = optimized_model(path, args.level, Path(tmp))
                proto = onnx.load(str(path), load_external_data=False)
                # the tiny transformers in models/ have 64 positions (as in scripts/accuracy.py)
                bindings = corpus.bindings(path, batches, seq=64 if path.parent == corpus.MODELS else 128)
            except GraphmemError as exc:
                skipped.append(corpus.name(path))
                print(f"{corpus.name(path)[:24]:<24} skipped: onnxruntime cannot load it ({str(exc)[:70]}…)", flush=True)
                continue
            for dims in bindings:
                try:
                    t0 = time.perf_counter()
                    result, profile = analyze_optimized(path, args.level, dims)
                    elapsed = time.perf_counter() - t0
                except GraphmemError as exc:
                    failed.append(corpus.name(path))
                    print(f"{corpus.name(path)[:24]:<24} analysis failed: {str(exc)[:90]}", flush=True)
                    continue
                try:
                    run = measure_fresh(path, make_feeds(proto, dims, seed=0), args.level)
                except GraphmemError as exc:
                    skipped.append(corpus.name(path))
                    print(f"{corpus.name(path)[:24]:<24} skipped: onnxruntime cannot run it ({str(exc)[:70]}…)", flush=True)
                    continue
                p, m = result.activations.peak_bytes, run.requested_peak
                ps, ms = profile.peak_bytes, run.in_use_peak_bytes
                ratio = p / m if m else float("nan")
                sratio = ps / ms if ms else float("nan")
                worst = max(worst, abs(ratio - 1))
                worst_scratch = max(worst_scratch, abs(sratio - 1))
                unresolved += len(result.shapes.unresolved)
                unmodelled.update(profile.unmodelled)
                rows += 1
                dim_text = ",".join(f"{k}={v}" for k, v in dims.items()) or "static"
                print(
                    f"{corpus.name(path)[:24]:<24} {dim_text[:18]:<18} {p:>12,} {m:>12,} {ratio:>7.4f} "
                    f"{ps:>12,} {ms:>12,} {sratio:>7.4f} {len(result.shapes.unresolved):>5} {elapsed:>7.2f}s",
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
    if unmodelled:
        print(f"kernels without a scratch rule (counted 0): {', '.join(sorted(unmodelled))}")
    if skipped:
        print(f"skipped (onnxruntime cannot run them): {', '.join(dict.fromkeys(skipped))}")
    if failed:
        print(f"analysis failed: {', '.join(dict.fromkeys(failed))}")
    ok = worst <= TOLERANCE and worst_scratch <= SCRATCH_TOLERANCE and not unresolved and not missing and not failed
    return 0 if ok else 1


def _show_divergence(result, run, profile, limit: int = 8) -> None:  # type: ignore[no-untyped-def]
    """Nodes whose predicted running total (or scratch-inclusive high) differs from the profile."""
    base = run.primary.session_baseline
    in_use_base = run.primary.in_use_session_baseline
    ops_pred = [result.graph.node(nid).op_type for nid in result.order]
    ops_meas = [n.op_type for n in run.nodes]
    if ops_pred != ops_meas:
        first = next((i for i, (a, b) in enumerate(zip(ops_pred, ops_meas)) if a != b), None)
        print(f"    execution order differs (first at step {first}; {len(ops_pred)} vs {len(ops_meas)} nodes)")
        return
    shown = 0
    for step, ((name, held), n) in enumerate(zip(result.activations.timeline, run.nodes)):
        got = n.requested_in_use - base
        in_use = n.in_use - in_use_base
        high = n.in_use_peak - in_use_base
        if got != held or in_use != profile.in_use[step] or high != profile.high[step]:
            print(
                f"    step {step:>4} {name[:36]:<36} {n.op_type:<18} held {held:>11,}/{got:>11,} "
                f"in-use {profile.in_use[step]:>11,}/{in_use:>11,} high {profile.high[step]:>11,}/{high:>11,} "
                f"scratch {profile.per_step[step]:>9,}"
            )
            shown += 1
            if shown >= limit:
                break


if __name__ == "__main__":
    sys.exit(main())
