"""Shape inference through If, Loop and Scan: which body executions run, with which types.

Each body is inferred as a graph of its own (:func:`graphmem.model.subgraphs.body_model`), its
inputs typed as the kernel feeds them and the outer-scope values typed by the enclosing graph:

* ``runtime`` view (sizes): an If runs the branch its condition selects when the condition's
  value is known (a constant, shape arithmetic, ``--value``); otherwise both branches are
  inferred and the If is marked unknown. A Loop is unrolled iteration by iteration (types and
  values of the carried state, the iteration number, the condition) up to its trip count: ``M``
  or the first iteration whose condition output is false; a Loop whose count cannot be known
  is marked unknown. A Scan runs its body once per slice (opset 8: per batch entry and slice).
* ``ort`` view (reuse keys): the types onnxruntime gives the body when it builds the session —
  every branch and body once, Loop-carried inputs as the body declares them (onnx's
  LoopInferenceFunction drops their shapes: they may change between iterations), Scan slices
  from the scanned inputs (``onnx/defs/controlflow``).

The node's output types follow: If, the branch's outputs (``ort`` view: their union, as
IfInferenceFunction); Loop, the last carried values and ``[iterations, ...]`` scan outputs; Scan,
the final states and ``[seq, ...]`` outputs (transposed by ``scan_output_axes``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
import onnx

from graphmem.model.graph import OpGraph, build_graph
from graphmem.model.loading import Model
from graphmem.model.subgraphs import body_graphs, body_model
from graphmem.model.types import Dim, TensorType, is_concrete

__all__ = ["MAX_ITERATIONS", "BodyRun", "ControlFlowShapes", "infer_control_flow"]

#: Loops longer than this are not unrolled (the trip count is reported as too large).
MAX_ITERATIONS = 100_000

_INT64 = onnx.TensorProto.INT64
_BOOL = onnx.TensorProto.BOOL


class BodyShapes(Protocol):
    """A body's inferred types, as :class:`graphmem.shapes.infer.ShapeResult` holds them (that
    module imports this one: a protocol, not an import, names its fields here)."""

    @property
    def types(self) -> Mapping[str, TensorType]: ...

    @property
    def values(self) -> Mapping[str, np.ndarray]: ...

    @property
    def bodies(self) -> Mapping[int, ControlFlowShapes]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class BodyRun:
    """One body as one execution sees it: the body model, its graph, order and inferred types."""

    attr: str  # then_branch | else_branch | body
    model: Model
    graph: OpGraph
    order: tuple[int, ...]
    shapes: BodyShapes  # graphmem.shapes.infer.ShapeResult of the body (nested bodies inside it)
    feeds: tuple[str, ...]  # the body's graph inputs, in order


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlFlowShapes:
    """What inference learnt about one control-flow node.

    ``runs``: the body executions in order (an If: its branch; a Loop: one per iteration; a Scan:
    one per slice, sharing one BodyRun). ``branches``: every branch or body inferred (an If
    whose condition is unknown has two and no run). ``problem``: why the runs are not known.
    """

    op: str
    runs: tuple[BodyRun, ...]
    branches: Mapping[str, BodyRun]
    problem: str | None = None
    lengths: tuple[int, ...] | None = (
        None  # Scan 8's sequence_lens, per batch entry (None: every entry the whole sequence)
    )


InferFn = Callable[..., BodyShapes]  # graphmem.shapes.infer.infer_types


def infer_control_flow(
    model: Model,
    node: onnx.NodeProto,
    types: Mapping[str, TensorType],
    values: Mapping[str, np.ndarray],
    *,
    view: object,
    runtime: bool,
    dims: Mapping[str, int],
    order_of: Callable[[OpGraph], tuple[int, ...]],
    infer: InferFn,
    label: str,
) -> tuple[dict[str, TensorType], dict[str, np.ndarray], ControlFlowShapes]:
    """Output types and values of ``node`` and its :class:`ControlFlowShapes`."""
    ctx = _Context(model, types, values, view, runtime, dims, order_of, infer, label)
    if node.op_type == "If":
        return _if(ctx, node)
    if node.op_type == "Loop":
        return _loop(ctx, node)
    return _scan(ctx, node)


@dataclass(frozen=True, slots=True)
class _Context:
    model: Model
    types: Mapping[str, TensorType]
    values: Mapping[str, np.ndarray]
    view: object
    runtime: bool
    dims: Mapping[str, int]
    order_of: Callable[[OpGraph], tuple[int, ...]]
    infer: InferFn
    label: str

    def run(
        self, attr: str, graph: onnx.GraphProto, feeds: Mapping[str, TensorType], feed_values: Mapping[str, np.ndarray]
    ) -> BodyRun:
        """Infer ``graph`` with its inputs typed by ``feeds`` (declared types merged in)."""
        inputs: dict[str, TensorType] = {}
        for vi in graph.input:
            declared = _declared(vi)
            given = feeds.get(vi.name)
            inputs[vi.name] = _merge_input(given, declared)
        body = body_model(self.model, graph, inputs=inputs, outer=self.types, label=f"{self.label}/{attr}")
        g = build_graph(body)
        order = self.order_of(g)
        known = {n: v for n, v in self.values.items() if n in body.inputs and n not in inputs}
        known.update(feed_values)
        shapes = self.infer(
            g,
            order,
            view=self.view,
            dims=self.dims,
            input_values=known,
            body_order=self.order_of,
            label=f"{self.label}/{attr}/",
        )
        return BodyRun(attr=attr, model=body, graph=g, order=order, shapes=shapes, feeds=tuple(inputs))


def _declared(vi: onnx.ValueInfoProto) -> TensorType:
    from graphmem.model.types import type_from_proto

    return type_from_proto(vi.type)


def _merge_rank(outer: TensorType, declared: TensorType) -> TensorType:
    """A Loop-carried input as onnxruntime types it in the body: the outer value's rank, each
    dim as the body declares it (unknown where it declares none)."""
    rank = len(outer.shape or ())
    dims = declared.shape if declared.shape is not None and len(declared.shape) == rank else (None,) * rank
    return TensorType(dtype=outer.dtype or declared.dtype, shape=tuple(dims), kind=outer.kind)


def _merge_input(given: TensorType | None, declared: TensorType) -> TensorType:
    """A feed's type: what the kernel gives, else what the body declares."""
    if given is None:
        return declared
    if given.shape is None and declared.shape is not None:
        return replace(given, dtype=given.dtype or declared.dtype, shape=declared.shape)
    return replace(given, dtype=given.dtype or declared.dtype)  # a sequence keeps its elements


