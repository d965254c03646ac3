"""The graph as PyTorch runs it: one op per kernel, views that share storage.

An exported graph spells some PyTorch kernels out as several ONNX nodes, and some ONNX nodes
are not kernels at all:

* **fused ops** — ``F.gelu`` exports as ``Div → Erf → Add → Mul → Mul`` (exact) or as a chain of
  ``Mul``/``Add``/``Tanh`` (``approximate="tanh"``; ``torch/onnx/…/symbolic_opset9.py``, ``gelu``)
  but autograd sees one op that saves its input. Those exact exporter patterns become one
  :class:`Op` of type ``Gelu``; their intermediates are never materialised. A tanh-GELU written
  out in Python (GPT-2's ``gelu_new``, with ``Pow``) is *not* fused: PyTorch runs, and saves
  for, every one of its ops. Likewise ``F.silu`` exports as ``Mul(x, Sigmoid(x))``, ``F.mish``
  (before opset 18) as ``Mul(x, Tanh(Softplus(x)))`` and ``F.hardswish`` (before opset 14) as
  ``Mul(x, HardSigmoid(x))``: each is one op (``Silu``, ``Mish``, ``HardSwish``) saving x. The
  same nodes written by hand in Python would be several ops in PyTorch; the ONNX graph cannot
  tell them apart, so the exporter's reading is taken.
* **views** — Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Identity, Expand, Slice, Split, a
  ``Gather`` of one index (``select``), a Cast to the same type and an inactive Dropout return a
  view in PyTorch: no new storage. Saved tensors are counted by storage, so a view saved by one
  op and its base saved by another count once.
* **bias add** — ``MatMul`` by a weight then ``Add`` of a weight is one ``addmm`` (``F.linear``):
  the Add writes into the MatMul's storage.
* **weight preprocessing** (:func:`~graphmem.training.classify.weight_only_nodes`) is dropped.

Two maps the rules read: :func:`storage_roots` (a view → the tensor owning its storage) and
:func:`memory_orders` (tensors PyTorch lays out non-contiguously: permuted views, channels-last
results), which decide copies (LayerNorm's, a GRU's input) and oneDNN's nhwc kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import onnx

from graphmem.model.graph import OpGraph
from graphmem.model.types import Shape, TensorType
from graphmem.optable import VIEW_OPS as ONNX_VIEW_OPS
from graphmem.optable import OpTable, domain_table, normalize_domain

__all__ = [
    "Op", "torch_ops", "view_input", "dropout_active", "dropout_training", "batch_norm_training",
    "inference_export_evidence", "storage_roots", "memory_orders", "VIEW_OPS", "FOLDED_CONV_PREFIX",
    "bias_after_matmul",
]

#: Ops whose outputs are views of input 0 in PyTorch: the ONNX views, and the ops aten returns as
#: views (transpose/permute, expand, slice/narrow, split).
VIEW_OPS = frozenset({*ONNX_VIEW_OPS, "Transpose", "Expand", "Slice", "Split"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Op:
    """One op as PyTorch runs it: an ONNX node, or a fused group standing for one kernel."""

    nid: int  # the node it is (for a fused group: its last node)
    op_type: str
    domain: str
    inputs: tuple[str, ...]  # "" marks an omitted optional input
    outputs: tuple[str, ...]
    node: onnx.NodeProto
    members: tuple[int, ...]  # node ids it stands for
    hidden: tuple[str, ...] = ()  # intermediates of a fused group: never materialised

    @property
    def label(self) -> str:
        return self.node.name or f"{self.op_type}_{self.nid}"


def torch_ops(g: OpGraph, order: Iterable[int], weight_only: frozenset[int]) -> tuple[Op, ...]:
    """The ops PyTorch runs, in ``order``: weight preprocessing dropped, exporter patterns of one
    kernel (GELU, SiLU, Hardswish, Mish) fused."""
    fused = _find_fused(g, weight_only)
    ops: list[Op] = []
    for nid in order:
        if nid in weight_only:
            continue
        group = fused.get(nid)
        if group is not None:
            if nid == group.nid:
                ops.append(group)
            continue
        node = g.node(nid)
        ops.append(
            Op(
                nid=nid,
                op_type=node.op_type,
                domain=normalize_domain(node.domain),
                inputs=tuple(node.input),
                outputs=tuple(node.output),
                node=node,
                members=(nid,),
            )
        )
    return tuple(ops)


def dropout_training(g: OpGraph, node: onnx.NodeProto) -> bool:
    """True when a Dropout node is in training mode (whatever its ratio).

    Opset ≥ 12 reads the ``training_mode`` input (absent: inference); older opsets have no flag
    and count as training when the mask output is present.
    """
    values = g.model.values
    if g.model.opset < 12:
        return len(node.output) > 1 and bool(node.output[1])
    mode = node.input[2] if len(node.input) > 2 else ""
    return bool(mode) and mode in values and bool(values[mode].reshape(-1)[0])


def dropout_active(g: OpGraph, node: onnx.NodeProto) -> bool:
    """True when a Dropout node drops: training mode (:func:`dropout_training`), ratio above 0."""
    if not dropout_training(g, node):
        return False
    values = g.model.values
    ratio = node.input[1] if len(node.input) > 1 else ""
    zero = bool(ratio) and ratio in values and float(values[ratio].reshape(-1)[0]) == 0.0
    return not (g.model.opset >= 12 and zero)


def batch_norm_training(node: onnx.NodeProto) -> bool:
    """True when a BatchNormalization node is in training mode: ``training_mode=1`` (opset ≥ 14)
    or, in any opset, an output beyond Y (the running or saved statistics, written only when
    training)."""
    flag = any(a.name == "training_mode" and a.i for a in node.attribute)
    return flag or any(node.output[1:])


#: Initializer names of PyTorch's TorchScript exporter for a Conv weight and bias it computed
#: itself: a BatchNorm fused into the Conv by ``_jit_pass_onnx_eval_peephole``, which runs only
#: for ``TrainingMode.EVAL`` with constant folding (``torch/onnx/_internal/torchscript_exporter/
#: utils.py``, ``_model_to_graph``); a parameter keeps its module name (``conv1.weight``).
FOLDED_CONV_PREFIX = "onnx::Conv_"


def inference_export_evidence(g: OpGraph, ops: Iterable[Op]) -> str | None:
    """Why the graph looks like an inference export, or None when nothing says so.

    Evidence: a BatchNormalization or a Dropout in inference mode, or a Conv whose weight and bias
    the exporter folded (a BatchNorm fused into it in eval mode). None when any BatchNormalization
    or Dropout is in training mode (the exporter ran in training mode; modules a user froze with
    ``.eval()`` then stay as they were), and when the graph has neither kind of evidence: a
    training export of a model without Dropout or BatchNorm (ConvNeXt, ViT, an LSTM) is the
    same graph as its inference export.
    """
    weights = g.model.weights
    found: list[str] = []
    for op in ops:
        if op.domain:
            continue
        if op.op_type == "BatchNormalization":
            if batch_norm_training(op.node):
                return None
            found.append(f"BatchNormalization '{op.label}' in inference mode")
        elif op.op_type == "Dropout":
            if dropout_training(g, op.node):
                return None
            found.append(f"Dropout '{op.label}' in inference mode")
        elif op.op_type == "Conv" and len(op.inputs) > 2 and all(
            x in weights and x.startswith(FOLDED_CONV_PREFIX) for x in op.inputs[1:3]
        ):
            found.append(f"Conv '{op.label}' with weights the exporter folded ('{op.inputs[1]}': a "
                         "BatchNorm fused in eval mode)")
    if not found:
        return None
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    return found[0] + more


def view_input(
    g: OpGraph, op: Op, types: dict[str, TensorType], weight_only: frozenset[int]
) -> int | None:
    """Input position whose storage the op's outputs share in PyTorch, or None (new storage)."""
    t = op.op_type
    if op.domain != "":
        return None
    if t in VIEW_OPS:
        return 0
    if t == "Cast":
        a, b = types.get(op.inputs[0]), types.get(op.outputs[0])
        return 0 if a is not None and b is not None and a.dtype == b.dtype else None
    if t == "Gather":
        idx = types.get(op.inputs[1])
        if not _is_weight(g, op.inputs[0], weight_only) and idx is not None and idx.shape == ():
            return 0  # x.select(axis, i)
        return None
    if t == "Dropout" and not dropout_active(g, op.node):
        return 0
    if t == "Add" and bias_after_matmul(g, op, weight_only) is not None:
        return bias_after_matmul(g, op, weight_only)
    return None


