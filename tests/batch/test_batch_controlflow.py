"""sweep and fit over models with control flow: the trip count bound with --value (values=),
every row and probe planned through the Loop's iterations; hand-computed, one point measured."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from builders import invoke, model, save, tensor
from onnx import TensorProto, helper

import graphmem
from graphmem.batch.search import parse_sweep_dims, search_largest, sweep
from graphmem.errors import UnboundDimError
from graphmem.verify import measure

I64, B = TensorProto.INT64, TensorProto.BOOL


@pytest.fixture
def loop(tmp_path: Path) -> Path:
    """x0 = Relu(x) [batch, 100]; Loop(M) carries h: h = 2 h; out = Relu(h_final)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="b_cond"),
         helper.make_node("Mul", ["h_in", "two"], ["h_out"], name="b_mul")],
        "body", [tensor("i", [], I64), tensor("cond_in", [], B), tensor("h_in", ["batch", 100])],
        [tensor("cond_out", [], B), tensor("h_out", ["batch", 100])],
        [helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])],
    )
    m = model(
        [helper.make_node("Relu", ["x"], ["x0"], name="pre"),
         helper.make_node("Loop", ["M", "c", "x0"], ["hf"], name="loop", body=body),
         helper.make_node("Relu", ["hf"], ["out"], name="post")],
        [tensor("x", ["batch", 100]), tensor("M", [], I64), tensor("c", [], B)], [tensor("out", ["batch", 100])],
    )
    return save(m, tmp_path / "loop.onnx")


def _peak(batch: int) -> int:
    # x0 400·b; the Loop's scalars 8 + 1; iteration 1: h1 400·b; iteration 2: h2 (h1 still the
    # carried feed) -> x0 + 9 + h1 + h2; iteration 3: h1 released before it, h3 -> the same. The
    # body has no value of its own besides its output: no memory-pattern block.
    return 3 * 400 * batch + 9


def test_sweep_binds_the_trip_count_with_a_value(loop: Path) -> None:
    values = {"M": (3,), "c": (1,)}
    s = sweep(loop, parse_sweep_dims(["batch=1,2,4"]), values=values)
    assert [r.activations_peak_bytes for r in s.rows] == [_peak(1), _peak(2), _peak(4)]
    # total: the body weight "two" 4 B + the peak + inputs x 400·b, M 8, c 1
    assert (s.fit.fixed_bytes, s.fit.per_unit_bytes) == pytest.approx((4 + 9 + 9, 1_200 + 400))
    feeds = {"x": np.ones((2, 100), np.float32), "M": np.array(3, np.int64), "c": np.array(True)}
    assert measure(str(loop), feeds, runs=1).runs[0].requested_peak == _peak(2)
    doc = json.loads(invoke("sweep", str(loop), "--dim", "batch=1,2,4", "--value", "M=3", "--value", "c=1", "--json").stdout)
    assert [r["activations_peak_bytes"] for r in doc["rows"]] == [_peak(1), _peak(2), _peak(4)]
    with pytest.raises(UnboundDimError, match="trip count 'M' of Loop 'loop'"):
        sweep(loop, parse_sweep_dims(["batch=1,2"]), values={"c": (1,)})


def test_fit_solves_the_batch_through_the_loop(loop: Path) -> None:
    values = {"M": (3,), "c": (1,)}
    # total = weights 4 + peak 1,200·b + 9 + inputs 400·b + 9 = 1,600·b + 22 <= 100,000: b = 62
    r = search_largest(loop, solve="batch", budget_bytes=100_000, values=values)
    assert r.largest == 62
    assert graphmem.analyze(loop, dims={"batch": 62}, values=values).total_bytes == 1_600 * 62 + 22
    out = invoke("fit", "--by", "requested", str(loop), "--memory", "100000", "--solve", "batch", "--value", "M=3", "--value", "c=1")
    assert out.exit_code == 0 and "largest batch that fits: 62" in out.stdout


def test_fit_train_unrolls_the_loop_at_every_probe(loop: Path) -> None:
    from graphmem.batch.search import search_largest_training
    from graphmem.training import estimate_training

    values = {"M": (3,), "c": (1,)}
    r = search_largest_training(loop, solve="batch", budget_bytes=50_000, values=values)
    at = estimate_training(loop, dims={"batch": r.largest}, values=values)
    after = estimate_training(loop, dims={"batch": r.largest + 1}, values=values)
    assert r.training.estimate.step_peak_bytes == at.step_peak_bytes <= 50_000 < after.step_peak_bytes
    assert any("Loop 'loop': its body unrolled 3 times" in w for w in at.warnings)