def _outputs(run: BodyRun) -> list[tuple[str, TensorType | None, np.ndarray | None]]:
    shapes = run.shapes
    out = []
    for vi in run.model.graph.output:
        t = shapes.types.get(vi.name)
        out.append((vi.name, t, shapes.values.get(vi.name)))
    return out


def _value(values: Mapping[str, np.ndarray], name: str) -> np.ndarray | None:
    return values.get(name) if name else None


# ---------------------------------------------------------------------------- If


def _if(ctx: _Context, node: onnx.NodeProto):
    graphs = dict(body_graphs(node))
    cond = _value(ctx.values, node.input[0]) if node.input else None
    chosen = None
    if cond is not None and cond.size == 1:
        chosen = "then_branch" if bool(cond.reshape(-1)[0]) else "else_branch"
    if ctx.runtime and chosen is not None:
        run = ctx.run(chosen, graphs[chosen], {}, {})
        types, values = _branch_outputs(node, run)
        return types, values, ControlFlowShapes(op="If", runs=(run,), branches={chosen: run})
    branches = {attr: ctx.run(attr, g, {}, {}) for attr, g in graphs.items()}
    if ctx.runtime:
        # unknown condition: each output typed as both branches make it, else as the larger
        then_t, _ = _branch_outputs(node, branches["then_branch"])
        else_t, _ = _branch_outputs(node, branches["else_branch"])
        types = {o: _larger(t, else_t.get(o)) for o, t in then_t.items()}
        problem = f"the condition '{node.input[0]}' of If '{node.name or node.op_type}' is not known statically"
        return types, {}, ControlFlowShapes(op="If", runs=(), branches=branches, problem=problem)
    then_t, _ = _branch_outputs(node, branches["then_branch"])
    else_t, _ = _branch_outputs(node, branches["else_branch"])
    types = {o: _union(then_t.get(o), else_t.get(o)) for o in then_t}
    return types, {}, ControlFlowShapes(op="If", runs=(), branches=branches)