def storage_roots(ops: Iterable[Op], view_of: Callable[[Op], int | None]) -> dict[str, str]:
    """Tensor → the tensor whose storage it shares (itself when it owns one)."""
    roots: dict[str, str] = {}
    for op in ops:
        v = view_of(op)
        if v is None or v >= len(op.inputs) or not op.inputs[v]:
            continue
        base = roots.get(op.inputs[v], op.inputs[v])
        for out in op.outputs:
            if out:
                roots[out] = base
    return roots


#: Ops whose output is laid out like their first full-size input (TensorIterator,
#: ``aten/src/ATen/TensorIterator.cpp`` ``reorder_dimensions``: the first operand whose strides
#: differ decides; broadcast operands do not).
_LIKE_INPUT = frozenset(
    {
        "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Where", "Relu", "Sigmoid", "Tanh", "Erf",
        "Gelu", "Silu", "Mish", "HardSwish", "HardSigmoid", "LeakyRelu", "Elu", "Neg", "Sqrt", "Exp",
        "Log", "Abs", "Clip", "Dropout", "Cast", "Identity", "Reciprocal", "Softplus",
    }
)
#: 4-D ops whose output takes the input's suggested memory format (channels-last or not):
#: ``mkldnn_convolution``, ``batch_norm_cpu``, ``max_pool2d`` (``suggest_memory_format``).
_MEMORY_FORMAT_OPS = frozenset({"Conv", "ConvTranspose", "BatchNormalization", "MaxPool", "AveragePool"})
CHANNELS_LAST = (0, 2, 3, 1)


