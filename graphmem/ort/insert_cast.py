"""The Cast nodes onnxruntime 1.31 puts around float16 nodes its CPU provider has no kernel for.

``InsertCastTransformer`` (``core/optimizer/insert_cast_transformer.cc``) runs after the graph is
partitioned, at every optimization level, ORT_DISABLE_ALL included:

1. a node no provider has a kernel for (here: :func:`graphmem.ort.kernels.has_cpu_kernel` is false
   for its element types) is *unassigned*. Only ``tensor(float16)`` is rescued: a bfloat16 node
   without a kernel makes the session fail;
2. ``ForceSingleNodeCPUFloat16ToFloat32`` — in NodeIndex order, an fp16 node the CPU provider *can*
   run is un-assigned too when it sits between nodes that will be cast (``IsIsolatedFp16NodeOnCpu``:
   it has an input edge, no subgraph, no graph output; every edge into one of its fp16 inputs
   comes from a node needing casts, and so does every edge out of its fp16 outputs; and a float
   kernel exists for it);
3. in the session's topological order, each unassigned node without a subgraph reads every fp16
   input through ``Cast(to=float)`` (one per input tensor, shared by its later readers) and writes
   every fp16 output as a new float tensor that ``Cast(to=float16)`` turns back into the original.
   Cast inputs that are weights are cast on every run: at ORT_DISABLE_ALL their float32 copies
   are arena tensors;
4. the duplicate-Cast remover (:mod:`graphmem.ort.rewrites`) then drops the back-to-back pairs
   between two unassigned nodes (the inserted casts are named ``InsertedPrecisionFreeCast_…``,
   which its precision-loss test exempts).

The new nodes take the next NodeIndex values (``Graph::AddNode``), inputs first, in that order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import onnx
from onnx import TensorProto, helper

from graphmem.model.loading import Model
from graphmem.model.types import TensorType
from graphmem.optable import DEFAULT_DOMAIN, OpTable, domain_table, normalize_domain
from graphmem.ort import kernels

__all__ = [
    "CastInsertion",
    "CpuSession",
    "INLINED_WITHOUT_KERNEL",
    "PREFIX",
    "cpu_session",
    "fp16_inlined_without_kernel",
    "insert_fp16_casts",
    "kernel_problems",
    "node_since_version",
    "runs_as_body",
]

PREFIX = "InsertedPrecisionFreeCast_"
FP16 = TensorProto.FLOAT16
#: Ops -> the since-versions of their schema that onnxruntime 1.31 runs as their function body when
#: the CPU provider has no kernel for a node's float16/bfloat16 types, before any Cast is inserted
#: (measured by ``scripts/probes/probe_kernels.py --inlining``; every other op without a float16 kernel,
#: Relu-14 included, runs in float32 behind Casts).
INLINED_WITHOUT_KERNEL: OpTable[frozenset[int]] = OpTable(domain_table(DEFAULT_DOMAIN, {
    "Gelu": frozenset({20}), "LayerNormalization": frozenset({1}), "LogSoftmax": frozenset({13}),
    "ReduceL1": frozenset({18}), "ReduceLogSum": frozenset({18}), "ReduceSumSquare": frozenset({18}),
    "Softmax": frozenset({13}),
}))
#: Domains whose kernels the CPU table knows; nodes of other (custom) domains are left alone.
_KNOWN = frozenset({"", "ai.onnx.ml", "com.microsoft", "com.microsoft.nchwc"})


@dataclass(frozen=True, slots=True, kw_only=True)
class CastInsertion:
    """The graph after InsertCastTransformer: the model, both type views with the new tensors,
    and the nodes that run in float32 behind inserted Casts."""

    model: Model
    static: dict[str, TensorType]
    runtime: dict[str, TensorType]
    fallback: tuple[str, ...]  # names (or op types) of the nodes run in float32
    casts: int  # Cast nodes inserted (before the duplicate-Cast remover)


def node_since_version(model: Model, node: onnx.NodeProto) -> int | None:
    """The since-version of the node's schema at the model's opset (onnxruntime's schemas)."""
    domain = normalize_domain(node.domain)
    opset = model.opsets.get(domain, 1 if domain else model.opset)
    return kernels.since_version(domain, node.op_type, opset)


def _has_subgraph(node: onnx.NodeProto) -> bool:
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute)


