"""If, Loop and Scan planned as onnxruntime 1.31 runs them (issue 13): tiny graphs, hand-computed
run-1 figures (alloc/free order in the comments), each also measured with a real session."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from builders import init, invoke, model, outcome, save, tensor
from onnx import TensorProto, helper

import graphmem
from graphmem.analysis import analyze_graph_opt
from graphmem.analysis.timeline import memory_timeline
from graphmem.errors import UnboundDimError
from graphmem.verify import measure

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
X = [4, 100]  # 1,600 B of float; 1,792 B once rounded to the memory pattern's 256 B


def _measured(path: Path, feeds: dict) -> int:  # type: ignore[type-arg]
    return measure(str(path), feeds, runs=1).runs[0].requested_peak


def _loop_model(tmp_path: Path) -> Path:
    """x0 = Relu(x); Loop(M) carries h (Add 1, Mul 2) and scans y = h_in * W; out = Relu(h_final)."""
    body = helper.make_graph(
        [
            helper.make_node("Add", ["h_in", "one"], ["a"], name="b_add"),
            helper.make_node("Mul", ["a", "two"], ["h_out"], name="b_mul"),
            helper.make_node("Mul", ["h_in", "W"], ["y"], name="b_scan"),
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="b_cond"),
        ],
        "body",
        [tensor("i", [], I64), tensor("cond_in", [], B), tensor("h_in", X)],
        [tensor("cond_out", [], B), tensor("h_out", X), tensor("y", X)],
        [init("one", np.ones(1, np.float32)), init("two", np.full(1, 2.0, np.float32))],
    )
    m = model(
        [
            helper.make_node("Relu", ["x"], ["x0"], name="pre"),
            helper.make_node("Loop", ["M", "c", "x0"], ["hf", "ys"], name="loop", body=body),
            helper.make_node("Relu", ["hf"], ["out"], name="post"),
        ],
        [tensor("x", X), tensor("M", [], I64), tensor("c", [], B)],
        [tensor("out", X), tensor("ys", [None, 4, 100])],
        [init("W", np.full(1, 3.0, np.float32))],
    )
    return save(m, tmp_path / "loop.onnx")


def test_loop_iterations_and_memory_pattern(tmp_path: Path) -> None:
    # pre: x0 1,600. Loop: iteration-number and condition scalars 8 + 1 (held to the end).
    # iter 1 (no pattern yet): b_cond shares cond_in (Identity of a feed: kShare), y1 1,600,
    #   a 1,600, h1 1,600 -> 1,600 + 9 + 4,800 = 6,409; a freed; the pattern (a: 1,792) cached.
    # iter 2: block 1,792 at frame start; y2, h2 -> 1,609 + y1 + h1 + block + y2 + h2 = 9,801.
    # iter 3: h1 released (replaced as feed), then block, y3, h3 -> 11,401 = the peak.
    # Loop's own sample: x0 + hf 1,600 + ys 4,800 = 8,000 (its temporaries released before it).
    path = _loop_model(tmp_path)
    a = graphmem.analyze(path, values={"M": (3,), "c": (1,)})
    assert a.activations.peak_bytes == 11_401
    assert a.activations.peak_node == "loop/body/b_mul"
    assert dict(a.activations.timeline)["loop"] == 8_000
    assert a.activations.exact  # every body planned, every kernel's scratch known
    feeds = {"x": np.ones(X, np.float32), "M": np.array(3, np.int64), "c": np.array(True)}
    assert _measured(path, feeds) == 11_401
    # The arena (1,600 B -> 1,792 B chunks, the scalars 256 B each): x0 + scalars 2,304; iteration
    # 1: y1, a, h1 -> 7,680, a freed; iteration 2: the block takes a's chunk, y2, h2 -> 11,264, the
    # block freed; iteration 3: h1 freed, block, y3, h3 -> 13,056, block freed; after the last:
    # hf 1,792 and ys 4,800 -> 4,864 B before the kernel releases anything: 17,920.
    assert a.activations.in_use_peak_bytes == 17_920
    assert measure(str(path), feeds, runs=1).runs[0].in_use_peak_bytes == 17_920
    assert a.flops.macs == 0 and a.flops.flops == 400 + 3 * 1_200 + 400  # Relu, 3 x (Add, Mul, Mul), Relu


@pytest.mark.parametrize(("m", "c"), [(0, True), (3, False)])
def test_a_loop_without_iterations_returns_its_input_and_empty_scan_outputs(tmp_path: Path, m, c) -> None:  # type: ignore[no-untyped-def]
    # no iteration (M = 0, or the first condition false): hf is a copy of x0 (1,600) and ys is
    # empty, [0, 4, 100] (loop.cc), 0 B: the Loop's sample x0 + hf 3,200; post: out 1,600 over hf.
    path = _loop_model(tmp_path)
    a = graphmem.analyze(path, values={"M": (m,), "c": (int(c),)})
    assert (list(a.activations.timeline), a.activations.exact) == ([("pre", 1_600), ("loop", 3_200), ("post", 3_200)], True)
    feeds = {"x": np.ones(X, np.float32), "M": np.array(m, np.int64), "c": np.array(c)}
    assert _measured(path, feeds) == 3_200


def test_a_loop_scan_output_that_is_the_carried_feed_keeps_it_to_the_end(tmp_path: Path) -> None:
    """Loop while i + 1 < lim: h' = h * w (carried), keep = Identity(h) (a scan output: the feed itself)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["i", "one"], ["i1"]), helper.make_node("Less", ["i1", "lim"], ["cond_out"]),
         helper.make_node("Mul", ["h_in", "w"], ["h_out"]), helper.make_node("Identity", ["h_in"], ["keep"])],
        "body", [tensor("i", [], I64), tensor("cond_in", [], B), tensor("h_in", X)],
        [tensor("cond_out", [], B), tensor("h_out", X), tensor("keep", X)], [init("one", np.array(1, np.int64))],
    )
    m = model(
        [helper.make_node("Relu", ["x"], ["x0"]), helper.make_node("Loop", ["big", "tr", "x0"], ["hf", "keeps"], body=body)],
        [tensor("x", X), tensor("lim", [], I64)], [tensor("hf", X), tensor("keeps", [None, *X])],
        [init("w", np.full([100], 2.0, np.float32)), init("big", np.array(100, np.int64)), init("tr", np.array(True))],
    )
    path = save(m, tmp_path / "loop_keep.onnx")
    # x0 1,600; Loop: 8 + 1. Iteration 1 (order Identity, Mul, Add, Less): keep is x0 (kShare), h1
    # 1,600, i1 8, cond 1 -> 3,218. Iteration 2: i1 and the first cond gone, block 256, h2, cond ->
    # 5,066. Iteration 3: cond of 1 released, h1 NOT (iteration 2's keep is h1, held by the Loop's
    # scan outputs to the end) -> 5,065, h3 -> 6,665, cond -> 6,666; iteration 4 the same, h2 kept
    # -> 8,266 (lim 4: 4 iterations). The Loop: keeps 4 x 1,600 and hf 1,600 allocated, its
    # temporaries and the h's released -> 9,600.
    a = graphmem.analyze(path, values={"lim": (4,)})
    requested = [b for _, b in a.activations.timeline]
    # (the Loop's own sample comes first: its profiler event starts before its bodies')
    assert requested == [1_600, 9_600, 1_609, 3_209, 3_217, 3_218, 3_465, 5_065, 5_065, 5_066,
                         5_065, 6_665, 6_665, 6_666, 6_665, 8_265, 8_265, 8_266]
    run = measure(str(path), {"x": np.ones(X, np.float32), "lim": np.array(4, np.int64)}, runs=1).runs[0]
    assert [e.requested_in_use - run.primary.session_baseline for e in run.nodes] == requested
    assert (a.activations.peak_bytes, a.activations.in_use_peak_bytes) == (run.requested_peak, run.in_use_peak_bytes) == (9_600, 17_920)