def memory_orders(ops: Iterable[Op], types: dict[str, TensorType]) -> dict[str, tuple[int, ...]]:
    """Tensor → the order of its dimensions in memory, outermost first, for tensors PyTorch does
    not lay out contiguously (every other tensor is contiguous).

    A Transpose (``permute``) is a view with permuted strides; elementwise ops lay their output
    out like their first full-size input; Conv, BatchNorm and pooling keep channels-last
    (``(0, 2, 3, 1)``) and make anything else contiguous; every other op (MatMul, LayerNorm,
    Softmax, reductions, Concat, a Reshape that must copy) writes a contiguous result.
    """
    orders: dict[str, tuple[int, ...]] = {}

    def shape(name: str) -> Shape | None:
        t = types.get(name)
        return None if t is None else t.shape

    for op in ops:
        if op.domain or not op.outputs or not op.outputs[0]:
            continue
        out = op.outputs[0]
        order: tuple[int, ...] | None = None
        if op.op_type == "Transpose" and op.inputs:
            rank = len(shape(out) or ())
            perm = next((list(a.ints) for a in op.node.attribute if a.name == "perm"), list(range(rank))[::-1])
            src = orders.get(op.inputs[0], tuple(range(len(perm))))
            inv = {d: j for j, d in enumerate(perm)}
            order = tuple(inv[d] for d in src)
        elif op.op_type in _LIKE_INPUT:
            want = shape(out)
            same = [x for x in op.inputs if x and shape(x) == want]
            order = orders.get(same[0]) if same else None
        elif op.op_type in _MEMORY_FORMAT_OPS and op.inputs:
            order = CHANNELS_LAST if orders.get(op.inputs[0]) == CHANNELS_LAST else None
        if order is not None and order != tuple(range(len(order))) and not _trivial(order, shape(out)):
            orders[out] = order
    return orders


def _trivial(order: tuple[int, ...], shape: Shape | None) -> bool:
    """True when the dims out of place all have size 1 (the layout is then contiguous)."""
    if shape is None or len(shape) != len(order):
        return False
    big = [d for d in order if shape[d] != 1]
    return big == sorted(big)


