"""graphmem.training: saved-tensor rules, optimizer state, frozen weights, precision, phases.

Tiny inline graphs with hand-computed integers. Conventions of the comments: ``f32[2,3,8,8]``
is 2·3·8·8·4 = 1536 bytes; "saves" lists what autograd holds for backward; ``W`` is always a
trainable weight and ``x`` the graph input.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from graphmem.analysis.pipeline import analyze_model
from graphmem.errors import GraphmemError, UsageError
from graphmem.model.loading import model_from_proto
from graphmem.training import (
    TrainingConfig,
    estimate_training,
    estimate_training_analysis,
)
from graphmem.training.classify import weight_only_nodes
from graphmem.training.optimizer import optimizer_costs
from graphmem.training.saved import RULES, lstm_workspace_bytes

from builders import IR_VERSION, PINNED_HOST

F, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, shape, dtype=F):  # type: ignore[no-untyped-def]
    return helper.make_tensor_value_info(name, dtype, shape)


def w(name, *shape, dtype=np.float32):  # type: ignore[no-untyped-def]
    return numpy_helper.from_array(np.full(shape, 0.5, dtype=dtype), name)


def const(name, value, dtype=np.float32):  # type: ignore[no-untyped-def]
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value, dtype=dtype), name))


def estimate(nodes, inputs, outputs, inits, dims=None, **config):  # type: ignore[no-untyped-def]
    graph = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), list(inits))
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    a = analyze_model(model_from_proto(proto), dims=dims)  # every precision: the file's dtypes
    return estimate_training_analysis(a, TrainingConfig(**config))


def through(op_nodes, x_shape, out_name, out_shape, inits=(), out_dtype=F):  # type: ignore[no-untyped-def]
    """x → Add(x, b) → h → <op_nodes reading h> → out_name. The Add makes ``h`` need a
    gradient (b is trainable) and saves nothing, so saved bytes are the op's alone."""
    channels = x_shape[-1]
    nodes = [helper.make_node("Add", ["x", "b"], ["h"]), *op_nodes]
    return estimate(nodes, [vi("x", x_shape)], [vi(out_name, out_shape, out_dtype)], [w("b", channels), *inits])


