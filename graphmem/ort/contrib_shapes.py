"""Shape rules for ops that onnx has no schema for: onnxruntime's contrib ops.

onnxruntime's optimizers (``--graph-opt basic|extended|all``) rewrite graphs into ops of the
``com.microsoft`` and ``com.microsoft.nchwc`` domains (and a few onnxruntime-only ops it registers
in the ONNX domain). onnxruntime knows their shapes from its own schemas; these rules reproduce
them, citing the schema each follows (paths in microsoft/onnxruntime):

* ``core/graph/contrib_ops/nchwc_schema_defs.cc``: ReorderInput, ReorderOutput, Conv, MaxPool,
  AveragePool, GlobalMaxPool, GlobalAveragePool, Upsample of ``com.microsoft.nchwc``;
* ``core/graph/contrib_ops/contrib_defs.cc``: FusedConv, FusedGemm, FusedMatMul, BiasGelu,
  QuickGelu, BiasSoftmax, Gelu;
* ``core/graph/contrib_ops/bert_defs.cc``: FastGelu, SkipLayerNormalization, BiasAdd;
* ``core/graph/contrib_ops/shape_inference_functions.cc``: Attention;
* ``core/graph/contrib_ops/onnx_deprecated_operators.cc`` and ``contrib_defs.cc``:
  LayerNormalization (ONNX domain before opset 17), SimplifiedLayerNormalization.

Where onnxruntime's schema calls an ONNX inference function (``convPoolShapeInference``,
``globalPoolTypeShapeInference``, ``matmulShapeInference``), the rule calls the same function
through onnx's schema of the standard op, so symbolic dims propagate exactly as onnx propagates
them. Every rule serves both shape views: it sees whatever dims the view knows (symbols in the
static view, numbers once dims are bound) and never invents a symbol.

NCHWc channel padding: a blocked tensor's channel dim is rounded up to MLAS's NCHWc block size
(``MlasNchwcGetBlockSize``: 8 with SSE/AVX/AVX2, 16 with AVX-512F; ``core/mlas/lib/platform.cpp``),
so ``level all`` files are specific to the machine that made them. The padding is in the file's
weights: an NCHWc Conv's filter has ``roundup(M, block)`` output channels (a depthwise one, also
``group`` = padded channels), so Conv and pool outputs follow from the file. Only ReorderInput
pads by itself (onnxruntime 1.31 blocks a depthwise Conv of, say, 12 channels by padding them to
the block), and for it the block size comes from the file: :func:`nchwc_block_sizes` keeps the
MLAS blocks the file is consistent with (filters' output channels are multiples of the block; a
ReorderOutput after a Conv drops ``roundup(channels, block)`` to ``channels``; a non-grouped Conv
reading a ReorderInput has a block-multiple of input channels). The rule rounds the channel
count up under each block left and keeps the answer if they agree (as they do whenever 16
divides the count, or the file pins the block); when they do not, a non-grouped NCHWc Conv that
reads the ReorderInput's output tells its padded count, its filter's input channels
(:func:`reorder_input_channels`; the transformer pads the filter to the reordered input,
``nchwc_transformer.cc`` TransformConv); else the dim is left unknown rather than guessed.

A rule takes the node, its input types (None for an omitted input) and the known small values,
and returns the output types (or None when it cannot tell).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import onnx
from onnx import defs, helper

from graphmem.model.types import Dim, Shape, TensorType, type_from_proto, type_to_proto
from graphmem.optable import MS_DOMAIN, NCHWC_DOMAIN, OpTable

__all__ = [
    "RULES",
    "NCHWC_DOMAIN",
    "MS_DOMAIN",
    "MLAS_NCHWC_BLOCKS",
    "infer_contrib",
    "nchwc_block_sizes",
    "reorder_input_channels",
]

#: ``rule(node, input types, known values, NCHWc block sizes)`` → output types (None where a
#: shape is unknown), or None when it cannot tell.
Rule = Callable[
    [onnx.NodeProto, Sequence[TensorType | None], Mapping[str, np.ndarray], Sequence[int]],
    "list[TensorType | None] | None",
]

#: NCHWc block sizes MLAS uses on x86-64 (``MlasNchwcGetBlockSize``), largest first.
MLAS_NCHWC_BLOCKS = (16, 8)


def infer_contrib(
    node: onnx.NodeProto,
    types: Mapping[str, TensorType],
    values: Mapping[str, np.ndarray],
    *,
    block_sizes: Sequence[int] = MLAS_NCHWC_BLOCKS,
    padded_channels: Mapping[str, int] | None = None,
) -> dict[str, TensorType] | None:
    """Output types of a contrib op by its rule; None when there is no rule or it cannot tell.

    ``block_sizes``: the NCHWc block sizes the file is consistent with (:func:`nchwc_block_sizes`),
    and ``padded_channels`` the padded channel counts its Convs read (:func:`reorder_input_channels`),
    both used only by ReorderInput.
    """
    rule = RULES.of(node)
    if rule is None:
        return None
    outs = rule(node, _inputs(node, types), values, block_sizes)
    if outs is None:
        return None
    if node.domain == NCHWC_DOMAIN and node.op_type == "ReorderInput" and outs[0] is not None:
        outs = [_padded_by_reader(node, _inputs(node, types)[0], outs[0], block_sizes, padded_channels or {})]
    return {name: t for name, t in zip(node.output, outs) if name and t is not None}


def nchwc_block_sizes(nodes: Sequence[onnx.NodeProto], weight_dims: Mapping[str, Sequence[int]]) -> tuple[int, ...]:
    """The MLAS NCHWc block sizes a saved graph is consistent with, from its padded filters
    (module doc), largest first; all of them when nothing in the file constrains the block.

    >>> conv = helper.make_node("Conv", ["x", "w"], ["y"], domain=NCHWC_DOMAIN)
    >>> out = helper.make_node("ReorderOutput", ["y"], ["z"], domain=NCHWC_DOMAIN, channels=24)
    >>> nchwc_block_sizes([conv, out], {"w": (24, 16, 3, 3)}), nchwc_block_sizes([conv, out], {"w": (32, 16, 3, 3)})
    ((8,), (16,))
    """
    convs = [
        n for n in nodes
        if n.domain == NCHWC_DOMAIN and n.op_type == "Conv" and len(n.input) > 1 and n.input[1] in weight_dims
    ]
    conv_of = {n.output[0]: n for n in convs if n.output}
    reordered = {n.output[0] for n in nodes if n.domain == NCHWC_DOMAIN and n.op_type == "ReorderInput"}
    outs = [n for n in nodes if n.domain == NCHWC_DOMAIN and n.op_type == "ReorderOutput" and n.input[0] in conv_of]

    def consistent(block: int) -> bool:
        for n in convs:
            w = weight_dims[n.input[1]]
            if w[0] % block or (_attr(n, "group", 1) == 1 and n.input[0] in reordered and w[1] % block):
                return False
        filters = (weight_dims[conv_of[n.input[0]].input[1]][0] for n in outs)
        return all(_round_up(_attr(n, "channels", 0), block) == m for n, m in zip(outs, filters))

    return tuple(b for b in MLAS_NCHWC_BLOCKS if consistent(b))


def reorder_input_channels(nodes: Sequence[onnx.NodeProto], weight_dims: Mapping[str, Sequence[int]]) -> dict[str, int]:
    """ReorderInput output -> its padded channel count, read from a non-grouped NCHWc Conv that
    consumes it: the filter's input channels (``nchwc_transformer.cc`` TransformConv reorders the
    filter to ``roundup(C, block)`` input channels, the reordered input's channel dim).

    >>> r = helper.make_node("ReorderInput", ["x"], ["xr"], domain=NCHWC_DOMAIN, channels_last=1)
    >>> conv = helper.make_node("Conv", ["xr", "w"], ["y"], domain=NCHWC_DOMAIN)
    >>> reorder_input_channels([r, conv], {"w": (480, 128, 1, 1)})
    {'xr': 128}
    """
    reordered = {n.output[0] for n in nodes if n.domain == NCHWC_DOMAIN and n.op_type == "ReorderInput" and n.output}
    out: dict[str, int] = {}
    for n in nodes:
        if n.domain == NCHWC_DOMAIN and n.op_type == "Conv" and len(n.input) > 1 and _attr(n, "group", 1) == 1:
            if n.input[0] in reordered and n.input[1] in weight_dims and len(weight_dims[n.input[1]]) > 1:
                out[n.input[0]] = int(weight_dims[n.input[1]][1])
    return out


def _padded_by_reader(node, x, out, block_sizes, padded_channels):
    """ReorderInput's output with its channel dim from the Conv reading it, when the file's
    blocks leave it open and the Conv's count is one of theirs (else ``out`` unchanged)."""
    shape = _shape(out)
    if shape is None or shape[1] is not None or node.output[0] not in padded_channels:
        return out
    xs = _shape(x)
    if xs is None:  # the output's shape is inferred from x's: not reached
        return out
    c = xs[-1] if _attr(node, "channels_last", 0) else xs[1]
    count = padded_channels[node.output[0]]
    if not isinstance(c, int) or count not in {_round_up(c, b) for b in block_sizes}:
        return out
    return TensorType(dtype=out.dtype, shape=(shape[0], count, *shape[2:]))


