"""Kernel scratch, and the arena's in-use high-water mark that includes it.

onnxruntime's requested-bytes figure (``activations.peak_bytes``) counts tensors only. Kernels
also take *scratch* from the same arena inside ``Compute`` (``GetTempSpaceAllocator``) and free
it before returning, so the profiler sees it only in ``mem_in_use_peak``, the arena's high-water
mark, which counts *chunks*: the CPU BFC arena rounds each request up to 256 bytes and hands out
a free chunk whole unless it is at least twice the request (``core/framework/bfc_arena.cc``), so
on CNNs in-use runs up to 1.9x the requested bytes. A scratch-inclusive figure therefore needs
both the scratch and the arena (held bytes rounded to 256 plus each step's scratch fall short of
the measured high by up to 43%, MobileNetV2 at level all); this module models the two:

* :data:`SCRATCH_RULES` — per-op scratch, each rule citing the kernel it reads (paths in
  microsoft/onnxruntime), as a list of requests made before and after the kernel's outputs:
  Conv/FusedConv (MLAS working buffer), ConvTranspose, LRN, LSTM, GRU, Where, BiasGelu/FastGelu,
  Softmax off the last axis, BatchNormalization in training mode, GroupQueryAttention (its flash
  tiles follow the host's L2 cache size, :attr:`graphmem.host.HostProfile.l2_bytes`, and its
  total length is the value of an input: rules also get the input values shape inference
  computed) (outcome
  ``modelled``); and the kernels checked to take none (outcome ``none``); any other op is
  *unmodelled*: counted 0 and listed in :attr:`ScratchProfile.unmodelled`, never silently
  assumed free;
* :class:`BfcArena` — onnxruntime 1.31's CPU arena with its defaults (1 MiB first region growing
  by powers of two, 256-byte rounding, best fit by bin, split only at 2x, coalescing on free);
* :func:`scratch_profile` — run 1 replayed through the arena: per step, the tensors the plan
  requests (:func:`graphmem.ort.allocation.plan_ort`), the step's scratch, the release of dead
  buffers. Its ``peak_bytes`` predicts ``RunMemory.in_use_peak_bytes``.

The rules model one intra-op thread (MLAS's per-thread Conv working buffer is sized by the thread
count), the setting graphmem's measurements use. Float kernels only, where dtypes differ.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import onnx

from graphmem.host import HostProfile
from graphmem.model.dtypes import element_bits, tensor_bytes
from graphmem.model.types import TensorType
from graphmem.optable import MS_DOMAIN, NCHWC_DOMAIN, OpRule, OpTable, is_default_domain, op_key, with_outcome
from graphmem.ort import quant_scratch as quant
from graphmem.ort.arena import BfcArena, Chunk
from graphmem.ort.order import node_key
from graphmem.ort.scratch_common import KernelScratch, ScratchSite, attr, concrete_shape, conv_pads, nbytes

if TYPE_CHECKING:
    from graphmem.model.graph import OpGraph
    from graphmem.ort.allocation import OrtPlan
    from graphmem.planner.program import Program

__all__ = [
    "KernelScratch",
    "NodeScratch",
    "ScratchProfile",
    "BfcArena",
    "SCRATCH_RULES",
    "kernel_scratch",
    "replay_run",
    "step_scratch",
    "prepack_order",
    "prepacked_in_arena",
    "MLAS_CONV_WORKING_BUFFER_FLOATS",
]

#: ``MLAS_CONV_WORKING_BUFFER_SIZE_PER_THREAD`` (``core/mlas/lib/convolve.cpp``):
#: ``MLAS_SGEMM_STRIDEN × MLAS_SGEMM_STRIDEK`` = 128 × 128 floats on x86-64.
MLAS_CONV_WORKING_BUFFER_FLOATS = 16384
NCHWC, MS = NCHWC_DOMAIN, MS_DOMAIN


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeScratch:
    """The scratch of one step of the execution order."""

    step: int
    node: str
    op_type: str
    scratch: KernelScratch


@dataclass(frozen=True, slots=True, kw_only=True)
class ScratchProfile:
    """Run 1 replayed through the arena, scratch included (all byte figures exact integers).

    ``in_use``: arena in-use bytes (chunk sizes) after each step, before its releases — what the
    profiler's ``mem_bytes_in_use`` shows; ``high``: the high-water mark reached by the end of
    each step; ``step_high``: in-use at each step's own highest point (its tensors and scratch
    requested, nothing freed yet), whose maximum is ``peak_bytes``: the run's high-water mark
    above what the arena held before it (predicts ``RunMemory.in_use_peak_bytes``);
    ``per_step``: scratch bytes requested per step."""

    per_step: tuple[int, ...]
    in_use: tuple[int, ...]
    high: tuple[int, ...]
    step_high: tuple[int, ...]
    peak_bytes: int
    peak_step: int
    nodes: tuple[NodeScratch, ...]  # steps with scratch
    unmodelled: tuple[str, ...]  # op types without a scratch rule (counted 0)
    baseline_bytes: int  # chunks held before run 1 (prepacked weights the kernels keep in the arena)
    prepack_high_bytes: int = 0  # in-use above the baseline reached while the session was created (PrePack temporaries)


# --- per-op scratch --------------------------------------------------------------------------

#: ``rule(node, input types, output types, site)`` → scratch, or None when a needed shape, value
#: or constant is unknown; :class:`ScratchSite`: the default-domain opset, the input values shape
#: inference computed (GroupQueryAttention's total length, zero points), which inputs are
#: initializers.
ScratchRule = Callable[
    [onnx.NodeProto, Sequence[TensorType | None], Sequence[TensorType | None], ScratchSite], KernelScratch | None
]


_attr, _shape, _nbytes, _conv_pads = attr, concrete_shape, nbytes, conv_pads


def _mlas_conv(node, ins, outs, site):
    """Conv / FusedConv, float: the working buffer ``MlasConvPrepare`` asks for
    (``core/providers/cpu/nn/conv.cc``, ``core/mlas/lib/convolve.cpp``): none for a pointwise
    (1x1, stride 1, no padding) conv or a one-channel conv whose kernel spans the input row or
    column (GemmDirect); the full im2col ``OutputSize·K`` floats when the filter count per group
    exceeds ``OutputSize`` (ExpandThenGemm); else one thread's 16384-float segment."""
    x, w, y = _shape(ins[0]), _shape(ins[1]) if len(ins) > 1 else None, _shape(outs[0])
    if x is None or w is None or y is None or len(x) < 3:
        return None
    if element_bits(ins[0].dtype) != 32:  # Conv<T> for other types: im2col unless pointwise
        return _im2col(node, x, w, y, ins[0].dtype, pointwise_free=True)
    group = _attr(node, "group", 1)
    if not isinstance(group, int) or group < 1:  # onnxruntime's Conv refuses it at run time: no figure
        return None
    kernel = list(_attr(node, "kernel_shape", w[2:]))
    in_sp, out_sp = list(x[2:]), list(y[2:])
    if len(kernel) > 3:  # Conv<float> beyond 3-D: always the column buffer
        return _im2col(node, x, w, y, ins[0].dtype, pointwise_free=False)
    cin = x[1] // group
    k = cin * math.prod(kernel)
    out_size = math.prod(out_sp)
    filters = w[0] // group
    n = len(kernel)
    strides_one = all(s == 1 for s in _attr(node, "strides", [1] * n))
    pads_zero = all(p == 0 for p in _conv_pads(node, in_sp, kernel, out_sp))
    dil_one = all(d == 1 for d in _attr(node, "dilations", [1] * n))
    if strides_one and pads_zero:
        if k == cin:
            return KernelScratch()
        if n == 1:  # MLAS promotes 1-D to 2-D: height 1
            kernel, in_sp = [1, kernel[0]], [1, in_sp[0]]
        if len(kernel) == 2 and dil_one and cin == 1:
            if kernel[1] == in_sp[1] or (kernel[0] == in_sp[0] and kernel[1] == 1):
                return KernelScratch()
    floats = out_size * k if filters > out_size else MLAS_CONV_WORKING_BUFFER_FLOATS
    return KernelScratch(after=(4 * floats,))


