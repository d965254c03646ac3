"""What every memory picture shares, without drawing anything: step bins, bands, axis ticks.

A graph of 25,000 nodes has more steps than a picture has pixels, so steps are gathered into
bins of consecutive steps; a bin shows the *largest* figure of its steps (and the smallest
requested one, for the envelope), so the peak stays exact: the bin holding the peak step shows
the peak's exact bytes, at that step. Up to ``max_bins`` steps every step is its own bin.

The bands say *what* is live: the largest buffers held at the peak step, each drawn over the
steps it is held, and the rest of the requested bytes as "other". A bin's bands are those of
its own highest step, so they always stack up to the bin's requested bytes exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from graphmem.analysis.timeline import MemoryTimeline
from graphmem.errors import UsageError

__all__ = ["Bin", "Band", "step_bins", "peak_window", "peak_bands", "byte_ticks", "tick_label", "short_name"]

_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("B", 1))
_STEPS = (1, 2, 2.5, 5)


@dataclass(frozen=True, slots=True, kw_only=True)
class Bin:
    """Consecutive steps ``first..last`` (inclusive) drawn as one x position."""

    first: int
    last: int
    at: int  # the bin's step with the most requested bytes (the first such)
    requested: int  # the most requested bytes of its steps
    requested_low: int  # the fewest
    lower_bound: int | None  # the largest lower bound of its steps; None: not computed (control flow)
    in_use: int | None  # the largest in-use with scratch of its steps; None: not modelled


@dataclass(frozen=True, slots=True, kw_only=True)
class Band:
    """One buffer drawn as a band: the tensor it holds at the peak step and its bytes per bin."""

    label: str  # the tensor's name
    bytes: int
    values: tuple[int, ...]  # per bin: its bytes when held at the bin's ``at`` step, else 0


def step_bins(t: MemoryTimeline, max_bins: int, *, start: int = 0, stop: int | None = None) -> tuple[Bin, ...]:
    """Steps ``start..stop-1`` of ``t`` (all by default) gathered into at most ``max_bins``
    bins of equal width (see module doc)."""
    if max_bins < 1:
        raise UsageError(f"max_bins must be positive, got {max_bins}")
    n = len(t.requested) if stop is None else stop
    width = max(1, math.ceil((n - start) / max_bins))
    bins = []
    for first in range(start, n, width):
        last = min(n, first + width) - 1
        req = t.requested[first : last + 1]
        top = max(req)
        bins.append(
            Bin(
                first=first,
                last=last,
                at=first + req.index(top),
                requested=top,
                requested_low=min(req),
                lower_bound=max(t.lower_bound[first : last + 1]) if t.lower_bound is not None else None,
                in_use=max(t.in_use[first : last + 1]) if t.in_use is not None else None,
            )
        )
    return tuple(bins)


def peak_window(t: MemoryTimeline, width: int) -> tuple[int, int]:
    """``(start, stop)``: at most ``width`` steps around the peak, three quarters of them before
    it (what leads up to a peak is what explains it)."""
    n = len(t.requested)
    start = max(0, min(t.peak_step - (3 * width) // 4, n - width))
    return start, min(n, start + width)


def peak_bands(t: MemoryTimeline, bins: Sequence[Bin], count: int) -> tuple[Band, ...]:
    """The ``count`` largest buffers held at the peak step, as bands over ``bins``."""
    if t.peak_step < 0:
        return ()
    bands = []
    for b in t.held_at(t.peak_step)[:count]:
        life = t.buffers[b]
        if not life.bytes:
            continue
        held = t.tensor_at(b, t.peak_step)
        bands.append(
            Band(
                label=held.name if held is not None else f"buffer {b}",
                bytes=life.bytes,
                values=tuple(life.bytes if life.held_at(x.at) else 0 for x in bins),
            )
        )
    return tuple(bands)


def byte_ticks(top: int, *, most: int = 6) -> tuple[int, ...]:
    """Round binary-unit ticks from 0 to at least ``top`` (at most ``most`` + 1 of them):
    multiples of 1, 2, 2.5 or 5 times a power of ten of the largest unit ``top`` reaches."""
    if top <= 0:
        return (0,)
    unit = next(size for _, size in _UNITS if top >= size)
    scaled = top / unit
    magnitude = 10 ** math.floor(math.log10(scaled)) if scaled >= 1 else 1
    for m in (magnitude / 10, magnitude, magnitude * 10):
        for s in _STEPS:
            step = s * m * unit
            if step >= 1 and math.ceil(top / step) <= most:
                count = math.ceil(top / step)
                return tuple(round(i * step) for i in range(count + 1))
    return (0, top)


def tick_label(n: int) -> str:
    """``2621440`` → ``"2.5 MiB"``: the value in the largest unit it reaches, trailing zeros cut."""
    if n == 0:
        return "0"
    unit, size = next((u, s) for u, s in _UNITS if abs(n) >= s)
    text = f"{n / size:.2f}".rstrip("0").rstrip(".")
    return f"{text} {unit}"


def short_name(name: str, width: int = 48) -> str:
    """A node or tensor name cut to ``width`` characters, keeping its end (the part that differs)."""
    return name if len(name) <= width else "…" + name[-(width - 1) :]
