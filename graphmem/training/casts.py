"""Which dtype an exported ``Cast`` to float32 of a float32 tensor has under ``torch.autocast``.

A model traced in float32 writes three different Python calls as the same ``Cast(to=FLOAT)`` of a
float32 tensor, a no-op in the file:

* ``x.float()`` / ``x.to(torch.float32)``: float32 at run time too;
* ``x.to(y.dtype)`` / ``x.type(y.dtype)``: the tracer records ``y``'s dtype *at trace time*
  (float32); under autocast the call casts to ``y``'s run-time dtype, the half type when autocast
  made ``y`` half;
* ``F.softmax(x, dim, dtype=torch.float32)``: the exporter writes ``Softmax`` then ``Cast``
  (``torch/onnx/_internal/torchscript_exporter/symbolic_opset13.py``, ``softmax``), while ATen
  converts the *input* first and runs ``_softmax`` in float32 (``aten/src/ATen/native/
  SoftMax.cpp``, ``softmax(input_, dim_, dtype)``: ``input_.toType(dtype)`` on CPU).

The graph cannot say which call was written; two readings follow where a cast is used:

* :func:`follows_dtype` — a Cast whose result reaches nothing but the operand of a matmul (through
  Dropout and views) is read as ``x.to(v.dtype)`` with ``v`` that matmul's other operand: a fixed
  float32 cast there would be undone by autocast's own cast at the matmul, and ``x.to(v.dtype)``
  is how attention code keeps its probabilities in the matmul's dtype (transformers' GPT-2
  ``attn_weights.type(value.dtype)``, ViT/Llama ``softmax(..., dtype=torch.float32).to(query.dtype)``);
* :func:`softmax_in_float32` — a Softmax/LogSoftmax whose one consumer is a Cast to float32 that
  is not read so (ViT's first Cast, before ``.to(query.dtype)``) is ``softmax(x, dtype=float32)``:
  it computes, and saves, its result in float32.

Every other such Cast is taken as float32 and named in the estimate's warnings.
"""

from __future__ import annotations

import onnx
from onnx import TensorProto

from graphmem.model.dtypes import is_float
from graphmem.model.graph import OpGraph
from graphmem.model.types import TensorType
from graphmem.optable import is_default_domain
from graphmem.training.patterns import VIEW_OPS

__all__ = ["cast_warnings", "float32_noop_cast", "follows_dtype", "mask_warning", "softmax_in_float32"]

#: Ops autocast runs in the half type whose operands :func:`follows_dtype` reads.
_MATMULS = frozenset({"MatMul", "Gemm"})


def _to(node: onnx.NodeProto) -> int | None:
    return next((a.i for a in node.attribute if a.name == "to"), None)


def float32_noop_cast(node: onnx.NodeProto, types: dict[str, TensorType]) -> bool:
    """A ``Cast(to=FLOAT)`` of a tensor the file types float32 (a no-op when traced)."""
    if node.op_type != "Cast" or not is_default_domain(node.domain) or _to(node) != TensorProto.FLOAT:
        return False
    src = types.get(node.input[0]) if node.input else None
    return src is not None and src.dtype == TensorProto.FLOAT


def follows_dtype(g: OpGraph, node: onnx.NodeProto, types: dict[str, TensorType]) -> str | None:
    """The tensor whose run-time dtype the Cast ``node`` takes (``x.to(v.dtype)``), or None when
    it is read as a fixed cast. See the module doc: only a :func:`float32_noop_cast` whose result
    reaches matmul operands alone, through Dropout (its output) and views, is so read; ``v`` is the
    first such matmul's other operand."""
    if not float32_noop_cast(node, types):
        return None
    outputs = set(g.model.outputs)
    frontier, other = [node.output[0]], None
    while frontier:
        x = frontier.pop()
        if x in outputs or not g.consumers.get(x):
            return None  # the user reads it, or nothing does: no matmul decides its dtype
        for nid in g.consumers[x]:
            c = g.node(nid)
            if not is_default_domain(c.domain):
                return None
            if c.op_type in _MATMULS and x in c.input[:2] and c.input[0] != c.input[1]:
                if other is None:
                    other = c.input[1] if c.input[0] == x else c.input[0]
            elif (c.op_type in VIEW_OPS or c.op_type == "Dropout") and c.input[0] == x:
                frontier.append(c.output[0])
            else:
                return None
    return other


