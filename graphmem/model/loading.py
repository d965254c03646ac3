"""Stage 1 — load an ONNX file without keeping weight bytes in the analysis.

The file is memory-mapped and its protobuf walked by :mod:`graphmem.model.protoscan`, which skips the
payloads of large initializers, so weight bytes are never read, and external-data files are
never opened. Each initializer and Constant node is recorded as a :class:`Weight` (name, dtype,
dims, bytes from metadata); small tensors keep their values, which shape inference needs
(Reshape targets, Slice bounds, …). Constant nodes become
initializers here, as onnxruntime does when it builds its graph (``core/graph/graph.cc``).
"""

from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, numpy_helper

from graphmem.errors import CorruptProtobufError, ModelLoadError, TensorSizeError
from graphmem.model.dtypes import dtype_name, element_bits, tensor_bytes
from graphmem.model.protoscan import read_stripped
from graphmem.model.types import TensorType, type_from_proto
from graphmem.model.validate import check_model
from graphmem.model.walk import node_bodies
from graphmem.optable import is_default_domain, normalize_opsets

__all__ = [
    "Weight",
    "Model",
    "load_model",
    "model_from_proto",
    "model_from_graph",
    "constant_weight",
    "KEEP_VALUE_MAX_ELEMENTS",
    "MAX_TENSOR_BYTES",
    "check_declared_sizes",
]

#: Integer initializers up to this many elements keep their values (shape constants).
KEEP_VALUE_MAX_ELEMENTS = 4096

#: Tensors larger than this (1 EiB) mean absurd dims, not a model.
MAX_TENSOR_BYTES = 1 << 60


@dataclass(frozen=True, slots=True, kw_only=True)
class Weight:
    """One initializer (or Constant node output): what it costs, read from metadata only."""

    name: str
    dtype: int
    dims: tuple[int, ...]
    numel: int
    nbytes: int | None  # None: dtype of unknown size (string)
    external: bool
    from_constant_node: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Model:
    """A loaded model: the graph's structure with weight payloads dropped.

    ``nodes`` excludes Constant nodes (they are in ``weights``); ``node_file_index`` gives each
    kept node's position in the file, ``values`` the kept small integer constants.
    """

    path: str
    ir_version: int
    opsets: dict[str, int]
    graph: onnx.GraphProto  # stripped: no large payloads
    nodes: tuple[onnx.NodeProto, ...]
    weights: dict[str, Weight]
    values: dict[str, np.ndarray]
    inputs: dict[str, TensorType]  # graph inputs that are not initializers
    outputs: dict[str, TensorType]
    value_info: dict[str, TensorType]
    functions: tuple[onnx.FunctionProto, ...]
    node_ids: tuple[int, ...] = ()  # onnxruntime's NodeIndex per node; () = file positions
    # for a graph onnxruntime optimized and wrote: which pass made each node, by its first output (0: the
    # user's file, 1: a fusion, 2: the layout transformer), as ``Graph::AddNode`` numbers nodes in
    # creation order (:func:`graphmem.ort.scratch.prepack_order`); empty = every node the file's
    node_stage: dict[str, int] = field(default_factory=dict)

    @property
    def indexed_nodes(self) -> tuple[tuple[int, onnx.NodeProto], ...]:
        """(NodeIndex, node) pairs: indices stay stable when a rewrite removes nodes."""
        ids = self.node_ids or tuple(range(len(self.nodes)))
        return tuple(zip(ids, self.nodes))

    @property
    def opset(self) -> int:
        """Opset of the default ONNX domain."""
        return self.opsets.get("", 0)  # normalize_opsets files the default domain under ""

    @property
    def symbolic_dims(self) -> tuple[str, ...]:
        """Named dims of the graph inputs, in first-seen order."""
        seen: dict[str, None] = {}
        for t in self.inputs.values():
            for d in t.shape or ():
                if isinstance(d, str):
                    seen.setdefault(d)
        return tuple(seen)


