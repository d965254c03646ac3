"""Stage 1b — refuse, with its reason, a file that is not a valid ONNX model.

A model onnxruntime cannot load has no activation peak: answering it with a figure (exit 0) tells
a user who gates a deployment on graphmem that the model is fine. The checks here are those of
ONNX itself, which onnxruntime applies when it builds its graph (``core/graph/graph.cc``
``Graph::Resolve``/``VerifyNodeAndOpMatch``: each node's schema, attributes and input types,
strict shape inference; ``core/framework/tensorprotoutils.cc``: payload sizes, external data):

* ``onnx.checker.check_model(full_check=True)`` (strict type and shape inference included) on a
  proxy of the stripped model: weights whose payload graphmem did not read (large ones, external
  data) become graph inputs of the same dtype and dims, all the checker and shape inference look
  at; ``ai.onnx`` spelled out is the default domain, and the nodes are put in topological order
  (onnxruntime accepts both, the checker alone would not);
* no negative dim in a weight; payload sizes that match the dims, also of the payloads graphmem
  skipped (their lengths come from :mod:`graphmem.model.protoscan`);
* external-data entries well formed: a location inside the model's folder, offsets and lengths
  that are non-negative integers, within the file when it exists. **An absent external-data file
  is accepted**: graphmem never reads weight bytes (the one documented difference from
  onnxruntime, which needs them to load); one :class:`ExternalDataWarning` names it.

What only onnxruntime refuses (opsets newer than it supports, nodes without a CPU kernel for
their types) is checked by :mod:`graphmem.ort.loadable` once types are known.
"""

from __future__ import annotations

import functools
import heapq
import math
import os
import warnings
from collections.abc import Mapping
from pathlib import Path

import onnx
import onnx.defs
from onnx import TensorProto, helper

from graphmem.errors import InvalidModelError
from graphmem.model.dtypes import element_bits
from graphmem.model.walk import all_nodes, node_bodies
from graphmem.optable import is_default_domain, normalize_domain

__all__ = [
    "check_model",
    "checker_proxy",
    "clear_invalid_dims",
    "ExternalDataWarning",
    "missing_data_message",
    "ORT_ONNX_DOMAIN_OPS",
]

#: (op_type, since_version) of the ops onnxruntime 1.31 registers in the ONNX domain beyond onnx's
#: own schemas (``core/graph/contrib_ops/onnx_deprecated_operators.cc`` and ``contrib_defs.cc``:
#: LayerNormalization-1 and SimplifiedLayerNormalization-1, which onnxruntime-genai's builder
#: writes, ScaledTanh, Crop, ...): its schema registry (``get_all_operator_schema``) less onnx
#: 1.23's, as tests/model/test_validate_ort_ops.py reads them from the installed onnxruntime.
ORT_ONNX_DOMAIN_OPS = frozenset({
    ("Affine", 1), ("Affine", 10), ("Crop", 1), ("Crop", 10), ("DisentangledAttention_TRT", 1), ("DynamicSlice", 1),
    ("DynamicSlice", 10), ("EfficientNMS_TRT", 1), ("GRUUnit", 1), ("GRUUnit", 10), ("GivenTensorFill", 1),
    ("GivenTensorFill", 10), ("ImageScaler", 1), ("ImageScaler", 10), ("LayerNormalization", 1),
    ("MeanVarianceNormalization", 1), ("MemcpyFromHost", 1), ("MemcpyToHost", 1), ("MultilevelCropAndResize_TRT", 1),
    ("ParametricSoftplus", 1), ("ParametricSoftplus", 10), ("PyramidROIAlign_TRT", 1), ("Scale", 1), ("Scale", 10),
    ("ScaledTanh", 1), ("ScaledTanh", 10), ("SimplifiedLayerNormalization", 1), ("ThresholdedRelu", 1),
})


class ExternalDataWarning(UserWarning):
    """An external-data file the model names is absent: graphmem's figures do not need it,
    onnxruntime does (it cannot load the model)."""


