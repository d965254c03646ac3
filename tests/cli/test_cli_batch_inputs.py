"""``--shape`` and ``--value`` on ``sweep``, ``fit`` (``fit --train`` too) and ``train``, through the
CLI; hand-computed bytes. A swept or solved dim that is a dim of an input whose shape ``--shape``
sets (or whose values ``--value`` gives) is refused: no value of it changes that input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper

from graphmem.schema import validate

from builders import TRAIN_CNN, init, model, save, tensor
from builders import outcome as run

I64 = TensorProto.INT64


@pytest.fixture
def two(tmp_path):  # type: ignore[no-untyped-def]
    # x [?, 4] (a dim with neither value nor name: --shape only) and y [batch, 4]:
    # a = Neg(x), b = Neg(y), z = Concat(a, b) [?+batch, 4], the output.
    nodes = [helper.make_node("Neg", ["x"], ["a"]), helper.make_node("Neg", ["y"], ["b"]),
             helper.make_node("Concat", ["a", "b"], ["z"], axis=0)]
    return str(save(model(nodes, [tensor("x", [None, 4]), tensor("y", ["batch", 4])], [tensor("z", [None, 4])]),
                    tmp_path / "two.onnx"))


# With --shape x=3x4 and batch = v (floats: 4 B):
#   Neg(x)   a 48 B requested                      held 48
#   Neg(y)   b 16v requested                       held 48 + 16v
#   Concat   z (3 + v)·16 = 48 + 16v requested     held 96 + 32v  <- peak; then a, b freed
# inputs x 48 + y 16v; weights 0: total = 144 + 48v.
def _total(v: int) -> int:
    return 144 + 48 * v


def test_sweep_through_an_empty_dim(two) -> None:  # type: ignore[no-untyped-def]
    # batch = 0 is an empty y, which onnxruntime runs (z is then a copy of a); by the table above
    # the row of v = 0 is 96 B requested, inputs 48 B, total 144 B, and the document is valid
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 4
    z, = ort.InferenceSession(two, so, providers=["CPUExecutionProvider"]).run(
        None, {"x": np.ones((3, 4), np.float32), "y": np.ones((0, 4), np.float32)})
    assert z.shape == (3, 4)
    code, out, err = run("sweep", two, "--dim", "batch=0,1", "--shape", "x=3x4", "--json")
    assert code == 0, err
    doc = json.loads(out)
    validate(doc, "sweep")
    assert [(r["value"], r["activations_peak_bytes"], r["inputs_bytes"], r["total_bytes"]) for r in doc["rows"]] == [
        (0, 96, 48, 144), (1, 128, 64, 192)]


def test_sweep_with_a_shape_for_an_input_without_named_dims(two) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run("sweep", two, "--dim", "batch=1,2,4", "--shape", "x=3x4", "--json")
    assert code == 0, err
    doc = json.loads(out)
    validate(doc, "sweep")
    assert doc["shapes"] == {"x": [3, 4]} and doc["values"] == {}
    assert [(r["value"], r["activations_peak_bytes"], r["inputs_bytes"], r["total_bytes"]) for r in doc["rows"]] == [
        (1, 128, 64, 192), (2, 160, 80, 240), (4, 224, 112, 336)]
    assert all(r["exact"] for r in doc["rows"])
    fit = doc["fit"]
    assert fit["degree"] == 1
    assert fit["fixed_bytes"] == pytest.approx(144) and fit["per_unit_bytes"] == pytest.approx(48)
    code, out, _ = run("sweep", two, "--dim", "batch=1,2", "--shape", "x=3x4")
    assert code == 0 and "fixed dims: none; shapes x=3x4" in out


def test_sweep_without_the_shape_names_the_input(two) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run("sweep", two, "--dim", "batch=1,2")
    assert code == 2 and out == "" and "--shape x=Nx4" in err


@pytest.mark.parametrize("command", [["sweep", "--dim", "batch=1,2,4"], ["fit", "--memory", "1KiB", "--solve", "batch"]])
def test_a_swept_or_solved_dim_of_a_shaped_input_is_refused(two, command) -> None:  # type: ignore[no-untyped-def]
    # --shape y=2x4 fixes y [batch, 4]: batch would change no input y has, and contradict y=2x4
    # at every value but 2.
    code, out, err = run(command[0], two, *command[1:], "--shape", "x=3x4", "--shape", "y=2x4")
    assert code == 2 and out == ""
    option = "--dim" if command[0] == "sweep" else "--solve"
    assert err.startswith(f"graphmem: error: {option} batch: input 'y' has dim 'batch', but --shape y=2x4 fixes")


def test_fit_solves_with_a_shape(two) -> None:  # type: ignore[no-untyped-def]
    # 144 + 48v <= 1000  ->  v = 17 (960 B); 18 needs 1,008 B.
    code, out, err = run("fit", "--by", "requested", two, "--memory", "1000", "--shape", "x=3x4", "--json")
    assert code == 0, err
    doc = json.loads(out)
    validate(doc, "fit")
    assert (doc["mode"], doc["solve"], doc["largest"]) == ("solve", "batch", 17)
    assert (doc["total_bytes"], doc["next_total_bytes"], doc["headroom_bytes"]) == (_total(17), _total(18), 40)
    assert doc["shapes"] == {"x": [3, 4]} and doc["exact"] is True
    code, out, _ = run("fit", "--by", "requested", two, "--memory", "1000", "--shape", "x=3x4")
    assert code == 0 and "solving batch; fixed dims: none; shapes x=3x4" in out


def test_fit_gate_with_shapes_only(two) -> None:  # type: ignore[no-untyped-def]
    # Both inputs shaped (batch = 2 implied by y=2x4): nothing left to solve, a gate at 240 B.
    args = ("fit", "--by", "requested", two, "--shape", "x=3x4", "--shape", "y=2x4", "--json")
    code, out, err = run(*args, "--memory", "240")
    assert code == 0, err
    doc = json.loads(out)
    validate(doc, "fit")
    assert (doc["mode"], doc["total_bytes"], doc["headroom_bytes"], doc["dims"]) == ("check", 240, 0, {"batch": 2})
    assert doc["shapes"] == {"x": [3, 4], "y": [2, 4]}
    code, out, _ = run(*args, "--memory", "239")
    assert code == 1 and json.loads(out)["fits"] is False


@pytest.fixture
def valued(tmp_path):  # type: ignore[no-untyped-def]
    # n (int64 scalar) -> Unsqueeze (a view of n) -> ConstantOfShape c [n] float; y [batch, 4] -> Neg b.
    # lens [batch] int64 -> Neg l: an input whose shape a --value fixes.
    nodes = [helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
             helper.make_node("ConstantOfShape", ["n1"], ["c"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])),
             helper.make_node("Neg", ["y"], ["b"]), helper.make_node("Neg", ["lens"], ["l"])]
    m = model(nodes, [tensor("n", [], I64), tensor("y", ["batch", 4]), tensor("lens", ["batch"], I64)],
              [tensor("c", ["m"]), tensor("b", ["batch", 4]), tensor("l", ["batch"], I64)],
              [init("ax", np.array([0], np.int64))])
    return str(save(m, tmp_path / "valued.onnx"))


def test_sweep_with_a_value(valued) -> None:  # type: ignore[no-untyped-def]
    # --value n=7: c is 7 floats = 28 B whatever batch is; b 16v, l 8v; all three are outputs,
    # held to the end: peak 28 + 24v. Inputs n 8 + y 16v + lens 8v; weights: ax, 8 B.
    # total = 8 + 28 + 24v + 8 + 24v = 44 + 48v.
    code, out, err = run("sweep", valued, "--dim", "batch=1,2,4", "--value", "n=7", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["values"] == {"n": [7]}
    assert [(r["activations_peak_bytes"], r["total_bytes"]) for r in doc["rows"]] == [(52, 92), (76, 140), (124, 236)]
    code, out, err = run("sweep", valued, "--dim", "batch=1,2", "--value", "n=7", "--value", "lens=3,4")
    assert code == 2 and "--dim batch: input 'lens' has dim 'batch', but --value lens=3,4 fixes" in err
    code, out, err = run("fit", "--by", "requested", valued, "--memory", "140", "--value", "n=7", "--json")
    assert code == 0, err
    assert (json.loads(out)["largest"], json.loads(out)["values"]) == (2, {"n": [7]})


def test_train_and_fit_train_take_a_shape() -> None:
    # train_cnn's input [batch, 3, 32, 32]: --shape input=2x3x32x32 is --dim batch=2, figure for figure.
    by_dim = json.loads(run("train", str(TRAIN_CNN), "--dim", "batch=2", "--json")[1])
    code, out, err = run("train", str(TRAIN_CNN), "--shape", "input=2x3x32x32", "--json")
    assert code == 0, err
    by_shape = json.loads(out)
    assert by_shape["training"] == by_dim["training"]
    assert by_shape["model"]["shapes"] == {"input": [2, 3, 32, 32]} and by_shape["model"]["dims"] == {"batch": 2}
    step = by_dim["training"]["step_peak_bytes"]
    code, out, err = run("fit", str(TRAIN_CNN), "--train", "--memory", str(step),
                         "--shape", "input=2x3x32x32", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["mode"], doc["total_bytes"], doc["headroom_bytes"]) == ("check", step, 0)
    assert doc["shapes"] == {"input": [2, 3, 32, 32]}
    code, _, err = run("fit", str(TRAIN_CNN), "--train", "--memory", "1GiB", "--solve", "batch",
                       "--shape", "input=2x3x32x32")
    assert code == 2 and "--solve batch: input 'input' has dim 'batch'" in err


def test_fit_genai_buffer_yields_to_a_shaped_past(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # past [1, past_sequence_length, 4] ++ new [1, 1, 4] -> present; genai_config.json: max_length 16.
    # Without --shape the past is genai's 16-long buffer: present 17·16 = 272 B, inputs 256 + 16.
    # --shape past=1x8x4 sets it: present 9·16 = 144 B, inputs 128 + 16; no buffer note.
    nodes = [helper.make_node("Concat", ["past", "new"], ["present"], axis=1)]
    m = model(nodes, [tensor("past", [1, "past_sequence_length", 4]), tensor("new", [1, 1, 4])],
              [tensor("present", [1, "past_sequence_length + 1", 4])])
    path = str(save(m, tmp_path / "model.onnx"))
    (tmp_path / "genai_config.json").write_text(json.dumps(
        {"search": {"max_length": 16, "past_present_share_buffer": True}}))
    code, out, err = run("fit", "--by", "requested", path, "--memory", "1KiB", "--json")
    assert code == 0 and "max_length 16" in err
    assert json.loads(out)["total_bytes"] == 272 + 272
    code, out, err = run("fit", "--by", "requested", path, "--memory", "1KiB", "--shape", "past=1x8x4", "--json")
    assert code == 0 and "genai_config" not in err
    doc = json.loads(out)
    assert (doc["mode"], doc["total_bytes"], doc["dims"]["past_sequence_length"]) == ("check", 144 + 144, 8)
