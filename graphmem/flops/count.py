"""Count a graph's FLOPs: build a :class:`NodeView` per node, evaluate its rule, sum, tally.

Subgraphs (If/Loop/Scan bodies) are counted first, recursively, and handed to the control-flow
rule as costs. Inside a body, types come from the outer scope, the body's declared inputs,
initializers, value_info and outputs, the exact shape of a Scan slice, and onnx's per-node shape
inference; what stays unknown makes the inner op — and so the control-flow op — unsupported
("shape unknown"), never 0. Loop-carried and Scan state shapes are taken only as declared.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import defs, numpy_helper

from graphmem.errors import UsageError
from graphmem.flops.cost import ZERO, Cost, NodeView
from graphmem.flops.families import always_zero
from graphmem.flops.registry import REGISTRY, normalize_domain, run
from graphmem.model.graph import OpGraph
from graphmem.model.types import TensorType, is_concrete, known_dims, type_from_proto, type_to_proto
from graphmem.optable import is_default_domain

__all__ = ["FlopReport", "count_flops", "node_view"]

_UNKNOWN = TensorType(dtype=0, shape=None)
_GRAPH = onnx.AttributeProto.GRAPH
_GRAPHS = onnx.AttributeProto.GRAPHS
_SMALL = 4096  # constants up to this many elements keep their values (trip counts, axes)


@dataclass(frozen=True, slots=True, kw_only=True)
class FlopReport:
    """Totals over counted nodes, each node's cost, and the tallies a report shows.

    ``by_op_type`` maps each counted op type to its FLOPs; ``unsupported`` each op type with
    unsupported nodes to how many; ``zero`` the op types that were explicitly zero.
    Unsupported nodes contribute nothing to the totals — read them as "at least".
    """

    flops: int
    macs: int
    int_ops: int
    costs: dict[int, Cost]
    by_op_type: dict[str, int]
    unsupported: dict[str, int]
    zero: tuple[str, ...]


def count_flops(
    g: OpGraph,
    types: Mapping[str, TensorType],
    order: tuple[int, ...] | list[int] | None = None,
    *,
    values: Mapping[str, np.ndarray] | None = None,
) -> FlopReport:
    """Cost every node of ``g`` with the runtime ``types`` of its tensors.

    Parameters
    ----------
    g : the op graph (``Analysis.graph``).
    types : tensor name → type, with concrete shapes once dims are bound (``Analysis.types``).
    order : the nodes to visit, in order (default: all, by id); the totals do not depend on it.
    values : known tensor values beyond the model's small constants (e.g. from shape
        inference), used for Loop trip counts and constant-valued inputs.

    Returns
    -------
    FlopReport

    Raises
    ------
    UsageError : ``order`` names a node the graph does not have.

    Example: ``count_flops(a.graph, a.types, a.order).macs`` for ``a = graphmem.analyze(path)``.
    """
    model = g.model
    known: dict[str, np.ndarray] = dict(model.values)
    if values:
        known.update(values)
    weight_names = frozenset(model.weights)
    nids = list(order) if order is not None else sorted(g.dag.nodes)
    missing = [n for n in nids if n not in g.dag]
    if missing:
        raise UsageError(f"order names nodes the graph does not have: {missing[:5]}")
    costs: dict[int, Cost] = {}
    by_op: dict[str, int] = {}
    unsupported: dict[str, int] = {}
    zero: set[str] = set()
    flops = macs = int_ops = 0
    memo: dict[tuple, Cost] = {}  # a node's cost by what it depends on
    for nid in nids:
        node = g.node(nid)
        key = _memo_key(node, types, weight_names, known)
        cost = memo.get(key) if key is not None else None
        if cost is None:
            cost = _cost(node, types, model.opsets, weight_names, known)
            if key is not None:
                memo[key] = cost
        costs[nid] = cost
        op = node.op_type
        if cost.outcome == "counted":
            flops += cost.flops
            macs += cost.macs
            int_ops += cost.int_ops
            by_op[op] = by_op.get(op, 0) + cost.flops
        elif cost.outcome == "zero":
            zero.add(op)
        else:
            unsupported[op] = unsupported.get(op, 0) + 1
    return FlopReport(
        flops=flops,
        macs=macs,
        int_ops=int_ops,
        costs=costs,
        by_op_type=by_op,
        unsupported=unsupported,
        zero=tuple(sorted(zero)),
    )


def _memo_key(node, types, weight_names, values) -> tuple | None:
    """What a node's cost depends on when it has no subgraph: its op, attributes, the types of its
    inputs and outputs, which inputs are weights and which known values they hold (by identity:
    ``values`` lives as long as the count, and a weight read by many nodes is one array), so the
    nodes a deep graph repeats are costed once. None: cost it on its own."""
    attrs = node.attribute
    if attrs and any(a.type in (_GRAPH, _GRAPHS) for a in attrs):
        return None
    names = tuple(node.input)
    get = types.get
    return (
        node.domain, node.op_type, tuple(a.SerializeToString() for a in attrs) if attrs else (),
        tuple(get(x) if x else "" for x in names), tuple(get(x) if x else "" for x in node.output),
        tuple(x in weight_names for x in names), tuple(id(values[x]) if x in values else 0 for x in names),
    )


def _cost(
    node: onnx.NodeProto,
    types: Mapping[str, TensorType],
    opsets: Mapping[str, int],
    weight_names: frozenset[str] | set[str],
    values: Mapping[str, np.ndarray],
) -> Cost:
    """Evaluate one node; ops whose rule is unconditionally zero skip building a view."""
    entry = REGISTRY.of(node)
    if entry is not None and entry.rule is always_zero:
        return ZERO
    return run(entry, node_view(node, types, opsets, weight_names, values))


def node_view(
    node: onnx.NodeProto,
    types: Mapping[str, TensorType],
    opsets: Mapping[str, int],
    weight_names: frozenset[str] | set[str] = frozenset(),
    values: Mapping[str, np.ndarray] | None = None,
) -> NodeView:
    """The :class:`NodeView` of one NodeProto; subgraph attributes are counted recursively."""
    values = values if values is not None else {}
    domain = normalize_domain(node.domain)
    attrs: dict[str, object] = {}
    subgraphs: dict[str, Cost] = {}
    for a in node.attribute:
        if a.type == _GRAPH:
            bound = _body_inputs(node, a.g, types, opsets)
            subgraphs[a.name] = _graph_cost(a.g, types, opsets, weight_names, values, bound)
        elif a.type != _GRAPHS:
            attrs[a.name] = _attr_value(a)
    names = tuple(node.input)
    get = types.get
    ins = tuple((get(x) or _UNKNOWN) if x else None for x in names)
    outs = tuple((get(x) or _UNKNOWN) if x else None for x in node.output)
    in_values = {i: values[x] for i, x in enumerate(names) if x in values} if values else {}
    weights = frozenset(i for i, x in enumerate(names) if x in weight_names) if weight_names else frozenset()
    trip = None
    if node.op_type == "Loop" and 0 in in_values and in_values[0].size == 1:
        trip = int(in_values[0].reshape(-1)[0])
    return NodeView(
        op_type=node.op_type,
        domain=domain,
        attrs=attrs,
        inputs=ins,
        outputs=outs,
        opset=_opset(opsets, domain),
        weights=weights,
        values=in_values,
        trip_count=trip,
        subgraphs=subgraphs,
    )


def _attr_value(a: onnx.AttributeProto) -> object:
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if isinstance(v, list):
        return tuple(x.decode("utf-8", errors="replace") if isinstance(x, bytes) else x for x in v)
    return v


def _opset(opsets: Mapping[str, int], domain: str) -> int:
    if domain == "":
        return opsets.get("", 0)
    return opsets.get(domain, 1)


def _body_inputs(
    node: onnx.NodeProto, body: onnx.GraphProto, types: Mapping[str, TensorType], opsets: Mapping[str, int]
) -> dict[str, TensorType]:
    """Types of a body's inputs that the op fixes exactly: Loop's counters, Scan's slices."""
    names = [i.name for i in body.input]
    bound: dict[str, TensorType] = {}
    if node.op_type == "Loop" and len(names) >= 2:
        bound[names[0]] = TensorType(dtype=onnx.TensorProto.INT64, shape=())
        bound[names[1]] = TensorType(dtype=onnx.TensorProto.BOOL, shape=())
    elif node.op_type == "Scan":
        n_scan = next((a.i for a in node.attribute if a.name == "num_scan_inputs"), 0)
        axes = next((list(a.ints) for a in node.attribute if a.name == "scan_input_axes"), [])
        old = _opset(opsets, normalize_domain(node.domain)) < 9
        outer = [x for x in node.input][len(node.input) - n_scan :] if n_scan else []
        inner = names[len(names) - n_scan :] if n_scan else []
        for k, (o, i) in enumerate(zip(outer, inner)):
            t = types.get(o)
            if t is None or not is_concrete(t.shape):
                continue
            shape = t.shape
            if old:
                sliced = shape[2:]
            else:
                axis = axes[k] if k < len(axes) else 0
                axis = axis + len(shape) if axis < 0 else axis
                sliced = shape[:axis] + shape[axis + 1 :]
            bound[i] = TensorType(dtype=t.dtype, shape=sliced)
    return bound