def _im2col(node, x, w, y, dtype, *, pointwise_free: bool):
    """The column buffer of ``nn/conv.cc``: ``(Cin/group)·prod(kernel) × prod(output spatial)``
    elements — ``Conv<T>`` (non-float) skips it for a pointwise conv, ``Conv<float>`` beyond three
    spatial dims never does."""
    group = _attr(node, "group", 1)
    kernel = list(_attr(node, "kernel_shape", w[2:]))
    n = len(kernel)
    pointwise = math.prod(kernel) == 1 and all(s == 1 for s in _attr(node, "strides", [1] * n))
    pointwise = pointwise and all(p == 0 for p in _conv_pads(node, x[2:], kernel, y[2:]))
    if pointwise and pointwise_free:
        return KernelScratch()
    col = tensor_bytes(dtype, x[1] // group * math.prod(kernel) * math.prod(y[2:]))
    return KernelScratch(after=(col,)) if col is not None else None  # None: a dtype of no known size


def _conv_transpose(node, ins, outs, site):
    """``ConvTranspose<float>::DoConvTranspose`` (``nn/conv_transpose.cc``): a column buffer of
    ``(M/group)·prod(kernel) × prod(input spatial)`` elements, after the output."""
    x, w = _shape(ins[0]), _shape(ins[1]) if len(ins) > 1 else None
    if x is None or w is None:
        return None
    kernel = list(_attr(node, "kernel_shape", w[2:]))
    col = tensor_bytes(ins[0].dtype, w[1] * math.prod(kernel) * math.prod(x[2:]))
    return KernelScratch(after=(col,)) if col is not None else None  # None: a dtype of no known size


def _lrn(node, ins, outs, site):
    """``LRN<float>`` (``nn/lrn.cc``): a scale buffer like X and a padded square of
    ``(C + size - 1)·H·W`` floats."""
    x = _shape(ins[0])
    if x is None or len(x) != 4:
        return None
    size = _attr(node, "size", 1)
    return KernelScratch(after=(4 * math.prod(x), 4 * (x[1] + size - 1) * x[2] * x[3]))


def _lstm(node, ins, outs, site):
    """``DeepCpuLstmOp`` (``rnn/lstm_base.cc``, ``rnn/uni_directional_lstm.cc``), float: hidden and
    cell buffers when Y_h / Y_c are not outputs, then per direction the UniDirectionalLstm
    buffers (hidden0, internal_memory_prev, three batch×hidden states, the 4·hidden×batch×seq
    gate buffer, four fused biases, peepholes, and for a reverse direction reversed inputs and
    outputs), then per direction the default sequence lengths (int32) when not given."""
    x = _shape(ins[0])
    if x is None or len(x) != 3:
        return None
    seq, batch, inp = x
    hidden = _attr(node, "hidden_size", 0)
    if not isinstance(hidden, int) or hidden <= 0:  # the kernel refuses it (graphmem.ort.loadable)
        return None
    direction = _attr(node, "direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    dirs = ["forward", "reverse"] if direction == "bidirectional" else [direction]

    def given(i: int) -> bool:
        return len(node.input) > i and bool(node.input[i])

    def output(i: int) -> bool:
        return len(node.output) > i and bool(node.output[i])

    f = 4  # float
    req: list[int] = []
    if not output(1):
        req.append(f * batch * hidden * len(dirs))
    if not output(2):
        req.append(f * batch * hidden * len(dirs))
    for d in dirs:
        req += [f * hidden, f * hidden, f * batch * hidden, f * batch * hidden, f * batch * hidden]
        req.append(f * 4 * hidden * batch * seq)
        if given(3):
            req += [f * hidden] * 4
        if d == "reverse":
            req += [f * seq * batch * inp, f * seq * batch * hidden]
        if given(7):
            req += [f * hidden] * 3
    if not given(4):
        req += [4 * batch] * len(dirs)
    return KernelScratch(after=tuple(req))


def _gru(node, ins, outs, site):
    """``DeepCpuGruOp`` (``rnn/deep_cpu_gru.cc``, buffers from ``rnn_helpers.h`` Allocate), float:
    a hidden buffer when Y_h is not an output, then per direction (a bidirectional node keeps
    the forward direction's buffers while the reverse one runs) UniDirectionalGru's
    AllocateBuffers — cur_h, batched_hidden0, the batch-replicated biases (WRz, WRr and WRh, or
    Wh and Rh with linear_before_reset), linear_output (linear_before_reset), the 3·hidden gate
    buffer over batch×seq, reversed inputs and outputs for a reverse direction — and, in its
    Compute, the default sequence lengths (int32) when none are given."""
    x = _shape(ins[0])
    if x is None or len(x) != 3 or _attr(node, "layout", 0) != 0:
        return None
    seq, batch, inp = x
    hidden = _attr(node, "hidden_size", 0)
    if not isinstance(hidden, int) or hidden <= 0:  # the kernel refuses it (graphmem.ort.loadable)
        return None
    direction = _attr(node, "direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    dirs = ["forward", "reverse"] if direction == "bidirectional" else [direction]
    lbr = _attr(node, "linear_before_reset", 0) != 0
    bias = len(node.input) > 3 and bool(node.input[3])
    lengths = len(node.input) > 4 and bool(node.input[4])
    f, bh = 4, 4 * batch * hidden
    req: list[int] = []
    if not (len(node.output) > 1 and node.output[1]):
        req.append(bh * len(dirs))
    for d in dirs:
        req += [bh, bh]
        if bias:
            req += [bh] * (4 if lbr else 3)
        if lbr:
            req.append(bh)
        req.append(f * 3 * hidden * batch * seq)
        if d == "reverse":
            req += [f * batch * seq * inp, f * batch * seq * hidden]
        if not lengths:
            req.append(4 * batch)
    return KernelScratch(after=tuple(req))


def _where(node, ins, outs, site):
    """``Where<T>`` (``tensor/where_op.cc``): the X and Y selections, each broadcast with the
    condition, are built before the output."""
    c, a, b = (_shape(t) for t in ins[:3])
    if c is None or a is None or b is None:
        return None
    sizes = []
    for v, t in ((a, ins[1]), (b, ins[2])):
        sel = _broadcast(c, v)
        size = tensor_bytes(t.dtype, math.prod(sel)) if sel is not None else None
        if size is None:
            return None
        sizes.append(size)
    return KernelScratch(before=tuple(sizes))


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for p, q in zip(a, b):
        if p != q and 1 not in (p, q):
            return None
        out.append(q if p == 1 else p)
    return tuple(out)


def _bias_gelu(node, ins, outs, site):
    """``BiasGelu<T, approx>`` (``contrib_ops/cpu/bert/bias_gelu.cc``; FastGelu runs the same
    kernel): with a bias, a temporary like the input, after the output; without, none."""
    if len(node.input) < 2 or not node.input[1]:
        return KernelScratch()
    size = _nbytes(ins[0])
    return None if size is None else KernelScratch(after=(size,))


def _softmax(node, ins, outs, site):
    """``Softmax<T>::ComputeImplOpset13`` (``math/softmax.cc``): along the last axis none; along
    another, a transposed input and an intermediate output, each like X. Before opset 13
    ``Softmax<T>::ComputeImpl`` works on a 2-D view: no buffer."""
    if site.opset < 13:
        return KernelScratch()
    x = _shape(ins[0])
    if x is None:
        return None
    axis = _attr(node, "axis", -1)
    if axis < 0:
        axis += len(x)
    if axis == len(x) - 1:
        return KernelScratch()
    size = _nbytes(ins[0])
    return None if size is None else KernelScratch(after=(size, size))


def _batch_norm(node, ins, outs, site):
    """``BatchNorm<T>`` (``nn/batch_norm.h``): in training mode (more than one output) without the
    saved-mean/inv-std outputs, it computes them in two temporaries shaped like the mean, after Y."""
    train = len(node.output) > 1  # is_train_: OutputDefs().size() > 1
    saved = len(node.output) > 4 and bool(node.output[3]) and bool(node.output[4])
    if not train or saved:
        return KernelScratch()
    mean = _nbytes(ins[3]) if len(ins) > 3 else None
    return None if mean is None else KernelScratch(after=(mean, mean))


def _gqa_value(v: np.ndarray | None) -> int | None:
    if v is None or v.size != 1:
        return None
    return int(v.reshape(-1)[0])


def _group_query_attention(node, ins, outs, site):
    """``GroupQueryAttention<float>`` (``contrib_ops/cpu/bert/group_query_attention.cc`` Compute;
    ``gqa_attention_base.h`` ApplyAttentionFlash and ApplyAttention; ``attention_utils.cc``
    MaybeTransposeToBNSH). After the outputs, held to the end: Q — with K and V unless QKV come
    packed — transposed to BNSH; with ``do_rotary`` the rotated copies (RotaryQKV, or RotaryQ and
    RotaryK); then the flash kernel's per-thread buffer: for one new token (total + head) floats,
    else q_block·(2 + kv_block + head) floats, kv_block = min(L2 / (32·head), total) and q_block
    = min(L2 / (32·head), 2·head, S). Off the flash path (total length 1, softcap, smooth softmax,
    a head sink or the QK output) the attention probabilities, B·N·S·present floats, instead.
    total: the value of input 6 (the longest sequence's length, as seqlens_k's maximum + 1 with
    a full attention mask). L2: the host's ``Env::GetL2CacheSize`` (``core/platform/posix/env.cc``:
    ``sysconf(_SC_LEVEL2_CACHE_SIZE)``, :attr:`graphmem.host.HostProfile.l2_bytes`), so this
    kernel's scratch is machine-specific. One intra-op thread; float only; no quantized or
    windowed KV cache."""
    q = _shape(ins[0])
    total = _gqa_value(site.value(6))
    if q is None or len(q) != 3 or total is None or ins[0].dtype != onnx.TensorProto.FLOAT:
        return None
    quantized = _attr(node, "k_quant_type", b"NONE") not in (b"NONE", "NONE") or _attr(node, "kv_cache_bit_width", 0)
    if quantized or _attr(node, "sliding_window_cache", 0) == 1:
        return None
    b, s, hidden = q
    heads, kv_heads = _attr(node, "num_heads", 0), _attr(node, "kv_num_heads", 0)
    packed = len(node.input) < 2 or not node.input[1]
    if heads <= 0 or kv_heads <= 0:
        return None
    head = hidden // (heads + 2 * kv_heads) if packed else hidden // heads
    f = 4
    if packed:
        req = [f * b * (heads + 2 * kv_heads) * s * head]
    else:
        k = _shape(ins[1])
        if k is None or len(k) != 3:
            return None
        kv_len = k[1]
        req = [f * b * heads * s * head, f * b * kv_heads * kv_len * head, f * b * kv_heads * kv_len * head]
    if _attr(node, "do_rotary", 0) == 1:
        req += [req[0]] if packed else [f * b * heads * s * head, f * b * kv_heads * s * head]
    present = [o for o in outs[1:3] if o is not None]
    has = lambda i, names: len(names) > i and bool(names[i])  # noqa: E731
    flash = (total > 1 and _attr(node, "softcap", 0.0) == 0.0 and _attr(node, "smooth_softmax", 0) != 1
             and not has(11, node.input) and not has(3, node.output) and has(1, node.output) and has(2, node.output))
    if flash:
        cache = site.host.l2_bytes
        kv_block0 = max(cache // (f * 4 * 2 * head), 1)
        if s == 1:
            req.append(f * (total + head))
        else:
            kv_block, q_block = min(kv_block0, total), min(kv_block0, 2 * head, s)
            req.append(f * (2 * q_block + q_block * kv_block + q_block * head))
    else:
        shape = _shape(present[0]) if present else None
        present_len = shape[2] if shape is not None and len(shape) == 4 else total
        req.append(f * b * heads * s * present_len)
    return KernelScratch(after=tuple(r for r in req if r > 0))


def _none(node, ins, outs, site):
    return KernelScratch()


#: The kernels whose scratch a rule computes.
_MODELLED = with_outcome("modelled", {
    ("", "BatchNormalization"): _batch_norm,
    ("", "Conv"): _mlas_conv,
    (MS, "FusedConv"): _mlas_conv,
    ("", "ConvTranspose"): _conv_transpose,
    ("", "LRN"): _lrn,
    ("", "LSTM"): _lstm,
    ("", "GRU"): _gru,
    ("", "Where"): _where,
    (MS, "BiasGelu"): _bias_gelu,
    (MS, "FastGelu"): _bias_gelu,
    (MS, "GroupQueryAttention"): _group_query_attention,
    ("", "Softmax"): _softmax,
    ("", "LogSoftmax"): _softmax,
    ("", "QLinearConv"): quant.qlinear_conv,
    (MS, "QLinearConv"): quant.qlinear_conv,
    ("", "ConvInteger"): quant.conv_integer,
    ("", "QLinearMatMul"): quant.qlinear_matmul,
    (MS, "QGemm"): quant.qgemm,
    (MS, "DynamicQuantizeMatMul"): quant.dynamic_quantize_matmul,
    (MS, "NhwcMaxPool"): quant.nhwc_max_pool,
})

#: Kernels that take no scratch on the CPU EP (read in their sources and confirmed by running each
#: node of the corpus alone: in-use high-water = outputs). NCHWc kernels run MLAS on the caller's
#: buffers (``contrib_ops/cpu/nchwc_ops.cc``).
_NONE = (
    [(NCHWC, op) for op in ("Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
                             "ReorderInput", "ReorderOutput", "Upsample")]
    # SkipSimplifiedLayerNormalization is SkipLayerNorm<float, true> (contrib_ops/cpu/skip_layer_norm.cc),
    # SimplifiedLayerNormalization LayerNormImpl (providers/cpu/nn/layer_norm_impl.cc): float, no scratch
    # QuickGelu (contrib_ops/cpu/activations.h) runs MlasComputeLogistic into its output
    + [(MS, op) for op in ("FusedGemm", "FusedMatMul", "QuickGelu", "SkipLayerNormalization",
                           "SkipSimplifiedLayerNormalization")]
    # Confirmed by scripts/probes/probe_scratch.py on the float16/quantized corpus (every distinct node
    # run alone: in-use high-water = graphmem's arena replay without scratch).
    # StringConcat (providers/cpu/text/string_concat.cc) broadcasts into its output; the characters
    # of long strings live on the heap, outside the arena (measured: tests/analysis/test_strings.py)
    + [("", "StringConcat")]
    + [(MS, op) for op in ("Gelu", "MatMulIntegerToFloat", "QLinearAdd", "QLinearMul", "QLinearSoftmax",
                           "QLinearGlobalAveragePool")]
    + [("", op) for op in ("DequantizeLinear", "QuantizeLinear", "DynamicQuantizeLinear", "MatMulInteger",
                           "Exp", "ReduceMax", "ReduceSum")]
    # If, Loop and Scan take no scratch of their own: their temporaries (Loop's scalars, Scan's
    # transposed inputs and loop-state buffers) are requests graphmem.ort.controlflow replays
    + [("", op) for op in ("If", "Loop", "Scan")]
    # Confirmed by scripts/probes/probe_scratch_controlflow.py (every distinct node of the control-flow
    # corpus, bodies included, run alone). DFT's work vectors are heap vectors, not arena chunks
    # (``signal/dft.cc``).
    + [("", op) for op in ("DFT", "Log", "Mod", "ReduceMean", "ReduceSumSquare")]
    # Sequence kernels: the element buffers they allocate (``sequence/sequence_ops.cc`` CloneTensor,
    # SplitToSequence's pieces) are values of the program (graphmem.model.program.sequence_elements),
    # not scratch; run alone (tests/ort/test_sequences.py) their in-use high is the replay's.
    + [("", op) for op in ("SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase", "SequenceAt",
                           "SequenceLength", "ConcatFromSequence", "SplitToSequence", "Optional", "OptionalHasElement",
                           "OptionalGetElement")]
    + [("", op) for op in (
        "Add", "And", "AveragePool", "Cast", "Clip", "Concat", "ConstantOfShape",
        "Div", "Dropout", "Elu", "Equal", "Erf", "Expand", "Flatten", "Gather", "GatherElements", "Gemm",
        "GlobalAveragePool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "Identity", "LayerNormalization",
        "LeakyRelu", "Less", "LessOrEqual", "MatMul", "MaxPool", "Mul", "Neg", "Not", "Or", "Pad", "Pow",
        "Range", "Reciprocal", "Relu", "Reshape", "Selu", "Shape", "Sigmoid", "SimplifiedLayerNormalization",
        "Size", "Slice", "Softplus",
        "Split", "Sqrt", "Squeeze", "Sub", "Sum", "Tanh", "Transpose", "Unsqueeze",
    )]
)

#: Every kernel whose scratch is known: ``modelled`` (a rule computes it) or ``none`` (checked to
#: take none). Any other op is unmodelled: counted 0 and listed, never silently assumed free.
SCRATCH_RULES: OpTable[OpRule[ScratchRule]] = OpTable(_MODELLED, with_outcome("none", dict.fromkeys(_NONE, _none)))


def kernel_scratch(
    node: onnx.NodeProto,
    ins: Sequence[TensorType | None],
    outs: Sequence[TensorType | None],
    *,
    host: HostProfile,
    opset: int = 13,
    values: Sequence[np.ndarray | None] | None = None,
    constant: Sequence[bool] | None = None,
) -> KernelScratch | None:
    """The scratch one run of ``node`` requests on ``host``, from its runtime input and output
    types (and the input values shape inference computed, ``values[i]`` for input ``i``;
    ``constant[i]``: input ``i`` is an initializer); an empty :class:`KernelScratch` for a kernel
    without scratch; None when unmodelled. ``opset``: the model's default-domain opset (Softmax
    before 13 flattens instead of transposing)."""
    entry = SCRATCH_RULES.of(node)
    if entry is None:
        return None
    return entry.rule(node, ins, outs, _site(len(ins), host, opset, values, constant))


def _site(n: int, host: HostProfile, opset: int, values: Sequence[np.ndarray | None] | None,
          constant: Sequence[bool] | None) -> ScratchSite:
    vals = list(values or ())
    flags = list(constant or ())
    return ScratchSite(host=host, opset=opset, values=vals + [None] * (n - len(vals)),
                       constant=flags + [False] * (n - len(flags)))


# --- run 1 through the arena -----------------------------------------------------------------


#: The counter ``Graph::GenerateNodeName`` appends to a node name it makes.
_NAME_TOKEN = re.compile(r"_token_(\d+)$")


def prepack_order(graph: OpGraph, nodes: Iterable[int] | None = None) -> list[int]:
    """Node ids in the order ``SessionState::PrepackConstantInitializedTensors`` prepacks them: it
    iterates ``GetGraphViewer().Nodes()`` (``core/framework/session_state.cc``), NodeIndex order.
    For a file that is the file's order; for a graph onnxruntime optimized and wrote (in execution
    order) the nodes its passes made come after the nodes they kept, the layout transformer's last
    (``Model.node_stage``, :func:`graphmem.ort.order.node_stages`), and within a pass in the order
    it made them: ``Graph::GenerateNodeName`` (``core/graph/graph.cc``) suffixes the names it makes
    with one counter (``…_token_N``), which the written names keep; other nodes in the file's order.
    ``nodes``: only these (default: all)."""
    stage = graph.model.node_stage

    def key(nid: int) -> tuple[int, int, int]:
        node = graph.node(nid)
        token = _NAME_TOKEN.search(node.name)
        return stage.get(node_key(node), 0), int(token.group(1)) if token else -1, nid

    return sorted(graph.dag.nodes if nodes is None else nodes, key=key)


def prepacked_in_arena(
    graph: OpGraph, types: Mapping[str, TensorType], values: Mapping[str, np.ndarray] | None = None, *,
    host: HostProfile,
) -> list[tuple[int, bool]]:
    """Arena requests kernels make when the session is created, as (bytes, kept): ConvTranspose<float>
    packs its filter with ``alloc->Alloc`` (``nn/conv_transpose.cc`` PrePack), QLinearConv keeps its
    symmetric packed filter, QGemm transposes a constant B into a temporary
    (:func:`graphmem.ort.quant_scratch.prepack_requests`); other kernels pack with ``Reserve``,
    outside the arena's chunks. In NodeIndex order (:func:`prepack_order`)."""
    model = graph.model
    known = values or {}
    requests: list[tuple[int, bool]] = []
    packing = [nid for nid in graph.dag.nodes  # only these request anything: the others need no order
               if graph.node(nid).op_type == "ConvTranspose" or op_key(graph.node(nid)) in quant.PREPACK_RULES]
    for nid in prepack_order(graph, packing):
        node = graph.node(nid)
        if op_key(node) in quant.PREPACK_RULES:
            ins = [types.get(x) if x else None for x in node.input]
            site = _site(len(ins), host, model.opset, [known.get(x) if x else None for x in node.input],
                         [bool(x) and x in model.weights for x in node.input])
            requests += quant.prepack_requests(node, ins, site)
            continue
        if node.op_type != "ConvTranspose" or not is_default_domain(node.domain) or len(node.input) < 2:
            continue
        w = model.weights.get(node.input[1])
        if w is None or len(w.dims) <= 2 or element_bits(w.dtype) != 32:
            continue
        group = _attr(node, "group", 1)
        k, n = w.dims[0] // group, math.prod(w.dims[1:])
        if k > 1 and n > 1:
            requests.append((4 * k * n * group, True))
    return requests


def step_scratch(
    graph: OpGraph,
    order: Sequence[int],
    types: Mapping[str, TensorType],
    values: Mapping[str, np.ndarray] | None = None,
    *,
    host: HostProfile,
) -> tuple[list[KernelScratch], list[str]]:
    """Each step's scratch on ``host`` (empty when unmodelled), and the unmodelled op types;
    ``values``: the tensor values shape inference computed."""
    out: list[KernelScratch] = []
    unmodelled: dict[str, None] = {}
    known = values or {}
    weights = graph.model.weights
    # a kernel's scratch by what it depends on (op, attributes, types, which inputs are weights),
    # when no input has a known value: the nodes a deep graph repeats are looked at once
    memo: dict[tuple, KernelScratch | None] = {}
    for nid in order:
        node = graph.node(nid)
        names = tuple(node.input)
        ins = [types.get(x) if x else None for x in names]
        outs = [types.get(x) if x else None for x in node.output]
        constant = [bool(x) and x in weights for x in names]
        if outs and all(_empty(t) for t in outs):
            # a kernel whose outputs are all empty returns before it computes (conv.cc, matmul.cc,
            # …: "if (Y->Shape().Size() == 0) return Status::OK()"): no scratch (measured: tiny_cnn
            # at batch 0 takes no region)
            out.append(KernelScratch())
            continue
        key = None
        if not any(x in known for x in names):
            attrs = node.attribute
            key = (node.domain, node.op_type, tuple(a.SerializeToString() for a in attrs) if attrs else (),
                   tuple(ins), tuple(outs), tuple(constant))
        if key is not None and key in memo:
            ks = memo[key]
        else:
            vals = [known.get(x) if x else None for x in names]
            ks = kernel_scratch(node, ins, outs, host=host, opset=graph.model.opset, values=vals, constant=constant)
            if key is not None:
                memo[key] = ks
        if ks is None:
            unmodelled[f"{node.domain + ':' if node.domain else ''}{node.op_type}"] = None
            ks = KernelScratch()
        out.append(ks)
    return out, list(unmodelled)


def _empty(t: TensorType | None) -> bool:
    """A tensor with a known shape of zero elements."""
    return t is not None and t.kind == "tensor" and t.shape is not None and any(d == 0 for d in t.shape)


def replay_run(
    program: Program,
    plan: OrtPlan,
    *,
    graph: OpGraph,
    order: Sequence[int],
    types: Mapping[str, TensorType],
    values: Mapping[str, np.ndarray] | None = None,
    host: HostProfile,
) -> ScratchProfile:
    """Replay run 1 of ``plan`` (over ``graph`` run in ``order`` on ``host``, runtime ``types`` and
    the tensor ``values`` shape inference computed) through :class:`BfcArena`.

    Per step: the step's *before* scratch, the buffers the plan requests at it (in request
    order), its *after* scratch; all scratch is freed; the arena's in-use is sampled (as the
    profiler does, before releases); then the buffers whose last reader it was are released.
    """
    scratch, unmodelled = step_scratch(graph, order, types, values, host=host)
    arena = BfcArena()
    for size, kept in prepacked_in_arena(graph, types, values, host=host):
        chunk = arena.alloc(size)
        if not kept:
            arena.free(chunk)
    base = arena.in_use
    prepack_high = arena.high - base
    arena.high = base
    requests: dict[int, list[int]] = {}
    for value, step in zip(plan.fresh, plan.alloc_step):
        requests.setdefault(step, []).append(value)
    releases: dict[int, list[int]] = {}
    for value, end in zip(plan.fresh, plan.free_step):
        if end is not None:
            releases.setdefault(end, []).append(value)
    chunks: dict[int, Chunk | None] = {}
    in_use: list[int] = []
    high: list[int] = []
    step_high: list[int] = []
    for s, ks in enumerate(scratch):
        temp = [arena.alloc(n) for n in ks.before]
        for v in requests.get(s, ()):
            chunks[v] = arena.alloc(program.values[v].size or 0)
        temp += [arena.alloc(n) for n in ks.after]
        step_high.append(arena.in_use - base)  # every request of the step made, none freed yet
        for c in reversed(temp):
            arena.free(c)
        in_use.append(arena.in_use - base)
        high.append(arena.high - base)
        for v in releases.get(s, ()):
            arena.free(chunks.pop(v, None))
    peak = max(high, default=0)
    nodes = tuple(
        NodeScratch(step=s, node=program.steps[s].label, op_type=graph.node(nid).op_type, scratch=ks)
        for s, (nid, ks) in enumerate(zip(order, scratch))
        if ks.total
    )
    return ScratchProfile(
        per_step=tuple(ks.total for ks in scratch),
        in_use=tuple(in_use),
        high=tuple(high),
        step_high=tuple(step_high),
        peak_bytes=peak,
        peak_step=high.index(peak) if high else -1,
        nodes=nodes,
        unmodelled=tuple(unmodelled),
        baseline_bytes=base,
        prepack_high_bytes=prepack_high,
    )
