"""Inputs onnxruntime's CPU kernels refuse at run time although onnx's shape inference takes them.

onnx's per-node inference gives ``Gather(table [128, 64], ids [1, 200])`` the shape
``[1, 200, 64]`` whatever the ids hold, a ``Conv`` of a 4-wide input by a 5-wide kernel a 0-wide
output, a ``Reshape`` of 12 elements the 16-element target it names. onnxruntime's kernels check
what inference does not, and fail when the session runs ("indices element out of data bounds",
"Invalid input shape", "The input tensor cannot be reshaped to the requested shape"): figures for
such a binding describe a run that cannot happen. Each rule below is one kernel's own check, on
the node's concrete input shapes and the values graphmem knows; it gives the reason in one
phrase, or None when the kernel runs. Rules were confirmed against onnxruntime 1.31 sessions
(``tests/ort/test_refusals.py``; ``scripts/binding_failures.py``); each cites its kernel.

Index values are known exactly (small tensors, :mod:`graphmem.shapes.infer`) or by their least
and greatest element (:func:`index_span`): GPT-2's position ids are ``Range(0, seq, 1)``, whose
span is known at any ``seq`` without its values. A rule is *ranged* when the values of a dim it
takes form one interval (a table's rows bound ``seq`` from above, a kernel's width bounds ``h``
from below): :func:`graphmem.analysis.causes.check_runnable` then searches that interval;
equalities and divisibilities are said in the reason instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper

from graphmem.model.dtypes import is_integer
from graphmem.model.graph import OpGraph
from graphmem.model.types import TensorType, is_concrete
from graphmem.optable import MS_DOMAIN, NCHWC_DOMAIN, OpTable, is_default_domain

__all__ = ["Span", "NodeInputs", "Check", "CHECKS", "node_inputs", "refusal", "index_span"]

#: (least, greatest) element of an integer tensor.
Span = tuple[int, int]
Shape = tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeInputs:
    """A node's inputs as its rule sees them: concrete shapes (None: unknown or omitted), known
    values, and the span of an integer input (``span(i)``: None when not known)."""

    shapes: tuple[Shape | None, ...]
    values: tuple[np.ndarray | None, ...]
    span: Callable[[int], Span | None]

    def shape(self, i: int) -> Shape | None:
        return self.shapes[i] if i < len(self.shapes) else None

    def value(self, i: int) -> np.ndarray | None:
        return self.values[i] if i < len(self.values) else None


Rule = Callable[[onnx.NodeProto, NodeInputs], "str | None"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """A kernel's run-time check; ``ranged``: the values of a dim it takes form an interval."""

    rule: Rule
    ranged: bool


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:  # onnx.helper.get_attribute_value gives Any
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _axis(node: onnx.NodeProto, rank: int, default: int = 0) -> int:
    axis = int(_attrs(node).get("axis", default))
    return axis + rank if axis < 0 else axis


def _outside(span: Span | None, n: int, where: str) -> str | None:
    """The phrase for indices outside ``[-n, n-1]`` (onnxruntime takes negative indices from the end)."""
    if span is None:
        return None
    lo, hi = span
    if lo >= -n and hi <= n - 1:
        return None
    bad = hi if hi > n - 1 else lo
    return f"its indices reach {bad}, outside [{-n}, {n - 1}] ({where})"


# --- indices: core/providers/cpu/tensor/gather.cc, gather_elements.cc, gather_nd.cc, scatter.cc, scatter_nd.cc


