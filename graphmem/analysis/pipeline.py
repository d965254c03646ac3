"""The pipeline, end to end: load → graph → order → shapes → program → plans → result.

:func:`analyze` is the library call behind ``graphmem peak``; the CLI only renders its result.
"""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import onnx
from onnx import TensorProto

from graphmem.analysis.causes import unresolved_causes
from graphmem.analysis.dims import resolve_inputs
from graphmem.analysis.exactness import approximations
from graphmem.analysis.result import (
    ActivationsInfo,
    Analysis,
    Approximation,
    IOInfo,
    ModelInfo,
    ShapesInfo,
    StepMemory,
    WeightsInfo,
)
from graphmem.analysis.whatif import cast_floats, cast_weights
from graphmem.errors import ModelLoadError, ShapeInferenceError, TensorSizeError, UnsupportedOpError, UsageError
from graphmem.host import HostProfile, resolve_host, this_host
from graphmem.model.dtypes import dtype_name, parse_dtype
from graphmem.model.graph import OpGraph, build_graph
from graphmem.model.loading import MAX_TENSOR_BYTES, Model, load_model
from graphmem.model.program import build_program, tensor_size, value_size
from graphmem.optable import (
    DEFAULT_DOMAIN, KNOWN_DOMAINS, MS_DOMAIN, OpTable, default_domain_ops, domain_ops, normalize_domain, op_key,
)
from graphmem.ort.functions import inline_functions
from graphmem.model.subgraphs import all_weights
from graphmem.analysis.bodyflops import flops_with_bodies
from graphmem.ort.insert_cast import CpuSession, cpu_session
from graphmem.ort.order import file_order, finalize_reorders, node_stages, ort_order, session_orders
from graphmem.ort.rewrites import ensure_unique_dq, remove_duplicate_casts
from graphmem.ort.rules import sharing, unwritten_outputs
from graphmem.planner.greedy import plan_greedy
from graphmem.planner.liveness import analyze_liveness
from graphmem.ort.allocation import OrtPlan, plan_ort
from graphmem.ort.loadable import check_cpu_kernel_attributes, check_domains, check_nodes, check_opsets
from graphmem.ort.scratch import prepacked_in_arena, replay_run
from graphmem.ort.scratch import step_scratch as scratch_per_step
from graphmem.ort.session import CUDA_RUNTIME, PROVIDERS, main_device_only, session_graph
from graphmem.flops import count_flops
from graphmem.shapes.infer import ORT_STATIC, RUNTIME, infer_types
from graphmem.model.types import TensorType, is_concrete

__all__ = ["analyze", "analyze_model", "analyze_graph_opt"]


def analyze(
    path: str | os.PathLike[str],
    *,
    dims: Mapping[str, int] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
    values: Mapping[str, Sequence[int]] | None = None,
    provider: str = "cpu",
    as_dtype: str | None = None,
    execution_order: str = "ort",
    host: HostProfile | None = None,
) -> Analysis:
    """Analyze the ONNX file at ``path`` with symbolic dims bound by ``dims``, for a run on
    ``host`` (None: this machine, :func:`graphmem.host.this_host`; the result records it).

    ``shapes`` set inputs' whole shapes (overriding named, unnamed, ``-1`` and shared-name
    dims) and ``values`` the values of small inputs (:mod:`graphmem.analysis.dims`).

    ``as_dtype`` ("float16", "bfloat16", "int8", …) is a what-if: every floating tensor, weights
    included, is sized as if cast to that type; integer shape tensors are untouched.
    ``execution_order``: "ort" runs the nodes in onnxruntime's order for the graph as given;
    "file" in the file's node order — for a graph onnxruntime wrote after optimizing
    (``graphmem.ort.optimized``), which it writes in its session's execution order but
    renumbered, so that its reverse DFS over the file no longer gives that order.
    Raises a :class:`graphmem.errors.GraphmemError` subclass on bad input.
    """
    with _gc_paused():
        return _analyze_path(
            path, dims=dims, shapes=shapes, values=values, provider=provider, as_dtype=as_dtype,
            execution_order=execution_order, host=resolve_host(host),
        )


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while analysing: the analysis builds tens of thousands of
    small objects that all live until it returns, and the collector's passes over them cost
    about a tenth of the run on a GPT-2 export. The caller's setting is restored."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _analyze_path(path, *, execution_order, **kwargs) -> Analysis:  # type: ignore[no-untyped-def]
    model = load_model(path)
    return analyze_model(model, execution_order=execution_order, **kwargs)


