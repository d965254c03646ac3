"""Which kernels of the float16 and quantized corpus take arena scratch, measured node by node.

For every model ``scripts/make_type_models.py`` made, at graph-opt none and all, each node whose op
has no rule in graphmem's scratch table (``graphmem/ort/scratch.py``) is run alone (ORT_DISABLE_ALL,
one thread, the node's batch-1 input shapes from graphmem's analysis, its weights copied from the
file, other inputs fed) and the arena's in-use high-water of run 1 is compared with graphmem's
replay of the same one-node graph through its BFC arena with that kernel's scratch counted 0
(``graphmem.analysis.scratch.scratch_profile``): equal means the kernel took no scratch. One line
per op type: how many distinct nodes were run, and the smallest and largest difference.

    python scripts/probe_scratch.py [--only SUBSTR ...]
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

DIR = Path("/work/cache/types/models")


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
    args = ap.parse_args()
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
                    if single is None:
                        continue
                    with tempfile.TemporaryDirectory() as work:
                        file = Path(work) / "one.onnx"
                        onnx.save(single, str(file))
                        try:
                            run = measure(str(file), make_feeds(single, {}, seed=0), graph_opt="none", threads=1, runs=1).runs[0]
                        except GraphmemError:
                            continue
                        try:  # the same node through graphmem's arena replay, its scratch counted 0
                            alone = scratch_profile(graphmem.analyze(file)).peak_bytes
                        except GraphmemError:
                            continue
                    seen[sig[0]].append(run.in_use_peak_bytes - alone)
    print(f"{'op':<40} {'nodes':>5} {'smallest':>12} {'largest':>12}")
    for op, scratch in sorted(seen.items()):
        print(f"{op:<40} {len(scratch):>5} {min(scratch):>12,} {max(scratch):>12,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
