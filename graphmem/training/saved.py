"""What autograd saves for backward, per op: one table keyed by ``(domain, op_type)``.

The rules follow PyTorch's ``tools/autograd/derivatives.yaml`` (which tensors a backward formula
reads) and the generated code that saves an operand only when the *other* operand's gradient
needs it; each was checked with ``torch.autograd.graph.saved_tensors_hooks`` on torch 2.13 CPU
(``scripts/train_check.py`` measures whole networks the same way). Conventions:

* A rule lists only activations. Weights (and tensors computed from weights alone) are counted
  once, as weights, even when autograd holds them.
* ``SavedItem.tensor`` names a tensor of the graph: its *storage* is held (a view held by one op
  and its base held by another count once). A buffer the op makes itself (Dropout's mask,
  MaxPool's indices, normalisation statistics, an RNN workspace) has ``tensor == ""`` and its
  own ``nbytes``.
* Every op lands in one outcome: ``counted``, ``zero`` (saves nothing, or nothing needs a
  gradient) or ``unsupported``. An unsupported op is listed by the estimate and assumed to save
  all its floating activation inputs — never 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import onnx
from onnx import TensorProto

from graphmem.model.dtypes import is_float, tensor_bytes
from graphmem.model.program import tensor_size
from graphmem.model.types import TensorType, is_concrete
from graphmem.optable import OpRule, OpTable
from graphmem.training.autocast import is_cast

__all__ = ["OpView", "SavedItem", "Saved", "Rule", "RULES", "saved_by", "lstm_workspace_bytes", "good_ld", "gru"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OpView:
    """What a rule may read about one op."""

    op_type: str
    node: onnx.NodeProto
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    types: dict[str, TensorType]
    needs_grad: frozenset[str]  # tensors that need a gradient
    weights: frozenset[str]  # weights and weight-derived tensors (never listed)
    active: bool = True  # Dropout: drops (training mode, ratio > 0)
    roots: Mapping[str, str] = field(default_factory=dict)  # view -> the tensor owning its storage
    orders: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # non-contiguous layouts
    weight_grads_kept: bool = True  # gradients released: a first weight gradient becomes .grad

    def storage(self, name: str) -> str:
        """The tensor whose storage ``name`` shares (itself when it owns one)."""
        return self.roots.get(name, name)

    def contiguous(self, name: str) -> bool:
        return name not in self.orders

    def channels_last(self, name: str) -> bool:
        return self.orders.get(name) == (0, 2, 3, 1)

    def input(self, k: int) -> str:
        return self.inputs[k] if k < len(self.inputs) else ""

    def grad(self, k: int) -> bool:
        return self.input(k) in self.needs_grad

    def act(self, k: int) -> bool:
        name = self.input(k)
        return bool(name) and name not in self.weights

    def type(self, name: str) -> TensorType | None:
        return self.types.get(name)

    def attr(self, name: str, default: Any = None) -> Any:
        for a in self.node.attribute:
            if a.name == name:
                return onnx.helper.get_attribute_value(a)
        return default


@dataclass(frozen=True, slots=True, kw_only=True)
class SavedItem:
    """One thing autograd holds: a graph tensor's storage, or a buffer the op makes."""

    label: str  # "input 0", "output", "mask", "indices", "mean", "invstd", "workspace", ...
    tensor: str = ""
    nbytes: int | None = None  # for a made buffer; None when its size is unknown


@dataclass(frozen=True, slots=True, kw_only=True)
class Saved:
    outcome: str  # "counted" | "zero" | "unsupported"
    items: tuple[SavedItem, ...] = ()
    reason: str = ""


Rule = Callable[[OpView], Saved]
ZERO = Saved(outcome="zero")


def _inp(op: OpView, k: int) -> list[SavedItem]:
    return [SavedItem(label=f"input {k}", tensor=op.input(k))] if op.act(k) else []


def _out(op: OpView, k: int = 0) -> list[SavedItem]:
    name = op.outputs[k] if k < len(op.outputs) else ""
    return [SavedItem(label="output", tensor=name)] if name else []


