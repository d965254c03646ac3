"""The front stages of one analysis: from a loaded model to the graph onnxruntime's session runs.

Each stage is a function of the previous stage's result and the :class:`AnalysisRequest`, and
returns a frozen result (:func:`graphmem.analysis.pipeline.analyze_model` wires them):

1. :func:`load` — what onnxruntime refuses when it loads the file; the bindings checked against
   the graph inputs;
2. :func:`expand_functions` — function ops replaced by their bodies, as onnxruntime builds its
   graph (:mod:`graphmem.ort.functions`), and EnsureUniqueDQForNodeUnit;
3. :func:`types_and_shapes` — both type views (the run's, with the bindings; onnxruntime's static
   one, which its planner reuses buffers by), a what-if's dtype applied; a binding whose shapes
   infer but that a kernel refuses when the session runs is refused here
   (:func:`graphmem.analysis.causes.check_runnable`);
4. :func:`cpu_kernels` — which CPU kernels the element types find (:mod:`graphmem.ort.insert_cast`);
5. :func:`session_graph` — the graph the provider's session runs: inserted Casts, the
   duplicate-Cast remover, the CUDA partition (:mod:`graphmem.ort.session`).

The later stages (program, plans, control flow, FLOPs) are in :mod:`graphmem.analysis.plans`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace

from onnx import TensorProto

from graphmem.analysis.causes import check_runnable
from graphmem.analysis.dims import ResolvedInputs
from graphmem.analysis.request import AnalysisRequest
from graphmem.analysis.result import Approximation
from graphmem.analysis.whatif import cast_floats, cast_weights
from graphmem.errors import ModelLoadError, ShapeInferenceError, TensorSizeError, UnsupportedOpError
from graphmem.host import HostProfile
from graphmem.model.dtypes import dtype_name, parse_dtype
from graphmem.model.graph import OpGraph, build_graph
from graphmem.model.loading import MAX_TENSOR_BYTES, Model
from graphmem.model.program import tensor_size
from graphmem.model.types import TensorType, is_concrete
from graphmem.optable import KNOWN_DOMAINS, MS_DOMAIN, OpTable, default_domain_ops, domain_ops, op_key
from graphmem.ort.functions import inline_functions
from graphmem.ort.inference import infer_types
from graphmem.ort.insert_cast import CpuSession, cpu_session, kernel_problems, runs_as_body
from graphmem.ort.loadable import check_cpu_kernel_attributes, check_domains, check_nodes, check_opsets
from graphmem.ort.order import file_order, ort_order
from graphmem.ort.rewrites import ensure_unique_dq, remove_duplicate_casts
from graphmem.ort.session import SessionGraph
from graphmem.ort.session import session_graph as provider_graph
from graphmem.shapes.infer import ORT_STATIC, RUNTIME, ShapeResult

__all__ = [
    "ORDERINGS", "Loaded", "Expanded", "Typed", "CpuKernels", "Session",
    "load", "expand_functions", "expand_for_kernels", "types_and_shapes", "cpu_kernels", "session_graph",
    "static_types",
]

#: The execution orders (:data:`graphmem.analysis.request.EXECUTION_ORDERS`) as functions of a graph.
ORDERINGS = {"ort": ort_order, "file": file_order}


# --- 1. load --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Loaded:
    """A model onnxruntime would load, and the user's bindings checked against its inputs."""

    model: Model
    inputs: ResolvedInputs
    file_nodes: int  # nodes of the file's main graph (what the report counts)


def load(model: Model, request: AnalysisRequest) -> Loaded:
    """Refuse what onnxruntime refuses when it loads ``model`` (opsets, domains, CPU kernels'
    attributes, nodes; :mod:`graphmem.ort.loadable`), then resolve the request's bindings."""
    nodes = [*model.nodes, *(n for f in model.functions for n in f.node)]
    check_opsets(model.path, model.opsets, model.ir_version)
    check_domains(model.path, nodes, model.functions, model.opsets)
    if request.cpu:
        check_cpu_kernel_attributes(model.path, nodes)
    check_nodes(model, cpu=request.cpu)
    return Loaded(model=model, inputs=request.bindings.resolve(model.inputs), file_nodes=len(model.nodes))


