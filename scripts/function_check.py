"""Static function expansion vs the graph onnxruntime builds, node for node and byte for byte.

For every onnx node test case (``onnx.backend.test.case.node``, as ``accuracy_nodes.py`` uses)
whose model holds an op onnxruntime runs as a function body (``RUNS_AS_FUNCTION``), onnxruntime
1.31 writes the graph it built at ORT_DISABLE_ALL (``optimized_model_filepath``: inlined, its
execution order); graphmem expands the same file statically (``graphmem.ort.functions``), applies the
duplicate-Cast remover, orders it as onnxruntime does and compares:

* nodes, in execution order: name, op type, domain, inputs, outputs, and the attributes as
  serialized bytes (onnxruntime writes its attribute map unordered, so compared as a set; both
  sides with schema defaults filled in, as ``Graph::Resolve`` does);
* initializers: the same names, and the same tensors (dtype, dims, bytes) for those onnxruntime
  writes inline;
* graphmem's predicted peak of the static expansion (``analyze_model`` of the expanded model) vs
  its peak of onnxruntime's written graph (analysed in file order).

    python scripts/function_check.py [--only SUBSTRING ...] [--verbose]

Prints one row per op case and a table per op; exit 1 on any difference.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import defs, numpy_helper

import graphmem
from graphmem.analysis import analyze_model
from graphmem.errors import GraphmemError
from graphmem.model.graph import build_graph
from graphmem.model.loading import load_model
from graphmem.ort.order import ort_order
from graphmem.ort.functions import inline_functions, with_defaults
from graphmem.ort.rewrites import remove_duplicate_casts
from graphmem.ort.rules import runs_as_function
from graphmem.shapes.infer import ORT_STATIC
from graphmem.ort.inference import infer_types
from graphmem.ort.optimized import optimized_model


def static_types(model):  # type: ignore[no-untyped-def]
    g = build_graph(model)
    return infer_types(g, ort_order(g), view=ORT_STATIC).types


def _attrs(node: onnx.NodeProto, opset: int) -> frozenset:  # type: ignore[type-arg]
    try:
        node = with_defaults(node, defs.get_schema(node.op_type, opset, node.domain))
    except defs.SchemaError:
        pass
    return frozenset(_attr(a, opset) for a in node.attribute)


def _attr(a: onnx.AttributeProto, opset: int):  # type: ignore[no-untyped-def]
    """An attribute as bytes; a subgraph as its inputs, outputs and the set of its nodes (a body's
    node order is onnxruntime's topological order there, which graphmem does not plan)."""
    if a.type == onnx.AttributeProto.GRAPH:
        return (a.name, _graph(a.g, opset))
    if a.type == onnx.AttributeProto.GRAPHS:
        return (a.name, tuple(_graph(g, opset) for g in a.graphs))
    return a.SerializeToString(deterministic=True)


def _graph(g: onnx.GraphProto, opset: int):  # type: ignore[no-untyped-def]
    return (
        tuple(v.name for v in g.input),
        tuple(v.name for v in g.output),
        frozenset(_key(n, opset) for n in g.node),
        frozenset(t.name for t in g.initializer),
    )


def _key(node: onnx.NodeProto, opset: int):  # type: ignore[no-untyped-def]
    return (node.name, node.op_type, node.domain, tuple(node.input), tuple(node.output), _attrs(node, opset))


FP16 = "not emulated: float16 casts"
UNTYPED = "not emulated: untyped inputs"
IN_BODY = "not emulated: function in a body"
NO_PEAK = "identical nodes; graphmem rejects the input"


def opset_of(model) -> int:  # type: ignore[no-untyped-def]
    return model.opset


def _subgraphs(node: onnx.NodeProto):  # type: ignore[no-untyped-def]
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.g
        elif a.type == onnx.AttributeProto.GRAPHS:
            yield from a.graphs


def _body_has_function(node: onnx.NodeProto, opset: int) -> bool:
    for g in _subgraphs(node):
        for n in g.node:
            if runs_as_function(n.domain, n.op_type, opset) or _body_has_function(n, opset):
                return True
    return False


def _outer_names(node: onnx.NodeProto) -> set[str]:
    """Names a node's bodies read (outer-scope values count as used, as for onnxruntime)."""
    out: set[str] = set()
    for g in _subgraphs(node):
        for n in g.node:
            out.update(n.input)
            out |= _outer_names(n)
    return out


def sequence_shapes(case) -> dict:  # type: ignore[no-untyped-def]
    """The element shapes of the case's sequence inputs from its own data (``--shape s=[…]``)."""
    if not case.data_sets:
        return {}
    inputs = case.data_sets[0][0]
    graph_inputs = list(case.model.graph.input)
    if len(inputs) != len(graph_inputs):
        return {}
    return {i.name: tuple(tuple(numpy_helper.to_array(e).shape if isinstance(e, onnx.TensorProto) else np.asarray(e).shape)
                          for e in x)
            for i, x in zip(graph_inputs, inputs)
            if i.type.HasField("sequence_type") and isinstance(x, (list, tuple))}


def compare(path: Path, tmp: Path, shapes: dict | None = None) -> tuple[list[str], str]:  # type: ignore[type-arg]
    """Differences between the static expansion and onnxruntime's graph (empty: identical), or
    one of the categories graphmem does not emulate (FP16, UNTYPED) as the second item;
    ``shapes`` binds the case's sequence inputs."""
    written = optimized_model(path, "none", tmp, always=True)  # raises when onnxruntime cannot build it
    model = load_model(path)
    result = inline_functions(model, static_types)
    if result.missing:  # a context-dependent body needs types graphmem does not infer (If outputs)
        return [f"no body built for {', '.join(result.missing)}"], UNTYPED
    expanded = remove_duplicate_casts(result.model, static_types(result.model))
    g = build_graph(expanded)
    ours = [g.node(nid) for nid in ort_order(g)]
    theirs_model = onnx.load(str(written), load_external_data=True)
    theirs = list(theirs_model.graph.node)
    if any(_body_has_function(n, opset_of(model)) for n in result.model.nodes):
        # onnxruntime also inlines function ops inside If/Loop/Scan bodies (InlineNodes recurses
        # into subgraphs first); graphmem's expansion leaves them whole: not emulated
        return ["a control-flow body holds a function op"], IN_BODY
    if any(n.name.startswith("InsertedPrecisionFreeCast_") for n in theirs):
        # insert_cast_transformer.cc: float16 nodes without a CPU kernel run in float32 (and ops
        # with a body but no float16 kernel, e.g. Softmax, are inlined): not emulated
        return ["onnxruntime inserted float16 casts"], FP16
    opset = model.opset
    diffs: list[str] = []
    if len(ours) != len(theirs):
        diffs.append(f"{len(ours)} nodes vs onnxruntime's {len(theirs)}")
    for k, (a, b) in enumerate(zip(ours, theirs)):
        ka, kb = _key(a, opset), _key(b, opset)
        if ka != kb:
            fields = ("name", "op_type", "domain", "inputs", "outputs", "attributes")
            what = [f for f, x, y in zip(fields, ka, kb) if x != y]
            diffs.append(f"node {k}: {a.op_type} vs {b.op_type} differ in {', '.join(what)}")
            break
    ort_inits = {t.name: t for t in theirs_model.graph.initializer}
    used = set(expanded.outputs)
    for n in expanded.nodes:
        used.update(n.input)
        used.update(_outer_names(n))
    ours_inits = {w for w in expanded.weights if w in used}  # onnxruntime drops unused initializers
    if set(ort_inits) != ours_inits:
        diffs.append(f"initializers differ: only ours {sorted(ours_inits - set(ort_inits))}, only onnxruntime's {sorted(set(ort_inits) - ours_inits)}")
    for name, t in ort_inits.items():
        if name in expanded.values:
            theirs_v = numpy_helper.to_array(t)
            ours_v = expanded.values[name]
            if theirs_v.dtype != ours_v.dtype or theirs_v.shape != ours_v.shape or theirs_v.tobytes() != ours_v.tobytes():
                diffs.append(f"initializer {name} differs")
    dims = {d: 2 for d in model.symbolic_dims}
    try:
        static_peak = analyze_model(result.model, dims=dims, shapes=shapes).activations.peak_bytes
        written_peak = graphmem.analyze(written, dims=dims, shapes=shapes, execution_order="file").activations.peak_bytes
    except GraphmemError as exc:  # e.g. an input graphmem cannot bind: the graphs were compared
        return diffs or [f"peaks not compared: {exc}"], "" if diffs else NO_PEAK
    if static_peak != written_peak:
        diffs.append(f"peak {static_peak:,} vs {written_peak:,} from onnxruntime's graph")
    return diffs, ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case import node as node_cases

        cases = node_cases.collect_testcases(None)
    per_op: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    bad = 0
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for case in cases:
            if args.only and not any(s in case.name for s in args.only):
                continue
            opsets = {o.domain or "": o.version for o in case.model.opset_import}
            ops = sorted({n.op_type for n in case.model.graph.node if runs_as_function(n.domain, n.op_type, opsets.get(n.domain or "", 0))})
            if not ops:
                continue
            path = tmp / f"{case.name}.onnx"
            onnx.save(case.model, str(path))
            op = ",".join(ops)
            if args.verbose:
                print(f"{case.name} ...", flush=True)
            try:
                diffs, category = compare(path, tmp, sequence_shapes(case) or None)
            except GraphmemError as exc:
                per_op[op]["onnxruntime cannot build it"] += 1
                if args.verbose:
                    print(f"{case.name:<64} skipped: {exc}")
                continue
            if category:
                per_op[op][category] += 1
                if args.verbose:
                    print(f"{case.name:<64} {category}: {'; '.join(diffs)}")
            elif diffs:
                bad += 1
                per_op[op]["different"] += 1
                print(f"{case.name:<64} DIFFERENT: {'; '.join(diffs)}")
            else:
                per_op[op]["identical"] += 1
                if args.verbose:
                    print(f"{case.name:<64} identical")
    print()
    cols = ("identical", NO_PEAK, "different", "onnxruntime cannot build it", FP16, UNTYPED, IN_BODY)
    heads = ("identical", "ident.,no peak+", "different", "ort can't build", "fp16 casts*", "untyped*", "in a body*")
    print(f"{'op (runs as function)':<28} {'cases':>5} " + " ".join(f"{h:>15}" for h in heads))
    tot: collections.Counter[str] = collections.Counter()
    for op in sorted(per_op):
        c = per_op[op]
        tot.update(c)
        print(f"{op:<28} {sum(c.values()):>5} " + " ".join(f"{c[k]:>15}" for k in cols))
    print(f"{'all':<28} {sum(tot.values()):>5} " + " ".join(f"{tot[k]:>15}" for k in cols))
    print("* not emulated: onnxruntime's float16 casts (insert_cast_transformer.cc); context-dependent bodies")
    print("  whose input types graphmem does not infer (outputs of If) stay one node, and the analysis says so;")
    print("  function ops inside If/Loop/Scan bodies, which graphmem's expansion leaves whole")
    print("+ nodes and initializers identical; no peak: graphmem rejects the file as documented")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