# --------------------------------------------------------------------------- per-op rules
RULE_CASES = [
    # id, op nodes on h (f32[2,3,8,8] = 1536 B unless said), output, its shape, extra inits, saved bytes
    ("Relu saves its output", [helper.make_node("Relu", ["h"], ["y"])], "y", [2, 3, 8, 8], [], 1536),
    ("Sigmoid saves its output", [helper.make_node("Sigmoid", ["h"], ["y"])], "y", [2, 3, 8, 8], [], 1536),
    ("Tanh saves its output", [helper.make_node("Tanh", ["h"], ["y"])], "y", [2, 3, 8, 8], [], 1536),
    ("Erf saves its input", [helper.make_node("Erf", ["h"], ["y"])], "y", [2, 3, 8, 8], [], 1536),
    ("Softmax saves its output", [helper.make_node("Softmax", ["h"], ["y"], axis=-1)], "y", [2, 3, 8, 8], [], 1536),
    ("Add saves nothing", [helper.make_node("Add", ["h", "h"], ["y"])], "y", [2, 3, 8, 8], [], 0),
    ("Sub saves nothing", [helper.make_node("Sub", ["h", "h"], ["y"])], "y", [2, 3, 8, 8], [], 0),
    # Mul(h, h): each operand for the other's gradient, one storage: 1536
    ("Mul of one tensor by itself", [helper.make_node("Mul", ["h", "h"], ["y"])], "y", [2, 3, 8, 8], [], 1536),
    # Mul by a constant: the constant would be saved (a weight: not counted), h is not needed
    ("Mul by a constant saves nothing", [const("c", 2.0), helper.make_node("Mul", ["h", "c"], ["y"])],
     "y", [2, 3, 8, 8], [], 0),
    # Relu r (1536) then Mul(h, r): h and r both saved; Relu also holds r -> 1536 + 1536
    ("Mul of two activations", [helper.make_node("Relu", ["h"], ["r"]), helper.make_node("Mul", ["h", "r"], ["y"])],
     "y", [2, 3, 8, 8], [], 3072),
    # Div(h, r): divisor for h's gradient, both for r's: h + r, r also held by Relu
    ("Div of two activations", [helper.make_node("Relu", ["h"], ["r"]), helper.make_node("Div", ["h", "r"], ["y"])],
     "y", [2, 3, 8, 8], [], 3072),
    ("Div by a constant saves nothing", [const("c", 3.0), helper.make_node("Div", ["h", "c"], ["y"])],
     "y", [2, 3, 8, 8], [], 0),
    ("Pow saves its base", [const("p", 3.0), helper.make_node("Pow", ["h", "p"], ["y"])], "y", [2, 3, 8, 8], [], 1536),
    # Dropout: on CPU a mask of the input's dtype (f32), 1536; the bool mask output is not held
    ("Dropout saves a float mask",
     [const("ratio", 0.1), const("train", True, np.bool_),
      helper.make_node("Dropout", ["h", "ratio", "train"], ["y", "m"])], "y", [2, 3, 8, 8], [], 1536),
    ("Dropout in inference mode saves nothing",
     [const("ratio", 0.1), const("train", False, np.bool_),
      helper.make_node("Dropout", ["h", "ratio", "train"], ["y", "m"])], "y", [2, 3, 8, 8], [], 0),
    # MaxPool 2x2: input 1536 + int64 indices of the output [2,3,4,4] = 96 x 8 = 768
    ("MaxPool saves input and int64 indices",
     [helper.make_node("MaxPool", ["h"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], "y", [2, 3, 4, 4], [], 2304),
    # BatchNormalization training: input 1536 + mean and invstd per channel, 2 x 3 x 4 = 24
    ("BatchNormalization in training mode",
     [helper.make_node("BatchNormalization", ["h", "s", "b2", "rm", "rv"], ["y", "nm", "nv"], training_mode=1)],
     "y", [2, 3, 8, 8], [w("s", 3), w("b2", 3), w("rm", 3), w("rv", 3)], 1560),
    # LayerNormalization over the last axis: input 1536 + mean and invstd per row (2*3*8 rows x 4) x 2
    ("LayerNormalization saves input, mean and invstd",
     [helper.make_node("LayerNormalization", ["h", "s"], ["y"], axis=-1)], "y", [2, 3, 8, 8], [w("s", 8)], 1536 + 384),
    # Conv 3->4 3x3: input 1536 (the weight is counted as a weight)
    ("Conv saves its input", [helper.make_node("Conv", ["h", "K"], ["y"], kernel_shape=[3, 3])],
     "y", [2, 4, 6, 6], [w("K", 4, 3, 3, 3)], 1536),
    # MatMul by a trainable weight: the activation operand
    ("MatMul saves the activation operand", [helper.make_node("MatMul", ["h", "M"], ["y"])],
     "y", [2, 3, 8, 5], [w("M", 8, 5)], 1536),
    # views save nothing and share storage: Relu holds r, MatMul holds a reshape of r: one storage
    ("views share storage",
     [helper.make_node("Relu", ["h"], ["r"]), const("shape", [48, 8], np.int64),
      helper.make_node("Reshape", ["r", "shape"], ["v"]), helper.make_node("MatMul", ["v", "M"], ["y"])],
     "y", [48, 5], [w("M", 8, 5)], 1536),
    # Where saves its bool condition: [2,3,8,8] x 1 byte
    ("Where saves the condition",
     [const("z", 0.0), helper.make_node("Greater", ["h", "z"], ["cond"]),
      helper.make_node("Where", ["cond", "h", "z"], ["y"])], "y", [2, 3, 8, 8], [], 384),
]


@pytest.mark.parametrize("op_nodes,out,shape,inits,expected", [c[1:] for c in RULE_CASES], ids=[c[0] for c in RULE_CASES])
def test_saved_tensor_rule(op_nodes, out, shape, inits, expected) -> None:  # type: ignore[no-untyped-def]
    est = through(op_nodes, [2, 3, 8, 8], out, shape, inits)
    assert est.saved_bytes == expected
    assert sum(r.bytes for r in est.saved_by_layer) == expected
    assert est.unknown_ops == ()


def test_gemm_with_a_frozen_weight_saves_nothing() -> None:
    # F.linear with a frozen weight: the input is only needed for the weight's gradient
    nodes = [helper.make_node("Add", ["x", "b"], ["h"]), helper.make_node("Gemm", ["h", "W"], ["y"], transB=1)]
    args = ([vi("x", [4, 8])], [vi("y", [4, 5])], [w("b", 8), w("W", 5, 8)])
    assert estimate(nodes, *args).saved_bytes == 4 * 8 * 4
    assert estimate(nodes, *args, frozen=("W",)).saved_bytes == 0


def test_conv_saves_its_input_even_when_only_the_weight_trains() -> None:
    # convolution_backward's saved input does not depend on which gradient is needed:
    # the graph input itself is held, f32[1,3,8,8] = 768 bytes
    nodes = [helper.make_node("Conv", ["x", "K"], ["y"], kernel_shape=[3, 3])]
    est = estimate(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [w("K", 4, 3, 3, 3)])
    assert est.saved_bytes == est.saved_inputs_bytes == 768


def test_embedding_saves_its_int64_indices() -> None:
    nodes = [helper.make_node("Gather", ["E", "ids"], ["y"])]
    est = estimate(nodes, [vi("ids", [2, 5], I64)], [vi("y", [2, 5, 4])], [w("E", 10, 4)])
    assert est.saved_bytes == 2 * 5 * 8


def test_exported_exact_gelu_is_one_op_saving_its_input() -> None:
    # Div(h, √2) → Erf → Add(1) → Mul(h, ·) → Mul(0.5): PyTorch's F.gelu saves h only (1536);
    # op by op it would hold h, h/√2 and 1+erf (3 x 1536)
    nodes = [
        const("sqrt2", 1.4142135), const("one", 1.0), const("half", 0.5),
        helper.make_node("Div", ["h", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["h", "a"], ["m"]),
        helper.make_node("Mul", ["m", "half"], ["y"]),
    ]
    est = through(nodes, [2, 3, 8, 8], "y", [2, 3, 8, 8])
    assert est.saved_bytes == 1536
    assert [s.op_type for s in est.saved_storages] == ["Gelu"]


def test_tanh_gelu_written_out_saves_every_intermediate() -> None:
    # GPT-2's gelu_new: 0.5*h*(1+tanh(c*(h+0.044715*h**3))), PyTorch runs every op:
    # Pow holds h, Tanh its output t, the last Mul both 0.5*h and 1+t: 4 x 1536
    nodes = [
        const("half", 0.5), const("three", 3.0), const("k", 0.044715), const("c", 0.79788), const("one", 1.0),
        helper.make_node("Mul", ["h", "half"], ["hh"]), helper.make_node("Pow", ["h", "three"], ["p"]),
        helper.make_node("Mul", ["p", "k"], ["pk"]), helper.make_node("Add", ["h", "pk"], ["s"]),
        helper.make_node("Mul", ["s", "c"], ["sc"]), helper.make_node("Tanh", ["sc"], ["t"]),
        helper.make_node("Add", ["t", "one"], ["t1"]), helper.make_node("Mul", ["hh", "t1"], ["y"]),
    ]
    assert through(nodes, [2, 3, 8, 8], "y", [2, 3, 8, 8]).saved_bytes == 4 * 1536


def test_unknown_op_is_listed_and_assumed_to_save_its_inputs() -> None:
    nodes = [helper.make_node("Add", ["x", "b"], ["h"]), helper.make_node("Foo", ["h"], ["y"], domain="com.example")]
    graph = helper.make_graph(nodes, "g", [vi("x", [2, 4])], [vi("y", [2, 4])], [w("b", 4)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    proto.ir_version = 8
    est = estimate_training_analysis(analyze_model(model_from_proto(proto)), TrainingConfig())
    assert est.unknown_ops == (("Foo", 1),)
    assert est.saved_bytes == 2 * 4 * 4


@pytest.mark.parametrize(
    "steps,batch,inputs,hidden,expected",
    # measured: the uint8 workspace PyTorch 2.13 CPU saves for nn.LSTM (one layer, one direction)
    [(5, 2, 4, 6, 28672), (16, 2, 32, 48, 114688), (64, 4, 128, 256, 4116480), (64, 1, 128, 256, 1036288),
     (32, 3, 64, 64, 397312), (20, 7, 300, 100, 1609728)],
)
def test_lstm_workspace_matches_pytorch(steps, batch, inputs, hidden, expected) -> None:  # type: ignore[no-untyped-def]
    assert lstm_workspace_bytes(steps, batch, inputs, hidden) == expected


@pytest.mark.parametrize(
    "steps,batch,inputs,hidden,expected",
    # measured: the uint8 workspace nn.LSTM saves under torch.autocast('cpu', bfloat16) (per layer
    # and direction; train_check's lstm and lstm_2x512 at batch 1 and 4); by hand for the first:
    # gates 64·good_ld(1024, 2)=1056·2 = 135168, h 64·288·2 = 36864, states 2·65·288·2 = 74880,
    # c 2·65·256·2 = 66560, then f32: diff states 2·65·272·4 = 141440 twice, diff c 133120; each
    # page-aligned: 741376
    [(64, 1, 128, 256, 741376), (64, 4, 128, 256, 2928640), (64, 1, 256, 512, 1437696),
     (64, 1, 512, 512, 1437696), (64, 4, 512, 512, 5713920)],
)
def test_lstm_bf16_workspace_matches_pytorch(steps, batch, inputs, hidden, expected) -> None:  # type: ignore[no-untyped-def]
    assert lstm_workspace_bytes(steps, batch, inputs, hidden, elem=2) == expected


def test_lstm_saves_gates_and_states_of_every_step() -> None:
    # X f32[5,2,4] (160, held by Add as h), zero initial h and c per direction (2 x 48),
    # output [5,2,6] (240), final h and c (48 each), workspace 28672
    nodes = [helper.make_node("Add", ["x", "b"], ["h"]),
             helper.make_node("LSTM", ["h", "Wx", "Rh"], ["Y", "Yh", "Yc"], hidden_size=6)]
    est = estimate(nodes, [vi("x", [5, 2, 4])], [vi("Yh", [1, 2, 6])], [w("b", 4), w("Wx", 1, 24, 4), w("Rh", 1, 24, 6)])
    assert est.saved_bytes == 160 + 2 * 48 + 240 + 48 + 48 + 28672


def test_rules_table_is_keyed_by_domain_and_op_type() -> None:
    assert all(isinstance(k, tuple) and len(k) == 2 for k in RULES)
    assert {entry.outcome for entry in RULES.values()} <= {"counted", "zero", "unsupported"}


# --------------------------------------------------------------------------- weight preprocessing
def test_weight_transposes_are_not_activations() -> None:
    nodes = [helper.make_node("Transpose", ["W"], ["Wt"], perm=[1, 0]), helper.make_node("MatMul", ["x", "Wt"], ["y"])]
    graph = helper.make_graph(nodes, "g", [vi("x", [4, 8])], [vi("y", [4, 5])], [w("W", 5, 8)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)
    a = analyze_model(model_from_proto(proto))
    assert weight_only_nodes(a.graph) == frozenset({0})
    est = estimate_training_analysis(a, TrainingConfig(optimizer="sgd"))
    assert est.trainable_params == 40
    assert est.saved_bytes == est.saved_inputs_bytes == 4 * 8 * 4  # x, for W's gradient
    assert est.activation_peak_bytes == 4 * 5 * 4  # y only; Wt is a view of W


# --------------------------------------------------------------------------- phases, by hand
def mlp(**config):  # type: ignore[no-untyped-def]
    # x f32[1,4] (16) → MatMul W[4,4] (64) → h (16) → Relu → r (16) → MatMul W2[4,2] (32) → y (8)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "W2"], ["y"])]
    return estimate(nodes, [vi("x", [1, 4])], [vi("y", [1, 2])], [w("W", 4, 4), w("W2", 4, 2)], **config)


def test_phases_by_hand_adam() -> None:
    # saves: x (input, 16) for W, r (16) by Relu and MatMul2 -> 32
    # forward live: MatMul1 h=16; Relu h+r=32 (peak); MatMul2 r+y=24; end r+y=24
    # backward (released): loss r+y+dy=32; MatMul2 r+dy+dr+dW2=72; Relu r+dr+dh+dW2=80;
    #                      MatMul1 dh+dW2+dW=112 (peak); end dW2+dW=96
    e = mlp(optimizer="adam")
    assert (e.weights_bytes, e.grads_bytes, e.inputs_bytes) == (96, 96, 16)
    assert e.saved_bytes == 32 and e.saved_inputs_bytes == 16
    assert (e.activation_peak_bytes, e.activation_peak_at) == (32, "Relu_1")
    assert (e.backward_peak_bytes, e.backward_peak_at) == (112, "MatMul_0")
    assert e.optimizer_state_bytes == 2 * 96 + 2 * 4  # exp_avg, exp_avg_sq, a 4-byte step each
    assert e.optimizer_temp_bytes == 2 * 64  # twice the largest parameter
    base = 96 + 200 + 16
    assert [p.total_bytes for p in e.phases] == [base + 32, base + 112, base + 96 + 128]
    assert (e.step_peak_bytes, e.peak_phase) == (base + 224, "optimizer")


def test_phases_by_hand_sgd_released_and_persistent() -> None:
    e = mlp(optimizer="sgd")
    assert [p.total_bytes for p in e.phases] == [112 + 32, 112 + 112, 112 + 96]
    assert e.peak_phase == "backward"
    # persistent: gradients live all step; in backward each new one is a temporary added into
    # .grad: MatMul2 r+dy+dr+dW2=72, Relu r+dr+dh=48, MatMul1 dh+dW=80 (peak)
    p = mlp(optimizer="sgd", grads="persistent")
    assert [x.total_bytes for x in p.phases] == [112 + 96 + 32, 112 + 96 + 80, 112 + 96]


@pytest.mark.parametrize("name,state", [("sgd", 0), ("momentum", 96), ("adam", 200), ("adamw", 200)])
def test_optimizer_state_multiples(name: str, state: int) -> None:
    assert mlp(optimizer=name).optimizer_state_bytes == state


def test_optimizer_costs_foreach_and_unknown_name() -> None:
    assert optimizer_costs("adam", [1000, 10], foreach=True).step_temporary_bytes == 4040
    assert optimizer_costs("momentum", [1000, 10]).step_temporary_bytes == 0
    with pytest.raises(UsageError, match="unknown optimizer 'lion'"):
        optimizer_costs("lion", [10])


def test_mixed_bf16_is_autocast_by_hand() -> None:
    # torch.autocast('cpu', bfloat16): MatMul casts its fp32 operands (autocast_mode.cpp); W and
    # W2 are trainable leaves: their casts are cached until the forward ends; x's is not.
    # forward: Cast x -> xc bf16[1,4] 8; Cast W -> Wc 32 (40); h 8 (48); Relu r 8, h dies
    #          after (56); Cast W2 -> W2c 16 (64); y bf16[1,2] 4 (68, peak); end 68
    # saves: xc (W needs a gradient), r (Relu; MatMul2 for W2), W2c (r needs a gradient) = 32;
    #        Wc is not saved (x needs no gradient): freed when the forward ends
    # backward: held xc r W2c y = 36; loss dy 4 (40); MatMul2 dr 8 + dW2c 16 (60); Cast W2
    #           (ToCopyBackward0) dW2 f32 32 (72); Relu dh 8 (64: dy, W2c, dW2c freed);
    #           MatMul1 dWc 16·2 (80); Cast W -> dW f32 64 (128, peak); end dW + dW2 = 96
    e = mlp(optimizer="adam", precision="mixed-bf16")
    assert (e.weights_bytes, e.master_weights_bytes, e.grads_bytes) == (96, 0, 96)  # all fp32
    assert e.saved_bytes == 32 and e.saved_inputs_bytes == 0
    assert e.forward is not None and e.forward.live_bytes == (8, 40, 48, 56, 64, 68, 68)
    assert (e.activation_peak_bytes, e.activation_peak_at) == (68, "MatMul_2")
    assert (e.backward_peak_bytes, e.backward_peak_at) == (128, "W/autocast_bfloat16:Cast")
    assert e.backward is not None and e.backward.live_bytes == (36, 40, 60, 72, 64, 80, 128, 96)
    assert (e.optimizer_state_bytes, e.optimizer_temp_bytes) == (200, 128)  # as fp32
    base = 96 + 200 + 16
    assert [p.total_bytes for p in e.phases] == [base + 68, base + 128, base + 96 + 128]


def test_autocast_names_what_it_does_not_model() -> None:
    # a Cast to float32 of a float32 tensor (the exporter's x.to(y.dtype)) and a GRU
    nodes = [helper.make_node("Cast", ["x"], ["c"], to=F),
             helper.make_node("GRU", ["c", "W", "R"], ["y"], hidden_size=2, name="g")]
    e = estimate(nodes, [vi("x", [3, 1, 2])], [vi("y", [3, 1, 1, 2])], [w("W", 1, 6, 2), w("R", 1, 6, 2)],
                 precision="mixed-bf16")
    assert any("1 Cast(s) to float32 of a float32 tensor" in x for x in e.warnings)
    # the GRU's cells under autocast are modelled (test_rnn_autocast.py); its input is cast inside
    assert any(x.startswith("GRU 'g' (autocast) saves a half cast of its input") for x in e.warnings)
    assert not any("GRU" in x for x in estimate(nodes, [vi("x", [3, 1, 2])], [vi("y", [3, 1, 1, 2])],
                                                 [w("W", 1, 6, 2), w("R", 1, 6, 2)]).warnings)


def test_mixed_fp16_adds_the_grad_scaler() -> None:
    # GradScaler('cpu'): _scale f32 and _growth_tracker i32 (0-d, 4 B each) as state, and the
    # 4-byte found_inf copy held during step; the activations as bf16 (2-byte half)
    f, b = mlp(optimizer="adam", precision="mixed-fp16"), mlp(optimizer="adam", precision="mixed-bf16")
    assert (f.optimizer_state_bytes, f.optimizer_temp_bytes) == (200 + 8, 128 + 4)
    assert (f.saved_bytes, f.activation_peak_bytes, f.backward_peak_bytes) == (32, 68, 128)
    assert f.step_peak_bytes == b.step_peak_bytes + 12


def test_autocast_promotes_a_residual_and_keeps_a_scalar() -> None:
    # x f32[1,4] → MatMul W → h bf16 (8); Add(h, x): a dimensioned fp32 operand promotes:
    # s f32[1,4] (16); Mul(s, 0.5 scalar constant) stays fp32; Mul(h, c[4] frozen fp32 const,
    # dimensioned) promotes too → m f32 (16); Concat(h, m): cat promotes, casts h to fp32
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "x"], ["s"]),
             const("half", 0.5), helper.make_node("Mul", ["s", "half"], ["q"]),
             const("c", [1.0, 2.0, 3.0, 4.0]), helper.make_node("Mul", ["h", "c"], ["m"]),
             helper.make_node("Concat", ["q", "m", "h"], ["y"], axis=1)]
    e = estimate(nodes, [vi("x", [1, 4])], [vi("y", [1, 12])], [w("W", 4, 4)], precision="mixed-bf16")
    types = e.analysis.types
    assert types["h"].dtype == F  # the analysis keeps the file's types
    fwd = dict(zip(e.forward.labels, e.forward.live_bytes)) if e.forward else {}
    # xc 8, Wc 32, h 8; Add: s 16 (64); Mul: q 16 (80), s dies; Mul: m 16 (80); Concat casts h
    # to fp32 (16: 96; h's last reader is now its cast) and writes y f32[1,12] 48 (136)
    assert list(fwd.values()) == [8, 40, 48, 64, 80, 80, 96, 136, 88]
    assert fwd["h/autocast_float#4:Cast"] == 96 and fwd["Concat_4"] == 8 + 32 + 16 + 16 + 16 + 48
    assert e.saved_bytes == 8  # xc: the Muls' other operands (constants) need no gradient


def test_autocast_mean_of_a_half_tensor_sums_in_fp32() -> None:
    # x f32[1,2,4] → MatMul W[4,6] → h bf16[1,2,6] (24) → ReduceMean(axis -1) → y bf16[1,2] (4).
    # ReduceOps.cpp mean_out on CPU: an fp32 result (8) and sum_out's fp32 copy of h (48) while
    # it sums. forward: xc 16; Wc 48 (64); h 24 (88); ReduceMean y 4 + 56 (148, peak); end: xc,
    # the cached Wc and y (68)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]),
             helper.make_node("ReduceMean", ["h"], ["y"], axes=[-1], keepdims=0)]
    est = lambda **c: estimate(nodes, [vi("x", [1, 2, 4])], [vi("y", [1, 2])], [w("W", 4, 6)], **c)  # noqa: E731
    e = est(precision="mixed-bf16")
    assert e.forward is not None and e.forward.live_bytes == (16, 64, 88, 148, 68)
    assert (e.activation_peak_bytes, e.activation_peak_at) == (148, "ReduceMean_1")
    # fp32: no copies: h 48, then y 8 beside it (56)
    assert est().forward.live_bytes == (48, 56, 8)


def test_autocast_tied_embedding_sums_its_gradients_in_place() -> None:
    # tied_lm's pattern: e = Gather(W, ids) f32[1,2,4] (32); y = MatMul(e, Transpose(W)).
    # W f32[6,4] (96). Under bf16 the MatMul casts e (ec 16) and W (Wtc 48, cached) and saves
    # both; y bf16[1,2,6] (24). backward: (forward end) ec Wtc y = 88; (loss backward) dy 24
    # (112), then y is released; MatMul: dec 16 + dWtc 48 (152); Cast of W: ToCopyBackward0's new
    # dW f32 96 (64 + 96 = 160); Cast of e: de 32 (144); Gather: W's second gradient 96 added in
    # place into the first (a new tensor, not a view): 96 + 32 + 96 = 224 (peak; was 320 out of place)
    nodes = [helper.make_node("Gather", ["W", "ids"], ["e"]),
             helper.make_node("Transpose", ["W"], ["Wt"], perm=[1, 0]),
             helper.make_node("MatMul", ["e", "Wt"], ["y"])]
    e = estimate(nodes, [vi("ids", [1, 2], I64)], [vi("y", [1, 2, 6])], [w("W", 6, 4)], precision="mixed-bf16")
    assert e.saved_bytes - e.saved_inputs_bytes == 64
    assert e.backward is not None and e.backward.live_bytes == (88, 112, 152, 160, 144, 224, 96)
    assert (e.backward_peak_bytes, e.backward_peak_at) == (224, "Gather_0")


def test_autocast_runs_the_cross_entropy_loss_in_fp32() -> None:
    # autocast_mode.cpp (CPU): cross_entropy_loss and nll_loss are fp32 ops: the half logits are
    # cast to fp32 (not cached) and the loss is fp32; log_softmax is not listed: it stays bf16.
    # The analysis runs both losses as onnxruntime's inlined function bodies (appended last).
    # forward: xc 16, Wc 24, z bf16[2,3] 12 (52); LogSoftmax p bf16 12 (64); the cross entropy's
    # fp32 copy of z 24 (88); the NLL casts p (24: 100); each loss ends in a ReduceMean of an fp32
    # tensor: no half copies, a 4-byte fp32 loss (108 -> 112)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["z"]),
             helper.make_node("SoftmaxCrossEntropyLoss", ["z", "t"], ["loss"]),
             helper.make_node("LogSoftmax", ["z"], ["p"], axis=1),
             helper.make_node("NegativeLogLikelihoodLoss", ["p", "t"], ["nll"])]
    e = estimate(nodes, [vi("x", [2, 4]), vi("t", [2], I64)], [vi("loss", []), vi("nll", [])], [w("W", 4, 3)],
                 precision="mixed-bf16")
    fwd = list(zip(e.forward.labels, e.forward.live_bytes))
    assert fwd[:5] == [("x/autocast_bfloat16#0:Cast", 16), ("W/autocast_bfloat16:Cast", 40), ("MatMul_0", 52),
                       ("LogSoftmax_2", 64), ("z/autocast_float#2:Cast", 88)]
    assert [(k, v) for k, v in fwd if k.startswith("p/autocast_float")] == [("p/autocast_float#9:Cast", 100)]
    assert ("Squeeze_15", 108) in fwd and ("ReduceMean_16", 112) in fwd


# --------------------------------------------------------------------------- frozen weights, errors
def test_frozen_patterns_drop_gradients_state_and_upstream_saves() -> None:
    e = mlp(optimizer="adam", frozen=("W",))
    # W frozen: x is no longer needed (only W's gradient reads it); h needs no gradient,
    # so Relu saves nothing; MatMul2 still holds r for W2's gradient
    assert (e.trainable_params, e.frozen_params, e.grads_bytes) == (8, 16, 32)
    assert e.saved_bytes == 16 and e.saved_inputs_bytes == 0
    assert not any("--frozen" in x for x in e.warnings)


def test_frozen_pattern_matching_nothing_warns() -> None:
    e = mlp(frozen=("backbone.*",))
    assert e.warnings[0] == "--frozen 'backbone.*' matched no parameter"
    assert e.trainable_params == 24


def test_everything_frozen_or_no_weights_is_an_error() -> None:
    with pytest.raises(UsageError, match="froze every parameter"):
        mlp(frozen=("W*",))
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    with pytest.raises(UsageError, match="no trainable weights"):
        estimate(nodes, [vi("x", [2, 4])], [vi("y", [2, 4])], [])


def test_bad_choices_are_usage_errors(models_dir: Path) -> None:
    path = models_dir / "train_cnn.onnx"
    for kw, match in (({"optimizer": "rmsprop"}, "optimizer"), ({"grads": "kept"}, "gradient mode"),
                      ({"precision": "fp8"}, "precision")):
        with pytest.raises(UsageError, match=match):
            estimate_training(path, dims={"batch": 2}, **kw)
    with pytest.raises(GraphmemError):
        estimate_training(path)  # batch unbound


INFERENCE_CASES = [
    # id, nodes on h f32[2,3,8,8] (through()), extra inits, the evidence the warning names (None: no warning)
    ("no BatchNorm and no Dropout: no evidence", [helper.make_node("Relu", ["h"], ["y"])], [], None),
    ("BatchNorm in inference mode",
     [helper.make_node("BatchNormalization", ["h", "s", "b2", "rm", "rv"], ["y"], name="bn")],
     [w("s", 3), w("b2", 3), w("rm", 3), w("rv", 3)], "BatchNormalization 'bn' in inference mode"),
    ("BatchNorm in training mode", [helper.make_node("BatchNormalization", ["h", "s", "b2", "rm", "rv"],
                                                     ["y", "nm", "nv"], training_mode=1)],
     [w("s", 3), w("b2", 3), w("rm", 3), w("rv", 3)], None),
    ("Dropout in inference mode",
     [const("ratio", 0.1), const("train", False, np.bool_),
      helper.make_node("Dropout", ["h", "ratio", "train"], ["y"], name="drop")], [], "Dropout 'drop' in inference mode"),
    # a training export of nn.Dropout(p=0): inactive, but the exporter ran in training mode
    ("Dropout of ratio 0 in training mode",
     [const("ratio", 0.0), const("train", True, np.bool_),
      helper.make_node("Dropout", ["h", "ratio", "train"], ["y", "m"])], [], None),
    # the TorchScript exporter's eval-mode Conv+BatchNorm fusion names the new weight and bias
    ("Conv with folded weights",
     [helper.make_node("Conv", ["h", "onnx::Conv_7", "onnx::Conv_8"], ["y"], kernel_shape=[1, 1], name="conv")],
     [w("onnx::Conv_7", 3, 3, 1, 1), w("onnx::Conv_8", 3)],
     "Conv 'conv' with weights the exporter folded ('onnx::Conv_7': a BatchNorm fused in eval mode)"),
    ("Conv with its parameters' names", [helper.make_node("Conv", ["h", "conv.weight", "conv.bias"], ["y"],
                                                          kernel_shape=[1, 1])],
     [w("conv.weight", 3, 3, 1, 1), w("conv.bias", 3)], None),
    # a training-mode BatchNorm says the exporter ran in training mode: the folded Conv is the
    # user's own constant, no warning
    ("training BatchNorm beside a folded Conv",
     [helper.make_node("Conv", ["h", "onnx::Conv_7", "onnx::Conv_8"], ["c"], kernel_shape=[1, 1]),
      helper.make_node("BatchNormalization", ["c", "s", "b2", "rm", "rv"], ["y", "nm", "nv"], training_mode=1)],
     [w("onnx::Conv_7", 3, 3, 1, 1), w("onnx::Conv_8", 3), w("s", 3), w("b2", 3), w("rm", 3), w("rv", 3)], None),
    ("two BatchNorms in inference mode",
     [helper.make_node("BatchNormalization", ["h", "s", "b2", "rm", "rv"], ["c"], name="bn1"),
      helper.make_node("BatchNormalization", ["c", "s", "b2", "rm", "rv"], ["y"], name="bn2")],
     [w("s", 3), w("b2", 3), w("rm", 3), w("rv", 3)], "BatchNormalization 'bn1' in inference mode and 1 more"),
]


@pytest.mark.parametrize(("nodes", "inits", "evidence"), [c[1:] for c in INFERENCE_CASES],
                         ids=[c[0] for c in INFERENCE_CASES])
def test_inference_export_warning_needs_evidence(nodes, inits, evidence) -> None:  # type: ignore[no-untyped-def]
    e = through(nodes, [2, 3, 8, 8], "y", [2, 3, 8, 8], inits)
    found = [x for x in e.warnings if "inference export" in x]
    if evidence is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(f"looks like an inference export ({evidence}):")


def test_batch_norm_statistics_outputs_mean_training_before_opset_14() -> None:
    from graphmem.training.patterns import batch_norm_training

    # opset 9-13 have no training_mode attribute: training writes mean/var (and saved stats)
    assert batch_norm_training(helper.make_node("BatchNormalization", list("xsbmv"), ["y", "m", "v", "sm", "sv"]))
    assert not batch_norm_training(helper.make_node("BatchNormalization", list("xsbmv"), ["y"]))
    assert not batch_norm_training(helper.make_node("BatchNormalization", list("xsbmv"), ["y", "", ""]))


# --------------------------------------------------------------------------- committed exports
def test_train_cnn_saved_bytes_by_hand(models_dir: Path) -> None:
    e = estimate_training(models_dir / "train_cnn.onnx", dims={"batch": 2})
    expected = (
        24576  # conv1 holds the input f32[2,3,32,32]
        + 131072 + 128  # bn1: its input f32[2,16,32,32], mean and invstd of 16 channels
        + 131072  # relu1: output (also MaxPool's input)
        + 65536  # maxpool: int64 indices [2,16,16,16]
        + 32768  # conv2: input f32[2,16,16,16]
        + 65536 + 256  # bn2: input f32[2,32,16,16], 2 x 32 stats
        + 65536  # relu2: output
        + 256  # dropout: float mask f32[2,32]
        + 256  # gemm: its input (dropout output)
    )
    assert e.saved_bytes == expected
    assert e.warnings == ()
    assert sum(r.bytes for r in e.saved_by_layer) == e.saved_bytes
    assert {s.op_type for s in e.saved_storages} >= {"Dropout", "MaxPool", "BatchNormalization"}


def test_train_bert_scales_with_batch_and_fuses_gelu(models_dir: Path) -> None:
    path = models_dir / "train_bert.onnx"
    e2 = estimate_training(path, dims={"batch": 2, "seq": 16})
    e4 = estimate_training(path, dims={"batch": 4, "seq": 16})
    assert e2.warnings == () and e2.unknown_ops == () and e2.unknown_sizes == ()
    # everything saved is per sample except the token-type embedding's indices, an int64
    # [1, seq] view of a buffer (16 x 8 = 128 bytes): doubling the batch doubles the rest
    assert e4.saved_bytes == 2 * e2.saved_bytes - 128
    assert "Gelu" in {s.op_type for s in e2.saved_storages}
    assert e2.weights_bytes == e4.weights_bytes and e2.grads_bytes == e4.grads_bytes
    assert e2.step_peak_bytes == max(p.total_bytes for p in e2.phases)
    frozen = estimate_training(path, dims={"batch": 2, "seq": 16}, frozen=("model.embeddings.*",))
    assert frozen.trainable_params < e2.trainable_params
    assert frozen.grads_bytes < e2.grads_bytes


# --------------------------------------------------------------------------- kernel temporaries
@pytest.mark.parametrize(
    "batch,expected",
    [
        # oneDNN (batch > 1): weight f32[16,16,3,3] 9216 and input 8192 reordered, beside the
        # output f32[2,16,6,6] 4608: 4608 + max(8192 + 9216, 4608) = 22016
        (2, 4608 + 17408),
        # one small image: the native kernel's im2col buffer, 16*3*3 x 6*6 floats = 20736,
        # beside the output f32[1,16,6,6] 2304
        (1, 2304 + 20736),
    ],
)
def test_conv_forward_temporaries(batch: int, expected: int) -> None:
    nodes = [helper.make_node("Conv", ["x", "K"], ["y"], kernel_shape=[3, 3])]
    e = estimate(nodes, [vi("x", [batch, 16, 8, 8])], [vi("y", [batch, 16, 6, 6])], [w("K", 16, 16, 3, 3)])
    assert e.activation_peak_bytes == expected


@pytest.mark.parametrize(
    "cout,expected",
    [
        # 1x1 conv 16 -> 1 at batch 2 (oneDNN): x f32[2,16,8,8] reordered (8192), W f32[1,16,1,1]
        # (64), the result in aBcd16b with its 1 channel padded to 16: 2*16*8*8*4 = 8192, then
        # copied out to y f32[2,1,8,8] (512): max(8192 + 64 + 8192, 8192 + 512) = 16448
        # (UNet's head, torch 2.13 profiler: +1 MiB input reorder, +1 MiB blocked result)
        (1, 16448),
        # 16 -> 24: W 1536, y f32[2,24,8,8] 12288, blocked with 24 channels padded to 32: 16384;
        # max(8192 + 1536 + 16384, 16384 + 12288) = 28672 (ONEDNN_VERBOSE: dst ap:blocked:aBcd16b)
        (24, 28672),
    ],
)
def test_conv_blocked_result_pads_channels_to_16(cout: int, expected: int) -> None:
    nodes = [helper.make_node("Conv", ["x", "K"], ["y"], kernel_shape=[1, 1])]
    e = estimate(nodes, [vi("x", [2, 16, 8, 8])], [vi("y", [2, cout, 8, 8])], [w("K", cout, 16, 1, 1)])
    assert e.activation_peak_bytes == expected


def test_public_surface() -> None:
    import graphmem.training as training

    assert sorted(training.__all__) == sorted(
        ["GRAD_MODES", "OPTIMIZERS", "PRECISIONS", "LayerSaved", "PhasePeak", "SavedStorageInfo",
         "TrainingConfig", "TrainingEstimate", "estimate_training", "estimate_training_analysis"]
    )
    assert all(hasattr(training, name) for name in training.__all__)


# --------------------------------------------------------------------------- issue 15: exporter patterns
def test_exported_silu_is_one_op_saving_its_input() -> None:
    # F.silu exports as Mul(h, Sigmoid(h)); PyTorch's silu saves h only (1536). Op by op it
    # would hold h (for the Mul) and the sigmoid's output (for Sigmoid and the Mul): 2 x 1536
    nodes = [helper.make_node("Sigmoid", ["h"], ["s"]), helper.make_node("Mul", ["h", "s"], ["y"])]
    est = through(nodes, [2, 3, 8, 8], "y", [2, 3, 8, 8])
    assert est.saved_bytes == 1536
    assert [s.op_type for s in est.saved_storages] == ["Silu"]
    # forward: h (1536) and y (1536); the sigmoid is never materialised
    assert est.activation_peak_bytes == 3072


def test_gating_sigmoid_of_another_tensor_is_not_silu() -> None:
    # SE gating: y = h * Sigmoid(Relu(h)); Relu holds r, Sigmoid its output s, Mul both h and s:
    # r + s + h = 3 x 1536 (h and s, each for the other's gradient)
    nodes = [helper.make_node("Relu", ["h"], ["r"]), helper.make_node("Sigmoid", ["r"], ["s"]),
             helper.make_node("Mul", ["h", "s"], ["y"])]
    assert through(nodes, [2, 3, 8, 8], "y", [2, 3, 8, 8]).saved_bytes == 3 * 1536


def test_old_opset_hardswish_and_mish_are_one_op() -> None:
    # Mul(h, HardSigmoid(h, alpha=1/6, beta=0.5)) is F.hardswish before opset 14; Mul(h,
    # Tanh(Softplus(h))) is F.mish before opset 18: each saves h alone (1536)
    hswish = [helper.make_node("HardSigmoid", ["h"], ["s"], alpha=1 / 6, beta=0.5),
              helper.make_node("Mul", ["h", "s"], ["y"])]
    mish = [helper.make_node("Softplus", ["h"], ["p"]), helper.make_node("Tanh", ["p"], ["t"]),
            helper.make_node("Mul", ["h", "t"], ["y"])]
    for nodes, kind in ((hswish, "HardSwish"), (mish, "Mish")):
        est = through(nodes, [2, 3, 8, 8], "y", [2, 3, 8, 8])
        assert (est.saved_bytes, [s.op_type for s in est.saved_storages]) == (1536, [kind])


def test_broadcast_mul_gradient_is_full_size_before_it_is_summed() -> None:
    # layer scale: y = x * W, x f32[1,4,2,2] (64 B, a graph input), W f32[4,1,1] (16 B).
    # backward (released): the loss reads y (then released) and writes dy 64; MulBackward makes
    # W's gradient at the output's size (64) and the engine sums it to [4,1,1] (16, kept as
    # .grad): 64 + 64 + 16 = 144
    nodes = [helper.make_node("Mul", ["x", "W"], ["y"])]
    est = estimate(nodes, [vi("x", [1, 4, 2, 2])], [vi("y", [1, 4, 2, 2])], [w("W", 4, 1, 1)])
    assert est.backward_peak_bytes == 144
    # the same weight at the output's shape needs no reduction: dy 64 + dW 64
    est = estimate(nodes, [vi("x", [1, 4, 2, 2])], [vi("y", [1, 4, 2, 2])], [w("W", 1, 4, 2, 2)])
    assert est.backward_peak_bytes == 128


def test_layer_norm_copies_a_permuted_input() -> None:
    # h = x + b f32[2,3,4] (96); t = Transpose(h, [0,2,1]) is a non-contiguous view; layer_norm
    # makes it contiguous first (a 96-byte copy) beside y (96) and mean/invstd of 2*4 rows (2 x 32):
    # h + y + stats + copy = 96 + 96 + 64 + 96 = 352
    nodes = [helper.make_node("Transpose", ["h"], ["t"], perm=[0, 2, 1]),
             helper.make_node("LayerNormalization", ["t", "s"], ["y"], axis=-1)]
    est = estimate([helper.make_node("Add", ["x", "b"], ["h"]), *nodes], [vi("x", [2, 3, 4])],
                   [vi("y", [2, 4, 3])], [w("b", 4), w("s", 3)])
    assert est.activation_peak_bytes == 352
    assert est.saved_bytes == 96 + 64  # t's storage (h) and the statistics


def test_channels_last_depthwise_conv_backward_workspace() -> None:
    # x f32[1,8,8,4] (NHWC, a graph input) viewed as NCHW by Transpose [0,3,1,2]: channels-last.
    # Depthwise 5x5 conv, W f32[4,1,5,5] (400 B), pad 2: y f32[1,4,8,8] (1024).
    # forward: y + the reordered weight (400; W is already channels-last, no ATen copy) = 1424.
    # backward (no input gradient: x is a graph input): jit_uni_dw refuses kw 5 > 3, so
    # jit:avx512_core computes dW in gOIhw16i16o: 4 groups x 16 x 16 x 25 x 4 B = 102400, beside
    # its dense copy (400) and dW itself (400, kept); dy 1024: 1024 + 400 + 102400 + 400 = 104224
    # (torch 2.13, 2 threads, profiler: 102400, +400, +400 beyond dy)
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["t", "W"], ["y"], group=4, kernel_shape=[5, 5], pads=[2, 2, 2, 2])]
    est = estimate(nodes, [vi("x", [1, 8, 8, 4])], [vi("y", [1, 4, 8, 8])], [w("W", 4, 1, 5, 5)])
    assert est.activation_peak_bytes == 1424
    assert est.backward_peak_bytes == 104224


