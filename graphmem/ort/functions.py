"""Ops onnxruntime runs as function bodies, expanded as onnxruntime 1.31 expands them — statically.

onnxruntime's CPU provider has no kernel for some ONNX ops (``graphmem.ort.rules.RUNS_AS_FUNCTION``); when
it builds a session it replaces each such node by the nodes of the op's ONNX function body. This
module does the same from the file alone, with onnx's own function bodies (``OpSchema``'s
``get_function_with_opset_version`` and ``get_context_dependent_function_with_opset_version``),
and reproduces onnxruntime's graph: the same node and tensor names, the same initializers, and
the same node indices (so the same execution order). What onnxruntime does, by source file:

* ``core/framework/graph_partitioner.cc`` (``InlineNodes``, and ``InlineFunctionsAOTImpl`` for
  models with local functions): in rounds, every node no provider claimed that has a function
  body is inlined, in node-index order; nodes a body brings in that need inlining themselves are
  inlined in the next round.
* ``core/graph/graph.cc`` (``Graph::InlineFunction``, ``InlineFunctionProto``,
  ``AddConstantProtoAsInitializer``, ``GenerateNodeName``): the call's unique prefix is
  ``GenerateNodeName("_inlfunc_" + op_type)`` (``…_token_N`` when taken); the body's Constant
  nodes become initializers; its other nodes are appended with new indices (``AddNode``), in body
  order; the call node is removed.
* ``core/graph/function_utils.cc`` (``Inliner``): formal inputs and outputs are bound to the
  call's actual names (a missing optional output gets prefix + formal), every other name and
  every non-empty node name gets the prefix, attribute references take the call's attribute or
  are dropped.
* ``Node::TryGetFunctionProto`` (``graph.cc``): the body for the graph's opset of the op's domain;
  context-dependent bodies are built from the node (with its default attributes, which
  ``Graph::Resolve`` adds to every node) and its inputs' types as onnxruntime infers them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import onnx
from onnx import defs

from graphmem.model.loading import Model, constant_weight
from graphmem.model.types import TensorType, type_to_proto
from graphmem.optable import normalize_domain
from graphmem.ort.rules import runs_as_function
from graphmem.shapes.infer import with_defaults

__all__ = ["InlineResult", "inline_functions", "function_body", "specialize", "with_defaults"]

#: A round's input types: tensor name -> type as onnxruntime infers it when it builds the session.
TypesOf = Callable[[Model], Mapping[str, TensorType]]


@dataclass(frozen=True, slots=True, kw_only=True)
class InlineResult:
    """The model onnxruntime runs, and what was inlined to get it."""

    model: Model
    inlined: tuple[str, ...]  # op types expanded, sorted
    missing: tuple[str, ...]  # op types that run as functions but onnx gave no body for (kept whole)


class NodeNames:
    """``Graph::GenerateNodeName``: ``base`` if no node has that name and it was never generated,
    else ``base_token_N`` with one counter for the whole graph."""

    def __init__(self, taken: Sequence[str]) -> None:
        self._taken = set(taken)
        self._counter = 0

    def generate(self, base: str) -> str:
        name = base
        while name in self._taken:
            name = f"{base}_token_{self._counter}"
            self._counter += 1
        self._taken.add(name)
        return name

    def add(self, name: str) -> None:
        self._taken.add(name)


def function_body(
    node: onnx.NodeProto, opset: int, input_types: Sequence[TensorType | onnx.TypeProto | None]
) -> onnx.FunctionProto | None:
    """The op's ONNX function body as onnxruntime asks for it (``Node::TryGetFunctionProto``): the
    body of the schema version in force at ``opset``, requested at that schema's since-version
    (``GetFunction(SinceVersion())``, ``BuildContextDependentFunction`` with the default version);
    context-dependent ones built for this node and these input types. None when onnx has none."""
    try:
        schema = defs.get_schema(node.op_type, opset, node.domain)
    except defs.SchemaError:
        return None
    if schema.has_context_dependent_function:  # type: ignore[attr-defined]  # not in onnx's defs.pyi
        if any(t is not None and not isinstance(t, onnx.TypeProto) and t.kind != "tensor" for t in input_types):
            return None  # sequence/map/optional values: graphmem keeps no element type to build from
        types = [_type_proto(t).SerializeToString() for t in input_types]
        data = schema.get_context_dependent_function_with_opset_version(  # type: ignore[attr-defined]  # not in onnx's defs.pyi
            schema.since_version, with_defaults(node, schema).SerializeToString(), types
        )
    elif schema.has_function:  # type: ignore[attr-defined]  # not in onnx's defs.pyi
        data = schema.get_function_with_opset_version(schema.since_version)  # type: ignore[attr-defined]  # not in onnx's defs.pyi
    else:
        return None
    if not data:
        return None
    return onnx.FunctionProto.FromString(data)


def _type_proto(t: TensorType | onnx.TypeProto | None) -> onnx.TypeProto:
    if isinstance(t, onnx.TypeProto):
        return t
    if t is None or not t.dtype:
        return onnx.TypeProto()  # onnxruntime passes an empty TypeProto for an untyped input
    return type_to_proto(t)


def specialize(body: onnx.FunctionProto, call: onnx.NodeProto, prefix: str) -> onnx.FunctionProto:
    """``function_utils.cc`` ``Inliner::specialize``: the body renamed for this call site."""
    fp = onnx.FunctionProto()
    fp.CopyFrom(body)
    attrs = {a.name: a for a in call.attribute}
    scopes: list[dict[str, str]] = [{}]

    def unique(name: str) -> str:
        scopes[-1][name] = prefix + name
        return prefix + name

    def rename(name: str) -> str:
        if not name:
            return name
        for scope in reversed(scopes):
            if name in scope:
                return scope[name]
        return unique(name)

    def bind(formals, actuals, is_output: bool) -> None:
        for i, formal in enumerate(formals):
            actual = actuals[i] if i < len(actuals) else ""
            if is_output and not actual:
                actual = prefix + formal
            scopes[-1][formal] = actual
            if actual:
                formals[i] = actual

    def transform_node(n: onnx.NodeProto) -> None:
        if n.name:
            n.name = prefix + n.name
        for i, x in enumerate(n.input):
            n.input[i] = rename(x)
        for i, y in enumerate(n.output):
            n.output[i] = rename(y)
        kept = []
        for a in n.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name not in attrs:
                    continue
                value = onnx.AttributeProto()
                value.CopyFrom(attrs[a.ref_attr_name])
                value.name = a.name
                a = value
            if a.HasField("g"):
                transform_graph(a.g)
            for g in a.graphs:
                transform_graph(g)
            kept.append(a)
        del n.attribute[:]
        n.attribute.extend(kept)

    def transform_graph(g: onnx.GraphProto) -> None:
        scopes.append({})
        for v in (*g.input, *g.output):
            v.name = unique(v.name)
        for n in g.node:
            transform_node(n)
        scopes.pop()

    bind(fp.input, list(call.input), is_output=False)
    bind(fp.output, list(call.output), is_output=True)
    for n in fp.node:
        transform_node(n)
    return fp


def inline_functions(
    model: Model, types_of: TypesOf, also: Callable[[onnx.NodeProto], bool] | None = None
) -> InlineResult:
    """Expand every node onnxruntime runs as a function body, as onnxruntime does (module doc).

    ``types_of(model)`` gives the input types context-dependent bodies are built from; it is
    called once per round that needs it. A node whose body cannot be built (its input types are
    unknown to graphmem) stays whole and is listed in ``missing``. ``also``: nodes to expand
    besides the ops of ``RUNS_AS_FUNCTION`` (those the CPU provider has no kernel for with their
    element types, ``graphmem.ort.insert_cast.cpu_session``).
    """

    def runs_as_body(n: onnx.NodeProto) -> bool:
        if also is not None and also(n):
            return True
        return runs_as_function(n.domain, n.op_type, model.opsets.get(normalize_domain(n.domain), 0))

    if not any(runs_as_body(n) for n in model.nodes):
        return InlineResult(model=model, inlined=(), missing=())
    ids = list(model.node_ids or range(len(model.nodes)))
    nodes = list(model.nodes)
    next_index = max(ids, default=-1) + 1  # Graph::AllocateNode: index = nodes_.size()
    weights, values = dict(model.weights), dict(model.values)
    names = NodeNames([n.name for n in nodes])
    inlined: set[str] = set()
    failed: dict[int, str] = {}  # NodeIndex -> op type of the calls left whole
    # Values whose type graphmem does not keep (sequences, maps, optionals): the file's declaration.
    declared = {
        v.name: v.type
        for v in (*model.graph.input, *model.graph.value_info, *model.graph.output)
        if v.type.WhichOneof("value") not in (None, "tensor_type")
    }
    current = model
    while True:  # graph_partitioner.cc: one round per partition pass, calls in node-index order
        calls = [i for i, n in enumerate(nodes) if runs_as_body(n) and ids[i] not in failed]
        if not calls:
            break
        types = types_of(current) if any(_context_dependent(nodes[i], model) for i in calls) else {}
        removed: set[int] = set()
        for i in calls:
            call = nodes[i]
            opset = model.opsets.get(normalize_domain(call.domain), 0)
            body = function_body(call, opset, [(declared.get(x) or types.get(x)) if x else None for x in call.input])
            if body is None:
                failed[ids[i]] = call.op_type
                continue
            prefix = names.generate("_inlfunc_" + call.op_type) + "_"
            schema = defs.get_schema(call.op_type, opset, call.domain)
            for n in specialize(body, with_defaults(call, schema), prefix).node:
                weight = constant_weight(n, model.path, values)
                if weight is not None:  # graph.cc AddConstantProtoAsInitializer
                    weights[weight.name] = weight
                    continue
                nodes.append(n)
                ids.append(next_index)
                next_index += 1
                if n.name:
                    names.add(n.name)
            removed.add(i)
            inlined.add(call.op_type)
        if not removed:
            break
        nodes = [n for k, n in enumerate(nodes) if k not in removed]
        ids = [nid for k, nid in enumerate(ids) if k not in removed]
        current = replace(model, nodes=tuple(nodes), node_ids=tuple(ids), weights=weights, values=values)
    return InlineResult(model=current, inlined=tuple(sorted(inlined)), missing=tuple(sorted(set(failed.values()))))


def _context_dependent(node: onnx.NodeProto, model: Model) -> bool:
    try:
        schema = defs.get_schema(node.op_type, model.opsets.get(normalize_domain(node.domain), 0), node.domain)
    except defs.SchemaError:
        return False
    return bool(schema.has_context_dependent_function)  # type: ignore[attr-defined]  # not in onnx's defs.pyi