def _made(label: str, nbytes: int | None) -> SavedItem:
    return SavedItem(label=label, nbytes=nbytes)


def _done(items: list[SavedItem]) -> Saved:
    return Saved(outcome="counted", items=tuple(items)) if items else ZERO


def zero(op: OpView) -> Saved:
    """Saves nothing (sizes and scalars only): views, Add/Sub, Concat, reductions by sum, ..."""
    return ZERO


def save_inputs(*positions: int) -> Rule:
    """Saves these inputs whatever needs a gradient (``convolution_backward`` reads both)."""

    def rule(op: OpView) -> Saved:
        return _done([i for k in positions for i in _inp(op, k)])

    return rule


def save_output(op: OpView) -> Saved:
    """Saves its result: Relu (also in place), Sigmoid, Tanh, Softmax, Exp, Sqrt, ..."""
    return _done(_out(op))


def save_input_and_output(op: OpView) -> Saved:
    """Saves input and result (amax/amin, norms, logsumexp)."""
    return _done(_inp(op, 0) + _out(op))


def operands(op: OpView) -> Saved:
    """Mul, MatMul, Gemm: each operand is saved when the *other* one needs a gradient."""
    n = min(len(op.inputs), 2)
    items = [i for k in range(n) if op.grad(1 - k) for i in _inp(op, k)]
    return _done(items)


def divide(op: OpView) -> Saved:
    """Div: the divisor when the dividend needs a gradient; both when the divisor does."""
    keep = set()
    if op.grad(0):
        keep.add(1)
    if op.grad(1):
        keep |= {0, 1}
    return _done([i for k in sorted(keep) for i in _inp(op, k)])


def power(op: OpView) -> Saved:
    """Pow: base (and exponent) for the base's gradient; also the result for the exponent's."""
    items = _inp(op, 0) + _inp(op, 1) if op.grad(0) or op.grad(1) else []
    if op.grad(1):
        items += _out(op)
    return _done(items)


def where(op: OpView) -> Saved:
    """Where: the condition (``masked_fill`` too)."""
    return _done(_inp(op, 0))


def gather(op: OpView) -> Saved:
    """Embedding (weight data) and index_select save the indices; select (one index) nothing."""
    idx = op.type(op.input(1))
    if not op.act(0):
        return _done([SavedItem(label="indices", tensor=op.input(1))])
    if idx is not None and idx.shape == ():
        return ZERO
    return _done([SavedItem(label="indices", tensor=op.input(1))])


def gather_elements(op: OpView) -> Saved:
    """torch.gather saves its input and the index."""
    return _done(_inp(op, 0) + [SavedItem(label="indices", tensor=op.input(1))])


def dropout(op: OpView) -> Saved:
    """On CPU ``F.dropout`` is ``input * mask`` with a mask of the *input's dtype*
    (``aten/src/ATen/native/Dropout.cpp``: the fused kernel is CUDA-only); the mask is saved.
    Inactive (inference mode or ratio 0): returns its input, saves nothing."""
    if not op.active:
        return ZERO
    return _done([_made("mask", tensor_size(op.type(op.input(0))))])


def max_pool(op: OpView) -> Saved:
    """``max_pool2d_with_indices`` saves its input and the int64 indices (output-sized)."""
    out = op.type(op.outputs[0])
    idx = None
    if out is not None and is_concrete(out.shape):
        idx = tensor_bytes(TensorProto.INT64, math.prod(out.shape))
    if len(op.outputs) > 1 and op.outputs[1]:
        return _done(_inp(op, 0) + [SavedItem(label="indices", tensor=op.outputs[1])])
    return _done(_inp(op, 0) + [_made("indices", idx)])


def _stats(op: OpView, count: int | None, labels: tuple[str, ...]) -> list[SavedItem]:
    size = None if count is None else tensor_bytes(TensorProto.FLOAT, count)
    return [_made(label, size) for label in labels]


