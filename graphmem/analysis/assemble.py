"""The last stage: the stages' results assembled into the :class:`Analysis` every view reads.

Nothing is computed here that a stage could own: weights and input bytes are summed, the
approximations of every stage are gathered (:mod:`graphmem.analysis.exactness` and the notes
below), and the headline figures are copied from the stage that owns them
(:class:`graphmem.analysis.plans.Headline`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import onnx

from graphmem.analysis.causes import unresolved_causes
from graphmem.analysis.exactness import approximations
from graphmem.analysis.plans import ControlFlowRun, Flops, Headline, Plans, Programmed
from graphmem.analysis.request import AnalysisRequest
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
from graphmem.analysis.stages import CpuKernels, Expanded, Loaded, Session
from graphmem.model.dtypes import dtype_name
from graphmem.model.loading import Model
from graphmem.model.program import tensor_size, value_size
from graphmem.model.subgraphs import all_weights
from graphmem.model.types import TensorType
from graphmem.optable import DEFAULT_DOMAIN, MS_DOMAIN, normalize_domain
from graphmem.ort.session import CUDA_RUNTIME, SessionGraph

__all__ = ["assemble", "missing_bodies", "record_session"]

CPU_RUNTIME = "onnxruntime 1.31 CPU"


def assemble(
    *,
    request: AnalysisRequest,
    loaded: Loaded,
    expanded: Expanded,
    kernels: CpuKernels,
    session: Session,
    programmed: Programmed,
    plans: Plans,
    cf: ControlFlowRun | None,
    headline: Headline,
    flops: Flops,
) -> Analysis:
    """The :class:`Analysis` of the stages' results."""
    model, g, order, runtime = session.model, session.graph, session.order, session.runtime
    produced = [o for nid in order for o in g.node(nid).output if o]
    top_unresolved = tuple(n for n in produced if value_size(runtime.types.get(n)) is None)
    unresolved = top_unresolved + (tuple(cf.flow.unresolved) if cf is not None else ())
    if cf is not None:
        produced += list(cf.flow.tensors)
    causes = unresolved_causes(  # the nodes that cannot take their inputs, and the dims' ranges that work
        g, order, runtime.types, runtime.values, bindings=request.bindings, failed=runtime.failed_outputs
    ) if top_unresolved else ()
    notes = (
        approximations(
            g, order, unresolved=top_unresolved, scratch_unmodelled=headline.scratch_unmodelled,
            provider=request.provider, planned=frozenset(runtime.bodies) if cf is not None else frozenset(),
            causes={t: c.detail for c in causes for t in c.tensors},
        )
        + missing_bodies(model, expanded.missing)
        + _control_flow_notes(cf)
        + (_duplicated_dq_in_bodies(model) if request.execution_order == "ort" else ())
        + _cuda_inlined(session.provider)
        + kernels.host
    )
    cuda = session.provider.devices is not None
    activations = ActivationsInfo(
        peak_bytes=headline.peak_bytes,
        peak_node=headline.peak_node,
        peak_step=headline.peak_step,
        lower_bound_bytes=plans.liveness.lower_bound,
        no_reuse_bytes=plans.liveness.no_reuse,
        best_arena_bytes=plans.arena.arena_bytes,
        unknown=tuple(programmed.names[v] for v in plans.plan.unknown_sizes),
        runtime=_runtime_note(CUDA_RUNTIME if cuda else CPU_RUNTIME, expanded.inlined) + session.type_note,
        timeline=headline.timeline,
        step_ops=headline.step_ops,
        live_at_peak=headline.live_at_peak,
        scratch_bytes=headline.scratch_bytes,
        in_use_peak_bytes=headline.in_use_peak_bytes,
        scratch_unmodelled=headline.scratch_unmodelled,
        provider=request.provider,
        approximations=notes,
    )
    weights = _weights(model)
    inputs_bytes = sum(_input_bytes(runtime.types.get(n)) for n in model.inputs)
    given = loaded.inputs
    run = plans.run
    return Analysis(
        model=ModelInfo(
            path=model.path, opset=model.opset, nodes=loaded.file_nodes, dims=given.dims,
            shapes=dict(given.given_shapes), values={k: _given_values(v) for k, v in given.values.items()},
        ),
        weights=weights,
        activations=activations,
        io=IOInfo(
            inputs_bytes=inputs_bytes, outputs_bytes=sum(tensor_size(runtime.types.get(n)) or 0 for n in model.outputs)
        ),
        shapes=ShapesInfo(
            tensors=len(model.inputs) + len(model.weights) + len(produced), unresolved=unresolved, causes=causes
        ),
        total_bytes=weights.bytes + activations.peak_bytes + inputs_bytes,
        graph=g,
        order=order,
        types=runtime.types,
        values=runtime.values,
        flops=flops.report,
        bodies=flops.bodies,
        placement=session.provider.placement_info(plans.plan, runtime.types),
        steps=StepMemory(
            program=programmed.program, plan=plans.plan, lower_bound=plans.liveness.live_bytes,
            in_use=run.step_high if run is not None else None, scratch=run.per_step if run is not None else None,
        ) if cf is None else None,  # a control-flow run is many plans: drawn from its replay
        replay=cf.replay if cf is not None else None,
        host=request.host,
    )


