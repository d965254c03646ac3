"""Real onnxruntime sessions on tiny hand-built models, with figures computed by hand.

All sessions: CPU provider, ORT_DISABLE_ALL, one intra-op thread (measure's
defaults graph_opt="none", threads=1).  Notation in the comments: +A means
tensor A is allocated from the CPU arena, -A that it is released; the profiler
samples each node right after its kernel computed, before the inputs it was
the last consumer of are released.  Graph inputs fed from numpy are wrapped,
not copied, so they never appear.  The CPU arena rounds chunks up to 256 bytes.
"""

from __future__ import annotations

import json
import functools
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from graphmem.errors import (
    ExternalDataError,
    GraphmemError,
    MeasureError,
    RuntimeUnavailableError,
    UnboundDimError,
    UsageError,
)
from graphmem.verify import (
    choose_provider,
    make_feeds,
    measure,
    provider_options,
    session_options,
)
from graphmem.verify.measure import session_source, split_runs
from graphmem.verify.providers import CPU, CUDA, cuda_problem

from builders import model as build_model, tensor

CUDA_USABLE = cuda_problem() is None


_model = functools.partial(build_model, checked=True)  # every model here is checked


def _relu_model() -> onnx.ModelProto:
    return _model(
        [helper.make_node("Relu", ["X"], ["Y"], name="relu")],
        [tensor("X", [1, 1000], TensorProto.FLOAT)],
        [tensor("Y", [1, 1000], TensorProto.FLOAT)],
    )


def _chain_model() -> onnx.ModelProto:
    """X[256] -Add c1-> A -Mul c2-> B -Add c3-> Y, float32: every tensor is 1024 bytes."""
    constants = [numpy_helper.from_array(np.ones(256, np.float32), name) for name in ("c1", "c2", "c3")]
    return _model(
        [
            helper.make_node("Add", ["X", "c1"], ["A"], name="add1"),
            helper.make_node("Mul", ["A", "c2"], ["B"], name="mul"),
            helper.make_node("Add", ["B", "c3"], ["Y"], name="add2"),
        ],
        [tensor("X", [256], TensorProto.FLOAT)],
        [tensor("Y", [256], TensorProto.FLOAT)],
        constants,
    )


def _chain_feeds():
    return {"X": np.ones(256, np.float32)}


# ---------------------------------------------------------------- measure


def test_relu_counts_the_graph_output_but_not_the_graph_input():
    # run 1 and run 2: relu: +Y (4000 B requested, 4096 B chunk); X is the caller's numpy buffer.
    # Y is released when measure drops the run's outputs, so run 2 starts from 0 again.
    result = measure(_relu_model(), {"X": np.ones((1, 1000), np.float32)}, runs=2)

    assert result.providers == (CPU,)
    for run in result.runs:
        (node,) = run.nodes
        assert (node.name, node.op_type, node.provider) == ("relu", "Relu", CPU)
        assert (node.requested_in_use, node.requested_delta) == (4000, 4000)
        assert (node.in_use, node.in_use_delta, node.in_use_peak) == (4096, 4096, 4096)
        assert run.primary.baseline == 0
        assert run.primary.preallocated == 0
        assert run.requested_peak == 4000
        assert run.primary.peak_node == "relu"
        assert run.in_use_peak_bytes == 4096
        assert [(o.name, o.shape, o.dtype, o.nbytes) for o in run.outputs] == [("Y", (1, 1000), "float32", 4000)]
    # The allocator's high-water mark is never reset: run 2 only equals run 1's 4096,
    # so it cannot be told apart from run 1's and is flagged as an upper bound.
    assert result.runs[0].primary.in_use_peak_exact is True
    assert result.runs[1].primary.in_use_peak_exact is False
    assert result.requested_peak == 4000


def test_chain_without_memory_pattern_every_run_allocates_per_node():
    # add1: +A                    -> A            = 1024 (delta +1024)
    # mul:  +B, then -A (A dead)  -> A+B          = 2048 (delta +1024)  <- peak, first reached here
    # add2: +Y, then -B           -> B+Y          = 2048 (delta +1024: A was freed before add2 started)
    # Run 2 repeats this exactly (outputs of run 1 released in between).
    result = measure(_chain_model(), _chain_feeds(), runs=2, mem_pattern=False)

    for run in result.runs:
        assert [n.name for n in run.nodes] == ["add1", "mul", "add2"]
        assert [n.requested_in_use for n in run.nodes] == [1024, 2048, 2048]
        assert [n.requested_delta for n in run.nodes] == [1024, 1024, 1024]
        assert run.primary.baseline == 0
        assert run.primary.preallocated == 0
        assert run.requested_peak == 2048
        assert run.primary.peak_node == "mul"
        assert run.in_use_peak_bytes == 2048
    # mem_in_use_peak is cumulative over the session: run 2's first node reports
    # 1024 in use but a peak of 2048, which run 1 set.
    first_of_run2 = result.runs[1].nodes[0]
    assert (first_of_run2.in_use, first_of_run2.in_use_peak) == (1024, 2048)
    assert [run.primary.in_use_peak_exact for run in result.runs] == [True, False]


