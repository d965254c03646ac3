"""The matplotlib pictures (graphmem.views.plot): their data are the planner's figures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from onnx import TensorProto, helper

import graphmem
from builders import BERT, CNN, TRAIN_CNN, model, outcome, save, tensor
from graphmem.analysis.timeline import memory_timeline

pytest.importorskip("matplotlib", reason="matplotlib (the [plot] extra, also in [test]) is not installed")

from graphmem.views.plot import diff_plot, peak_plot, render, timeline_figure, training_figure  # noqa: E402


def _line(fig, gid: str, panel: int = 0):  # type: ignore[no-untyped-def]
    (line,) = [ln for ln in fig.axes[panel].lines if ln.get_gid() == gid]
    return list(line.get_xdata()), [int(y) for y in line.get_ydata()]


def _texts(fig) -> str:  # type: ignore[no-untyped-def]
    out = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        out += [t.get_text() for t in ax.texts] + [ax.get_title(), ax.get_xlabel()]
        legend = ax.get_legend()
        if legend is not None:
            out += [t.get_text() for t in legend.get_texts()]
    return "\n".join(out)


def test_the_timeline_draws_the_planner_figures_of_every_step() -> None:
    a = graphmem.analyze(BERT, dims={"batch": 8, "seq": 128})
    t = memory_timeline(a)
    fig = peak_plot(a)
    xs, requested = _line(fig, "requested")
    assert xs == list(range(len(t.requested) + 1))  # one step per x unit, the last value repeated
    assert requested == [*t.requested, t.requested[-1]]
    assert _line(fig, "lower_bound")[1] == [*t.lower_bound, t.lower_bound[-1]]
    assert _line(fig, "in_use")[1] == [*t.in_use, t.in_use[-1]]
    text = _texts(fig)
    assert "4,980,808 B" in text and "/model/encoder/layer.0/attention/self/Add" in text
    assert "exact: every buffer planned" in text and "weights 665.38 KiB + inputs 16.00 KiB" in text
    svg = render(fig, "svg").decode()
    assert "4,980,808 B" in svg  # text kept as text (svg.fonttype none)
    assert render(fig, "png")[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_long_run_is_binned_with_the_peak_exact_and_a_zoom_on_it() -> None:
    a = graphmem.analyze(BERT, dims={"batch": 8, "seq": 128})
    t = memory_timeline(a)
    fig = timeline_figure(a, t, max_bins=30)  # 183 steps in bins of 7
    assert len(fig.axes) == 2
    xs, requested = _line(fig, "requested")
    assert xs[:3] == [0, 7, 14] and max(requested) == a.activations.peak_bytes
    zx, zoomed = _line(fig, "requested", panel=1)  # the zoom: every step of its window
    start = int(zx[0])
    assert zoomed[:-1] == list(t.requested[start : start + len(zoomed) - 1])
    assert "bins of 7 steps" in _texts(fig)


def test_a_model_with_unresolved_sizes_says_so_in_the_picture(tmp_path: Path) -> None:
    m = model(
        [helper.make_node("NonZero", ["X"], ["idx"]), helper.make_node("Cast", ["idx"], ["Y"], to=TensorProto.FLOAT)],
        [tensor("X", [8])], [tensor("Y", None)],
    )
    fig = peak_plot(graphmem.analyze(save(m, tmp_path / "nz.onnx")))
    text = _texts(fig)
    assert "NOT EXACT" in text and "unresolved_tensor ×2" in text


def test_training_bands_stack_to_each_phase_total() -> None:
    from graphmem.training import estimate_training
    from graphmem.training.timeline import training_timeline

    e = estimate_training(TRAIN_CNN, dims={"batch": 4}, optimizer="adam")
    tl = training_timeline(e)  # raises if a phase's bands do not reach its total
    assert [(p.name, p.total_bytes) for p in tl.phases] == [(p.phase, p.total_bytes) for p in e.phases]
    assert tl.totals[-1] == e.weights_bytes + e.optimizer_state_bytes + e.inputs_bytes + e.grads_bytes + e.optimizer_temp_bytes
    fig = training_figure(e)
    assert f"{e.step_peak_bytes:,} B" in _texts(fig)
    assert _line(fig, "total")[1][:-1] == list(tl.totals)


def test_diff_overlays_both_timelines() -> None:
    old = graphmem.analyze(CNN, dims={"batch": 8})
    new = graphmem.analyze(CNN, dims={"batch": 4})
    fig = diff_plot(old, new)
    assert _line(fig, "old")[1][:-1] == [b for _, b in old.activations.timeline]
    assert _line(fig, "new")[1][:-1] == [b for _, b in new.activations.timeline]
    assert "peak change -1.25 MiB (-50.0%)" in _texts(fig)  # 2.50 MiB at batch 8, half at batch 4


def test_without_matplotlib_plots_exit_2_with_the_install_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    code, _, err = outcome("peak", str(CNN), "--dim", "batch=1", "--plot", str(tmp_path / "p.png"))
    assert code == 2 and "pip install 'graphmem[plot]'" in err and not (tmp_path / "p.png").exists()


def test_a_loop_is_drawn_from_its_replay(tmp_path: Path) -> None:
    # Loop M=2 of h = h_in + 1 over x0 = Relu(x) [4, 100]: its samples are the steps, the Loop's
    # own after its body's; no lower-bound curve (not computed through bodies)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="b_cond"),
         helper.make_node("Add", ["h_in", "one"], ["h_out"], name="b_add")],
        "body",
        [tensor("i", [], TensorProto.INT64), tensor("cond_in", [], TensorProto.BOOL), tensor("h_in", [4, 100])],
        [tensor("cond_out", [], TensorProto.BOOL), tensor("h_out", [4, 100])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])],
    )
    m = model(
        [helper.make_node("Relu", ["x"], ["x0"], name="pre"),
         helper.make_node("Loop", ["M", "c", "x0"], ["hf"], name="loop", body=body)],
        [tensor("x", [4, 100])], [tensor("hf", [4, 100])],
        [helper.make_tensor("M", TensorProto.INT64, [], [2]), helper.make_tensor("c", TensorProto.BOOL, [], [True])],
    )
    a = graphmem.analyze(save(m, tmp_path / "loop.onnx"))
    t = memory_timeline(a)
    # pre x0 1,600; the Loop's scalars 9; h1 1,600 -> 3,209 (b_cond shares cond_in: 0) twice;
    # h2 1,600 -> 4,809; the Loop: hf copied 1,600, its temporaries and h1, h2 released -> 3,200
    assert t.labels == ("pre", "loop/body/b_add", "loop/body/b_cond", "loop/body/b_add", "loop/body/b_cond", "loop")
    assert t.requested == (1_600, 3_209, 3_209, 4_809, 4_809, 3_200)
    fig = peak_plot(a)
    assert _line(fig, "requested")[1] == [*t.requested, t.requested[-1]]
    assert not [ln for ln in fig.axes[0].lines if ln.get_gid() == "lower_bound"]
    assert "at 'loop/body/b_add'" in _texts(fig)
    code, _, err = outcome("peak", str(tmp_path / "loop.onnx"), "--plot", str(tmp_path / "loop.svg"))
    assert code == 0 and (tmp_path / "loop.svg").exists(), err