# --- helpers ---------------------------------------------------------------------------------


def _inputs(node: onnx.NodeProto, types: Mapping[str, TensorType]) -> list[TensorType | None]:
    return [types.get(x) if x else None for x in node.input]


def _attr(node: onnx.NodeProto, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _shape(t: TensorType | None) -> Shape | None:
    return None if t is None or t.kind != "tensor" else t.shape


def _dtype(ins: Sequence[TensorType | None], i: int) -> int:
    t = ins[i] if i < len(ins) else None
    return t.dtype if t is not None else 0


def _round_up(n: int, block: int) -> int:
    return (n + block - 1) // block * block


# --- factories -------------------------------------------------------------------------------


def _like_input(i: int = 0, outputs: Sequence[int] = (0,), n_outputs: int | None = None) -> Rule:
    """Outputs in ``outputs`` take input ``i``'s type and shape (``propagateShapeAndTypeFromFirstInput``);
    other outputs (up to ``n_outputs``) get the type only."""

    def rule(node, ins, values, block_sizes):
        if i >= len(ins) or ins[i] is None:
            return None
        src = ins[i]
        total = len(node.output) if n_outputs is None else n_outputs
        return [src if k in outputs else None for k in range(total)]

    return rule


def _onnx_op(
    op_type: str,
    version: int,
    *,
    n_inputs: int | None = None,
    keep_attrs: frozenset[str] | None = None,
    reshape: Callable[[onnx.NodeProto, list[TensorType | None]], list[TensorType | None] | None] | None = None,
    pick: tuple[int, ...] | None = None,
    dtype_from: int | None = None,
    nhwc: bool = False,
) -> Rule:
    """Delegate to onnx's inference of the standard op ``op_type``-``version``: onnxruntime's schema
    calls the same ONNX inference function (``convPoolShapeInference``, ``matmulShapeInference``, …).

    ``n_inputs`` truncates the inputs (fused extras such as Conv's Sum), ``keep_attrs`` drops
    attributes the standard op does not have (``activation`` …), ``reshape`` rewrites the input
    types first (FusedMatMul's transposes), ``pick`` passes only those inputs (QLinear ops' data
    operands among their scales and zero points), ``dtype_from`` takes the output's element type
    from that input (QLinear ops: the output zero point), ``nhwc`` (with a ``channels_last``
    attribute set) transposes input 0 from channels-last and the output back
    (``convPoolShapeInferenceNhwc``, nhwc_schema_defs.cc)."""

    def rule(node, ins, values, block_sizes):
        schema = _standard_schema(op_type, version)  # looked up when a node needs it, not at import
        if pick is not None:
            names = [node.input[i] if i < len(node.input) else "" for i in pick]
            in_types = [ins[i] if i < len(ins) else None for i in pick]
        else:
            names = list(node.input[:n_inputs] if n_inputs is not None else node.input)
            in_types = list(ins[: len(names)])
        quantized = pick is not None or nhwc  # 8-bit operands: infer the shape as float, type after
        dtype0 = in_types[0].dtype if in_types and in_types[0] is not None else 0
        if quantized:
            in_types = [
                TensorType(dtype=onnx.TensorProto.FLOAT, shape=t.shape) if t is not None else None for t in in_types
            ]
        last = nhwc and _attr(node, "channels_last", 1 if op_type == "MaxPool" else 0) != 0
        if last:
            t0 = in_types[0]
            x = _shape(t0)
            if t0 is None or x is None or len(x) < 2:
                return None
            in_types[0] = TensorType(dtype=t0.dtype, shape=(x[0], x[-1], *x[1:-1]))
        if reshape is not None:
            reshaped = reshape(node, in_types)
            if reshaped is None:
                return None
            in_types = reshaped
        attrs = [a for a in node.attribute if keep_attrs is None or a.name in keep_attrs]
        # Positional names: one tensor may feed two inputs that ``reshape`` sees differently.
        slots = [f"in{k}" if n else "" for k, n in enumerate(names)]
        std = helper.make_node(op_type, slots, list(node.output[:1]), name=node.name)
        std.attribute.extend(attrs)
        type_bytes = {
            n: type_to_proto(t).SerializeToString() for n, t in zip(slots, in_types) if n and t is not None
        }
        try:
            out = schema._infer_node_outputs(  # type: ignore[call-arg]  # opsets, IR: not in onnx's .pyi; the wrapper re-serializes
                std.SerializeToString(), type_bytes, {}, {}, {"": version}, 8
            )
        except Exception:  # noqa: BLE001 - onnx raises InferenceError, ValidationError, RuntimeError
            return None
        t = out.get(node.output[0]) if node.output else None
        if t is None:
            return [None]
        result = type_from_proto(onnx.TypeProto.FromString(t))
        if last and result.shape is not None and len(result.shape) >= 2:
            y = result.shape
            result = TensorType(dtype=result.dtype, shape=(y[0], *y[2:], y[1]))
        if quantized:
            dtype = _dtype(ins, dtype_from) if dtype_from is not None else dtype0
            result = TensorType(dtype=dtype, shape=result.shape)
        return [result]

    return rule


@functools.cache
def _standard_schema(op_type: str, version: int) -> defs.OpSchema:
    return defs.get_schema(op_type, version, "")


# --- com.microsoft.nchwc ---------------------------------------------------------------------


def _reorder_input(node, ins, values, block_sizes):
    """[N, roundup(C, block), spatial…] from NCHW (or NHWC with ``channels_last``); the channel
    dim is unknown when the file's possible blocks round C differently."""
    shape = _shape(ins[0]) if ins else None
    if shape is None or len(shape) < 2:
        return None
    last = _attr(node, "channels_last", 0) != 0
    c = shape[-1] if last else shape[1]
    spatial = shape[1:-1] if last else shape[2:]
    channels: Dim = None
    if isinstance(c, int):
        padded = {_round_up(c, b) for b in block_sizes}
        channels = padded.pop() if len(padded) == 1 else None
    return [TensorType(dtype=ins[0].dtype, shape=(shape[0], channels, *spatial))]


def _reorder_output(node, ins, values, block_sizes):
    """[N, channels, spatial…] (or channels last) with ``channels`` the logical count."""
    shape = _shape(ins[0]) if ins else None
    channels = _attr(node, "channels", 0)
    if shape is None or len(shape) < 2 or channels <= 0:
        return None
    spatial = tuple(shape[2:])
    dims = (shape[0], *spatial, channels) if _attr(node, "channels_last", 0) else (shape[0], channels, *spatial)
    return [TensorType(dtype=ins[0].dtype, shape=dims)]


def _nchwc_upsample(node, ins, values, block_sizes):
    """Each dim times its integer scale; a dim without a value stays unknown."""
    shape = _shape(ins[0]) if ins else None
    scales = _attr(node, "scales", None)
    if shape is None or scales is None or len(scales) != len(shape):
        return None
    dims = tuple(d * s if isinstance(d, int) else None for d, s in zip(shape, scales))
    return [TensorType(dtype=ins[0].dtype, shape=dims)]


_CONV_ATTRS = frozenset({"auto_pad", "kernel_shape", "dilations", "strides", "pads", "group"})
_POOL_ATTRS = frozenset({"auto_pad", "kernel_shape", "dilations", "strides", "pads", "ceil_mode"})


# --- com.microsoft ---------------------------------------------------------------------------


def _fused_gemm(node, ins, values, block_sizes):
    """[A.dim(transA ? 1 : 0), B.dim(transB ? 0 : 1)]; both inputs must be rank 2."""
    a, b = (_shape(ins[0]), _shape(ins[1])) if len(ins) > 1 else (None, None)
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return None
    trans_a, trans_b = _attr(node, "transA", 0), _attr(node, "transB", 0)
    return [TensorType(dtype=ins[0].dtype, shape=(a[1 if trans_a else 0], b[0 if trans_b else 1]))]


def _matmul_operand(shape: Shape, trans: bool, trans_batch: bool) -> Shape:
    """One FusedMatMul operand as the plain MatMul would see it (FusedMatMulShapeInference)."""
    rank = len(shape)
    if rank == 1:
        return shape
    batch = shape[1 : rank - 1] if trans_batch else shape[: rank - 2]
    rows = shape[0] if trans_batch else shape[rank - 2]
    cols = shape[rank - 1]
    return (*batch, cols, rows) if trans else (*batch, rows, cols)


def _fused_matmul_operands(node, ins):
    out: list[TensorType | None] = []
    for k, (trans, batch) in enumerate((("transA", "transBatchA"), ("transB", "transBatchB"))):
        t = ins[k] if k < len(ins) else None
        if t is None or t.shape is None or len(t.shape) == 0:
            return None
        shape = _matmul_operand(t.shape, bool(_attr(node, trans, 0)), bool(_attr(node, batch, 0)))
        out.append(TensorType(dtype=t.dtype, shape=shape))
    return out


def _attention(node, ins, values, block_sizes):
    """AttentionTypeAndShapeInference: output [B, S, v_hidden]; ``present`` only from a known
    ``past`` whose sequence dim and S are numbers."""
    x, bias = (_shape(ins[0]), _shape(ins[2])) if len(ins) > 2 else (None, None)
    if x is None or bias is None or len(x) != 3 or len(bias) != 1:
        return None
    sizes = _attr(node, "qkv_hidden_sizes", [])
    if sizes:
        hidden: Dim = int(sizes[2])
    else:
        hidden = bias[0] // 3 if isinstance(bias[0], int) else None
    dtype = _dtype(ins, 2)
    outs: list[TensorType | None] = [TensorType(dtype=dtype, shape=(x[0], x[1], hidden))]
    if len(node.output) > 1:
        past = _shape(ins[4]) if len(ins) > 4 else None
        present = None
        if past is not None and len(past) == 5 and not _attr(node, "past_present_share_buffer", 0):
            if isinstance(x[1], int) and isinstance(past[3], int):
                present = TensorType(dtype=dtype, shape=(*past[:3], x[1] + past[3], past[4]))
        outs.append(present)
    return outs


# --- quantization (core/graph/contrib_ops/quantization_defs.cc, nhwc_schema_defs.cc) ----------


def _qlinear_global_pool(node, ins, values, block_sizes):
    """QLinearGlobalAveragePool: X's shape with every spatial dim 1 ((N, C, 1…) or, with
    ``channels_last``, (N, 1…, C))."""
    x = _shape(ins[0]) if ins else None
    if x is None or len(x) < 2:
        return None
    dims = (
        (x[0], *(1,) * (len(x) - 2), x[-1]) if _attr(node, "channels_last", 0) else (x[0], x[1], *(1,) * (len(x) - 2))
    )
    return [TensorType(dtype=ins[0].dtype, shape=dims)]


def _qgemm(node, ins, values, block_sizes):
    """QGemm: [A.dim(transA), B.dim(!transB)] of A (0) and B (3); the element type of
    y_zero_point (8) when given, else float (the output is not quantized)."""
    a, b = (_shape(ins[0]), _shape(ins[3])) if len(ins) > 3 else (None, None)
    dtype = _dtype(ins, 8) if len(node.input) > 8 and node.input[8] else onnx.TensorProto.FLOAT
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return [TensorType(dtype=dtype, shape=None)]
    trans_a, trans_b = _attr(node, "transA", 0), _attr(node, "transB", 0)
    return [TensorType(dtype=dtype, shape=(a[1 if trans_a else 0], b[0 if trans_b else 1]))]


def _qlinear_concat(node, ins, values, block_sizes):
    """QLinearConcat: (tensor, scale, zero point) triples from input 2, joined on ``axis``; the
    element type is the output zero point's (input 1)."""
    shapes = [_shape(ins[i]) for i in range(2, len(ins), 3)]
    tensors = [t for t in shapes if t is not None]
    if not tensors or len(tensors) < len(shapes) or len({len(t) for t in tensors}) != 1:
        return None
    rank = len(tensors[0])
    axis = _attr(node, "axis", 0)
    axis = axis + rank if axis < 0 else axis
    dims: list[Dim] = list(tensors[0])
    lengths = [t[axis] for t in tensors]
    dims[axis] = sum(lengths) if all(isinstance(d, int) for d in lengths) else None
    return [TensorType(dtype=_dtype(ins, 1), shape=tuple(dims))]


def _qlinear_reduce_mean(node, ins, values, block_sizes):
    """QLinearReduceMean: ``axes`` (all when absent) reduced, kept as 1 with ``keepdims``."""
    x = _shape(ins[0]) if ins else None
    if x is None:
        return None
    axes = {a + len(x) if a < 0 else a for a in _attr(node, "axes", [])}
    keep = _attr(node, "keepdims", 1)
    dims = [d if axes and i not in axes else 1 for i, d in enumerate(x) if keep or (axes and i not in axes)]
    return [TensorType(dtype=ins[0].dtype, shape=tuple(dims))]


def _qattention(node, ins, values, block_sizes):
    """QAttention: AttentionTypeAndShapeInference with ``past`` at input 8."""
    view = list(ins[:4]) + [ins[8] if len(ins) > 8 else None]
    return _attention(node, view, values, block_sizes)


def _dynamic_quantize_lstm(node, ins, values, block_sizes):
    """DynamicQuantizeLSTM: RNNShapeInference — Y [seq, directions, batch, hidden], Y_h and Y_c
    [directions, batch, hidden], float."""
    x = _shape(ins[0]) if ins else None
    hidden = _attr(node, "hidden_size", None)
    if x is None or len(x) != 3 or hidden is None:
        return None
    directions = 2 if _attr(node, "direction", b"forward") in (b"bidirectional", "bidirectional") else 1
    f = onnx.TensorProto.FLOAT
    state = TensorType(dtype=f, shape=(directions, x[1], hidden))
    return [TensorType(dtype=f, shape=(x[0], directions, x[1], hidden)), state, state][: len(node.output)]


def _quantize_ms(node, ins, values, block_sizes):
    """com.microsoft QuantizeLinear: x's shape, the zero point's element type (uint8 without one)."""
    x = ins[0] if ins else None
    dtype = _dtype(ins, 2) if len(node.input) > 2 and node.input[2] else onnx.TensorProto.UINT8
    return [TensorType(dtype=dtype, shape=_shape(x))] if x is not None else None


def _dequantize_ms(node, ins, values, block_sizes):
    """com.microsoft DequantizeLinear: x's shape, float."""
    x = ins[0] if ins else None
    return [TensorType(dtype=onnx.TensorProto.FLOAT, shape=_shape(x))] if x is not None else None


_QPOOL_ATTRS = frozenset({"auto_pad", "kernel_shape", "strides", "pads", "ceil_mode"})
#: The quantization ops onnxruntime's CPU optimizers and quantization tools produce.
QUANT_RULES: OpTable[Rule] = OpTable({
    # QLinearMathDocGenerator: A's element type, bidirectional broadcast of A (0) and B (3).
    (MS_DOMAIN, "QLinearAdd"): _onnx_op("Add", 14, pick=(0, 3), keep_attrs=frozenset()),
    (MS_DOMAIN, "QLinearMul"): _onnx_op("Mul", 14, pick=(0, 3), keep_attrs=frozenset()),
    # propagateShapeAndTypeFromFirstInput (QLinearSoftmax: contrib_defs.cc)
    (MS_DOMAIN, "QLinearSigmoid"): _like_input(0),
    (MS_DOMAIN, "QLinearLeakyRelu"): _like_input(0),
    (MS_DOMAIN, "QLinearSoftmax"): _like_input(0),
    (MS_DOMAIN, "QLinearReduceMean"): _qlinear_reduce_mean,
    (MS_DOMAIN, "QLinearConcat"): _qlinear_concat,
    # QLinearConv: y_zero_point's (7) type; convPoolShapeInference(ctx, true, false, 0, 3), NHWC
    # variant with channels_last.
    (MS_DOMAIN, "QLinearConv"): _onnx_op("Conv", 11, pick=(0, 3), keep_attrs=_CONV_ATTRS, dtype_from=7, nhwc=True),
    # NhwcMaxPool: convPoolShapeInferenceNhwc(ctx, true, true, 0, 1) (always channels last).
    (MS_DOMAIN, "NhwcMaxPool"): _onnx_op("MaxPool", 12, n_inputs=1, keep_attrs=_POOL_ATTRS, nhwc=True),
    (MS_DOMAIN, "QLinearAveragePool"): _onnx_op(
        "AveragePool", 11, pick=(0,), keep_attrs=_QPOOL_ATTRS | {"count_include_pad"}, nhwc=True
    ),
    (MS_DOMAIN, "QLinearGlobalAveragePool"): _qlinear_global_pool,
    (MS_DOMAIN, "QGemm"): _qgemm,
    # DynamicQuantizeMatMul: float (A's type), matmulShapeInference(ctx, 0, 1).
    (MS_DOMAIN, "DynamicQuantizeMatMul"): _onnx_op("MatMul", 13, pick=(0, 1), keep_attrs=frozenset(), dtype_from=2),
    # MatMulIntegerToFloat: a_scale's (2) type, matmulShapeInference(ctx, 0, 1).
    (MS_DOMAIN, "MatMulIntegerToFloat"): _onnx_op("MatMul", 13, pick=(0, 1), keep_attrs=frozenset(), dtype_from=2),
    (MS_DOMAIN, "QAttention"): _qattention,
    (MS_DOMAIN, "DynamicQuantizeLSTM"): _dynamic_quantize_lstm,
    (MS_DOMAIN, "QuantizeLinear"): _quantize_ms,
    (MS_DOMAIN, "DequantizeLinear"): _dequantize_ms,
})


# --- onnxruntime-only ops of the ONNX domain -------------------------------------------------


def _layer_norm(node, ins, values, block_sizes):
    """LayerNormalization (before opset 17) and SimplifiedLayerNormalization: Y like X; the
    optional statistics keep X's dims before ``axis`` and 1 from it on (float, or X's type)."""
    x = _shape(ins[0]) if ins else None
    if x is None:
        return None
    axis = _attr(node, "axis", -1)
    axis = axis + len(x) if axis < 0 else axis
    stat_type = _attr(node, "stash_type", 1)
    stats = tuple(x[:axis]) + (1,) * (len(x) - axis)
    outs: list[TensorType | None] = [ins[0]]
    for _ in node.output[1:]:
        outs.append(TensorType(dtype=stat_type, shape=stats))
    return outs


def _group_query_attention(node, ins, values, block_sizes):
    """GroupQueryAttention. Output 0: the query's shape ([B, S, num_heads·head] when QKV are
    packed). ``present`` k/v: [B, kv_num_heads, max(total, past length), head] as the kernel
    allocates them (``group_query_attention_helper.h`` CheckInputs: present_sequence_length =
    max(total_sequence_length, past_key dim 2), total read from input 6's value); without that
    value it follows the static rule (``bert_defs.cc`` BaseGroupQueryAttentionTypeAndShapeInference,
    use_max_past_present_buffer -1): the past's dim 2, unknown for a past of length 0."""
    q = _shape(ins[0]) if ins else None
    if q is None or len(q) != 3:
        return None
    heads, kv_heads = _attr(node, "num_heads", 0), _attr(node, "kv_num_heads", 0)
    packed = len(ins) < 3 or ins[2] is None or not (len(node.input) > 2 and node.input[2])
    head: Dim = None
    if isinstance(q[2], int) and heads > 0 and kv_heads > 0:
        head = q[2] // (heads + 2 * kv_heads) if packed else q[2] // heads
    hidden = head * heads if isinstance(head, int) else None
    dtype = _dtype(ins, 0)
    outs: list[TensorType | None] = [TensorType(dtype=dtype, shape=(q[0], q[1], hidden if packed else q[2]))]
    if len(node.output) < 3:
        return outs
    total = None
    if len(node.input) > 6 and node.input[6] in values:
        v = np.asarray(values[node.input[6]]).reshape(-1)
        total = int(v[0]) if v.size == 1 else None
    past = _shape(ins[3]) if len(ins) > 3 and len(node.input) > 3 and node.input[3] else None
    if past is not None and len(past) == 4:
        if total is not None and total > 0 and isinstance(past[2], int):
            length: Dim = max(total, past[2])
        elif past[2] == 0 and len(node.input) > 6:
            length = None
        else:
            length = past[2]
        present = (past[0], past[1], length, past[3])
    else:
        kv_seq = q[1] if packed else (_shape(ins[2]) or (None, None))[1]
        length = total if total else (kv_seq if isinstance(kv_seq, int) and kv_seq > 0 else q[1])
        present = (q[0], kv_heads, length, head)
    past_dtype = _dtype(ins, 3) if past is not None else dtype
    outs += [TensorType(dtype=past_dtype, shape=present)] * 2
    return outs


# --- the table -------------------------------------------------------------------------------

#: (domain, op_type) -> rule
RULES: OpTable[Rule] = OpTable(
    {
        (NCHWC_DOMAIN, "ReorderInput"): _reorder_input,
        (NCHWC_DOMAIN, "ReorderOutput"): _reorder_output,
        (NCHWC_DOMAIN, "Upsample"): _nchwc_upsample,
        # convPoolShapeInference(ctx, true, false, 0, 1): onnx Conv-11's call; Sum (input 3) is dropped.
        (NCHWC_DOMAIN, "Conv"): _onnx_op("Conv", 11, n_inputs=3, keep_attrs=_CONV_ATTRS),
        # convPoolShapeInference(ctx, true, true, 0, 1): onnx MaxPool-12's call, for both pools.
        (NCHWC_DOMAIN, "MaxPool"): _onnx_op("MaxPool", 12, keep_attrs=_POOL_ATTRS),
        (NCHWC_DOMAIN, "AveragePool"): _onnx_op("MaxPool", 12, keep_attrs=_POOL_ATTRS),
        (NCHWC_DOMAIN, "GlobalAveragePool"): _onnx_op("GlobalAveragePool", 1, keep_attrs=frozenset()),
        (NCHWC_DOMAIN, "GlobalMaxPool"): _onnx_op("GlobalMaxPool", 1, keep_attrs=frozenset()),
        (MS_DOMAIN, "FusedConv"): _onnx_op("Conv", 11, n_inputs=3, keep_attrs=_CONV_ATTRS),
        (MS_DOMAIN, "FusedGemm"): _fused_gemm,
        # FusedMatMulShapeInference: transpose the operands, then onnx's matmul rule (broadcast batch).
        (MS_DOMAIN, "FusedMatMul"): _onnx_op(
            "MatMul", 13, n_inputs=2, keep_attrs=frozenset(), reshape=_fused_matmul_operands
        ),
        (MS_DOMAIN, "BiasGelu"): _like_input(0),
        (MS_DOMAIN, "FastGelu"): _like_input(0),
        (MS_DOMAIN, "Gelu"): _like_input(0),
        (MS_DOMAIN, "QuickGelu"): _like_input(0),
        (MS_DOMAIN, "BiasSoftmax"): _like_input(0),
        (MS_DOMAIN, "BiasAdd"): _like_input(0),
        # SkipLayerNormalization / SkipSimplifiedLayerNormalization: output (0) and the optional
        # input_skip_bias_sum (3) have the input's shape; mean and inv_std_var (1, 2) get no shape.
        (MS_DOMAIN, "SkipLayerNormalization"): _like_input(0, outputs=(0, 3)),
        (MS_DOMAIN, "SkipSimplifiedLayerNormalization"): _like_input(0, outputs=(0, 3)),
        (MS_DOMAIN, "Attention"): _attention,
        (MS_DOMAIN, "GroupQueryAttention"): _group_query_attention,
        ("", "LayerNormalization"): _layer_norm,
        ("", "SimplifiedLayerNormalization"): _layer_norm,
    },
    QUANT_RULES,
)
