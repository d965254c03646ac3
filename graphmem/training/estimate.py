"""The training estimate, end to end: analysis → who trains → saved tensors → passes → phases.

:func:`estimate_training` is the library call behind ``graphmem train``. One training step of a
PyTorch-style loop (``zero_grad``; forward; loss; ``backward``; ``step``) in steady state (step 2
onwards, optimizer state allocated) is split in three phases, each with its peak:

* forward: weights + optimizer state + inputs (+ gradients when ``persistent``) + the forward
  pass's live activations;
* backward: the same base + saved tensors not yet released + activation gradients + weight
  gradients computed so far (``released``) or their temporaries (``persistent``);
* optimizer step: weights + state + inputs + every gradient + the step's temporaries.

The step's peak is the largest of the three, named by its phase.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from graphmem.analysis.pipeline import analyze_model
from graphmem.analysis.request import AnalysisRequest, Bindings, request_of
from graphmem.analysis.result import Analysis
from graphmem.errors import UnsupportedOpError, UsageError
from graphmem.host import HostProfile
from graphmem.model.dtypes import is_float
from graphmem.model.graph import OpGraph
from graphmem.model.loading import Model, load_model
from graphmem.model.subgraphs import is_control_flow
from graphmem.model.types import TensorType
from graphmem.ort.order import file_order
from graphmem.training import casts, classify, patterns
from graphmem.training.autocast import HALF, autocast_ops, is_cast
from graphmem.training.kernels import backward_temporaries, forward_temporaries, unmodelled
from graphmem.training.optimizer import (
    GRAD_MODES,
    OPTIMIZERS,
    PRECISIONS,
    check_choice,
    optimizer_costs,
)
from graphmem.training.phases import GRAD_VIEW_OPS, Pass, run_backward, run_forward
from graphmem.training.saved import OpView, saved_by

__all__ = [
    "TrainingConfig",
    "LayerSaved",
    "SavedStorageInfo",
    "PhasePeak",
    "TrainingEstimate",
    "estimate_training",
    "estimate_training_analysis",
    "layer_of",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingConfig:
    optimizer: str = "adam"
    grads: str = "released"
    precision: str = "fp32"
    frozen: tuple[str, ...] = ()
    foreach: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerSaved:
    """Saved bytes held by one layer (a module scope of the exported node names)."""

    layer: str
    bytes: int
    storages: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SavedStorageInfo:
    """One saved storage, attributed to the first op (in forward order) that holds it."""

    name: str
    bytes: int | None
    layer: str
    op_type: str
    node: str
    labels: tuple[str, ...]
    graph_input: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class PhasePeak:
    phase: str  # "forward" | "backward" | "optimizer"
    total_bytes: int
    at: str  # the op (or pseudo-step) at the phase's peak


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingEstimate:
    """Everything ``graphmem train`` reports, as typed data. Byte figures are exact integers."""

    analysis: Analysis
    config: TrainingConfig
    params: int
    trainable_params: int
    frozen_params: int
    weights_bytes: int  # model copy of every weight and buffer + fp32 master copies
    master_weights_bytes: int
    grads_bytes: int
    optimizer_state_bytes: int
    optimizer_temp_bytes: int
    inputs_bytes: int
    saved_bytes: int  # unique storages autograd holds (graph inputs it holds included)
    saved_inputs_bytes: int  # the graph inputs among them (caller's memory, also in inputs)
    saved_by_layer: tuple[LayerSaved, ...]  # most bytes first
    saved_storages: tuple[SavedStorageInfo, ...]
    activation_peak_bytes: int  # forward pass
    activation_peak_at: str
    backward_peak_bytes: int  # saved + activation and weight gradients during backward
    backward_peak_at: str
    phases: tuple[PhasePeak, ...]
    step_peak_bytes: int
    peak_phase: str
    unknown_ops: tuple[tuple[str, int], ...]  # op type, count: assumed to save their inputs
    unknown_sizes: tuple[str, ...]  # tensors of unknown size (not in the figures)
    warnings: tuple[str, ...]
    forward: Pass | None = None  # the forward pass step by step (for the timeline)
    backward: Pass | None = None  # the backward pass step by step


def estimate_training(
    path: str | os.PathLike[str],
    *,
    dims: Mapping[str, int] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
    values: Mapping[str, Sequence[int]] | None = None,
    bindings: Bindings | None = None,
    optimizer: str = "adam",
    grads: str = "released",
    precision: str = "fp32",
    frozen: Sequence[str] = (),
    foreach: bool = False,
    host: HostProfile | None = None,
) -> TrainingEstimate:
    """Memory of one training step of the ONNX training-mode export at ``path``; ``dims``,
    ``shapes`` and ``values`` (or ``bindings``) bind its inputs as :func:`graphmem.analyze` takes
    them; ``host``: the machine the step runs on (None: this machine), whose threads, caches and
    CPU flags decide oneDNN's kernels and their buffers (:mod:`graphmem.training.kernels`).

    Raises :class:`graphmem.errors.GraphmemError` subclasses on bad input: an unknown optimizer,
    gradient mode or precision, unbound dims, a model with no trainable weights.
    """
    config = TrainingConfig(
        optimizer=check_choice("optimizer", optimizer, tuple(OPTIMIZERS)),
        grads=check_choice("gradient mode", grads, GRAD_MODES),
        precision=check_choice("precision", precision, tuple(PRECISIONS)),
        frozen=tuple(frozen),
        foreach=foreach,
    )
    given = request_of(bindings=bindings, dims=dims, shapes=shapes, values=values, host=host)
    return _trained_as_pytorch_runs_it(load_model(path), config, given.bindings, host=given.host)


#: The analysis stays in the file's dtypes for every precision: autocast re-types the
#: activations op by op (:mod:`graphmem.training.autocast`).
_AS_DTYPE: dict[str, str | None] = {"fp32": None, "mixed-fp16": None, "mixed-bf16": None}


def _with_notes(est: TrainingEstimate, inlined: tuple[str, ...]) -> TrainingEstimate:
    return replace(est, warnings=(*est.warnings, *(f"control flow: {note}" for note in inlined))) if inlined else est


#: Ifs with an unknown condition estimated both ways at most (2**N estimates), else refused.
MAX_UNKNOWN_BRANCHES = 4


def _trained_as_pytorch_runs_it(model: Model, config: TrainingConfig, bindings: Bindings,
                                branches: Mapping[str, str] | None = None, *, host: HostProfile) -> TrainingEstimate:
    """The estimate of ``model`` flattened as eager PyTorch runs it. An If whose condition is not
    known is estimated with each branch inlined: the larger step peak is the figure (the then
    branch on a tie), a warning names the If and both step peaks."""
    from graphmem.training.unroll import UnknownBranch

    branches = dict(branches or {})
    try:
        flat, inlined = _as_pytorch_runs_it(model, bindings, branches=branches)
    except UnknownBranch as unknown:
        if len(branches) >= MAX_UNKNOWN_BRANCHES:
            raise UnsupportedOpError(
                f"{unknown}; graphmem train estimates at most {MAX_UNKNOWN_BRANCHES} Ifs of unknown condition both ways"
            ) from None
        then = _trained_as_pytorch_runs_it(
            model, config, bindings, {**branches, unknown.node: "then_branch"}, host=host
        )
        other = _trained_as_pytorch_runs_it(
            model, config, bindings, {**branches, unknown.node: "else_branch"}, host=host
        )
        larger, side = (then, "then") if then.step_peak_bytes >= other.step_peak_bytes else (other, "else")
        note = (
            f"control flow: If '{unknown.node}': its condition '{unknown.condition}' is not known (--value binds it): "
            f"the figures are its larger branch, {side} (step peak: then {then.step_peak_bytes:,} B, "
            f"else {other.step_peak_bytes:,} B); not exact"
        )
        return replace(larger, warnings=(*larger.warnings, note))
    request = AnalysisRequest(bindings=bindings, as_dtype=_AS_DTYPE[config.precision], kernel_rules=False, host=host)
    analysis = analyze_model(flat, request)
    return _with_notes(estimate_training_analysis(analysis, config), inlined)


def _as_pytorch_runs_it(
    model: Model, bindings: Bindings, branches: Mapping[str, str] | None = None
) -> tuple[Model, tuple[str, ...]]:
    """The model with its If, Loop and Scan nodes replaced by the ops eager PyTorch runs
    (:func:`graphmem.training.unroll.inline_control_flow`; ``branches``: the branch assumed for
    an If of unknown condition), and what each became."""
    from graphmem.training.unroll import inline_control_flow

    if not any(is_control_flow(n) for n in model.nodes):
        return model, ()
    given = bindings.resolve(model.inputs)
    return inline_control_flow(model, dims=given.dims, shapes=given.shapes, values=given.values, branches=branches)


def _flattened(a: Analysis, config: TrainingConfig) -> TrainingEstimate:
    """:func:`estimate_training_analysis` of an analysis with control flow: its model flattened
    as PyTorch runs it, analysed with the same inputs (a sweep's or fit's probe)."""
    model = a.graph.model
    bindings = Bindings.of(
        dims={k: v for k, v in a.model.dims.items() if k in model.symbolic_dims},
        shapes=a.model.shapes, values=a.model.values,
    )
    return _trained_as_pytorch_runs_it(model, config, bindings, host=a.host)


def layer_of(node_name: str, fallback: str) -> str:
    """The module scope of an exported node name: ``/model/layer.0/attn/MatMul`` →
    ``model.layer.0.attn``; a name without scope is its own layer."""
    if "/" in node_name.strip("/"):
        return node_name.strip("/").rsplit("/", 1)[0].replace("/", ".")
    return node_name.strip("/") or fallback


def estimate_training_analysis(a: Analysis, config: TrainingConfig) -> TrainingEstimate:
    """Same as :func:`estimate_training`, for an existing :class:`Analysis` (its dtype what-if
    must match ``config.precision``), on the host the analysis is for."""
    g, model, host = a.graph, a.graph.model, a.host
    if a.bodies:  # If and Loop as PyTorch runs them; what cannot be is refused naming the node
        return _flattened(a, config)
    half = HALF.get(config.precision)
    types = a.types
    w = model.weights  # autocast keeps weights, gradients and optimizer state fp32
    order = file_order(g)
    weight_only = classify.weight_only_nodes(g)
    roles = classify.weight_roles(g, weight_only, config.frozen)
    if not roles.trainable:
        if roles.frozen:
            raise UsageError(
                f"--frozen {' '.join(config.frozen)} froze every parameter: nothing to train"
            )
        raise UsageError(
            f"{model.path}: the model has no trainable weights (no floating initializer reaches "
            "an input that has a gradient): nothing to train"
        )
    warnings = [f"--frozen '{p}' matched no parameter" for p in roles.unmatched_patterns]
    needs_grad = classify.requires_grad(g, order, types, roles.trainable)
    weightish = frozenset(model.weights) | frozenset(
        o for n in weight_only for o in g.node(n).output if o
    )
    ops = patterns.torch_ops(g, order, weight_only)
    cached: tuple[str, ...] = ()
    original = {id(op): op for op in ops}
    if half is not None:
        trainable_set = roles.trainable

        def param_sources(name: str) -> frozenset[str]:
            # the floating initializers only: integer constants (a Slice's starts, a Concat's
            # Unsqueeze axes: the exporter's gate reordering of an RNN's weights) are no parameters
            return frozenset(s for s in classify.weight_sources(g, name, weight_only) if is_float(w[s].dtype))

        ac = autocast_ops(
            ops, types, half=half, needs_grad=needs_grad, weightish=weightish,
            constant=lambda name: not (param_sources(name) & trainable_set),
            cacheable=lambda name: bool(param_sources(name)) and param_sources(name) <= trainable_set,
            linear_bias=lambda op: _linear_bias(g, op, weight_only),
            follows=lambda op: casts.follows_dtype(g, op.node, a.types),
            softmax_fp32=lambda op: casts.softmax_in_float32(g, op.node, a.types),
        )
        ops, types, needs_grad, cached = ac.ops, ac.types, ac.needs_grad, ac.cached
        original = {id(op): orig for op, orig in zip(ac.ops, ac.original)}

    def view_of(op: patterns.Op) -> int | None:  # an op's view input, judged on the graph's op
        return patterns.view_input(g, original.get(id(op), op), types, weight_only)

    roots = patterns.storage_roots(ops, view_of)
    orders = patterns.memory_orders(ops, types)
    views = tuple(
        _view(g, op, types, needs_grad, weightish, roots, orders, config.grads == "released") for op in ops
    )
    saved = tuple(saved_by(v, op.domain) for v, op in zip(views, ops))
    warnings += [line for v, op in zip(views, ops) if (line := unmodelled(v, host, op.domain)) is not None]
    if half is not None:
        warnings.append(
            "autocast: oneDNN's reduced-precision matmul and convolution kernels allocate scratchpads "
            "that are not modelled (measured: 75 kB and 135 kB in the two addmm of a 256-512-10 MLP)"
        )
        # RNN.cpp GRUCell: linear_hh casts W_hh at every step unless the cache holds it (a trainable leaf)
        frozen = [op.label for op in ops if op.op_type == "GRU"
                  and any(is_cast(x) and x not in cached for x in op.inputs[1:3])]
        if frozen:
            warnings.append(
                f"autocast: GRU '{frozen[0]}'{f' and {len(frozen) - 1} more' if len(frozen) > 1 else ''}: a weight "
                "that is not a trainable parameter is cast again by every step's linear (autocast caches only "
                "trainable leaves); not modelled: counted as one cached cast"
            )
        warnings += casts.cast_warnings(g, [op.node for op in ops if not is_cast(op.outputs[0])], a.types)
        mask = casts.mask_warning(g, [(op.label, op.outputs[0], op.inputs) for op in ops if op.op_type == "Add"],
                                  types, half)
        if mask is not None:
            warnings.append(mask)
    evidence = patterns.inference_export_evidence(g, ops)
    if evidence is not None:
        warnings.append(
            f"looks like an inference export ({evidence}): the estimate misses what training-mode "
            "BatchNorm and Dropout save (an eval export folds BatchNorm into Conv and drops "
            "Dropout); re-export with training=TrainingMode.TRAINING, do_constant_folding=False"
        )
    sources = {n: "input" for n in model.inputs} | {n: "weight" for n in weightish}
    outputs = tuple(model.outputs)
    fwd = run_forward(
        ops, saved, types=types, sources=sources, outputs=outputs,
        view_input=view_of,
        temporaries=tuple(forward_temporaries(v, host, op.domain) for v, op in zip(views, ops)),
        held=cached,
    )
    trainable = roles.trainable
    grad_bytes = {n: w[n].nbytes or 0 for n in trainable}

    def weight_grads(name: str) -> dict[str, int] | None:
        if name not in weightish:
            return None
        return {s: grad_bytes[s] for s in classify.weight_sources(g, name, weight_only) if s in trainable}

    def grad_view(op: patterns.Op, k: int) -> bool:
        if op.op_type == "Sub" and k != 0:
            return False
        if op.op_type in GRAD_VIEW_OPS or op.op_type == "Sub":
            same = types.get(op.inputs[k]) == types.get(op.outputs[0])
            return op.op_type not in ("Add", "Sub", "Sum") or same
        return op.op_type in ("Cast", "Dropout") and view_of(op) == 0

    persistent = config.grads == "persistent"
    bwd = run_backward(
        ops, fwd, types=types, needs_grad=needs_grad, outputs=outputs,
        weight_grads=weight_grads, keep_weight_grads=not persistent, grad_view=grad_view,
        weight_grad_view=lambda op, k: _weight_grad_view(g, op, k, types, weight_only),
        temporaries=tuple(backward_temporaries(v, host, op.domain) for v, op in zip(views, ops)),
    )
    costs = optimizer_costs(
        config.optimizer,
        [model.weights[n].numel for n in sorted(trainable)],
        precision=config.precision,
        param_bytes=[model.weights[n].nbytes or 0 for n in sorted(trainable)],
        foreach=config.foreach,
    )
    grads_total = sum(grad_bytes.values())
    weights_total = sum(x.nbytes or 0 for x in w.values()) + costs.master_bytes
    inputs = a.io.inputs_bytes
    base = weights_total + costs.state_bytes + inputs
    kept = grads_total if persistent else 0
    phases = (
        _phase("forward", base + kept + fwd.trace.peak_bytes, fwd.trace.peak_label),
        _phase("backward", base + kept + bwd.peak_bytes, bwd.peak_label),
        _phase("optimizer", base + grads_total + costs.step_temporary_bytes, "step temporaries"),
    )
    top = max(phases, key=lambda p: p.total_bytes)
    infos = _storage_infos(fwd.saved, ops)
    unknown_ops = Counter(op.op_type for op, s in zip(ops, saved) if s.outcome == "unsupported")
    return TrainingEstimate(
        analysis=a,
        config=config,
        params=sum(x.numel for x in model.weights.values()),
        trainable_params=sum(model.weights[n].numel for n in trainable),
        frozen_params=sum(model.weights[n].numel for n in roles.frozen),
        weights_bytes=weights_total,
        master_weights_bytes=costs.master_bytes,
        grads_bytes=grads_total,
        optimizer_state_bytes=costs.state_bytes,
        optimizer_temp_bytes=costs.step_temporary_bytes,
        inputs_bytes=inputs,
        saved_bytes=sum(s.bytes or 0 for s in infos),
        saved_inputs_bytes=sum(s.bytes or 0 for s in infos if s.graph_input),
        saved_by_layer=_by_layer(infos),
        saved_storages=infos,
        activation_peak_bytes=fwd.trace.peak_bytes,
        activation_peak_at=fwd.trace.peak_label,
        backward_peak_bytes=bwd.peak_bytes,
        backward_peak_at=bwd.peak_label,
        phases=phases,
        step_peak_bytes=top.total_bytes,
        peak_phase=top.phase,
        unknown_ops=tuple(sorted(unknown_ops.items())),
        unknown_sizes=fwd.unknown + tuple(s.name for s in infos if s.bytes is None),
        warnings=tuple(warnings),
        forward=fwd.trace,
        backward=bwd,
    )


def _view(g, op, types, needs_grad, weightish, roots, orders, kept) -> OpView:
    return OpView(
        op_type=op.op_type,
        node=op.node,
        inputs=op.inputs,
        outputs=op.outputs,
        types=types,
        needs_grad=needs_grad,
        weights=weightish,
        active=op.op_type != "Dropout" or patterns.dropout_active(g, op.node),
        roots=roots,
        orders=orders,
        weight_grads_kept=kept,
    )


#: Weight preprocessing whose backward hands the parameter a view of the gradient
#: (derivatives.yaml: ``t``/``permute`` transpose it back, ``view``/``reshape``/``squeeze``/
#: ``unsqueeze`` reshape it, ``cat`` narrows it).
_VIEW_BACKWARD = frozenset({"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Concat"})
#: Ops whose backward formula computes a weight's gradient as a new tensor
#: (``embedding_dense_backward``, ``convolution_backward``, ``mm``, ``native_*_norm_backward``).
_FRESH_WEIGHT_GRAD = frozenset({
    "Gather", "Conv", "ConvTranspose", "MatMul", "BatchNormalization", "LayerNormalization",
    "InstanceNormalization", "GroupNormalization",
})


def _weight_grad_view(
    g: OpGraph, op: patterns.Op, k: int, types: dict[str, TensorType], weight_only: frozenset[int]
) -> bool:
    """Does the gradient that ``op``'s backward gives the weight at input ``k`` reach the
    parameter as a view? (Only matters for a parameter with several contributions: see
    :func:`graphmem.training.phases.run_backward`.) Unknown ops: assumed so (the larger figure)."""
    if op.op_type == "Cast" and is_cast(op.outputs[0]):
        # autocast's cast of a parameter (the cast cache's leaf, autocast_mode.cpp cached_cast): its gradient
        # is ToCopyBackward0's new tensor (derivatives.yaml _to_copy: _to_copy_backward, grad.to(self.options()))
        return False
    x, adjacent = op.inputs[k], None
    while x not in g.model.weights and x in g.producer and g.producer[x] in weight_only:
        adjacent = g.node(g.producer[x])  # the preprocessing node nearest the parameter
        x = next((i for i in adjacent.input if i), "")
    if adjacent is not None:
        return adjacent.op_type in _VIEW_BACKWARD
    t, out = op.op_type, types.get(op.outputs[0]) if op.outputs else None
    w = types.get(op.inputs[k])
    fewer_dims = w is not None and out is not None and w.shape is not None and out.shape is not None \
        and len(w.shape) < len(out.shape)
    if t == "Gemm":
        if k < 2:  # addmm(b, x, W.t()): W's gradient comes back through TBackward0 (t())
            return any(a.name == ("transA", "transB")[k] and a.i for a in op.node.attribute)
        return fewer_dims  # the bias: the engine's sum_to views its keepdim sum (ExpandUtils.h)
    if t in _FRESH_WEIGHT_GRAD:
        return False
    if t == "Cast":  # ToCopyBackward0 makes a new tensor unless the dtype is unchanged
        a, b = types.get(op.inputs[0]), types.get(op.outputs[0])
        return a is not None and b is not None and a.dtype == b.dtype
    if t in ("Add", "Sub", "Mul", "Div"):
        if fewer_dims:
            return True  # sum_to over leading dims: a view
        same = w is not None and out is not None and w.shape == out.shape
        # same shape: Add/Sub pass the output gradient itself (shared); broadcast: a keepdim sum
        return same and t in ("Add", "Sub")
    return True


def _linear_bias(g: OpGraph, op: patterns.Op, weight_only: frozenset[int]) -> int | None:
    """The bias's position when ``op`` is the Add of a linear's bias (one ``addmm`` in PyTorch)."""
    mm = patterns.bias_after_matmul(g, op, weight_only)
    return None if mm is None else 1 - mm


def _phase(name: str, total: int, at: str) -> PhasePeak:
    return PhasePeak(phase=name, total_bytes=total, at=at)


def _storage_infos(saved, ops) -> tuple[SavedStorageInfo, ...]:
    infos = []
    for s in saved:
        first = ops[min(s.savers)]
        infos.append(
            SavedStorageInfo(
                name=s.name,
                bytes=s.nbytes,
                layer=layer_of(first.node.name, first.label),
                op_type=first.op_type,
                node=first.label,
                labels=tuple(dict.fromkeys(s.labels)),
                graph_input=s.graph_input,
            )
        )
    return tuple(infos)


def _by_layer(infos: tuple[SavedStorageInfo, ...]) -> tuple[LayerSaved, ...]:
    total: dict[str, list[int]] = {}
    for s in infos:
        entry = total.setdefault(s.layer, [0, 0])
        entry[0] += s.bytes or 0
        entry[1] += 1
    rows = [LayerSaved(layer=k, bytes=v[0], storages=v[1]) for k, v in total.items()]
    return tuple(sorted(rows, key=lambda r: (-r.bytes, r.layer)))
