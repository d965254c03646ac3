"""graphmem train through If and Loop (graphmem.training.unroll): the ops eager PyTorch runs.

Conventions as in test_training.py: f32[1,4] is 16 bytes, ``W`` a trainable weight, ``x`` the
input. Each control-flow model is checked against the same network written without control flow
(hand-computed there) and by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from builders import outcome
from onnx import TensorProto, helper, numpy_helper

from graphmem.errors import UnsupportedOpError
from graphmem.training import estimate_training

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, shape, dtype=F):  # type: ignore[no-untyped-def]
    return helper.make_tensor_value_info(name, dtype, shape)


def w(name, *shape):  # type: ignore[no-untyped-def]
    return numpy_helper.from_array(np.full(shape, 0.5, dtype=np.float32), name)


def save(nodes, inputs, outputs, inits, path: Path) -> Path:  # type: ignore[no-untyped-def]
    graph = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), list(inits))
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    path.write_bytes(proto.SerializeToString())
    return path


def figures(e):  # type: ignore[no-untyped-def]
    return (e.weights_bytes, e.grads_bytes, e.saved_bytes, e.activation_peak_bytes, e.backward_peak_bytes,
            tuple(p.total_bytes for p in e.phases))


def _mlp_if(tmp_path: Path) -> Path:
    """If(Size(x) == 4): then MatMul(x, W) -> Relu -> MatMul(., W2); else Neg(x) @ W3 (W3, 4x2,
    a body initializer: a parameter that gets no gradient)."""
    then = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm1"), helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "W2"], ["y_then"], name="mm2")],
        "then", [], [vi("y_then", [1, 2])],
    )
    other = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["n"], name="neg"), helper.make_node("MatMul", ["n", "W3"], ["y_else"], name="mm3")],
        "else", [], [vi("y_else", [1, 2])], [w("W3", 4, 2)],
    )
    nodes = [
        helper.make_node("Size", ["x"], ["size"], name="size"),
        helper.make_node("Equal", ["size", "four"], ["c"], name="eq"),
        helper.make_node("If", ["c"], ["y"], name="If_small", then_branch=then, else_branch=other),
    ]
    four = numpy_helper.from_array(np.array(4, np.int64), "four")
    return save(nodes, [vi("x", [1, 4])], [vi("y", [1, 2])], [w("W", 4, 4), w("W2", 4, 2), four], tmp_path / "if.onnx")


def test_an_if_with_a_known_branch_trains_as_that_branch(tmp_path: Path) -> None:
    # the then branch is test_training.py's MLP (saves x 16 for W, r 16 by Relu and MatMul2: 32;
    # forward peak h + r = 32; backward peak dh + dW2 + dW = 112); W3 (32 B) is a weight with no
    # gradient, no optimizer state: weights 96 + 32 + the int64 constant 4 (8) = 136, gradients 96;
    # phases over weights + x: 152 + forward 32, + backward 112, + the gradients 96
    e = estimate_training(_mlp_if(tmp_path), optimizer="sgd")
    assert figures(e) == (136, 96, 32, 32, 112, (152 + 32, 152 + 112, 152 + 96))
    assert any("If 'If_small': its then branch (3 ops)" in x for x in e.warnings)
    flat = save(
        [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "W2"], ["y"])],
        [vi("x", [1, 4])], [vi("y", [1, 2])],
        [w("W", 4, 4), w("W2", 4, 2), w("W3", 4, 2), numpy_helper.from_array(np.array(4, np.int64), "four")],
        tmp_path / "flat.onnx",
    )
    assert figures(estimate_training(flat, optimizer="sgd")) == figures(e)


def _loop(tmp_path: Path, m: int = 3) -> Path:
    """h = x; for _ in range(M): h = Relu(h @ W); y = h (M a constant)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond"),
         helper.make_node("MatMul", ["h_in", "W"], ["m"], name="mm"), helper.make_node("Relu", ["m"], ["h_out"], name="relu")],
        "body", [vi("i", [], I64), vi("cond_in", [], B), vi("h_in", [1, 4])], [vi("cond_out", [], B), vi("h_out", [1, 4])],
    )
    nodes = [helper.make_node("Loop", ["M", "c", "x"], ["y"], name="Loop_rnn", body=body)]
    inits = [w("W", 4, 4), numpy_helper.from_array(np.array(m, np.int64), "M"), numpy_helper.from_array(np.array(True), "c")]
    return save(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])], inits, tmp_path / "loop.onnx")


