"""Which kernels share buffers, as onnxruntime 1.31's CPU execution provider declares them.

These tables are tied to the runtime version they emulate; keep every such rule here.

* ``ALIAS``: the kernel's output *is* its input's buffer (``KernelDefBuilder::Alias``): views
  (``providers/cpu/tensor/reshape.cc``, ``squeeze.cc``, ``unsqueeze.cc``, ``flatten.cc``,
  ``identity_op.cc``), OptionalGetElement (``optional/optional_ops.cc``). Dropout on CPU is not an alias.
* ``MAY_INPLACE``: the output may take its input's buffer when that is the input's last use and
  the static shapes match (``KernelDefBuilder::MayInplace``): ``providers/cpu/activation/
  activations.cc``, ``math/clip.cc``, ``tensor/cast_op.cc``, ``math/softmax.cc``,
  ``tensor/trilu.cc``, ``tensor/scatter.cc``. Probed as neither: Add, Sub, Mul, Div, Pow, Erf,
  Exp, Gelu, Where, Expand, Transpose, Slice, Concat, LayerNormalization, BatchNormalization.

Contrib kernels (``onnxruntime/contrib_ops/cpu/``), which onnxruntime's optimizers introduce:

* ``com.microsoft.nchwc`` Conv: its fused Sum input (3) may become the output (``nchwc_ops.cc``,
  ``.MayInplace(3, 0)``); no other NCHWc kernel (ReorderInput, ReorderOutput, MaxPool,
  AveragePool, GlobalMaxPool, GlobalAveragePool, Upsample) shares;
* ``com.microsoft`` FusedConv: the same for its Sum input (``fused_conv.cc``); FastGelu: its input
  (``bert/fast_gelu.cc``, ``.MayInplace(0, 0)``); BiasGelu (``bert/bias_gelu.cc``), Gelu
  (``activations.cc``), FusedGemm (``fused_gemm.cc``), FusedMatMul (``fused_matmul.cc``),
  SkipLayerNormalization (``skip_layer_norm.cc``): neither;
* ONNX-domain contrib kernels ParametricSoftplus and ScaledTanh (``activations.cc``): input 0.
"""

from __future__ import annotations

from collections.abc import Callable

from graphmem.optable import MS_DOMAIN, NCHWC_DOMAIN, VIEW_OPS, OpTable, default_domain_ops

__all__ = [
    "RUNTIME_NAME",
    "ALIAS",
    "MAY_INPLACE",
    "UNWRITTEN_OUTPUTS",
    "RUNS_AS_FUNCTION",
    "sharing",
    "unwritten_outputs",
    "runs_as_function",
    "PREPACKED",
    "prepacks",
]

RUNTIME_NAME = "onnxruntime 1.31 CPUExecutionProvider"

Pairs = tuple[tuple[int, int], ...]

_INPLACE_OPS = (
    "Relu",
    "Sigmoid",
    "Tanh",
    "LeakyRelu",
    "Elu",
    "Selu",
    "HardSigmoid",
    "Softplus",
    "Softsign",
    "ThresholdedRelu",
    "Celu",
    "Clip",
    "Cast",
    "Softmax",
    "LogSoftmax",
    "Trilu",
    "ScatterElements",
    "Shrink",  # providers/cpu/nn/shrink.cc; found by scripts/probes/probe_inplace.py
    "BitCast",  # providers/cpu/tensor/bitcast_op.cc (.MayInplace(0, 0), opset 26)
    "TensorScatter",  # providers/cpu/llm/tensorscatter.cc (.MayInplace(0, 0): the KV cache updated in place)
    "ParametricSoftplus",  # contrib_ops/cpu/activations.cc (ONNX-domain contrib kernels)
    "ScaledTanh",
)

#: (domain, op_type) -> ((input position, output position), ...)
ALIAS: OpTable[Pairs] = OpTable(
    default_domain_ops(VIEW_OPS, ((0, 0),)),
    # providers/cpu/optional/optional_ops.cc (.Alias(0, 0)): the tensor an optional holds
    {("", "OptionalGetElement"): ((0, 0),)},
)
MAY_INPLACE: OpTable[Pairs] = OpTable(
    default_domain_ops(_INPLACE_OPS, ((0, 0),)),
    {
        (NCHWC_DOMAIN, "Conv"): ((3, 0),),  # contrib_ops/cpu/nchwc_ops.cc
        (MS_DOMAIN, "FusedConv"): ((3, 0),),  # contrib_ops/cpu/fused_conv.cc
        (MS_DOMAIN, "FastGelu"): ((0, 0),),  # contrib_ops/cpu/bert/fast_gelu.cc
    },
)