_PAYLOAD_FIELDS = ("raw_data", "float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")
_MAX_REASON = 300


def check_model(
    proto: onnx.ModelProto, *, path: str, skipped: Mapping[str, tuple[int, int]] | None = None
) -> None:
    """Raise :class:`InvalidModelError` when ``proto`` is not a valid ONNX model (module doc).

    Parameters
    ----------
    proto: the model as :func:`graphmem.model.protoscan.read_stripped` returns it (large payloads
        dropped); not modified.
    path: the file, for messages and for resolving external-data locations.
    skipped: initializer name -> (payload field, byte length) of the payloads that were dropped.
    """
    _check_text(proto.graph, path)
    _check_declared_types(proto.graph, path)
    _check_weights(proto, path, skipped or {})
    _check_initializer_shapes(proto.graph, path)
    proxy = checker_proxy(proto)
    try:
        onnx.checker.check_model(proxy, full_check=True)
    except Exception as exc:  # noqa: BLE001 - ValidationError, InferenceError and C++ errors alike
        if "is deprecated in domain_version" in str(exc):  # onnxruntime loads deprecated ops (GroupNormalization-18)
            return
        if "No Op registered for" in str(exc) and _onnxruntime_registered(proxy):
            try:  # the ops only onnxruntime registers are stand-ins now: check the rest
                onnx.checker.check_model(proxy, full_check=True)
                return
            except Exception as again:  # noqa: BLE001
                exc = again
        raise InvalidModelError(f"{path}: not a valid ONNX model (onnx checker): {_first_line(exc)}") from None


def _onnxruntime_registered(proxy: onnx.ModelProto) -> bool:
    """Make stand-ins (:data:`_PROXY_DOMAIN`) of the proxy's default-domain nodes whose op onnx has
    no schema for at the model's opset but onnxruntime registers in the ONNX domain
    (:data:`ORT_ONNX_DOMAIN_OPS`: SimplifiedLayerNormalization, which onnxruntime-genai writes,
    LayerNormalization below opset 17); whether there were any."""
    opset = next((o.version for o in proxy.opset_import if o.domain == ""), 0)
    extra = ORT_ONNX_DOMAIN_OPS
    changed = False
    for node in all_nodes(proxy.graph.node):
        if node.domain != "" or not any(op == node.op_type and v <= opset for op, v in extra):
            continue
        try:
            onnx.defs.get_schema(node.op_type, opset, "")
        except (onnx.defs.SchemaError, TypeError, OverflowError):  # TypeError: an opset beyond int32
            node.domain = _PROXY_DOMAIN
            changed = True
    if changed and not any(o.domain == _PROXY_DOMAIN for o in proxy.opset_import):
        proxy.opset_import.add(domain=_PROXY_DOMAIN, version=1)
    return changed


def _undefined_tensor(t: onnx.TypeProto) -> bool:
    """Whether ``t`` is, or holds, a tensor type whose element type is 0 (UNDEFINED)."""
    kind = t.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        return getattr(t, kind).elem_type == TensorProto.UNDEFINED
    if kind in ("sequence_type", "optional_type"):
        inner = getattr(t, kind)
        return inner.HasField("elem_type") and _undefined_tensor(inner.elem_type)
    if kind == "map_type":
        return t.map_type.HasField("value_type") and _undefined_tensor(t.map_type.value_type)
    return False


def _check_declared_types(graph: onnx.GraphProto, path: str) -> None:
    """A declared tensor type without an element type: the checker lets it through, onnxruntime
    refuses the file ("Failed to load model with error: Invalid tensor data type 0", from onnx's
    DataTypeUtils when it names the NodeArg's type; measured on graph inputs, outputs and
    value_info, in bodies too, and inside sequence types)."""
    for vi in (*graph.input, *graph.output, *graph.value_info):
        if vi.HasField("type") and _undefined_tensor(vi.type):
            raise InvalidModelError(
                f"{path}: onnxruntime would refuse to load it: '{vi.name}' is declared as a tensor without an "
                f"element type (data type 0)"
            )
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                _check_declared_types(attr.g, path)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    _check_declared_types(g, path)