def _nhwc_conv(w_shape, group, x_shape=(1, 100, 20, 20), y_shape=None, grads=("x", "W", "B"), **attrs):  # type: ignore[no-untyped-def]
    """A Conv reading a channels-last input, as the training rules see it."""
    from graphmem.model.types import TensorType
    from graphmem.training.saved import OpView

    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], group=group, **attrs)
    t = lambda shape: TensorType(dtype=TensorProto.FLOAT, shape=tuple(shape))  # noqa: E731
    types = {"x": t(x_shape), "W": t(w_shape), "B": t((w_shape[0],))}
    if y_shape is not None:
        types["y"] = t(y_shape)
    return OpView(op_type="Conv", node=node, inputs=("x", "W", "B"), outputs=("y",), types=types,
                  needs_grad=frozenset(grads), weights=frozenset({"W", "B"}), orders={"x": (0, 2, 3, 1)})


def test_channels_last_conv_weight_gradient_padding() -> None:
    from graphmem.training.kernels import backward_temporaries, forward_temporaries

    view = _nhwc_conv  # on PINNED_HOST: 2 threads

    # depthwise 7x7, 100 channels: W 100x1x7x7 = 19600 B, B 400 B, x (= dx) 160000 B.
    # dx phase: W in Abcde16a, groups padded to 112: 112 x 49 x 4 = 21952.
    # dW phase: gOIhw16i16o 100 x 16 x 16 x 49 x 4 = 5017600 + dense copy 19600 + dB 400 = 5037600
    # (torch 2.13 profiler: 256 W, +W dense, +W channels-last result returned, bias 400 x 2)
    dw = view((100, 1, 7, 7), 100)
    assert backward_temporaries(dw, PINNED_HOST) == 5037600
    assert forward_temporaries(dw, PINNED_HOST) == 19600  # the reordered weight only
    # dense 2x2 stride 1, 100 -> 40 channels, y [1,40,19,19]: W 40x100x2x2 = 64000 B; ATen's
    # channels-last copy 64000; dx: the reordered weight 64000 and brg_conv_bwd's nested
    # scratchpad 12464 (2 threads, see the next test); dW in OIhw16i16o: 48 x 112 x 4 x 4 B =
    # 86016, dense copy 64000, dB 160:
    # max(dx: 64000 + 64000 + 12464, dW: 64000 + 86016 + 64000 + 160) = 214176
    dense = view((40, 100, 2, 2), 1, y_shape=(1, 40, 19, 19))
    assert backward_temporaries(dense, PINNED_HOST) == 214176
    assert forward_temporaries(dense, PINNED_HOST) == 128000  # the copy and the reordered weight