def test_chain_with_memory_pattern_run2_preallocates_the_planned_block():
    # Run 1 is planned per node exactly as without the pattern: peak 2048 at mul.
    # Run 2 reuses the pattern recorded by run 1: before add1, ORT allocates one
    # block for the planned intermediates A and B (2048 B, both live during mul),
    # so their nodes show no delta; only the graph output Y is allocated per node:
    # start: +block(A,B)  -> 2048 (preallocated)
    # add1, mul           -> 2048 (delta 0)
    # add2: +Y            -> 3072 (delta +1024)  <- peak
    result = measure(_chain_model(), _chain_feeds(), runs=2, mem_pattern=True)
    run1, run2 = result.runs

    assert [n.requested_in_use for n in run1.nodes] == [1024, 2048, 2048]
    assert run1.requested_peak == 2048
    assert run1.primary.peak_node == "mul"

    assert [n.requested_in_use for n in run2.nodes] == [2048, 2048, 3072]
    assert [n.requested_delta for n in run2.nodes] == [0, 0, 1024]
    assert run2.primary.baseline == 2048
    assert run2.primary.session_baseline == 0
    assert run2.primary.preallocated == 2048
    assert run2.requested_peak == 3072
    assert run2.primary.peak_node == "add2"
    # "max - this run's own baseline" would hide the pattern block:
    assert max(n.requested_in_use for n in run2.nodes) - run2.primary.baseline == 1024
    # Run 2 raised the allocator's high-water mark, so its in-use peak is exact.
    assert (run2.in_use_peak_bytes, run2.primary.in_use_peak_exact) == (3072, True)
    assert result.requested_peak == 3072


def test_reshape_aliases_its_input_and_allocates_nothing():
    # Before run 1 the 8-byte int64 shape initializer "s" already sits in the CPU
    # arena (small initializers do; large ones do not): baseline 8.
    # r1: +A (4096)        -> 8 + 4096 = 4104
    # rs: B aliases A       -> 4104 (delta 0)
    # r2: +Y (4096), -A/B   -> 8200 (A still live while r2 computes)  <- peak
    shape = numpy_helper.from_array(np.array([1024], np.int64), "s")
    model = _model(
        [
            helper.make_node("Relu", ["X"], ["A"], name="r1"),
            helper.make_node("Reshape", ["A", "s"], ["B"], name="rs"),
            helper.make_node("Relu", ["B"], ["Y"], name="r2"),
        ],
        [tensor("X", [4, 256], TensorProto.FLOAT)],
        [tensor("Y", [1024], TensorProto.FLOAT)],
        [shape],
    )
    run = measure(model, {"X": np.ones((4, 256), np.float32)}, runs=1).runs[0]

    assert [n.op_type for n in run.nodes] == ["Relu", "Reshape", "Relu"]
    assert [n.requested_delta for n in run.nodes] == [4096, 0, 4096]
    assert [n.requested_in_use for n in run.nodes] == [4104, 4104, 8200]
    assert run.primary.baseline == 8
    assert run.requested_peak == 8192
    assert run.primary.peak_node == "r2"
    assert run.outputs[0].shape == (1024,)


def test_conv_scratch_shows_only_in_the_in_use_peak():
    # conv: +Y [1,8,30,30] float = 28800 B requested (28928 B chunk); MLAS also
    # takes a working buffer inside Compute and frees it before the sample, so
    # requested_in_use never sees it but the allocator's high-water mark does.
    weight = numpy_helper.from_array(np.ones((8, 4, 3, 3), np.float32), "W")
    model = _model(
        [helper.make_node("Conv", ["X", "W"], ["Y"], name="conv", kernel_shape=[3, 3])],
        [tensor("X", [1, 4, 32, 32], TensorProto.FLOAT)],
        [tensor("Y", [1, 8, 30, 30], TensorProto.FLOAT)],
        [weight],
    )
    run = measure(model, {"X": np.ones((1, 4, 32, 32), np.float32)}, runs=1).runs[0]

    (node,) = run.nodes
    assert (node.requested_in_use, node.in_use) == (28800, 28928)
    assert run.requested_peak == 28800
    assert run.primary.in_use_peak_exact is True
    assert run.in_use_peak_bytes > 28928


