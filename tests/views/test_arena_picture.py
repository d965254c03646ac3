"""The arena's regions over run 1 and the steady state (``peak --plot``, ``report``): the picture's
data are the session block's figures, to the byte, on the committed tiny CNN."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from builders import CNN
from graphmem.analysis.graph_opt import analyze_graph_opt
from graphmem.analysis.session import session_figures
from graphmem.ort.held.options import SessionOptions
from graphmem.views.arena_picture import arena_picture
from graphmem.views.svg import arena_svg

ONE = SessionOptions(intra_op_num_threads=1)


@pytest.fixture(scope="module")
def cnn():  # type: ignore[no-untyped-def]
    a = analyze_graph_opt(CNN, "none", dims={"batch": 2})
    return a, session_figures(a, ONE)


def test_regions_stack_on_the_reserved_bytes_as_the_arena_took_them(cnn) -> None:  # type: ignore[no-untyped-def]
    a, s = cnn
    p = arena_picture(a, s)
    n = len(a.activations.timeline)
    assert p.steps == n and p.requested == tuple(b for _, b in a.activations.timeline)
    # creation reserves 2,152 B; run 1 takes a 1 MiB region at its first step; run 2 a 2 MiB one
    # at its first step (after the memory pattern's 655,360 B block took the first region)
    assert p.reserved == 2_152
    assert [(r.start, r.size, r.run) for r in p.regions] == [(0, 1_048_576, 1), (n, 2_097_152, 2)]
    assert [(r.size, base) for r, base in p.stacked()] == [(1_048_576, 2_152), (2_097_152, 2_152 + 1_048_576)]
    assert p.held[:n] == s.arena.first_run_steps  # the emulation's held bytes after each step of run 1
    assert p.held[n - 1] == s.arena_first_run_bytes == 1_050_728
    assert p.held[n:] == (3_147_880,) * n and p.steady_bytes == 3_147_880
    assert p.pattern_bytes == 655_360


def test_no_picture_without_a_cpu_arena(cnn) -> None:  # type: ignore[no-untyped-def]
    a, _ = cnn
    assert arena_picture(a, session_figures(a, replace(ONE, enable_cpu_mem_arena=False))) is None
    assert arena_picture(a, None) is None


def test_the_svg_keeps_each_region_exact(cnn) -> None:  # type: ignore[no-untyped-def]
    a, s = cnn
    svg = arena_svg(arena_picture(a, s))
    regions = re.findall(r'class="region"[^>]*data-bytes="(\d+)" data-run="(\d+)" data-step="(-?\d+)" data-request="(\d+)"', svg)
    assert [(int(b), int(r)) for b, r, _, _ in regions] == [(1_048_576, 1), (2_097_152, 2)]
    assert 'class="reserved"' in svg and 'data-bytes="2152"' in svg
    assert "memory pattern&#x27;s block: 640.00 KiB" in svg or "memory pattern's block: 640.00 KiB" in svg


def test_the_plot_draws_the_arena_panel(cnn) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("matplotlib")
    from graphmem.views.plot import peak_plot

    a, s = cnn
    fig = peak_plot(a, s)
    assert len(fig.axes) == 2
    (held,) = [ln for ln in fig.axes[1].lines if ln.get_gid() == "arena_held"]
    assert [int(y) for y in held.get_ydata()][:-1] == list(arena_picture(a, s).held)
    (req,) = [ln for ln in fig.axes[1].lines if ln.get_gid() == "arena_requested"]
    assert [int(y) for y in req.get_ydata()][:-1] == [2_152 + b for _, b in a.activations.timeline]
    assert "steady 3.00 MiB (3,147,880 B)" in fig.axes[1].get_title(loc="left")
    assert len(peak_plot(a).axes) == 1  # without the session block: the timeline alone
