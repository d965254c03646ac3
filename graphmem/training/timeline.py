"""One training step as a timeline: forward ops, backward ops, the optimizer step, with what
holds the memory at each (weights, optimizer state, inputs, gradients, saved activations, the
rest) as bands that stack up to the phase totals of :class:`TrainingEstimate` exactly.

Forward and backward come from the passes' own live bytes (:class:`graphmem.training.phases.Pass`,
split into bands by what each storage is); the optimizer step is one step: weights, state,
inputs, every gradient and the step's temporaries.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmem.errors import InvariantError, UsageError
from graphmem.training.estimate import TrainingEstimate
from graphmem.training.phases import ACTIVATIONS, SAVED, TEMPORARIES, WEIGHT_GRADS

__all__ = ["PhaseSpan", "TrainingTimeline", "training_timeline", "BAND_ORDER"]

#: Bands from the bottom up: what is held all step first, then what comes and goes.
BAND_ORDER = ("weights", "optimizer state", "inputs", WEIGHT_GRADS, SAVED, ACTIVATIONS, TEMPORARIES)


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseSpan:
    """One phase's steps ``first..last`` (inclusive) and its peak."""

    name: str  # "forward" | "backward" | "optimizer"
    first: int
    last: int
    peak_at: int  # the step of the phase's peak (the first such)
    total_bytes: int  # = the TrainingEstimate's phase total
    at: str  # the op at the peak


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingTimeline:
    labels: tuple[str, ...]
    bands: tuple[tuple[str, tuple[int, ...]], ...]  # (band, bytes per step), in BAND_ORDER
    totals: tuple[int, ...]  # per step: the sum of the bands
    phases: tuple[PhaseSpan, ...]


def training_timeline(e: TrainingEstimate) -> TrainingTimeline:
    """The step's timeline; each phase's highest total equals its :attr:`TrainingEstimate.phases`
    figure (an :class:`~graphmem.errors.InvariantError` if it did not: the bands would be wrong).
    An estimate without its passes (built by hand) is a :class:`~graphmem.errors.UsageError`."""
    fwd, bwd = e.forward, e.backward
    if fwd is None or bwd is None:
        raise UsageError("the estimate keeps no per-step passes (estimate_training keeps them): no timeline to draw")
    n_f, n_b = len(fwd.labels), len(bwd.labels)
    steps = n_f + n_b + 1
    persistent = e.config.grads == "persistent"
    const = {
        "weights": e.weights_bytes,
        "optimizer state": e.optimizer_state_bytes,
        "inputs": e.inputs_bytes,
    }
    bands: dict[str, list[int]] = {name: [0] * steps for name in BAND_ORDER}
    for name, value in const.items():
        bands[name] = [value] * steps
    kept = e.grads_bytes if persistent else 0
    bands[WEIGHT_GRADS] = [kept] * (n_f + n_b) + [e.grads_bytes]
    for offset, p in ((0, fwd), (n_f, bwd)):
        for name, values in p.bands:
            target = bands[name]
            for s, v in enumerate(values):
                target[offset + s] += v
    bands[TEMPORARIES][-1] += e.optimizer_temp_bytes
    totals = tuple(sum(bands[name][s] for name in BAND_ORDER) for s in range(steps))
    labels = (*fwd.labels, *bwd.labels, "(optimizer step)")
    spans = []
    for name, first, last in (
        ("forward", 0, n_f - 1),
        ("backward", n_f, n_f + n_b - 1),
        ("optimizer", steps - 1, steps - 1),
    ):
        window = totals[first : last + 1]
        top = max(window, default=0)
        peak_at = first + window.index(top) if window else first
        expected = next(p.total_bytes for p in e.phases if p.phase == name)
        if top != expected:
            raise InvariantError(
                f"the {name} bands sum to {top:,} B at their highest, the estimate says {expected:,} B"
            )
        spans.append(PhaseSpan(name=name, first=first, last=last, peak_at=peak_at, total_bytes=top, at=labels[peak_at]))
    return TrainingTimeline(
        labels=labels,
        bands=tuple((name, tuple(bands[name])) for name in BAND_ORDER),
        totals=totals,
        phases=tuple(spans),
    )