def _dtype(types: Mapping[str, TensorType], name: str) -> int | None:
    t = types.get(name) if name else None
    return t.dtype if t is not None and t.kind == "tensor" and t.dtype else None


def _has_kernel(model: Model, node: onnx.NodeProto, types: Mapping[str, TensorType]) -> bool:
    domain = normalize_domain(node.domain)
    if domain not in _KNOWN:
        return True  # a custom op's kernel is not ours to judge
    since = node_since_version(model, node)
    if since is None:
        return False  # no schema among the ops with a CPU kernel: no kernel
    return kernels.has_cpu_kernel(domain, node.op_type, since, [_dtype(types, x) for x in node.input],
                                  [_dtype(types, x) for x in node.output])


def kernel_problems(model: Model, types: Mapping[str, TensorType]) -> list[tuple[onnx.NodeProto, str]]:
    """Nodes of the known domains with no CPU kernel for their types, and why (the phrase of
    :func:`graphmem.ort.kernels.kernel_type_problem`). Nodes with a subgraph are not judged."""
    out = []
    answers: dict[tuple, str | None] = {}  # one lookup per op and types
    for node in model.nodes:
        domain = normalize_domain(node.domain)
        if domain not in _KNOWN or (node.attribute and _has_subgraph(node)):
            continue
        ins = tuple(_dtype(types, x) for x in node.input)
        outs = tuple(_dtype(types, x) for x in node.output)
        key = (domain, node.op_type, ins, outs)
        if key not in answers:
            since = node_since_version(model, node)
            answers[key] = (
                f"the CPU provider has no {node.op_type} kernel" if since is None
                else kernels.kernel_type_problem(domain, node.op_type, since, list(ins), list(outs))
            )
        answer = answers[key]
        if answer is not None:
            out.append((node, answer))
    return out