def sharing(domain: str, op_type: str) -> tuple[Pairs, Pairs]:
    """(alias pairs, may-in-place pairs) of one op; empty tuples when it shares nothing."""
    return ALIAS.lookup(domain, op_type, ()), MAY_INPLACE.lookup(domain, op_type, ())


#: Outputs a CPU kernel never writes, so onnxruntime never allocates them: BatchNormalization's
#: training outputs (running mean/var, saved mean/var) in the inference build
#: (``providers/cpu/nn/batch_norm.h``: written only under BATCHNORM_INCLUDE_TRAINING_SUPPORT);
#: measured on training-mode exports (``models/train_cnn.onnx``). Graph outputs among them are
#: allocated all the same (onnx's test_batchnorm_example_training_mode).
UNWRITTEN_OUTPUTS: OpTable[tuple[int, ...]] = OpTable({("", "BatchNormalization"): (1, 2, 3, 4)})


def unwritten_outputs(domain: str, op_type: str) -> tuple[int, ...]:
    """Output positions the kernel never allocates."""
    return UNWRITTEN_OUTPUTS.lookup(domain, op_type, ())


#: Ops onnxruntime 1.31's CPU provider has no kernel for, from the opset given on: it inlines
#: their ONNX function bodies when it builds the session, appending the body's nodes (with new
#: node indices) to the graph. Probed with ``optimized_model_filepath`` at ORT_DISABLE_ALL
#: (the written graph holds the body instead of the op).
RUNS_AS_FUNCTION: OpTable[int] = OpTable(
    {
        ("", "HardSwish"): 14,
        ("", "Mish"): 18,
        ("", "Swish"): 24,
        ("", "CastLike"): 15,
        ("", "GroupNormalization"): 18,
        ("", "CenterCropPad"): 18,
        ("", "SoftmaxCrossEntropyLoss"): 12,
        ("", "NegativeLogLikelihoodLoss"): 12,
        ("", "SequenceMap"): 17,
        ("", "Bernoulli"): 15,  # no CPU kernel (onnxruntime 1.31 registers none); scripts/op_coverage.py
        # opsets 27-28: onnxruntime 1.31 refuses them (ValidateOpsetForDomain); 1.32 loads them and
        # has no CPU kernel for these (scripts/op_coverage.py --ort-opset 28)
        ("", "LinearAttention"): 27,
        ("", "CausalConvWithState"): 27,
        ("", "SwiGLU"): 28,
    }
)


def runs_as_function(domain: str, op_type: str, opset: int) -> bool:
    """True when onnxruntime runs this op as the nodes of its function body."""
    since = RUNS_AS_FUNCTION.lookup(domain, op_type)
    return since is not None and opset >= since


def _matrix(rank: int) -> bool:
    """GemmPackBFp32 packs a 2-D matrix only."""
    return rank == 2


def _filter(rank: int) -> bool:
    """ConvTranspose packs a filter (rank > 2)."""
    return rank > 2


def _any_rank(rank: int) -> bool:
    return True


#: (domain, op_type) -> (input positions whose constant float initializer the CPU kernel packs at
#: session creation, the ranks it packs) (``OpKernel::PrePack``: ``math/matmul.cc`` and
#: ``math/gemm.cc`` GemmPackBFp32, 2-D B only; ``rnn/deep_cpu_lstm.cc`` and ``rnn/deep_cpu_gru.cc``
#: W and R; ``nn/conv_transpose.cc`` the filter). An initializer every consumer packs is released
#: afterwards (``session_state.cc`` PrepackConstantInitializedTensors), also when the consumer is in a body.
PREPACKED: OpTable[tuple[tuple[int, ...], Callable[[int], bool]]] = OpTable(
    {
        ("", "MatMul"): ((1,), _matrix),
        ("", "Gemm"): ((1,), _matrix),
        ("", "LSTM"): ((1, 2), _any_rank),
        ("", "GRU"): ((1, 2), _any_rank),
        ("", "ConvTranspose"): ((1,), _filter),
        (MS_DOMAIN, "FusedMatMul"): ((1,), _matrix),
        (MS_DOMAIN, "FusedGemm"): ((1,), _matrix),
    }
)

_FLOAT = 1  # onnx.TensorProto.FLOAT


def prepacks(domain: str, op_type: str, position: int, dtype: int, rank: int) -> bool:
    """Whether the CPU kernel packs its input ``position`` when it is a constant of that type."""
    entry = PREPACKED.lookup(domain, op_type)
    if entry is None or dtype != _FLOAT:
        return False
    positions, packs_rank = entry
    return position in positions and packs_rank(rank)