# --- 2. expand functions ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Expanded:
    """The graph onnxruntime builds from the file: function ops expanded into their bodies."""

    model: Model
    inlined: tuple[str, ...] = ()  # op types expanded, sorted
    missing: tuple[str, ...] = ()  # op types run as functions that onnx gave no body for (kept whole)


def static_types(model: Model) -> dict[str, TensorType]:
    """The types onnxruntime knows when it builds the session (context-dependent function bodies
    are built from them)."""
    g = build_graph(model)
    return infer_types(g, ort_order(g), view=ORT_STATIC).types


def expand_functions(model: Model, request: AnalysisRequest) -> Expanded:
    """In onnxruntime's order (a graph as the user wrote it), function ops become their bodies
    (:func:`graphmem.ort.functions.inline_functions`) and, with the CPU type rules, every
    DequantizeLinear gets one reader (EnsureUniqueDQForNodeUnit, after AOT inlining). A graph
    onnxruntime wrote (``file`` order) is expanded already. When the CPU type rules are left out
    (a what-if, the training estimate), a node the CPU provider has no kernel for at its opset
    version is still refused (:func:`_check_kernel_versions`)."""
    expanded = Expanded(model=model)
    if request.execution_order == "ort":
        result = inline_functions(model, static_types)
        model = ensure_unique_dq(result.model) if request.kernel_rules else result.model
        expanded = Expanded(model=model, inlined=result.inlined, missing=result.missing)
    if request.cpu and (not request.kernel_rules or request.as_dtype is not None):
        _check_kernel_versions(expanded.model)
    return expanded


def expand_for_kernels(expanded: Expanded, typed: Typed, kernels: CpuKernels) -> Expanded:
    """The nodes without a CPU kernel for their element types that onnxruntime runs as their
    function body (``kernels.inline``), expanded too, in the typed model (a what-if's weights)."""
    result = inline_functions(typed.model, static_types, also=lambda n: tuple(n.output) in kernels.inline)
    return Expanded(
        model=result.model,
        inlined=tuple(sorted({*expanded.inlined, *result.inlined})),
        missing=tuple(sorted({*expanded.missing, *result.missing})),
    )


def _check_kernel_versions(model: Model) -> None:
    """Refuse a node the CPU provider has no kernel for at its opset version, whatever its types
    (PRelu-6, BatchNormalization-6, AveragePool-1: onnxruntime registers them from 7;
    session_state.cc: "Could not find an implementation for PRelu(6)"): the file cannot be loaded
    at all, so the what-if (``as_dtype``) and the training estimate (``kernel_rules=False``), which
    leave the type rules out, refuse it too, in the words of the CPU check."""
    missing = [(n, why) for n, why in kernel_problems(model, {}) if not runs_as_body(model, n, {})]
    if missing:
        node, why = missing[0]
        more = f" (and {len(missing) - 1} more nodes)" if len(missing) > 1 else ""
        raise UnsupportedOpError(
            f"node '{node.name or node.op_type}' ({node.op_type}): {why}{more}; onnxruntime cannot load this model"
        )


# --- 3. types and shapes ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Typed:
    """The graph in its execution order with both type views; a what-if's dtype applied to the
    types and to ``model``'s weights."""

    model: Model
    graph: OpGraph
    order: tuple[int, ...]
    runtime: ShapeResult  # the run's types and values (the bindings applied)
    static: ShapeResult  # what onnxruntime knows when it builds the session (its planner's view)