def insert_fp16_casts(
    model: Model,
    order: tuple[int, ...],
    static: Mapping[str, TensorType],
    runtime: Mapping[str, TensorType],
    *,
    device: Mapping[int, str] | None = None,
) -> CastInsertion:
    """The model as InsertCastTransformer leaves it (module doc); ``order`` is the session's
    topological order of ``model``'s NodeIndex values, ``static`` the types onnxruntime knows
    when it builds the session (they decide), ``runtime`` the bound ones (they size).

    ``device`` (a CUDA session: NodeIndex -> "cuda" | "cpu", the partition before this transformer
    runs): a node on "cuda" is assigned and, not being on the CPU provider, never forced to float32
    (``IsIsolatedFp16NodeOnCpu`` asks for ``kCpuExecutionProvider``); a node on "cpu" is assigned
    when the CPU provider has a kernel for its types. The new Casts run on the CPU provider
    (``AddCastNode(..., kCpuExecutionProvider)``)."""
    static, runtime = dict(static), dict(runtime)
    entries = list(model.indexed_nodes)
    nodes = {nid: n for nid, n in entries}
    if not any(_dtype(static, x) == FP16 for n in model.nodes for x in (*n.input, *n.output)):
        return CastInsertion(model=model, static=static, runtime=runtime, fallback=(), casts=0)
    producer = {o: nid for nid, n in entries for o in n.output if o}
    readers: dict[str, list[int]] = {}
    for nid, n in entries:
        for x in n.input:
            if x:
                readers.setdefault(x, []).append(nid)
    graph_outputs = set(model.outputs)
    on_cuda = {nid for nid, d in (device or {}).items() if d == "cuda"}
    assigned = {nid: nid in on_cuda or _has_kernel(model, n, static) for nid, n in entries}

    def needs_cast(nid: int) -> bool:  # NodeNeedsInputCastToFp32
        return not assigned[nid] and any(_dtype(static, x) == FP16 for x in nodes[nid].input)

    for nid, node in sorted(entries):  # ForceSingleNodeCPUFloat16ToFloat32: graph.Nodes() order
        if (
            assigned[nid]
            and nid not in on_cuda
            and _isolated(model, node, static, producer, readers, graph_outputs, needs_cast)
        ):
            assigned[nid] = False

    taken = {n.name for n in model.nodes} | set(static) | set(model.weights)
    counter = [0]

    def fresh(base: str) -> str:  # Graph::GenerateNodeName
        name = base
        while name in taken:
            counter[0] += 1
            name = f"{base}_token_{counter[0]}"
        taken.add(name)
        return name

    next_id = max(nodes, default=-1) + 1
    added: list[tuple[int, onnx.NodeProto]] = []
    rewritten: dict[int, onnx.NodeProto] = {}
    upcast: dict[str, str] = {}  # input_def_updates: fp16 tensor -> its float copy
    fallback = []

    def add_cast(src: str, dst: str, to: int, like: str) -> None:
        nonlocal next_id
        for view in (static, runtime):
            t = view.get(like)
            if t is not None and dst not in view:
                view[dst] = TensorType(dtype=TensorProto.FLOAT, shape=t.shape)
        cast = helper.make_node("Cast", [src], [dst], name=dst, to=to)
        added.append((next_id, cast))
        next_id += 1

    for nid in order:
        node = nodes[nid]
        if assigned[nid] or _has_subgraph(node):
            continue
        inputs = list(node.input)
        casted = False
        for k, x in enumerate(inputs):
            if _dtype(static, x) != FP16:
                continue
            if x not in upcast:
                upcast[x] = fresh(PREFIX + x)
                add_cast(x, upcast[x], TensorProto.FLOAT, like=x)
            inputs[k] = upcast[x]
            casted = True
        if not casted:
            continue
        outputs = list(node.output)
        for k, y in enumerate(outputs):
            if _dtype(static, y) == FP16:
                outputs[k] = fresh(PREFIX + y)
                for view in (static, runtime):
                    t = view.get(y)
                    if t is not None:
                        view[outputs[k]] = TensorType(dtype=TensorProto.FLOAT, shape=t.shape)
                cast = helper.make_node("Cast", [outputs[k]], [y], name=outputs[k], to=FP16)
                added.append((next_id, cast))
                next_id += 1
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        del copy.input[:]
        copy.input.extend(inputs)
        del copy.output[:]
        copy.output.extend(outputs)
        for a in copy.attribute:
            if a.name == "dtype" and a.type == onnx.AttributeProto.INT and a.i == FP16:
                a.i = TensorProto.FLOAT
        rewritten[nid] = copy
        fallback.append(node.name or node.op_type)
    if not added:
        return CastInsertion(model=model, static=static, runtime=runtime, fallback=(), casts=0)
    ids = tuple(nid for nid, _ in entries) + tuple(nid for nid, _ in added)
    new_nodes = tuple(rewritten.get(nid, n) for nid, n in entries) + tuple(n for _, n in added)
    return CastInsertion(
        model=replace(model, nodes=new_nodes, node_ids=ids),
        static=static,
        runtime=runtime,
        fallback=tuple(fallback),
        casts=len(added),
    )


def _isolated(model, node, static, producer, readers, graph_outputs, needs_cast) -> bool:
    """``IsIsolatedFp16NodeOnCpu`` (module doc, step 2)."""
    if not any(x in producer for x in node.input) or _has_subgraph(node):
        return False
    if any(o in graph_outputs for o in node.output if o):
        return False
    domain = normalize_domain(node.domain)
    since = node_since_version(model, node)
    if since is None:
        return False
    f = kernels.formals(domain, node.op_type, since)
    if f is None:
        return False
    constraint_types: dict[str, int] = {}
    fp16_inputs: set[int] = set()
    position = 0
    for k, (name, option) in enumerate(f.inputs):
        count = max(len(node.input) - position, 0) if option == "*" and k == len(f.inputs) - 1 else 1
        if name is not None:
            for i in range(position, min(position + count, len(node.input))):
                dtype = _dtype(static, node.input[i])
                if dtype is None:
                    continue
                if dtype == FP16:
                    fp16_inputs.add(i)
                    constraint_types[name] = TensorProto.FLOAT
                else:
                    constraint_types[name] = dtype
                break  # "we don't have multiple tensors feeding into one input"
        position += count
    if not fp16_inputs:
        return False
    for i in fp16_inputs:
        src = producer.get(node.input[i])
        if src is not None and not needs_cast(src):
            return False
    fp16_outputs = []
    for k, (name, _) in enumerate(f.outputs[: len(node.output)]):
        dtype = _dtype(static, node.output[k])
        if name is None or dtype is None:
            continue
        if dtype == FP16:
            fp16_outputs.append(node.output[k])
            constraint_types[name] = TensorProto.FLOAT
        else:
            constraint_types[name] = dtype
    if not fp16_outputs:
        return False
    if any(not needs_cast(r) for y in fp16_outputs for r in readers.get(y, ())):
        return False
    return kernels.has_cpu_kernel_for(domain, node.op_type, since, constraint_types)