def _dims(op: OpView, name: str) -> tuple[int, ...] | None:
    t = op.type(name)
    return tuple(t.shape) if t is not None and is_concrete(t.shape) else None


def batch_norm(op: OpView) -> Saved:
    """Training mode: input and per-channel mean and inverse std (fp32); eval mode: input."""
    dims = _dims(op, op.input(0))
    if not op.attr("training_mode", 0):
        return _done(_inp(op, 0))
    channels = dims[1] if dims is not None and len(dims) > 1 else None
    return _done(_inp(op, 0) + _stats(op, channels, ("mean", "invstd")))


def layer_norm(op: OpView) -> Saved:
    """Input, and mean and inverse std (fp32) of every normalised row."""
    dims = _dims(op, op.input(0))
    rows = None
    if dims is not None:
        axis = op.attr("axis", -1)
        rows = math.prod(dims[: axis % len(dims)]) if dims else 1
    return _done(_inp(op, 0) + _stats(op, rows, ("mean", "invstd")))


def instance_norm(op: OpView) -> Saved:
    """Input, and mean and inverse std per (sample, channel)."""
    dims = _dims(op, op.input(0))
    count = dims[0] * dims[1] if dims is not None and len(dims) > 1 else None
    return _done(_inp(op, 0) + _stats(op, count, ("mean", "invstd")))


def group_norm(op: OpView) -> Saved:
    """Input, and mean and inverse std per (sample, group)."""
    dims = _dims(op, op.input(0))
    groups = op.attr("num_groups", None)
    count = dims[0] * groups if dims is not None and groups else None
    return _done(_inp(op, 0) + _stats(op, count, ("mean", "invstd")))


def topk(op: OpView) -> Saved:
    """The int64 indices (output 1)."""
    return _done([SavedItem(label="indices", tensor=op.outputs[1])] if len(op.outputs) > 1 else [])


def scatter(op: OpView) -> Saved:
    """Scatter saves its indices."""
    return _done([SavedItem(label="indices", tensor=op.input(1))])