def test_half_conv_weight_gradient_reduction_buffer() -> None:
    from graphmem.model.types import TensorType
    from graphmem.training.saved import OpView
    from graphmem.training.kernels.workspace import _half_weight_grad_reduction

    def view(w_shape, dtype, group=1):  # type: ignore[no-untyped-def]
        node = helper.make_node("Conv", ["x", "Wc"], ["y"], group=group)
        t = lambda shape: TensorType(dtype=dtype, shape=tuple(shape))  # noqa: E731
        types = {"x": t((1, w_shape[1] * group, 7, 7)), "Wc": t(w_shape)}
        return OpView(op_type="Conv", node=node, inputs=("x", "Wc"), outputs=("y",), types=types,
                      needs_grad=frozenset({"x", "Wc"}), weights=frozenset())

    bf16 = TensorProto.BFLOAT16
    # ResNet-18 layer4 3x3 512->512 under autocast: f32 512x512x3x3 = 9437184 B (the profiler's
    # scratchpad in its ConvolutionBackward0 is 9774768 B: this plus transposition buffers)
    assert _half_weight_grad_reduction(view((512, 512, 3, 3), bf16)) == 9437184
    # 3 -> 20 channels: O and I padded to 16-blocks, 32 x 16 x 3 x 3 x 4 = 18432
    assert _half_weight_grad_reduction(view((20, 3, 3, 3), bf16)) == 18432
    assert _half_weight_grad_reduction(view((512, 512, 3, 3), TensorProto.FLOAT)) == 0  # f32: none
    assert _half_weight_grad_reduction(view((512, 512, 3, 3), TensorProto.FLOAT16)) == 0  # f16: none
    assert _half_weight_grad_reduction(view((32, 1, 3, 3), bf16, group=32)) == 0  # depthwise: jit_uni_dw


