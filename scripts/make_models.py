#!/usr/bin/env python
"""Write the small real ONNX models kept in the repository under ``models/``.

    python scripts/make_models.py [--out DIR]      (default: <repo>/models)

Every model is fp32, opset 17, with fixed seeds; rerunning the script with the same
torch / transformers / onnx versions rewrites byte-identical files (checked by
running it twice). The torch models are exported with the TorchScript exporter
(``torch.onnx.export(..., dynamo=False)``, eval mode, constant folding on), traced at
batch 2 / seq 16. Weights are "shrunk" only by choosing tiny architectures: nothing is
quantised or pruned, the weights are the ordinary random init of each layer.

* ``tiny_cnn.onnx``    TinyCNN (scripts/_torch_models.py): Conv3x3(3->16)+BatchNorm+Relu
                       (BN folded into the Conv by the exporter), MaxPool 2x2,
                       Conv3x3/2(16->32)+Relu, a depthwise Conv3x3 (group 32) + Relu +
                       pointwise Conv1x1, Add residual, an unfolded BatchNormalization
                       (it follows the Add), Relu, GlobalAveragePool, Flatten, Gemm(32->10).
                       BN running stats calibrated on random data. Input ``input[batch,3,64,64]``.
* ``tiny_bert.onnx``   transformers BertModel, BertConfig(hidden 64, 2 layers, 4 heads,
                       intermediate 128, vocab 1000; max positions 512), eager attention,
                       with pooler. Inputs ``input_ids``/``attention_mask[batch,seq]`` int64,
                       outputs ``last_hidden_state[batch,seq,64]``, ``pooler_output[batch,64]``.
* ``tiny_gpt2.onnx``   transformers GPT2Model, GPT2Config(n_embd 64, 2 layers, 4 heads,
                       vocab 1000, n_positions 128), eager attention, no past key values.
                       Input ``input_ids[batch,seq]``, output ``last_hidden_state[batch,seq,64]``.
                       For both transformers models, parameters whose elements are all equal
                       at init (LayerNorm, zero biases) get small seeded noise so the exporter
                       does not deduplicate them into Identity nodes.
* ``tiny_lstm.onnx``   Embedding(1000, 32) -> 1-layer bidirectional LSTM(hidden 48,
                       batch_first) -> concat of final forward/backward hidden states ->
                       Linear(96, 4). Input ``input_ids[batch,seq]`` int64, output ``logits[batch,4]``.
* ``tiny_unet.onnx``   UNet with base width 8: two double-conv + MaxPool down steps, a
                       bottleneck, two ConvTranspose(2x2, stride 2) up steps each
                       concatenated (Concat) with the encoder skip, 1x1 head.
                       Input ``input[batch,1,64,64]``, output ``mask[batch,1,64,64]``.
* ``static_mlp.onnx``  onnx.helper only (no torch): fully static ``x[4,256]`` ->
                       Gemm(256->512) -> Relu -> Gemm(512->20) -> Reshape to [4,2,10] (target
                       shape from a Constant node) -> Softmax(axis=-1) -> ``probs[4,2,10]``.
                       Weights from numpy.random.default_rng(0), scaled by 1/sqrt(fan_in).

Torch models have a dynamic ``batch`` axis (and ``seq`` where there is one) on inputs
and outputs. Each model is checked with onnx.checker and onnxruntime (CPU) at batch 1
and 2 (seq 16; static_mlp only at its fixed batch 4) and compared with torch; one line
is printed per model.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # no scripts/__pycache__ from importing _torch_models
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "models")
TRACE_BATCH, TRACE_SEQ = 2, 16
MAX_FILE_BYTES = 3 * 1024 * 1024
MAX_TOTAL_BYTES = 8 * 1024 * 1024


def torch_specs():
    import _torch_models as tm

    return [
        tm.ModelSpec(
            name="tiny_cnn",
            build=tm.TinyCNN,
            make_inputs=tm.image_inputs("input", 3, 64, 64),
            output_names=["logits"],
            dynamic_axes=tm.batch_axes(["input", "logits"]),
            check_batches=(1, 2),
            calibrate=(2, 8),
        ),
        tm.ModelSpec(
            name="tiny_bert",
            build=lambda: tm.build_bert(
                hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=1000
            ),
            make_inputs=tm.token_inputs(1000, with_mask=True),
            output_names=["last_hidden_state", "pooler_output"],
            dynamic_axes={
                **tm.batch_axes(["input_ids", "attention_mask", "last_hidden_state"], {1: "seq"}),
                "pooler_output": {0: "batch"},
            },
            seq=16,
            check_batches=(1, 2),
        ),
        tm.ModelSpec(
            name="tiny_gpt2",
            build=lambda: tm.build_gpt2(n_embd=64, n_layer=2, n_head=4, vocab_size=1000, n_positions=128,
                                       bos_token_id=0, eos_token_id=0),
            make_inputs=tm.token_inputs(1000, with_mask=False),
            output_names=["last_hidden_state"],
            dynamic_axes=tm.batch_axes(["input_ids", "last_hidden_state"], {1: "seq"}),
            seq=16,
            check_batches=(1, 2),
        ),
        tm.ModelSpec(
            name="tiny_lstm",
            build=tm.TinyLSTM,
            make_inputs=tm.token_inputs(1000, with_mask=False),
            output_names=["logits"],
            dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch"}},
            seq=16,
            check_batches=(1, 2),
        ),
        tm.ModelSpec(
            name="tiny_unet",
            build=tm.TinyUNet,
            make_inputs=tm.image_inputs("input", 1, 64, 64),
            output_names=["mask"],
            dynamic_axes=tm.batch_axes(["input", "mask"]),
            check_batches=(1, 2),
        ),
    ]


def make_static_mlp():
    """onnx.helper-only MLP with fully static shapes (no torch)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    batch, d_in, d_hidden, heads, classes = 4, 256, 512, 2, 10

    def dense(fan_in, fan_out):
        w = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        b = (rng.standard_normal(fan_out) * 0.01).astype(np.float32)
        return w, b

    w1, b1 = dense(d_in, d_hidden)
    w2, b2 = dense(d_hidden, heads * classes)
    inits = [
        numpy_helper.from_array(w1, "fc1.weight"),
        numpy_helper.from_array(b1, "fc1.bias"),
        numpy_helper.from_array(w2, "fc2.weight"),
        numpy_helper.from_array(b2, "fc2.bias"),
    ]
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["fc1_out"], name="fc1"),
        helper.make_node("Relu", ["fc1_out"], ["relu_out"], name="relu"),
        helper.make_node("Gemm", ["relu_out", "fc2.weight", "fc2.bias"], ["fc2_out"], name="fc2"),
        helper.make_node(
            "Constant", [], ["head_shape"], name="head_shape",
            value=numpy_helper.from_array(np.array([batch, heads, classes], dtype=np.int64), "head_shape_value"),
        ),
        helper.make_node("Reshape", ["fc2_out", "head_shape"], ["logits"], name="to_heads"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "static_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, d_in])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [batch, heads, classes])],
        initializer=inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name="graphmem/scripts/make_models.py",
        ir_version=8,  # what the torch exports use; onnxruntime accepts it
    )

    def reference(x: np.ndarray) -> np.ndarray:
        h = np.maximum(x @ w1 + b1, 0)
        z = (h @ w2 + b2).reshape(batch, heads, classes)
        e = np.exp(z - z.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    return model, reference


def check_static_mlp(path: str, reference) -> str:
    import time

    import onnx
    import onnxruntime as ort

    import _torch_models as tm

    onnx.checker.check_model(path, full_check=True)
    proto = onnx.load(path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1234).standard_normal((4, 256), dtype=np.float32)
    out = sess.run(None, {"x": x})[0]
    t0 = time.perf_counter()
    for _ in range(3):
        sess.run(None, {"x": x})
    dt = (time.perf_counter() - t0) / 3
    ref = reference(x)
    err = float(np.abs(out - ref).max())
    if err > 1e-5:
        raise RuntimeError(f"static_mlp differs from numpy by {err}")
    ins = " ".join(tm._dims(i) for i in proto.graph.input)
    outs = " ".join(tm._dims(o) for o in proto.graph.output)
    return (
        f"{'static_mlp':<14} {tm.human_size(os.path.getsize(path)):>9} | {len(proto.graph.node):5d} nodes | "
        f"in {ins} | out {outs} | ort b4 {dt * 1000:.2f} ms | max abs diff vs numpy {err:.1e}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="write the small models in models/")
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    import onnx
    import torch

    import _torch_models as tm

    torch.set_num_threads(1)  # also keeps float reductions in a fixed order
    paths = []
    for spec in torch_specs():
        path = os.path.join(args.out, f"{spec.name}.onnx")
        model = tm.build_model(spec)
        feeds = spec.make_inputs(TRACE_BATCH, TRACE_SEQ if spec.seq else 0, np.random.default_rng(0))
        tm.export_onnx(model, feeds, path, spec.output_names, spec.dynamic_axes)
        line = tm.verify_onnx(path, spec, reference=model.eval())
        print(f"{line} | {tm.count_params(model) / 1e3:.1f}K params", flush=True)
        paths.append(path)

    model, reference = make_static_mlp()
    path = os.path.join(args.out, "static_mlp.onnx")
    onnx.save(model, path)
    print(check_static_mlp(path, reference), flush=True)
    paths.append(path)

    sizes = {p: os.path.getsize(p) for p in paths}
    too_big = [p for p, s in sizes.items() if s > MAX_FILE_BYTES]
    total = sum(sizes.values())
    print(f"total {tm.human_size(total)} in {len(paths)} files")
    if too_big or total > MAX_TOTAL_BYTES:
        print(f"size budget exceeded: {too_big or 'total'}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