def _is_weight(g: OpGraph, name: str, weight_only: frozenset[int]) -> bool:
    return name in g.model.weights or (name in g.producer and g.producer[name] in weight_only)


def bias_after_matmul(g: OpGraph, op: Op, weight_only: frozenset[int]) -> int | None:
    """Position of the MatMul output in ``Add(bias, MatMul(x, W))`` (one ``addmm``), or None."""
    if len(op.inputs) != 2:
        return None
    for k, name in enumerate(op.inputs):
        other = op.inputs[1 - k]
        if not _is_weight(g, other, weight_only) or name not in g.producer:
            continue
        mm = g.node(g.producer[name])
        if (
            mm.op_type == "MatMul"
            and len(mm.input) == 2
            and _is_weight(g, mm.input[1], weight_only)
            and g.consumers.get(name) == (op.nid,)
            and name not in g.model.outputs
        ):
            return k
    return None


# --------------------------------------------------------------------------- GELU patterns
def _only_consumer(g: OpGraph, name: str) -> onnx.NodeProto | None:
    users = g.consumers.get(name, ())
    if len(users) != 1 or name in g.model.outputs:
        return None
    return g.node(users[0])


def _binary(node: onnx.NodeProto | None, op_type: str, name: str) -> str | None:
    """The other operand of binary ``op_type`` node reading ``name``; None if it is not one."""
    if node is None or node.op_type != op_type or len(node.input) != 2 or name not in node.input:
        return None
    a, b = node.input
    return b if a == name else a


def _find_fused(g: OpGraph, weight_only: frozenset[int]) -> dict[int, Op]:
    """Every member node of an exporter pattern of one PyTorch kernel → the fused op (keyed by
    each member): GELU (exact and tanh), SiLU, Hardswish and Mish."""
    const = lambda n: n is not None and _is_weight(g, n, weight_only)  # noqa: E731
    nid_of = {id(g.node(n)): n for n in g.dag.nodes}
    found: dict[int, Op] = {}
    for nid in g.dag.nodes:
        node = g.node(nid)
        matcher = _MATCHERS.of(node)
        chain = None if matcher is None else matcher(g, node, const)
        if chain is None:
            continue
        op_type, x, nodes = chain
        ids = tuple(sorted(nid_of[id(n)] for n in nodes))
        if any(m in found for m in ids):
            continue
        last = g.node(ids[-1])
        hidden = tuple(o for n in nodes for o in n.output if o and o != last.output[0])
        op = Op(nid=ids[-1], op_type=op_type, domain="", inputs=(x,), outputs=(last.output[0],),
                node=last, members=ids, hidden=hidden)
        for m in ids:
            found[m] = op
    return found


def _gated(g, gate, const):
    """``Mul(x, gate(x))`` with the gate read by that Mul alone: returns (x, mul) or None."""
    x = gate.input[0] if gate.input else ""
    mul = _only_consumer(g, gate.output[0])
    if not x or _binary(mul, "Mul", gate.output[0]) != x:
        return None
    return x, mul


def _silu(g, sigmoid, const):
    """``F.silu`` → ``Mul(x, Sigmoid(x))`` (symbolic_opset9.py ``silu``); one kernel that saves
    x (derivatives.yaml ``silu: self: silu_backward(grad, self)``)."""
    found = _gated(g, sigmoid, const)
    return None if found is None else ("Silu", found[0], (sigmoid, found[1]))


def _hardswish(g, hsig, const):
    """``F.hardswish`` before opset 14: ``Mul(x, HardSigmoid(x, alpha=1/6))``; one kernel that
    saves x (derivatives.yaml ``hardswish: self: hardswish_backward(grad, self)``)."""
    alpha = next((a.f for a in hsig.attribute if a.name == "alpha"), 0.2)
    found = _gated(g, hsig, const)
    if found is None or abs(alpha - 1 / 6) > 1e-6:
        return None
    return "HardSwish", found[0], (hsig, found[1])


