"""Sweep, fit and exact search (graphmem.batch.search) and the KV cache (graphmem.views.kvcache).

Models: ``models/tiny_cnn.onnx`` (dim batch), ``models/tiny_bert.onnx`` (batch, seq) and two
graphs written inline here: a two-layer decoder step with past key/value inputs, and a graph whose
memory first falls, then grows with its dim (to see the monotonicity check fire). Training:
``models/train_cnn.onnx`` (a training-mode export, dim batch) and an inline two-layer MLP whose
step peak is the optimizer step at small batches and the backward pass at large ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import graphmem
from graphmem.batch.search import (
    MAX_SWEEP_POINTS,
    SweepRow,
    check_fit,
    dominant,
    fit_memory,
    parse_bound_dims,
    parse_dim_values,
    parse_sweep_dims,
    search_largest,
    sweep,
    check_fit_training,
    search_largest_training,
    training_config,
)
from graphmem.batch.report import fit_json, fit_table, sweep_json, sweep_table
from graphmem.errors import UnboundDimError, UnknownDimError, UsageError
from graphmem.views.kvcache import context_dim, kv_cache
from graphmem.model.loading import load_model
from graphmem.training import TrainingConfig, estimate_training

from builders import BERT, CNN, HEAD_DIM, HEADS, LAYERS, TRAIN_CNN, mlp_model

def dip_model(k: int = 64) -> onnx.ModelProto:
    """x: uint8 [n]. y = c[n:k] (a slice of a k-float constant, starting at n); z = y tiled 64×;
    so activations are 64·4·(k − n) bytes while n < k: memory falls with n, then grows (input)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["n"]),
        helper.make_node("Slice", ["c", "n", "end"], ["y"]),
        helper.make_node("Expand", ["y", "rep"], ["z"]),
        helper.make_node("ReduceSum", ["z"], ["out"], keepdims=0),
    ]
    inits = [
        numpy_helper.from_array(np.zeros(k, np.float32), "c"),
        numpy_helper.from_array(np.array([k], np.int64), "end"),
        numpy_helper.from_array(np.array([64, 1], np.int64), "rep"),
    ]
    graph = helper.make_graph(
        nodes, "dip", [helper.make_tensor_value_info("x", TensorProto.UINT8, ["n"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def positions_model(k: int = 8) -> onnx.ModelProto:
    """x: float [n] plus the first n of k "position" values (a Slice up to Shape(x)): shapes
    resolve up to n = k and break beyond it, as BERT's do past its 512 positions."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["c", "zero", "s"], ["p"]),
        helper.make_node("Add", ["x", "p"], ["y"]),
        helper.make_node("Relu", ["y"], ["z"]),
    ]
    inits = [numpy_helper.from_array(np.zeros(k, np.float32), "c"),
             numpy_helper.from_array(np.zeros(1, np.int64), "zero")]
    graph = helper.make_graph(
        nodes, "positions", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.fixture(scope="module")
def dip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dip") / "dip.onnx"
    onnx.save(dip_model(), str(path))
    return path


# --- parsing ---------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("1,2,4", (1, 2, 4)),
        ("8, 2,2,4", (2, 4, 8)),
        ("5", (5,)),
        ("1..4", (1, 2, 3, 4)),
        ("8..32:8", (8, 16, 24, 32)),
        ("1..64:x2", (1, 2, 4, 8, 16, 32, 64)),
        ("3..40:x3", (3, 9, 27)),
        ("0,64", (0, 64)),  # an empty past is a valid binding
    ],
)
def test_parse_dim_values(text: str, expected: tuple[int, ...]) -> None:
    assert parse_dim_values(f"batch={text}", text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "1,,2", "a", "1,a", "", "1,", "-1", "1.5", "4..1", "1..8:x1", "1..8:0", "1...8",
        "1..9999999999999999999999", "9223372036854775808", f"1..{MAX_SWEEP_POINTS + 1}",
        str((1 << 40) + 1),
    ],
)
def test_parse_dim_values_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_dim_values(f"batch={text}", text)


def test_overflow_is_named() -> None:
    with pytest.raises(UsageError, match="overflows int64"):
        parse_dim_values("batch=1..9223372036854775808", "1..9223372036854775808")


def test_parse_sweep_dims() -> None:
    spec = parse_sweep_dims(["batch=1,2,4", "seq=128"])
    assert (spec.dim, spec.values, spec.fixed) == ("batch", (1, 2, 4), {"seq": 128})
    for items in (["batch=1,2", "seq=1,2"], ["batch=1"], [], ["batch=1,2", "batch=4"],
                  ["batch"], ["=1,2"], ["batch="]):
        with pytest.raises(UsageError):
            parse_sweep_dims(items)


def test_parse_bound_dims() -> None:
    assert parse_bound_dims(["batch=32", "seq=128"]) == {"batch": 32, "seq": 128}
    with pytest.raises(UsageError, match="one value"):
        parse_bound_dims(["batch=1,2"])


# --- sweep -----------------------------------------------------------------------------------

def _assert_rows_equal_analyze(s, path: Path) -> None:  # type: ignore[no-untyped-def]
    for row in s.rows:
        a = graphmem.analyze(path, dims=row.dims)
        assert row.weights_bytes == a.weights.bytes
        assert row.activations_peak_bytes == a.activations.peak_bytes
        assert row.lower_bound_bytes == a.activations.lower_bound_bytes
        assert row.inputs_bytes == a.io.inputs_bytes
        assert row.outputs_bytes == a.io.outputs_bytes
        assert row.total_bytes == a.total_bytes
        assert row.peak_node == a.activations.peak_node


def test_sweep_rows_equal_analyze_cnn() -> None:
    s = sweep(CNN, parse_sweep_dims(["batch=1,2,4,8,16"]))
    assert [r.value for r in s.rows] == [1, 2, 4, 8, 16]
    _assert_rows_equal_analyze(s, CNN)
    # tiny_cnn is exactly linear in batch: weights fixed, activations and input per sample
    f = s.fit
    assert f.degree == 1
    assert f.worst_residual_bytes < 1e-3
    r1 = s.rows[0]
    assert f.fixed_bytes == pytest.approx(r1.weights_bytes, abs=1e-3)
    assert f.per_unit_bytes == pytest.approx(r1.activations_peak_bytes + r1.inputs_bytes, abs=1e-3)
    assert f.parts["weights"][0] == pytest.approx(r1.weights_bytes, abs=1e-3)
    assert f.parts["activations"][0] == pytest.approx(0, abs=1e-3)
    assert f.predict(32) == pytest.approx(graphmem.analyze(CNN, dims={"batch": 32}).total_bytes)


def test_sweep_over_seq_is_quadratic_and_parts_add_up() -> None:
    s = sweep(BERT, parse_sweep_dims(["batch=2", "seq=16..256:x2"]))
    _assert_rows_equal_analyze(s, BERT)
    f = s.fit
    assert f.degree == 2 and f.per_unit2_bytes > 0
    assert f.worst_residual_bytes < f.linear_worst_residual_bytes
    for k, total in enumerate((f.fixed_bytes, f.per_unit_bytes, f.per_unit2_bytes)):
        assert sum(p[k] for p in f.parts.values()) == pytest.approx(total, rel=1e-9, abs=1e-3)
    doc = sweep_json(s)
    assert doc["fit"]["degree"] == 2 and len(doc["rows"]) == 5
    assert "quadratic" in sweep_table(s)


def _rows(xs, ys):  # type: ignore[no-untyped-def]
    return [SweepRow(value=x, dims={"n": x}, weights_bytes=0, activations_peak_bytes=y,
                     lower_bound_bytes=y, inputs_bytes=0, outputs_bytes=0, total_bytes=y,
                     peak_node="", flops=None, flops_unsupported=0, kv_cache_bytes=None,
                     unresolved=0)
            for x, y in zip(xs, ys)]


def test_fit_rule_on_exact_data() -> None:
    xs = [1, 2, 4, 8, 16]
    quad = fit_memory("n", _rows(xs, [1000 + 10 * x + 3 * x * x for x in xs]))
    assert quad.degree == 2
    assert (quad.fixed_bytes, quad.per_unit_bytes, quad.per_unit2_bytes) == pytest.approx(
        (1000, 10, 3), abs=1e-6)
    # a 64-byte wobble on a 1.5 MB spread is within 1 % of the spread: linear
    lin = fit_memory("n", _rows(xs, [1000 + 100_000 * x + (64 if x == 4 else 0) for x in xs]))
    assert lin.degree == 1 and lin.per_unit2_bytes == 0.0
    two = fit_memory("n", _rows([1, 9], [5, 7]))
    assert two.degree == 1 and two.worst_residual_bytes == pytest.approx(0, abs=1e-9)
    with pytest.raises(UsageError):
        fit_memory("n", _rows([3, 3], [1, 1]))


def test_sweep_unknown_and_unbound_dims() -> None:
    with pytest.raises(UnknownDimError, match="its dims: batch"):
        sweep(CNN, parse_sweep_dims(["bach=1,2"]))
    with pytest.raises(UnboundDimError, match="seq"):
        sweep(BERT, parse_sweep_dims(["batch=1,2"]))


# --- exact search ----------------------------------------------------------------------------

@pytest.mark.parametrize("budget, overhead", [(1 << 20, 0), (5 << 20, 0), (64 << 20, 1 << 20),
                                              (1_000_003, 12_345)])
def test_search_is_exact_on_tiny_cnn(budget: int, overhead: int) -> None:
    r = search_largest(CNN, solve="batch", budget_bytes=budget, overhead_bytes=overhead)
    n = r.largest
    assert n >= 1 and r.monotone and not r.unbounded
    at = graphmem.analyze(CNN, dims={"batch": n}).total_bytes
    after = graphmem.analyze(CNN, dims={"batch": n + 1}).total_bytes
    assert at + overhead <= budget < after + overhead
    assert r.analysis is not None and r.analysis.total_bytes == at
    assert r.next_total_bytes == after
    assert r.headroom_bytes == budget - overhead - at
    assert len(r.probes) <= 2 * n.bit_length() + 2
    assert dominant(r.analysis) == "activations"


def test_search_nothing_fits_and_limit() -> None:
    r = search_largest(CNN, solve="batch", budget_bytes=1000)
    assert r.largest == 0 and r.analysis is None and r.headroom_bytes is None
    assert "NOTHING FITS" in fit_table(r)
    r = search_largest(CNN, solve="batch", budget_bytes=1 << 40, limit=48)
    assert r.largest == 48 and r.unbounded and r.next_total_bytes is None


def test_search_reports_non_monotone_memory(dip: Path) -> None:
    r = search_largest(dip, solve="n", budget_bytes=20_000)
    assert not r.monotone and r.violations
    x0, t0, x1, t1 = r.violations[0]
    assert x0 < x1 and t0 > t1
    n = r.largest
    assert graphmem.analyze(dip, dims={"n": n}).total_bytes <= 20_000
    assert graphmem.analyze(dip, dims={"n": n + 1}).total_bytes > 20_000
    assert "NOT monotone" in fit_table(r)


def test_search_stops_where_shapes_stop_resolving(tmp_path: Path) -> None:
    path = tmp_path / "positions.onnx"
    onnx.save(positions_model(8), str(path))
    assert not graphmem.analyze(path, dims={"n": 8}).shapes.unresolved
    assert graphmem.analyze(path, dims={"n": 9}).shapes.unresolved
    r = search_largest(path, solve="n", budget_bytes=1 << 20)
    assert r.largest == 8 and not r.next_complete and r.monotone
    assert all(not p.fits for p in r.probes if p.value > 8)
    assert "shapes stop resolving" in fit_table(r)


def test_search_input_errors() -> None:
    with pytest.raises(UnknownDimError, match="its dims: batch"):
        search_largest(CNN, solve="bach", budget_bytes=1 << 30)
    with pytest.raises(UsageError, match="also bound"):
        search_largest(CNN, solve="batch", dims={"batch": 2}, budget_bytes=1 << 30)
    with pytest.raises(UsageError, match="leaves nothing"):
        search_largest(CNN, solve="batch", budget_bytes=1 << 20, overhead_bytes=1 << 20)
    with pytest.raises(UnboundDimError, match="seq"):
        search_largest(BERT, solve="batch", budget_bytes=1 << 30)


def test_check_fit_gate() -> None:
    total = graphmem.analyze(CNN, dims={"batch": 32}).total_bytes
    ok = check_fit(CNN, dims={"batch": 32}, budget_bytes=total + 100, overhead_bytes=100)
    assert ok.fits and ok.headroom_bytes == 0 and ok.needed_bytes == total + 100
    no = check_fit(CNN, dims={"batch": 32}, budget_bytes=total + 99, overhead_bytes=100)
    assert not no.fits and no.headroom_bytes == -1


def test_as_dtype_halves_float_weights() -> None:
    m = load_model(CNN)
    full = search_largest(m, solve="batch", budget_bytes=8 << 20)
    half = search_largest(m, solve="batch", budget_bytes=8 << 20, as_dtype="float16")
    assert half.largest > full.largest
    assert half.analysis is not None and full.analysis is not None
    assert 2 * half.analysis.weights.bytes == full.analysis.weights.bytes


# --- KV cache --------------------------------------------------------------------------------

def test_kv_cache_bytes(decoder: Path) -> None:
    a = graphmem.analyze(decoder, dims={"batch": 2, "seq": 10})
    kv = kv_cache(a)
    assert kv is not None
    per_position = 2 * HEADS * HEAD_DIM * 4  # batch 2, float32, one K or V tensor
    assert kv.past_bytes == 2 * LAYERS * per_position * 10
    assert kv.present_bytes == 2 * LAYERS * per_position * 11
    assert len(kv.past) == len(kv.present) == 2 * LAYERS and not kv.unknown
    assert kv.context_dim == context_dim(load_model(decoder)) == "seq"
    assert kv_cache(graphmem.analyze(CNN, dims={"batch": 1})) is None


def test_longest_context_that_fits(decoder: Path) -> None:
    budget = 4 << 20
    r = search_largest(decoder, solve="seq", dims={"batch": 4}, budget_bytes=budget)
    n = r.largest
    assert n > 100 and r.monotone
    assert graphmem.analyze(decoder, dims={"batch": 4, "seq": n}).total_bytes <= budget
    assert graphmem.analyze(decoder, dims={"batch": 4, "seq": n + 1}).total_bytes > budget
    assert "kv cache" in fit_table(r)
    s = sweep(decoder, parse_sweep_dims(["batch=4", "seq=1,8,64"]))
    _assert_rows_equal_analyze(s, decoder)
    assert [r.kv_cache_bytes for r in s.rows] == [
        kv_cache(graphmem.analyze(decoder, dims=r.dims)).total_bytes for r in s.rows]


# --- training: the step peak as the search's cost --------------------------------------------

@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mlp") / "mlp.onnx"
    onnx.save(mlp_model(), str(path))
    return path


def _step_peak(path: Path, n: int, **config: object) -> int:
    e = estimate_training(path, dims={"batch": n}, **config)  # type: ignore[arg-type]
    return e.step_peak_bytes


@pytest.mark.parametrize("budget, overhead, config", [
    (2 << 20, 0, {}),
    (16 << 20, 1 << 20, {}),
    (3_000_017, 54_321, {"optimizer": "sgd", "grads": "persistent"}),
    (8 << 20, 0, {"precision": "mixed-fp16", "foreach": True, "frozen": ("0.*",)}),
])
def test_training_search_is_exact_on_train_cnn(budget: int, overhead: int,
                                               config: dict[str, object]) -> None:
    r = search_largest_training(TRAIN_CNN, solve="batch", budget_bytes=budget,
                                overhead_bytes=overhead, config=training_config(**config))
    n = r.largest
    assert n >= 1 and r.monotone and not r.unbounded and r.training is not None
    at, after = _step_peak(TRAIN_CNN, n, **config), _step_peak(TRAIN_CNN, n + 1, **config)
    assert at + overhead <= budget < after + overhead
    e = r.training.estimate
    assert e is not None and e.step_peak_bytes == r.total_bytes == at
    assert e.peak_phase == estimate_training(TRAIN_CNN, dims={"batch": n}, **config).peak_phase
    assert r.next_total_bytes == after and r.headroom_bytes == budget - overhead - at
    assert r.analysis is not None and e.analysis.total_bytes == r.analysis.total_bytes
    # every probe measured the step peak; the inference total stays beside it
    for p in r.probes:
        assert r.training.probes[p.value][0] == p.total_bytes
        assert p.analysis_total_bytes < p.total_bytes
    assert len(r.probes) <= 2 * n.bit_length() + 2
    inference = search_largest(TRAIN_CNN, solve="batch", budget_bytes=budget,
                               overhead_bytes=overhead)
    assert inference.largest > n  # a training step needs more than inference


def test_training_phase_at_the_answer(mlp: Path) -> None:
    # a --frozen pattern that matches nothing freezes nothing (same figures) and warns
    small = search_largest_training(mlp, solve="batch", budget_bytes=2_700_000,
                                    config=TrainingConfig(frozen=("nothing.*",)))
    large = search_largest_training(mlp, solve="batch", budget_bytes=4 << 20)
    assert small.training and large.training and small.training.estimate and large.training.estimate
    assert small.training.estimate.peak_phase == "optimizer"
    assert large.training.estimate.peak_phase == "backward"
    phases = {phase for _, phase in large.training.probes.values()}
    assert phases == {"optimizer", "backward"}  # the dominant phase changes along the search
    for r, budget in ((small, 2_700_000), (large, 4 << 20)):
        assert _step_peak(mlp, r.largest) <= budget < _step_peak(mlp, r.largest + 1)
    assert small.training.warnings == ("--frozen 'nothing.*' matched no parameter",)  # carried to the answer
    text = fit_table(large)
    assert "largest batch that fits for training" in text and "step peaks in backward" in text
    doc = fit_json(small)
    assert doc["measure"] == "training_step_peak" and doc["dominant"] == "optimizer"
    assert doc["breakdown"]["optimizer"] == doc["total_bytes"] == doc["training"]["step_peak_bytes"]
    assert doc["training"]["next_step_peak_bytes"] == _step_peak(mlp, small.largest + 1)


def test_training_nothing_fits_and_check(mlp: Path) -> None:
    r = search_largest_training(TRAIN_CNN, solve="batch", budget_bytes=100_000)
    assert r.largest == 0 and r.training is not None and r.training.estimate is None
    assert r.headroom_bytes is None and r.probes[0].total_bytes == _step_peak(TRAIN_CNN, 1)
    assert "NOTHING FITS" in fit_table(r) and "one training step" in fit_table(r)
    assert fit_json(r)["training"]["step_peak_bytes"] is None
    peak = _step_peak(TRAIN_CNN, 8, optimizer="momentum")
    config = TrainingConfig(optimizer="momentum")
    ok = check_fit_training(TRAIN_CNN, dims={"batch": 8}, budget_bytes=peak + 100,
                            overhead_bytes=100, config=config)
    assert ok.fits and ok.headroom_bytes == 0 and ok.total_bytes == peak
    assert ok.needed_bytes == peak + 100 and ok.training and ok.training.estimate
    assert ok.analysis.total_bytes < peak
    no = check_fit_training(TRAIN_CNN, dims={"batch": 8}, budget_bytes=peak + 99,
                            overhead_bytes=100, config=config)
    assert not no.fits and no.headroom_bytes == -1 and "DOES NOT FIT" in fit_table(no)
    assert fit_json(no)["training"]["optimizer"] == "momentum"


def residual_model(channels: int = 16) -> onnx.ModelProto:
    """x [batch, C, 8, 8] → Conv a 3x3 → Relu → Conv b 3x3, plus Conv d 1x1 of x → Add: a residual
    block with a downsample-style branch. onnxruntime's CPU provider has no float16 Conv, so at
    mixed-fp16 its kernel rules would wrap every node in inserted Casts and reorder the graph."""
    rng = np.random.default_rng(0)
    shapes = {"a.weight": (channels, channels, 3, 3), "b.weight": (channels, channels, 3, 3),
              "d.weight": (channels, channels, 1, 1)}
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n) for n, s in shapes.items()]
    nodes = [helper.make_node("Conv", ["x", "a.weight"], ["h"], name="/a/Conv", pads=[1] * 4),
             helper.make_node("Relu", ["h"], ["r"], name="/relu/Relu"),
             helper.make_node("Conv", ["r", "b.weight"], ["r1"], name="/b/Conv", pads=[1] * 4),
             helper.make_node("Conv", ["x", "d.weight"], ["r2"], name="/d/Conv"),
             helper.make_node("Add", ["r1", "r2"], ["y"], name="/Add")]
    graph = helper.make_graph(
        nodes, "residual", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", channels, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", channels, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _figures(e: object) -> tuple[object, ...]:
    """Everything of a training estimate but its analysis."""
    import dataclasses
    return tuple(getattr(e, f.name) for f in dataclasses.fields(e) if f.name != "analysis")  # type: ignore[arg-type]


@pytest.mark.parametrize("precision", ["fp32", "mixed-fp16", "mixed-bf16"])
@pytest.mark.parametrize("optimizer, grads", [("adam", "released"), ("sgd", "persistent")])
def test_train_fit_and_check_give_the_same_step(tmp_path: Path, precision: str, optimizer: str,
                                                grads: str) -> None:
    # `train`, `fit --train` and a bound `fit --train` (check) analyse the graph PyTorch runs:
    # no onnxruntime CPU kernel rules (before, fit and check analysed it with the Casts onnxruntime
    # inserts around float16 Convs: the forward peak at mixed-fp16 was 20992 B instead of 16896 B
    # and the backward ran /d/Conv last).
    path = tmp_path / "residual.onnx"
    onnx.save(residual_model(), str(path))
    cfg = {"precision": precision, "optimizer": optimizer, "grads": grads}
    train = estimate_training(path, dims={"batch": 2}, **cfg)  # type: ignore[arg-type]
    check = check_fit_training(path, dims={"batch": 2}, budget_bytes=1 << 30, config=training_config(**cfg))
    assert check.training and check.training.estimate and check.total_bytes == train.step_peak_bytes
    assert _figures(check.training.estimate) == _figures(train)
    # saved: x (the graph input both Conv a and Conv d save) and r (Relu's output, Conv b's input):
    # 2 x 16 x 8 x 8 elements each, 4 B (fp32); under autocast each Conv casts x itself (two
    # 2-byte copies, not cached) and saves its weight's cached half copy (16·16·9·2 twice, 16·16·2)
    if precision == "fp32":
        assert train.saved_bytes == 2 * (2 * 16 * 8 * 8) * 4
    else:
        assert train.saved_bytes == 3 * (2 * 16 * 8 * 8) * 2 + 2 * 16 * 16 * 9 * 2 + 16 * 16 * 2
    assert train.backward is not None and tuple(
        x for x in train.backward.labels if not x.endswith(":Cast"))[2:7] == (
        "/Add", "/d/Conv", "/b/Conv", "/relu/Relu", "/a/Conv")
    budget = estimate_training(path, dims={"batch": 8}, **cfg).step_peak_bytes  # type: ignore[arg-type]
    found = search_largest_training(path, solve="batch", budget_bytes=budget, config=training_config(**cfg))
    assert found.largest >= 8 and found.training and found.training.estimate
    at = estimate_training(path, dims={"batch": found.largest}, **cfg)  # type: ignore[arg-type]
    assert _figures(found.training.estimate) == _figures(at)
    for v, (peak, phase) in found.training.probes.items():
        e = estimate_training(path, dims={"batch": v}, **cfg)  # type: ignore[arg-type]
        assert (peak, phase) == (e.step_peak_bytes, e.peak_phase)


def test_training_config_and_input_errors() -> None:
    assert training_config(optimizer="AdamW").optimizer == "adamw"
    for kwargs, needle in (({"optimizer": "lamb"}, "sgd, momentum, adam, adamw"),
                           ({"grads": "kept"}, "released, persistent"),
                           ({"precision": "fp8"}, "fp32, mixed-fp16, mixed-bf16")):
        with pytest.raises(UsageError, match=needle):
            training_config(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="unknown optimizer"):
        search_largest_training(TRAIN_CNN, solve="batch", budget_bytes=1 << 30,
                                config=TrainingConfig(optimizer="lamb"))
    with pytest.raises(UsageError, match="nothing to train"):
        search_largest_training(TRAIN_CNN, solve="batch", budget_bytes=1 << 30,
                                config=training_config(frozen=("*",)))
    with pytest.raises(UnknownDimError, match="its dims: batch"):
        search_largest_training(TRAIN_CNN, solve="bach", budget_bytes=1 << 30)


def test_search_takes_any_cost() -> None:
    doubled = search_largest(CNN, solve="batch", budget_bytes=2 * (5 << 20),
                             cost=lambda a: 2 * a.total_bytes)
    plain = search_largest(CNN, solve="batch", budget_bytes=5 << 20)
    assert doubled.largest == plain.largest and doubled.total_bytes == 2 * plain.total_bytes
    assert all(p.total_bytes == 2 * p.analysis_total_bytes for p in doubled.probes)
    falling = search_largest(CNN, solve="batch", budget_bytes=1 << 30, limit=16,
                             cost=lambda a: (1 << 29) - a.total_bytes)
    assert falling.largest == 16 and falling.unbounded and not falling.monotone
    assert len(falling.violations) == 4  # 1 > 2 > 4 > 8 > 16: the check runs on the cost


def test_genai_past_buffer_reads_genai_config(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from graphmem.batch.search import genai_past_buffer

    model = tmp_path / "model.onnx"
    assert genai_past_buffer(model) is None  # no genai_config.json
    config = tmp_path / "genai_config.json"
    config.write_text(json.dumps({"search": {"max_length": 2048, "past_present_share_buffer": True}}))
    assert genai_past_buffer(model) == 2048
    config.write_text(json.dumps({"search": {"max_length": 2048, "past_present_share_buffer": False}}))
    assert genai_past_buffer(model) is None
