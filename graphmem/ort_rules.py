"""Which kernels share buffers, as onnxruntime 1.31's CPU execution provider declares them.

These tables are tied to the runtime version they emulate; keep every such rule here.

* ``ALIAS``: the kernel's output *is* its input's buffer (``KernelDefBuilder::Alias``): views
  (``providers/cpu/tensor/reshape.cc``, ``squeeze.cc``, ``unsqueeze.cc``, ``flatten.cc``,
  ``identity_op.cc``). Dropout on CPU is not an alias.
* ``MAY_INPLACE``: the output may take its input's buffer when that is the input's last use and
  the static shapes match (``KernelDefBuilder::MayInplace``): ``providers/cpu/activation/
  activations.cc``, ``math/clip.cc``, ``tensor/cast_op.cc``, ``math/softmax.cc``,
  ``tensor/trilu.cc``, ``tensor/scatter.cc``. Probed as neither: Add, Sub, Mul, Div, Pow, Erf,
  Exp, Gelu, Where, Expand, Transpose, Slice, Concat, LayerNormalization, BatchNormalization.
"""

from __future__ import annotations

__all__ = ["RUNTIME_NAME", "ALIAS", "MAY_INPLACE", "sharing"]

RUNTIME_NAME = "onnxruntime 1.31 CPUExecutionProvider"

_VIEW_OPS = ("Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity")
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
)

#: (domain, op_type) -> ((input position, output position), ...)
ALIAS: dict[tuple[str, str], tuple[tuple[int, int], ...]] = {("", op): ((0, 0),) for op in _VIEW_OPS}
MAY_INPLACE: dict[tuple[str, str], tuple[tuple[int, int], ...]] = {
    ("", op): ((0, 0),) for op in _INPLACE_OPS
}


def sharing(domain: str, op_type: str) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """(alias pairs, may-in-place pairs) of one op; empty tuples when it shares nothing."""
    key = ("" if domain == "ai.onnx" else domain, op_type)
    return ALIAS.get(key, ()), MAY_INPLACE.get(key, ())