def _gather(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # gather.cc GatherCopyData: "indices element out of data bounds, idx=… must be within the inclusive range"
    data, idx = x.shape(0), x.shape(1)
    if data is None or idx is None or not data or math.prod(idx) == 0:
        return None
    axis = _axis(node, len(data))
    return _outside(x.span(1), data[axis], f"axis {axis} of its data {list(data)}")


def _elements(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # gather_elements.cc ValidateInputShapes: indices' dims other than axis within data's; core_impl:
    # "Out of range value in index tensor". scatter.cc ScatterElements: "Indices dim=… at pos=… is
    # greater than input dim", "Indices vs updates dimensions differs", "indices element out of data bounds"
    data, idx = x.shape(0), x.shape(1)
    if data is None or idx is None or len(data) != len(idx) or not data:
        return None
    axis = _axis(node, len(data))
    for j, (d, i) in enumerate(zip(data, idx)):
        if j != axis and i > d:
            return f"its indices {list(idx)} are longer than its data {list(data)} on axis {j}"
    updates = x.shape(2)
    if node.op_type != "GatherElements" and updates is not None and updates != idx:
        return f"its indices {list(idx)} and updates {list(updates)} differ in shape"
    if math.prod(idx) == 0:
        return None
    return _outside(x.span(1), data[axis], f"axis {axis} of its data {list(data)}")


def _nd(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # gather_nd.cc PrepareForCompute: "invalid index found, index = …"; scatter_nd.cc: "invalid indice
    # found", and "updates tensor should have shape equal to indices.shape[:-1] + data.shape[indices.shape[-1]:]"
    data, idx = x.shape(0), x.shape(1)
    if data is None or idx is None or not idx:
        return None
    batch = int(_attrs(node).get("batch_dims", 0)) if node.op_type == "GatherND" else 0
    k = idx[-1]
    if batch + k > len(data):
        return None  # a rank error onnx's inference reports
    updates = x.shape(2)
    if node.op_type == "ScatterND" and updates is not None and updates != idx[:-1] + data[k:]:
        return (f"its updates {list(updates)} are not indices.shape[:-1] + data.shape[{k}:] = "
                f"{list(idx[:-1] + data[k:])}")
    if math.prod(idx) == 0 or k == 0:
        return None
    dims = data[batch:batch + k]
    values = x.value(1)
    if values is not None and values.size:
        columns = np.asarray(values).reshape(-1, k)
        for j, n in enumerate(dims):
            found = _outside(
                (int(columns[:, j].min()), int(columns[:, j].max())), n, f"axis {batch + j} of its data {list(data)}"
            )
            if found:
                return found
        return None
    span = x.span(1)  # the extreme element lies in some column: out of range if outside the longest axis
    axes = f"axis {batch}" if k == 1 else f"axes {batch}..{batch + k - 1}"
    return _outside(span, max(dims), f"{axes} of its data {list(data)}")


# --- windows: core/providers/cpu/nn/conv_attributes.h, conv_transpose_attributes.h, pool_attributes.h


@dataclass(frozen=True, slots=True, kw_only=True)
class _Window:
    """A sliding window's attributes along each spatial axis (pads 0 unless auto_pad is NOTSET)."""

    mode: str  # auto_pad: NOTSET, VALID, SAME_UPPER, SAME_LOWER
    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    pads: list[int]  # begins then ends

    def sliding(self, d: int, size: int) -> str:
        rank = len(self.kernel)
        pads = f"pads {self.pads[d]}+{self.pads[d + rank]}" if self.mode == "NOTSET" else f"auto_pad {self.mode}"
        return f"input {size}, {pads}, kernel {self.kernel[d]}, dilation {self.dilations[d]}, stride {self.strides[d]}"


def _window(node: onnx.NodeProto, kernel: Sequence[int]) -> _Window:
    a, rank = _attrs(node), len(kernel)
    mode = a.get("auto_pad", "NOTSET")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    pads = list(a.get("pads") or [0] * (2 * rank)) if mode == "NOTSET" else [0] * (2 * rank)
    return _Window(
        mode=mode,
        kernel=list(kernel),
        strides=list(a.get("strides") or [1] * rank),
        dilations=list(a.get("dilations") or [1] * rank),
        pads=pads,
    )


def _too_small(w: _Window, d: int, size: int, out: int) -> str:
    return f"its output's spatial dim {d} would be {out} ({w.sliding(d, size)})"


def _conv(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # conv_attributes.h ValidateInputShape ("Input channels C is not equal to kernel channels *
    # group") and InferOutputShape ("Invalid input shape": an output dim <= 0). onnxruntime 1.31
    # computes NOTSET and VALID as (float)(in + pads - dilated kernel) / stride + 1, truncated
    # (measured: VALID, in 2, kernel 3, stride 2 fails), SAME as ceil(in / stride)
    xs, ws = x.shape(0), x.shape(3 if node.op_type == "QLinearConv" else 1)
    if xs is None or ws is None or len(xs) != len(ws) or len(xs) < 3:
        return None
    group = int(_attrs(node).get("group", 1))
    if node.domain != NCHWC_DOMAIN and xs[1] != ws[1] * group:  # NCHWc pads both to its block size
        return f"its input has {xs[1]} channels, its weight {list(ws)} takes {ws[1] * group} (group {group})"
    w = _window(node, _attrs(node).get("kernel_shape") or ws[2:])
    rank = len(w.kernel)
    for d, size in enumerate(xs[2:]):
        if w.mode.startswith("SAME"):
            out = -(-size // w.strides[d])
        else:
            dk = w.dilations[d] * (w.kernel[d] - 1) + 1
            out = math.trunc(float(size + w.pads[d] + w.pads[d + rank] - dk) / w.strides[d] + 1)
        if out <= 0:
            return _too_small(w, d, size, out)
    return None


def _conv_transpose(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # conv_transpose_attributes.h PrepareForCompute: "filter number not equal to input channel
    # number"; ComputePadsAndOutputShape: "Computed output dimension is <= 0" (1.31, measured:
    # NOTSET and VALID (in - 1) * stride + dilated kernel + output_padding - pads, SAME in * stride)
    xs, ws = x.shape(0), x.shape(1)
    if xs is None or ws is None or len(xs) != len(ws) or len(xs) < 3:
        return None
    if ws[0] != xs[1]:
        return f"its input has {xs[1]} channels, its weight {list(ws)} takes {ws[0]}"
    a = _attrs(node)
    if a.get("output_shape"):
        return None
    w = _window(node, a.get("kernel_shape") or ws[2:])
    rank = len(w.kernel)
    adj = list(a.get("output_padding") or [0] * rank)
    for d, size in enumerate(xs[2:]):
        if w.mode.startswith("SAME"):
            out = size * w.strides[d]
        else:
            dk = w.dilations[d] * (w.kernel[d] - 1) + 1
            out = (size - 1) * w.strides[d] + dk + adj[d] - w.pads[d] - w.pads[d + rank]
        if out <= 0:
            return _too_small(w, d, size, out)
    return None


def _pool(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # pool_attributes.h SetOutputSize: "Invalid input shape. Only N can be zero" (global pools
    # too); ComputeOutputSize: "Calculated output dimension is negative" ((float)(in + pads -
    # dilated kernel) / stride + 1, truncated or ceiled; an output dim of 0 runs: an empty tensor)
    xs = x.shape(0)
    if xs is None or len(xs) < 3:
        return None
    if math.prod(xs) == 0 and xs[0] != 0:
        return f"its input {list(xs)} is empty (only N may be 0)"
    kernel = _attrs(node).get("kernel_shape") or []
    if len(kernel) != len(xs) - 2:
        return None  # a global pool, or a kernel onnx's checker refuses
    w = _window(node, kernel)
    rank = len(w.kernel)
    ceil_mode = int(_attrs(node).get("ceil_mode", 0))
    for d, size in enumerate(xs[2:]):
        pads = w.pads[d] + w.pads[d + rank]
        if w.mode.startswith("SAME"):
            pads = (-(-size // w.strides[d]) - 1) * w.strides[d] + w.kernel[d] - size
        ratio = float(size + pads - w.dilations[d] * (w.kernel[d] - 1) - 1) / w.strides[d] + 1
        out = math.ceil(ratio) if ceil_mode else math.trunc(ratio)
        if out < 0:
            return _too_small(w, d, size, out)
    return None


# --- sizes that must agree: reshape_helper.h, split.cc, pad.cc, layer_norm_helper.h, ...


def _reshape(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # reshape_helper.h ReshapeHelper: "The input tensor cannot be reshaped to the requested shape"
    # (onnx infers a target without -1 as given, whatever the input's size). The target is read
    # from the shape's values, as the kernel reads it (0 copies the input's dim unless allowzero)
    xs, target = x.shape(0), x.value(1)
    if xs is None or target is None:
        return None
    dims = [int(v) for v in np.asarray(target).reshape(-1)]
    allowzero = int(_attrs(node).get("allowzero", 0))
    if (
        -1 in dims
        or any(d < -1 for d in dims)
        or (not allowzero and any(d == 0 and i >= len(xs) for i, d in enumerate(dims)))
    ):
        return None  # inferred, or refused by onnx's inference (an unresolved cause)
    ys = [xs[i] if d == 0 and not allowzero else d for i, d in enumerate(dims)]
    if math.prod(xs) == math.prod(ys):
        return None
    return f"its input {list(xs)} has {math.prod(xs):,} elements, the shape {ys} {math.prod(ys):,}"


def _split(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # split.cc PrepareForCompute: "Invalid num_outputs value of …", "Split size … exceeds the
    # remaining size": chunks of ceil(n / k), the last one not empty
    xs = x.shape(0)
    k = _attrs(node).get("num_outputs")
    if xs is None or not xs or k is None or (len(node.input) > 1 and node.input[1]):
        return None
    n = xs[_axis(node, len(xs))]
    k = int(k)
    if n < k or n <= (k - 1) * -(-n // k):
        return f"its axis of {n} cannot be split in {k} chunks of ceil({n}/{k}) with a last one not empty"
    return None


def _pad(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # pad.cc: an output dim < 0 fails allocating it; edge and reflect cannot pad an empty axis,
    # nor one sliced empty; reflect needs pads <= length - 1 on the sliced axis; wrap cannot take
    # an empty input (measured on 1.31: "Unexpected mode of 3")
    xs = x.shape(0)
    a = _attrs(node)
    mode = a.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if xs is None:
        return None
    if "pads" in a:
        pads = [int(p) for p in a["pads"]]
    elif len(node.input) > 1 and x.value(1) is not None:
        pads = [int(p) for p in np.asarray(x.value(1)).reshape(-1)]
    else:
        return None
    rank = len(xs)
    axes = list(range(rank))
    if len(node.input) > 3 and node.input[3]:
        given = x.value(3)
        if given is None:
            return None
        axes = [int(v) + rank if int(v) < 0 else int(v) for v in np.asarray(given).reshape(-1)]
    if len(pads) != 2 * len(axes):
        return None
    if mode == "wrap" and math.prod(xs) == 0:
        return f"wrap padding cannot take its empty input {list(xs)}"
    for j, axis in enumerate(axes):
        n, pre, post = xs[axis], pads[j], pads[j + len(axes)]
        if n + pre + post < 0:
            return f"its output's axis {axis} would be {n + pre + post} ({n} padded by {pre}+{post})"
        if mode == "constant" or (pre == 0 and post == 0):
            continue
        if n == 0:
            return f"{mode} padding cannot take its empty axis {axis}"
        kept = n + min(pre, 0) + min(post, 0)
        if kept <= 0:
            return f"{mode} padding cannot take its axis {axis} sliced to {kept} by pads {pre}+{post}"
        if mode == "reflect" and max(pre, post) > 0 and (kept < 2 or max(pre, post) > kept - 1):
            return (f"reflect padding of {max(pre, post)} needs at least {max(pre, post) + 1} entries on axis {axis}, "
                    f"it has {kept}")
    return None


def _layer_norm(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # layer_norm_helper.h CheckInputs: "Size of X.shape[axis:] must be at least 1"; scale and bias
    # right-aligned to X, each dim 1 or X's ("must match X.shape[axis:] or be NumPy-broadcastable to it")
    xs = x.shape(0)
    if xs is None or not xs:
        return None
    axis = _axis(node, len(xs), -1)
    if math.prod(xs[axis:]) < 1:
        return f"its input {list(xs)} has no elements from axis {axis}"
    for i, what in ((1, "scale"), (2, "bias")):
        s = x.shape(i)
        if s is None:
            continue
        aligned = (1,) * (len(xs) - len(s)) + tuple(s)
        if len(s) > len(xs) or any(d != 1 and d != e for d, e in zip(aligned, xs)):
            return f"its {what} {list(s)} does not broadcast to its input {list(xs)}"
    return None


def _instance_norm(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # instance_norm_helper.h ValidateInputs: "Mismatch between input data and scale: size of scale != input channel
    # count"
    xs = x.shape(0)
    if xs is None or len(xs) < 2:
        return None
    for i, what in ((1, "scale"), (2, "B")):
        s = x.shape(i)
        if s is not None and (len(s) != 1 or s[0] != xs[1]):
            return f"its {what} {list(s)} does not have the {xs[1]} channels of its input {list(xs)}"
    return None


def _depth_to_space(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # space_depth_ops.cc: "DepthToSpace requires input depth to be a multiple of (block_size * block_size)",
    # "SpaceToDepth requires input height (width) to be a multiple of block_size"
    xs = x.shape(0)
    b = int(_attrs(node).get("blocksize", 1))
    if xs is None or len(xs) != 4 or b < 1:
        return None
    if node.op_type == "DepthToSpace" and xs[1] % (b * b):
        return f"its {xs[1]} channels are not a multiple of blocksize² = {b * b}"
    if node.op_type == "SpaceToDepth":
        for d, what in ((2, "height"), (3, "width")):
            if xs[d] % b:
                return f"its {what} {xs[d]} is not a multiple of blocksize {b}"
    return None


def _einsum(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # einsum_utils/einsum_compute_preprocessor.cc: a subscript's dims must agree across operands
    # (1 broadcasts): "Einsum operands could not be broadcast together"
    equation = _attrs(node).get("equation", b"")
    equation = (equation.decode() if isinstance(equation, bytes) else str(equation)).replace(" ", "")
    terms = equation.split("->")[0].split(",")
    if "." in equation or len(terms) != len(node.input):
        return None
    seen: dict[str, tuple[int, int]] = {}
    for k, term in enumerate(terms):
        s = x.shape(k)
        if s is None or len(s) != len(term):
            return None
        for letter, d in zip(term, s):
            if d == 1:
                continue
            if letter in seen and seen[letter][0] != d:
                return f"subscript '{letter}' is {seen[letter][0]} in operand {seen[letter][1]} and {d} in operand {k}"
            seen.setdefault(letter, (d, k))
    return None


def _arg_reduce(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # reduction_ops.cc: ArgMax/ArgMin over an axis of 0 with a non-empty output fail with an
    # empty message (measured on 1.31: [2, 0] on axis 1 fails, on axis 0 ([1, 0]: empty) runs)
    xs = x.shape(0)
    if xs is None or not xs:
        return None
    axis = _axis(node, len(xs))
    if xs[axis] == 0 and math.prod(d for j, d in enumerate(xs) if j != axis) > 0:
        return f"it reduces axis {axis} of {list(xs)}, which is empty, to a non-empty output"
    return None


def _recurrent(node: onnx.NodeProto, x: NodeInputs) -> str | None:
    # deep_cpu_lstm.cc, deep_cpu_gru.cc: measured on 1.31, an LSTM of batch 0 and a GRU of batch
    # or sequence 0 abort the process ("terminate called without an active exception"); RNN runs.
    # X is [seq, batch, input] (layout 1 is refused when the session loads)
    xs = x.shape(0)
    if xs is None or len(xs) != 3:
        return None
    if xs[1] == 0:
        return f"its input {list(xs)} has batch 0: onnxruntime's {node.op_type} aborts the process"
    if node.op_type == "GRU" and xs[0] == 0:
        return f"its input {list(xs)} has sequence 0: onnxruntime's GRU aborts the process"
    return None


_DEFAULT: dict[str, Check] = {
    "Gather": Check(rule=_gather, ranged=True),
    "GatherElements": Check(rule=_elements, ranged=True),
    "ScatterElements": Check(rule=_elements, ranged=True),
    "Scatter": Check(rule=_elements, ranged=True),
    "GatherND": Check(rule=_nd, ranged=True),
    "ScatterND": Check(rule=_nd, ranged=True),
    "Conv": Check(rule=_conv, ranged=True),
    "ConvInteger": Check(rule=_conv, ranged=True),
    "QLinearConv": Check(rule=_conv, ranged=True),
    "ConvTranspose": Check(rule=_conv_transpose, ranged=True),
    "MaxPool": Check(rule=_pool, ranged=True),
    "AveragePool": Check(rule=_pool, ranged=True),
    "LpPool": Check(rule=_pool, ranged=True),
    "GlobalAveragePool": Check(rule=_pool, ranged=True),
    "GlobalMaxPool": Check(rule=_pool, ranged=True),
    "GlobalLpPool": Check(rule=_pool, ranged=True),
    "ArgMax": Check(rule=_arg_reduce, ranged=True),
    "ArgMin": Check(rule=_arg_reduce, ranged=True),
    "Reshape": Check(rule=_reshape, ranged=False),
    "Split": Check(rule=_split, ranged=False),
    "Pad": Check(rule=_pad, ranged=True),
    "LayerNormalization": Check(rule=_layer_norm, ranged=False),
    "InstanceNormalization": Check(rule=_instance_norm, ranged=False),
    "DepthToSpace": Check(rule=_depth_to_space, ranged=False),
    "SpaceToDepth": Check(rule=_depth_to_space, ranged=False),
    "Einsum": Check(rule=_einsum, ranged=False),
    "LSTM": Check(rule=_recurrent, ranged=True),
    "GRU": Check(rule=_recurrent, ranged=True),
}

#: The run-time checks, by (domain, op_type): the ONNX ops, and the fused and NCHWc forms
#: onnxruntime's optimizers give Conv and the pools (``--graph-opt``; the same attributes).
CHECKS: OpTable[Check] = OpTable(
    {("", op): c for op, c in _DEFAULT.items()},
    {(MS_DOMAIN, "FusedConv"): _DEFAULT["Conv"], (NCHWC_DOMAIN, "Conv"): _DEFAULT["Conv"],
     (NCHWC_DOMAIN, "MaxPool"): _DEFAULT["MaxPool"], (NCHWC_DOMAIN, "AveragePool"): _DEFAULT["AveragePool"]},
)


def node_inputs(g: OpGraph, nid: int, types: Mapping[str, TensorType], values: Mapping[str, np.ndarray],
                spans: dict[str, Span | None] | None = None) -> NodeInputs:
    """Node ``nid``'s inputs under ``types`` and ``values``; ``spans``
    memoizes :func:`index_span` across nodes."""
    node = g.node(nid)
    memo = {} if spans is None else spans

    def concrete(name: str) -> Shape | None:
        t = types.get(name) if name else None
        return tuple(t.shape) if t is not None and t.kind == "tensor" and is_concrete(t.shape) else None

    return NodeInputs(
        shapes=tuple(concrete(n) for n in node.input),
        values=tuple(values.get(n) if n else None for n in node.input),
        span=lambda i: (
            index_span(g, types, values, node.input[i], memo) if i < len(node.input) and node.input[i] else None
        ),
    )


def refusal(g: OpGraph, nid: int, types: Mapping[str, TensorType], values: Mapping[str, np.ndarray],
            spans: dict[str, Span | None] | None = None) -> str | None:
    """Why onnxruntime's kernel refuses node ``nid`` at these shapes and values (None: it runs,
    or graphmem cannot tell: an input of unknown shape is never a refusal)."""
    check = CHECKS.of(g.node(nid))
    if check is None:
        return None
    return check.rule(g.node(nid), node_inputs(g, nid, types, values, spans))


#: Ops whose output holds exactly the elements of their input 0 (when not empty): its span.
_SAME_ELEMENTS = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Transpose", "Expand", "Cast"})


def index_span(g: OpGraph, types: Mapping[str, TensorType], values: Mapping[str, np.ndarray], name: str,
               memo: dict[str, Span | None]) -> Span | None:
    """The least and greatest element of the integer tensor ``name``: from its values when known;
    else from ``Range`` with known start, limit and delta (any length); through the ops that
    keep their input's elements (views, Expand, an integer Cast) and an Add or Sub of a known
    one-element value. None when not known exactly (an empty tensor has no span)."""
    if name in memo:
        return memo[name]
    memo[name] = None  # a cycle cannot happen in a DAG; this also bounds the recursion's work
    t = types.get(name)
    v = values.get(name)
    span: Span | None = None
    if t is None or not t.dtype or not is_integer(t.dtype):
        pass
    elif v is not None:
        span = (int(v.min()), int(v.max())) if v.size else None
    elif is_concrete(t.shape) and math.prod(t.shape) > 0 and name in g.producer:
        node = g.node(g.producer[name])
        if is_default_domain(node.domain):
            span = _span_of(g, node, types, values, memo)
    memo[name] = span
    return span


def _span_of(g, node, types, values, memo) -> Span | None:
    op, ins = node.op_type, [x for x in node.input]
    if op == "Range" and len(ins) == 3:
        known = [values.get(x) for x in ins]
        if any(k is None or k.size != 1 or not np.issubdtype(k.dtype, np.integer) for k in known):
            return None
        start, limit, delta = (int(np.asarray(k).reshape(-1)[0]) for k in known)
        count = max(-(-(limit - start) // delta), 0) if delta else 0
        if count <= 0:
            return None
        last = start + (count - 1) * delta
        return (min(start, last), max(start, last))
    if op in _SAME_ELEMENTS and ins and ins[0]:
        return index_span(g, types, values, ins[0], memo)
    if op in ("Add", "Sub") and len(ins) == 2:
        for k in (0, 1):
            c = values.get(ins[k])
            if c is None or c.size != 1 or not np.issubdtype(c.dtype, np.integer):
                continue
            other = index_span(g, types, values, ins[1 - k], memo)
            if other is None:
                return None
            shift = int(np.asarray(c).reshape(-1)[0])
            if op == "Add":
                return (other[0] + shift, other[1] + shift)
            return (other[0] - shift, other[1] - shift) if k == 1 else (shift - other[1], shift - other[0])
    return None
