"""The per-step timeline (graphmem.analysis.timeline): the planner's own figures, step by step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx import helper

import graphmem
from builders import BERT, init, model, save, tensor
from graphmem.analysis.timeline import memory_timeline


def _reuse_chain(tmp_path: Path) -> Path:
    """x [1,64] float (256 B); Concats along axis 1 and a Slice (none a view, none in place):

    step 0  a   = Concat(x, x)  [1,128]  512 B   request a                     held  512
    step 1  b   = Concat(a, a)  [1,256] 1024 B   request b                     held 1536
            (a's last read: the planner frees a's buffer for reuse)
    step 2  d   = Slice(b, 0:128 on axis 1)  [1,128]  512 B   a copy (Slice is no view on CPU),
            same key as a: it reuses a's buffer, no request               held 1536
    step 3  out = Concat(b, d)  [1,384] 1536 B   graph output: its own request held 3072 (peak)
            then b and a's buffer (d's last read) are released; out is held to the end.
    Lower bound: a lives 0..1, b 1..3, d 2..3, out 3: 512, 1536, 1536, 3072.
    """
    nodes = [
        helper.make_node("Concat", ["x", "x"], ["a"], axis=1, name="n0"),
        helper.make_node("Concat", ["a", "a"], ["b"], axis=1, name="n1"),
        helper.make_node("Slice", ["b", "zero", "half", "one"], ["d"], name="n2"),
        helper.make_node("Concat", ["b", "d"], ["out"], axis=1, name="n3"),
    ]
    consts = [init("zero", np.array([0], np.int64)), init("half", np.array([128], np.int64)), init("one", np.array([1], np.int64))]
    return save(model(nodes, [tensor("x", [1, 64])], [tensor("out", [1, 384])], consts), tmp_path / "chain.onnx")


def test_a_reused_buffer_holds_both_tensors_and_lives_to_the_last_read_of_either(tmp_path: Path) -> None:
    a = graphmem.analyze(_reuse_chain(tmp_path))
    t = memory_timeline(a)
    assert t.labels == ("n0", "n1", "n2", "n3")
    assert t.requested == (512, 1536, 1536, 3072)
    assert t.lower_bound == (512, 1536, 1536, 3072)
    assert t.peak_step == 3 and a.activations.peak_bytes == 3072
    lives = [(b.bytes, b.first, b.last, tuple(t.tensors[i].name for i in b.tensors)) for b in t.buffers]
    assert lives == [(512, 0, 3, ("a", "d")), (1024, 1, 3, ("b",)), (1536, 3, None, ("out",))]
    assert [(x.name, x.writer, x.last_reader) for x in t.tensors] == [
        ("a", 0, 1), ("b", 1, 3), ("d", 2, 3), ("out", 3, None)
    ]
    assert t.tensor_at(0, 1).name == "a" and t.tensor_at(0, 3).name == "d"
    assert t.held_at(3) == [2, 1, 0]  # largest first


def test_bert_timeline_is_the_analysis_figures_step_by_step() -> None:
    a = graphmem.analyze(BERT, dims={"batch": 8, "seq": 128})
    t = memory_timeline(a)
    act = a.activations
    assert t.requested == tuple(b for _, b in act.timeline)
    assert t.labels == tuple(n for n, _ in act.timeline)
    assert max(t.requested) == act.peak_bytes == 4_980_808 and t.peak_step == act.peak_step
    assert max(t.lower_bound) == act.lower_bound_bytes
    assert t.in_use is not None and max(t.in_use) == act.in_use_peak_bytes == 6_030_336
    assert t.scratch is not None and max(t.scratch) == act.scratch_bytes
    held = t.held_at(t.peak_step)
    assert sum(t.buffers[b].bytes or 0 for b in held) == act.peak_bytes
    assert {t.tensor_at(b, t.peak_step).name for b in held} <= act.live_at_peak


def test_cuda_timeline_has_no_in_use_curve() -> None:
    a = graphmem.analyze(BERT, dims={"batch": 2, "seq": 16}, provider="cuda")
    t = memory_timeline(a)
    assert t.in_use is None and t.scratch is None
    assert max(t.requested) == a.activations.peak_bytes and len(t.labels) == len(a.activations.step_ops)