def _branch_outputs(node: onnx.NodeProto, run: BodyRun) -> tuple[dict[str, TensorType], dict[str, np.ndarray]]:
    types: dict[str, TensorType] = {}
    values: dict[str, np.ndarray] = {}
    for out, (_, t, v) in zip(node.output, _outputs(run)):
        if not out:
            continue
        if t is not None:
            types[out] = t
        if v is not None:
            values[out] = v
    return types, values


def _larger(a: TensorType, b: TensorType | None) -> TensorType:
    """Of two branch outputs, the one with more elements (``a`` when equal or unknown)."""
    if b is None or a == b or not (is_concrete(a.shape) and is_concrete(b.shape)):
        return a
    return b if math.prod(b.shape) > math.prod(a.shape) else a


def _union(a: TensorType | None, b: TensorType | None) -> TensorType:
    """onnx's UnionTypeInfo: dims kept where both branches agree, else unknown."""
    if a is None or b is None:
        known = a or b
        return TensorType(dtype=known.dtype if known else 0, shape=None)
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return TensorType(dtype=a.dtype or b.dtype, shape=None)
    dims: list[Dim] = [x if x == y else None for x, y in zip(a.shape, b.shape)]
    return TensorType(dtype=a.dtype or b.dtype, shape=tuple(dims))


# ---------------------------------------------------------------------------- Loop