def test_channels_last_dense_conv_input_gradient_scratchpad() -> None:
    from graphmem.training.kernels import backward_temporaries, unmodelled
    from graphmem.training.kernels.workspace import brgemm_bwd_data_scratchpad

    threads = PINNED_HOST.torch_threads  # 2
    # ConvNeXt-T's first downsample: x [4,96,56,56] nhwc, W 192x96x2x2 (294912 B), stride 2,
    # y [4,192,28,28]; brgconv_strided books per thread (2), each entry + a 4096 page:
    #   dy copy: 28 x 28 x 192 = 150528 -> 151552 elements (pages); 2 x 151552 x 4 + 4096 = 1216512
    #   mask: 2 x 4096 + 4096 = 12288
    #   batch: 2x2 kernel, 4 x 40 B -> 4096 -> 103 elements x 40 = 4120; 2 x 4120 + 4096 = 12336
    # = 1241136, whatever the batch (torch 2.13, 2 threads: ideep's scratchpad tensor 1241136 B
    # at batch 1 and 4; scripts/probes/probe_conv_nhwc.py)
    down = dict(kernel_shape=[2, 2], strides=[2, 2])
    for batch in (1, 4):
        op = _nhwc_conv((192, 96, 2, 2), 1, (batch, 96, 56, 56), (batch, 192, 28, 28), grads=("x",), **down)
        assert brgemm_bwd_data_scratchpad(op, threads) == 1241136
        # dx phase: the reordered weight (ATen copies a 2x2 weight channels-last too): 2 x 294912
        assert backward_temporaries(op, PINNED_HOST) == 2 * 294912 + 1241136
    # 8 threads: 8 x 151552 x 4 + 4096, 8 x 4096 + 4096, 8 x 4120 + 4096 = 4927680 (measured)
    assert brgemm_bwd_data_scratchpad(op, 8) == 4853760 + 36864 + 37056
    # stride 1 (3x3, pad 1): brg_conv_bwd books the forward's registry nested (+128), which holds
    # the batch elements only: 2 x 4120 + 4096 + 128 = 12464
    same = _nhwc_conv((64, 64, 3, 3), 1, (4, 64, 32, 32), (4, 64, 32, 32), grads=("x",),
                      kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    assert brgemm_bwd_data_scratchpad(same, threads) == 12464
    # 33 wide, stride 2 (iw % 2: exec_trans): dy copy with one overflow row and column,
    # 17 x 17 x 128 = 36992 -> 40960: 2 x 40960 x 4 + 4096 = 331776; mask 12288; batch 12336;
    # an output row per thread, rnd_up(33, 2) x 2 x 64 = 4352 -> 8192: 2 x 8192 x 4 + 4096 = 69632
    odd = _nhwc_conv((128, 64, 2, 2), 1, (4, 64, 33, 33), (4, 128, 16, 16), grads=("x",), **down)
    assert brgemm_bwd_data_scratchpad(odd, threads) == 331776 + 12288 + 12336 + 69632  # measured 426032

    # 96 input channels: a multiple of 32, so no input-channel block pads the reordered weight
    assert "input-channel block" not in (unmodelled(op, PINNED_HOST) or "")
    # 80: Bcda32b pads it to 96 (torch 2.13, 80 -> 160 2x2 s2 on 28x28: 40960 B more); named
    pad = _nhwc_conv((160, 80, 2, 2), 1, (1, 80, 28, 28), (1, 160, 14, 14), grads=("x",), **down)
    assert "input-channel block" in (unmodelled(pad, PINNED_HOST) or "")
    # a dilated conv takes another kernel: not modelled, and named

    dilated = _nhwc_conv((64, 64, 3, 3), 1, (4, 64, 32, 32), (4, 64, 28, 28), grads=("x",),
                         kernel_shape=[3, 3], dilations=[2, 2])
    assert brgemm_bwd_data_scratchpad(dilated, threads) == 0
    assert "dilated Conv" in (unmodelled(dilated, PINNED_HOST) or "")


def test_channels_last_3x3_depthwise_weight_gradient() -> None:
    from graphmem.training.kernels import backward_temporaries, unmodelled
    from graphmem.training.kernels.workspace import jit_dw_threads

    # x [4,24,56,56] nhwc, depthwise 3x3 pad 1: W 24x1x3x3 = 864 B, B 96 B; jit_uni_dw computes
    # dW in Abcde16a, the groups padded to 32: 1152 B. Its scratchpad, one reduction buffer per
    # thread but the first: (nthr - 1) x 32 x 9 x 4 + 128 and (nthr - 1) x 24 x 4 + 128.
    # Busiest: while it runs, Abcde16a + scratchpad + ideep's dB (for the returned dW and dB:
    # - 864 - 96 + 96), or while copying out, Abcde16a + dense dW + dB copy (beyond the returned)
    op = _nhwc_conv((24, 1, 3, 3), 24, (4, 24, 56, 56), (4, 24, 56, 56), grads=("W", "B"),
                    kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    two, five = PINNED_HOST, replace(PINNED_HOST, torch_threads=5)
    # 2 threads: 2 channel blocks in one call (ch_blocks 1), the minibatch split in 2: nthr 2;
    # scratchpad 1152 + 128 + 96 + 128 = 1504; running 1152 + 1504 - 864 = 1792 < copying out
    # 1152 + 864 + 96 = 2112 (torch 2.13 profiler: 2112)
    assert jit_dw_threads(op, two.torch_threads) == 2
    assert backward_temporaries(op, two) == 2112
    # 5 threads: splitting the minibatch uses at most 4; one image at a time in 5 blocks of 12 rows
    # uses all 5 (partition_nthr_nxc's first best): nthr 5;
    # scratchpad 4 x 1152 + 128 + 4 x 96 + 128 = 5248; running 1152 + 5248 - 864 = 5536 (measured)
    assert jit_dw_threads(op, five.torch_threads) == 5
    assert backward_temporaries(op, five) == 5536
    assert unmodelled(op, five) is None
    # pad 2 > kh / 2: jit_uni_dw refuses it, another kernel runs; named
    wide = _nhwc_conv((32, 1, 3, 3), 32, (2, 32, 16, 16), (2, 32, 18, 18), grads=("W", "B"),
                      kernel_shape=[3, 3], pads=[2, 2, 2, 2])
    assert "jit_uni_dw refuses" in (unmodelled(wide, two) or "")


def test_memory_orders_follow_permutes_and_elementwise_ops() -> None:
    from graphmem.training.patterns import memory_orders, torch_ops

    # t = x.permute(0,2,3,1) (non-contiguous), u = t.permute(0,3,1,2) (contiguous again);
    # v = x.permute(0,3,1,2) of an NHWC tensor: channels-last; Relu keeps it; LayerNorm resets
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("Transpose", ["t"], ["u"], perm=[0, 3, 1, 2]),
             helper.make_node("Transpose", ["u"], ["n"], perm=[0, 2, 3, 1]),
             helper.make_node("Transpose", ["n"], ["v"], perm=[0, 3, 1, 2]),
             helper.make_node("Relu", ["t"], ["r"]),
             helper.make_node("LayerNormalization", ["r", "s"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "g", [vi("x", [1, 4, 2, 3])], [vi("y", [1, 2, 3, 4]), vi("v", [1, 4, 2, 3])],
                              [w("s", 4)])
    a = analyze_model(model_from_proto(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                                         ir_version=IR_VERSION)))
    orders = memory_orders(torch_ops(a.graph, range(len(nodes)), frozenset()), a.types)
    assert orders == {"t": (0, 3, 1, 2), "n": (0, 3, 1, 2), "r": (0, 3, 1, 2)}
    # v (= u.permute(0,2,3,1).permute(0,3,1,2)) is u's layout: contiguous, so not listed


def rnn(op_type, x_shape, hidden, pre=(), x="h", extra_inputs=(), **attrs):  # type: ignore[no-untyped-def]
    gates = 3 if op_type == "GRU" else 4
    size = x_shape[-1]
    nodes = [helper.make_node("Add", ["x", "b"], ["h"]), *pre,
             helper.make_node(op_type, [x, "Wx", "Rh", *extra_inputs], ["Y", "Yh"] + (["Yc"] if op_type == "LSTM" else []),
                              hidden_size=hidden, **attrs)]
    return nodes, [w("b", size), w("Wx", 1, gates * hidden, size), w("Rh", 1, gates * hidden, hidden)]


def test_gru_saves_every_step_as_gru_cell_runs() -> None:
    # X f32[3,2,4] (96, held by Add as h) for linear_ih's weight gradient; zero h0 [1,2,5] (40);
    # per step the hidden gates [2,15] (120), three [2,5] tensors (3 x 40): 3 x 240 = 720; the
    # hidden states of steps 1 and 2 read by the next step (2 x 40): 96 + 40 + 720 + 80 = 936
    nodes, inits = rnn("GRU", [3, 2, 4], 5, linear_before_reset=1)
    est = estimate(nodes, [vi("x", [3, 2, 4])], [vi("Yh", [1, 2, 5])], inits)
    assert est.saved_bytes == 936
    assert est.unknown_ops == () and est.warnings == ()
    # forward: h (96) + Y [3,1,2,5] (120) + Yh (40) + saved buffers (840) + the input gates of
    # every step [3,2,15] (360) and the last hidden state (40): 1496
    assert est.activation_peak_bytes == 96 + 120 + 40 + 840 + 400


def gru_view(x_shape, hidden, kept, **attrs):  # type: ignore[no-untyped-def]
    from graphmem.training.saved import OpView

    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    nodes, _ = rnn("GRU", x_shape, hidden, **attrs)
    inits = [w("b", x_shape[-1]), w("Wx", dirs, 3 * hidden, x_shape[-1]), w("Rh", dirs, 3 * hidden, hidden)]
    a = analyze_model(model_from_proto(helper.make_model(
        helper.make_graph(nodes, "g", [vi("x", x_shape)], [vi("Yh", [dirs, x_shape[1], hidden])], inits),
        opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)))
    node = nodes[-1]
    return OpView(op_type="GRU", node=node, inputs=tuple(node.input), outputs=tuple(node.output), types=a.types,
                  needs_grad=frozenset({"h", "Wx", "Rh"}), weights=frozenset({"Wx", "Rh"}), weight_grads_kept=kept)


def test_gru_backward_temporaries_by_hand() -> None:
    from graphmem.training.kernels import backward_temporaries

    # T=3, B=2, I=4, H=5, no bias: W_ih grad 15x4x4 = 240, W_hh grad 15x5x4 = 300, dX 3x2x4x4 = 96,
    # input-gate grads [3,2,15] = 360, per-step saved 3x2x30x4 + 2x2x5x4 = 800.
    # loop: W_hh's per-step grads summed in the engine's buffer, the second out of place: first,
    #   second and sum = 900; stack: -800 (per-step saved released) + 2 x 360 = -80;
    #   linear_ih: -800 + 360 + 96 + 240 = -104 (+300 in each when the buffer is kept as .grad).
    # busiest 900; the backward step counts dX + both weight grads = 636: 264 either way
    for kept in (False, True):
        assert backward_temporaries(gru_view([3, 2, 4], 5, kept, linear_before_reset=1), PINNED_HOST) == 264
    # one step: one W_hh contribution (300), nothing summed; the step's 32 + 240 + 300 covers it: 0
    assert backward_temporaries(gru_view([1, 2, 4], 5, False, linear_before_reset=1), PINNED_HOST) == 0
    # T=8, B=4, I=4, H=1: W_ih 3x4x4 = 48, W_hh 3x1x4 = 12, dX 8x4x4x4 = 512, gates [8,4,3] = 384,
    # per-step saved 8x4x6x4 + 7x4x1x4 = 880; loop 36; stack -880 + 768 = -112; linear_ih
    # -880 + 384 + 512 + 48 = 64; the step counts 512 + 48 + 12 = 572: 0
    assert backward_temporaries(gru_view([8, 4, 4], 1, False, linear_before_reset=1), PINNED_HOST) == 0


def test_bidirectional_gru_by_hand() -> None:
    from graphmem.training.kernels import backward_temporaries, forward_temporaries

    # forward, at the cat of FullBidirectionalLayer: both stacks [3,2,5] (2 x 120), the reverse
    # direction's input gates [3,2,15] (360) and both last hidden states (2 x 40): 680
    view = gru_view([3, 2, 4], 5, False, linear_before_reset=1, direction="bidirectional")
    assert forward_temporaries(view, PINNED_HOST) == 680
    # backward, reverse direction first (per direction: W_ih 240, W_hh 300, gates 360, per-step
    # saved 800; dX 96): its loop holds 900; the second's loop 96 - 800 + 900 = 196; the step
    # counts 96 + 2 x 540 = 1176 > 900: 0
    assert backward_temporaries(view, PINNED_HOST) == 0
    # batch-first input: each direction's linear_ih copies it (2 x 96), h0 [2,2,5] (80), per
    # direction 720 + 80: 192 + 80 + 1600 = 1872
    nodes, _ = rnn("GRU", [2, 3, 4], 5, pre=[helper.make_node("Transpose", ["h"], ["t"], perm=[1, 0, 2])],
                   x="t", linear_before_reset=1, direction="bidirectional")
    inits = [w("b", 4), w("Wx", 2, 15, 4), w("Rh", 2, 15, 5)]
    est = estimate(nodes, [vi("x", [2, 3, 4])], [vi("Yh", [2, 2, 5])], inits)
    assert est.saved_bytes == 1872


def test_gru_persistent_backward_peak_by_hand() -> None:
    # h = x + b f32[3,2,4] (96); GRU T=3, B=2, H=5 (temporaries 264, test above); only Yh is an
    # output. Backward (persistent): (forward end) the saved 936 (h 96, h0 40, per-step 800) + Yh
    # held by the loss 40 = 976; (loss backward) + dYh 40 = 1016, then Yh is released; GRU: 936 +
    # dYh 40 + dh 96 + dW_ih 240 + dW_hh 300 + 264 = 1876 (peak); Add: dh 96 + db 16
    nodes, inits = rnn("GRU", [3, 2, 4], 5, linear_before_reset=1)
    est = estimate(nodes, [vi("x", [3, 2, 4])], [vi("Yh", [1, 2, 5])], inits, grads="persistent")
    assert (est.backward_peak_bytes, est.backward_peak_at) == (1876, "GRU_1")
    assert not any("GRU" in x for x in est.warnings)


def tied(second):  # type: ignore[no-untyped-def]
    # h = MatMul(x, W) then <second>(h, W): W f32[4,4] (64) read by both; x f32[1,4], h, y 16 each
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm1"), second]
    return lambda **config: estimate(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])], [w("W", 4, 4)], **config)