def _mish(g, softplus, const):
    """``F.mish`` before opset 18: ``Mul(x, Tanh(Softplus(x)))``; one kernel that saves x
    (derivatives.yaml ``mish: self: mish_backward(grad, self)``)."""
    tanh = _only_consumer(g, softplus.output[0])
    x = softplus.input[0] if softplus.input else ""
    if tanh is None or tanh.op_type != "Tanh" or not x:
        return None
    mul = _only_consumer(g, tanh.output[0])
    if _binary(mul, "Mul", tanh.output[0]) != x:
        return None
    return "Mish", x, (softplus, tanh, mul)


def _gelu_erf(g, erf, const):
    chain = _exact_gelu(g, erf, const)
    return None if chain is None else ("Gelu", *chain)


def _gelu_tanh(g, tanh, const):
    chain = _tanh_gelu(g, tanh, const)
    return None if chain is None else ("Gelu", *chain)


def _exact_gelu(g: OpGraph, erf: onnx.NodeProto, const: Callable[[str | None], bool]):
    """x → Div(x, √2) → Erf → Add(·, 1) → Mul(x, ·) → Mul(·, 0.5); returns (x, nodes)."""
    div = g.node(g.producer[erf.input[0]]) if erf.input[0] in g.producer else None
    if div is None or div.op_type not in ("Div", "Mul") or len(div.input) != 2 or not const(div.input[1]):
        return None
    x = div.input[0]
    if _only_consumer(g, div.output[0]) is not erf:
        return None
    add = _only_consumer(g, erf.output[0])
    if add is None or not const(_binary(add, "Add", erf.output[0])):
        return None
    mul = _only_consumer(g, add.output[0])
    if mul is None or _binary(mul, "Mul", add.output[0]) != x:
        return None
    half = _only_consumer(g, mul.output[0])
    if half is None or not const(_binary(half, "Mul", mul.output[0])):
        return None
    return x, (div, erf, add, mul, half)


def _tanh_gelu(g, tanh, const):
    """The exporter's approximate="tanh" GELU: x·x·x·κ + x, ·β, Tanh, +1, ·x, ·0.5."""
    beta = g.node(g.producer[tanh.input[0]]) if tanh.input[0] in g.producer else None
    if beta is None or beta.op_type != "Mul":
        return None
    inner = next((i for i in beta.input if not const(i)), None)
    if inner is None or inner not in g.producer or not const(_binary(beta, "Mul", inner)):
        return None
    add = g.node(g.producer[inner])
    if add.op_type != "Add" or len(add.input) != 2:
        return None
    for x, k_out in (add.input, add.input[::-1]):
        kappa = g.node(g.producer[k_out]) if k_out in g.producer else None
        if kappa is None or kappa.op_type != "Mul":
            continue
        cube_out = next((i for i in kappa.input if not const(i)), None)
        cube = g.node(g.producer[cube_out]) if cube_out in g.producer else None
        if cube is None or _binary(cube, "Mul", x) is None:
            continue
        sq_out = _binary(cube, "Mul", x)
        sq = g.node(g.producer[sq_out]) if sq_out in g.producer else None
        if sq is None or sq.op_type != "Mul" or list(sq.input) != [x, x]:
            continue
        one = _only_consumer(g, tanh.output[0])
        if one is None or not const(_binary(one, "Add", tanh.output[0])):
            return None
        mul = _only_consumer(g, one.output[0])
        if mul is None or _binary(mul, "Mul", one.output[0]) != x:
            return None
        half = _only_consumer(g, mul.output[0])
        if half is None or not const(_binary(half, "Mul", mul.output[0])):
            return None
        chain = (sq, cube, kappa, add, beta, tanh, one, mul, half)
        if all(_only_consumer(g, n.output[0]) is not None for n in chain[:-1]):
            return x, chain
    return None


#: A pattern's matcher: ``(graph, the pattern's first node, is-constant test)`` -> its chain or None.
Matcher = Callable[..., object]
_MATCHERS: OpTable[Matcher] = OpTable(domain_table("", {
    "Erf": _gelu_erf, "Tanh": _gelu_tanh, "Sigmoid": _silu, "HardSigmoid": _hardswish, "Softplus": _mish,
}))
