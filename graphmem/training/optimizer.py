"""Optimizer state, gradients and step temporaries, and what mixed precision changes.

Conventions (PyTorch 2.13, ``torch/optim``), per trainable parameter of ``n`` elements:

========  ==============================  ==================================================
name      state                           temporaries of one step
========  ==============================  ==================================================
sgd       none                            none (``param.add_(grad, alpha=-lr)``)
momentum  1 buffer (``momentum_buffer``)  none in steady state (``buf.mul_().add_()``)
adam      2 buffers + a 4-byte ``step``   ``exp_avg_sq.sqrt() / c``: 2 tensors of the parameter
adamw     same as adam                    same as adam (weight decay is ``param.mul_``)
========  ==============================  ==================================================

On CPU PyTorch picks the *single-tensor* implementation (``_default_to_fused_or_foreach`` lists
only cuda, xpu, mtia and privateuseone for ``foreach``): parameters are updated one at a time,
so Adam's temporaries peak at twice the *largest* parameter. With ``foreach=True`` (the default
on CUDA) ``torch._foreach_sqrt`` makes one temporary per parameter at once: the size of all of
them (``_multi_tensor_adam``).

Mixed precision (``mixed-fp16`` / ``mixed-bf16``) follows the master-weights recipe (Apex O2,
DeepSpeed): the model's floating weights and gradients are half precision (2 bytes), each
trainable parameter also has an fp32 master copy, optimizer state is fp32, and the step casts
one gradient at a time to fp32 (one more fp32 temporary of the largest parameter). This part is
modelled, not measured (the check script runs fp32 on CPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from graphmem.errors import UsageError

__all__ = [
    "OPTIMIZERS",
    "PRECISIONS",
    "GRAD_MODES",
    "StateCosts",
    "optimizer_costs",
    "check_choice",
]

#: Optimizer name -> (state tensors per parameter, has a per-parameter ``step`` scalar).
OPTIMIZERS: dict[str, tuple[int, bool]] = {
    "sgd": (0, False),
    "momentum": (1, False),
    "adam": (2, True),
    "adamw": (2, True),
}
#: Precision name -> bytes per element of the model copy of floating weights/activations
#: (None: the file's own dtypes).
PRECISIONS: dict[str, int | None] = {"fp32": None, "mixed-fp16": 2, "mixed-bf16": 2}
#: ``persistent``: ``zero_grad(set_to_none=False)``, gradients live through the whole step;
#: ``released``: ``zero_grad()`` (PyTorch's default, set_to_none=True), gradients are created
#: during backward and dropped before the next forward.
GRAD_MODES = ("released", "persistent")

_STEP_SCALAR_BYTES = 4  # Adam's ``state["step"]``: a float32 0-d tensor per parameter (CPU)
_FP32 = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class StateCosts:
    """Bytes the optimizer adds beside the weights and gradients."""

    state_bytes: int
    step_temporary_bytes: int  # most bytes of temporaries alive at once during the step
    master_bytes: int  # fp32 master copies (mixed precision), else 0


def check_choice(kind: str, value: str, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices`` (case-insensitive), else a UsageError naming them."""
    v = value.lower()
    if v not in choices:
        raise UsageError(f"unknown {kind} '{value}': choose one of {', '.join(choices)}")
    return v


def optimizer_costs(
    optimizer: str,
    param_elements: Sequence[int],
    *,
    precision: str = "fp32",
    param_bytes: Sequence[int] | None = None,
    foreach: bool = False,
) -> StateCosts:
    """State, step temporaries and master copies for trainable parameters of these sizes.

    ``param_elements``: element count of each trainable parameter; ``param_bytes``: their bytes
    in the model (fp32 training: the file's dtypes; defaults to 4 bytes per element).

    >>> optimizer_costs("adam", [1000, 10]).state_bytes   # 2 x 4 bytes x 1010 + 2 step scalars
    8088
    >>> optimizer_costs("adam", [1000, 10]).step_temporary_bytes   # 2 x the largest (4000 B)
    8000
    """
    optimizer = check_choice("optimizer", optimizer, tuple(OPTIMIZERS))
    precision = check_choice("precision", precision, tuple(PRECISIONS))
    buffers, has_step = OPTIMIZERS[optimizer]
    mixed = PRECISIONS[precision] is not None
    sizes = list(param_bytes) if param_bytes is not None and not mixed else [
        n * _FP32 for n in param_elements
    ]
    state = buffers * sum(sizes) + (_STEP_SCALAR_BYTES * len(sizes) if has_step else 0)
    if buffers == 2:  # Adam/AdamW: sqrt and the division by the bias correction
        temp = sum(sizes) if foreach else 2 * max(sizes, default=0)
    else:
        temp = 0
    if mixed:
        temp += max(sizes, default=0)  # one gradient cast to fp32 at a time
    return StateCosts(
        state_bytes=state,
        step_temporary_bytes=temp,
        master_bytes=sum(n * _FP32 for n in param_elements) if mixed else 0,
    )