def test_a_tied_weight_sums_its_gradients_out_of_place_after_a_view() -> None:
    # Gemm(h, W, transB=1) is addmm(h, W.t()): its W gradient comes back through t(), a view.
    # saves: h (16) by the Gemm, x (a graph input) by mm1. Backward, both gradient modes:
    # (forward end) h + y held by the loss = 32; (loss backward) + dy = 48; Gemm: h + dy + dh 16
    # + W's first gradient 64 = 112; mm1: dh + the first 64 + the second 64 + their sum (out of
    # place: the first is a view) 64 = 208 (peak). Released keeps the sum as .grad (64 at the end)
    est = tied(helper.make_node("Gemm", ["h", "W"], ["y"], transB=1, name="gemm"))
    for grads in ("released", "persistent"):
        e = est(grads=grads)
        assert (e.backward_peak_bytes, e.backward_peak_at) == (208, "mm1"), grads
        assert e.backward.live_bytes[-1] == (64 if grads == "released" else 0)


def test_a_tied_weight_sums_in_place_after_a_new_tensor() -> None:
    # MatMul(h, W): mm's W gradient is a new tensor, so the second is added into it in place:
    # mm2: h + dy + dh + 64 = 112; mm1: dh + the running sum 64 + the second 64 = 144 (peak), in
    # both modes: with persistent gradients the sum waits in the engine's buffer until mm1
    est = tied(helper.make_node("MatMul", ["h", "W"], ["y"], name="mm2"))
    for grads in ("released", "persistent"):
        assert (est(grads=grads).backward_peak_bytes, est(grads=grads).backward_peak_at) == (144, "mm1"), grads