def load_model(path: str | os.PathLike[str], *, validate: bool = True) -> Model:
    """Read ``path`` as ONNX; raise :class:`ModelLoadError` with one line on any bad file.

    With ``validate`` (the default, for every file a user gives) a model onnxruntime would refuse
    to load is refused with its reason (:mod:`graphmem.model.validate`); graphs onnxruntime wrote
    itself are loaded with ``validate=False``. Never writes anything, never opens external-data
    files.
    """
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise ModelLoadError(f"{p}: no such file") from None
    except OSError as exc:
        raise ModelLoadError(f"{p}: cannot read ({exc.strerror or type(exc).__name__})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ModelLoadError(f"{p}: is a directory, not an ONNX file")
    if not stat.S_ISREG(st.st_mode):  # a FIFO or a device would block or never end
        raise ModelLoadError(f"{p}: not a regular file, not an ONNX model")
    if st.st_size == 0:
        raise ModelLoadError(f"{p}: empty file, not an ONNX model")
    skipped: dict[bytes, tuple[int, int]] = {}
    try:
        proto = read_stripped(p, KEEP_VALUE_MAX_ELEMENTS, skipped=skipped)
    except (CorruptProtobufError, DecodeError, ValueError, OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelLoadError(f"{p}: not a readable ONNX model (truncated or corrupt: {reason})") from None
    _check_is_model(proto, str(p))
    check_declared_sizes(proto.graph)  # before onnx's checker, which can run for minutes on them
    if validate:
        check_model(proto, path=str(p), skipped={k.decode("utf-8", "replace"): v for k, v in skipped.items()})
    return model_from_proto(proto, path=str(p))


def check_declared_sizes(graph: onnx.GraphProto) -> None:
    """Raise :class:`TensorSizeError`, naming the first, for a tensor the file declares (graph
    input, output, value_info, initializer or Constant, in a body too) larger than
    :data:`MAX_TENSOR_BYTES`: its dims are absurd. onnx's checker and shape inference are never
    shown such a file (an Expand whose ``shape`` input declares 2**62 elements kept the checker
    busy for minutes, growing until the machine killed it). A symbolic dim counts as 1."""
    declared = [("graph input", vi.name, vi.type.tensor_type) for vi in graph.input]
    declared += [("graph output", vi.name, vi.type.tensor_type) for vi in graph.output]
    declared += [("value_info", vi.name, vi.type.tensor_type) for vi in graph.value_info]
    for where, name, t in declared:
        if t.HasField("shape"):
            known = [d.dim_value for d in t.shape.dim if d.HasField("dim_value")]
            _check_size(where, name, t.elem_type, known)
    for init in graph.initializer:
        _check_size("initializer", init.name, init.data_type, list(init.dims))
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                name = next((o for o in node.output if o), attr.t.name)  # a Constant's value is its output
                _check_size(f"{node.op_type} node '{node.name}'", name, attr.t.data_type, list(attr.t.dims))
        for body in node_bodies(node):
            check_declared_sizes(body)


def _check_size(where: str, name: str, dtype: int, dims: list[int]) -> None:
    numel = math.prod(max(d, 0) for d in dims)
    size = tensor_bytes(dtype, numel) if element_bits(dtype) is not None else numel  # strings: 1 B each at least
    if size is not None and size > MAX_TENSOR_BYTES:
        raise TensorSizeError(
            f"tensor '{name}' ({where}, {dtype_name(dtype)} {dims}) would take {size:,} bytes (more than 2**60): "
            "its dims are absurd"
        )


def _check_is_model(proto: onnx.ModelProto, path: str) -> None:
    if not proto.HasField("graph") or (proto.ir_version == 0 and not proto.opset_import):
        raise ModelLoadError(f"{path}: not an ONNX model (no graph or no ir_version)")
    if len(proto.graph.node) == 0 and len(proto.graph.output) == 0:
        raise ModelLoadError(f"{path}: not an ONNX model (the graph has no nodes and no outputs)")


def model_from_proto(proto: onnx.ModelProto, *, path: str = "<memory>") -> Model:
    """Build a :class:`Model` from a parsed proto, dropping its weight payloads in place."""
    _check_is_model(proto, path)
    graph = proto.graph
    _drop_references(graph)
    opsets = normalize_opsets({o.domain or "": o.version for o in proto.opset_import})
    return model_from_graph(
        graph, path=path, ir_version=proto.ir_version, opsets=opsets, functions=tuple(proto.functions)
    )


def model_from_graph(
    graph: onnx.GraphProto,
    *,
    path: str,
    ir_version: int,
    opsets: dict[str, int],
    functions: tuple[onnx.FunctionProto, ...] = (),
    inputs: dict[str, TensorType] | None = None,
) -> Model:
    """A :class:`Model` of one graph (the main graph or a subgraph), weight payloads dropped in
    place; ``inputs`` replaces the types of the graph's declared inputs (a subgraph's feeds and
    the outer-scope values it reads)."""
    weights: dict[str, Weight] = {}
    values: dict[str, np.ndarray] = {}
    for init in graph.initializer:
        weights[init.name] = _weight(init, from_constant=False)
        _keep_small_value(init, values)
        _strip(init)
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        weight = constant_weight(node, path, values)
        if weight is not None:
            weights[weight.name] = weight
            _strip_constant(node)
            continue
        nodes.append(node)
    init_names = set(weights)
    if inputs is None:
        typed = {vi.name: type_from_proto(vi.type) for vi in graph.input if vi.name not in init_names}
    else:
        typed = {name: t for name, t in inputs.items() if name not in init_names}
    outputs = {vi.name: type_from_proto(vi.type) for vi in graph.output}
    value_info = {vi.name: type_from_proto(vi.type) for vi in graph.value_info}
    return Model(
        path=path,
        ir_version=ir_version,
        opsets=opsets,
        graph=graph,
        nodes=tuple(nodes),
        weights=weights,
        values=values,
        inputs=typed,
        outputs=outputs,
        value_info=value_info,
        functions=functions,
    )


def constant_weight(node: onnx.NodeProto, path: str, values: dict[str, np.ndarray]) -> Weight | None:
    """The weight a default-domain Constant node becomes (onnxruntime makes it an initializer
    when it builds the graph), its small value kept in ``values``; None for any other node."""
    if node.op_type != "Constant" or not is_default_domain(node.domain):
        return None
    tensor = _constant_tensor(node, path)
    if tensor is None:
        return None
    _keep_small_value(tensor, values)
    return _weight(tensor, from_constant=True)


def _drop_references(graph: onnx.GraphProto) -> None:
    """A node attribute outside a function that also names a function attribute
    (``ref_attr_name``) has nothing to refer to: onnx's checker accepts it and onnxruntime uses
    the attribute's own value (measured with onnxruntime 1.31), so graphmem reads that value too."""
    for node in graph.node:
        for attr in node.attribute:
            if attr.ref_attr_name:
                attr.ClearField("ref_attr_name")
            for sub in (*([attr.g] if attr.HasField("g") else []), *attr.graphs):
                _drop_references(sub)


def _weight(t: TensorProto, *, from_constant: bool) -> Weight:
    dims = tuple(int(d) for d in t.dims)
    numel = math.prod(dims)
    external = t.data_location == TensorProto.EXTERNAL
    return Weight(
        name=t.name,
        dtype=t.data_type,
        dims=dims,
        numel=numel,
        nbytes=tensor_bytes(t.data_type, numel),
        external=external,
        from_constant_node=from_constant,
    )


def _keep_small_value(t: TensorProto, values: dict[str, np.ndarray]) -> None:
    """Keep the value of a small, inline, non-string tensor: shape inference may need it."""
    if t.data_location == TensorProto.EXTERNAL or t.data_type == TensorProto.STRING:
        return
    if math.prod(t.dims) > KEEP_VALUE_MAX_ELEMENTS:
        return
    try:
        values[t.name] = numpy_helper.to_array(t)
    except (ValueError, TypeError):  # a malformed payload: the tensor stays unknown
        return


_PAYLOAD_FIELDS = (
    "raw_data",
    "float_data",
    "int32_data",
    "int64_data",
    "double_data",
    "uint64_data",
)


def _strip(t: TensorProto) -> None:
    """Drop a large payload; shape inference only needs dims and dtype of a weight."""
    if math.prod(t.dims) <= KEEP_VALUE_MAX_ELEMENTS:
        return
    for name in _PAYLOAD_FIELDS:
        t.ClearField(name)


def _constant_tensor(node: onnx.NodeProto, path: str) -> TensorProto | None:
    """The tensor a Constant node produces (``value`` or one of the ``value_*`` forms)."""
    for attr in node.attribute:
        if attr.name == "value" and attr.type == onnx.AttributeProto.TENSOR:
            t = TensorProto()
            t.CopyFrom(attr.t)
            t.name = node.output[0]
            return t
        if attr.name in ("value_float", "value_int", "value_floats", "value_ints"):
            arr = np.asarray(onnx.helper.get_attribute_value(attr))
            arr = arr.astype(np.float32 if "float" in attr.name else np.int64)
            return numpy_helper.from_array(arr, node.output[0])
    return None  # sparse or string forms: left as a node, analysed like any other


def _strip_constant(node: onnx.NodeProto) -> None:
    for attr in node.attribute:
        if attr.name == "value" and attr.type == onnx.AttributeProto.TENSOR:
            _strip(attr.t)