def _loop(ctx: _Context, node: onnx.NodeProto):
    body = dict(body_graphs(node))["body"]
    names = [i.name for i in body.input]
    carried_in = list(node.input[2:])
    n_carried = len(carried_in)
    out_names = list(node.output)
    if not ctx.runtime:
        feeds = {names[0]: TensorType(dtype=_INT64, shape=()), names[1]: TensorType(dtype=_BOOL, shape=())}
        for name, x in zip(names[2:], carried_in):
            t = ctx.types.get(x)
            if t is not None and t.shape is not None:  # the rank is known, the dims may change
                declared = _declared(next(vi for vi in body.input if vi.name == name))
                feeds[name] = _merge_rank(t, declared)
        run = ctx.run("body", body, feeds, {})
        outs = _outputs(run)
        types: dict[str, TensorType] = {}
        for k, out in enumerate(out_names):
            if not out or k + 1 >= len(outs):
                continue
            t = outs[k + 1][1]
            if t is None:
                continue
            types[out] = t if k < n_carried else _prepend(t, None)
        return types, {}, ControlFlowShapes(op="Loop", runs=(), branches={"body": run})
    label = node.name or "Loop"
    m = _value(ctx.values, node.input[0]) if node.input and node.input[0] else None
    cond0 = _value(ctx.values, node.input[1]) if len(node.input) > 1 and node.input[1] else None
    if node.input and node.input[0] and m is None:
        return {}, {}, ControlFlowShapes(op="Loop", runs=(), branches={}, problem=(
            f"the trip count '{node.input[0]}' of Loop '{label}' is not known statically"))
    if len(node.input) > 1 and node.input[1] and cond0 is None:
        return {}, {}, ControlFlowShapes(op="Loop", runs=(), branches={}, problem=(
            f"the initial condition '{node.input[1]}' of Loop '{label}' is not known statically"))
    limit = int(m.reshape(-1)[0]) if m is not None else None
    cond = bool(cond0.reshape(-1)[0]) if cond0 is not None else True
    carried_t = [ctx.types.get(x) for x in carried_in]
    carried_v = [ctx.values.get(x) for x in carried_in]
    runs: list[BodyRun] = []
    memo: dict[object, BodyRun] = {}
    reads_iter = _reads(body, names[0])
    k = 0
    while cond and (limit is None or k < limit):
        if k >= MAX_ITERATIONS:
            return {}, {}, ControlFlowShapes(op="Loop", runs=(), branches={}, problem=(
                f"Loop '{label}' runs more than {MAX_ITERATIONS:,} iterations"))
        feeds = {names[0]: TensorType(dtype=_INT64, shape=()), names[1]: TensorType(dtype=_BOOL, shape=())}
        feed_values = {names[0]: np.array(k, np.int64), names[1]: np.array(cond)}
        for name, t, v in zip(names[2:], carried_t, carried_v):
            if t is not None:
                feeds[name] = t
            if v is not None:
                feed_values[name] = v
        key = _memo_key(feeds, feed_values, names[0] if not reads_iter else None)
        body_run = memo.get(key) if key is not None else None
        if body_run is None:
            body_run = ctx.run("body", body, feeds, feed_values)
            if key is not None:
                memo[key] = body_run
        runs.append(body_run)
        outs = _outputs(body_run)
        cond_value = outs[0][2]
        if cond_value is None:
            return {}, {}, ControlFlowShapes(op="Loop", runs=(), branches={"body": body_run}, problem=(
                f"the condition output '{outs[0][0]}' of Loop '{label}' is not known statically "
                f"at iteration {k}"))
        cond = bool(np.asarray(cond_value).reshape(-1)[0])
        carried_t = [o[1] for o in outs[1 : 1 + n_carried]]
        carried_v = [o[2] for o in outs[1 : 1 + n_carried]]
        k += 1
    types = {}
    values = {}
    for out, t, v in zip(out_names[:n_carried], carried_t, carried_v):
        if out and t is not None:
            types[out] = t
            if v is not None:
                values[out] = v
    for j, out in enumerate(out_names[n_carried:]):
        if not out:
            continue
        if runs:
            t = _outputs(runs[-1])[1 + n_carried + j][1]
            types[out] = _prepend(t, len(runs)) if t is not None else TensorType(dtype=0, shape=None)
        else:  # loop.cc, no iterations: empty, [0, *the body output's dims with 0 for a symbolic one]
            out_t = _declared(body.output[1 + n_carried + j]) if 1 + n_carried + j < len(body.output) else None
            dims = tuple(d if isinstance(d, int) and d >= 0 else 0 for d in (out_t.shape or ())) if out_t else ()
            types[out] = TensorType(dtype=out_t.dtype if out_t else 0, shape=(0, *dims))
    return types, values, ControlFlowShapes(op="Loop", runs=tuple(runs), branches={"body": runs[0]} if runs else {})


def _reads(graph: onnx.GraphProto, name: str) -> bool:
    """Whether any node of ``graph`` (nested bodies included) reads ``name``."""
    from graphmem.model.subgraphs import outer_names

    for node in graph.node:
        if name in node.input:
            return True
        for _, sub in body_graphs(node):
            if name in outer_names(sub):
                return True
    return any(o.name == name for o in graph.output)


def _memo_key(feeds, values, skip):
    """A hashable key of an iteration's feeds (types and small values), or None."""
    parts = []
    for name in sorted(feeds):
        t = feeds[name]
        v = values.get(name)
        if name == skip:
            v = None
        parts.append((name, t, None if v is None else (v.dtype.str, v.shape, v.tobytes())))
    return tuple(parts)


def _prepend(t: TensorType, dim: Dim) -> TensorType:
    if t.shape is None:
        return TensorType(dtype=t.dtype, shape=None)
    return TensorType(dtype=t.dtype, shape=(dim, *t.shape))


