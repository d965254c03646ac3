"""What onnxruntime-gpu 1.31's CUDA execution provider declares about its kernels.

NOT CHECKED AGAINST A GPU: there was none where this was written. Every rule was read in
``onnxruntime/core/providers/cuda/**`` (KernelDefBuilder ``InputMemoryType``,
``OutputMemoryType``, ``Alias``, ``MayInplace``) and ``docs/OperatorKernels.md`` (the
CUDAExecutionProvider table) of a recent main; rows marked ``recalled`` were not re-read and are
the first to check. Keep every CUDA rule here, named for the version it emulates (as
``graphmem/ort/rules.py`` does for the CPU provider).

* ``CUDA_KERNELS``: op -> since-version ranges with a CUDA kernel; ``_TYPES``: the element types a
  kernel is registered for where it is not "all" (a node of another type has no CUDA kernel and
  runs on the CPU provider).
* ``CPU_INPUTS``: inputs a CUDA kernel reads from CPU memory (``OrtMemTypeCPUInput``: shapes,
  axes, pads, …); ``CPU_OUTPUTS``: outputs it writes to CPU memory — Shape and MemcpyToHost to
  pinned host memory (``OrtMemTypeCPUOutput``, the CUDA-pinned allocator), Size to plain CPU
  memory (declared ``OrtMemTypeCPUInput``).
* ``CUDA_ALIAS`` / ``CUDA_MAY_INPLACE``: buffer sharing; fewer kernels may work in place than on
  the CPU provider (Clip, Cast, Softmax, LogSoftmax do not).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from onnx import TensorProto as T

from graphmem.optable import DEFAULT_DOMAIN, VIEW_OPS, OpTable, domain_table, is_default_domain

__all__ = [
    "PINNED",
    "has_kernel",
    "cpu_inputs",
    "output_memory",
    "cuda_sharing",
    "FP16_LIKE",
]

PINNED = "cuda_pinned"  # the device name of CUDA-pinned host memory

_OPEN = 10**6
_F = frozenset({T.FLOAT, T.DOUBLE, T.FLOAT16, T.BFLOAT16})
_INTS = frozenset({T.INT8, T.INT16, T.INT32, T.INT64, T.UINT8, T.UINT16, T.UINT32, T.UINT64})
_ALL = frozenset({*_F, *_INTS, T.BOOL})
#: Element types GetCpuPreferredNodes never moves to CPU (fallback_cpu_capability.cc).
FP16_LIKE = frozenset({T.FLOAT16, T.BFLOAT16, 17, 18, 19, 20})  # + the four float8 types


_V = TypeVar("_V")


def _default_domain(table: Mapping[str, _V]) -> OpTable[_V]:
    """A table of default-domain kernels written by op type (the CUDA tables list no other)."""
    return OpTable(domain_table(DEFAULT_DOMAIN, table))


def _r(*spans: str) -> tuple[tuple[int, int], ...]:
    out = []
    for span in spans:
        lo, _, hi = span.partition("-")
        out.append((int(lo), int(hi) if hi else _OPEN))
    return tuple(out)


#: Since-version ranges with a CUDA kernel (docs/OperatorKernels.md, CUDAExecutionProvider).
CUDA_KERNELS: OpTable[tuple[tuple[int, int], ...]] = _default_domain({
    **{op: _r("6-") for op in ("Abs", "Neg", "Reciprocal", "Sqrt", "Exp", "Log", "Ceil", "Floor")},
    **{op: _r("7-") for op in ("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Sin", "Cos", "PRelu")},
    **{op: _r("1-") for op in ("Not", "Softplus", "Softsign", "ThresholdedRelu", "GlobalAveragePool",
                               "GlobalMaxPool", "ImageScaler", "LRN", "Flatten", "Identity", "Shape", "Size",
                               "Reshape", "Slice", "Squeeze", "Unsqueeze", "Transpose", "MaxPool", "Conv",
                               "ConvTranspose", "MatMul", "ArgMax", "ArgMin", "Softmax", "LogSoftmax", "If",
                               "Loop", "MemcpyFromHost", "MemcpyToHost", "LayerNormalization", "TopK",
                               "Affine", "Crop", "ParametricSoftplus", "ScaledTanh", "RandomNormal",
                               "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                               "SimplifiedLayerNormalization", "DepthToSpace", "SpaceToDepth")},
    **{op: _r("1-") for op in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                               "ReduceMin", "ReduceMean", "ReduceProd", "ReduceSum", "ReduceSumSquare")},
    **{op: _r("6-") for op in ("Elu", "Selu", "HardSigmoid", "LeakyRelu", "Relu", "Sigmoid", "Tanh", "Cast",
                               "Clip", "Tile", "InstanceNormalization", "Sum", "Max", "Min")},
    **{op: _r("7-") for op in ("AveragePool", "BatchNormalization", "Dropout", "Gemm", "Upsample", "GRU",
                               "LSTM", "RNN", "Greater", "Less", "Equal")},
    "Concat": _r("4-"), "Split": _r("2-"), "Pad": _r("2-"), "Gather": _r("1-"),
    **{op: _r("9-") for op in ("ConstantOfShape", "Where", "Erf", "NonZero", "EyeLike", "Compress", "Shrink",
                               "IsNaN", "Scatter")},
    **{op: _r("10-") for op in ("Resize", "ReverseSequence", "RoiAlign", "IsInf", "Mod", "MatMulInteger",
                                "QuantizeLinear", "DequantizeLinear")},
    **{op: _r("11-") for op in ("Range", "Round", "CumSum", "OneHot", "GatherElements", "GatherND",
                                "ScatterElements", "ScatterND", "ConcatFromSequence", "SequenceAt",
                                "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert",
                                "SequenceLength")},
    "Expand": _r("8-"), "Scan": _r("8-"), "Einsum": _r("12-"), "GreaterOrEqual": _r("12-"),
    "LessOrEqual": _r("12-"), "Sign": _r("13-"), "Trilu": _r("14-"), "HardSwish": _r("14-"),
    "GridSample": _r("16-"), "Gelu": _r("20-"), "RMSNormalization": _r("23-"), "RotaryEmbedding": _r("23-"),
    "Attention": _r("23-"), "TensorScatter": _r("24-"),
})

_FLOAT_ONLY = (
    "ArgMax", "ArgMin", "AveragePool", "BatchNormalization", "Ceil", "Conv", "ConvTranspose", "Cos", "Sin",
    "DepthToSpace", "SpaceToDepth", "Dropout", "Einsum", "Elu", "Selu", "Erf", "Exp", "Log", "Floor", "GRU",
    "LSTM", "RNN", "Gemm", "GlobalAveragePool", "GlobalMaxPool", "GridSample", "HardSigmoid", "HardSwish",
    "InstanceNormalization", "LRN", "LayerNormalization", "LeakyRelu", "LogSoftmax", "Softmax", "MatMul",
    "Relu", "Sigmoid", "Tanh", "Sqrt", "Sum", "Softplus", "Softsign", "Reciprocal", "Gelu", "RMSNormalization",
    "Affine", "ImageScaler", "IsInf", "IsNaN", "Round", "PRelu", "ReduceLogSum", "ReduceLogSumExp",
    "ThresholdedRelu", "ParametricSoftplus", "ScaledTanh", "SimplifiedLayerNormalization", "Shrink",
)
_SMALL_INTS = frozenset({T.INT8, T.INT16, T.UINT8, T.UINT16})

#: op -> (checked input, [(since-version range, allowed element types)]) where not "all types".
_TYPES: OpTable[tuple[int, tuple[tuple[tuple[int, int], frozenset[int]], ...]]] = _default_domain({
    **{op: (0, ((( 1, _OPEN), _F),)) for op in _FLOAT_ONLY},
    **{op: (0, (((1, 13), _ALL - _SMALL_INTS - {T.BOOL}), ((14, _OPEN), _ALL - {T.BOOL})))
       for op in ("Add", "Sub", "Mul", "Div")},
    "MaxPool": (0, (((1, 11), _F), ((12, _OPEN), _F | {T.INT8, T.UINT8}))),
    "Where": (1, (((9, _OPEN), frozenset({*_F, T.INT32, T.INT64, T.UINT8})),)),
    "Pad": (0, (((2, 12), _F), ((13, _OPEN), _F | {T.BOOL}))),
    "Clip": (0, (((6, 11), _F), ((12, _OPEN), _F | {T.INT64, T.INT8, T.UINT64, T.UINT8}))),
    "Resize": (0, (((10, _OPEN), frozenset({T.FLOAT, T.DOUBLE, T.FLOAT16, T.INT32, T.UINT8})),)),
    "GatherND": (0, (((11, _OPEN), frozenset({*_F, T.BOOL, T.INT64})),)),
    "ReduceMean": (0, (((1, _OPEN), _F | {T.INT32}),)),
    "ReduceProd": (0, (((1, _OPEN), _F | {T.INT32}),)),
    "ReduceL1": (0, (((1, _OPEN), _F | {T.INT32}),)),
    "ReduceL2": (0, (((1, _OPEN), _F | {T.INT32}),)),
    "NonZero": (0, (((9, _OPEN), frozenset({T.BOOL, T.FLOAT, T.FLOAT16, T.INT32, T.INT64, T.UINT8})),)),
    "Equal": (0, (((7, 10), frozenset({T.BOOL, T.INT32, T.INT64})), ((11, _OPEN), _ALL - _SMALL_INTS))),
    "Greater": (0, (((7, 8), _F), ((9, _OPEN), _F | {T.INT32, T.INT64, T.UINT32, T.UINT64}))),
    "Less": (0, (((7, 8), _F), ((9, _OPEN), _F | {T.INT32, T.INT64, T.UINT32, T.UINT64}))),
    "Max": (0, (((6, 11), _F), ((12, _OPEN), _F | {T.INT32, T.INT64, T.UINT32, T.UINT64}))),
    "Min": (0, (((6, 11), _F), ((12, _OPEN), _F | {T.INT32, T.INT64, T.UINT32, T.UINT64}))),
    "Pow": (0, (((7, 11), _F), ((12, _OPEN), _F | {T.INT32, T.INT64}))),
    "Range": (0, (((11, _OPEN), frozenset({T.DOUBLE, T.FLOAT, T.INT16, T.INT32, T.INT64})),)),
    "Tile": (0, (((6, _OPEN), _F | {T.INT32, T.INT64}),)),
    "TopK": (0, (((1, _OPEN), frozenset({T.FLOAT, T.DOUBLE, T.FLOAT16, T.INT32, T.INT64})),)),
    "ReduceSum": (0, (((1, _OPEN), _F | {T.INT32, T.INT64}),)),
    "CumSum": (0, (((11, _OPEN), _F | {T.INT32, T.INT64, T.UINT32, T.UINT64}),)),
    "Neg": (0, (((6, _OPEN), _F | {T.INT8, T.INT16, T.INT32, T.INT64}),)),
    "MatMulInteger": (0, (((10, _OPEN), frozenset({T.INT8})),)),
    "Cast": (0, (((6, _OPEN), _ALL),)),  # no strings (GetCapability refuses a Cast to string too)
})


def _in(version: int, spans: tuple[tuple[int, int], ...]) -> bool:
    return any(lo <= version <= hi for lo, hi in spans)


def has_kernel(domain: str, op_type: str, since_version: int, dtypes: tuple[int, ...]) -> bool:
    """True when a CUDA kernel is registered for the op at ``since_version`` and its input types
    (``dtypes``: element type of each input, 0 when absent or unknown)."""
    spans = CUDA_KERNELS.lookup(domain, op_type)  # contrib kernels: not modelled (optimized graphs only)
    if spans is None or not _in(since_version, spans):
        return False
    limit = _TYPES.lookup(domain, op_type)
    if limit is None:
        return all(d != T.STRING for d in dtypes)
    index, ranges = limit
    dtype = dtypes[index] if index < len(dtypes) else 0
    if dtype == 0:
        return True  # unknown type: assume the common (float) kernel
    return any(lo <= since_version <= hi and dtype in allowed for (lo, hi), allowed in ranges)


#: op -> [(since-version range, input positions read from CPU memory)]
CPU_INPUTS: OpTable[tuple[tuple[tuple[int, int], tuple[int, ...]], ...]] = _default_domain({
    "MemcpyFromHost": ((( 1, _OPEN), (0,)),),  # cuda_execution_provider.cc
    "Reshape": (((5, _OPEN), (1,)),),  # tensor/reshape.cc
    "Expand": (((8, _OPEN), (1,)),),  # tensor/expand.cc
    "Tile": (((6, _OPEN), (1,)),),  # tensor/tile.cc
    "Slice": (((10, _OPEN), (1, 2, 3, 4)),),  # tensor/slice.cc
    "Unsqueeze": (((13, _OPEN), (1,)),),  # tensor/unsqueeze.cc
    "Squeeze": (((13, _OPEN), (1,)),),  # tensor/squeeze.cc
    "ConstantOfShape": (((9, _OPEN), (0,)),),  # generator/constant_of_shape.cc
    "TopK": (((10, _OPEN), (1,)),),  # math/topk.cc
    "Upsample": (((9, 9), (1,)),),  # tensor/upsample.cc (recalled)
    "Resize": (((10, 10), (1,)), ((11, _OPEN), (1, 2, 3))),  # tensor/resize.cc (10, 11-12 read; 13+ recalled)
    "Pad": (((11, 17), (1, 2)), ((18, _OPEN), (1, 2, 3))),  # tensor/pad.cc (11 read; 18+ recalled)
    "Split": (((13, _OPEN), (1,)),),  # tensor/split.cc
    "ReduceSum": (((13, _OPEN), (1,)),),  # reduction/reduction_ops.cc
    **{op: (((18, _OPEN), (1,)),) for op in ("ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd", "ReduceL1",
                                             "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")},
    "OneHot": (((11, _OPEN), (1, 2)),),  # tensor/onehot.cc
    "Dropout": (((12, _OPEN), (1, 2)),),  # nn/dropout.cc
    "Clip": (((11, _OPEN), (1, 2)),),  # math/clip.cc
    "Trilu": (((14, _OPEN), (1,)),),  # tensor/trilu.cc
    "CumSum": (((11, _OPEN), (1,)),),  # math/cumsum.cc
    "If": (((1, _OPEN), (0,)),),  # controlflow/if.cc (recalled)
    "Loop": (((1, _OPEN), (0, 1)),),  # controlflow/loop.cc (recalled)
})

#: op -> {output position: memory}: "pinned" (OrtMemTypeCPUOutput) or "cpu" (OrtMemTypeCPUInput)
CPU_OUTPUTS: OpTable[dict[int, str]] = _default_domain({
    "MemcpyToHost": {0: PINNED},  # cuda_execution_provider.cc
    "Shape": {0: PINNED},  # tensor/shape_op.cc
    "Size": {0: "cpu"},  # tensor/size.cc declares OrtMemTypeCPUInput for its output
})


def cpu_inputs(domain: str, op_type: str, since_version: int) -> tuple[int, ...]:
    """Input positions the op's CUDA kernel reads from CPU memory."""
    for span, positions in CPU_INPUTS.lookup(domain, op_type, ()):
        if _in(since_version, (span,)):
            return positions
    return ()


