"""Random but valid input feeds for a measurement run.

Memory depends on shapes, not values, but values must still be *legal*:
token ids fed to an embedding Gather must stay inside the table, or the run
fails before anything is measured.  Hence integer ranges are derived from the
consumers of each input.
"""

from __future__ import annotations

import math
import os
import resource
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper

from graphmem.errors import MeasureError, UnboundDimError, UsageError
from graphmem.optable import is_default_domain

# Range for integer inputs whose consumers give no bound (masks, flags, ...).
DEFAULT_INT_RANGE = (0, 2)

#: One onnxruntime feed: a tensor, a sequence input's tensors, or None (an optional without a value).
Feed = np.ndarray | list[np.ndarray] | None


def make_feeds(
    model: onnx.ModelProto,
    dims: Mapping[str, int],
    *,
    seed: int = 0,
    int_range: tuple[int, int] | None = None,
    shapes: Mapping[str, Sequence[Any] | None] | None = None,  # a shape, a sequence's element shapes, none
    values: Mapping[str, Sequence[int | float]] | None = None,
) -> dict[str, Feed]:
    """Random arrays for every graph input that is not an initializer.

    Symbolic dimensions are resolved through ``dims``; an unbound one raises
    MeasureError naming it.  Floats are standard normal cast to the input's
    dtype, bools uniform, integers uniform in ``int_range`` (half-open) or,
    when None, in a range safe for the input's consumers (see ``safe_int_range``), except
    integer inputs named ``attention_mask``, all ones (a full sequence).
    ``shapes`` give inputs' whole shapes (``--shape``) and ``values`` their values (``--value``,
    laid out in the input's shape); a sequence input's feed is a list of random arrays of the
    element shapes ``shapes`` gives it (``--shape s=[2x3,4x3]``); an optional input's is what it
    holds, or None for ``--shape o=none`` (what onnxruntime's Python API takes for no value).
    """
    if int_range is not None:
        _check_range(int_range)
    graph = model.graph
    initializers = {init.name for init in graph.initializer}
    rng = np.random.default_rng(check_seed(seed))
    wanted = []
    sequences = []
    absent: list[str] = []
    for value in graph.input:
        if value.name in initializers:
            continue
        if value.type.WhichOneof("value") == "optional_type":
            held = _optional_held(value, shapes)
            if held is None:
                absent.append(value.name)  # o=none: onnxruntime takes None for an optional without a value
                continue
            value = held
        if _is_tensor_sequence(value):
            sequences.append((value, _sequence_elements(value, shapes)))
            continue
        dtype = input_dtype(value)
        given = shapes.get(value.name) if shapes else None
        shape = tuple(given) if given is not None else input_shape(value, dims)
        wanted.append((value, dtype, shape))
    fresh = [(dtype, shape) for value, dtype, shape in wanted if not (values and value.name in values)]
    fresh += [(dtype, shape) for _, (dtype, elements) in sequences for shape in elements]
    check_allocation(sum(generation_bytes(dtype, shape) for dtype, shape in fresh), "random inputs")
    feeds: dict[str, Feed] = dict.fromkeys(absent)
    for value, (dtype, elements) in sequences:  # a list of arrays: onnxruntime's feed for a sequence
        feeds[value.name] = [random_array(rng, dtype, shape, DEFAULT_INT_RANGE) for shape in elements]
    for value, dtype, shape in wanted:
        if values and value.name in values:
            feeds[value.name] = np.asarray(values[value.name], dtype=dtype).reshape(shape)
            continue
        bounds = int_range if int_range is not None else safe_int_range(graph, value.name, dims)
        feeds[value.name] = random_array(rng, dtype, shape, bounds)
        if int_range is None and _is_attention_mask(value.name, dtype):
            # A full sequence, as decoders run: GroupQueryAttention sizes its scratch by the
            # longest row of the mask (seqlens_k), which a prediction takes to be the whole length.
            # Drawn first all the same, so the other inputs get the values they always had.
            feeds[value.name] = np.ones(shape, dtype=dtype)
    return feeds


def _is_attention_mask(name: str, dtype: np.dtype) -> bool:
    return "attention_mask" in name.lower() and np.issubdtype(dtype, np.integer)


