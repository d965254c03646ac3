"""Optional graph inputs bound with ``--shape`` (``o=4x100``, ``o=[4x100,2x100]``, ``o=none``),
OptionalGetElement (``providers/cpu/optional/optional_ops.cc``: Alias(0, 0), a copy of the
sequence's elements only as a graph output), measured with onnxruntime."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from builders import invoke, model, outcome, save, tensor
from onnx import TensorProto, helper

import graphmem
from graphmem.analysis.dims import parse_shapes
from graphmem.verify import measure

X = [4, 100]  # 1,600 B of float (a 1,792 B arena chunk)
ONES = np.ones(X, np.float32)


def _optional(name: str, inner):  # type: ignore[no-untyped-def]
    return helper.make_value_info(name, helper.make_optional_type_proto(inner))


def _run(path: Path, feeds: dict) -> tuple[list[int], int, int]:  # type: ignore[type-arg]
    run = measure(str(path), feeds, runs=1).runs[0]
    base = run.primary.session_baseline
    return [n.requested_in_use - base for n in run.nodes], run.requested_peak, run.in_use_peak_bytes


def _has_or_else(tmp_path: Path, name: str, inner, then_nodes, out_shape) -> Path:  # type: ignore[no-untyped-def]
    """h = OptionalHasElement(o); y = If(h) then: ``then_nodes`` (-> t), else: e = Neg(x)."""
    then = helper.make_graph(then_nodes, "then", [], [tensor("t", out_shape)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="e_neg")], "else", [], [tensor("e", out_shape)])
    m = model(
        [
            helper.make_node("OptionalHasElement", ["o"], ["h"], name="has"),
            helper.make_node("If", ["h"], ["y"], name="If_h", then_branch=then, else_branch=other),
        ],
        [tensor("x", X), _optional("o", inner)], [tensor("y", out_shape)], opset=18,
    )
    return save(m, tmp_path / f"{name}.onnx")


def _tensor_model(tmp_path: Path) -> Path:
    inner = helper.make_tensor_type_proto(TensorProto.FLOAT, [None, 100])
    nodes = [helper.make_node("OptionalGetElement", ["o"], ["g"], name="get"), helper.make_node("Relu", ["g"], ["t"], name="t_relu")]
    return _has_or_else(tmp_path, "opt_tensor", inner, nodes, X)


def test_an_optional_tensor_input_is_bound_by_shape_or_none(tmp_path: Path) -> None:
    path = _tensor_model(tmp_path)
    # o=4x100 (the user's buffer): h 1; y static [4, 100]: 1,600 before the branch (1,601);
    # then: get is o itself (Alias(0, 0), nothing requested), t written into y. In-use: 256 + 1,792.
    a = graphmem.analyze(path, shapes={"o": (4, 100)})
    assert [b for _, b in a.activations.timeline] == [1, 1_601, 1_601, 1_601]
    assert (a.activations.peak_bytes, a.activations.in_use_peak_bytes, a.activations.exact) == (1_601, 2_048, True)
    assert _run(path, {"x": ONES, "o": ONES}) == ([1, 1_601, 1_601, 1_601], 1_601, 2_048)
    # o=none: h is false; else: e written into y (1,601); onnxruntime's Python API takes None
    b = graphmem.analyze(path, shapes={"o": None})
    assert [x for _, x in b.activations.timeline] == [1, 1_601, 1_601] and b.activations.exact
    assert _run(path, {"x": ONES, "o": None}) == ([1, 1_601, 1_601], 1_601, 2_048)
    # without a binding the optional is unknown: not exact, says why
    c = graphmem.analyze(path)
    assert not c.activations.exact
    assert {x.kind for x in c.activations.approximations} == {"branch_assumed", "unresolved_tensor"}


def test_an_optional_tensor_returned_by_a_branch(tmp_path: Path) -> None:
    # then returns OptionalGetElement(o) (o's buffer, the user's): h 1; y 1,600 (1,601); the
    # branch writes nothing; z = Relu(y) 1,600 (3,201), h and y freed after it: 3,200 at the end.
    then = helper.make_graph([helper.make_node("OptionalGetElement", ["o"], ["g"], name="get")], "then", [], [tensor("g", X)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="e_neg")], "else", [], [tensor("e", X)])
    m = model(
        [
            helper.make_node("OptionalHasElement", ["o"], ["h"], name="has"),
            helper.make_node("If", ["h"], ["y"], name="If_h", then_branch=then, else_branch=other),
            helper.make_node("Relu", ["y"], ["z"], name="relu"),
        ],
        [tensor("x", X), _optional("o", helper.make_tensor_type_proto(TensorProto.FLOAT, X))], [tensor("z", X)], opset=18,
    )
    path = save(m, tmp_path / "opt_returned.onnx")
    a = graphmem.analyze(path, shapes={"o": (4, 100)})
    assert [b for _, b in a.activations.timeline] == [1, 1_601, 1_601, 3_200]
    assert (a.activations.peak_bytes, a.activations.in_use_peak_bytes, a.activations.exact) == (3_200, 3_584, True)
    assert _run(path, {"x": ONES, "o": ONES}) == ([1, 1_601, 1_601, 3_200], 3_200, 3_584)


def _sequence_model(tmp_path: Path) -> Path:
    inner = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [None, 100]))
    nodes = [
        helper.make_node("OptionalGetElement", ["o"], ["g"], name="get"),
        helper.make_node("ConcatFromSequence", ["g"], ["c"], name="cat", axis=0),
        helper.make_node("Relu", ["c"], ["t"], name="t_relu"),
    ]
    return _has_or_else(tmp_path, "opt_seq", inner, nodes, [None, 100])


def test_an_optional_sequence_input_shares_its_elements(tmp_path: Path) -> None:
    path = _sequence_model(tmp_path)
    # o=[4x100,2x100] (the user's buffers): h 1; get shares o's sequence (nothing requested: a copy
    # would be 2,400); cat 6x100 2,400 (2,401); t 2,400 as y's buffer (4,801). In-use 256 + 2 x 2,560.
    a = graphmem.analyze(path, shapes={"o": ((4, 100), (2, 100))})
    assert dict(a.activations.timeline)["If_h/then/get"] == 1
    assert (a.activations.peak_bytes, a.activations.in_use_peak_bytes, a.activations.exact) == (4_801, 5_376, True)
    feeds = {"x": ONES, "o": [ONES, np.ones((2, 100), np.float32)]}
    assert _run(path, feeds)[1:] == (4_801, 5_376)
    b = graphmem.analyze(path, shapes={"o": None})  # else: e 1,600 (1,601)
    assert (b.activations.peak_bytes, b.activations.exact) == (1_601, True)
    assert _run(path, {"x": ONES, "o": None})[1] == 1_601
    assert not graphmem.analyze(path).activations.exact


def _loop_copies_model(tmp_path: Path) -> Path:
    """onnx's test_loop16_seq_none, rebuilt: a Loop carries an optional sequence; each iteration
    takes it (If none: [0.0]; else: OptionalGetElement, the branch's output, a copy) and appends
    x[:i+1]."""
    then = helper.make_graph(
        [
            helper.make_node("Constant", [], ["c0"], name="zero", value=helper.make_tensor("z", TensorProto.FLOAT, [], [0.0])),
            helper.make_node("SequenceConstruct", ["c0"], ["init"], name="construct"),
        ],
        "then", [], [helper.make_tensor_sequence_value_info("init", TensorProto.FLOAT, None)],
    )
    other = helper.make_graph(
        [helper.make_node("OptionalGetElement", ["opt_in"], ["got"], name="get")],
        "else", [], [helper.make_tensor_sequence_value_info("got", TensorProto.FLOAT, None)],
    )
    seq_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, []))
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond"),
            helper.make_node("OptionalHasElement", ["opt_in"], ["has"], name="has"),
            helper.make_node("Not", ["has"], ["none"], name="not"),
            helper.make_node("If", ["none"], ["s"], name="If_none", then_branch=then, else_branch=other),
            helper.make_node("Constant", [], ["x"], name="x", value=helper.make_tensor("xv", TensorProto.FLOAT, [5], [1, 2, 3, 4, 5])),
            helper.make_node("Constant", [], ["one"], name="one", value=helper.make_tensor("ov", TensorProto.INT64, [], [1])),
            helper.make_node("Constant", [], ["start"], name="start", value=helper.make_tensor("sv", TensorProto.INT64, [1], [0])),
            helper.make_node("Constant", [], ["axes"], name="axes", value=helper.make_tensor("av", TensorProto.INT64, [], [0])),
            helper.make_node("Add", ["i", "one"], ["end"], name="end"),
            helper.make_node("Unsqueeze", ["end", "axes"], ["end1"], name="end1"),
            helper.make_node("Slice", ["x", "start", "end1"], ["piece"], name="slice"),
            helper.make_node("SequenceInsert", ["s", "piece"], ["seq_out"], name="insert"),
        ],
        "body",
        [tensor("i", [], TensorProto.INT64), tensor("cond_in", [], TensorProto.BOOL), _optional("opt_in", seq_type)],
        [tensor("cond_out", [], TensorProto.BOOL), helper.make_tensor_sequence_value_info("seq_out", TensorProto.FLOAT, None)],
    )
    m = model(
        [helper.make_node("Loop", ["M", "c", "o"], ["res"], name="Loop_0", body=body)],
        [tensor("M", [], TensorProto.INT64), tensor("c", [], TensorProto.BOOL), _optional("o", seq_type)],
        [helper.make_tensor_sequence_value_info("res", TensorProto.FLOAT, None)], opset=16,
    )
    return save(m, tmp_path / "loop_optional_seq.onnx")


def test_a_loop_releases_the_sequence_elements_a_later_iteration_copied(tmp_path: Path) -> None:
    # 5 iterations; iteration k's sequence has k + 2 elements (4 B, then 4, 8, ..., 4 (k + 1) B:
    # 4 + 2k(k+1) B). At the last one (k = 4): the fed sequence of iteration 3 (44 B), the else
    # branch's copy of it (44 B), piece 20 B and SequenceInsert's copy of it 20 B, end1 8 B, the
    # bool 'none' 1 B: 137. Iteration 3's copies are released with its sequence (two iterations
    # on); holding every iteration's elements to the Loop's end was 189.
    path = _loop_copies_model(tmp_path)
    values = {"M": (5,), "c": (1,)}
    feeds = {"M": np.array(5, np.int64), "c": np.array(True)}
    for binding, fed in (((),), [np.array(0.0, np.float32)]), (None, None):
        a = graphmem.analyze(path, shapes={"o": binding}, values=values)
        assert (a.activations.peak_bytes, a.activations.exact) == (137, True), binding
        assert _run(path, {**feeds, "o": fed})[1] == 137


def test_optional_shapes_on_the_command_line_and_in_json(tmp_path: Path) -> None:
    assert parse_shapes(["o=none", "p=NONE", "s=[4x100]", "t=4x100"]) == {"o": None, "p": None, "s": ((4, 100),), "t": (4, 100)}
    path = _tensor_model(tmp_path)
    for binding in ("o=none", "o=4x100"):
        # the requested peak is what this test checks; the process's resident growth (9.3 MiB of
        # measured runtime constants on a 2 KiB model) is scripts/held_check.py's
        result = invoke("verify", str(path), "--shape", binding, "--json", "--resident-processes", "0")
        assert result.exit_code == 0, result.stdout
        doc = json.loads(result.stdout)
        assert doc["verify"]["predicted_bytes"] == doc["verify"]["measured_bytes"] == 1_601
    result = invoke("peak", str(path), "--shape", "o=none", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["model"]["shapes"] == {"o": None}
    code, _, err = outcome("peak", str(path), "--shape", "x=none")
    assert code == 2 and "input 'x' is not optional" in err
    code, _, err = outcome("peak", str(path), "--shape", "o=[4x100]")
    assert code == 2 and "is an optional tensor" in err
    code, _, err = outcome("peak", str(path), "--shape", "o=4x99")
    assert code == 2 and "dim 1 is fixed at 100" in err
    code, _, err = outcome("verify", "--resident-processes", "0", str(path))
    assert code == 2 and "--shape o=none" in err and "Traceback" not in err


def test_optional_shapes_in_a_check_config(tmp_path: Path) -> None:
    path = _sequence_model(tmp_path)  # o=none: 1,601; o=[4x100,2x100]: 4,801 (above)
    config = tmp_path / "graphmem.toml"
    for shapes, budget, code in (('"none"', 1_601, 0), ('"none"', 1_600, 1), ("[[4, 100], [2, 100]]", 4_801, 0)):
        config.write_text(f'[[models]]\npath = "{path.name}"\nshapes = {{ o = {shapes} }}\nmax-peak = {budget}\n')
        got, out, err = outcome("check", "-c", str(config), "-j", "1", "--require-exact")
        assert got == code, out + err
