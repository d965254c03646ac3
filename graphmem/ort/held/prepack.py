"""What session creation puts in the CPU arena: initializers and the weights kernels pre-pack.

``SessionState::FinalizeSessionStateImpl`` (``core/framework/session_state.cc``) saves the
initializers, creates the kernels, then — unless ``session.disable_prepacking`` is "1" — calls
``PrePack`` on every kernel for each of its inputs that is a constant initializer, nodes in
NodeIndex order (``PrepackConstantInitializedTensors``; :func:`graphmem.ort.scratch.prepack_order`).
In onnxruntime 1.31, measured on one-node sessions and on the whole corpus (the
``mem_arena_held`` before run 1 of every light, committed and exported model at ``none`` and
``all`` is the sum below, to the byte):

* an initializer (or Constant node output) of at most 127 bytes is taken with ``Reserve``, its
  exact bytes; a larger one stays in the graph's own buffer (``utils::kSmallTensorExternalDataThreshold``,
  ``core/framework/tensorprotoutils.h``; in-memory external data), outside the arena. An
  initializer no node reads is dropped first (``Graph::CleanUnusedInitializersAndNodeArgs``).
  ``session.use_device_allocator_for_initializers`` changes nothing here (measured);
* with ``session.disable_prepacking`` "1" and the memory pattern on, the initializers are also
  planned into one block (``TensorAllocatorWithMemPattern``), each rounded up to 256 bytes
  (``kAllocAlignment``, ``core/framework/allocator.h``), taken with ``Reserve`` (measured);
* the kernels below pre-pack a constant weight into buffers they keep; when every use of a
  small initializer is pre-packed, it is released (``constant_initializers_use_count``).

Per kernel (:data:`PREPACK_RULES`), each citing its source: MLAS's packed GEMM operand is
``MlasGemmPackBSize(N, K)`` = N rounded up to 16 × K floats, rounded up to 64 bytes
(``core/mlas/lib/sgemm.cpp``). A kernel known to pre-pack but without a rule here is listed in
:attr:`Creation.unmodelled`, never counted as nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import onnx

from graphmem.model.dtypes import tensor_bytes
from graphmem.optable import MS_DOMAIN, OpRule, OpTable, op_key
from graphmem.ort.scratch import prepack_order
from graphmem.ort.scratch_common import attr

if TYPE_CHECKING:
    from graphmem.model.graph import OpGraph
    from graphmem.model.loading import Weight

__all__ = [
    "Packed",
    "CreationEvent",
    "Creation",
    "PREPACK_RULES",
    "PREPACKING_UNMODELLED",
    "SMALL_INITIALIZER_MAX",
    "ALLOC_ALIGNMENT",
    "mlas_pack_b_size",
    "session_creation",
]

#: ``utils::kSmallTensorExternalDataThreshold``: initializers up to this many bytes are copied
#: into a reserved buffer; larger ones keep the graph's buffer.
SMALL_INITIALIZER_MAX = 127
#: ``kAllocAlignment`` (``core/framework/allocator.h``): the memory patterns' block alignment.
ALLOC_ALIGNMENT = 256
FLOAT = onnx.TensorProto.FLOAT


@dataclass(frozen=True, slots=True, kw_only=True)
class Packed:
    """One buffer a kernel's ``PrePack`` takes: ``reserve`` (``IAllocator::MakeUniquePtr(...,
    use_reserve=true)``: outside the regions) or an arena chunk (``alloc->Alloc``); ``kept``: held
    for the session's life (False: freed before ``PrePack`` returns)."""

    nbytes: int
    reserve: bool = True
    kept: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class CreationEvent:
    """One arena call of session creation, in order: ``kind`` "reserve", "alloc" or "free" (of
    the buffer ``key`` an earlier event took); ``node`` is the packing node ('' for an
    initializer); ``weight`` the initializer concerned."""

    kind: str
    key: str
    nbytes: int
    node: str = ""
    weight: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Creation:
    """Session creation's arena calls (``events``), the initializers released because every use
    was pre-packed (``released``), and the nodes whose pre-packing is not modelled."""

    events: tuple[CreationEvent, ...]
    released: tuple[str, ...]
    unmodelled: tuple[str, ...]

    @property
    def kept_packed_bytes(self) -> int:
        """Bytes of pre-packed buffers held for the session's life (reserved or in chunks)."""
        taken = {e.key: e.nbytes for e in self.events if e.kind != "free" and e.node}
        for e in self.events:
            if e.kind == "free":
                taken.pop(e.key, None)
        return sum(taken.values())