def record_session(analysis: Analysis, session: object) -> Analysis:
    """``analysis`` with the session stage's figures (:mod:`graphmem.analysis.hold`) recorded:
    the ``session`` block of its document (None: not asked)."""
    return analysis if session is None else replace(analysis, session=session)


def _runtime_note(runtime: str, inlined: tuple[str, ...]) -> str:
    return f"{runtime}; {', '.join(inlined)} inlined as onnxruntime runs them" if inlined else runtime


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


def _input_bytes(t: TensorType | None) -> int:
    """A graph input's bytes: a tensor's, a sequence's elements' (``--shape s=[…]``)."""
    if t is not None and t.kind == "sequence_type" and t.elements:
        return sum(tensor_size(e) or 0 for e in t.elements)
    return tensor_size(t) or 0


def _given_values(array: np.ndarray) -> tuple[int | float, ...]:
    """A ``--value`` array as the report gives it back: ints for integer and bool inputs (a bool
    as 0/1, as ``--value`` takes it), Python floats for a float input."""
    flat = array.reshape(-1)
    return tuple(int(x) for x in flat) if flat.dtype.kind in "biu" else tuple(float(x) for x in flat)


def missing_bodies(model: Model, missing: tuple[str, ...]) -> tuple[Approximation, ...]:
    """Nodes onnxruntime runs as their function body that graphmem planned as one node."""
    return tuple(
        Approximation(
            kind="unknown_kernel", node=n.name or n.op_type,
            detail=f"onnxruntime runs {n.op_type} as its ONNX function body, which needs input types graphmem "
            "does not infer here: planned as one node",
        )
        for n in model.nodes if n.op_type in missing
    )


def _cuda_inlined(provider: SessionGraph) -> tuple[Approximation, ...]:
    """Float16 nodes a CUDA session runs on the CPU provider that onnxruntime runs as their
    function body (no float16 CPU kernel; INLINED_WITHOUT_KERNEL): graphmem plans them behind
    Casts instead, so the figures are not exact."""
    if provider.cuda is None:
        return ()
    return tuple(
        Approximation(
            kind="rewrite_not_modelled", node=name,
            detail="float16 node without a CUDA or float16 CPU kernel that onnxruntime runs as its function "
            "body; graphmem plans it in float32 behind Casts instead",
        )
        for name in provider.cuda.inlined_not_modelled
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
            if (
                n.op_type == "DequantizeLinear"
                and normalize_domain(n.domain) in (DEFAULT_DOMAIN, MS_DOMAIN)
                and n.output
            ):
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


def _control_flow_notes(cf: ControlFlowRun | None) -> tuple[Approximation, ...]:
    """What the control-flow plan could not make exact (its module loads only for a graph with
    control flow)."""
    if cf is None:
        return ()
    from graphmem.analysis.controlflow import control_flow_approximations

    return tuple(control_flow_approximations(cf.flow))
