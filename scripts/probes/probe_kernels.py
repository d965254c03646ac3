#!/usr/bin/env python
"""Check graphmem's CPU kernel table (graphmem/ort/data/cpu_kernels.txt) against the installed onnxruntime.

    python scripts/probes/probe_kernels.py [--only OP ...] [--write]

For every row of the table and each of the common element types (float, double, float16,
bfloat16, int8, uint8, int32, int64, bool), a one-node model gives that type to every input
bound to the row's first input-bound type constraint (the other constraints get the row's first
type), and onnxruntime (CPU provider, ORT_DISABLE_ALL) makes a session of it:

* it loads, and the graph it writes (``optimized_model_filepath``) has no
  ``InsertedPrecisionFreeCast_`` node: the kernel exists;
* it loads with such Casts (float16 only: ``InsertCastTransformer`` ran the node in float32,
  ``core/optimizer/insert_cast_transformer.cc``), or with the node replaced by its function
  body (an op with a function body and no kernel is inlined), or it fails with "Could not find
  an implementation": there is no kernel for that type;
* any other failure (a required attribute the probe cannot guess, a kernel constructor that
  rejects it) is inconclusive and not counted.

Each conclusive probe is compared with ``has_cpu_kernel``; disagreements are listed and make
the exit status 1. ``--write`` marks rows in graphmem/ort/data/cpu_kernels.txt: ``probed`` when every type
of the row's probed constraint that is among the common types was probed and agreed, ``partly``
when some were. Ops with a graph attribute (If, Loop, Scan) are not probed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from graphmem.optable import normalize_domain  # noqa: E402
from graphmem.ort import kernels  # noqa: E402

COMMON = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.INT8,
          TensorProto.UINT8, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL)
_ATTR_DEFAULTS = {
    "INT": 1, "FLOAT": 1.0, "STRING": "", "INTS": [1], "FLOATS": [1.0], "STRINGS": [""],
    "TENSOR": helper.make_tensor("t", TensorProto.FLOAT, [1], [1.0]),
}


def schemas() -> dict[tuple[str, str, int], object]:
    """onnxruntime's own operator schemas, every version."""
    from onnxruntime.capi import _pybind_state as C

    return {(s.domain, s.name, s.since_version): s for s in C.get_all_operator_schema()}


def _tensor_type(type_str: str) -> int | None:
    if type_str.startswith("tensor(") and type_str.endswith(")"):
        name = type_str[7:-1].upper()
        return TensorProto.DataType.Value(name) if name in TensorProto.DataType.keys() else None
    return None


def build(row: kernels.KernelRow, schema, probe: str, dtype: int, opset: int) -> onnx.ModelProto | None:  # type: ignore[no-untyped-def]
    """A one-node model of ``row``'s op at its first version with ``probe``-bound inputs of
    ``dtype`` (None when the op cannot be built generically)."""
    inputs, names = [], []
    for k, p in enumerate(schema.inputs):
        optional = int(p.option) == 1
        if p.typeStr in row.types:
            chosen = dtype if p.typeStr == probe else next(
                (t for t in sorted(row.types[p.typeStr], key=_pref) if isinstance(t, int)), None)
        else:
            chosen = _tensor_type(p.typeStr)
        if optional and p.typeStr != probe:
            names.append("")
            continue
        if chosen is None:
            return None
        inputs.append(helper.make_tensor_value_info(f"x{k}", chosen, None))
        names.append(f"x{k}")
    while names and names[-1] == "":
        names.pop()
    attrs = {}
    for name, a in schema.attributes.items():
        if not a.required:
            continue
        kind = str(a.type).split(".")[-1]
        if kind not in _ATTR_DEFAULTS:
            return None
        attrs[name] = _ATTR_DEFAULTS[kind]
    outputs = [f"y{k}" for k in range(len(schema.outputs)) if int(schema.outputs[k].option) != 1 or k == 0]
    node = helper.make_node(row.op, names, outputs, domain=row.domain, name="probe", **attrs)
    graph = helper.make_graph([node], "probe", inputs, [helper.ValueInfoProto(name=o) for o in outputs])
    opsets = [helper.make_opsetid(row.domain, opset)]
    if row.domain:
        opsets.append(helper.make_opsetid("", 17))
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def model_opset(known: dict, row: kernels.KernelRow) -> int:  # type: ignore[type-arg]
    """The newest opset at which the op's schema is still the row's first version (old opsets
    make the Cast that InsertCastTransformer adds invalid: Cast-1 took a string ``to``)."""
    later = [v for (d, op, v) in known if d == row.domain and op == row.op and v > row.first]
    if later:
        return min(later) - 1
    return max(row.first, 21) if not row.domain else row.first