def types_and_shapes(model: Model, inputs: ResolvedInputs, request: AnalysisRequest, *, check: bool = True) -> Typed:
    """Both type views of ``model`` (:func:`graphmem.shapes.infer.infer_types`) in the request's
    order. ``check``: refuse a binding onnxruntime's kernels refuse at run time although its
    shapes infer (:func:`graphmem.analysis.causes.check_runnable`: an index past its table, a
    window wider than its input), an unknown-domain node without output shapes and a file whose
    value_info contradicts an inferred element type, as onnxruntime does (False when re-typing
    a graph already checked)."""
    ordering = ORDERINGS[request.execution_order]
    g = build_graph(model)
    order = ordering(g)
    runtime = infer_types(
        g, order, view=RUNTIME, dims=inputs.dims, shapes=inputs.shapes, input_values=inputs.values, body_order=ordering
    )
    static = infer_types(g, order, view=ORT_STATIC, body_order=ordering)
    if request.as_dtype is not None:  # the converted model: its types, then what onnxruntime makes of them
        target = parse_dtype(request.as_dtype)
        runtime = replace(runtime, types=cast_floats(runtime.types, target))
        static = replace(static, types=cast_floats(static.types, target))
    if check:  # a node onnxruntime's kernel refuses at these bindings: no figures
        check_runnable(
            g, order, runtime.types, runtime.values, bindings=request.bindings, failed=runtime.failed_outputs
        )
        _check_domains(g, runtime.types)
        _check_type_conflicts(static.type_conflicts)
    if request.as_dtype is not None:
        model = replace(model, weights=cast_weights(model.weights, parse_dtype(request.as_dtype)))
    return Typed(model=model, graph=g, order=order, runtime=runtime, static=static)


@functools.lru_cache(maxsize=1)
def _registered_domains() -> frozenset[str]:
    from onnx import defs

    return frozenset({s.domain for s in defs.get_all_schemas()} | KNOWN_DOMAINS)


def _check_domains(g: OpGraph, types: Mapping[str, TensorType]) -> None:
    for nid in g.dag.nodes:
        node = g.node(nid)
        if node.domain in KNOWN_DOMAINS or node.domain in _registered_domains():  # onnx's list only when needed
            continue
        for out in node.output:
            t = types.get(out)
            if out and (t is None or not is_concrete(t.shape)):
                raise ShapeInferenceError(
                    f"op '{node.op_type}' from unknown domain '{node.domain}' (node "
                    f"'{node.name or nid}'): the file gives no shape for its output '{out}'"
                )


def _check_type_conflicts(conflicts: tuple[tuple[str, str, int, int], ...]) -> None:
    """onnxruntime refuses a file whose value_info contradicts a node's inferred element type
    (``Graph::InferAndVerifyTypeMatch``, core/graph/graph.cc): so does graphmem."""
    if conflicts:
        node, tensor, inferred, declared = conflicts[0]
        raise ModelLoadError(
            f"node '{node}' writes '{tensor}' as {dtype_name(inferred)} but the file declares it "
            f"{dtype_name(declared)}: onnxruntime refuses to load this model (type error)"
        )


# --- 4. CPU kernels -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CpuKernels:
    """What the CPU provider's kernels make of the element types (None where its type rules do
    not apply: another provider, the training estimate), and the host's say on it."""

    cpu: CpuSession | None
    host: tuple[Approximation, ...] = ()  # the figures rely on x86-64 kernels the request's host lacks

    @property
    def inline(self) -> frozenset[tuple[str, ...]]:
        """Outputs of the nodes onnxruntime runs as their function body for their types."""
        return self.cpu.inline if self.cpu is not None else frozenset()


def cpu_kernels(typed: Typed, request: AnalysisRequest) -> CpuKernels:
    """Cast insertion and nodes without a kernel (:func:`graphmem.ort.insert_cast.cpu_session`)."""
    if not request.cpu_type_rules:
        return CpuKernels(cpu=None)
    return CpuKernels(
        cpu=cpu_session(typed.model, typed.order, typed.static.types, typed.runtime.types),
        host=_host_kernels(typed.graph, typed.static.types, request.host),
    )


#: Ops whose CPU kernel (and so its buffers) MLAS picks by CPU architecture (graphmem/ort/mlas.py).
_MLAS_QUANTIZED: OpTable[bool] = OpTable(
    default_domain_ops(("QLinearConv", "ConvInteger", "QLinearMatMul", "MatMulInteger"), True),
    domain_ops(MS_DOMAIN, ("QLinearConv", "QGemm", "DynamicQuantizeMatMul", "MatMulIntegerToFloat"), True),
)