def test_gru_copies_a_transposed_input() -> None:
    # batch-first: X = Transpose(h) is not contiguous; matmul's reshape copies it (96) and that
    # copy is held instead of h: the 936 of the contiguous case, and nothing holds h
    nodes, inits = rnn("GRU", [2, 3, 4], 5, pre=[helper.make_node("Transpose", ["h"], ["t"], perm=[1, 0, 2])],
                       x="t", linear_before_reset=1)
    est = estimate(nodes, [vi("x", [2, 3, 4])], [vi("Yh", [1, 2, 5])], inits)
    assert est.saved_bytes == 936
    assert [s.name for s in est.saved_storages if s.name == "h"] == []
    # the caller's hold of h across later layers is named, with h's 2 x 3 x 4 x 4 = 96 bytes
    assert [x for x in est.warnings if "transposed (batch-first) input (96 B)" in x and "not modelled" in x]


def test_lstm_shared_zero_state_is_two_storages() -> None:
    # initial h and c are the same graph tensor s f32[1,2,6] (48); nn.LSTM makes h0 and c0 as two
    # tensors: s (a graph input) + c0 (48). X 160, Y [5,1,2,6] (the graph's Y, 240), final h and
    # c (48 each), workspace 28672
    nodes, inits = rnn("LSTM", [5, 2, 4], 6, extra_inputs=["", "", "s", "s"])
    est = estimate(nodes, [vi("x", [5, 2, 4]), vi("s", [1, 2, 6])], [vi("Yh", [1, 2, 6])], inits)
    assert est.saved_bytes == 160 + 48 + 48 + 240 + 48 + 48 + 28672
    assert est.saved_inputs_bytes == 48