def test_a_loop_with_a_known_trip_count_trains_as_its_body_unrolled(tmp_path: Path) -> None:
    # three iterations: MatMul_k saves its input h_k-1 (for dW; h_0 = x, the input), Relu_k its
    # output r_k, which is MatMul_k+1's input: saved x 16 + r1, r2, r3 48 = 64; W shared (one
    # 64 B parameter, one gradient; M and c, 8 + 1 B, are weights of the file; the iteration
    # numbers are Python ints, no tensors)
    e = estimate_training(_loop(tmp_path), optimizer="sgd")
    assert (e.weights_bytes, e.grads_bytes, e.saved_bytes, e.saved_inputs_bytes) == (73, 64, 64, 16)
    assert any("Loop 'Loop_rnn': its body unrolled 3 times" in x for x in e.warnings)
    nodes, h = [], "x"
    for k in range(3):
        nodes += [helper.make_node("MatMul", [h, "W"], [f"m{k}"]), helper.make_node("Relu", [f"m{k}"], [f"h{k}"])]
        h = f"h{k}"
    nodes.append(helper.make_node("Identity", [h], ["y"]))
    inits = [w("W", 4, 4), numpy_helper.from_array(np.array(3, np.int64), "M"), numpy_helper.from_array(np.array(True), "c")]
    flat = save(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])], inits, tmp_path / "flat.onnx")
    assert figures(estimate_training(flat, optimizer="sgd")) == figures(e)


def test_a_loop_without_iterations_trains_as_its_inputs_passed_on(tmp_path: Path) -> None:
    # M = 0: no body op runs; y is x1 (MatMul(x, W0) saves x 16), the scan output ys an empty
    # [0, 1, 4] (0 B): the same figures as the network without the Loop
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond"),
         helper.make_node("MatMul", ["h_in", "W"], ["m"], name="mm"), helper.make_node("Relu", ["m"], ["h_out"], name="relu")],
        "body", [vi("i", [], I64), vi("cond_in", [], B), vi("h_in", [1, 4])], [vi("cond_out", [], B), vi("h_out", [1, 4]), vi("m", [1, 4])],
    )
    nodes = [helper.make_node("MatMul", ["x", "W0"], ["x1"], name="mm0"),
             helper.make_node("Loop", ["M", "c", "x1"], ["y", "ys"], name="Loop_rnn", body=body)]
    inits = [w("W0", 4, 4), w("W", 4, 4), numpy_helper.from_array(np.array(0, np.int64), "M"), numpy_helper.from_array(np.array(True), "c")]
    e = estimate_training(save(nodes, [vi("x", [1, 4])], [vi("y", [1, 4]), vi("ys", [None, 1, 4])], inits, tmp_path / "loop0.onnx"), optimizer="sgd")
    assert any("Loop 'Loop_rnn': its body unrolled 0 times" in x for x in e.warnings)
    flat = save([nodes[0], helper.make_node("Identity", ["x1"], ["y"])], [vi("x", [1, 4])], [vi("y", [1, 4])], inits, tmp_path / "flat0.onnx")
    assert figures(estimate_training(flat, optimizer="sgd")) == figures(e)


def test_what_cannot_be_estimated_is_one_line_naming_the_node(tmp_path: Path) -> None:
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["a"])], "t", [], [vi("a", [1, 4])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["b"])], "e", [], [vi("b", [1, 4])])
    path = save(
        [helper.make_node("MatMul", ["x", "W"], ["x1"]),
         helper.make_node("If", ["flag"], ["y"], name="If_flag", then_branch=then, else_branch=other)],
        [vi("x", [1, 4]), vi("flag", [], B)], [vi("y", [1, 4])], [w("W", 4, 4)], tmp_path / "flag.onnx",
    )
    with pytest.raises(UnsupportedOpError, match=r"which branch If 'If_flag' takes .*--value"):
        estimate_training(path)
    code, _, err = outcome("train", str(path))
    assert code == 2 and "If 'If_flag'" in err and err.count("\n") == 1
    body = helper.make_graph([helper.make_node("Add", ["s", "xt"], ["s2"])], "b", [vi("s", [4]), vi("xt", [4])], [vi("s2", [4])])
    scan = save(
        [helper.make_node("MatMul", ["x", "W"], ["x1"]),
         helper.make_node("Scan", ["s0", "x1"], ["sf"], name="Scan_acc", body=body, num_scan_inputs=1)],
        [vi("x", [1, 4]), vi("s0", [4])], [vi("sf", [4])], [w("W", 4, 4)], tmp_path / "scan.onnx",
    )
    code, _, err = outcome("train", str(scan))
    assert code == 2 and "Scan 'Scan_acc'" in err and err.count("\n") == 1
