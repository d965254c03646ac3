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

``foreach`` makes one more pair of scalars per parameter (``_foreach_div_`` by a Python float:
an 8-byte wrapped double and its 4-byte cast, freed before the next parameter), as the
single-tensor step does: not counted in either (12 bytes).

Mixed precision (``mixed-fp16`` / ``mixed-bf16``) is ``torch.autocast('cpu')``
(:mod:`graphmem.training.autocast`): weights, gradients and optimizer state stay fp32 — the
optimizer step is the fp32 one. ``mixed-fp16`` adds ``torch.amp.GradScaler('cpu')``
(``torch/amp/grad_scaler.py``): its 0-d fp32 ``_scale`` and int32 ``_growth_tracker`` (8 bytes,
kept as state), and during the step the 4-byte ``found_inf`` copy ``unscale_`` keeps for
``step`` (``_MultiDeviceReplicator``). Measured by ``scripts/train_check.py --precision``.
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
#: Precision name -> bytes per element of the activations autocast computes in the half type
#: (None: no autocast, the file's own dtypes).
PRECISIONS: dict[str, int | None] = {"fp32": None, "mixed-fp16": 2, "mixed-bf16": 2}
#: GradScaler('cpu'): ``_scale`` (float32) and ``_growth_tracker`` (int32), 0-d each.
_SCALER_STATE_BYTES = 4 + 4
#: ``found_inf`` as ``unscale_`` copies it per device (float32, 0-d), held through ``step``.
_SCALER_STEP_BYTES = 4
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
    master_bytes: int  # fp32 master copies: none (autocast keeps the fp32 weights themselves)


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
    in the model (the file's dtypes; defaults to 4 bytes per element).

    >>> optimizer_costs("adam", [1000, 10]).state_bytes   # 2 x 4 bytes x 1010 + 2 step scalars
    8088
    >>> optimizer_costs("adam", [1000, 10]).step_temporary_bytes   # 2 x the largest (4000 B)
    8000
    """
    optimizer = check_choice("optimizer", optimizer, tuple(OPTIMIZERS))
    precision = check_choice("precision", precision, tuple(PRECISIONS))
    buffers, has_step = OPTIMIZERS[optimizer]
    sizes = list(param_bytes) if param_bytes is not None else [n * _FP32 for n in param_elements]
    state = buffers * sum(sizes) + (_STEP_SCALAR_BYTES * len(sizes) if has_step else 0)
    if buffers == 2:  # Adam/AdamW: sqrt and the division by the bias correction
        temp = sum(sizes) if foreach else 2 * max(sizes, default=0)
    else:
        temp = 0
    if precision == "mixed-fp16":
        state += _SCALER_STATE_BYTES
        temp += _SCALER_STEP_BYTES
    return StateCosts(state_bytes=state, step_temporary_bytes=temp, master_bytes=0)
