"""Stage 3 — shape inference over the op graph, in two views.

* ``runtime`` view: every symbolic input dim bound to a number (``--dim``); per-node ONNX shape
  inference, with the values of small integer tensors computed by evaluating their nodes, so the
  shape subgraphs of transformer exports resolve to concrete shapes. These give the byte sizes.
* ``ort`` view: the shapes onnxruntime itself knows when it creates a session — per-node ONNX
  inference on the file's (possibly symbolic) input shapes, merged into the file's value_info,
  no invented symbols, and values propagated only through the ops of onnxruntime's data
  propagation and only when every element is a known integer (``core/graph/graph.cc``,
  ``core/graph/data_propagation/``). onnxruntime's reuse decisions compare *these* shapes.

Both views run the same loop (:func:`infer_types`); a :class:`View` says how they differ.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import defs
from onnx.numpy_helper import from_array

from graphmem.model.dtypes import is_integer
from graphmem.model.graph import OpGraph
from graphmem.model.loading import Model
from graphmem.model.subgraphs import is_control_flow
from graphmem.model.types import Dim, Shape, TensorType, is_concrete, known_dims, type_from_proto, type_to_proto
from graphmem.optable import OpTable, default_domain_ops, is_default_domain, op_key
from graphmem.shapes.evaluate import MAX_VALUE_ELEMENTS, evaluate_node
from graphmem.shapes.sequences import bound_optional, infer_sequence, sequence_of

if TYPE_CHECKING:  # control flow's module loads only for a graph that has it
    from graphmem.shapes.controlflow import ControlFlowShapes

__all__ = [
    "View",
    "RUNTIME",
    "ORT_STATIC",
    "ShapeResult",
    "ContribRule",
    "ContribRules",
    "infer_types",
    "bind_shape",
    "op_schema",
]

#: Output types of a node of no ONNX schema (a runtime's contrib op) from its input types and
#: known values; None when there is no rule or it cannot tell.
ContribRule = Callable[
    [onnx.NodeProto, Mapping[str, TensorType], Mapping[str, np.ndarray]], "dict[str, TensorType] | None"
]
#: The contrib rules for one model (they may read its weights): given by the caller, so that this
#: stage knows no runtime (onnxruntime's are :func:`graphmem.ort.inference.contrib_rules`).
ContribRules = Callable[[Model], ContribRule]

#: Ops whose integer values onnxruntime 1.31 propagates at graph resolve
#: (``core/graph/data_propagation/*``).
ORT_PROPAGATED_OPS: OpTable[bool] = OpTable(default_domain_ops(
    ("Shape", "Size", "Gather", "Slice", "Concat", "Squeeze", "Unsqueeze", "Add", "Sub", "Mul", "Div"), True
))

#: Ops whose output can be far larger than their inputs: evaluate only once the size is known.
_EXPANDING: OpTable[bool] = OpTable(default_domain_ops(
    ("ConstantOfShape", "Expand", "Tile", "Resize", "Upsample", "Pad", "Range"), True
))


@dataclass(frozen=True, slots=True, kw_only=True)
class View:
    """How a shape view propagates values (see module doc)."""

    name: str
    value_ops: OpTable[bool] | None  # None: any op whose inputs are known
    int_values_only: bool


RUNTIME = View(name="runtime", value_ops=None, int_values_only=False)
ORT_STATIC = View(name="ort", value_ops=ORT_PROPAGATED_OPS, int_values_only=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ShapeResult:
    """Types of every tensor the graph reads or writes, and the values that were computed."""

    types: dict[str, TensorType]
    values: dict[str, np.ndarray]
    failed_nodes: tuple[int, ...]  # nodes whose inference raised (their outputs may be unknown)
    # their outputs, by name (a graph rebuilt later, with Casts inserted, numbers its nodes anew)
    failed_outputs: frozenset[str] = frozenset()
    # control-flow node id -> its bodies as inferred (graphmem.shapes.controlflow.ControlFlowShapes)
    bodies: dict[int, ControlFlowShapes] = field(default_factory=dict)
    # (node, tensor, inferred dtype, declared dtype): an ONNX-domain node whose inferred element
    # type contradicts the file's value_info (onnxruntime refuses such a file when it resolves it)
    type_conflicts: tuple[tuple[str, str, int, int], ...] = ()


def bind_shape(shape: Shape | None, dims: Mapping[str, int]) -> Shape | None:
    """Replace named dims that ``dims`` binds by their values. A negative dim value (``-1``, a
    dynamic dim in some exporters' files) is unknown in both views: it says nothing about the run,
    and onnxruntime clears it when it builds the graph (``core/graph/node_arg.cc``
    RemoveInvalidValues: "they don't affect shape inferencing or the allocation planner"), so its
    reuse rule and data propagation see an unknown dim, not the number -1."""
    if shape is None:
        return None
    return tuple(None if isinstance(d, int) and d < 0 else dims.get(d, d) if isinstance(d, str) else d for d in shape)


def infer_types(
    g: OpGraph,
    order: tuple[int, ...],
    *,
    view: View,
    dims: Mapping[str, int] | None = None,
    shapes: Mapping[str, Sequence[Any] | None] | None = None,  # a shape, a sequence's element shapes, none
    input_values: Mapping[str, np.ndarray] | None = None,
    body_order: Callable[[OpGraph], tuple[int, ...]],
    contrib: ContribRules | None = None,
    label: str = "",
) -> ShapeResult:
    """Infer every node output's type in ``order`` (a topological order of ``g``).

    ``shapes`` set graph inputs' whole shapes and ``input_values`` their values (the runtime
    view of ``--shape`` / ``--value``; onnxruntime's static view knows neither; a body's feeds).
    Control-flow nodes are inferred through their bodies (:mod:`graphmem.shapes.controlflow`),
    each body in the order ``body_order`` gives. A node of no ONNX schema gets its types from
    ``contrib`` (none without it). :func:`graphmem.ort.inference.infer_types` gives both as
    onnxruntime has them."""
    model = g.model
    dims = dims or {}
    shapes = shapes or {}
    run = view is RUNTIME
    rule = contrib(model) if contrib is not None else None
    types: dict[str, TensorType] = {}
    values: dict[str, np.ndarray] = {}
    for name, t in model.inputs.items():
        given = shapes.get(name)  # None: not given, or an optional input bound to none
        if t.kind == "sequence_type" and given is not None:  # --shape s=[2x3,4x3]: its elements
            types[name] = sequence_of(t.dtype, tuple(TensorType(dtype=t.dtype, shape=tuple(e)) for e in given), t)
            continue
        if t.kind == "optional_type" and name in shapes:  # --shape o=4x100, o=[2x3], o=none
            types[name] = bound_optional(t, given)
            continue
        shape = tuple(given) if given is not None else bind_shape(t.shape, dims)
        types[name] = replace(t, shape=shape)  # a sequence keeps its elements
    for name, w in model.weights.items():
        types[name] = TensorType(dtype=w.dtype, shape=w.dims)
    for name, v in model.values.items():
        if _keep_value(view, v):
            values[name] = v
    for name, v in (input_values or {}).items():
        if _keep_value(view, v):
            values[name] = v
    declared = {**model.value_info, **model.outputs}
    bodies: dict[int, ControlFlowShapes] = {}
    serialized: dict[str, bytes] = {}
    data_bytes: dict[str, bytes] = {}
    memo: dict[tuple, tuple] = {}  # _infer_node's answers
    bound: dict[TensorType, TensorType] = {}  # a declared type with the dims bound
    merged: dict[tuple[TensorType | None, TensorType | None], TensorType] = {}  # _merge's answers
    # static view: does any node read a float twin (_as_first_resolved)? most graphs have none
    twins = not run and any(name.startswith(_CAST_TWIN) for name in g.consumers)
    failed: list[int] = []
    conflicts: list[tuple[str, str, int, int]] = []
    for nid in order:
        node = g.node(nid)
        if is_control_flow(node):
            from graphmem.shapes.controlflow import infer_control_flow

            out_types, out_values, bodies[nid] = infer_control_flow(
                model, node, types, values, view=view, runtime=view is RUNTIME, dims=dims,
                order_of=body_order, infer=functools.partial(infer_types, contrib=contrib),
                label=f"{label}{node.name or node.op_type}",
            )
            for out in node.output:
                if out:
                    have = declared.get(out)
                    if have is not None:
                        have = TensorType(dtype=have.dtype, shape=bind_shape(have.shape, dims), kind=have.kind)
                    types[out] = _merge(out_types.get(out), have)
            values.update({k: v for k, v in out_values.items() if _keep_value(view, v)})
            continue
        if view is RUNTIME and _typed_as_sequence(node, types, values, declared):
            continue
        if view is RUNTIME and _typed_range(node, types, values):
            continue
        if view is RUNTIME and _typed_by_value(model.opsets, node, types, values, declared):
            continue
        seen = _as_first_resolved(node, types, declared) if twins else types
        inferred = _infer_node(model, node, seen, values, serialized, data_bytes, rule, memo)
        if inferred is None:
            failed.append(nid)
            inferred = {}
        for out in node.output:
            if not out:
                continue
            have = declared.get(out)
            new = inferred.get(out)
            if have is not None:
                if have not in bound:  # declared types repeat: each bound once
                    bound[have] = TensorType(dtype=have.dtype, shape=bind_shape(have.shape, dims), kind=have.kind)
                have = bound[have]
                if (
                    new is not None
                    and new.dtype
                    and have.dtype
                    and new.dtype != have.dtype
                    and is_default_domain(node.domain)
                ):
                    conflicts.append((node.name or node.op_type, out, new.dtype, have.dtype))
            if (new, have) not in merged:  # so do the pairs merged
                merged[new, have] = _merge(new, have, prefer_inferred_rank=run)
            types[out] = merged[new, have]
            if not run and types[out].kind == "sequence_type" and types[out].shape is not None:
                # onnxruntime's graph keeps no element shape for a sequence: what SequenceAt or
                # ConcatFromSequence return has none (measured: a SequenceAt output is reused by
                # nothing and reuses nothing, although onnx infers its shape)
                types[out] = replace(types[out], shape=None)
        if view is RUNTIME:
            _fill_runtime_gaps(node, types)
        if view.value_ops is None or op_key(node) in view.value_ops:
            _compute_values(model.opsets, node, types, values, view)
    return ShapeResult(
        types=types, values=values, failed_nodes=tuple(failed), bodies=bodies, type_conflicts=tuple(conflicts),
        failed_outputs=frozenset(o for nid in failed for o in g.node(nid).output if o),
    )


#: the name onnxruntime's InsertCastTransformer gives a Cast's float twin of a float16 tensor
_CAST_TWIN = "InsertedPrecisionFreeCast_"


def _as_first_resolved(
    node: onnx.NodeProto, types: dict[str, TensorType], declared: Mapping[str, TensorType]
) -> dict[str, TensorType]:
    """The input types onnxruntime inferred ``node``'s outputs from (static view), when it reads
    the float twin ``InsertedPrecisionFreeCast_X`` of a float16 tensor ``X`` the file declares:
    InsertCastTransformer gives each converted node's float16 input a Cast to float and resolves
    the graph (``graph.Resolve()``) *before* RemoveDuplicateCastTransformer joins the node to the
    producer's float output (core/optimizer/insert_cast_transformer.cc ApplyImpl): the output's
    shape was inferred from the Cast, i.e. from ``X``'s declared shape with its symbols, and later
    resolves only merge into it (measured: the float Softmax body of a float16 BERT-base reuses
    ReduceMax's buffer for ReduceSum and Sub's for Div, as those symbols match)."""
    subs = {}
    for name in node.input:
        if name.startswith(_CAST_TWIN) and name in types:
            source = declared.get(name.removeprefix(_CAST_TWIN))
            have = types[name].shape
            if source is not None and source.shape is not None and have is not None \
                    and len(source.shape) == len(have):
                subs[name] = replace(types[name], shape=source.shape)
    return {**types, **subs} if subs else types


def _typed_as_sequence(node, types, values, declared) -> bool:
    """Runtime view: a sequence op typed with its elements (:mod:`graphmem.shapes.sequences`)."""
    if not is_default_domain(node.domain):
        return False
    result = infer_sequence(node, types, values)
    if result is None:
        return False
    out_types, out_values = result
    for out in node.output:
        if out and out in out_types:
            types[out] = _merge(out_types[out], declared.get(out), prefer_inferred_rank=True)
    values.update(out_values)
    return all(not out or out in out_types for out in node.output)


def _typed_range(node, types, values) -> bool:
    """Runtime view: Range whose start, limit and delta are known one-element values. onnx infers
    (and its evaluator runs) Range on scalars only; onnxruntime's kernel also takes one-element
    1-D tensors (``providers/cpu/generator/range.cc``: "must be a scalar or 1-D with one element";
    AffineGrid's function body feeds it Split outputs). Output: max(ceil((limit - start) / delta), 0)
    elements of start's type."""
    if node.op_type != "Range" or not is_default_domain(node.domain) or len(node.input) != 3:
        return False
    known = [values.get(x) for x in node.input]
    if any(v is None or v.size != 1 for v in known) or all(v.ndim == 0 for v in known):
        return False  # scalars: onnx's own inference and evaluation do it
    start, limit, delta = (v.reshape(()) for v in known)
    if delta == 0:
        return False
    count = max(int(math.ceil((float(limit) - float(start)) / float(delta))), 0)
    out = node.output[0]
    types[out] = TensorType(dtype=types[node.input[0]].dtype, shape=(count,))
    if count <= MAX_VALUE_ELEMENTS:
        values[out] = (start + np.arange(count, dtype=start.dtype) * delta).astype(start.dtype)
    return True


def _typed_by_value(opsets, node, types, values, declared) -> bool:
    """Runtime view: a node whose inputs are all known small values is evaluated first, and its
    outputs typed by the values it computed (what the run produces), skipping ONNX inference.
    False, with nothing set, when that is not possible."""
    if op_key(node) in _EXPANDING or node.op_type in ("Shape", "Size") or not is_default_domain(node.domain):
        return False
    known = _known_inputs(node, values)
    if known is None or any(v is not None and v.dtype == object for v in known):
        return False
    result = evaluate_node(node, known, opsets)
    outs = [o for o in node.output if o]
    if result is None or len(result) < len(node.output) or any(v.size > MAX_VALUE_ELEMENTS for v in result):
        return False
    computed = {}
    for o, v in zip(node.output, result):
        if not o:
            continue
        code = _np_to_onnx(v.dtype)
        have = declared.get(o)
        if code is None or (have is not None and have.dtype and have.dtype != code):
            return False  # a type the value cannot say, or one the file contradicts: infer instead
        computed[o] = (code, v)
    for o in outs:
        code, v = computed[o]
        values[o] = v
        types[o] = TensorType(dtype=code, shape=tuple(int(d) for d in v.shape))
    return True


def _fill_runtime_gaps(node, types) -> None:
    """Shapes ONNX inference leaves unknown but the op's definition fixes at run time.

    Dropout's ``mask`` has its input's shape (opset 7-9 declares no shape for it).
    """
    if node.op_type == "Dropout" and is_default_domain(node.domain) and len(node.output) > 1:
        mask, data = node.output[1], types.get(node.input[0])
        have = types.get(mask)
        if mask and data is not None and (have is None or have.shape is None):
            dtype = have.dtype if have is not None and have.dtype else onnx.TensorProto.BOOL
            types[mask] = TensorType(dtype=dtype, shape=data.shape)


def _keep_value(view: View, v: np.ndarray) -> bool:
    return not view.int_values_only or np.issubdtype(v.dtype, np.integer)


def _infer_node(model, node, types, values, serialized, data_bytes, rule, memo):
    """ONNX per-node inference (``rule`` for a node of no schema); None when there is no rule
    or inference raised.

    onnx's inference of a node is a function of its op, attributes, opsets and its inputs' types
    and values, not of its names: ``memo`` keeps each answer by those, positionally, so the
    thousands of nodes a deep graph repeats (a layer's Add, MatMul, Softmax) are inferred once."""
    domain = node.domain or ""
    version = model.opsets.get(domain, 0)
    schema = op_schema(node.op_type, version, domain)
    if schema is None:
        return rule(node, types, values) if rule is not None else None
    if not _inferable(node.op_type, version, domain):
        return None
    names = tuple(node.input)
    given: list[tuple[bytes, bytes | None] | None] = []
    for name in names:
        if not name or name not in types:
            given.append(None)
            continue
        if name not in serialized:
            serialized[name] = _type_bytes(types[name])
        data = None
        if name in values:
            if name not in data_bytes:
                data_bytes[name] = _tensor_bytes(values[name], name)
            data = data_bytes[name]
        given.append((serialized[name], data))
    attrs = node.attribute
    key = (domain, node.op_type, version, tuple(a.SerializeToString() for a in attrs) if attrs else (),
           tuple(given), len(node.output))
    outputs = memo.get(key)
    if outputs is None:
        in_types = {n: g[0] for n, g in zip(names, given) if g is not None}
        in_data = {n: g[1] for n, g in zip(names, given) if g is not None and g[1] is not None}
        try:
            out = schema._infer_node_outputs(  # type: ignore[call-arg]  # opsets, IR: not in onnx's .pyi; the wrapper re-serializes
                with_defaults(node, schema).SerializeToString(), in_types, in_data, {}, model.opsets, model.ir_version
            )
        except Exception:  # noqa: BLE001 - onnx raises InferenceError, ValidationError, RuntimeError
            outputs = memo[key] = ()
        else:
            outputs = memo[key] = (tuple(_type_of(out[o]) if o in out else None for o in node.output),)
    if not outputs:
        return None
    return {o: t for o, t in zip(node.output, outputs[0]) if t is not None}


def with_defaults(node: onnx.NodeProto, schema: defs.OpSchema) -> onnx.NodeProto:
    """``node`` with the schema's default attributes it omits, as onnxruntime resolves a graph
    (``core/graph/graph.cc`` VerifyNodeAndOpMatch: "Add any missing default attributes"). onnx's
    per-node inference does not apply them, and some inference functions read another default
    (STFT's ``onesided`` is 1 in the schema, 0 in its inference: 16 bins instead of 9)."""
    have = {a.name for a in node.attribute}
    missing = [a for name, a in _defaults(schema.domain, schema.name, schema.since_version) if name not in have]
    if not missing:
        return node
    full = onnx.NodeProto()
    full.CopyFrom(node)
    full.attribute.extend(missing)
    return full


@functools.cache
def _defaults(domain: str, op_type: str, since_version: int) -> tuple[tuple[str, onnx.AttributeProto], ...]:
    """The optional attributes with a default of one schema, by name (read once: the schema's
    ``attributes`` map is built anew on every access)."""
    schema = defs.get_schema(op_type, since_version, domain)
    return tuple((name, a.default_value) for name, a in sorted(schema.attributes.items())
                 if not a.required and a.default_value.name)


@functools.cache
def _inferable(op_type: str, version: int, domain: str) -> bool:
    schema = op_schema(op_type, version, domain)
    return schema is not None and schema.has_type_and_shape_inference_function


@functools.cache
def op_schema(op_type: str, version: int, domain: str) -> defs.OpSchema | None:
    """The op's schema at the model's opset; None for an op onnx does not define."""
    try:
        return defs.get_schema(op_type, version, domain)
    except defs.SchemaError:
        return None


@lru_cache(maxsize=8192)
def _type_bytes(t: TensorType) -> bytes:
    """A type serialized as onnx's TypeProto (types repeat: one serialization per distinct type)."""
    return type_to_proto(t).SerializeToString()


@lru_cache(maxsize=8192)
def _type_of(data: bytes) -> TensorType:
    return type_from_proto(onnx.TypeProto.FromString(data))


def _tensor_bytes(v: np.ndarray, name: str) -> bytes:
    """A value as a serialized TensorProto (raw data; what ``numpy_helper.from_array`` writes)."""
    code = _np_to_onnx(v.dtype)
    if code is None or v.dtype == object:
        return from_array(v, name).SerializeToString()
    tp = onnx.TensorProto(name=name, data_type=code, dims=v.shape)
    tp.raw_data = np.ascontiguousarray(v).astype(v.dtype.newbyteorder("<"), copy=False).tobytes()
    return tp.SerializeToString()


@lru_cache(maxsize=64)
def _np_to_onnx(dtype: np.dtype) -> int | None:
    try:
        return onnx.helper.np_dtype_to_tensor_dtype(dtype)
    except (KeyError, ValueError, TypeError):
        return None


def _merge(
    inferred: TensorType | None, declared: TensorType | None, *, prefer_inferred_rank: bool = False
) -> TensorType:
    """Merge an inferred type into the file's declared one, as onnx's ``mergeInShapeInfo``.

    Per dim: an inferred value wins; else a declared value stays; else the declared name is
    preferred over an inferred one. A rank mismatch keeps the declared type. A negative dim, inferred
    or declared, is unknown (:func:`graphmem.model.types.known_dims`).
    """
    inferred = known_dims(inferred) if inferred is not None else None
    declared = known_dims(declared) if declared is not None else None
    if inferred is not None and inferred.elements is not None:
        return inferred  # a sequence whose elements the run gives
    if inferred is None or inferred.kind != "tensor":
        return declared if declared is not None else (inferred or TensorType(dtype=0, shape=None))
    if declared is None or declared.kind != "tensor":
        return inferred
    dtype = inferred.dtype or declared.dtype
    if inferred.shape is None:
        return TensorType(dtype=dtype, shape=declared.shape)
    if declared.shape is None:
        return TensorType(dtype=dtype, shape=inferred.shape)
    if len(inferred.shape) != len(declared.shape):
        # the run follows the ops, not a file whose declared rank is wrong (runtime view)
        return TensorType(dtype=dtype, shape=inferred.shape if prefer_inferred_rank else declared.shape)
    dims: list[Dim] = []
    for a, b in zip(inferred.shape, declared.shape):
        if isinstance(a, int):
            dims.append(a)
        elif isinstance(b, int):
            dims.append(b)
        elif isinstance(b, str):
            dims.append(b)
        else:
            dims.append(a)
    return TensorType(dtype=dtype, shape=tuple(dims))


def _compute_values(opsets, node, types, values, view: View) -> None:
    """Compute a node's output values when all its inputs are known and outputs are small."""
    if node.op_type == "Shape" or node.op_type == "Size":
        _shape_value(node, types, values)
        return
    known = _known_inputs(node, values)
    if known is None:
        return
    outs = [o for o in node.output if o]
    for o in outs:
        t = types.get(o)
        if t is None or t.dtype == onnx.TensorProto.STRING:
            return
        if view.int_values_only and not is_integer(t.dtype):
            return
        if is_concrete(t.shape):
            if math.prod(t.shape) > MAX_VALUE_ELEMENTS:
                return
        elif op_key(node) in _EXPANDING:
            return
    result = evaluate_node(node, known, opsets)
    if result is None:
        return
    for o, v in zip(node.output, result):
        if not o:
            continue
        if v.size <= MAX_VALUE_ELEMENTS:
            values[o] = v
        declared = types.get(o)
        if declared is None or not is_concrete(declared.shape):
            types[o] = TensorType(dtype=_onnx_dtype(v, declared), shape=tuple(int(d) for d in v.shape))


def _known_inputs(node, values) -> list[np.ndarray | None] | None:
    """The node's input values (None for an omitted optional input) when it has inputs and every
    present one is a known value of at most MAX_VALUE_ELEMENTS elements; else None."""
    ins = node.input
    if not ins or any(x and (x not in values or values[x].size > MAX_VALUE_ELEMENTS) for x in ins):
        return None
    return [values[x] if x else None for x in ins]


def _shape_value(node, types, values) -> None:
    """Shape/Size of a tensor whose shape is fully known (start/end honoured for Shape-15)."""
    t = types.get(node.input[0])
    if t is None or not is_concrete(t.shape):
        return
    shape = np.array(t.shape, dtype=np.int64)
    if node.op_type == "Size":
        values[node.output[0]] = np.array(math.prod(t.shape), dtype=np.int64)
        return
    rank = len(shape)
    attrs = {a.name: a.i for a in node.attribute}
    start = attrs.get("start", 0)
    end = attrs.get("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    values[node.output[0]] = shape[start:end]


def _onnx_dtype(v: np.ndarray, declared: TensorType | None) -> int:
    if declared is not None and declared.dtype:
        return declared.dtype
    return onnx.helper.np_dtype_to_tensor_dtype(v.dtype)
