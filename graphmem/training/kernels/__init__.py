"""The CPU kernels a PyTorch training step runs, as far as their temporaries go: one table.

:data:`KERNELS` maps ``(domain, op_type)`` to the op's :class:`KernelRule`: the bytes its forward
kernel holds beyond its outputs, the bytes its backward holds beyond the gradients it returns,
and the notes naming what those figures leave out. Ops not in the table make no temporaries
(most elementwise and reduction kernels write straight into their outputs).

The rules copy oneDNN v3.12's and ATen's CPU internals as torch 2.13 runs them:
:mod:`.workspace` (fp32 kernels: oneDNN's reorders, blocked results and scratchpads, ATen's
copies; the LSTM/GRU), :mod:`.halfconv` (the autocast convolutions' backward) and
:mod:`.onednn_rnn` (the bf16 LSTM's brgemm buffers). Which kernels run, their thread split and
their cache blocking depend on the machine: every rule takes the host profile
(:class:`graphmem.host.HostProfile`) and reads the machine only through it.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmem.host import HostProfile
from graphmem.optable import OpTable
from graphmem.training.kernels import halfconv
from graphmem.training.kernels.workspace import (
    Note,
    Temp,
    broadcast_grads,
    conv_forward,
    conv_note,
    conv_transpose_forward,
    gru_backward,
    gru_forward,
    half_mean_copies,
    ic_padding_note,
    layer_norm_copy,
    lstm_backward,
    lstm_forward,
    no_temporaries,
    rnn_note,
)
from graphmem.training.saved import OpView

__all__ = ["KernelRule", "KERNELS", "forward_temporaries", "backward_temporaries", "unmodelled"]


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelRule:
    """One op's kernel temporaries: forward and backward rules, and the notes of its gaps."""

    forward: Temp = no_temporaries
    backward: Temp = no_temporaries
    notes: tuple[Note, ...] = ()


#: ``(domain, op_type)`` -> the op's kernel rules on a host.
KERNELS: OpTable[KernelRule] = OpTable({
    ("", "Conv"): KernelRule(forward=conv_forward, backward=halfconv.conv_backward,
                             notes=(conv_note, ic_padding_note, halfconv.unmodelled_note)),
    ("", "ConvTranspose"): KernelRule(forward=conv_transpose_forward, backward=halfconv.conv_backward,
                                      notes=(conv_note, halfconv.unmodelled_note)),
    ("", "LSTM"): KernelRule(forward=lstm_forward, backward=lstm_backward, notes=(rnn_note,)),
    ("", "GRU"): KernelRule(forward=gru_forward, backward=gru_backward, notes=(rnn_note,)),
    ("", "Mul"): KernelRule(backward=broadcast_grads),
    ("", "Div"): KernelRule(backward=broadcast_grads),
    ("", "LayerNormalization"): KernelRule(forward=layer_norm_copy, backward=layer_norm_copy),
    ("", "ReduceMean"): KernelRule(forward=half_mean_copies),
})


def forward_temporaries(op: OpView, host: HostProfile, domain: str = "") -> int:
    """Bytes the op's forward kernel holds beyond its outputs at its busiest moment, on ``host``."""
    rule = KERNELS.lookup(domain, op.op_type)
    return rule.forward(op, host) if rule is not None else 0


def backward_temporaries(op: OpView, host: HostProfile, domain: str = "") -> int:
    """Bytes the op's backward kernel holds beyond the gradients it returns, on ``host``."""
    rule = KERNELS.lookup(domain, op.op_type)
    return rule.backward(op, host) if rule is not None else 0


def unmodelled(op: OpView, host: HostProfile, domain: str = "") -> str | None:
    """What the op's temporaries on ``host`` leave out, as one warning line; None when nothing
    known."""
    rule = KERNELS.lookup(domain, op.op_type)
    notes = [note for fn in (rule.notes if rule is not None else ()) if (note := fn(op, host))]
    return "; ".join(notes) or None