def softmax_in_float32(g: OpGraph, node: onnx.NodeProto, types: dict[str, TensorType]) -> bool:
    """Is the Softmax/LogSoftmax ``node`` ``softmax(x, dtype=torch.float32)``: its one consumer a
    :func:`float32_noop_cast` that :func:`follows_dtype` does not read as ``x.to(v.dtype)``?"""
    if node.op_type not in ("Softmax", "LogSoftmax") or not is_default_domain(node.domain):
        return False
    y = node.output[0]
    users = g.consumers.get(y, ())
    if y in g.model.outputs or len(users) != 1:
        return False
    cast = g.node(users[0])
    return float32_noop_cast(cast, types) and follows_dtype(g, cast, types) is None


def cast_warnings(g: OpGraph, nodes: list[onnx.NodeProto], types: dict[str, TensorType]) -> list[str]:
    """The estimate's warnings on the :func:`float32_noop_cast` nodes among ``nodes``: how many
    were read from their use (an assumption: the graph cannot tell them from ``x.float()``) and
    how many were taken as float32."""
    noop = [n for n in nodes if float32_noop_cast(n, types)]
    follow = [n for n in noop if follows_dtype(g, n, types) is not None]
    soft = [
        n for n in noop if n.input[0] in g.producer and softmax_in_float32(g, g.node(g.producer[n.input[0]]), types)
    ]
    fixed = [n for n in noop if n not in follow and n not in soft]

    def name(n: onnx.NodeProto) -> str:
        return n.name or n.output[0]

    lines = []
    if follow or soft:
        read = []
        if follow:
            read.append(
                f"{len(follow)} before a matmul as x.to(v.dtype), v its other operand (e.g. '{name(follow[0])}')"
            )
        if soft:
            read.append(f"{len(soft)} after a Softmax as softmax(x, dtype=float32), computed and saved in float32 "
                        f"(e.g. '{name(soft[0])}')")
        lines.append(f"autocast: Cast(s) to float32 of a float32 tensor read from their use: {'; '.join(read)}; "
                     "a model that wrote x.float() there runs otherwise")
    if fixed:
        # the exporter writes x.to(y.dtype) / x.type(y.dtype) as Cast(to=y's traced dtype)
        lines.append(
            f"autocast: {len(fixed)} Cast(s) to float32 of a float32 tensor (e.g. '{name(fixed[0])}'): if the "
            "model wrote x.to(y.dtype), PyTorch casts to y's dtype at run time, the half type when "
            "autocast made y half; taken as float32"
        )
    return lines


def _reads_values_of(g: OpGraph, name: str) -> str | None:
    """The integer graph input whose *values* (not only its shape) ``name`` is computed from."""
    inputs = g.model.inputs
    seen, stack = set(), [name]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        if x in inputs:
            t = inputs[x]
            if t.dtype is not None and not is_float(t.dtype):
                return x
            continue
        node = g.node(g.producer[x]) if x in g.producer else None
        if node is not None and node.op_type not in ("Shape", "Size"):
            stack.extend(i for i in node.input if i)
    return None


def mask_warning(g: OpGraph, ops: list[tuple[str, str, tuple[str, ...]]], types: dict[str, TensorType],
                 half: int) -> str | None:
    """A warning on the first Add (``(label, output, inputs)`` under autocast ``types``) that
    promotes half attention scores to float32 with a float32 mask computed from an integer input's
    values, before a Softmax: transformers builds no such mask when no token is padded
    (``masking_utils.sdpa_mask``: ``allow_is_bidirectional_skip``, ``_ignore_bidirectional_mask_sdpa``,
    a Python branch on ``padding_mask.all()`` the trace does not record), and the scores, the
    Softmax and its saved result then stay half."""
    for label, out, inputs in ops:
        if not any(g.node(c).op_type == "Softmax" for c in g.consumers.get(out, ())):
            continue
        dtypes = [types[x].dtype if x in types else None for x in inputs]
        if types.get(out) is None or types[out].dtype != TensorProto.FLOAT or half not in dtypes:
            continue
        source = next((s for x, d in zip(inputs, dtypes) if d == TensorProto.FLOAT
                       and (s := _reads_values_of(g, x)) is not None), None)
        if source is not None:
            return (f"autocast: Add '{label}' adds a float32 mask computed from input '{source}' to half "
                    "attention scores: they, the Softmax and its saved result are float32; a model that "
                    "builds no mask when no token is padded (transformers' bidirectional masks: "
                    "masking_utils.sdpa_mask, allow_is_bidirectional_skip) keeps them half (measured: "
                    "BERT-base, batch 1, an all-ones attention_mask: saved 3.8% less)")
    return None
