"""Which kernels of the float16 and quantized corpus take arena scratch, measured node by node.

For every model ``scripts/make_type_models.py`` made, at graph-opt none and all, each node whose op
has no rule in graphmem's scratch table (``graphmem/ort/scratch.py``) is run alone (ORT_DISABLE_ALL,
one thread, the node's batch-1 input shapes from graphmem's analysis, its weights copied from the
file, other inputs fed) and the arena's in-use high-water of run 1 is compared with graphmem's
replay of the same one-node graph through its BFC arena with that kernel's scratch counted 0
(``graphmem.analysis.scratch.scratch_profile``): equal means the kernel took no scratch. One line
per op type: how many distinct nodes were run, and the smallest and largest difference.

``--check`` runs the nodes whose op *has* a rule too, and compares the measured high-water mark
with graphmem's replay *with* the rule's scratch and the arena chunks prepacked weights hold
before run 1: one line per op type with how many nodes match byte for byte and the worst
difference (measured - predicted), and on how many nodes the in-use baseline differs (it also
counts bytes reserved outside the arena's regions — initializers, packed GEMM weights — which
graphmem does not model: they never share a chunk with a tensor). The profiler's mark is the
session's, so a PrePack temporary above the run's high counts
(``ScratchProfile.prepack_high_bytes``). Exit status 1 when a modelled node differs.

    python scripts/probes/probe_scratch.py [--only SUBSTR ...] [--check] [--ops OP ...] [--show]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import onnx
from onnx import helper, numpy_helper

import graphmem
from graphmem.analysis import analyze_graph_opt
from graphmem.analysis.scratch import scratch_profile
from graphmem.errors import GraphmemError
from graphmem.model.types import is_concrete
from graphmem.optable import op_key
from graphmem.ort.optimized import optimized_model, temporary_dir
from graphmem.ort.scratch import SCRATCH_RULES
from graphmem.verify import make_feeds, measure

DIR = Path(__file__).resolve().parents[2] / ".cache" / "types" / "models"


def print_scratch_table(seen: dict[str, list[int]]) -> None:
    """One row per op: how many distinct nodes were measured, their smallest and largest scratch."""
    print(f"{'op':<40} {'nodes':>5} {'smallest':>12} {'largest':>12}")
    for op, scratch in sorted(seen.items()):
        print(f"{op:<40} {len(scratch):>5} {min(scratch):>12,} {max(scratch):>12,}")


def scratch_alone(single: onnx.ModelProto) -> int | None:
    """The scratch of the one node of ``single``: its measured in-use high-water minus graphmem's
    arena replay of it with scratch counted 0; None when either side refuses it."""
    with tempfile.TemporaryDirectory() as work:
        file = Path(work) / "one.onnx"
        onnx.save(single, str(file))
        try:
            run = measure(str(file), make_feeds(single, {}, seed=0), graph_opt="none", threads=1, runs=1).runs[0]
            alone = scratch_profile(graphmem.analyze(file)).peak_bytes
        except GraphmemError:
            return None
    return run.in_use_peak_bytes - alone


def one_node(node: onnx.NodeProto, source: onnx.ModelProto, types) -> onnx.ModelProto | None:  # type: ignore[no-untyped-def]
    """``node`` alone: its initializers copied, its other inputs graph inputs of their types."""
    inits = {t.name: t for t in source.graph.initializer}
    graph_inputs, initializers = [], []
    for x in node.input:
        if not x or x in {i.name for i in graph_inputs} | {t.name for t in initializers}:
            continue
        if x in inits:
            initializers.append(inits[x])
            continue
        t = types.get(x)
        if t is None or not is_concrete(t.shape):
            return None
        graph_inputs.append(helper.make_tensor_value_info(x, t.dtype, list(t.shape)))
    outputs = []
    for y in node.output:
        t = types.get(y) if y else None
        if y and (t is None or not is_concrete(t.shape)):
            return None
        if y:
            outputs.append(helper.make_tensor_value_info(y, t.dtype, list(t.shape)))
    graph = helper.make_graph([node], "one", graph_inputs, outputs, initializers)
    return helper.make_model(graph, opset_imports=source.opset_import, ir_version=source.ir_version)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--check", action="store_true", help="also nodes with a rule, against the rule")
    ap.add_argument("--ops", nargs="*", default=None, help="op types to run (default: all)")
    ap.add_argument("--show", action="store_true", help="print every node that differs")
    ap.add_argument("--levels", default="none,all")
    args = ap.parse_args()
    if args.check:
        return check(args)
    seen: dict[str, list[int]] = defaultdict(list)
    for path in sorted(DIR.glob("*.onnx")):
        if args.only and not any(s in path.name for s in args.only):
            continue
        dims = {"batch": 1, "seq": 128} if path.name.startswith("bert") else {"batch": 1}
        for level in ("none", "all"):
            with temporary_dir() as tmp:
                try:
                    written = optimized_model(path, level, Path(tmp), always=True)
                    result = analyze_graph_opt(path, level, dims=dims)
                except GraphmemError:
                    continue
                source = onnx.load(str(written))
                done: set[tuple[str, tuple]] = set()
                for node in source.graph.node:
                    key = op_key(node)
                    if SCRATCH_RULES.lookup(*key) is not None:
                        continue
                    sig = (f"{key[0]}:{key[1]}", tuple(str(result.types.get(x)) for x in node.input))
                    if sig in done:
                        continue
                    done.add(sig)
                    single = one_node(node, source, result.types)
                    scratch = None if single is None else scratch_alone(single)
                    if scratch is not None:
                        seen[sig[0]].append(scratch)
    print_scratch_table(seen)
    return 0


def _distinct_nodes(args):  # type: ignore[no-untyped-def]
    """(signature, one-node model, its type) for each distinct node of the corpus."""
    for path in sorted(DIR.glob("*.onnx")):
        if args.only and not any(s in path.name for s in args.only):
            continue
        dims = {"batch": 1, "seq": 128} if path.name.startswith("bert") else {"batch": 1}
        for level in args.levels.split(","):
            with temporary_dir() as tmp:
                try:
                    written = optimized_model(path, level, Path(tmp), always=True)
                    result = analyze_graph_opt(path, level, dims=dims)
                except GraphmemError:
                    continue
                source = onnx.load(str(written))
                for node in source.graph.node:
                    key = op_key(node)
                    if args.ops and node.op_type not in args.ops:
                        continue
                    attrs = tuple(sorted((a.name, str(helper.get_attribute_value(a))) for a in node.attribute))
                    inits = tuple(x in {t.name for t in source.graph.initializer} for x in node.input)
                    sig = (f"{key[0]}:{key[1]}", tuple(str(result.types.get(x)) for x in node.input), attrs, inits)
                    yield sig, node, source, result.types, f"{path.name}@{level}"


def check(args) -> int:  # type: ignore[no-untyped-def]
    """``--check``: measured in-use high-water and baseline of each node alone vs graphmem's."""
    done: set = set()
    rows: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for sig, node, source, types, where in _distinct_nodes(args):
        if sig in done:
            continue
        done.add(sig)
        single = one_node(node, source, types)
        if single is None:
            continue
        with tempfile.TemporaryDirectory() as work:
            file = Path(work) / "one.onnx"
            onnx.save(single, str(file))
            try:
                run = measure(str(file), make_feeds(single, {}, seed=0), graph_opt="none", threads=1, runs=1).runs[0]
                profile = scratch_profile(graphmem.analyze(file))
            except GraphmemError:
                continue
        if any(o.shape is not None and types.get(o.name) is not None and tuple(types[o.name].shape or ()) != o.shape
               for o in run.outputs):
            continue  # the random feeds of its shape inputs made other shapes than the model's
        base = run.primary.in_use_session_baseline
        # the profiler's high-water mark is the session's: PrePack temporaries count when higher
        diff = run.in_use_peak_bytes - max(profile.peak_bytes, profile.prepack_high_bytes)
        rows[sig[0]].append((diff, base - profile.baseline_bytes, where))
        if args.show and diff:
            shapes = ", ".join(sig[1])
            print(f"  {sig[0]:<32} {diff:>+11,} base {base - profile.baseline_bytes:>+9,}  {node.name[:40]} [{shapes[:160]}] {where}", flush=True)
    print(f"{'op':<40} {'outcome':<10} {'nodes':>5} {'exact':>5} {'worst diff':>12} {'base diffs':>10}")
    bad = 0
    for op, found in sorted(rows.items()):
        domain, _, name = op.partition(":")
        entry = SCRATCH_RULES.lookup(domain, name)
        outcome = entry.outcome if entry is not None else "unmodelled"
        exact = sum(1 for d, _, _ in found if d == 0)
        worst = max((d for d, _, _ in found), key=abs)
        bases = sum(1 for _, b, _ in found if b)
        if entry is not None and exact < len(found):
            bad += 1
        print(f"{op:<40} {outcome:<10} {len(found):>5} {exact:>5} {worst:>+12,} {bases:>10}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