# ---------------------------------------------------------------------------- Scan


def _scan(ctx: _Context, node: onnx.NodeProto):
    body = dict(body_graphs(node))["body"]
    opset = ctx.model.opsets.get("", 0)
    attrs = {a.name: a for a in node.attribute}
    n_scan = attrs["num_scan_inputs"].i if "num_scan_inputs" in attrs else 0
    v8 = opset < 9
    inputs = list(node.input[1:] if v8 else node.input)
    n_state = len(inputs) - n_scan
    names = [i.name for i in body.input]
    in_axes = list(attrs["scan_input_axes"].ints) if "scan_input_axes" in attrs else [0] * n_scan
    out_axes = list(attrs["scan_output_axes"].ints) if "scan_output_axes" in attrs else None
    feeds: dict[str, TensorType] = {}
    seq: Dim = None
    batch: Dim = None
    for k, x in enumerate(inputs):
        t = ctx.types.get(x)
        if t is None or t.shape is None or k >= len(names):
            continue
        if k < n_state:
            feeds[names[k]] = TensorType(dtype=t.dtype, shape=t.shape[1:] if v8 else t.shape)
            continue
        if v8:
            batch, seq = (t.shape[0], t.shape[1]) if len(t.shape) >= 2 else (None, None)
            feeds[names[k]] = TensorType(dtype=t.dtype, shape=t.shape[2:])
        else:
            axis = in_axes[k - n_state] if k - n_state < len(in_axes) else 0
            axis = axis + len(t.shape) if axis < 0 else axis
            if seq is None:
                seq = t.shape[axis]
            feeds[names[k]] = TensorType(dtype=t.dtype, shape=t.shape[:axis] + t.shape[axis + 1 :])
    run = ctx.run("body", body, feeds, {})
    outs = _outputs(run)
    types: dict[str, TensorType] = {}
    for k, out in enumerate(node.output):
        t = outs[k][1] if out and k < len(outs) else None
        if t is None:
            continue
        if t.shape is None:
            types[out] = t
        elif k < n_state:
            types[out] = TensorType(dtype=t.dtype, shape=(batch, *t.shape)) if v8 else t
        elif v8:
            types[out] = TensorType(dtype=t.dtype, shape=(batch, seq, *t.shape))
        else:
            axis = out_axes[k - n_state] if out_axes and k - n_state < len(out_axes) else 0
            rank = len(t.shape) + 1
            axis = axis + rank if axis < 0 else axis
            shape = list(t.shape)
            shape.insert(axis, seq)
            types[out] = TensorType(dtype=t.dtype, shape=tuple(shape))
    steps: int | None = None
    if isinstance(seq, int) and not v8:
        steps = seq
    elif isinstance(seq, int) and isinstance(batch, int):
        steps = seq * batch
    if not ctx.runtime:
        return types, {}, ControlFlowShapes(op="Scan", runs=(), branches={"body": run})
    if steps is None:
        problem = f"the sequence length of Scan '{node.name or 'Scan'}' is not known"
        return types, {}, ControlFlowShapes(op="Scan", runs=(), branches={"body": run}, problem=problem)
    lengths = None
    if v8 and node.input and node.input[0]:  # scan_8.cc: batch entry b runs sequence_lens[b] slices
        given = _value(ctx.values, node.input[0])
        if given is None:
            problem = f"the sequence_lens '{node.input[0]}' of Scan '{node.name or 'Scan'}' is not known statically"
            return types, {}, ControlFlowShapes(op="Scan", runs=(), branches={"body": run}, problem=problem)
        lengths = tuple(int(n) for n in np.asarray(given).reshape(-1))
        steps = sum(lengths)
    return types, {}, ControlFlowShapes(op="Scan", runs=(run,) * steps, branches={"body": run}, lengths=lengths)


def concrete(t: TensorType | None) -> bool:
    return t is not None and is_concrete(t.shape)