def _host_kernels(g: OpGraph, types: Mapping[str, TensorType], host: HostProfile) -> tuple[Approximation, ...]:
    """On a host that is not x86-64 (:func:`graphmem.ort.kernels.host_problem`), a graph whose CPU
    figures depend on the x86-64 kernel table (float16/bfloat16 tensors: which nodes run behind
    Casts) or on MLAS's x86-64 quantized kernels is not called exact: the runtime there is another build."""
    from graphmem.ort.kernels import host_problem

    problem = host_problem(host.machine)
    if problem is None:
        return ()
    half = {TensorProto.FLOAT16, TensorProto.BFLOAT16}
    relies = any(t is not None and t.dtype in half for t in types.values()) or any(
        op_key(g.node(nid)) in _MLAS_QUANTIZED for nid in g.dag.nodes
    )
    return (Approximation(kind="unknown_kernel", node="", detail=problem),) if relies else ()


# --- 5. the session's graph -----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    """The graph the provider's session runs: ``model``/``graph``/``order`` after Cast insertion
    and the duplicate-Cast remover, their types, and the provider's own graph (``provider``: the
    same graph on CPU; partitioned, with copies, on CUDA)."""

    model: Model
    graph: OpGraph
    order: tuple[int, ...]
    runtime: ShapeResult
    static: ShapeResult
    provider: SessionGraph
    type_note: str = ""  # the runtime line's words on nodes run behind Casts or not runnable


def session_graph(typed: Typed, kernels: CpuKernels, request: AnalysisRequest) -> Session:
    """Inserted Casts (``kernels``), absurd sizes refused, the duplicate-Cast remover (onnxruntime's:
    with ``kernel_rules`` off, PyTorch runs every Cast the file has), then the provider's graph."""
    ordering = ORDERINGS[request.execution_order]
    model, g, order, runtime, static = typed.model, typed.graph, typed.order, typed.runtime, typed.static
    note = ""
    if kernels.cpu is not None:
        note = _cpu_type_note(kernels.cpu, what_if=request.as_dtype is not None)
        ins = kernels.cpu.insertion
        if ins.casts:
            model, g = ins.model, build_graph(ins.model)
            order = ordering(g)
            runtime, static = replace(runtime, types=ins.runtime), replace(static, types=ins.static)
    _check_sizes(runtime.types, [o for nid in order for o in g.node(nid).output if o])  # before any sum
    _check_sizes(runtime.types, list(model.inputs))
    _check_weight_sizes(model)
    rewritten = remove_duplicate_casts(model, static.types) if request.kernel_rules else model
    if rewritten is not model:  # onnxruntime runs the rewritten graph, in its own order
        model, g = rewritten, build_graph(rewritten)
        order = ordering(g)
    provider = provider_graph(model, g, order, runtime.types, static.types, request.provider, ordering)
    return Session(model=model, graph=g, order=order, runtime=runtime, static=static, provider=provider, type_note=note)


def _cpu_type_note(cpu: CpuSession, *, what_if: bool) -> str:
    """The runtime line's words on nodes without a CPU kernel for their element types; a model
    onnxruntime cannot load is refused, a what-if (``as_dtype``) only says so."""
    if cpu.missing:
        name, op, why = cpu.missing[0]
        more = f" (and {len(cpu.missing) - 1} more nodes)" if len(cpu.missing) > 1 else ""
        if not what_if:
            raise UnsupportedOpError(f"node '{name}' ({op}): {why}{more}; onnxruntime cannot load this model")
        return f"; not runnable as converted: node '{name}' ({op}): {why}{more}"
    fallback = cpu.insertion.fallback
    if fallback:
        return (
            f"; {len(fallback)} float16 nodes run in float32 behind {cpu.insertion.casts} inserted Casts "
            "(no float16 CPU kernel)"
        )
    return ""


def _check_sizes(types: Mapping[str, TensorType], names: list[str]) -> None:
    """Refuse tensors of absurd size, naming the first one."""
    for name in names:
        size = tensor_size(types.get(name))
        if size is not None and size > MAX_TENSOR_BYTES:
            raise TensorSizeError(f"tensor '{name}' would take {size:,} bytes (more than 2**60): its dims are absurd")


def _check_weight_sizes(model: Model) -> None:
    for w in model.weights.values():
        if w.nbytes is not None and w.nbytes > MAX_TENSOR_BYTES:
            raise TensorSizeError(
                f"weight '{w.name}' would take {w.nbytes:,} bytes (more than 2**60): its dims are absurd"
            )
