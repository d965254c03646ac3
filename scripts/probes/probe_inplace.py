"""Which unary ops onnxruntime runs in place, measured, beside graphmem's table.

For every default-domain op with one float input and one output of the same shape, builds
``X -> Exp -> a -> OP -> b -> Exp -> c -> Sigmoid -> Y`` (a [1,1024] float chain), runs it with
onnxruntime (ORT_DISABLE_ALL, CPU, profiler memory fields) and reads the arena after OP: 4096
bytes means OP wrote into its dying input ``a`` (in place), 8192 a fresh buffer. Prints each op
with onnxruntime's behaviour and graphmem's rule (``graphmem/ort/rules.py``) and exits 1 on any
disagreement.

    python scripts/probes/probe_inplace.py [OP ...]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from onnx import TensorProto, defs, helper

from graphmem.errors import GraphmemError
from graphmem.ort.rules import sharing
from graphmem.verify import make_feeds, measure

OPSET = 17
SKIP = {"Exp", "Sigmoid", "Constant", "RandomNormalLike", "RandomUniformLike", "Bernoulli"}


def unary_float_ops() -> list[str]:
    ops = []
    names = {s.name for s in defs.get_all_schemas_with_history() if s.domain == ""}
    for name in sorted(names - SKIP):
        try:
            s = defs.get_schema(name, OPSET, "")
        except defs.SchemaError:
            continue
        if s.deprecated:
            continue
        required = [i for i in s.inputs if i.option != defs.OpSchema.FormalParameterOption.Optional]
        if len(required) != 1 or not s.outputs:
            continue
        if "tensor(float)" not in s.type_constraints[0].allowed_type_strs if s.type_constraints else True:
            continue
        ops.append(s.name)
    return sorted(set(ops))


def probe(op: str, work: Path) -> bool | None:
    """True: ran in place; False: fresh buffer; None: onnxruntime cannot run it this way."""
    nodes = [
        helper.make_node("Exp", ["X"], ["a"], name="first"),
        helper.make_node(op, ["a"], ["b"], name="probe"),
        helper.make_node("Exp", ["b"], ["c"], name="third"),
        helper.make_node("Sigmoid", ["c"], ["Y"], name="last"),
    ]
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1024])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 1024])
    model = helper.make_model(
        helper.make_graph(nodes, "probe", [x], [y]), opset_imports=[helper.make_opsetid("", OPSET)]
    )
    model.ir_version = 8
    path = work / f"{op}.onnx"
    path.write_bytes(model.SerializeToString())
    try:
        run = measure(str(path), make_feeds(model, {}), runs=1).runs[0]
    except GraphmemError:
        return None
    held = {n.name: n.requested_in_use - run.primary.session_baseline for n in run.nodes}
    if "probe" not in held or held.get("first") != 4096:
        return None
    return held["probe"] == 4096


def main() -> int:
    ops = sys.argv[1:] or unary_float_ops()
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for op in ops:
            ran = probe(op, Path(tmp))
            ours = bool(sharing("", op)[1]) or bool(sharing("", op)[0])
            if ran is None:
                print(f"{op:<22} onnxruntime: cannot run as a float unary op here")
                continue
            verdict = "ok" if ran == ours else "DISAGREE"
            bad += ran != ours
            print(f"{op:<22} onnxruntime: {'in place' if ran else 'fresh':<9} graphmem: {'shares' if ours else 'fresh':<7} {verdict}")
    print(f"\n{len(ops)} ops probed, {bad} disagreements")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