@dataclass(frozen=True, slots=True, kw_only=True)
class CpuSession:
    """What the CPU provider makes of a typed graph before planning: the graph with its inserted
    Casts (``insertion``), nodes it cannot run (``missing``: node, phrase), and nodes without a
    kernel that it runs as their function body instead (``inline``, by their outputs: expand
    them with :func:`graphmem.ort.functions.inline_functions` and ask again)."""

    insertion: CastInsertion
    missing: tuple[tuple[str, str, str], ...]  # (node name, op type, why)
    inline: frozenset[tuple[str, ...]]  # outputs of the nodes run as their function body


def cpu_session(
    model: Model, order: tuple[int, ...], static: Mapping[str, TensorType], runtime: Mapping[str, TensorType]
) -> CpuSession:
    """Cast insertion (:func:`insert_fp16_casts`), then the nodes still without a CPU kernel."""
    # An op without a kernel for its types that onnxruntime runs as its function body: such
    # graphs are what onnxruntime itself must write out (a float16 node: only the ops measured in
    # INLINED_WITHOUT_KERNEL; the others are cast).
    inline = {tuple(n.output) for n, _ in kernel_problems(model, static) if runs_as_body(model, n, static)}
    if inline:
        none = CastInsertion(model=model, static=dict(static), runtime=dict(runtime), fallback=(), casts=0)
        return CpuSession(insertion=none, missing=(), inline=frozenset(inline))
    insertion = insert_fp16_casts(model, order, static, runtime)
    missing = tuple((n.name, n.op_type, why) for n, why in kernel_problems(insertion.model, insertion.static))
    return CpuSession(insertion=insertion, missing=missing, inline=frozenset())


def runs_as_body(model: Model, n: onnx.NodeProto, static: Mapping[str, TensorType]) -> bool:
    """A node without a CPU kernel for its types (a :func:`kernel_problems` node) that onnxruntime
    runs as its function body: a float16/bfloat16 one only if measured so (INLINED_WITHOUT_KERNEL)."""
    half = any(_dtype(static, x) in (FP16, TensorProto.BFLOAT16) for x in n.input)
    inlined = node_since_version(model, n) in INLINED_WITHOUT_KERNEL.of(n, frozenset())
    return inlined or (not half and _has_function_body(model, n))


def fp16_inlined_without_kernel(model: Model, node: onnx.NodeProto, static: Mapping[str, TensorType]) -> bool:
    """A float16 node without a CPU kernel for its types that onnxruntime runs as its function
    body rather than behind Casts (INLINED_WITHOUT_KERNEL, measured on the CPU provider)."""
    if not any(_dtype(static, x) == FP16 for x in node.input) or _has_kernel(model, node, static):
        return False
    return runs_as_body(model, node, static)


def _has_function_body(model: Model, node: onnx.NodeProto) -> bool:
    from onnx import defs

    domain = normalize_domain(node.domain)
    opset = model.opsets.get(domain, 1 if domain else model.opset)
    try:
        schema = defs.get_schema(node.op_type, opset, domain)
    except defs.SchemaError:
        return any(f.name == node.op_type and f.domain == node.domain for f in model.functions)
    return bool(schema.has_function or schema.has_context_dependent_function)  # type: ignore[attr-defined]  # not in onnx's defs.pyi
