"""graphmem train through If, Loop and Scan (graphmem.training.unroll): the ops eager PyTorch runs.

Conventions as in test_training.py: f32[1,4] is 16 bytes, ``W`` a trainable weight, ``x`` the
input. Each control-flow model is checked against the same network written without control flow
(hand-computed there) and by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
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


def _flag_if(tmp_path: Path) -> Path:
    """x1 = x @ W; if flag (an input): y = Relu(x1) else: y = Relu(Neg(x1) @ W2) (W2, 4x4, an
    else-branch initializer)."""
    then = helper.make_graph([helper.make_node("Relu", ["x1"], ["a"], name="relu")], "t", [], [vi("a", [1, 4])])
    other = helper.make_graph(
        [helper.make_node("Neg", ["x1"], ["n"], name="neg"), helper.make_node("MatMul", ["n", "W2"], ["m"], name="mm2"),
         helper.make_node("Relu", ["m"], ["b"], name="relu2")],
        "e", [], [vi("b", [1, 4])], [w("W2", 4, 4)],
    )
    return save(
        [helper.make_node("MatMul", ["x", "W"], ["x1"], name="mm"),
         helper.make_node("If", ["flag"], ["y"], name="If_flag", then_branch=then, else_branch=other)],
        [vi("x", [1, 4]), vi("flag", [], B)], [vi("y", [1, 4])], [w("W", 4, 4)], tmp_path / "flag.onnx",
    )


def test_an_if_on_an_input_valued_condition_is_its_larger_branch(tmp_path: Path) -> None:
    # weights W + W2 = 128 either way; inputs x 16 + flag 1 = 17.
    # then: saved x 16 (mm's dW) + a 16 (Relu's output) = 32; forward peak x1 + a = 32; gradient
    #   dW 64; backward peak dW 64 + dx1 16 = 80; step 128 + 17 + 80 = 225.
    # else: saved x 16 + n 16 (mm2's dW2) + b 16 = 48; forward peak at relu2 n + m + b = 48
    #   (x1 freed after Neg); gradients dW + dW2 128; backward peak 128 + dx1 16 = 144;
    #   step 145 + 144 = 289, the larger: the figures are the else branch's
    path = _flag_if(tmp_path)
    then = estimate_training(path, optimizer="sgd", values={"flag": (1,)})
    other = estimate_training(path, optimizer="sgd", values={"flag": (0,)})
    assert (then.saved_bytes, then.activation_peak_bytes, then.grads_bytes, then.step_peak_bytes) == (32, 32, 64, 225)
    assert (other.saved_bytes, other.activation_peak_bytes, other.grads_bytes, other.step_peak_bytes) == (48, 48, 128, 289)
    e = estimate_training(path, optimizer="sgd")
    assert figures(e) == figures(other) and e.step_peak_bytes == 289
    assert any("If 'If_flag': its condition 'flag' is not known" in x and "else (step peak: then 225 B, else 289 B)" in x
               and "not exact" in x for x in e.warnings)
    code, out, err = outcome("train", str(path), "--optimizer", "sgd", "--json")
    doc = json.loads(out)["training"]
    assert code == 0 and doc["step_peak_bytes"] == 289 and doc["saved_bytes"] == 48
    assert any("If 'If_flag'" in x and "then 225 B, else 289 B" in x for x in doc["warnings"])
    assert "If 'If_flag'" in err


def _scan(tmp_path: Path, name: str = "scan.onnx", *, opset: int = 17, **attrs) -> Path:  # type: ignore[no-untyped-def]
    """x1 = x @ W ([3, 4]); s = s0; for t in range(3): s = s + x1[t]; z_t = Relu(s); outputs
    the last s and the z_t stacked (opset 8: x [1, 3, 4], s0 [1, 4], batch axis 0)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "xt"], ["s2"], name="add"), helper.make_node("Relu", ["s2"], ["z"], name="relu")],
        "b", [vi("s", [4]), vi("xt", [4])], [vi("s2", [4]), vi("z", [4])],
    )
    v8 = opset < 9
    axis = attrs.get("scan_output_axes", [0])[0]
    zs = [1, 3, 4] if v8 else ([3, 4] if axis == 0 else [4, 3])
    nodes = [helper.make_node("MatMul", ["x", "W"], ["x1"], name="mm"),
             helper.make_node("Scan", ([""] if v8 else []) + ["s0", "x1"], ["sf", "zs"], name="Scan_acc", body=body,
                              num_scan_inputs=1, **attrs)]
    graph = helper.make_graph(nodes, "g", [vi("x", [1, 3, 4] if v8 else [3, 4]), vi("s0", [1, 4] if v8 else [4])],
                              [vi("sf", [1, 4] if v8 else [4]), vi("zs", zs)], [w("W", 4, 4)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 8
    (tmp_path / name).write_bytes(proto.SerializeToString())
    return tmp_path / name


def test_a_scan_trains_as_its_body_unrolled_over_the_scanned_axis(tmp_path: Path) -> None:
    # three slices x1[t] (views: select), each step Add (saves nothing) then Relu (saves z_t 16):
    # saved x 16 * 3 = 48 (mm's dW, an input) + z_0..z_2 48 = 96; forward peak at step 2's Add:
    # x1 48 + z_0, z_1 32 + s_1 16 + s_2 16 = 112; W the one 64 B parameter and gradient; the
    # slice indices and stacking axes are Python ints (0 params); inputs x 48 + s0 16 = 64
    e = estimate_training(_scan(tmp_path), optimizer="sgd")
    assert (e.weights_bytes, e.grads_bytes, e.params, e.inputs_bytes) == (64, 64, 16, 64)
    assert (e.saved_bytes, e.saved_inputs_bytes, e.activation_peak_bytes) == (96, 48, 112)
    assert any("Scan 'Scan_acc': its body unrolled 3 times" in x for x in e.warnings)
    # the same network written out: x1[t] a Gather of one index, torch.stack of the z_t
    nodes, s = [helper.make_node("MatMul", ["x", "W"], ["x1"])], "s0"
    for t in range(3):
        nodes += [helper.make_node("Gather", ["x1", f"i{t}"], [f"xt{t}"], axis=0),
                  helper.make_node("Add", [s, f"xt{t}"], [f"s{t + 1}"]), helper.make_node("Relu", [f"s{t + 1}"], [f"z{t}"]),
                  helper.make_node("Unsqueeze", [f"z{t}", "ax"], [f"u{t}"])]
        s = f"s{t + 1}"
    nodes += [helper.make_node("Identity", [s], ["sf"]), helper.make_node("Concat", ["u0", "u1", "u2"], ["zs"], axis=0)]
    consts = [numpy_helper.from_array(np.array(t, np.int64), f"i{t}") for t in range(3)]
    consts.append(numpy_helper.from_array(np.array([0], np.int64), "ax"))
    flat = save(nodes, [vi("x", [3, 4]), vi("s0", [4])], [vi("sf", [4]), vi("zs", [3, 4])], [w("W", 4, 4), *consts],
                tmp_path / "flat.onnx")
    f = estimate_training(flat, optimizer="sgd")
    assert (f.saved_bytes, f.activation_peak_bytes, f.grads_bytes, f.backward_peak_bytes) == (
        e.saved_bytes, e.activation_peak_bytes, e.grads_bytes, e.backward_peak_bytes)
    code, out, _ = outcome("train", str(_scan(tmp_path)), "--optimizer", "sgd", "--json")
    doc = json.loads(out)["training"]
    assert code == 0 and (doc["saved_bytes"], doc["activation_peak_bytes"], doc["grads_bytes"]) == (96, 112, 64)


@pytest.mark.parametrize(
    "opset,attrs",
    [(17, {}), (17, {"scan_input_directions": [1]}), (17, {"scan_output_axes": [1], "scan_output_directions": [1]}),
     (17, {"scan_output_axes": [-1]}), (8, {}), (8, {"directions": [1]})],
)
def test_an_unrolled_scan_computes_what_the_scan_computes(tmp_path: Path, opset: int, attrs) -> None:  # type: ignore[no-untyped-def]
    # the flattened graph run by onnxruntime gives the Scan's outputs: slice order (reverse
    # directions), output axis and order, Scan 8's batch axis
    import onnxruntime as ort

    from graphmem.model.loading import load_model
    from graphmem.training.unroll import inline_control_flow

    path = _scan(tmp_path, opset=opset, **attrs)
    flat, notes = inline_control_flow(load_model(path))
    assert not any(n.op_type == "Scan" for n in flat.nodes) and "unrolled 3 times" in notes[0]
    proto = onnx.load(path)
    have = {t.name for t in proto.graph.initializer}
    inits = [*proto.graph.initializer, *(numpy_helper.from_array(v, k) for k, v in flat.values.items() if k not in have)]
    graph = helper.make_graph(list(flat.nodes), "flat", list(proto.graph.input), list(proto.graph.output), inits)
    unrolled = helper.make_model(graph, opset_imports=list(proto.opset_import))
    unrolled.ir_version = 8
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((1, 3, 4) if opset < 9 else (3, 4)).astype(np.float32),
             "s0": rng.standard_normal((1, 4) if opset < 9 else (4,)).astype(np.float32)}
    expected = ort.InferenceSession(path.read_bytes(), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = ort.InferenceSession(unrolled.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for a, b in zip(expected, got):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_what_cannot_be_estimated_is_one_line_naming_the_node(tmp_path: Path) -> None:
    # a Scan of a sequence whose length no shape gives; Scan 8 whose batch entries scan
    # different lengths (no single Python loop)
    body = helper.make_graph([helper.make_node("Add", ["s", "xt"], ["s2"])], "b", [vi("s", [4]), vi("xt", [4])], [vi("s2", [4])])
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["x1"]),
         helper.make_node("Scan", ["lens", "s0", "x1"], ["sf"], name="Scan_lens", body=body, num_scan_inputs=1)],
        "g", [vi("x", [3, 3, 4]), vi("s0", [3, 4]), vi("lens", [3], I64)], [vi("sf", [3, 4])], [w("W", 4, 4)],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    proto.ir_version = 8
    scan = tmp_path / "scan8.onnx"
    scan.write_bytes(proto.SerializeToString())
    code, _, err = outcome("train", str(scan), "--value", "lens=3,2,1")
    assert code == 2 and "Scan 'Scan_lens'" in err and "sequence_lens" in err and err.count("\n") == 1
    code, _, err = outcome("train", str(scan))
    assert code == 2 and "Scan 'Scan_lens'" in err and err.count("\n") == 1