def test_loop_trip_count_unknown_is_an_error_naming_the_loop(tmp_path: Path) -> None:
    path = _loop_model(tmp_path)
    with pytest.raises(UnboundDimError, match=r"trip count 'M' of Loop 'loop'.*--value"):
        graphmem.analyze(path, values={"c": (1,)})
    code = invoke("peak", str(path), "--value", "c=1").exit_code
    assert code == 2


def _if_model(tmp_path: Path) -> Path:
    """If(mode == 1): then x0 * W1 + z -> Sigmoid (W1 a body initializer); else Relu(x0)."""
    then = helper.make_graph(
        [
            helper.make_node("Mul", ["x0", "W1"], ["t1"], name="t_mul"),
            helper.make_node("Add", ["t1", "z"], ["t2"], name="t_add"),
            helper.make_node("Sigmoid", ["t2"], ["y_then"], name="t_sig"),
        ],
        "then", [], [tensor("y_then", X)], [init("W1", np.full(X, 2.0, np.float32))],
    )
    other = helper.make_graph([helper.make_node("Relu", ["x0"], ["y_else"], name="e_relu")], "else", [], [tensor("y_else", X)])
    m = model(
        [
            helper.make_node("Relu", ["x"], ["x0"], name="pre"),
            helper.make_node("Neg", ["x"], ["z"], name="prez"),
            helper.make_node("Equal", ["mode", "one"], ["c"], name="eq"),
            helper.make_node("If", ["c"], ["y"], name="If_mode", then_branch=then, else_branch=other),
            helper.make_node("Relu", ["y"], ["out"], name="post"),
        ],
        [tensor("x", X), tensor("mode", [], I64)], [tensor("out", X)], [init("one", np.array(1, np.int64))],
    )
    return save(m, tmp_path / "if.onnx")