def test_lstm_scratchpad_by_hand() -> None:
    from graphmem.training.kernels.workspace import lstm_scratchpad_bytes

    # T=5, B=2, H=6: key_rnn_space, each part at a page-aligned offset: the gates of every step
    # 5 x 2 x good_ld(24)=32 x 4 = 1280 at 0; h scratch 2 x good_ld(6)=16 x 4 = 128 at 4096;
    # diff_h scratch 128 at 8192; the empty scratch_cell rounds the end to 12288; + a page of
    # alignment = 16384; 3 weight-pointer arrays (8 + 128) and the bias pointers (32 + 128): 16952
    # (torch 2.13: the scratchpad tensor of nn.LSTM(4, 6) on [5, 2, 4] is 16952 B, fwd and bwd)
    assert lstm_scratchpad_bytes(5, 2, 6, forward=True) == 16952
    assert lstm_scratchpad_bytes(5, 2, 6, forward=False) == 16952
    # the checked LSTM (H=256, T=64): 64 x B x 1040 x 4 gates, then 12856 B more at B=1 and
    # 21048 B at B=4 (h and diff_h scratch [B, 272] a page each at B=1, two pages each at B=4)
    assert lstm_scratchpad_bytes(64, 1, 256, forward=True) == 64 * 1040 * 4 + 12856
    assert lstm_scratchpad_bytes(64, 4, 256, forward=True) == 64 * 4 * 1040 * 4 + 21048
    # a minibatch of 128 or more: the forward's layer GEMM runs step by step, one step of gates:
    # 128 x good_ld(256)=272 x 4 = 139264 (34 pages), h and diff_h 128 x 64 x 4 = 32768 each;
    # backward all 16 steps of gates
    assert lstm_scratchpad_bytes(16, 128, 64, forward=True) == 139264 + 2 * 32768 + 4096 + 568  # measured 209464
    assert lstm_scratchpad_bytes(16, 128, 64, forward=False) == 16 * 139264 + 2 * 32768 + 4096 + 568  # measured 2298424


def test_lstm_backward_temporaries_by_hand() -> None:
    from graphmem.training.saved import OpView
    from graphmem.training.kernels import backward_temporaries

    # I=4, H=6, T=5, B=2: good_ld(24) = 32; weight gradients in oneDNN's layout [good_ld(n), 24]
    # (good_ld(4) = good_ld(6) = 16) and PyTorch's [n, 32]: (16*24 + 4*32 + 16*24 + 6*32) x 4 = 4352;
    # output and final-state gradients (5*2*6 + 2*6) x 4 = 288; two bias buffers 2 x 24 x 4 = 192;
    # oneDNN's scratchpad 16952 (see test_lstm_scratchpad_by_hand): 21784
    nodes, inits = rnn("LSTM", [5, 2, 4], 6)
    a = analyze_model(model_from_proto(helper.make_model(
        helper.make_graph(nodes, "g", [vi("x", [5, 2, 4])], [vi("Yh", [1, 2, 6])], inits),
        opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)))
    node = nodes[-1]
    view = OpView(op_type="LSTM", node=node, inputs=tuple(node.input), outputs=tuple(node.output), types=a.types,
                  needs_grad=frozenset({"h", "Wx", "Rh"}), weights=frozenset({"Wx", "Rh"}))
    assert backward_temporaries(view, PINNED_HOST) == 21784


@pytest.mark.parametrize(
    "direction,orders,expected",
    [
        # I=4, H=6, T=5, B=2: good_ld(24) = 32; one direction's mkldnn_rnn_layer holds both weights
        # re-laid (4 + 6) x 32 x 4 = 1280, oneDNN's scratchpad 16952 (test_lstm_scratchpad_by_hand)
        # and the bias 96: 18328, freed before mkldnn_impl cats Y [5,2,2,6] (480) and stacks
        # Yh, Yc [2,2,6] (96 each): 18328 - 672 = 17656 beyond the outputs the step holds
        ("bidirectional", {}, 17656),
        # batch-first: X = Transpose(...) is copied contiguous (160) beside everything
        ("bidirectional", {"x": (1, 0, 2)}, 160 + 17656),
        # one direction: Y [5,1,2,6] is the layer's result (allocated before the temporaries);
        # only the stacked Yh, Yc [1,2,6] (48 each) come after: 18328 - 96 = 18232
        ("forward", {}, 18232),
    ],
)
def test_lstm_forward_temporaries_by_hand(direction: str, orders: dict, expected: int) -> None:
    from graphmem.model.types import TensorType
    from graphmem.training.saved import OpView
    from graphmem.training.kernels import forward_temporaries

    dirs = 2 if direction == "bidirectional" else 1
    node = helper.make_node("LSTM", ["x", "W", "R"], ["Y", "Yh", "Yc"], hidden_size=6, direction=direction)
    t = lambda *shape: TensorType(dtype=TensorProto.FLOAT, shape=shape)  # noqa: E731
    types = {"x": t(5, 2, 4), "W": t(dirs, 24, 4), "R": t(dirs, 24, 6), "Y": t(5, dirs, 2, 6),
             "Yh": t(dirs, 2, 6), "Yc": t(dirs, 2, 6)}
    view = OpView(op_type="LSTM", node=node, inputs=("x", "W", "R"), outputs=("Y", "Yh", "Yc"), types=types,
                  needs_grad=frozenset({"x", "W", "R"}), weights=frozenset({"W", "R"}), orders=orders)
    assert forward_temporaries(view, PINNED_HOST) == expected


def test_large_kernel_conv_weight_gradient_is_named_unmodelled() -> None:
    nodes = [helper.make_node("Conv", ["x", "K"], ["y"], kernel_shape=[8, 8], strides=[8, 8])]
    est = estimate(nodes, [vi("x", [1, 3, 16, 16])], [vi("y", [1, 4, 2, 2])], [w("K", 4, 3, 8, 8)])
    assert any("kernel 8x8" in x and "not modelled" in x for x in est.warnings)
    small = estimate([helper.make_node("Conv", ["x", "K"], ["y"], kernel_shape=[3, 3])],
                     [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [w("K", 4, 3, 3, 3)])
    assert not any("not modelled" in x for x in small.warnings)