def check_seed(seed: int) -> int:
    """A seed numpy accepts: an integer >= 0 (UsageError otherwise)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise UsageError(f"--seed {seed}: a seed must be an integer >= 0")
    return int(seed)


def generation_bytes(dtype: np.dtype, shape: tuple[int, ...]) -> int:
    """Bytes that making one random array takes at its largest (floats are drawn as float64,
    complex as two of them, then cast)."""
    n = math.prod(shape)
    return n * (max(dtype.itemsize, 8) + dtype.itemsize) * (2 if dtype.kind == "c" else 1)


def memory_limit() -> int:
    """Bytes this process may use: the machine's memory, or the address-space limit if lower."""
    limit = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        limit = min(limit, soft)
    return limit


def check_allocation(nbytes: int, what: str) -> None:
    """Refuse, before allocating, to make more than half of :func:`memory_limit` of ``what``
    (the session that measures needs the rest)."""
    limit = memory_limit() // 2
    if nbytes > limit:
        raise MeasureError(
            f"verify would allocate {nbytes:,} bytes of {what}, more than half of the "
            f"{2 * limit:,} bytes this process may use: bind smaller dims"
        )


def _is_tensor_sequence(value: onnx.ValueInfoProto) -> bool:
    t = value.type
    return t.WhichOneof("value") == "sequence_type" and t.sequence_type.elem_type.WhichOneof("value") == "tensor_type"


def _sequence_elements(
    value: onnx.ValueInfoProto, shapes: Mapping[str, Sequence[Any] | None] | None
) -> tuple[np.dtype, tuple[tuple[int, ...], ...]]:
    """A sequence input's element dtype and the element shapes ``--shape NAME=[…]`` gives."""
    given = shapes.get(value.name) if shapes else None
    if given is None:
        raise MeasureError(f"input {value.name!r} is a sequence of tensors: give its elements' shapes, "
                           f"e.g. --shape {value.name}=[2x3,4x3]; cannot make a feed")
    elem = value.type.sequence_type.elem_type.tensor_type.elem_type
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem))
    except (KeyError, TypeError, ValueError) as exc:
        raise MeasureError(f"input {value.name!r} has unsupported element type {elem}") from exc
    return dtype, tuple(tuple(int(d) for d in e) for e in given)


def _optional_held(
    value: onnx.ValueInfoProto, shapes: Mapping[str, Sequence[Any] | None] | None
) -> onnx.ValueInfoProto | None:
    """An optional input as the value it holds (a tensor or a sequence of tensors, fed as one),
    or None for ``--shape NAME=none``; MeasureError without a binding."""
    if not shapes or value.name not in shapes:
        raise MeasureError(f"input {value.name!r} is optional: give what it holds (--shape {value.name}=D0xD1, "
                           f"or [D0xD1,...] for a sequence) or --shape {value.name}=none; cannot make a feed")
    if shapes[value.name] is None:
        return None
    held = onnx.ValueInfoProto()
    held.name = value.name
    held.type.CopyFrom(value.type.optional_type.elem_type)
    return held


def input_dtype(value: onnx.ValueInfoProto) -> np.dtype:
    """The numpy dtype of a tensor graph input; MeasureError for non-tensors."""
    if value.type.WhichOneof("value") != "tensor_type":
        raise MeasureError(
            f"input {value.name!r} is not a tensor ({value.type.WhichOneof('value')}); cannot make a feed"
        )
    elem_type = value.type.tensor_type.elem_type
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError) as exc:
        raise MeasureError(f"input {value.name!r} has unsupported element type {elem_type}") from exc


def input_shape(value: onnx.ValueInfoProto, dims: Mapping[str, int]) -> tuple[int, ...]:
    """The concrete shape of a tensor graph input, symbolic dims taken from ``dims``."""
    tensor_type = value.type.tensor_type
    if not tensor_type.HasField("shape"):
        raise MeasureError(f"input {value.name!r} has no shape (unknown rank); cannot make a feed")
    shape = []
    for axis, dim in enumerate(tensor_type.shape.dim):
        shape.append(_dim_size(dim, dims, f"input {value.name!r} axis {axis}"))
    return tuple(shape)