def test_measure_from_a_path_with_external_data_writes_nothing_next_to_it(tmp_path):
    # add: +Y (1024); the external initializer c is not an activation.
    constant = numpy_helper.from_array(np.ones(256, np.float32), "c")
    model = _model(
        [helper.make_node("Add", ["X", "c"], ["Y"], name="add")],
        [tensor("X", [256], TensorProto.FLOAT)],
        [tensor("Y", [256], TensorProto.FLOAT)],
        [constant],
    )
    path = tmp_path / "m.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, location="m.data", size_threshold=0)
    before = sorted(p.name for p in tmp_path.iterdir())

    result = measure(path, {"X": np.ones(256, np.float32)}, runs=1)

    assert result.runs[0].requested_peak == 1024
    assert sorted(p.name for p in tmp_path.iterdir()) == before == ["m.data", "m.onnx"]


def test_in_memory_model_above_the_limit_goes_through_external_data(tmp_path):
    model = _chain_model()
    source = session_source(model, tmp_path, limit=1)

    assert isinstance(source, str) and Path(source).parent == tmp_path
    assert all(not init.HasField("data_location") or init.data_location == TensorProto.DEFAULT for init in model.graph.initializer)
    session = ort.InferenceSession(source, providers=[CPU])
    (y,) = session.run(None, _chain_feeds())
    np.testing.assert_array_equal(y, np.full(256, 3.0, np.float32))  # ((1 + 1) * 1) + 1