def test_if_branch_from_a_value_and_outer_values_live_until_the_if_ends(tmp_path: Path) -> None:
    # prez z 1,600, pre x0 1,600, eq c 1 -> 3,201; the If's output y (static [4,100]) 1,600
    # allocated before the branch; then: t1 1,600 -> 6,401, t2 1,600 -> 8,001 (t1 freed after),
    # Sigmoid writes into y. x0, z (read by the branch) are freed after the If, not before.
    path = _if_model(tmp_path)
    then = graphmem.analyze(path, values={"mode": (1,)})
    assert (then.activations.peak_bytes, then.activations.peak_node) == (8_001, "If_mode/then/t_add")
    other = graphmem.analyze(path, values={"mode": (0,)})
    assert other.activations.peak_bytes == 4_801  # x0, z, c, y: the Relu writes into y
    for value, peak in ((1, 8_001), (0, 4_801)):
        feeds = {"x": np.ones(X, np.float32), "mode": np.array(value, np.int64)}
        assert _measured(path, feeds) == peak
    # the body's initializer is a weight, whichever branch runs; then's Mul runs only with mode=1
    assert then.weights.bytes == other.weights.bytes == 1_600 + 8
    # 1 FLOP per element for Relu, Neg | Mul, Add, Sigmoid | Relu; Equal is 1 integer op
    assert (then.flops.flops, then.flops.int_ops) == (6 * 400, 1)
    assert other.flops.flops == 4 * 400  # Relu, Neg | Relu | Relu


def test_unknown_condition_assumes_the_larger_branch(tmp_path: Path) -> None:
    path = _if_model(tmp_path)
    a = graphmem.analyze(path)
    assert a.activations.peak_bytes == 8_001
    (assumed,) = [x for x in a.activations.approximations if x.kind == "branch_assumed"]
    assert assumed.node == "If_mode" and "then 4,800 B" in assumed.detail and "else 1,600 B" in assumed.detail
    doc = json.loads(invoke("peak", str(path), "--json").stdout)
    assert doc["activations"]["exact"] is False
    assert "branch_assumed" in {x["kind"] for x in doc["activations"]["approximations"]}