def _pref(t: int | str) -> tuple[int, str]:
    order = {TensorProto.FLOAT: 0, TensorProto.INT64: 1, TensorProto.INT32: 2, TensorProto.UINT8: 3}
    return (order.get(t, 9), str(t)) if isinstance(t, int) else (99, t)


INCONCLUSIVE: list[str] = []


def run(model: onnx.ModelProto, workdir: Path) -> bool | None:
    """True: kernel; False: no kernel (not found, or run in float32 behind inserted Casts);
    None: inconclusive."""
    out = workdir / "optimized.onnx"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.optimized_model_filepath = str(out)
    options.log_severity_level = 4
    try:
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
        if "Could not find an implementation" in str(exc):
            return False
        INCONCLUSIVE.append(f"{model.graph.node[0].op_type}: {str(exc).splitlines()[0][:150]}")
        return None
    written = onnx.load(str(out), load_external_data=False)
    if not any(n.name == "probe" for n in written.graph.node):
        return False  # no kernel: onnxruntime inlined the op's function body instead
    return not any(n.name.startswith("InsertedPrecisionFreeCast_") for n in written.graph.node)


def output_types(model: onnx.ModelProto) -> list[int | None]:
    """The node's output element types by ONNX inference (None where it cannot tell)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - contrib ops have no ONNX schema
        return []
    known = {v.name: v.type.tensor_type.elem_type or None for v in (*inferred.graph.value_info, *inferred.graph.output)}
    return [known.get(o) for o in model.graph.node[0].output]


def probe_constraint(row: kernels.KernelRow, schema) -> str | None:  # type: ignore[no-untyped-def]
    """The first type constraint bound to an input of ``schema`` that the row lists."""
    return next((p.typeStr for p in schema.inputs if p.typeStr in row.types), None)


def inlining(known: dict) -> int:  # type: ignore[type-arg]
    """Which ops onnxruntime inlines (function body) rather than casts when the CPU provider has
    no float16/bfloat16 kernel, against graphmem's INLINED_WITHOUT_KERNEL; 1 on a difference."""
    from graphmem.ort.insert_cast import INLINED_WITHOUT_KERNEL

    inlined: set[tuple[str, str, int]] = set()
    with tempfile.TemporaryDirectory(prefix="graphmem-probe-") as tmp:
        for row in (r for rs in kernels._table()[0].values() for r in rs if not r.domain):
            schema = known.get((row.domain, row.op, row.first))
            probe = probe_constraint(row, schema) if schema is not None else None
            if probe is None:
                continue
            allowed = {_tensor_type(t) for c in schema.type_constraints if c.type_param_str == probe
                       for t in c.allowed_type_strs}
            for dtype in (TensorProto.FLOAT16, TensorProto.BFLOAT16):
                if dtype not in allowed or dtype in row.types[probe]:
                    continue
                model = build(row, schema, probe, dtype, model_opset(known, row))
                if model is None or run(model, Path(tmp)) is None:
                    continue
                written = onnx.load(str(Path(tmp) / "optimized.onnx"), load_external_data=False)
                if not any(n.name == "probe" for n in written.graph.node):
                    inlined.add((row.domain, row.op, row.first))
    print(f"inlined without a float16/bfloat16 kernel: {sorted(inlined)}")
    table = {(d, op, v) for (d, op), versions in INLINED_WITHOUT_KERNEL.items() for v in versions}
    if inlined != table:
        print(f"  DISAGREE with graphmem's INLINED_WITHOUT_KERNEL: {sorted(inlined ^ table)}")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="op types to probe")
    ap.add_argument("--verbose", action="store_true", help="show why probes were inconclusive")
    ap.add_argument("--write", action="store_true", help="mark probed rows in graphmem/ort/data/cpu_kernels.txt")
    ap.add_argument("--inlining", action="store_true",
                    help="only check which ops are inlined instead of cast when float16 has no kernel")
    args = ap.parse_args(argv)
    known = schemas()
    if args.inlining:
        return inlining(known)
    rows = [r for rs in kernels._table()[0].values() for r in rs]
    outcome: Counter[str] = Counter()
    disagreements: list[str] = []
    marks: dict[int, str] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="graphmem-probe-") as tmp:
        for row in rows:
            if args.only and row.op not in args.only:
                continue
            schema = known.get((row.domain, row.op, row.first))
            if schema is None or any("GRAPH" in str(a.type) for a in schema.attributes.values()):
                outcome["not buildable"] += 1
                continue
            probe = probe_constraint(row, schema)
            if probe is None:
                outcome["no input-bound constraint"] += 1
                continue
            allowed = {_tensor_type(t) for c in schema.type_constraints if c.type_param_str == probe
                       for t in c.allowed_type_strs}
            wanted = [t for t in COMMON if t in row.types[probe]]
            agreed = 0
            for dtype in (t for t in COMMON if t in allowed):  # the schema's own types only
                model = build(row, schema, probe, dtype, model_opset(known, row))
                if model is None:
                    outcome["not buildable"] += 1
                    break
                real = run(model, Path(tmp))
                if real is None:
                    outcome["inconclusive"] += 1
                    continue
                node = model.graph.node[0]
                types = {i.name: i.type.tensor_type.elem_type for i in model.graph.input}
                predicted = kernels.has_cpu_kernel(row.domain, row.op, row.first, [types.get(x) for x in node.input],
                                                   output_types(model))
                outcome["agree" if predicted == real else "disagree"] += 1
                if predicted != real:
                    disagreements.append(f"{row.domain or 'ai.onnx'} {row.op} {row.first} {probe}="
                                         f"{kernels.type_name(dtype)}: table {predicted}, onnxruntime {real}")
                elif dtype in wanted:
                    agreed += 1
            if wanted and agreed:
                marks[id(row)] = "probed" if agreed == len(wanted) else "partly"
    print(f"onnxruntime {ort.__version__}: {sum(outcome.values())} probes in {time.perf_counter() - t0:.0f} s: "
          + ", ".join(f"{n} {k}" for k, n in outcome.most_common()))
    print(f"rows probed: {sum(m == 'probed' for m in marks.values())}, partly: "
          f"{sum(m == 'partly' for m in marks.values())}, of {len(rows)}")
    if args.verbose:
        for line in INCONCLUSIVE:
            print(f"  inconclusive {line}")
    for d in disagreements:
        print(f"  DISAGREE {d}")
    if args.write:
        write_marks(rows, marks)
    return 1 if disagreements else 0