def _static_types(model: Model) -> dict[str, TensorType]:
    """The types onnxruntime knows when it builds the session (context-dependent function bodies
    are built from them)."""
    g = build_graph(model)
    return infer_types(g, ort_order(g), view=ORT_STATIC).types


def _missing_bodies(model: Model, missing: tuple[str, ...]) -> tuple[Approximation, ...]:
    return tuple(
        Approximation(
            kind="unknown_kernel", node=n.name or n.op_type,
            detail=f"onnxruntime runs {n.op_type} as its ONNX function body, which needs input types graphmem "
            "does not infer here: planned as one node",
        )
        for n in model.nodes if n.op_type in missing
    )


def analyze_model(
    model: Model,
    *,
    dims: Mapping[str, int] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
    values: Mapping[str, Sequence[int]] | None = None,
    provider: str = "cpu",
    as_dtype: str | None = None,
    execution_order: str = "ort",
    kernel_rules: bool = True,
    host: HostProfile | None = None,
) -> Analysis:
    """Same as :func:`analyze`, for an already loaded :class:`Model`.

    ``kernel_rules=False`` skips what onnxruntime's CPU provider does with the element types
    (float16 Cast insertion and the duplicate-Cast remover, refusing nodes it has no kernel for): for estimates of other runtimes
    (the PyTorch training estimate)."""
    if provider not in PROVIDERS:
        raise UsageError(f"provider '{provider}': expected one of {', '.join(PROVIDERS)}")
    host = resolve_host(host)
    orders = {"ort": ort_order, "file": file_order}
    if execution_order not in orders:
        raise UsageError(f"execution order '{execution_order}': expected one of {', '.join(orders)}")
    ordering = orders[execution_order]
    check_opsets(model.path, model.opsets, model.ir_version)
    check_domains(model.path, [*model.nodes, *(n for f in model.functions for n in f.node)], model.functions,
                  model.opsets)
    if provider == "cpu":
        check_cpu_kernel_attributes(model.path, [*model.nodes, *(n for f in model.functions for n in f.node)])
    check_nodes(model, cpu=provider == "cpu")
    given = resolve_inputs(model.inputs, dims=dims, shapes=shapes, values=values)
    bound = given.dims
    file_nodes = len(model.nodes)
    inlined = missing = ()
    if execution_order == "ort":  # the graph onnxruntime builds: function ops expanded (ort/functions.py)
        expansion = inline_functions(model, _static_types)
        model, inlined, missing = expansion.model, expansion.inlined, expansion.missing
        if kernel_rules:  # onnxruntime's EnsureUniqueDQForNodeUnit: after AOT inlining, at every level
            model = ensure_unique_dq(model)
    if provider == "cpu" and (not kernel_rules or as_dtype is not None):
        _check_kernel_versions(model)
    target = parse_dtype(as_dtype) if as_dtype is not None else None

    def typed(model: Model):  # type: ignore[no-untyped-def]
        """The graph, its order and both type views (the what-if's conversion applied)."""
        g = build_graph(model)
        order = ordering(g)
        runtime = infer_types(
            g, order, view=RUNTIME, dims=bound, shapes=given.shapes, input_values=given.values, body_order=ordering
        )
        static = infer_types(g, order, view=ORT_STATIC, body_order=ordering)
        if target is not None:  # the converted model: its types, then what onnxruntime makes of them
            runtime = replace(runtime, types=cast_floats(runtime.types, target))
            static = replace(static, types=cast_floats(static.types, target))
        return g, order, runtime, static

    g, order, runtime, static = typed(model)
    _check_domains(g, runtime.types)
    _check_type_conflicts(static.type_conflicts)
    host_notes = _host_kernels(g, static.types, host) if provider == "cpu" and kernel_rules else ()
    if target is not None:
        model = replace(model, weights=cast_weights(model.weights, target))
    type_note = ""
    if provider == "cpu" and kernel_rules:
        cpu = cpu_session(model, order, static.types, runtime.types)
        if cpu.inline and execution_order == "ort":  # no kernel for these types: function bodies
            written = _as_onnxruntime_writes_it(model, as_dtype, dims=dims, shapes=shapes, values=values, host=host)
            if written is not None:
                return written
            expansion = inline_functions(model, _static_types, also=lambda n: tuple(n.output) in cpu.inline)
            model = expansion.model
            inlined = tuple(sorted({*inlined, *expansion.inlined}))
            missing = tuple(sorted({*missing, *expansion.missing}))
            g, order, runtime, static = typed(model)
            cpu = cpu_session(model, order, static.types, runtime.types)
        type_note = _cpu_type_note(cpu, what_if=target is not None)
        ins = cpu.insertion
        if ins.casts:
            model, g = ins.model, build_graph(ins.model)
            order = ordering(g)
            runtime, static = replace(runtime, types=ins.runtime), replace(static, types=ins.static)
    produced = [o for nid in order for o in g.node(nid).output if o]
    _check_sizes(runtime.types, produced)  # before any planner adds sizes up
    _check_sizes(runtime.types, list(model.inputs))
    _check_weight_sizes(model)
    # InsertCastTransformer's duplicate-Cast remover is onnxruntime's: PyTorch (kernel_rules off)
    # runs every Cast the file has
    rewritten = remove_duplicate_casts(model, static.types) if kernel_rules else model
    if rewritten is not model:  # onnxruntime runs the rewritten graph, in its own order
        model, g = rewritten, build_graph(rewritten)
        order = ordering(g)
    session = session_graph(model, g, order, runtime.types, static.types, provider, ordering)
    program, names = build_program(
        session.graph,
        session.order,
        runtime=session.runtime,
        static=session.static,
        sharing=sharing,
        unwritten=unwritten_outputs,
        devices=session.devices,
        values_known=runtime.values,
    )
    plan = plan_ort(program)
    flow = None
    if runtime.bodies:  # control flow's modules load only here
        from graphmem.analysis.controlflow import control_flow_approximations, plan_control_flow
        from graphmem.ort.controlflow import replay

        if session.devices is not None:
            raise UsageError("--provider cuda: control flow (If/Loop/Scan) is emulated on CPU only")
        flow = plan_control_flow(
            program, plan, names, session.order, session.graph.protos, runtime.bodies, static.bodies,
            session.static, session.runtime, model.opset, model, host=host,
        )
        ops = tuple(session.graph.node(nid).op_type for nid in session.order)
        top_scratch, _ = scratch_per_step(g, order, runtime.types, runtime.values, host=host)
        flow_replay = replay(
            program, plan, flow.kernels, ops=ops, scratch=[(ks.before, ks.after) for ks in top_scratch],
            prepacked=prepacked_in_arena(g, runtime.types, runtime.values, host=host),
        )
    main = main_device_only(program)
    live = analyze_liveness(main)
    arena = plan_greedy(live)
    if session.devices is None:
        run = replay_run(program, plan, graph=g, order=order, types=runtime.types, values=runtime.values, host=host)
        scratch, in_use, unmodelled = max(run.per_step, default=0), run.peak_bytes, run.unmodelled
        step_in_use, step_scratch = run.step_high, run.per_step
    else:  # CUDA kernels' workspaces (cuDNN, cuBLAS) are not modelled
        scratch, in_use, unmodelled = 0, None, ("every CUDA kernel",)
        step_in_use = step_scratch = None
    produced = [o for nid in order for o in g.node(nid).output if o]
    unresolved = tuple(n for n in produced if value_size(runtime.types.get(n)) is None)
    weights = _weights(model)
    inputs_bytes = sum(_input_bytes(runtime.types.get(n)) for n in model.inputs)
    outputs_bytes = sum(tensor_size(runtime.types.get(n)) or 0 for n in model.outputs)
    peak_step = plan.peak_step
    peak_node = program.steps[peak_step].label if peak_step >= 0 else ""
    peak_bytes = plan.peak_bytes
    timeline = tuple((step.label, held) for step, held in zip(program.steps, plan.in_use))
    step_ops = tuple(session.graph.node(nid).op_type for nid in session.order)
    flow_approximations: list[Approximation] = []
    top_unresolved = unresolved
    if flow is not None:
        samples = flow_replay.samples
        peak_bytes, peak_node = flow_replay.peak_bytes, flow_replay.peak_label
        peak_step = next(i for i, x in enumerate(samples) if x.bytes == peak_bytes)
        timeline = tuple((x.label, x.bytes) for x in samples)
        step_ops = tuple(x.op for x in samples)
        flow_approximations.extend(control_flow_approximations(flow))
        unresolved = unresolved + tuple(flow.unresolved)
        # kernel scratch and the arena replayed through the bodies (graphmem.ort.controlflow)
        in_use = flow_replay.in_use_peak_bytes
        scratch = max(scratch, flow.scratch_bytes)
        unmodelled = tuple(dict.fromkeys((*unmodelled, *flow.scratch_unmodelled)))
        produced = produced + list(flow.tensors)
    assumed = {c.node: c.assumed for c in flow.choices} if flow is not None else {}
    causes = unresolved_causes(  # the nodes that cannot take their inputs, and the dims' ranges that work
        g, order, runtime.types, runtime.values, dims=dims or {}, shapes=shapes, input_values=values
    ) if top_unresolved else ()
    flop_report, bodies = flops_with_bodies(g, runtime, order, assumed=assumed)
    activations = ActivationsInfo(
        peak_bytes=peak_bytes,
        peak_node=peak_node,
        peak_step=peak_step,
        lower_bound_bytes=live.lower_bound,
        no_reuse_bytes=live.no_reuse,
        best_arena_bytes=arena.arena_bytes,
        unknown=tuple(names[v] for v in plan.unknown_sizes),
        runtime=_runtime_note(CUDA_RUNTIME if session.devices is not None else "onnxruntime 1.31 CPU", inlined)
        + type_note,
        timeline=timeline,
        step_ops=step_ops,
        live_at_peak=_live_at(plan, names, peak_step) if flow is None else frozenset(),
        scratch_bytes=scratch,
        in_use_peak_bytes=in_use,
        scratch_unmodelled=unmodelled,
        provider=provider,
        approximations=approximations(
            g, order, unresolved=top_unresolved, scratch_unmodelled=unmodelled, provider=provider,
            planned=frozenset(runtime.bodies) if flow is not None else frozenset(),
            causes={t: c.detail for c in causes for t in c.tensors},
        ) + _missing_bodies(model, missing) + tuple(flow_approximations)
        + (_duplicated_dq_in_bodies(model) if execution_order == "ort" else ())
        + _cuda_inlined(session) + host_notes,
    )
    return Analysis(
        model=ModelInfo(
            path=model.path, opset=model.opset, nodes=file_nodes, dims=bound, shapes=dict(given.given_shapes),
            values={k: _given_values(v) for k, v in given.values.items()},
        ),
        weights=weights,
        activations=activations,
        io=IOInfo(inputs_bytes=inputs_bytes, outputs_bytes=outputs_bytes),
        shapes=ShapesInfo(
            tensors=len(model.inputs) + len(model.weights) + len(produced), unresolved=unresolved,
            causes=causes,
        ),
        total_bytes=weights.bytes + activations.peak_bytes + inputs_bytes,
        graph=g,
        order=order,
        types=runtime.types,
        values=runtime.values,
        flops=flop_report,
        bodies=bodies,
        placement=session.placement_info(plan, runtime.types),
        steps=StepMemory(
            program=program, plan=plan, lower_bound=live.live_bytes, in_use=step_in_use, scratch=step_scratch
        ) if flow is None else None,  # a control-flow run is many plans: drawn from its replay
        replay=flow_replay if flow is not None else None,
        host=host,
    )