def _graph_cost(
    graph: onnx.GraphProto,
    outer: Mapping[str, TensorType],
    opsets: Mapping[str, int],
    outer_weights: frozenset[str] | set[str],
    outer_values: Mapping[str, np.ndarray],
    bound: Mapping[str, TensorType],
) -> Cost:
    """The summed cost of a subgraph; unsupported (with the first inner reason) if any inner
    node is; zero if every node is."""
    local: dict[str, TensorType] = {}
    local_values: dict[str, np.ndarray] = {}
    for vi in (*graph.input, *graph.value_info, *graph.output):
        _merge_into(local, vi.name, type_from_proto(vi.type))
    for name, t in bound.items():
        _merge_into(local, name, t)
    weights = set(outer_weights)
    for init in graph.initializer:
        local[init.name] = TensorType(dtype=init.data_type, shape=tuple(int(d) for d in init.dims))
        weights.add(init.name)
        _keep_value(init, local_values)
    # typeshed types ChainMap's maps as MutableMappings; only maps[0] (local) is ever written
    types: ChainMap[str, TensorType] = ChainMap(local, outer)  # type: ignore[arg-type]
    values: ChainMap[str, np.ndarray] = ChainMap(local_values, outer_values)  # type: ignore[arg-type]  # as above
    inner_weights = frozenset(weights)
    flops = macs = int_ops = 0
    any_counted = False
    for node in graph.node:
        _fill_types(node, types, values, opsets)
        cost = _cost(node, types, opsets, inner_weights, values)
        if cost.outcome == "unsupported":
            return Cost(outcome="unsupported", reason=f"body: {node.op_type}: {cost.reason}")
        if cost.outcome == "counted":
            any_counted = True
            flops += cost.flops
            macs += cost.macs
            int_ops += cost.int_ops
    if not any_counted:
        return Cost(outcome="zero")
    return Cost(flops=flops, macs=macs, int_ops=int_ops)


