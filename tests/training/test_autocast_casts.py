"""graphmem.training.casts: a float32 -> float32 Cast under autocast, read from its use; the
attention-mask warning. Tiny inline graphs, hand-computed integers (bf16 = 2 bytes, f32 = 4).

The attention pattern of both readings: ``v = x @ Wv`` and ``q = x @ Wq`` (x f32[1,4], an input:
each MatMul casts it, x/autocast_bfloat16#k 8 B, and saves that cast for its weight's gradient;
Wv, Wq f32[4,4] are cached casts, 32 B each), then probabilities of ``q`` multiplied by ``v``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from graphmem.training import estimate_training

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _save(tmp_path: Path, nodes, inputs, outputs, inits) -> str:  # type: ignore[no-untyped-def]
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    path = tmp_path / "m.onnx"
    onnx.save(proto, path)
    return str(path)


def _w(name: str, *shape: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.full(shape, 0.5, dtype=np.float32), name)


def _c(name: str, value, dtype) -> onnx.NodeProto:  # type: ignore[no-untyped-def]
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value, dtype=dtype), name))


_PROJ = [helper.make_node("MatMul", ["x", "Wv"], ["v"]), helper.make_node("Transpose", ["v"], ["vt"], perm=[1, 0]),
         helper.make_node("MatMul", ["x", "Wq"], ["q"])]
_W = [_w("Wq", 4, 4), _w("Wv", 4, 4)]


def _storages(e) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {s.name: s.bytes for s in e.saved_storages}


def test_a_cast_before_a_matmul_takes_the_other_operands_half_type(tmp_path: Path) -> None:
    # GPT-2: p = softmax(q + mask); p.type(v.dtype); dropout; p @ v. The fp32 mask m promotes the
    # scores: s f32 16, Softmax p f32 16 (saved). Cast(p, to=FLOAT) feeds only the MatMul (through
    # Dropout): x.to(vt.dtype), bf16 8; Dropout's mask bf16 8 (saved) and d bf16 8 (saved by the
    # MatMul for vt's gradient, as is vt's storage v 8).
    # saved: x casts 8 + 8, p 16, mask 8, d 8, v 8 = 56 (taken as float32: mask 16, d 16, d's cast 8: 64)
    # forward: xc0 8, Wv 32 (40), v 8 (48), xc1 8 (56), Wq 32 (88), q 8 (96), s 16 (112; q freed),
    #          p 16 (120; s freed), c 8 (112), Dropout mask 8 + d 8 (128; c freed), y bf16[1,1] 2 (122)
    nodes = [*_PROJ, helper.make_node("Add", ["q", "m"], ["s"]), helper.make_node("Softmax", ["s"], ["p"], axis=-1),
             helper.make_node("Cast", ["p"], ["c"], to=F, name="to_v"), _c("r", 0.5, np.float32), _c("t", True, np.bool_),
             helper.make_node("Dropout", ["c", "r", "t"], ["d", "dm"]), helper.make_node("MatMul", ["d", "vt"], ["y"])]
    path = _save(tmp_path, nodes, [helper.make_tensor_value_info("x", F, [1, 4]), helper.make_tensor_value_info("m", F, [1, 4])],
                 [helper.make_tensor_value_info("y", F, [1, 1])], _W)
    e = estimate_training(path, precision="mixed-bf16")
    assert e.saved_bytes == 56
    assert {k: v for k, v in _storages(e).items() if not k.startswith("x/")} == {"p": 16, "Dropout_6#10:mask": 8, "d": 8, "v": 8}
    assert e.forward is not None and e.forward.live_bytes == (8, 40, 48, 48, 56, 88, 96, 112, 120, 112, 128, 122, 122)
    assert any("read from their use: 1 before a matmul as x.to(v.dtype), v its other operand (e.g. 'to_v')" in x
               for x in e.warnings)
    # float32: the Cast is a view of p; x saved once (an input: 16), p 16, mask 16, d 16, v 16
    f = estimate_training(path)
    assert (f.saved_bytes, f.saved_inputs_bytes) == (80, 16) and not any("Cast" in x for x in f.warnings)


def test_softmax_before_two_casts_computes_in_float32(tmp_path: Path) -> None:
    # ViT/Llama: softmax(q, dtype=float32).to(query.dtype) @ v: the exporter writes Softmax, Cast,
    # Cast (onnxruntime's duplicate-Cast remover drops both; PyTorch runs them). SoftMax.cpp: q
    # (bf16 8) is converted to f32 (16, not saved) and the softmax p is f32 (16, saved); the first
    # Cast is then a view; the second feeds the MatMul: x.to(vt.dtype), bf16 8 (saved with v 8).
    # saved: x casts 8 + 8, p 16, c2 8, v 8 = 48
    # forward: ... q 8 (96), q's f32 copy 16 (112; q freed), p 16 (120; the copy freed), Cast_4
    #          view (104), c2 8 (112), y 2 (114)
    nodes = [*_PROJ, helper.make_node("Softmax", ["q"], ["p"], axis=-1), helper.make_node("Cast", ["p"], ["c1"], to=F),
             helper.make_node("Cast", ["c1"], ["c2"], to=F), helper.make_node("MatMul", ["c2", "vt"], ["y"])]
    path = _save(tmp_path, nodes, [helper.make_tensor_value_info("x", F, [1, 4])],
                 [helper.make_tensor_value_info("y", F, [1, 1])], _W)
    e = estimate_training(path, precision="mixed-bf16")
    assert e.saved_bytes == 48
    assert {k: v for k, v in _storages(e).items() if not k.startswith("x/")} == {"p": 16, "c2": 8, "v": 8}
    assert e.forward is not None
    assert list(zip(e.forward.labels, e.forward.live_bytes))[6:] == [
        ("MatMul_2", 96), ("q/autocast_float#3:Cast", 112), ("Softmax_3", 120), ("Cast_4", 104), ("Cast_5", 112),
        ("MatMul_6", 114), ("(end of forward)", 114)]
    assert any("1 after a Softmax as softmax(x, dtype=float32)" in x for x in e.warnings)
    # float32: both Casts views of p; saved x 16, p 16 (Softmax and MatMul), v 16
    assert estimate_training(path).saved_bytes == 48


def test_a_padding_mask_added_to_half_scores_is_named(tmp_path: Path) -> None:
    # BERT: the additive mask is a Where of constants on the bool attention_mask (int64 input):
    # f32[1,1,4] added to the bf16 scores q promotes them (s f32). transformers skips that mask
    # when no token is padded (a Python branch): named. A mask built from the input's shape
    # only (GPT-2's causal mask) reads no values: not named.
    def model(mask_nodes: list[onnx.NodeProto]) -> str:
        nodes = [*_PROJ, *mask_nodes, helper.make_node("Add", ["q", "mask"], ["s"], name="add_mask"),
                 helper.make_node("Softmax", ["s"], ["y"], axis=-1)]
        return _save(tmp_path, nodes, [helper.make_tensor_value_info("x", F, [1, 4]),
                                       helper.make_tensor_value_info("am", I64, [1, 4])],
                     [helper.make_tensor_value_info("y", F, [1, 4])], _W)

    values = [helper.make_node("Cast", ["am"], ["b"], to=TensorProto.BOOL), _c("zero", 0.0, np.float32),
              _c("low", -1e9, np.float32), helper.make_node("Where", ["b", "zero", "low"], ["mask"])]
    shape = [helper.make_node("Shape", ["am"], ["sh"]),
             helper.make_node("ConstantOfShape", ["sh"], ["mask"], value=numpy_helper.from_array(np.zeros(1, np.float32)))]
    named = [x for x in estimate_training(model(values), precision="mixed-bf16").warnings if "float32 mask" in x]
    assert len(named) == 1 and named[0].startswith("autocast: Add 'add_mask' adds a float32 mask computed from input 'am'")
    assert not any("float32 mask" in x for x in estimate_training(model(shape), precision="mixed-bf16").warnings)
    assert not any("float32 mask" in x for x in estimate_training(model(values)).warnings)