def _is_row(line: str) -> bool:
    """A kernel row of the kernels file (not a comment, a type list or a [domain] line)."""
    return bool(line) and line[0] not in "#$["


def write_marks(rows: list[kernels.KernelRow], marks: dict[int, str]) -> None:
    """Rewrite the kernels file with the probe marks (rows are in the file's order)."""
    path = REPO / "graphmem" / "ort" / kernels.KERNELS_FILE
    by_position = iter(rows_in_file_order(rows))
    lines = []
    for line in path.read_text().splitlines():
        if not _is_row(line):
            lines.append(line)
            continue
        row = next(by_position)
        bare = line.removesuffix(" probed").removesuffix(" partly")
        mark = marks.get(id(row), row.probed)
        lines.append(f"{bare} {mark}" if mark else bare)
    path.write_text("\n".join(lines) + "\n")


def rows_in_file_order(rows: list[kernels.KernelRow]) -> list[kernels.KernelRow]:
    """The table's rows in the order of the kernels file's lines (the parse keeps that order per op)."""
    order = []
    seen: dict[tuple[str, str], int] = {}
    domain = ""
    by_key = kernels._table()[0]
    for line in kernels.data_lines(kernels.KERNELS_FILE):
        if line.startswith("$"):
            continue
        if line.startswith("["):
            domain = normalize_domain(line.split()[0][1:-1])
            continue
        key = (domain, line.split()[0])
        k = seen.get(key, 0)
        order.append(by_key[key][k])
        seen[key] = k + 1
    return order


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
