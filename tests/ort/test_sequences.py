"""Sequences as onnxruntime 1.31 runs them (graphmem.shapes.sequences, graphmem.model.program
sequence_elements): element buffers copied in, shared between sequences, released with the last
sequence holding them; each figure hand-computed and measured with a real session."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from builders import init, invoke, model, outcome, save, tensor
from onnx import TensorProto, helper

import graphmem
from graphmem.analysis.dims import parse_shapes
from graphmem.verify import measure

X = [4, 100]  # 1,600 B of float (a 1,792 B arena chunk)
F = {"x": np.ones(X, np.float32)}


def _seq(name: str):  # type: ignore[no-untyped-def]
    return helper.make_tensor_sequence_value_info(name, TensorProto.FLOAT, None)


def _run(path: Path, feeds: dict) -> tuple[list[int], int, int]:  # type: ignore[type-arg]
    run = measure(str(path), feeds, runs=1).runs[0]
    base = run.primary.session_baseline
    return [n.requested_in_use - base for n in run.nodes], run.requested_peak, run.in_use_peak_bytes


def test_insert_copies_the_tensor_and_shares_the_rest(tmp_path: Path) -> None:
    # c 1,600, z 1,600 (c freed after z); empty: a sequence owns no arena bytes; a 1,600 into c's
    # buffer; ins1 copies a (+1,600; a freed after); b 1,600; ins2 copies b (+1,600) and shares
    # a's copy (s1 released, its element kept by s2); cat: y 3,200 -> 1,600 + 3,200 + 3,200 = 8,000.
    m = model(
        [
            helper.make_node("Relu", ["x"], ["a"], name="a"),
            helper.make_node("Neg", ["x"], ["b"], name="b"),
            helper.make_node("SequenceEmpty", [], ["s0"], name="empty", dtype=TensorProto.FLOAT),
            helper.make_node("SequenceInsert", ["s0", "a"], ["s1"], name="ins1"),
            helper.make_node("SequenceInsert", ["s1", "b"], ["s2"], name="ins2"),
            helper.make_node("Sigmoid", ["x"], ["c"], name="c"),
            helper.make_node("ConcatFromSequence", ["s2"], ["y"], name="cat", axis=0),
            helper.make_node("Relu", ["c"], ["z"], name="z"),
        ],
        [tensor("x", X)], [tensor("y", [8, 100]), tensor("z", X)],
    )
    path = save(m, tmp_path / "insert.onnx")
    a = graphmem.analyze(path)
    timeline = [b for _, b in a.activations.timeline]
    assert timeline == [1_600, 3_200, 3_200, 3_200, 4_800, 4_800, 6_400, 8_000]
    # in-use: z, the two copies 3 x 1,792, y 3,200 -> 3,328 chunk
    assert (a.activations.peak_bytes, a.activations.in_use_peak_bytes) == (8_000, 8_704)
    assert a.activations.exact
    assert _run(path, F) == (timeline, 8_000, 8_704)


def test_identity_of_a_sequence_keeps_its_elements_to_the_end(tmp_path: Path) -> None:
    # cons copies a and b (+3,200; a, b freed after) -> 6,400; ident shares (aliases) s: 3,200;
    # at copies element 1 (+1,600); y, y2 +1,600 each: the elements stay held (only the slot's
    # first value, s, is ever released), 3,200 + e 1,600 + y 1,600 = 6,400 at y and y2.
    one = init("one", np.array(1, np.int64))
    m = model(
        [
            helper.make_node("Relu", ["x"], ["a"], name="a"),
            helper.make_node("Neg", ["x"], ["b"], name="b"),
            helper.make_node("SequenceConstruct", ["a", "b"], ["s"], name="cons"),
            helper.make_node("Identity", ["s"], ["s2"], name="ident"),
            helper.make_node("SequenceAt", ["s2", "one"], ["e"], name="at"),
            helper.make_node("Relu", ["e"], ["y"], name="y"),
            helper.make_node("Relu", ["y"], ["y2"], name="y2"),
        ],
        [tensor("x", X)], [tensor("y2", X)], [one],
    )
    path = save(m, tmp_path / "ident.onnx")
    timeline = [b for _, b in graphmem.analyze(path).activations.timeline]
    assert timeline == [1_600, 3_200, 6_400, 3_200, 4_800, 6_400, 6_400]
    assert _run(path, F)[0] == timeline
    # without the Identity the elements go after SequenceAt, their last reader: y holds e + y
    del m.graph.node[3]
    m.graph.node[3].input[0] = "s"
    path = save(m, tmp_path / "at.onnx")
    timeline = [b for _, b in graphmem.analyze(path).activations.timeline]
    assert timeline == [1_600, 3_200, 6_400, 4_800, 3_200, 3_200]
    assert _run(path, F)[0] == timeline


def test_split_and_erase(tmp_path: Path) -> None:
    # a 1,600; split: 4 pieces of 400 (+1,600; a freed after); erase shares the 3 it keeps and the
    # erased piece goes with s after erase; cat 1,200; len 8.
    m = model(
        [
            helper.make_node("Relu", ["x"], ["a"], name="a"),
            helper.make_node("SplitToSequence", ["a"], ["s"], name="split", axis=0, keepdims=1),
            helper.make_node("SequenceErase", ["s"], ["s2"], name="erase"),
            helper.make_node("SequenceLength", ["s2"], ["n"], name="len"),
            helper.make_node("ConcatFromSequence", ["s2"], ["y"], name="cat", axis=0),
        ],
        [tensor("x", X)], [tensor("y", [3, 100]), tensor("n", [], TensorProto.INT64)],
    )
    path = save(m, tmp_path / "split.onnx")
    a = graphmem.analyze(path)
    assert a.types["y"].shape == (3, 100) and a.types["s2"].elements is not None and len(a.types["s2"].elements) == 3
    timeline = [b for _, b in a.activations.timeline]
    assert timeline == [1_600, 3_200, 1_600, 2_400, 2_408]
    assert _run(path, F) == (timeline, 3_200, a.activations.in_use_peak_bytes)


def test_a_loop_carries_a_sequence_and_hands_its_elements_to_its_output(tmp_path: Path) -> None:
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="b_cond"),
            helper.make_node("Add", ["h_in", "one"], ["h_out"], name="b_add"),
            helper.make_node("SequenceInsert", ["s_in", "h_out"], ["s_out"], name="b_insert"),
        ],
        "body",
        [tensor("i", [], TensorProto.INT64), tensor("cond_in", [], TensorProto.BOOL), tensor("h_in", X), _seq("s_in")],
        [tensor("cond_out", [], TensorProto.BOOL), tensor("h_out", X), _seq("s_out")],
        [init("one", np.ones(1, np.float32))],
    )
    m = model(
        [
            helper.make_node("Relu", ["x"], ["x0"], name="pre"),
            helper.make_node("SequenceEmpty", [], ["s0"], name="empty"),
            helper.make_node("Loop", ["M", "c", "x0", "s0"], ["hf", "sf"], name="loop", body=body),
            helper.make_node("ConcatFromSequence", ["sf"], ["y"], name="cat", axis=0),
        ],
        [tensor("x", X), tensor("M", [], TensorProto.INT64), tensor("c", [], TensorProto.BOOL)],
        [tensor("hf", X), tensor("y", [None, 100])],
    )
    path = save(m, tmp_path / "loop_seq.onnx")
    # x0 1,600, Loop scalars 8 + 1 (a sequence feed: no memory pattern). Iteration k: h_k 1,600,
    # its copy e_k 1,600 inserted (the sequence shares e_1..e_k-1); h_k-2 is released before
    # iteration k: 3,209, 4,809 | 6,409, 8,009 | 8,009, 9,609. The Loop copies h_3 into hf
    # (1,600) and its output sequence keeps e_1..e_3 (no copy); its sample: x0 + hf + e = 8,000.
    # cat: y 4,800 -> hf + e + y = 11,200.
    a = graphmem.analyze(path, values={"M": (3,), "c": (1,)})
    timeline = [b for _, b in a.activations.timeline]
    assert timeline == [0, 1_600, 8_000, 3_209, 4_809, 4_809, 6_409, 8_009, 8_009, 8_009, 9_609, 9_609, 11_200]
    # in-use high at the Loop's end, before it releases: x0, h_2, h_3, e_1..e_3, hf (7 x 1,792)
    # and the two scalars' 256 B chunks
    assert (a.activations.peak_bytes, a.activations.in_use_peak_bytes) == (11_200, 7 * 1_792 + 512)
    assert a.activations.exact
    feeds = {**F, "M": np.array(3, np.int64), "c": np.array(True)}
    assert _run(path, feeds) == (timeline, 11_200, 13_056)


def _concat_input_model(tmp_path: Path) -> Path:
    """A sequence input s of [?, 100] floats: n = SequenceLength(s), nf = Cast(n), y = Sigmoid(Concat(s))."""
    seq = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, [None, 100])
    m = model(
        [
            helper.make_node("SequenceLength", ["s"], ["n"], name="len"),
            helper.make_node("ConcatFromSequence", ["s"], ["cat"], name="cat", axis=0),
            helper.make_node("Sigmoid", ["cat"], ["y"], name="sig"),
            helper.make_node("Cast", ["n"], ["nf"], name="cast", to=TensorProto.FLOAT),
        ],
        [seq], [tensor("y", [None, 100]), tensor("nf", [])],
    )
    return save(m, tmp_path / "seq_input.onnx")


def test_a_sequence_input_s_elements_are_given_by_shape(tmp_path: Path) -> None:
    # s = [4x100, 2x100] (the user's buffers, 2,400 B of inputs): len n 8; cast nf 4 -> 12 (n freed
    # after); cat 6x100 = 2,400 -> 2,404; sig y 2,400 -> 4,804 (cat freed after). In-use chunks:
    # nf 256 + cat 2,560 + y 2,560 = 5,376.
    path = _concat_input_model(tmp_path)
    a = graphmem.analyze(path, shapes={"s": ((4, 100), (2, 100))})
    assert [b for _, b in a.activations.timeline] == [8, 12, 2_404, 4_804]
    assert (a.activations.peak_bytes, a.activations.in_use_peak_bytes, a.activations.exact) == (4_804, 5_376, True)
    assert a.io.inputs_bytes == 2_400 and a.model.shapes == {"s": ((4, 100), (2, 100))}
    feeds = {"s": [np.ones((4, 100), np.float32), np.ones((2, 100), np.float32)]}
    assert _run(path, feeds) == ([8, 12, 2_404, 4_804], 4_804, 5_376)
    # without its elements the sequence and what is made of it have no size: not exact, never 0
    b = graphmem.analyze(path)
    assert not b.activations.exact and {x.kind for x in b.activations.approximations} == {"unresolved_tensor"}


def test_sequence_shapes_on_the_command_line(tmp_path: Path) -> None:
    path = _concat_input_model(tmp_path)
    assert parse_shapes(["s=[4x100,2x100]", "e=[]", "one=[scalar]"]) == {"s": ((4, 100), (2, 100)), "e": (), "one": ((),)}
    result = invoke("verify", "--resident-processes", "0", str(path), "--shape", "s=[4x100,2x100]", "--json")
    assert result.exit_code == 0, result.stdout
    doc = json.loads(result.stdout)["verify"]
    assert doc["predicted_bytes"] == doc["measured_bytes"] == 4_804
    code, _, err = outcome("peak", str(path), "--shape", "s=4x100")
    assert code == 2 and "is a sequence of tensors: give its elements' shapes" in err
    code, _, err = outcome("peak", str(path), "--shape", "s=[4x100,2x3x4]")
    assert code == 2 and "element 1 of --shape s=[4x100,2x3x4]" in err
    code, _, err = outcome("verify", "--resident-processes", "0", str(path))
    assert code == 2 and "--shape s=[2x3,4x3]" in err


def test_sequence_shapes_in_a_check_config(tmp_path: Path) -> None:
    path = _concat_input_model(tmp_path)  # peak 4,804 (above)
    config = tmp_path / "graphmem.toml"
    for budget, code in ((4_804, 0), (4_803, 1)):
        config.write_text(f'[[models]]\npath = "{path.name}"\nshapes = {{ s = [[4, 100], [2, 100]] }}\nmax-peak = {budget}\n')
        got, out, err = outcome("check", "-c", str(config), "-j", "1", "--require-exact")
        assert got == code, out + err


def test_an_optional_of_an_empty_sequence_has_its_element(tmp_path: Path) -> None:
    # OptionalHasElement(Optional(SequenceEmpty())) is true (the optional holds a sequence, with no
    # tensor in it): the If runs then. h 1; y (the If's static output) 1,600 before the branch;
    # then: a 1,600 -> 3,201; t written into y. (Taking it for empty planned else: 1,601.)
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["a"], name="t_a"), helper.make_node("Relu", ["a"], ["t"], name="t_t")],
                             "then", [], [tensor("t", X)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="e_neg")], "else", [], [tensor("e", X)])
    m = model(
        [
            helper.make_node("SequenceEmpty", [], ["s0"], name="empty", dtype=TensorProto.FLOAT),
            helper.make_node("Optional", ["s0"], ["o"], name="opt"),
            helper.make_node("OptionalHasElement", ["o"], ["h"], name="has"),
            helper.make_node("If", ["h"], ["y"], name="If_h", then_branch=then, else_branch=other),
        ],
        [tensor("x", X)], [tensor("y", X)], opset=18,
    )
    path = save(m, tmp_path / "opt_empty_seq.onnx")
    a = graphmem.analyze(path)
    assert (a.activations.peak_bytes, a.activations.peak_node, a.activations.exact) == (3_201, "If_h/then/t_a", True)
    assert _run(path, F)[1] == 3_201


def _split_model(tmp_path: Path, split: np.ndarray | None, **attrs: int) -> Path:
    nodes = [helper.make_node("SplitToSequence", ["x", "sp"] if split is not None else ["x"], ["s"], name="split", **attrs),
             helper.make_node("SequenceAt", ["s", "zero"], ["y"], name="at")]
    inits = [init("zero", np.array(0, np.int64))] + ([init("sp", split)] if split is not None else [])
    return save(model(nodes, [tensor("x", X)], [tensor("y", None)], inits), tmp_path / "split.onnx")


def _ort_runs(path: Path) -> tuple[int, ...] | str:
    import onnxruntime as ort

    try:
        return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, F)[0].shape
    except Exception as e:  # noqa: BLE001 - the refusal's text is the point
        return type(e).__name__


def test_split_to_sequence_refuses_what_the_kernel_fails_at_run_time(tmp_path: Path) -> None:
    # fuzz case 21712: axis 2**62 was an IndexError; onnxruntime's HandleNegativeAxis fails the run.
    for split, attrs, why in [
        (None, {"axis": 1 << 62}, "axis 4611686018427387904 is out of range for its input of rank 2"),
        (np.array([5, -1], np.int64), {"axis": 0}, "has a negative value"),
    ]:
        path = _split_model(tmp_path, split, **attrs)
        assert isinstance(_ort_runs(path), str)
        code, _, err = outcome("peak", str(path))
        assert code == 2 and err.count("\n") == 1 and why in err and "node 'split' (SplitToSequence)" in err, err
    # 0-length pieces run (onnxruntime 1.31): [2, 0, 2] is three pieces, the middle one empty.
    a = graphmem.analyze(_split_model(tmp_path, np.array([2, 0, 2], np.int64), axis=0))
    assert [e.shape for e in a.types["s"].elements] == [(2, 100), (0, 100), (2, 100)]
    # A scalar split of 0: onnx's inference refuses it (onnxruntime's session dies of SIGFPE on it).
    code, _, err = outcome("peak", str(_split_model(tmp_path, np.array(0, np.int64), axis=1)))
    assert code == 2 and err.count("\n") == 1 and "'split' must be greater than zero" in err, err


def test_split_to_sequence_by_a_scalar_with_keepdims_0_as_onnxruntime_runs_it(tmp_path: Path) -> None:
    # sequence_ops.cc keeps the dims only for a list split: a scalar split with keepdims 0 drops the
    # axis, which works for pieces of length 1 and fails (Tensor::Reshape) for longer ones.
    path = _split_model(tmp_path, np.array(30, np.int64), axis=1, keepdims=0)
    assert _ort_runs(path) == "Fail"
    code, _, err = outcome("peak", str(path))
    assert code == 2 and "pieces are 30 long, not 1" in err and err.count("\n") == 1, err
    ones = _split_model(tmp_path, np.array(1, np.int64), axis=0, keepdims=0)
    assert _ort_runs(ones) == (100,)
    assert [e.shape for e in graphmem.analyze(ones).types["s"].elements] == [(100,)] * 4
    list_path = _split_model(tmp_path, np.array([30, 70], np.int64), axis=1, keepdims=0)
    assert _ort_runs(list_path) == (4, 30)
    assert [e.shape for e in graphmem.analyze(list_path).types["s"].elements] == [(4, 30), (4, 70)]


def test_split_to_sequence_of_more_pieces_than_the_bound_leaves_them_unknown(tmp_path: Path) -> None:
    from graphmem.shapes.sequences import MAX_PIECES

    m = model([helper.make_node("SplitToSequence", ["x"], ["s"], name="split", axis=0),
               helper.make_node("SequenceLength", ["s"], ["n"], name="len")],
              [tensor("x", [MAX_PIECES + 1, 1])], [tensor("n", [], TensorProto.INT64)])
    a = graphmem.analyze(save(m, tmp_path / "many.onnx"))
    assert a.types["s"].elements is None and not a.activations.exact