def safe_int_range(graph: onnx.GraphProto, name: str, dims: Mapping[str, int]) -> tuple[int, int]:
    """A half-open integer range every consumer of ``name`` accepts.

    When ``name`` is the indices input of one or more Gathers, the range is
    [0, smallest gathered extent); an extent that cannot be determined
    statically gives [0, 1) since index 0 is always legal.  Otherwise
    [0, 2), which suits masks, flags and token type ids.
    """
    extents = []
    for node in graph.node:
        if node.op_type != "Gather" or not is_default_domain(node.domain):
            continue
        if len(node.input) < 2 or node.input[1] != name:
            continue
        extents.append(_gather_extent(graph, node, dims))
    if not extents:
        return DEFAULT_INT_RANGE
    known = [extent for extent in extents if extent is not None]
    if len(known) < len(extents):
        return (0, 1)
    return (0, max(1, min(known)))


def random_array(
    rng: np.random.Generator, dtype: np.dtype, shape: tuple[int, ...], int_range: tuple[int, int]
) -> np.ndarray:
    """One random array of ``dtype`` and ``shape``; integers drawn from ``int_range``."""
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) < 0.5, dtype=np.bool_)
    if np.issubdtype(dtype, np.integer):
        low, high = int_range
        return np.asarray(rng.integers(low, high, size=shape), dtype=dtype)
    if dtype.kind == "c":
        return np.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind == "f" or dtype.kind == "V":  # "V": ml_dtypes types such as bfloat16 / float8
        return np.asarray(rng.standard_normal(shape)).astype(dtype)
    raise MeasureError(f"cannot make random values of dtype {dtype}")


def _gather_extent(graph: onnx.GraphProto, node: onnx.NodeProto, dims: Mapping[str, int]) -> int | None:
    """Size of the gathered axis of ``node``'s data input, or None when unknown."""
    shape = _static_shape(graph, node.input[0], dims)
    if shape is None:
        return None
    axis = next((attr.i for attr in node.attribute if attr.name == "axis"), 0)
    if axis < 0:
        axis += len(shape)
    if not 0 <= axis < len(shape):
        return None
    return shape[axis]


def _static_shape(graph: onnx.GraphProto, name: str, dims: Mapping[str, int]) -> tuple[int, ...] | None:
    """The shape of tensor ``name`` if the graph states it: initializer, Constant, or typed value."""
    for init in graph.initializer:
        if init.name == name:
            return tuple(init.dims)
    for node in graph.node:
        if node.op_type == "Constant" and name in node.output:
            for attr in node.attribute:
                if attr.name == "value":
                    return tuple(attr.t.dims)
            return None
    for value in [*graph.input, *graph.value_info]:
        if value.name == name and value.type.tensor_type.HasField("shape"):
            try:
                return tuple(_dim_size(dim, dims, name) for dim in value.type.tensor_type.shape.dim)
            except MeasureError:
                return None
    return None


def _dim_size(dim: onnx.TensorShapeProto.Dimension, dims: Mapping[str, int], where: str) -> int:
    """Concrete size of one dimension: its value, or its symbol looked up in ``dims``."""
    kind = dim.WhichOneof("value")
    if kind == "dim_value":
        if dim.dim_value < 0:
            raise UnboundDimError(
                f"{where}: the file gives the dim as {dim.dim_value}; set the input's shape with --shape"
            )
        return int(dim.dim_value)
    if kind == "dim_param":
        if dim.dim_param not in dims:
            raise UnboundDimError(f"{where}: symbolic dim {dim.dim_param!r} is not bound; pass it in dims")
        size = dims[dim.dim_param]
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise UsageError(f"{where}: dim {dim.dim_param!r} must be an int >= 0, got {size!r}")
        return int(size)
    raise MeasureError(f"{where}: dimension has neither a size nor a name; cannot make a feed")


def _check_range(int_range: tuple[int, int]) -> None:
    """Reject an empty or malformed half-open integer range."""
    if len(int_range) != 2 or int_range[0] >= int_range[1]:
        raise UsageError(f"int_range must be (low, high) with low < high, got {int_range!r}")
    if int_range[0] < -(1 << 63) or int_range[1] > (1 << 63):
        raise UsageError(f"int_range {int_range!r}: beyond the int64 range")
