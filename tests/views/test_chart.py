"""Step bins, bands and byte ticks (graphmem.views.chart): what every memory picture shares."""

from __future__ import annotations

import pytest

import graphmem
from builders import BERT
from graphmem.analysis.timeline import memory_timeline
from graphmem.views.chart import byte_ticks, peak_bands, peak_window, step_bins, tick_label


@pytest.fixture(scope="module")
def bert():  # type: ignore[no-untyped-def]
    a = graphmem.analyze(BERT, dims={"batch": 8, "seq": 128})
    return a, memory_timeline(a)


def test_short_runs_get_one_bin_per_step(bert) -> None:  # type: ignore[no-untyped-def]
    _, t = bert
    bins = step_bins(t, 1000)
    assert [(b.first, b.last, b.requested, b.lower_bound, b.in_use) for b in bins] == [
        (s, s, t.requested[s], t.lower_bound[s], t.in_use[s]) for s in range(len(t.requested))
    ]


def test_binned_runs_keep_the_peak_exact(bert) -> None:  # type: ignore[no-untyped-def]
    a, t = bert
    bins = step_bins(t, 20)  # 183 steps in bins of ceil(183 / 20) = 10
    assert len(bins) == 19 and all(b.last - b.first + 1 == 10 for b in bins[:-1]) and bins[-1].last == 182
    assert [b.first for b in bins] == list(range(0, 183, 10))
    top = max(bins, key=lambda b: b.requested)
    assert top.requested == a.activations.peak_bytes and top.at == a.activations.peak_step
    for b in bins:
        steps = t.requested[b.first : b.last + 1]
        assert (b.requested, b.requested_low) == (max(steps), min(steps))
        assert b.in_use == max(t.in_use[b.first : b.last + 1])


def test_bands_stack_within_the_requested_bytes_and_fill_it_at_the_peak(bert) -> None:  # type: ignore[no-untyped-def]
    a, t = bert
    bins = step_bins(t, 1000)
    bands = peak_bands(t, bins, 6)
    # The two 2 MiB buffers held at the peak: the attention scores (Mul) and the Add writing into a new one.
    assert [b.bytes for b in bands[:2]] == [2_097_152, 2_097_152]
    for i, b in enumerate(bins):
        assert sum(band.values[i] for band in bands) <= b.requested
    everything = peak_bands(t, bins, 10_000)
    assert sum(band.values[a.activations.peak_step] for band in everything) == a.activations.peak_bytes


def test_the_zoom_window_holds_the_peak(bert) -> None:  # type: ignore[no-untyped-def]
    a, t = bert
    start, stop = peak_window(t, 40)  # peak at step 103: 30 steps before it, 10 after
    assert (start, stop) == (a.activations.peak_step - 30, a.activations.peak_step + 10)
    assert peak_window(t, 1000) == (0, 183)


@pytest.mark.parametrize(
    "top, ticks",
    [
        (4_980_808, tuple(i << 20 for i in range(6))),  # 4.75 MiB: steps of 1 MiB
        (100, (0, 20, 40, 60, 80, 100)),  # 100 B: steps of 20 B
        (3 << 30, tuple(i * (1 << 29) for i in range(7))),  # 3 GiB: steps of 0.5 GiB
        (0, (0,)),
    ],
)
def test_byte_ticks_are_round_binary_values(top: int, ticks: tuple[int, ...]) -> None:
    assert byte_ticks(top) == ticks


def test_tick_labels_name_binary_units() -> None:
    assert [tick_label(n) for n in (0, 512, 2_621_440, 1 << 30, 3 << 39)] == ["0", "512 B", "2.5 MiB", "1 GiB", "1.5 TiB"]