def mlas_pack_b_size(n: int, k: int) -> int:
    """``MlasGemmPackBSize(N, K)`` for float (``core/mlas/lib/sgemm.cpp``): N aligned to
    ``MLAS_SGEMM_STRIDEN_THREAD_ALIGN`` (16), times K floats, aligned to the preferred buffer
    alignment (64 on x86-64); 0 for an empty matrix."""
    if n <= 0 or k <= 0:
        return 0
    return -(-(-(-n // 16) * 16 * k * 4) // 64) * 64


#: ``rule(node, input index, weight)`` → (buffers, is_packed), or None when the input's packing is
#: not modelled.
PrepackRule = Callable[[onnx.NodeProto, int, "Weight"], "tuple[tuple[Packed, ...], bool] | None"]
_NOT_PACKED: tuple[tuple[Packed, ...], bool] = ((), False)


def _gemm_b(trans_attr: str) -> PrepackRule:
    """Gemm/FusedGemm, MatMul/FusedMatMul on float: input 1, a 2-D constant B, packed by
    ``GemmPackBFp32`` (``providers/cpu/math/gemm.cc``, ``math/matmul.cc``) into a reserved
    ``MlasGemmPackBSize(N, K)`` buffer; any other shape or element type is not packed (measured:
    a 3-D or 1-D B, float16 MatMul, double Gemm)."""

    def rule(node, idx, w):
        if idx != 1 or w.dtype != FLOAT or len(w.dims) != 2:
            return _NOT_PACKED
        trans = bool(attr(node, trans_attr, 0)) if trans_attr else False
        k, n = (w.dims[1], w.dims[0]) if trans else (w.dims[0], w.dims[1])
        size = mlas_pack_b_size(n, k)
        return ((Packed(nbytes=size),), True) if size else _NOT_PACKED

    return rule


def _lstm(node, idx, w):
    """LSTM<float>: W (input 1, [D, 4H, I]) and R (input 2, [D, 4H, H]) each packed for every
    direction into one reserved buffer of D × ``MlasGemmPackBSize(4H, K)``
    (``providers/cpu/rnn/deep_cpu_lstm.cc``, ``TryPackWeights``; measured)."""
    if idx not in (1, 2) or w.dtype != FLOAT or len(w.dims) != 3:
        return _NOT_PACKED
    d, n, k = w.dims
    if n != 4 * attr(node, "hidden_size", 0):
        return _NOT_PACKED
    return (Packed(nbytes=d * mlas_pack_b_size(n, k)),), True


def _gru(node, idx, w):
    """GRU<float> (``providers/cpu/rnn/deep_cpu_gru.cc``): W (input 1, [D, 3H, I]) packed as one
    D × ``MlasGemmPackBSize(3H, I)`` buffer; R (input 2, [D, 3H, H]) as the update/reset part
    D × ``MlasGemmPackBSize(2H, H)`` and the hidden part D × ``MlasGemmPackBSize(H, H)``
    (measured: 12,800 + 15,360 bytes for I=20, H=24, bidirectional)."""
    h = attr(node, "hidden_size", 0)
    if idx not in (1, 2) or w.dtype != FLOAT or len(w.dims) != 3 or w.dims[1] != 3 * h:
        return _NOT_PACKED
    d, _, k = w.dims
    if idx == 1:
        return (Packed(nbytes=d * mlas_pack_b_size(3 * h, k)),), True
    return (Packed(nbytes=d * mlas_pack_b_size(2 * h, h)), Packed(nbytes=d * mlas_pack_b_size(h, h))), True


def _attention(node, idx, w):
    """com.microsoft Attention<float> (``contrib_ops/cpu/bert/attention.cc``, ``PrePack``): the
    2-D weights (input 1, [input hidden, q+k+v hidden]) packed per head into three reserved
    buffers, num_heads × ``MlasGemmPackBSize(head size, input hidden)`` each for Q, K and V
    (measured: 18,432 bytes for 4 heads, hidden 32, input hidden 24)."""
    if idx != 1 or w.dtype != FLOAT or len(w.dims) != 2:
        return _NOT_PACKED
    heads = attr(node, "num_heads", 0)
    sizes = list(attr(node, "qkv_hidden_sizes", []))
    if not sizes:
        sizes = [w.dims[1] // 3] * 3 if w.dims[1] % 3 == 0 else []
    if heads <= 0 or len(sizes) != 3 or sum(sizes) != w.dims[1] or any(s % heads for s in sizes):
        return _NOT_PACKED
    bufs = tuple(Packed(nbytes=heads * mlas_pack_b_size(s // heads, w.dims[0])) for s in sizes)
    return (bufs, True) if all(b.nbytes for b in bufs) else _NOT_PACKED


def _conv_transpose(node, idx, w):
    """ConvTranspose<float> (``providers/cpu/nn/conv_transpose.cc``, ``PrePack``): the filter
    (input 1, rank > 2) transposed per group into an arena chunk (``alloc->Alloc``) of
    4 · K · N · group bytes, K = dims[0] / group, N = the product of the other dims; not for
    K = 1 or N = 1."""
    if idx != 1 or w.dtype != FLOAT or len(w.dims) <= 2:
        return _NOT_PACKED
    group = attr(node, "group", 1)
    k, n = w.dims[0] // group, math.prod(w.dims[1:])
    if k <= 1 or n <= 1:
        return _NOT_PACKED
    return (Packed(nbytes=4 * k * n * group, reserve=False),), True


PREPACK_RULES: OpTable[OpRule] = OpTable({
    ("", "Gemm"): OpRule(rule=_gemm_b("transB"), outcome="modelled"),
    (MS_DOMAIN, "FusedGemm"): OpRule(rule=_gemm_b("transB"), outcome="modelled"),
    ("", "MatMul"): OpRule(rule=_gemm_b(""), outcome="modelled"),
    (MS_DOMAIN, "FusedMatMul"): OpRule(rule=_gemm_b("transB"), outcome="modelled"),
    ("", "LSTM"): OpRule(rule=_lstm, outcome="modelled"),
    ("", "GRU"): OpRule(rule=_gru, outcome="modelled"),
    (MS_DOMAIN, "Attention"): OpRule(rule=_attention, outcome="modelled"),
    ("", "ConvTranspose"): OpRule(rule=_conv_transpose, outcome="modelled"),
})

#: Kernels of the CPU provider that pre-pack constant weights and have no rule here (their
#: reserved packed buffers, and most of their arena requests, are not modelled).
PREPACKING_UNMODELLED = frozenset({
    ("", "QLinearConv"), (MS_DOMAIN, "QLinearConv"), (MS_DOMAIN, "QGemm"), ("", "QLinearMatMul"),
    ("", "MatMulInteger"), (MS_DOMAIN, "MatMulIntegerToFloat"), (MS_DOMAIN, "DynamicQuantizeMatMul"),
    (MS_DOMAIN, "QAttention"), (MS_DOMAIN, "DynamicQuantizeLSTM"), (MS_DOMAIN, "MatMulNBits"),
    (MS_DOMAIN, "MatMulBnb4"), (MS_DOMAIN, "QLinearConvTranspose"),
})


def session_creation(graph: OpGraph, *, disable_prepacking: bool = False, mem_pattern: bool = True) -> Creation:
    """The arena calls of creating a session for ``graph`` (see the module doc), in order."""
    model = graph.model
    used = _use_counts(graph)
    constant = _constant_weights(graph)
    events: list[CreationEvent] = []
    held_small: set[str] = set()
    for name, w in model.weights.items():
        if name not in used or w.external or w.nbytes is None:
            continue
        if w.nbytes <= SMALL_INITIALIZER_MAX and w.nbytes > 0:
            events.append(CreationEvent(kind="reserve", key=f"init:{name}", nbytes=w.nbytes, weight=name))
            held_small.add(name)
    for key, nbytes in _small_body_initializers(graph):
        events.append(CreationEvent(kind="reserve", key=key, nbytes=nbytes))
    if disable_prepacking:
        if mem_pattern:
            # a weight in an external file is mapped, not traced (``SaveInitializedTensors``)
            block = sum(-(-w.nbytes // ALLOC_ALIGNMENT) * ALLOC_ALIGNMENT
                        for n, w in model.weights.items() if n in used and w.nbytes and not w.external)
            if block:
                events.append(CreationEvent(kind="reserve", key="initializer-block", nbytes=block))
        return Creation(events=tuple(events), released=(), unmodelled=())
    remaining = dict(used)
    shared: set[tuple[object, ...]] = set()  # pre-packed buffers the session holds once
    released: list[str] = []
    unmodelled: dict[str, None] = {}
    for nid in prepack_order(graph):
        node = graph.node(nid)
        label = node.name or f"{node.op_type}#{nid}"
        entry = PREPACK_RULES.of(node)
        for idx, name in enumerate(node.input):
            if not name or name not in constant:
                continue
            if entry is None:
                if op_key(node) in PREPACKING_UNMODELLED:
                    unmodelled[label] = None
                continue
            outcome = entry.rule(node, idx, model.weights[name])
            if outcome is None:
                unmodelled[label] = None
                continue
            buffers, packed = outcome
            # the session keeps one copy of identical pre-packed buffers: PrepackedWeightsForGraph
            # (core/framework/prepacked_weights_container.h) keys them by op type and the packed
            # bytes' hash (GenerateKeyForPrepackedWeightsMap, session_state.cc); measured: two
            # transB Gemms (or two MatMuls) reading one 64x64 weight hold 16,384 B, a transB and a
            # plain Gemm, or a Gemm and a MatMul, 32,768
            same = (op_key(node), name, idx, tuple(b.nbytes for b in buffers), attr(node, "transB", 0))
            if buffers and same in shared:
                buffers = ()
            shared.add(same)
            for j, b in enumerate(buffers):
                key = f"pack:{nid}:{idx}:{j}"
                events.append(CreationEvent(kind="reserve" if b.reserve else "alloc", key=key, nbytes=b.nbytes,
                                            node=label, weight=name))
                if not b.kept:
                    events.append(CreationEvent(kind="free", key=key, nbytes=0, node=label, weight=name))
            if packed and name in remaining:
                remaining[name] -= 1
                if remaining[name] == 0:
                    released.append(name)
                    if name in held_small:
                        events.append(CreationEvent(kind="free", key=f"init:{name}", nbytes=0, weight=name))
    return Creation(events=tuple(events), released=tuple(released), unmodelled=tuple(unmodelled))


def _small_body_initializers(graph: OpGraph) -> list[tuple[str, int]]:
    """(key, bytes) of the initializers (and Constant outputs) of at most 127 bytes that a
    control-flow body's nodes read: each body's session state saves its own initializers
    (``SessionState::FinalizeSessionStateImpl`` recurses into subgraphs), reserved like the main
    graph's."""
    out: list[tuple[str, int]] = []

    def walk(body: onnx.GraphProto, prefix: str) -> None:
        read = {x for n in body.node for x in n.input} | {o.name for o in body.output}
        for n in body.node:
            for a in n.attribute:
                for sub in (*([a.g] if a.HasField("g") else []), *a.graphs):
                    read |= _outer_reads(sub)
        tensors = [(t.name, t) for t in body.initializer]
        tensors += [(n.output[0], a.t) for n in body.node if n.op_type == "Constant" and n.output
                    for a in n.attribute if a.name == "value" and a.HasField("t")]
        for name, t in tensors:
            nbytes = tensor_bytes(t.data_type, math.prod(t.dims))
            if name in read and nbytes is not None and 0 < nbytes <= SMALL_INITIALIZER_MAX and not _external(t):
                out.append((f"init:{prefix}{name}", nbytes))
        for i, n in enumerate(body.node):
            for a in n.attribute:
                for j, sub in enumerate((*([a.g] if a.HasField("g") else []), *a.graphs)):
                    walk(sub, f"{prefix}{n.name or i}/{a.name}{j}/")

    for nid in graph.dag.nodes:
        node = graph.node(nid)
        for a in node.attribute:
            for j, sub in enumerate((*([a.g] if a.HasField("g") else []), *a.graphs)):
                walk(sub, f"{node.name or nid}/{a.name}{j}/")
    return out


def _outer_reads(body: onnx.GraphProto) -> set[str]:
    """Every name a body's nodes read, nested bodies included."""
    names = {x for n in body.node for x in n.input}
    for n in body.node:
        for a in n.attribute:
            for sub in (*([a.g] if a.HasField("g") else []), *a.graphs):
                names |= _outer_reads(sub)
    return names


def _external(t: onnx.TensorProto) -> bool:
    return t.HasField("data_location") and t.data_location == onnx.TensorProto.EXTERNAL


def _use_counts(graph: OpGraph) -> dict[str, int]:
    """Initializer → its uses (``ComputeConstantInitializerUseCount``, ``session_state.cc``): one
    per node input slot reading it, subgraph bodies included, one per graph output it is.
    Initializers with no use are those ``Graph::Resolve`` drops."""
    weights = graph.model.weights
    counts: dict[str, int] = {}

    def visit(nodes) -> None:
        for node in nodes:
            for x in node.input:
                if x in weights:
                    counts[x] = counts.get(x, 0) + 1
            for a in node.attribute:
                for body in (*([a.g] if a.HasField("g") else []), *a.graphs):
                    visit(body.node)

    visit(graph.node(nid) for nid in graph.dag.nodes)
    for out in graph.model.outputs:
        if out in weights:
            counts[out] = counts.get(out, 0) + 1
    for names in graph.implicit.values():  # an outer-scope read keeps the initializer
        for x in names:
            if x in weights:
                counts.setdefault(x, 0)
    return counts


def _constant_weights(graph: OpGraph) -> frozenset[str]:
    """Initializers a kernel may pre-pack: ``Graph::GetConstantInitializer`` — from IR 4 on, an
    initializer that is also a graph input can be overridden and is not constant."""
    model = graph.model
    inputs = {i.name for i in model.graph.input} if model.ir_version >= 4 else set()
    return frozenset(n for n in model.weights if n not in inputs)