def test_scan9_state_buffers_slices_and_pattern(tmp_path: Path) -> None:
    """Scan over 5 slices of [4,100]: s' = tanh(s + x_t), y_t = a * a."""
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s_in", "xt"], ["a"], name="b_add"),
            helper.make_node("Tanh", ["a"], ["s_out"], name="b_tanh"),
            helper.make_node("Mul", ["a", "a"], ["y"], name="b_mul"),
        ],
        "body", [tensor("s_in", X), tensor("xt", X)], [tensor("s_out", X), tensor("y", X)],
    )
    m = model(
        [
            helper.make_node("Relu", ["x"], ["x0"], name="pre"),
            helper.make_node("Relu", ["s"], ["s0"], name="pres"),
            helper.make_node("Scan", ["s0", "x0"], ["sf", "ys"], name="scan", body=body, num_scan_inputs=1),
            helper.make_node("Relu", ["sf"], ["out"], name="post"),
        ],
        [tensor("x", [5, 4, 100]), tensor("s", X)], [tensor("out", X), tensor("ys", [5, 4, 100])],
    )
    path = save(m, tmp_path / "scan.onnx")
    # x0 8,000 + s0 1,600; Scan allocates sf 1,600 and ys 8,000 (static shapes) and the two
    # loop-state buffers 2 x 1,600; slice 1: a 1,600 -> 24,000; slices 2-5: a's pattern block
    # 1,792 instead -> 24,192. The body writes s_out and y into those buffers.
    a = graphmem.analyze(path)
    assert a.activations.peak_bytes == 24_192
    assert _measured(path, {"x": np.ones([5, 4, 100], np.float32), "s": np.ones(X, np.float32)}) == 24_192


@pytest.mark.parametrize(("n", "at_add"), [(4, 8_000), ("n", 6_400)])
def test_scan9_output_axis_1_temporary_is_allocated_upfront_only_with_a_static_shape(tmp_path: Path, n, at_add) -> None:  # type: ignore[no-untyped-def]
    """One slice of [4,100] (no loop-state buffers), ys on scan axis 1: a temporary [1,4,100], then ys."""
    X = [n, 100]
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "xt"], ["a"], name="b_add"), helper.make_node("Tanh", ["a"], ["s_out"], name="b_tanh"),
         helper.make_node("Mul", ["a", "a"], ["y"], name="b_mul")],
        "body", [tensor("s_in", X), tensor("xt", X)], [tensor("s_out", X), tensor("y", X)],
    )
    m = model(
        [helper.make_node("Relu", ["x"], ["x0"], name="pre"), helper.make_node("Relu", ["s"], ["s0"], name="pres"),
         helper.make_node("Scan", ["s0", "x0"], ["sf", "ys"], name="scan", body=body, num_scan_inputs=1, scan_output_axes=[1]),
         helper.make_node("Relu", ["sf"], ["out"], name="post")],
        [tensor("x", [1, *X]), tensor("s", X)], [tensor("out", X), tensor("ys", [n, 1, 100])],
    )
    path = save(m, tmp_path / "scan_axis1.onnx")
    # pres s0 1,600, pre x0 1,600; Scan: sf 1,600 upfront; the temporary for ys 1,600 upfront when
    # the body's y has a static shape, else by iteration 1 when b_mul writes it (OutputIterator);
    # b_add a 1,600 -> 8,000 or 6,400; b_mul -> 8,000; after the slice: ys 1,600 (the transpose's
    # target), the temporary and a released -> 6,400 at the Scan's own sample; post: 4,800.
    a = graphmem.analyze(path, dims={"n": 4} if n == "n" else None)
    timeline = [b for _, b in a.activations.timeline]
    assert timeline == [1_600, 3_200, 6_400, at_add, 8_000, 8_000, 4_800]
    run = measure(str(path), {"x": np.ones([1, 4, 100], np.float32), "s": np.ones([4, 100], np.float32)}, runs=1).runs[0]
    assert [e.requested_in_use - run.primary.session_baseline for e in run.nodes] == timeline


