"""Mixed precision as ``torch.autocast('cpu')`` runs it: which ops compute in the half type,
which casts it makes, and what they cost.

``graphmem train --precision mixed-bf16|mixed-fp16`` is the step a user writes for CPU mixed
precision: the forward (model and loss) under ``torch.autocast('cpu', dtype=...)``, ``backward``
and the optimizer step outside it (mixed-fp16 with ``torch.amp.GradScaler('cpu')``). Weights,
gradients and optimizer state stay fp32; only activations change. Rules, from
``aten/src/ATen/autocast_mode.cpp`` (``TORCH_LIBRARY_IMPL(aten, AutocastCPU, m)``):

* **lower_precision_fp** ops (conv*, conv_transpose*, mm/addmm/bmm/baddbmm/matmul/linear, prelu,
  mkldnn_rnn_layer — the LSTM's kernel —, scaled_dot_product_attention): every floating argument
  not already half is cast (``cached_cast``), the op runs and returns half;
* **fp32** ops (reflection/replication pads, 3-D pools, grid_sampler, the cross_entropy and
  nll losses, ...): half arguments are cast to fp32, the op returns fp32 (log_softmax/softmax
  are not in the CPU list: they run in their input's dtype);
* **promote** ops (cat, stack, index_copy): the narrower arguments are cast to the widest;
* **GRU** is not intercepted (``aten::gru`` is on no list), but its cells are ATen ops run
  under the same autocast state: ``linear_ih``/``linear_hh`` are ``at::linear`` calls
  (``aten/src/ATen/native/RNN.cpp``, ``CellParams``), a lower_precision_fp op. So the weights
  and biases get cached half casts (written before the GRU), the layer input and every step's
  hidden state are cast inside it (per direction; :func:`graphmem.training.saved.gru`), the
  gates are half and the hidden states stay in the input's dtype (``hidden - new_gate``
  promotes): the GRU's outputs keep its input's dtype;
* every other op is not intercepted: it runs in its inputs' dtype — elementwise ops by type
  promotion (``c10/core/ScalarType.h`` ``promoteTypes``; a 0-d tensor or Python scalar does not
  promote a dimensioned one, ``aten/src/ATen/native/TypeProperties.cpp`` ``result_type``), the
  rest in their first floating input's dtype (BatchNorm/LayerNorm on CPU accept a half input with
  fp32 parameters and return half, keeping fp32 statistics: ``mixed_type`` in
  ``aten/src/ATen/native/layer_norm.cpp`` and ``batch_norm.cpp``).

The **cast cache** (``cached_cast``): a cast of an fp32 leaf that requires grad (a trainable
parameter) to the half type is made once per autocast region and held by the cache until the
region exits (``clear_cache`` on the outermost ``__exit__``): to the end of the forward. Other
casts (activations, frozen weights, casts to fp32) are made at every call and live like any
result. An op that saves a cast operand (addmm's ``mat2``, convolution's ``weight``) holds the
half copy into the backward; its gradient comes back half and ``ToCopyBackward0`` makes the fp32
gradient of the parameter (``tools/autograd/derivatives.yaml``: ``_to_copy``), a new tensor: a
parameter read by two ops (a tied embedding) sums the second contribution into it in place.

Each cast is written into the op list as a ``Cast`` op before its consumer (the cached ones
before their first consumer), so the passes count it like any other tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import onnx
from onnx import TensorProto

from graphmem.model.dtypes import is_float
from graphmem.model.types import TensorType
from graphmem.optable import OpTable
from graphmem.training.patterns import Op

__all__ = [
    "Autocast",
    "autocast_ops",
    "is_cast",
    "LINEAR_WEIGHT_INPUTS",
    "LOWER_PRECISION_OPS",
    "FP32_OPS",
    "PROMOTE_OPS",
    "HALF",
]

#: What names a cast autocast makes: ``<tensor>/autocast_<dtype>[#<op>]``.
CAST_MARK = "/autocast_"


def is_cast(name: str) -> bool:
    """Is ``name`` a cast :func:`autocast_ops` wrote (a copy autocast makes before an op)?"""
    return CAST_MARK in name

#: ``--precision`` -> the autocast dtype (ONNX enum).
HALF = {"mixed-fp16": TensorProto.FLOAT16, "mixed-bf16": TensorProto.BFLOAT16}

#: ONNX ops PyTorch runs as a CPU ``lower_precision_fp`` op (autocast_mode.cpp: conv1d/2d/3d,
#: conv_transpose*, addmm/mm/bmm/matmul/linear, prelu, mkldnn_rnn_layer).
LOWER_PRECISION_OPS = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm", "PRelu", "LSTM"})
#: Loss nodes of the CPU ``fp32`` policy: always fp32, whatever their input's rank.
_FP32_LOSSES = frozenset({"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"})
#: The analysis runs those losses as onnxruntime does, as their function bodies, whose tensors
#: the inliner names ``_inlfunc_<op type>…`` (graphmem.ort.functions, graph.cc InlineFunction):
#: every op of such a body is the one fp32 loss of PyTorch.
_LOSS_BODY = tuple(f"_inlfunc_{t}" for t in sorted(_FP32_LOSSES))
#: Ops that read only their input's shape: no cast.
_SHAPE_ONLY = frozenset({"Shape", "Size"})
#: ONNX ops PyTorch runs as a CPU ``fp32`` op (autocast_mode.cpp: reflection_pad*/
#: replication_pad*, max_pool3d, adaptive_avg_pool3d, grid_sampler, and the losses the exporter
#: writes as one node: cross_entropy_loss as SoftmaxCrossEntropyLoss, nll_loss/nll_loss2d as
#: NegativeLogLikelihoodLoss) — Pad only in its reflect/edge modes, the pools only on 5-D inputs.
#: log_softmax and softmax are not in the CPU list: they run in their input's dtype.
FP32_OPS = frozenset({"Pad", "MaxPool", "AveragePool", "GlobalAveragePool", "GridSample"}) | _FP32_LOSSES
#: ONNX ops PyTorch runs as a CPU ``promote`` op (autocast_mode.cpp: cat, stack).
PROMOTE_OPS = frozenset({"Concat"})
#: ONNX ops whose weights PyTorch reads through ``at::linear`` (RNN.cpp ``CellParams::linear_ih``/
#: ``linear_hh``), which autocast casts: input positions W, R, B of a GRU.
LINEAR_WEIGHT_INPUTS: OpTable[tuple[int, ...]] = OpTable({("", "GRU"): (1, 2, 3)})
#: Elementwise ops whose result dtype is the promotion of their floating operands.
_PROMOTING = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Where"})
_WIDTH: dict[int, int] = {TensorProto.FLOAT16: 2, TensorProto.BFLOAT16: 2, TensorProto.FLOAT: 4, TensorProto.DOUBLE: 8}


@dataclass(frozen=True, slots=True, kw_only=True)
class Autocast:
    ops: tuple[Op, ...]  # the op list with the casts autocast makes
    types: dict[str, TensorType]  # every tensor's type under autocast (casts included)
    needs_grad: frozenset[str]  # with the casts of tensors that need a gradient
    cached: tuple[str, ...]  # casts the cache holds to the end of the forward
    casts: tuple[str, ...]  # every cast made (cached ones included)
    original: tuple[Op, ...]  # per op: the op it was before its inputs were cast (a cast: itself)


def _in_loss_body(op: Op) -> bool:
    return any(n.startswith(_LOSS_BODY) for n in (*op.inputs, *op.outputs) if n)


def _fp32_policy(op: Op, types: dict[str, TensorType]) -> bool:
    if _in_loss_body(op):
        return op.op_type not in _SHAPE_ONLY
    if op.op_type not in FP32_OPS:
        return False
    if op.op_type == "Pad":
        mode = next((a.s.decode() for a in op.node.attribute if a.name == "mode"), "constant")
        return mode in ("reflect", "edge")
    if op.op_type == "GridSample" or op.op_type in _FP32_LOSSES:
        return True
    t = types.get(op.inputs[0]) if op.inputs else None
    return t is not None and t.shape is not None and len(t.shape) == 5


def _scalar(name: str, t: TensorType, constant: Callable[[str], bool]) -> bool:
    """A 0-d tensor, or a one-element constant (the exporter's Python scalar): no promotion."""
    if t.shape is None:
        return False
    if len(t.shape) == 0:
        return True
    return all(d == 1 for d in t.shape) and constant(name)


def _promoted(names: list[str], types: dict[str, TensorType], constant: Callable[[str], bool]) -> int | None:
    floats = [(n, types[n]) for n in names if n in types and is_float(types[n].dtype)]
    if not floats:
        return None
    dimensioned = [t for n, t in floats if not _scalar(n, t, constant)]
    pool = dimensioned or [t for _, t in floats]
    return max(pool, key=lambda t: _WIDTH.get(t.dtype, 4)).dtype


def autocast_ops(
    ops: tuple[Op, ...],
    types: dict[str, TensorType],
    *,
    half: int,
    needs_grad: frozenset[str],
    weightish: frozenset[str],
    constant: Callable[[str], bool],
    cacheable: Callable[[str], bool],
    linear_bias: Callable[[Op], int | None],
    follows: Callable[[Op], str | None] = lambda op: None,
    softmax_fp32: Callable[[Op], bool] = lambda op: False,
) -> Autocast:
    """The ops and types of the forward under autocast to ``half`` (see module doc).

    ``weightish``: weights and tensors computed from weights alone; ``constant(name)``: a
    weightish tensor no trainable parameter reaches (scalars written by the exporter); ``cacheable(name)``: the
    weightish ``name`` is a trainable fp32 parameter (or a view of one), whose cast the cache
    holds; ``linear_bias(op)``: the position of the bias when an Add is the bias of a linear
    (one ``addmm``/``linear`` in PyTorch, which casts its bias too); ``follows(op)``: the tensor
    whose run-time dtype a Cast takes (``x.to(v.dtype)``), None for a cast to its own ``to``;
    ``softmax_fp32(op)``: a Softmax that is ``softmax(x, dtype=torch.float32)``
    (:mod:`graphmem.training.casts`)."""
    t = dict(types)
    need = set(needs_grad)
    out_ops: list[Op] = []
    cache: dict[str, str] = {}
    cached: list[str] = []
    casts: list[str] = []
    original: list[Op] = []

    def cast(x: str, to: int, i: int, use_cache: bool) -> str:
        if use_cache and x in cache:
            return cache[x]
        name = f"{x}{CAST_MARK}{TensorProto.DataType.Name(to).lower()}" + ("" if use_cache else f"#{i}")
        if name in t:  # the same tensor twice in one op: one cast (LSTM's shared h0/c0: see saved.lstm)
            return name
        node = onnx.helper.make_node("Cast", [x], [name], name=f"{name}:Cast", to=to)
        out_ops.append(Op(nid=-1, op_type="Cast", domain="", inputs=(x,), outputs=(name,), node=node, members=()))
        original.append(out_ops[-1])
        t[name] = replace(t[x], dtype=to)
        if x in need:
            need.add(name)
        casts.append(name)
        if use_cache:
            cache[x] = name
            cached.append(name)
        return name

    def floating(x: str) -> bool:
        return bool(x) and x in t and is_float(t[x].dtype)

    for i, op in enumerate(ops):
        inputs = list(op.inputs)
        bias = linear_bias(op) if op.op_type == "Add" else None
        to: int | None = None
        linear_weights = LINEAR_WEIGHT_INPUTS.of(op)
        if linear_weights is not None:
            # RNN.cpp GRUCell: the weights go through at::linear (cached casts); the state keeps X's dtype
            for k in linear_weights:
                x = inputs[k] if k < len(inputs) else ""
                if floating(x) and t[x].dtype != half:
                    inputs[k] = cast(x, half, i, x in weightish and cacheable(x))
            to = t[inputs[0]].dtype if floating(inputs[0]) else None
        elif op.op_type in LOWER_PRECISION_OPS or bias is not None:
            to = half
            positions = range(len(inputs)) if bias is None else [bias]
            for k in positions:
                x = inputs[k]
                if floating(x) and t[x].dtype != half:
                    cached_cast = x in weightish and cacheable(x)
                    inputs[k] = cast(x, half, i, cached_cast)
        elif _fp32_policy(op, t):
            to = TensorProto.FLOAT
            for k, x in enumerate(inputs):
                if floating(x) and t[x].dtype != TensorProto.FLOAT:
                    inputs[k] = cast(x, TensorProto.FLOAT, i, False)
        elif op.op_type in PROMOTE_OPS:
            to = _promoted(inputs, t, lambda name: False)
            for k, x in enumerate(inputs):
                if to is not None and floating(x) and t[x].dtype != to:
                    inputs[k] = cast(x, to, i, False)
        elif op.op_type in _PROMOTING:
            to = _promoted(inputs[1:] if op.op_type == "Where" else inputs, t, constant)
        elif op.op_type == "Cast" and (v := follows(op)) is not None and v in t:
            to = t[v].dtype  # x.to(v.dtype): v's dtype under autocast
        elif op.op_type in ("Cast", "CastLike"):
            to = None  # its own target
        elif softmax_fp32(op):
            # SoftMax.cpp softmax(input_, dim_, dtype): input_.toType(dtype), then _softmax in it
            to = TensorProto.FLOAT
            if floating(inputs[0]) and t[inputs[0]].dtype != to:
                inputs[0] = cast(inputs[0], to, i, False)
        else:
            to = next((t[x].dtype for x in inputs if floating(x)), None)
        if to is not None:
            for o in op.outputs:
                if o and o in t and is_float(t[o].dtype):
                    t[o] = replace(t[o], dtype=to)
            for h in op.hidden:
                if h in t and is_float(t[h].dtype):
                    t[h] = replace(t[h], dtype=to)
        out_ops.append(op if tuple(inputs) == op.inputs else replace(op, inputs=tuple(inputs)))
        original.append(op)
    return Autocast(ops=tuple(out_ops), types=t, needs_grad=frozenset(need), cached=tuple(cached),
                    casts=tuple(casts), original=tuple(original))
