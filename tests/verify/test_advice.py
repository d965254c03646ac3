"""``graphmem.verify.advice``: every option set ``graphmem advise`` predicts for the tiny CNN,
measured in fresh onnxruntime sessions (the profiler's ``mem_arena_held``, one fresh process per
option set): each arena figure as predicted, to the byte, and so each saving."""

from __future__ import annotations

import pytest

from builders import CNN
from graphmem.batch.advise import advise
from graphmem.verify.advice import ARENA_TOLERANCE, check_advice

pytest.importorskip("onnxruntime")


def test_every_predicted_arena_saving_is_measured() -> None:
    a = advise(CNN, dims={"batch": 2}, session_options=["intra_op_num_threads=1"], levels=())
    rows = check_advice(a, processes=0)  # the arena only: resident growth is scripts/advise_check.py's
    assert [r.change for r in rows] == ["current", *(x.change for x in a.lines)]
    assert ARENA_TOLERANCE == 0.005
    for r in rows:
        if r.change == "enable_cpu_mem_arena=0":  # no arena, no statistics
            assert r.measured["arena_steady_bytes"] is None and "no arena" in r.note
            continue
        for name in ("arena_before_run_bytes", "arena_first_run_bytes", "arena_steady_bytes"):
            assert r.measured[name] == r.predicted[name], (r.change, name)
        if r.change != "current":
            assert r.saving_measured["arena_steady_bytes"] == r.saving_predicted["arena_steady_bytes"]
            assert r.saving_holds["arena_steady_bytes"] is True
    no_pattern = next(r for r in rows if r.change == "enable_mem_pattern=0")
    assert no_pattern.saving_measured["arena_steady_bytes"] == 2_097_152