def test_in_memory_model_with_unresolvable_external_data_is_rejected(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save_model(_chain_model(), str(path), save_as_external_data=True, location="m.data", size_threshold=0)
    model = onnx.load(str(path), load_external_data=False)

    with pytest.raises(ExternalDataError, match="pass the model's path"):
        measure(model, _chain_feeds())


def test_profile_without_memory_fields_is_a_clear_error(tmp_path):
    # With the CPU arena disabled ORT 1.31 emits node events without any mem_* field.
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.enable_cpu_mem_arena = False
    options.profile_file_prefix = str(tmp_path / "p")
    session = ort.InferenceSession(_relu_model().SerializeToString(), options, providers=[CPU])
    session.run(None, {"X": np.ones((1, 1000), np.float32)})
    events = json.loads(Path(session.end_profiling()).read_text())

    with pytest.raises(MeasureError, match="lacks mem_bytes_requested_in_use.*arena enabled"):
        split_runs(events, 1)


def test_measure_rejects_bad_arguments():
    with pytest.raises(UsageError, match="runs"):
        measure(_relu_model(), {"X": np.ones((1, 1000), np.float32)}, runs=0)
    with pytest.raises(UsageError, match="graph optimization level"):
        measure(_relu_model(), {"X": np.ones((1, 1000), np.float32)}, graph_opt="max")
    with pytest.raises(MeasureError, match="run failed.*X"):
        measure(_relu_model(), {"X": np.ones((1, 7), np.float32)})


# ---------------------------------------------------------------- feeds


def _feeds_model() -> onnx.ModelProto:
    table = numpy_helper.from_array(np.zeros((50, 8), np.float32), "table")
    wide = numpy_helper.from_array(np.zeros((3, 7), np.float32), "wide")
    bias = numpy_helper.from_array(np.zeros(2, np.float16), "bias")
    return _model(
        [
            helper.make_node("Gather", ["table", "input_ids"], ["emb"], name="embed"),
            helper.make_node("Gather", ["wide", "cols"], ["picked"], name="pick", axis=1),
            helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
            helper.make_node("Not", ["flags"], ["not_flags"]),
            helper.make_node("Add", ["x", "bias"], ["y"]),
        ],
        [
            tensor("input_ids", ["batch", "seq"], TensorProto.INT64),
            tensor("cols", [64], TensorProto.INT32),
            tensor("attention_mask", ["batch", "seq"], TensorProto.INT64),
            tensor("flags", [3], TensorProto.BOOL),
            tensor("x", ["batch", 2], TensorProto.FLOAT16),
            tensor("bias", [2], TensorProto.FLOAT16),  # also an initializer: no feed
        ],
        [
            tensor("emb", ["batch", "seq", 8], TensorProto.FLOAT),
            tensor("picked", [3, 64], TensorProto.FLOAT),
            tensor("mask_f", ["batch", "seq"], TensorProto.FLOAT),
            tensor("not_flags", [3], TensorProto.BOOL),
            tensor("y", ["batch", 2], TensorProto.FLOAT16),
        ],
        [table, wide, bias],
    )


def test_make_feeds_dtypes_shapes_and_safe_int_ranges():
    model = _feeds_model()
    feeds = make_feeds(model, {"batch": 4, "seq": 64}, seed=3)

    assert list(feeds) == ["input_ids", "cols", "attention_mask", "flags", "x"]
    assert {k: (v.dtype, v.shape) for k, v in feeds.items()} == {
        "input_ids": (np.dtype(np.int64), (4, 64)),
        "cols": (np.dtype(np.int32), (64,)),
        "attention_mask": (np.dtype(np.int64), (4, 64)),
        "flags": (np.dtype(np.bool_), (3,)),
        "x": (np.dtype(np.float16), (4, 2)),
    }
    # Gather indices stay inside the gathered axis (50 rows; 7 columns with axis=1),
    # and use more of it than the [0, 2) default.
    assert feeds["input_ids"].min() >= 0 and 2 <= feeds["input_ids"].max() < 50
    assert feeds["cols"].min() >= 0 and 2 <= feeds["cols"].max() < 7
    assert set(np.unique(feeds["attention_mask"])) <= {0, 1}
    # Same seed, same feeds; and a real session accepts them.
    again = make_feeds(model, {"batch": 4, "seq": 64}, seed=3)
    assert all(np.array_equal(feeds[k], again[k]) for k in feeds)
    session = ort.InferenceSession(model.SerializeToString(), providers=[CPU])
    session.run(None, feeds)


def test_make_feeds_int_range_override_and_errors():
    model = _feeds_model()
    feeds = make_feeds(model, {"batch": 2, "seq": 5}, int_range=(5, 6))
    assert (feeds["input_ids"] == 5).all() and (feeds["attention_mask"] == 5).all()

    with pytest.raises(UnboundDimError, match="'seq' is not bound"):
        make_feeds(model, {"batch": 2})
    with pytest.raises(UsageError, match="int_range"):
        make_feeds(model, {"batch": 2, "seq": 5}, int_range=(3, 3))


# ---------------------------------------------------------------- providers


@pytest.mark.skipif(CUDA_USABLE, reason="this machine can run CUDA")
def test_auto_falls_back_to_cpu_with_a_reason():
    # onnxruntime-gpu lists CUDA here although it cannot use it.
    assert CUDA in ort.get_available_providers()
    choice = choose_provider("auto")

    assert choice.name == CPU
    assert choice.reason.startswith("CUDA unusable")
    assert "\n" not in choice.reason


@pytest.mark.skipif(CUDA_USABLE, reason="this machine can run CUDA")
def test_cuda_request_raises_one_line_when_unusable():
    with pytest.raises(RuntimeUnavailableError, match="^CUDA requested but onnxruntime cannot use it: ") as info:
        choose_provider("cuda")
    assert "\n" not in str(info.value)
    assert isinstance(info.value, GraphmemError)
    with pytest.raises(RuntimeUnavailableError, match="CUDA requested"):
        measure(_relu_model(), {"X": np.ones((1, 1000), np.float32)}, provider="cuda")


def test_cpu_request_and_unknown_request():
    assert choose_provider("cpu").name == CPU
    with pytest.raises(UsageError, match="unknown provider request"):
        choose_provider("gpu")


def test_provider_and_session_options():
    # the user's CUDA options, else onnxruntime's defaults: nothing forced (issue 26)
    assert provider_options(CUDA) == {}
    assert provider_options(CUDA, {"arena_extend_strategy": "kSameAsRequested"}) == {
        "arena_extend_strategy": "kSameAsRequested"}
    assert provider_options(CPU) == {}
    levels = {
        "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    for name, level in levels.items():
        options = session_options(name, 3, True, "/tmp/x.onnx")
        assert options.graph_optimization_level == level
        assert (options.intra_op_num_threads, options.enable_profiling) == (3, True)
        assert options.optimized_model_filepath == "/tmp/x.onnx"
    assert session_options("none", 1, False, None, mem_pattern=False).enable_mem_pattern is False
    with pytest.raises(UsageError, match="threads"):
        session_options("none", -1, False, None)