def output_memory(domain: str, op_type: str, position: int) -> str:
    """The device an output of a CUDA kernel lives on: "cuda", "cpu" or PINNED."""
    return CPU_OUTPUTS.lookup(domain, op_type, {}).get(position, "cuda")


_INPLACE = (  # activation/activations.cc .MayInplace(0, 0)
    "Elu", "HardSigmoid", "LeakyRelu", "Relu", "Selu", "Sigmoid", "Softplus", "Softsign", "Tanh",
    "ThresholdedRelu",
)
_INPLACE_RECALLED = ("ScatterND", "Trilu")  # tensor/scatter_nd.cc, tensor/trilu.cc (ScatterElements: none)


#: (alias pairs, may-in-place pairs) of the CUDA kernels that share: the views (tensor/*.cc
#: ``.Alias(0, 0)``) and the in-place ones; Dropout 7-11 is IdentityOp, an alias (identity_op.cc),
#: Dropout 12+ a real kernel that shares nothing (nn/dropout.cc): see :func:`cuda_sharing`.
CUDA_SHARING: OpTable[tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]] = _default_domain(
    {
        **{op: (((0, 0),), ()) for op in VIEW_OPS},
        **{op: ((), ((0, 0),)) for op in (*_INPLACE, *_INPLACE_RECALLED)},
    }
)


def cuda_sharing(
    domain: str, op_type: str, since_version: int
) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """(alias pairs, may-in-place pairs) of a CUDA kernel (:data:`CUDA_SHARING`)."""
    if op_type == "Dropout" and since_version <= 11 and is_default_domain(domain):
        return ((0, 0),), ()
    return CUDA_SHARING.lookup(domain, op_type, ((), ()))
