"""Which kernels of the control-flow corpus (top graphs and If/Loop/Scan bodies) take arena
scratch, measured node by node.

For every model ``scripts/accuracy_controlflow.py`` measures (the onnx.helper cases, the
TorchScript exports when present, the real-world corpus' control-flow models; first binding,
graph-opt none), each node, in the top graph or in a body, whose op has no rule in graphmem's
scratch table (``graphmem/ort/scratch.py``) is run alone: its inputs typed as graphmem's analysis
types them in that graph or body, small integer constants (axes, shapes) copied, every other input
fed; one thread, ORT_DISABLE_ALL. The arena's in-use high-water of run 1 is compared with
graphmem's replay of the same one-node graph through its BFC arena with that kernel's scratch
counted 0 (``graphmem.analysis.scratch.scratch_profile``): equal means the kernel took no scratch.
One line per op type: how many distinct nodes were run, the smallest and largest difference.

    python scripts/probes/probe_scratch_controlflow.py [--only SUBSTR ...]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # scripts/: accuracy_controlflow
sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/probes/: probe_scratch

import graphmem  # noqa: E402
from accuracy_controlflow import helper_models, realworld_models, torch_models  # noqa: E402
from probe_scratch import print_scratch_table, scratch_alone  # noqa: E402
from graphmem.errors import GraphmemError  # noqa: E402
from graphmem.model.subgraphs import is_control_flow  # noqa: E402
from graphmem.model.types import is_concrete  # noqa: E402
from graphmem.optable import op_key  # noqa: E402
from graphmem.ort.scratch import SCRATCH_RULES  # noqa: E402


def graphs(a):  # type: ignore[no-untyped-def]
    """(graph, order, types) of the top graph and of every body that ran."""
    yield a.graph, a.order, a.types

    def walk(bodies):  # type: ignore[no-untyped-def]
        for layers in bodies.values():
            for body in layers:
                yield body.graph, body.order, body.types
                yield from walk(body.nested)

    yield from walk(a.bodies)


def one_node(node: onnx.NodeProto, graph, types) -> onnx.ModelProto | None:  # type: ignore[no-untyped-def]
    """``node`` alone: small integer constants of its graph copied, other inputs graph inputs."""
    model = graph.model
    inputs, inits, seen = [], [], set()
    for x in node.input:
        if not x or x in seen:
            continue
        seen.add(x)
        known = model.values.get(x) if x in model.weights else None
        if known is not None:
            inits.append(numpy_helper.from_array(np.asarray(known), x))
            continue
        t = types.get(x)
        if t is None or t.kind != "tensor" or not is_concrete(t.shape):
            return None
        inputs.append(helper.make_tensor_value_info(x, t.dtype, list(t.shape)))
    outputs = []
    for y in node.output:
        if not y:
            continue
        t = types.get(y)
        if t is None or t.kind != "tensor" or not is_concrete(t.shape):
            return None
        outputs.append(helper.make_tensor_value_info(y, t.dtype, list(t.shape)))
    g = helper.make_graph([node], "one", inputs, outputs, inits)
    opsets = [helper.make_opsetid(d, v) for d, v in model.opsets.items()]
    return helper.make_model(g, opset_imports=opsets, ir_version=model.ir_version)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    seen: dict[str, list[int]] = defaultdict(list)
    done: set[tuple] = set()  # type: ignore[type-arg]
    for entry in helper_models() + torch_models() + realworld_models():
        if args.only and not any(s in entry["name"] for s in args.only):
            continue
        binding = entry["bindings"][0]
        try:
            a = graphmem.analyze(entry["path"], dims=binding.get("dims", {}), shapes=binding.get("shapes") or None,
                                 values={k: tuple(v) for k, v in binding.get("values", {}).items()})
        except GraphmemError:
            continue
        for graph, order, types in graphs(a):
            for nid in order:
                node = graph.node(nid)
                key = op_key(node)
                if is_control_flow(node) or SCRATCH_RULES.lookup(*key) is not None:
                    continue
                sig = (f"{key[0]}:{key[1]}", tuple(str(types.get(x)) for x in node.input))
                if sig in done:
                    continue
                done.add(sig)
                single = one_node(node, graph, types)
                scratch = None if single is None else scratch_alone(single)
                if scratch is not None:
                    seen[sig[0]].append(scratch)
    print_scratch_table(seen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