def _as_onnxruntime_writes_it(model: Model, as_dtype: str | None, **inputs) -> Analysis | None:  # type: ignore[no-untyped-def]
    """A graph with nodes onnxruntime runs as their function body *because of their element types*
    (float16 Softmax, ...): the graph onnxruntime builds, written by onnxruntime at
    ORT_DISABLE_ALL (bodies inlined, Casts inserted, in its execution order) and analysed as it
    runs; for a what-if, of the converted file (``write_converted``). The static expansion
    (ort/functions.py) does not reproduce the Casts around those bodies exactly (BERT-base float16
    at batch 4: 0.6 % over), so it is used only when onnxruntime cannot write the graph (None)."""
    from pathlib import Path

    from graphmem.analysis.whatif import write_converted
    from graphmem.ort.optimized import optimized_model, temporary_dir

    if not model.path or not Path(model.path).is_file():
        return None
    try:
        with temporary_dir() as tmp:
            source = Path(model.path)
            if as_dtype is not None:
                source = write_converted(source, parse_dtype(as_dtype), Path(tmp) / "converted.onnx")
            written = optimized_model(source, "none", Path(tmp), always=True)
            result = analyze_model(load_model(written, validate=False), execution_order="file", **inputs)
    except UnsupportedOpError:
        return None
    note = f"{result.activations.runtime}; graph as onnxruntime builds it (function bodies for the element types)"
    return replace(
        result,
        model=replace(result.model, path=model.path),
        activations=replace(result.activations, runtime=note),
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


def _cuda_inlined(session) -> tuple[Approximation, ...]:  # type: ignore[no-untyped-def]
    """Float16 nodes a CUDA session runs on the CPU provider that onnxruntime runs as their
    function body (no float16 CPU kernel; INLINED_WITHOUT_KERNEL): graphmem plans them behind
    Casts instead, so the figures are not exact."""
    if session.cuda is None:
        return ()
    return tuple(
        Approximation(
            kind="rewrite_not_modelled", node=name,
            detail="float16 node without a CUDA or float16 CPU kernel that onnxruntime runs as its function "
            "body; graphmem plans it in float32 behind Casts instead",
        )
        for name in session.cuda.inlined_not_modelled
    )


def _duplicated_dq_in_bodies(model: Model) -> tuple[Approximation, ...]:
    """A DequantizeLinear read by several nodes (or by a node and the body's outputs) inside an
    If/Loop/Scan body: onnxruntime's EnsureUniqueDQForNodeUnit rewrites bodies too (``Recurse``,
    core/optimizer/qdq_transformer/ensure_unique_dq_for_node_unit.cc) but graphmem emulates it on
    the main graph only (:func:`graphmem.ort.rewrites.ensure_unique_dq`): the body copies' float
    outputs are not planned."""
    out = []

    def visit(graph: onnx.GraphProto) -> None:
        readers: dict[str, int] = {}
        for n in graph.node:
            for x in n.input:
                readers[x] = readers.get(x, 0) + 1
        outputs = {o.name for o in graph.output}
        for n in graph.node:
            if n.op_type == "DequantizeLinear" and normalize_domain(n.domain) in (DEFAULT_DOMAIN, MS_DOMAIN) and n.output:
                copies = readers.get(n.output[0], 0) - (n.output[0] not in outputs)
                if copies > 0:
                    out.append(Approximation(
                        kind="rewrite_not_modelled", node=n.name or "DequantizeLinear",
                        detail=f"in a control-flow body: onnxruntime's EnsureUniqueDQForNodeUnit runs {copies} more "
                        f"cop{'y' if copies == 1 else 'ies'} of this DequantizeLinear (one per reader), which graphmem "
                        "does not plan in bodies: both figures may be low",
                    ))
            for a in n.attribute:
                for body in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                    visit(body)

    for node in model.nodes:
        for a in node.attribute:
            for body in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                visit(body)
    return tuple(out)


def _check_type_conflicts(conflicts: tuple[tuple[str, str, int, int], ...]) -> None:
    """onnxruntime refuses a file whose value_info contradicts a node's inferred element type
    (``Graph::InferAndVerifyTypeMatch``, core/graph/graph.cc): so does graphmem."""
    if conflicts:
        node, tensor, inferred, declared = conflicts[0]
        raise ModelLoadError(
            f"node '{node}' writes '{tensor}' as {dtype_name(inferred)} but the file declares it "
            f"{dtype_name(declared)}: onnxruntime refuses to load this model (type error)"
        )


def _check_kernel_versions(model: Model) -> None:
    """Refuse a node the CPU provider has no kernel for at its opset version, whatever its types
    (PRelu-6, BatchNormalization-6, AveragePool-1: onnxruntime registers them from 7;
    session_state.cc: "Could not find an implementation for PRelu(6)"): the file cannot be loaded
    at all, so the what-if (``as_dtype``) and the training estimate (``kernel_rules=False``), which
    leave the type rules out, refuse it too, in the words of the CPU check."""
    from graphmem.ort.insert_cast import _runs_as_body, kernel_problems

    missing = [(n, why) for n, why in kernel_problems(model, {}) if not _runs_as_body(model, n, {})]
    if missing:
        node, why = missing[0]
        more = f" (and {len(missing) - 1} more nodes)" if len(missing) > 1 else ""
        raise UnsupportedOpError(
            f"node '{node.name or node.op_type}' ({node.op_type}): {why}{more}; onnxruntime cannot load this model"
        )


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


def _runtime_note(runtime: str, inlined: tuple[str, ...]) -> str:
    return f"{runtime}; {', '.join(inlined)} inlined as onnxruntime runs them" if inlined else runtime


def _live_at(plan: OrtPlan, names: tuple[str, ...], step: int) -> frozenset[str]:
    """Tensors whose buffer is requested and not yet released at ``step``."""
    held = set()
    for b, start, end in zip(plan.fresh, plan.alloc_step, plan.free_step):
        if start <= step and (end is None or end >= step):
            held.add(b)
    return frozenset(names[v] for v, b in enumerate(plan.buffer_of) if b in held)


@functools.lru_cache(maxsize=1)
def _registered_domains() -> frozenset[str]:
    from onnx import defs

    return frozenset({s.domain for s in defs.get_all_schemas()} | KNOWN_DOMAINS)


def _check_domains(g: OpGraph, types: dict[str, TensorType]) -> None:
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


def _check_sizes(types: dict[str, TensorType], names: list[str]) -> None:
    """Refuse tensors of absurd size, naming the first one."""
    for name in names:
        t = types.get(name)
        size = tensor_size(t)
        if size is not None and size > MAX_TENSOR_BYTES:
            raise TensorSizeError(f"tensor '{name}' would take {size:,} bytes (more than 2**60): its dims are absurd")


def _check_weight_sizes(model: Model) -> None:
    for w in model.weights.values():
        if w.nbytes is not None and w.nbytes > MAX_TENSOR_BYTES:
            raise TensorSizeError(f"weight '{w.name}' would take {w.nbytes:,} bytes (more than 2**60): its dims are absurd")


def _weights(model: Model) -> WeightsInfo:
    by: dict[str, tuple[int, int]] = {}
    params = total = external = 0
    unknown = []
    for w in all_weights(model):
        params += w.numel
        if w.nbytes is None:
            unknown.append(w.name)
            continue
        total += w.nbytes
        if w.external:
            external += w.nbytes
        p, b = by.get(dtype_name(w.dtype), (0, 0))
        by[dtype_name(w.dtype)] = (p + w.numel, b + w.nbytes)
    return WeightsInfo(
        params=params, bytes=total, by_dtype=by, external_bytes=external, unknown=tuple(unknown)
    )


def _input_bytes(t):  # type: ignore[no-untyped-def]
    """A graph input's bytes: a tensor's, a sequence's elements' (``--shape s=[…]``)."""
    if t is not None and t.kind == "sequence_type" and t.elements:
        return sum(tensor_size(e) or 0 for e in t.elements)
    return tensor_size(t) or 0


def _given_values(array: np.ndarray) -> tuple[int | float, ...]:
    """A ``--value`` array as the report gives it back: ints for integer and bool inputs (a bool
    as 0/1, as ``--value`` takes it), Python floats for a float input."""
    flat = array.reshape(-1)
    return tuple(int(x) for x in flat) if flat.dtype.kind in "biu" else tuple(float(x) for x in flat)


def analyze_graph_opt(
    path: str | os.PathLike[str],
    graph_opt: str = "none",
    *,
    dims: Mapping[str, int] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
    values: Mapping[str, Sequence[int]] | None = None,
    provider: str = "cpu",
    as_dtype: str | None = None,
    host: HostProfile | None = None,
) -> Analysis:
    """:func:`analyze` of the graph onnxruntime runs at ``graph_opt`` (none|basic|extended|all)
    on ``host`` (None: this machine).

    Above ``none`` onnxruntime itself optimizes the file (:func:`graphmem.verify.optimized_model`,
    into a private temporary directory, never next to the model) and the graph it writes is
    analysed in its execution order; the result names the original file and the level.

    With ``as_dtype`` the what-if is the converted model as onnxruntime optimizes *it*: the file
    is converted first (:func:`graphmem.analysis.whatif.write_converted`, every floating tensor),
    then optimized — a float16 graph fuses and keeps weights differently from the float32 one,
    so retyping the optimized float32 graph would be wrong (ResNet-18 at batch 1: 2.4x the
    measured conversion). A conversion onnxruntime cannot build is refused (UsageError naming
    onnxruntime's reason): at ``none`` the what-if is sized without a session.
    """
    host = resolve_host(host)
    if graph_opt == "none":
        return analyze(path, dims=dims, shapes=shapes, values=values, provider=provider, as_dtype=as_dtype, host=host)
    if provider != "cpu":
        raise UsageError(
            f"--graph-opt {graph_opt} with --provider {provider}: the optimized graph is the one a CPU "
            "session writes (fusions differ by provider); use --graph-opt none"
        )
    from pathlib import Path

    from graphmem.analysis.whatif import write_converted
    from graphmem.ort.optimized import optimized_model, temporary_dir

    _check_optimizing_host(graph_opt, host)
    original = load_model(path)  # one-line errors for bad files before onnxruntime sees them
    with temporary_dir() as tmp:
        source = Path(path)
        if as_dtype is not None:
            source = write_converted(source, parse_dtype(as_dtype), Path(tmp) / "converted.onnx")
            original = load_model(source)
        try:
            optimized = optimized_model(source, graph_opt, Path(tmp))
        except UnsupportedOpError as exc:
            if as_dtype is None:
                raise
            raise UsageError(
                f"--as-dtype {as_dtype} --graph-opt {graph_opt}: onnxruntime cannot build the converted "
                f"model, so there is no optimized graph to size ({str(exc).removeprefix('onnxruntime could not optimize the model: ')}); "
                "--graph-opt none sizes the what-if without a session"
            ) from None
        with _gc_paused():
            model = with_session_shapes(load_model(optimized, validate=False), original)  # onnxruntime wrote it
            model = replace(model, node_stage=node_stages(model.nodes, original.nodes))  # NodeIndex order
            result = _analyze_session_orders(  # as_dtype: the file is converted already
                model, dims=dims, shapes=shapes, values=values, provider=provider, as_dtype=None, host=host
            )
    if as_dtype is not None:
        note = f"{result.activations.runtime}; as {as_dtype}: the converted file as onnxruntime optimizes it"
        result = replace(result, activations=replace(result.activations, runtime=note))
    return replace(result, model=replace(result.model, path=str(path), graph_opt=graph_opt))


def _check_optimizing_host(graph_opt: str, host: HostProfile) -> None:
    """Above ``none`` the graph analysed is the one onnxruntime *on this machine* writes; at ``all``
    its NCHWc layout follows this machine's MLAS block size (``MlasNchwcGetBlockSize``: 8 with AVX2,
    16 with AVX-512F; none off x86-64). For a host whose layout would differ there is no graph to
    analyse: refused (UsageError) rather than predicted from this machine's."""
    if graph_opt != "all":
        return
    here = this_host()
    if (here.machine, here.nchwc_block) != (host.machine, host.nchwc_block):
        raise UsageError(
            f"--graph-opt all --host: onnxruntime on this machine ({here.machine}, NCHWc blocks of "
            f"{here.nchwc_block}) writes the optimized graph, and the host predicted for ({host.machine}, "
            f"NCHWc blocks of {host.nchwc_block}) would run another layout; use --graph-opt extended, or "
            "run graphmem on a machine like that host"
        )


def _analyze_session_orders(model: Model, **inputs) -> Analysis:  # type: ignore[no-untyped-def]
    """The optimized ``model`` analysed in every execution order a session may give it
    (:func:`graphmem.ort.order.session_orders`: NCHWc ReorderOutput nodes numbered in heap-address
    order). The order with the largest figures is reported; when the orders' figures differ (or
    the orders cannot be enumerated) the analysis says so (``order_assumed``)."""
    g = build_graph(model)
    written = file_order(g)
    orders = session_orders(g, written)
    if orders is not None and len(orders) == 1:
        return analyze_model(model, execution_order="file", **inputs)

    def in_order(order: tuple[int, ...]) -> Analysis:
        reordered = replace(model, nodes=tuple(g.node(n) for n in order), node_ids=())
        return analyze_model(reordered, execution_order="file", **inputs)

    figures = None
    if orders is None:
        result = analyze_model(model, execution_order="file", **inputs)
    else:
        figures = _order_figures(model, g, orders, **inputs)
        if figures is None:  # order-dependent stages: a whole analysis per order
            figures = [(a.activations.peak_bytes, a.activations.in_use_peak_bytes) for a in map(in_order, orders)]
        worst = max(range(len(orders)), key=lambda i: (figures[i][0], figures[i][1] or 0))
        result = in_order(orders[worst])
    why = (
        "onnxruntime numbers the ReorderOutput nodes its NCHWc transformer adds last in an order that "
        "follows heap addresses (nchwc_transformer.cc Finalize iterates an unordered_map keyed by "
        "NodeArg pointers), so the execution order changes from session to session"
    )
    if figures is None:
        detail = f"{why}; too many orders to enumerate: the figures are those of one session's order"
    else:
        peaks = sorted({peak for peak, _ in figures})
        in_use = sorted({held for _, held in figures if held is not None})
        if len(peaks) == 1 and len(in_use) <= 1:
            return result  # every order gives the same figures
        detail = (
            f"{why}; {len(figures)} orders possible, peak {', '.join(f'{b:,}' for b in peaks)} B"
            + (f", in use {', '.join(f'{b:,}' for b in in_use)} B" if len(in_use) > 1 else "")
            + ": the largest is reported"
        )
    reordered = sorted(g.node(n).output[0] for n in finalize_reorders(g))  # ids vary by session
    node = f"ReorderOutput -> {reordered[0]}" if reordered else ""
    note = Approximation(kind="order_assumed", node=node, detail=detail)
    approximations = (*result.activations.approximations, note)
    alternatives = tuple(sorted({peak for peak, _ in figures})) if figures is not None else ()
    return replace(result, activations=replace(result.activations, approximations=approximations,
                                               order_peaks=alternatives))


def _order_figures(  # type: ignore[no-untyped-def]
    model: Model, g: OpGraph, orders: Sequence[tuple[int, ...]], *, dims, shapes, values, provider, as_dtype, host
) -> list[tuple[int, int | None]] | None:
    """(peak, in-use peak) of ``model`` run in each of ``orders``, typed once and planned per order
    as :func:`analyze_model` plans it; None when a stage of that analysis depends on the order
    (inserted or removed Casts, control flow, another provider, a what-if): then only whole
    analyses give the figures."""
    if provider != "cpu" or as_dtype is not None:
        return None
    given = resolve_inputs(model.inputs, dims=dims, shapes=shapes, values=values)
    runtime = infer_types(
        g, orders[0], view=RUNTIME, dims=given.dims, shapes=given.shapes, input_values=given.values, body_order=file_order
    )
    static = infer_types(g, orders[0], view=ORT_STATIC, body_order=file_order)
    if runtime.bodies or static.type_conflicts:
        return None
    cpu = cpu_session(model, orders[0], static.types, runtime.types)
    if cpu.inline or cpu.missing or cpu.insertion.casts or remove_duplicate_casts(model, static.types) is not model:
        return None
    figures = []
    for order in orders:
        program, _ = build_program(
            g, order, runtime=runtime.types, static=static.types, sharing=sharing, unwritten=unwritten_outputs
        )
        plan = plan_ort(program)
        run = replay_run(program, plan, graph=g, order=order, types=runtime.types, values=runtime.values, host=host)
        figures.append((plan.peak_bytes, run.peak_bytes))
    return figures


def with_session_shapes(optimized: Model, original: Model) -> Model:
    """The optimized graph with the static types its session knows for tensors it kept.

    A tensor an optimizer keeps (by name) is the same ``NodeArg`` in onnxruntime's graph: it keeps
    the shape the first resolve gave it, symbolic names included, and later inference only merges
    into it (``Graph::InferAndVerifyTypeMatch``, core/graph/graph.cc). The file onnxruntime writes
    lists only the value_info it read, so, e.g., a QDQ fusion's output loses the ``unk__49`` dims
    that its planner matches buffers by; they are restored here from the original's static view.
    """
    static = _static_types(original)
    produced = {o for n in original.nodes for o in n.output if o}
    kept = {o for n in optimized.nodes for o in n.output if o}
    extra = {k: static[k] for k in produced & kept if k in static and k not in optimized.value_info}
    return replace(optimized, value_info={**extra, **optimized.value_info}) if extra else optimized