def _merge_into(types: MutableMapping[str, TensorType], name: str, t: TensorType) -> None:
    """Keep the more concrete of two types for ``name`` (a negative dim is unknown: known_dims)."""
    t = known_dims(t)
    have = types.get(name)
    if have is None or (not is_concrete(have.shape) and (is_concrete(t.shape) or have.shape is None)):
        types[name] = t


def _keep_value(t: onnx.TensorProto, values: MutableMapping[str, np.ndarray]) -> None:
    if t.data_type == onnx.TensorProto.STRING or int(np.prod(t.dims)) > _SMALL:
        return
    if t.data_location == onnx.TensorProto.EXTERNAL:  # a body weight onnxruntime wrote to weights.bin
        return
    try:
        values[t.name] = numpy_helper.to_array(t)
    except (ValueError, TypeError):
        return


def _fill_types(
    node: onnx.NodeProto,
    types: ChainMap[str, TensorType],
    values: ChainMap[str, np.ndarray],
    opsets: Mapping[str, int],
) -> None:
    """Give a body node's outputs types: Constant values, Shape values, onnx inference."""
    outs = [o for o in node.output if o]
    if node.op_type == "Constant" and is_default_domain(node.domain) and outs:
        for a in node.attribute:
            if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                types.maps[0][outs[0]] = TensorType(dtype=a.t.data_type, shape=tuple(a.t.dims))
                proto = onnx.TensorProto()
                proto.CopyFrom(a.t)
                proto.name = outs[0]
                _keep_value(proto, values.maps[0])
        return
    if all(o in types and is_concrete(types[o].shape) for o in outs):
        return
    if node.op_type == "Shape" and node.input and node.input[0] in types:
        src = types[node.input[0]]
        if is_concrete(src.shape) and not any(a.name in ("start", "end") for a in node.attribute):
            values.maps[0][outs[0]] = np.array(src.shape, dtype=np.int64)
    for name, t in _infer(node, types, values, opsets).items():
        _merge_into(types.maps[0], name, t)


def _infer(
    node: onnx.NodeProto,
    types: Mapping[str, TensorType],
    values: Mapping[str, np.ndarray],
    opsets: Mapping[str, int],
) -> dict[str, TensorType]:
    domain = normalize_domain(node.domain)
    try:
        schema = defs.get_schema(node.op_type, _opset(opsets, domain), domain)
    except defs.SchemaError:
        return {}
    in_types = {x: type_to_proto(types[x]) for x in node.input if x and x in types}
    in_data = {x: numpy_helper.from_array(values[x], x) for x in node.input if x and x in values}
    imports = [onnx.helper.make_opsetid(d, v) for d, v in opsets.items()]
    try:
        out = onnx.shape_inference.infer_node_outputs(schema, node, in_types, in_data, None, imports)
    except Exception:  # noqa: BLE001 - onnx raises InferenceError, ValidationError, RuntimeError
        return {}
    return {k: type_from_proto(v) for k, v in out.items()}