def good_ld(dim: int, elem: int = 4) -> int:
    """oneDNN ``rnn_utils::getgood_ld``: 64-byte aligned, never a multiple of 256 elements."""
    step = 64 // elem
    ld = -(-dim // step) * step
    return ld + step if ld % 256 == 0 else ld


def lstm_workspace_bytes(steps: int, batch: int, inputs: int, hidden: int, elem: int = 4) -> int:
    """Bytes of the oneDNN LSTM training workspace of one layer and direction.

    PyTorch's CPU LSTM runs oneDNN (``mkldnn_rnn_layer``) and saves this workspace: the gates of
    every step, the h and c states of every step, and room for their gradients, each part
    page-aligned (``src/cpu/rnn/rnn_utils.cpp``, ``set_offsets``; sizes from ``rnn_utils.hpp``).
    ``elem``: bytes of the layer's data type (2 under autocast: bf16/f16); the forward parts
    (gates, h, states, c states) are in it, the gradient states always in f32 (oneDNN's
    accumulation type). Matches the saved ``uint8`` workspace byte for byte on torch 2.13, fp32
    and bf16 (3 shapes each: ``scripts/train_check.py`` lstm, lstm_2x512, batch 1 and 4).
    """
    page = 4096
    parts = (
        steps * batch * good_ld(4 * hidden, elem) * elem,  # gates
        steps * batch * good_ld(hidden, elem) * elem,  # h of every step
        2 * (steps + 1) * batch * good_ld(max(inputs, hidden), elem) * elem,  # layer/iter states
        2 * (steps + 1) * batch * hidden * elem,  # c states
        2 * (steps + 1) * batch * good_ld(max(inputs, hidden)) * 4,  # diff layer states (f32)
        2 * (steps + 1) * batch * good_ld(max(inputs, hidden)) * 4,  # diff iter states (f32)
        2 * (steps + 1) * batch * hidden * 4,  # diff c states (f32)
    )
    offset = 0
    for part in parts:
        offset = -(-offset // page) * page + part
    return -(-offset // page) * page


def lstm(op: OpView) -> Saved:
    """Per direction: input, initial h and c, the direction's output, final h and c, and the
    oneDNN workspace (gates and states of every step, :func:`lstm_workspace_bytes`)."""
    x = _dims(op, op.input(0))
    hidden = op.attr("hidden_size", None)
    dirs = 2 if op.attr("direction", b"forward") in (b"bidirectional", "bidirectional") else 1
    if x is None or hidden is None:
        return Saved(outcome="unsupported", reason="LSTM with an unknown input shape")
    steps, batch, size = (x[1], x[0], x[2]) if op.attr("layout", 0) else x
    elem = _elem_bytes(op, op.input(0))
    # mkldnn_rnn_layer (derivatives.yaml) also saves its weights: parameters are weights (not
    # listed), autocast's half copies of them are held
    items = _inp(op, 0) + _inp(op, 1) + _inp(op, 2) + _inp(op, 3)
    if dirs == 2 and is_cast(op.input(0)):
        # autocast intercepts each direction's mkldnn_rnn_layer: each casts the layer input
        items.append(_made("input cast dir 1", tensor_size(op.type(op.input(0)))))
    state = dirs * batch * hidden * elem
    for k, label in ((5, "initial h"), (6, "initial c")):
        items += _inp(op, k) if op.act(k) else [_made(label, state)]
    if op.act(5) and op.act(6) and op.storage(op.input(5)) == op.storage(op.input(6)):
        # nn.LSTM makes h0 and c0 as two tensors (torch/nn/modules/rnn.py, ``LSTM.forward``);
        # the exporter writes one zeros tensor for both
        items.append(_made("initial c", state))
    y = op.outputs[0] if op.outputs and op.outputs[0] else ""
    for d in range(dirs):
        # one direction: the layer output is mkldnn_rnn_layer's result0; two: each direction's
        # result is saved and the graph's Y is their concatenation (a storage of its own)
        out = [SavedItem(label="output", tensor=y)] if y and dirs == 1 else [
            _made(f"output dir {d}", steps * batch * hidden * elem)]
        items += [
            *out,
            _made(f"final h dir {d}", batch * hidden * elem),
            _made(f"final c dir {d}", batch * hidden * elem),
            _made(f"workspace dir {d}", lstm_workspace_bytes(steps, batch, size, hidden, elem)),
        ]
    return _done(items)


def _rnn_dims(op: OpView) -> tuple[int, int, int, int, int, int] | None:
    """(steps, batch, input size, hidden, directions, element bytes) of an ONNX RNN node."""
    x = _dims(op, op.input(0))
    hidden = op.attr("hidden_size", None)
    if x is None or hidden is None:
        return None
    dirs = 2 if op.attr("direction", b"forward") in (b"bidirectional", "bidirectional") else 1
    steps, batch, size = (x[1], x[0], x[2]) if op.attr("layout", 0) else x
    return steps, batch, size, hidden, dirs, _elem_bytes(op, op.input(0))


def _elem_bytes(op: OpView, name: str) -> int:
    """Bytes of one element of ``name`` (4 when its type is unknown)."""
    t = op.type(name)
    return (tensor_bytes(t.dtype, 1) if t is not None else None) or 4


def gru(op: OpView) -> Saved:
    """PyTorch's CPU GRU is no kernel of its own: ``_rnn_impl_with_concat`` runs ``GRUCell`` op by
    op (``aten/src/ATen/native/RNN.cpp``), after one ``linear_ih`` over the whole sequence
    (``FullLayer``, ``pre_compute_input`` on CPU). Autograd holds, per direction:

    * the layer input, for ``linear_ih``'s weight gradient (``addmm`` saves ``mat1``); a
      non-contiguous input (batch-first, transposed) is first copied by ``matmul``'s reshape,
      once per direction (``FullBidirectionalLayer`` calls each direction's ``linear_ih``);
    * the initial hidden state (zeros PyTorch makes when the graph has none);
    * per step: the hidden gates ``linear_hh(h)`` (``[B, 3H]``: ``sigmoid_`` saves its result, a
      view of them), the clone of the new-gate chunk ``mul_`` overwrites (in-place ops clone what
      their derivative reads), the new gate (``tanh_`` result), the clone of ``h - n`` that
      ``mul_(input_gate)`` overwrites, and the hidden state read by the next step's ``addmm``.

    Per direction: ``B·I·T`` (input; once when contiguous) + ``B·H`` (h0) + ``T·B·6H`` +
    ``(T-1)·B·H``.

    Under autocast (the weights ``W``/``R`` are half casts, :mod:`graphmem.training.autocast`)
    see :func:`_gru_autocast`.
    """
    d = _rnn_dims(op)
    if d is None:
        return Saved(outcome="unsupported", reason="GRU with an unknown input shape")
    steps, batch, size, hidden, dirs, elem = d
    w = op.type(op.input(1))
    gate = (tensor_bytes(w.dtype, 1) or elem) if w is not None else elem
    if gate != elem:
        return _gru_autocast(op, gate, d)
    x = op.input(0)
    items = []
    if op.act(0):
        copies = [_made(f"input copy dir {k}", steps * batch * size * elem) for k in range(dirs)]
        items += _inp(op, 0) if op.contiguous(x) else copies
    state = dirs * batch * hidden * elem
    items += _inp(op, 5) if op.act(5) else [_made("initial h", state)]
    for k in range(dirs):
        items += [
            _made(f"gates dir {k}", steps * batch * 6 * hidden * elem),
            _made(f"hidden states dir {k}", (steps - 1) * batch * hidden * elem),
        ]
    return _done(items)


def _gru_autocast(op: OpView, gate: int, dims: tuple[int, int, int, int, int, int]) -> Saved:
    """A GRU under autocast: ``GRUCell``'s ``linear_ih``/``linear_hh`` are ``at::linear`` calls,
    which autocast runs in the half type (``aten/src/ATen/autocast_mode.cpp``, ``linear``
    lower_precision_fp), so ``gate`` (half) bytes for the gates and the input's dtype for the
    hidden state (``hidden - new_gate`` promotes to it). Per direction autograd holds:

    * the layer input cast to half (a cast per direction: an activation is not cached; a
      transposed input's cast keeps its strides and ``matmul``'s reshape copies it: one storage
      either way), ``addmm``'s ``mat1`` for ``W_ih``'s gradient;
    * the cached half casts of ``W`` and ``R`` (``addmm``'s ``mat2``, for ``mat1``'s gradient;
      ``W``'s only when the input needs a gradient): the graph's cast tensors;
    * per step: the half cast of the hidden state (``linear_hh``'s ``mat1``; every step's, the
      initial state's too, so no full-precision state is saved), the half hidden gates
      (``sigmoid_``'s results are views of them), the half clone of the new-gate chunk ``mul_``
      overwrites, the half new gate (``tanh_``) and the clone of ``h - n`` in the state's dtype.

    Per direction: ``T·B·I·g`` + ``T·B·(5H·g + H·s)`` + ``T·B·H·g`` (``g`` half, ``s`` the
    state's bytes), beside the weight casts.
    """
    steps, batch, size, hidden, dirs, elem = dims  # _rnn_dims(op), known
    items = _inp(op, 1) if op.grad(0) else []
    items += _inp(op, 2)
    for k in range(dirs):
        if op.act(0):
            items.append(_made(f"input cast dir {k}", steps * batch * size * gate))
        items += [
            _made(f"gates dir {k}", steps * batch * (5 * hidden * gate + hidden * elem)),
            _made(f"hidden state casts dir {k}", steps * batch * hidden * gate),
        ]
    return _done(items)


def _table() -> dict[tuple[str, str], tuple[Rule, str]]:
    t: dict[str, tuple[Rule, str]] = {}
    for op in (
        "Add", "Sub", "Neg", "Sum", "Mean", "Concat", "Split", "Slice", "Reshape", "Flatten",
        "Squeeze", "Unsqueeze", "Transpose", "Identity", "Expand", "Tile", "Pad", "Cast",
        "CastLike", "ReduceSum", "ReduceMean", "GlobalAveragePool", "Resize", "Upsample", "CumSum",
        "Trilu", "DepthToSpace", "SpaceToDepth", "Shape", "Size", "ConstantOfShape", "Range",
        "NonZero", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or",
        "Xor", "IsNaN", "IsInf", "Sign", "Floor", "Ceil", "Round", "ArgMax", "ArgMin", "OneHot",
        "EyeLike", "RandomNormalLike", "RandomUniformLike", "Bernoulli",
    ):
        t[op] = (zero, "zero")
    for op in ("Relu", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Exp", "Sqrt", "Reciprocal"):
        t[op] = (save_output, "counted")
    # Clip (ReLU6): hardtanh saves its input; in place, autograd first clones the input it will
    # overwrite, so the storages held are the same.
    for op in (
        "Erf", "Gelu", "Silu", "Log", "Abs", "Sin", "Cos", "Tan", "Atan", "LeakyRelu", "Elu", "Selu",
        "Celu", "Softplus", "Softsign", "HardSigmoid", "HardSwish", "Mish", "ThresholdedRelu",
        "ReduceSumSquare", "AveragePool", "Clip",
    ):
        t[op] = (save_inputs(0), "counted")
    # convolution_backward and _prelu_kernel_backward read input and weight (derivatives.yaml):
    # a parameter is a weight (not listed), autocast's half copy of it is held for backward
    for op in ("Conv", "ConvTranspose", "PRelu"):
        t[op] = (save_inputs(0, 1), "counted")
    for op in ("ReduceMax", "ReduceMin", "ReduceL2", "ReduceProd", "ReduceLogSumExp"):
        t[op] = (save_input_and_output, "counted")
    t.update(
        {
            "Mul": (operands, "counted"),
            "MatMul": (operands, "counted"),
            "Gemm": (operands, "counted"),
            "Max": (save_inputs(0, 1), "counted"),
            "Min": (save_inputs(0, 1), "counted"),
            "Div": (divide, "counted"),
            "Pow": (power, "counted"),
            "Where": (where, "counted"),
            "Gather": (gather, "counted"),
            "GatherElements": (gather_elements, "counted"),
            "ScatterND": (scatter, "counted"),
            "ScatterElements": (scatter, "counted"),
            "TopK": (topk, "counted"),
            "Dropout": (dropout, "counted"),
            "MaxPool": (max_pool, "counted"),
            "GlobalMaxPool": (max_pool, "counted"),
            "BatchNormalization": (batch_norm, "counted"),
            "LayerNormalization": (layer_norm, "counted"),
            "InstanceNormalization": (instance_norm, "counted"),
            "GroupNormalization": (group_norm, "counted"),
            "LSTM": (lstm, "counted"),
            "GRU": (gru, "counted"),
        }
    )
    return {("", op): entry for op, entry in t.items()}


#: The saved-tensor rules: ``(domain, op_type) -> (rule, general outcome)``.
RULES: OpTable[OpRule[Rule]] = OpTable({key: OpRule(rule=fn, outcome=kind) for key, (fn, kind) in _table().items()})


def saved_by(op: OpView, domain: str = "") -> Saved:
    """What autograd saves for one op (no rule: unsupported, assumed to save its inputs)."""
    if not any(op.grad(k) for k in range(len(op.inputs))):
        return Saved(outcome="zero", reason="no input needs a gradient")
    entry = RULES.lookup(domain, op.op_type)
    if entry is None:
        items = [
            i
            for k, name in enumerate(op.inputs)
            if (t := op.type(name)) is not None and is_float(t.dtype)
            for i in _inp(op, k)
        ]
        where = f"{domain}:{op.op_type}" if domain else op.op_type
        return Saved(outcome="unsupported", items=tuple(items), reason=f"no rule for {where}")
    return entry.rule(op)