def _check_text(graph: onnx.GraphProto, path: str) -> None:
    """Names are text: protobuf hands a string field that is not valid UTF-8 over as bytes."""
    def bad(value: object) -> bool:
        return not isinstance(value, str)

    for vi in (*graph.input, *graph.output, *graph.value_info):
        dims = vi.type.tensor_type.shape.dim if vi.type.HasField("tensor_type") else ()
        if bad(vi.name) or any(bad(d.dim_param) for d in dims):
            raise InvalidModelError(
                f"{path}: not a valid ONNX model: a graph input, output or value_info name is not UTF-8 text "
                f"({vi.name!r})"
            )
    for node in graph.node:
        try:  # str.join refuses anything but text, at C speed; the names are looked at one by one only then
            "".join((node.name, node.op_type, node.domain, *node.input, *node.output))
        except TypeError:
            raise InvalidModelError(
                f"{path}: not a valid ONNX model: a name of node {node.name!r} is not UTF-8 text"
            ) from None
    for t in graph.initializer:
        if bad(t.name):
            raise InvalidModelError(
                f"{path}: not a valid ONNX model: an initializer name is not UTF-8 text ({t.name!r})"
            )


def checker_proxy(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``proto`` the checker can judge as onnxruntime would (see module doc)."""
    proxy = onnx.ModelProto()
    proxy.CopyFrom(proto)
    # onnxruntime loads every IR version it is given up to its own (core/graph/model.cc checks that
    # the field is present and not newer; measured: IR 0 to 3 load and run): the checker's rules
    # for IR < 3 (no opset_import) and IR < 4 (initializers must be graph inputs) are not its own
    if proto.HasField("ir_version") and proto.ir_version < 4:
        proxy.ir_version = 4
    graph = proxy.graph
    clear_invalid_dims(graph)
    for opset in proxy.opset_import:
        opset.domain = normalize_domain(opset.domain)
    for node in graph.node:
        node.domain = normalize_domain(node.domain)
    inputs = {vi.name for vi in graph.input}
    kept = []
    for t in graph.initializer:
        if t.data_location == TensorProto.EXTERNAL or not _has_payload(t):
            if t.name not in inputs:
                graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        else:
            kept.append(t)
    if len(kept) != len(graph.initializer):
        del graph.initializer[:]
        graph.initializer.extend(kept)
    for node in graph.node:
        if node.attribute:  # bodies are attributes
            _hoist_body_weights(node, graph, inputs)
    # Constant nodes become initializers when onnxruntime builds the graph (graph.cc): their type
    # is their tensor's, whatever value_info declares (onnxruntime-genai declares [1] constants as
    # scalars, and onnxruntime loads them).
    constants = {
        out
        for node in graph.node
        if node.op_type == "Constant" and is_default_domain(node.domain)
        for out in node.output
    }
    if constants & {vi.name for vi in graph.value_info}:
        kept_info = [vi for vi in graph.value_info if vi.name not in constants]
        del graph.value_info[:]
        graph.value_info.extend(kept_info)
    _unshaped_io(proxy)
    _sort_nodes(graph)
    _referenced_defaults(proxy)
    return proxy


def clear_invalid_dims(graph: onnx.GraphProto) -> None:
    """Clear, in place, the negative dim values and empty dim names of every declared type in
    ``graph`` and its bodies, as onnxruntime does for each NodeArg before it infers shapes
    (``core/graph/node_arg.cc`` RemoveInvalidValues). onnx's C++ inference reads such a dim as a
    number: GatherND takes an ``indices`` last dim of -1 as an index count and reads outside its
    dims array (a segmentation fault, fuzz case 19790). onnxruntime clears only tensor types; here
    the tensors inside sequence, optional and map types are cleared too, so that no C++ inference
    graphmem calls ever sees a negative dim (onnxruntime's own inference of those is not modelled)."""
    for vi in (*graph.input, *graph.output, *graph.value_info):
        if vi.HasField("type"):
            _clear_type_dims(vi.type)
    for node in graph.node:
        for body in node_bodies(node) if node.attribute else ():
            clear_invalid_dims(body)


def _clear_type_dims(t: onnx.TypeProto) -> None:
    kind = t.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        for dim in getattr(t, kind).shape.dim:
            if dim.WhichOneof("value") == "dim_value" and dim.dim_value < 0:
                dim.ClearField("dim_value")
            elif dim.WhichOneof("value") == "dim_param" and not dim.dim_param:
                dim.ClearField("dim_param")
    elif kind in ("sequence_type", "optional_type"):
        inner = getattr(t, kind)
        if inner.HasField("elem_type"):
            _clear_type_dims(inner.elem_type)
    elif kind == "map_type" and t.map_type.HasField("value_type"):
        _clear_type_dims(t.map_type.value_type)


def _referenced_defaults(proxy: onnx.ModelProto) -> None:
    """onnx's checker expands a function body whose attribute refers (``ref_attr_name``) to an
    attribute the node leaves at its default without filling the default in, and fails
    (MeanVarianceNormalization without ``axes``: "One and only one of the attributes 'value',
    'value_*' or 'sparse_value' must be specified for a Constant node"); onnxruntime, whose kernel
    uses the default, loads it. In the proxy such nodes carry their schema's defaults."""
    opsets = {o.domain: o.version for o in proxy.opset_import}
    for node in proxy.graph.node:
        if node.domain not in ("", "ai.onnx.ml") or node.domain not in opsets:
            continue
        defaults = _body_defaults(node.op_type, opsets[node.domain], node.domain)
        if not defaults:
            continue
        have = {a.name for a in node.attribute}
        for ref, default in defaults:
            if ref not in have:
                node.attribute.append(default)
                have.add(ref)


@functools.cache
def _body_defaults(op_type: str, version: int, domain: str) -> tuple[tuple[str, onnx.AttributeProto], ...]:
    """(name, default) of the attributes with a default that the op's function body refers to, in
    the body's order; () for an op without a function body (one schema lookup per op and opset,
    not per node: copying a schema and its body out of onnx costs more than checking the node)."""
    from onnx import defs

    try:
        schema = defs.get_schema(op_type, version, domain)
    except (defs.SchemaError, TypeError, OverflowError):  # TypeError: a version beyond int32
        return ()
    if not schema.has_function:  # type: ignore[attr-defined]  # not in onnx's defs.pyi
        return ()
    out: dict[str, onnx.AttributeProto] = {}
    for body_node in schema.function_body.node:
        for a in body_node.attribute:
            ref = a.ref_attr_name
            formal = schema.attributes.get(ref) if ref else None
            if formal is not None and ref not in out and formal.default_value.name:
                out[ref] = formal.default_value
    return tuple(out.items())


#: Domain of the proxy's stand-in nodes: unknown to ONNX, so the checker and inference skip them.
_PROXY_DOMAIN = "graphmem.proxy"


def _unshaped_io(proxy: onnx.ModelProto) -> None:
    """onnxruntime loads graph inputs and outputs declared without a shape (it infers the
    outputs); the checker demands one. In the proxy, an input without a shape becomes the output
    of a stand-in node (its element type kept in ``value_info``) and an output without a
    type or shape is no longer listed as an output."""
    graph = proxy.graph
    shapeless = [
        vi for vi in graph.input
        if vi.type.HasField("tensor_type") and not vi.type.tensor_type.HasField("shape")
    ]
    if shapeless:
        names = {vi.name for vi in shapeless}
        kept = [vi for vi in graph.input if vi.name not in names]
        del graph.input[:]
        graph.input.extend(kept)
        for vi in shapeless:
            graph.node.insert(0, helper.make_node("Source", [], [vi.name], domain=_PROXY_DOMAIN))
            graph.value_info.append(vi)
        proxy.opset_import.add(domain=_PROXY_DOMAIN, version=1)
    outputs = [vi for vi in graph.output if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")
               or vi.HasField("type") and not vi.type.HasField("tensor_type")]
    if len(outputs) != len(graph.output):
        del graph.output[:]
        graph.output.extend(outputs)


def _hoist_body_weights(node: onnx.NodeProto, main: onnx.GraphProto, inputs: set[str]) -> None:
    """Weights of control-flow bodies kept in external data become inputs of the main graph:
    a body sees outer-scope values by name, so the checker resolves them the same way."""
    for attr in node.attribute:
        for body in (*([attr.g] if attr.HasField("g") else []), *attr.graphs):
            kept = []
            returned = {o.name for o in body.output}
            for t in body.initializer:
                if (t.data_location == TensorProto.EXTERNAL or not _has_payload(t)) and t.name in returned:
                    # a body output that is the weight: an outer-scope input of its own, returned
                    # through an Identity (a body may not return an outer-scope value directly)
                    outer = f"{t.name}/{_PROXY_DOMAIN}"
                    if outer not in inputs:
                        main.input.append(helper.make_tensor_value_info(outer, t.data_type, list(t.dims)))
                        inputs.add(outer)
                    body.node.insert(0, helper.make_node("Identity", [outer], [t.name]))
                elif (t.data_location == TensorProto.EXTERNAL or not _has_payload(t)) and t.name not in inputs:
                    main.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
                    inputs.add(t.name)
                else:
                    kept.append(t)
            if len(kept) != len(body.initializer):
                del body.initializer[:]
                body.initializer.extend(kept)
            for inner in body.node:
                _hoist_body_weights(inner, main, inputs)


def _has_payload(t: onnx.TensorProto) -> bool:
    if t.HasField("raw_data"):
        return True
    return any(len(getattr(t, f)) for f in _PAYLOAD_FIELDS[1:]) or math.prod(t.dims) == 0


def _sort_nodes(graph: onnx.GraphProto) -> None:
    """Put the nodes in a topological order (Kahn, file order among the ready ones); a graph
    with a cycle is left as it is (the graph stage reports the cycle)."""
    produced: dict[str, int] = {}
    for i, node in enumerate(graph.node):
        for out in node.output:
            if out:
                produced.setdefault(out, i)
    if all(produced.get(x, -1) <= i for i, node in enumerate(graph.node) for x in node.input):
        return  # every input written by an earlier node (or by the node itself), or by none
    deps = [
        {produced[x] for x in node.input if x in produced and produced[x] != i} for i, node in enumerate(graph.node)
    ]
    users: dict[int, list[int]] = {}
    for i, ds in enumerate(deps):
        for d in ds:
            users.setdefault(d, []).append(i)
    waiting = [len(ds) for ds in deps]
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users.get(i, ()):
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(graph.node):
        return
    nodes = [graph.node[i] for i in order]
    copies = []
    for n in nodes:
        c = onnx.NodeProto()
        c.CopyFrom(n)
        copies.append(c)
    del graph.node[:]
    graph.node.extend(copies)


def _check_initializer_shapes(graph: onnx.GraphProto, path: str) -> None:
    """An initializer whose graph input declares another rank or dim value: onnxruntime refuses to
    load it ("Shape of initializer ... does not match", graph.cc TypeCheckInputsAndInitializers;
    negative dims are cleared first, node_arg.cc RemoveInvalidValues)."""
    declared = {vi.name: vi.type for vi in graph.input}
    for t in graph.initializer:
        vt = declared.get(t.name)
        if vt is None or vt.WhichOneof("value") != "tensor_type" or not vt.tensor_type.HasField("shape"):
            continue
        dims = vt.tensor_type.shape.dim
        if len(dims) != len(t.dims) or any(
            d.HasField("dim_value") and d.dim_value >= 0 and d.dim_value != n for d, n in zip(dims, t.dims)
        ):
            shown = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in dims]
            raise InvalidModelError(
                f"{path}: not a valid ONNX model: initializer '{t.name}' has dims {list(t.dims)}, "
                f"but its graph input declares {shown}"
            )
    for node in graph.node:
        for body in node_bodies(node) if node.attribute else ():
            _check_initializer_shapes(body, path)


def _check_weights(proto: onnx.ModelProto, path: str, skipped: Mapping[str, tuple[int, int]]) -> None:
    base = Path(path).parent
    sizes: dict[str, int | None] = {}  # external-data file sizes by location
    for node in proto.graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR and any(d < 0 for d in attr.t.dims):
                raise InvalidModelError(
                    f"{path}: not a valid ONNX model: the tensor of {node.op_type} node '{node.name}' "
                    f"has a negative dim {list(attr.t.dims)}"
                )
    for node in all_nodes(proto.graph.node):  # Constant values become initializers; kernels unpack the others
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_location != TensorProto.EXTERNAL:
                _check_payload(attr.t, path, None, 0,
                               where=f"{path}: not a valid ONNX model: the tensor of {node.op_type} node '{node.name}'")
    absent: dict[str, int] = {}  # external-data file -> bytes of weights it should hold
    for t in proto.graph.initializer:
        if any(d < 0 for d in t.dims):
            raise InvalidModelError(
                f"{path}: not a valid ONNX model: initializer '{t.name}' has a negative dim {list(t.dims)}"
            )
        if t.data_location == TensorProto.EXTERNAL:
            location = _check_external(t, path, base, sizes)
            if location is not None:
                absent[location] = absent.get(location, 0) + (_payload_bytes(t) or 0)
            continue
        field, length = skipped.get(t.name, (None, 0))
        _check_payload(t, path, field, length)
    if absent:
        warnings.warn(missing_data_message(path, absent), ExternalDataWarning, stacklevel=2)


def missing_data_message(path: str, absent: Mapping[str, int]) -> str:
    """One line naming the absent external-data file(s) of ``path`` (file -> bytes it should hold)."""
    files = list(absent)
    named = f"'{files[0]}' is" if len(files) == 1 else (
        f"{len(files)} files are (" + ", ".join(f"'{f}'" for f in files[:3]) + (" …" if len(files) > 3 else "") + ")")
    return (f"{path}: external-data {named} missing ({sum(absent.values()):,} bytes of weights): the figures do not "
            "need the weight bytes, but onnxruntime cannot load this model without them")


#: TensorProto payload fields: number -> (name, bytes per stored value; 0 = varint, uncountable).
_FIELDS = {4: ("float_data", 4), 5: ("int32_data", 0), 6: ("string_data", 0), 7: ("int64_data", 0),
           9: ("raw_data", 1), 10: ("double_data", 8), 11: ("uint64_data", 0)}
_VALUES_PER_ELEMENT: dict[int, int] = {TensorProto.COMPLEX64: 2, TensorProto.COMPLEX128: 2}


#: The field onnxruntime reads a tensor's values from when it has no raw_data, by data type
#: (``core/framework/tensorprotoutils.cc`` UnpackTensor: float_data for float, int32_data for the
#: types of 16 bits and fewer, ...); values stored in another field count as none.
_TYPED_FIELD: dict[int, str] = {TensorProto.FLOAT: "float_data", TensorProto.COMPLEX64: "float_data",
                TensorProto.DOUBLE: "double_data", TensorProto.COMPLEX128: "double_data",
                TensorProto.INT64: "int64_data", TensorProto.UINT32: "uint64_data", TensorProto.UINT64: "uint64_data",
                TensorProto.STRING: "string_data"}


def _check_payload(t: onnx.TensorProto, path: str, field: int | None, length: int, *, where: str = "") -> None:
    """The stored data fits the dims (``tensorprotoutils.cc`` UnpackTensor: onnxruntime refuses a
    tensor whose data count differs from its shape, counting the field of its data type only).
    ``field``/``length``: a payload the scanner skipped; otherwise the tensor's own fields are
    counted. ``where``: how messages name the tensor (an initializer by default)."""
    numel = math.prod(t.dims)
    where = where or f"{path}: not a valid ONNX model: initializer '{t.name}'"
    if t.HasField("raw_data") or field == 9:
        stored = "raw_data"
    elif field is not None:
        stored = _FIELDS.get(field, ("", 0))[0]
    else:
        stored = next((name for name, _ in _FIELDS.values() if name != "raw_data" and len(getattr(t, name))), "")
    own = (
        _TYPED_FIELD.get(t.data_type, "int32_data")
        if element_bits(t.data_type) is not None or t.data_type == TensorProto.STRING
        else ""
    )
    if stored and own and stored not in ("raw_data", own):
        raise InvalidModelError(
            f"{where} stores its values in {stored}, but a tensor of data type {t.data_type} is read from {own} "
            f"(0 values for its dims {list(t.dims)})"
        )
    if field is None:
        for number, (name, _) in _FIELDS.items():
            if name == "raw_data" and t.HasField("raw_data"):
                field, length = number, len(t.raw_data)
            elif name != "raw_data" and len(getattr(t, name)):
                field, length = number, len(getattr(t, name)) * (_FIELDS[number][1] or 1)
                if not _FIELDS[number][1]:  # varint fields: their count is exact here
                    count = len(getattr(t, name))
                    _check_count(where, t, count, numel)
                    return
        if field is None:
            return
    name, size = _FIELDS.get(field, ("", 0))
    if name == "raw_data":
        want = _payload_bytes(t)
        if want is not None and want != length:
            raise InvalidModelError(f"{where} holds {length:,} bytes of data but its dims {list(t.dims)} need {want:,}")
    elif size:
        _check_count(where, t, length // size, numel)


def _check_count(where: str, t: onnx.TensorProto, count: int, numel: int) -> None:
    bits = element_bits(t.data_type)
    if bits is None or bits < 8:  # strings, and packed sub-byte types (two per stored value)
        return
    want = numel * _VALUES_PER_ELEMENT.get(t.data_type, 1)
    if count != want:
        raise InvalidModelError(f"{where} holds {count:,} values but its dims {list(t.dims)} need {want:,}")


def _payload_bytes(t: onnx.TensorProto) -> int | None:
    bits = element_bits(t.data_type)
    if bits is None:
        return None
    return (math.prod(t.dims) * bits + 7) // 8


def _check_external(
    t: onnx.TensorProto, path: str, base: Path, sizes: dict[str, int | None] | None = None
) -> str | None:
    """Well-formed external-data entries (``tensorprotoutils.cc``, ``tensor_external_data_info.cc``);
    an absent file is accepted (see module doc): its location is returned, else None. ``sizes``:
    each location's file size (None: no file) as already looked up, filled in here (the weights of
    a model share one or a few files)."""
    info = {e.key: e.value for e in t.external_data}
    location = info.get("location", "")
    where = f"{path}: not a valid ONNX model: initializer '{t.name}'"
    if not location:
        raise InvalidModelError(f"{where} has external data without a location")
    if os.path.isabs(location) or ".." in Path(location).parts:
        raise InvalidModelError(f"{where} has external data outside the model's folder ('{location}')")
    numbers = {}
    for key in ("offset", "length"):
        text = info.get(key)
        if text is None:
            continue
        if not text.strip().isdigit():
            raise InvalidModelError(f"{where} has external data {key} '{text}' (not a non-negative integer)")
        numbers[key] = int(text)
    want = _payload_bytes(t)
    if "length" in numbers and want is not None and numbers["length"] != want:
        raise InvalidModelError(
            f"{where} has {numbers['length']:,} bytes of external data but its dims {list(t.dims)} need {want:,}"
        )
    sizes = {} if sizes is None else sizes
    if location not in sizes:
        file = base / location
        sizes[location] = file.stat().st_size if file.is_file() else None
    size = sizes[location]
    if size is None:
        return location
    end = numbers.get("offset", 0) + (numbers.get("length", want or 0))
    if end > size:
        raise InvalidModelError(f"{where} reads bytes up to {end:,} of '{location}', which has {size:,}")
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line if len(line) <= _MAX_REASON else line[: _MAX_REASON - 1] + "…"
