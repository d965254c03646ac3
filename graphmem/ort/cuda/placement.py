"""Stage 3b (``--provider cuda``) — the graph as an onnxruntime CUDA session runs it.

NOT CHECKED AGAINST A GPU (none where this was written); each step names the onnxruntime source
it follows, and the kernel facts are in :mod:`graphmem.ort.cuda.rules`.

1. Partitioning (``providers/cuda/cuda_execution_provider.cc`` GetCapability): a node goes to
   CUDA when a CUDA kernel is registered for its op, version and input types, except RNN/LSTM/GRU
   with unsupported attributes, ConvTranspose with asymmetric or SAME pads, Cast to string.
2. CPU-preferred nodes (``framework/fallback_cpu_capability.cc`` GetCpuPreferredNodes): walking
   in topological order from the consumers of CUDA kernels' CPU outputs (Shape, Size), a CUDA
   candidate runs on CPU when every input is a graph input, an initializer of at most 100
   elements, or a CPU value its CUDA kernel would not read from CPU anyway, and none is 16/8-bit
   float. Shape → Gather → Unsqueeze → Concat thus runs on CPU; the Reshape it feeds on CUDA.
3. Casts (``optimizer/insert_cast_transformer.cc``, run after partitioning with the CPU
   provider's kernel registry, ``session/inference_session.cc`` TransformGraph step 6): a float16
   node on neither provider (no CUDA kernel, and no float16 CPU kernel) runs on the CPU provider
   in float32 between inserted Casts, which run on the CPU provider too; an fp16-capable CPU node
   whose every fp16 neighbour is such a node is forced to float32 as well (never a CUDA node);
   then the duplicate-Cast remover. :func:`graphmem.ort.insert_cast.insert_fp16_casts` does it
   with the partition given; the Casts' tensors live in the CPU arena.
4. Copies (``optimizer/transformer_memcpy.cc``, TransformGraph step 7, after the Casts): a MemcpyFromHost node for each
value written in
   CPU memory and read by a CUDA kernel in device memory (and for a graph input read on both
   sides), a MemcpyToHost node for each value written on the device and read on CPU; they are
   new nodes, numbered after the others. Graph inputs read on the device only are copied by the
   session into the CUDA arena before the first kernel and held to the end of the run
   (``framework/utils.cc`` CopyInputsAcrossDevices).
5. Run order (``framework/execution_plan`` BuildExecutionPlan, ``sequential_executor.cc``,
   ``stream_execution_context.cc`` RunSince): one stream per device type, each running its nodes
   in the topological order; a node waits at a barrier for a producer in the other stream, and
   the producer's trigger step resumes the waiting stream inline. :func:`run_order` replays that.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import onnx

from graphmem.model.graph import OpGraph
from graphmem.model.loading import Model
from graphmem.model.types import TensorType
from graphmem.optable import DEFAULT_DOMAIN, OpTable, domain_table, normalize_domain
from graphmem.ort.cuda.rules import FP16_LIKE, cpu_inputs, has_kernel, output_memory
from graphmem.shapes.infer import op_schema

__all__ = ["CudaPlacement", "place_cuda", "placement_errors", "run_order", "session_problems", "since_version"]

CUDA, CPU = "cuda", "cpu"
_SMALL_INITIALIZER = 100  # elements (fallback_cpu_capability.cc IsSmallInitializer)


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaPlacement:
    """Where each node runs and each value lives in a CUDA session."""

    model: Model  # the graph with its Memcpy nodes, as the session runs it
    node_device: dict[int, str]  # node id -> "cuda" | "cpu"
    value_device: dict[str, str]  # written tensor -> "cuda" | "cpu" | "cuda_pinned"
    copied_inputs: tuple[str, ...]  # graph inputs the session copies into the CUDA arena
    renamed: dict[str, str]  # tensor a copy introduced -> the original it has the type of
    no_kernel: dict[str, int]  # op type -> nodes without a CUDA kernel (run on CPU)
    cpu_preferred: int  # CUDA-capable nodes GetCpuPreferredNodes moved to CPU
    static: dict[str, TensorType] | None = None  # the types with the inserted Casts' tensors
    runtime: dict[str, TensorType] | None = None
    fp32_fallback: tuple[str, ...] = ()  # float16 nodes run in float32 on CPU behind inserted Casts
    inserted_casts: tuple[int, ...] = ()  # ids of the InsertCastTransformer Casts the remover kept
    inlined_not_modelled: tuple[str, ...] = ()  # CPU nodes onnxruntime runs as their function body


def since_version(model: Model, node: onnx.NodeProto) -> int:
    """The version of the op's schema the node resolves to (what kernels are registered for);
    1 for Memcpy nodes and ops onnx does not define."""
    domain = normalize_domain(node.domain)
    schema = op_schema(node.op_type, model.opsets.get(domain, 0), domain)
    return schema.since_version if schema is not None else 1


def place_cuda(
    model: Model,
    g: OpGraph,
    order: tuple[int, ...],
    types: Mapping[str, TensorType],
    runtime: Mapping[str, TensorType] | None = None,
) -> CudaPlacement:
    """Partition ``model`` (``order``: onnxruntime's topological order), insert the float16 Casts
    of its CPU nodes and its copies; ``types`` are the static types (they decide), ``runtime``
    the bound ones (they size the new tensors; ``types`` when None)."""
    from graphmem.ort.insert_cast import fp16_inlined_without_kernel, insert_fp16_casts
    from graphmem.ort.rewrites import remove_duplicate_casts

    dtype = _dtype_of(types)
    candidates: set[int] = set()
    no_kernel: dict[str, int] = {}
    for nid in order:
        node = g.node(nid)
        if _cuda_capable(model, node, dtype):
            candidates.add(nid)
        else:
            no_kernel[node.op_type] = no_kernel.get(node.op_type, 0) + 1
    on_cpu = _cpu_preferred(model, g, order, candidates, dtype)
    device = {nid: CUDA if nid in candidates and nid not in on_cpu else CPU for nid in order}
    inlined = tuple(
        n.name or n.op_type for nid, n in model.indexed_nodes
        if device.get(nid) == CPU and fp16_inlined_without_kernel(model, n, types)
    )
    casts = insert_fp16_casts(model, order, types, runtime if runtime is not None else types, device=device)
    cast_model = model
    inserted: tuple[int, ...] = ()
    if casts.casts:
        inserted = tuple(nid for nid in casts.model.node_ids if nid not in device)
        device.update({nid: CPU for nid in inserted})  # AddCastNode(..., kCpuExecutionProvider)
        cast_model = remove_duplicate_casts(casts.model, casts.static)
        kept = set(cast_model.node_ids)
        device = {nid: d for nid, d in device.items() if nid in kept}
        inserted = tuple(nid for nid in inserted if nid in kept)
    placed = _insert_copies(cast_model, device, no_kernel, len(on_cpu))
    return replace(
        placed, static=casts.static, runtime=casts.runtime, fp32_fallback=casts.fallback,
        inserted_casts=inserted, inlined_not_modelled=inlined,
    )


def _dtype_of(types: Mapping[str, TensorType]):
    def dtype(name: str) -> int:
        t = types.get(name) if name else None
        return t.dtype if t is not None else 0

    return dtype


def _cuda_capable(model: Model, node: onnx.NodeProto, dtype) -> bool:
    """GetCapability: a registered kernel, and none of its attribute-based refusals (:data:`_TAKES`)."""
    version = since_version(model, node)
    if not has_kernel(node.domain, node.op_type, version, tuple(dtype(x) for x in node.input)):
        return False
    takes = _TAKES.of(node)
    if takes is None:
        return True
    return takes({a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}, node)


def _cast_takes(attrs: dict, node: onnx.NodeProto) -> bool:
    return attrs.get("to") != onnx.TensorProto.STRING


def _conv_transpose_takes(attrs: dict, node: onnx.NodeProto) -> bool:
    pads = list(attrs.get("pads", ()))
    half = len(pads) // 2
    symmetric = pads[:half] == pads[half:]
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    return symmetric and auto_pad not in (b"SAME_UPPER", b"SAME_LOWER")


def _rnn_takes(default: list[bytes]) -> Callable[[dict, onnx.NodeProto], bool]:
    """RNNNeedFallbackToCPU (cuda_execution_provider.cc), negated, for a cell whose default
    activations (one direction) are ``default``."""

    def takes(attrs: dict, node: onnx.NodeProto) -> bool:
        if any(k in attrs for k in ("activation_alpha", "activation_beta", "clip")):
            return False
        acts = [a.lower() for a in attrs.get("activations", [])]
        if acts and acts not in ([a.lower() for a in default], [a.lower() for a in default * 2]):
            return False
        op_type = node.op_type
        if op_type == "LSTM" and (attrs.get("input_forget", 0) != 0 or (len(node.input) > 7 and node.input[7])):
            return False
        return not (op_type == "GRU" and attrs.get("linear_before_reset", 0) != 1)

    return takes


#: The CUDA kernels GetCapability refuses for some attributes -> whether it takes the node
#: (attribute name -> value, the node).
_TAKES: OpTable[Callable[[dict, onnx.NodeProto], bool]] = OpTable(domain_table(DEFAULT_DOMAIN, {
    "Cast": _cast_takes,
    "ConvTranspose": _conv_transpose_takes,
    "LSTM": _rnn_takes([b"Sigmoid", b"Tanh", b"Tanh"]),
    "RNN": _rnn_takes([b"Tanh"]),
    "GRU": _rnn_takes([b"Sigmoid", b"Tanh"]),
}))


def _cpu_preferred(model, g, order, candidates, dtype) -> set[int]:
    """GetCpuPreferredNodes, in its sequential form (every node it reaches comes later in the
    topological order than the one that reached it)."""
    cpu_values: set[str] = set()
    pending: set[int] = set()

    def reach(nid: int, outputs) -> None:
        for out in outputs:
            if out:
                cpu_values.add(out)
                pending.update(g.consumers.get(out, ()))

    for nid in order:
        if nid in candidates:
            node = g.node(nid)
            reach(nid, [o for k, o in enumerate(node.output) if output_memory(node.domain, node.op_type, k) != CUDA])
    moved: set[int] = set()
    for nid in order:
        if nid not in pending:
            continue
        node = g.node(nid)
        if nid not in candidates:
            reach(nid, node.output)
            continue
        kernel_cpu = cpu_inputs(node.domain, node.op_type, since_version(model, node))
        if _all_inputs_on_cpu(model, node, kernel_cpu, cpu_values, dtype):
            moved.add(nid)
            reach(nid, node.output)
    return moved


def _all_inputs_on_cpu(model, node, kernel_cpu, cpu_values, dtype) -> bool:
    for i, name in enumerate(node.input):
        if dtype(name) in FP16_LIKE:
            return False
        weight = model.weights.get(name) if name else None
        if weight is not None and math.prod(weight.dims) <= _SMALL_INITIALIZER:
            continue
        if name and name in model.inputs:
            continue
        if name not in cpu_values or i in kernel_cpu:
            return False
    return True


def _insert_copies(model: Model, device: dict[int, str], no_kernel: dict[str, int], moved: int) -> CudaPlacement:
    """MemcpyTransformer, then each value's device."""
    ids = model.node_ids or tuple(range(len(model.nodes)))
    nodes = {nid: _copy(n) for nid, n in zip(ids, model.nodes)}
    dev_in: dict[str, list[tuple[int, int]]] = {}  # value -> CUDA (node, slot) reading it on the device
    cpu_in: set[str] = set()  # values read from CPU memory (CPU nodes, CUDA CPU-input slots)
    dev_out: set[str] = set()
    cpu_out: set[str] = set()
    for nid in ids:
        node = nodes[nid]
        if device[nid] == CUDA:
            kernel_cpu = cpu_inputs(node.domain, node.op_type, since_version(model, node))
            for i, x in enumerate(node.input):
                if x and i in kernel_cpu:
                    cpu_in.add(x)
                elif x:
                    dev_in.setdefault(x, []).append((nid, i))
            for k, out in enumerate(node.output):
                if out:
                    (dev_out if output_memory(node.domain, node.op_type, k) == CUDA else cpu_out).add(out)
        else:
            cpu_in.update(x for x in node.input if x)
            cpu_out.update(x for x in node.output if x)
    producer = {out: nid for nid in ids for out in nodes[nid].output if out}
    copies: list[tuple[str, bool]] = [(x, True) for x in model.inputs if x in dev_in and x in cpu_in]
    copies += [(x, True) for x in sorted(cpu_out) if x in dev_in]
    copies += [(x, False) for x in sorted(dev_out) if x in cpu_in]
    next_id = max(ids, default=-1) + 1
    renamed: dict[str, str] = {}
    taken = set(producer) | set(model.inputs) | set(model.weights)
    for name, from_host in copies:
        new = _fresh_name(f"{name}_CUDAExecutionProvider", taken)
        for nid, slot in dev_in.get(name, ()):
            nodes[nid].input[slot] = new
        if from_host:
            node = onnx.helper.make_node("MemcpyFromHost", [name], [new], name=f"Memcpy_{next_id}")
        else:  # the device producer writes `new`; the copy writes the original name for CPU readers
            src = nodes[producer[name]]
            src.output[list(src.output).index(name)] = new
            node = onnx.helper.make_node("MemcpyToHost", [new], [name], name=f"Memcpy_{next_id}")
        renamed[new] = name
        nodes[next_id] = node
        device[next_id] = CUDA
        next_id += 1
    new_ids = tuple(nodes)
    # read on the device only: the session copies it; read on both sides: a MemcpyFromHost does
    copied = tuple(x for x in model.inputs if x in dev_in and x not in cpu_in)
    value_device: dict[str, str] = {}
    for nid in new_ids:
        node = nodes[nid]
        for k, out in enumerate(node.output):
            if out:
                value_device[out] = output_memory(node.domain, node.op_type, k) if device[nid] == CUDA else CPU
    rewritten = replace(model, nodes=tuple(nodes[i] for i in new_ids), node_ids=new_ids)
    return CudaPlacement(
        model=rewritten,
        node_device=device,
        value_device=value_device,
        copied_inputs=copied,
        renamed=renamed,
        no_kernel=no_kernel,
        cpu_preferred=moved,
    )


def _fresh_name(base: str, taken: set[str]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _copy(node: onnx.NodeProto) -> onnx.NodeProto:
    c = onnx.NodeProto()
    c.CopyFrom(node)
    return c


def run_order(g: OpGraph, order: tuple[int, ...], node_device: Mapping[int, str]) -> tuple[tuple[int, int], ...]:
    """(node id, stream) in the order a single-threaded two-stream session runs them.

    Stream 0 is the device of the first node in ``order``. Each stream's steps: a barrier per
    producer in another stream, the kernel, a trigger when another stream reads an output.
    A barrier opens at its second arrival (the waiting stream, the producer's trigger); the
    stream that opens it runs on inline (``RunSince``)."""
    if not order:
        return ()
    first = node_device[order[0]]
    stream = {nid: 0 if node_device[nid] == first else 1 for nid in order}
    steps: list[list[tuple[str, int]]] = [[], []]
    downstream: dict[int, list[tuple[int, int]]] = {}
    count: dict[int, int] = {}
    for nid in order:
        s = stream[nid]
        node = g.node(nid)
        producers = dict.fromkeys(
            g.producer[x] for x in (*node.input, *g.implicit.get(nid, ())) if x in g.producer
        )
        for p in producers:
            if stream[p] != s:
                barrier = len(count)
                count[barrier] = 2
                downstream.setdefault(p, []).append((s, len(steps[s])))
                steps[s].append(("barrier", barrier))
        steps[s].append(("launch", nid))
        readers = {c for out in node.output if out for c in g.consumers.get(out, ())}
        if any(stream[c] != s for c in readers):
            steps[s].append(("trigger", nid))
    ran: list[tuple[int, int]] = []

    def run(s: int, pc: int) -> None:
        while pc < len(steps[s]):
            kind, x = steps[s][pc]
            if kind == "barrier":
                count[x] -= 1
                if count[x]:
                    return
            elif kind == "launch":
                ran.append((x, s))
            else:
                for s2, pc2 in downstream.get(x, ()):
                    run(s2, pc2)
            pc += 1

    for s in (0, 1):
        run(s, 0)
    if len(ran) != len(order):  # cannot happen for a DAG; never guess silently
        raise AssertionError(f"two-stream replay ran {len(ran)} of {len(order)} nodes")
    return tuple(ran)


def fallback_without_kernel(p: CudaPlacement, types: Mapping[str, TensorType]) -> list[tuple[str, str, str]]:
    """(name, op, why) of the nodes the CUDA provider has no kernel for, left to the CPU provider,
    which has none for them either (``why``: :func:`graphmem.ort.insert_cast.kernel_problems`'
    phrase). onnxruntime refuses such a session as it refuses a CPU one (``core/framework/
    session_state.cc`` CreateKernels: "Could not find an implementation for AveragePool(1)",
    measured with the CUDA provider, fuzz case 348). ``types``: the placed graph's static types."""
    from graphmem.ort.insert_cast import kernel_problems

    model = p.model
    dtype = _dtype_of(types)
    nid_of = {id(n): nid for nid, n in zip(model.node_ids, model.nodes)}
    return [
        (node.name or node.op_type, node.op_type, why)
        for node, why in kernel_problems(model, types)
        if p.node_device.get(nid_of[id(node)]) == CPU and not _cuda_capable(model, node, dtype)
    ]


def placement_errors(p: CudaPlacement) -> list[str]:
    """Reads a session could not do: a CUDA kernel reading host memory in a device slot, or a
    kernel reading device memory from CPU. Empty for every graph :func:`place_cuda` returns."""
    model = p.model
    errors = []
    for nid, node in zip(model.node_ids, model.nodes):
        on_cuda = p.node_device[nid] == CUDA
        kernel_cpu = cpu_inputs(node.domain, node.op_type, since_version(model, node)) if on_cuda else ()
        for i, name in enumerate(node.input):
            if not name or name in model.weights:
                continue  # initializers are placed (or duplicated) where their readers need them
            if name in model.inputs:
                where = CUDA if name in p.copied_inputs else CPU
            else:
                where = p.value_device[name]
            wants = CUDA if on_cuda and i not in kernel_cpu else CPU
            if (where == CUDA) != (wants == CUDA):
                errors.append(f"{node.op_type} '{node.name or nid}' input {i} '{name}': on {where}, read on {wants}")
    return errors


def session_problems(model: Model) -> list[str]:
    """Every :func:`placement_errors` of ``model``'s CUDA session, and whether its two-stream run
    order is a topological order of the session graph; empty when all holds."""
    from graphmem.model.graph import build_graph
    from graphmem.ort.inference import infer_types
    from graphmem.ort.order import ort_order
    from graphmem.shapes.infer import ORT_STATIC

    g = build_graph(model)
    order = ort_order(g)
    placed = place_cuda(model, g, order, infer_types(g, order, view=ORT_STATIC).types)
    problems = placement_errors(placed)
    sg = build_graph(placed.model)
    ran = [nid for nid, _ in run_order(sg, ort_order(sg), placed.node_device)]
    position = {nid: k for k, nid in enumerate(ran)}
    if sorted(ran) != sorted(sg.dag.nodes) or any(position[u] >= position[v] for u, v in sg.dag.edges):
        problems.append("the run order is not a topological order of the session graph")
    return problems