def test_scan8_sequence_lens_sizes_each_batch_entry_s_state_buffers(tmp_path: Path) -> None:
    """Scan 8 over 3 batch entries of 5 slices of [100] with sequence_lens = (5, 3, 1)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "xt"], ["s_out"]), helper.make_node("Mul", ["s_out", "xt"], ["y"])],
        "b", [tensor("s_in", [100]), tensor("xt", [100])], [tensor("s_out", [100]), tensor("y", [100])],
    )
    m = model(
        [helper.make_node("Scan", ["lens", "s", "x"], ["sf", "ys"], body=body, num_scan_inputs=1)],
        [tensor("lens", [3], I64), tensor("s", [3, 100]), tensor("x", [3, 5, 100])], [tensor("sf", [3, 100]), tensor("ys", [3, 5, 100])],
        opset=8,
    )
    path = save(m, tmp_path / "scan8_lens.onnx")
    # outputs upfront: sf 1,200, ys 6,000; loop-state buffers a_ (length > 1) and b_ (> 2) of 400 B:
    # entry 0 (5 slices) both, entry 1 (3) both, entry 2 (1) none -> 1,600; 8,800 (the full length
    # for every entry would be 9,600)
    a = graphmem.analyze(path, values={"lens": (5, 3, 1)})
    assert (a.activations.peak_bytes, a.activations.exact) == (8_800, True)
    feeds = {"lens": np.array([5, 3, 1], np.int64), "s": np.ones([3, 100], np.float32), "x": np.ones([3, 5, 100], np.float32)}
    assert _measured(path, feeds) == 8_800
    with pytest.raises(UnboundDimError, match="the sequence_lens 'lens' of Scan"):
        graphmem.analyze(path)


def test_layers_shows_body_nodes_under_their_node(tmp_path: Path) -> None:
    path = _loop_model(tmp_path)
    out = invoke("layers", str(path), "--value", "M=3", "--value", "c=1", "--json")
    assert out.exit_code == 0, out.stdout
    rows = {r["name"]: r for r in json.loads(out.stdout)["layers"]}
    assert rows["loop/body/b_mul"]["flops"] == 3 * 400  # three iterations
    assert list(rows).index("loop") < list(rows).index("loop/body/b_add") < list(rows).index("post")


def test_verify_feeds_values_and_compares_body_kernels(tmp_path: Path) -> None:
    path = _if_model(tmp_path)
    result = invoke("verify", "--resident-processes", "0", str(path), "--value", "mode=1", "--json")
    assert result.exit_code == 0, result.stdout
    doc = json.loads(result.stdout)["verify"]
    assert doc["predicted_bytes"] == doc["measured_bytes"] == 8_001


def test_graph_opt_all_with_a_body_weight_in_weights_bin(tmp_path: Path) -> None:
    # onnxruntime writes initializers of 1,024 B and more, body ones too, to weights.bin
    path = _if_model(tmp_path)
    a = analyze_graph_opt(path, "all", values={"mode": (1,)})
    assert a.activations.peak_bytes > 0 and a.weights.bytes >= 1_600


def test_graph_opt_all_of_a_loop_holding_an_if_with_a_constant(tmp_path: Path) -> None:
    # onnxruntime writes the then branch's Constant k twice (as the node and as the initializer
    # it became) when it writes initializers to weights.bin: a file it would not load itself.
    then = helper.make_graph(
        [helper.make_node("Constant", [], ["k"], name="k", value=helper.make_tensor("kv", F, [4], [1, 2, 3, 4])),
         helper.make_node("Add", ["h_in", "k"], ["t"], name="t_add")],
        "then", [], [tensor("t", [4])],
    )
    other = helper.make_graph([helper.make_node("Neg", ["h_in"], ["e"], name="e_neg")], "else", [], [tensor("e", [4])])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="b_cond"),
         helper.make_node("Not", ["cond_in"], ["flag"], name="b_not"),
         helper.make_node("If", ["flag"], ["h_out"], name="b_if", then_branch=then, else_branch=other)],
        "body", [tensor("i", [], I64), tensor("cond_in", [], B), tensor("h_in", [4])],
        [tensor("cond_out", [], B), tensor("h_out", [4])],
    )
    path = save(model([helper.make_node("Loop", ["M", "c", "x"], ["hf"], name="loop", body=body)],
                      [tensor("x", [4]), tensor("M", [], I64), tensor("c", [], B)], [tensor("hf", [4])]),
                tmp_path / "loop_if_const.onnx")
    # Loop: iteration number and condition 8 + 1 = 9. Iteration 1: flag 1 (-> else), h1 16
    # (the If's static output, allocated before its branch, written by e_neg) -> 26; flag freed,
    # the pattern {flag: 256} cached. Iteration 2: block 256, h2 16 over 9 + h1 -> 297.
    # Iteration 3: h1 released first, then block and h3 -> 297. Loop output hf 16 -> 16.
    a = analyze_graph_opt(path, "all", values={"M": (3,), "c": (1,)})
    assert (a.activations.peak_bytes, a.activations.exact) == (297, True)
    feeds = {"x": np.ones(4, np.float32), "M": np.array(3, np.int64), "c": np.array(True)}
    assert measure(str(path), feeds, runs=1, graph_opt="all").runs[0].requested_peak == 297


def test_graph_opt_all_of_an_if_returning_a_body_weight_in_weights_bin(tmp_path: Path) -> None:
    # then returns its initializer k (1,600 B: onnxruntime writes it to weights.bin at all); the
    # checker's proxy gives it to the body as an outer-scope input returned through an Identity
    then = helper.make_graph([], "then", [], [tensor("k", X)], [init("k", np.ones(X, np.float32))])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [tensor("e", X)])
    m = model(
        [helper.make_node("Greater", ["f", "zero"], ["c"]), helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other),
         helper.make_node("Sigmoid", ["y"], ["z"])],
        [tensor("x", X), tensor("f", [], I64)], [tensor("z", X)], [init("zero", np.array(0, np.int64))],
    )
    path = save(m, tmp_path / "if_weight_out.onnx")
    # c 1; y 1,600 (k copied into it) -> 1,601; c released after the If; z 1,600 -> 3,200
    a = analyze_graph_opt(path, "all", values={"f": (1,)})
    feeds = {"x": np.ones(X, np.float32), "f": np.array(1, np.int64)}
    assert a.activations.peak_bytes == measure(str(path), feeds, runs=1, graph_opt="all").runs[0].requested_peak == 3_200


def test_train_names_an_if_it_cannot_resolve_and_the_pictures_draw_the_replay(tmp_path: Path) -> None:
    path = _if_model(tmp_path)
    # train estimates an If of unknown condition both ways (tests/training/test_training_controlflow.py);
    # this model has no weights: one line, exit 2, for either branch
    code, _, err = outcome("train", str(path))
    assert code == 2 and "nothing to train" in err and err.count("\n") == 1
    out = tmp_path / "r.html"
    code, _, err = outcome("report", str(path), "--value", "mode=1", "-o", str(out))
    assert code == 0, err
    assert "If_mode/then/t_add" in out.read_text()  # the peak, a step of the branch
    # the timeline of the replay: every profiler sample a step, the If's own after its branch's
    # (onnxruntime's order eq 1, prez 1,601, pre 3,201; the branch: y upfront, t1 6,401, t2 8,001,
    # t_sig writes y (t1 freed after t_add, t2 after t_sig) 6,401; If_mode 4,801; post: x0, z, c
    # released after the If, out 1,600 -> 3,200); every request a buffer: y (the If's output) held
    # from the branch's first step on
    a = graphmem.analyze(path, values={"mode": (1,)})
    t = memory_timeline(a)
    assert t.labels == ("eq", "prez", "pre", "If_mode/then/t_mul", "If_mode/then/t_add", "If_mode/then/t_sig", "If_mode", "post")
    assert t.requested == (1, 1_601, 3_201, 6_401, 8_001, 6_401, 4_801, 3_200)
    assert (t.peak_step, t.labels[t.peak_step], t.lower_bound) == (4, "If_mode/then/t_add", None)
    assert max(t.in_use) == a.activations.in_use_peak_bytes
    y = next(b for b in t.buffers if t.tensors[b.tensors[0]].name == "y")
    assert (y.bytes, y.first, y.last) == (1_600, 3, 7)
