"""Opset-23 LLM graphs (RMSNormalization, RotaryEmbedding, Attention): graphmem's peak vs onnxruntime.

Current exporters write these ops at ``opset_version`` 23+; onnxruntime 1.31 has CPU kernels for
all three. This script builds small decoder blocks with onnx.helper (pre-norm RMSNormalization,
Q/K/V MatMuls, RotaryEmbedding on Q and K, Attention with and without a KV cache and with a
causal mask, output projection, residual Adds, a SwiGLU-free MLP with Sigmoid*Mul) at opsets 23
and 24, and, when torch is installed, exports a tiny transformers Llama with
``torch.onnx.export(..., opset_version=23, dynamo=True)``. For each model and binding it prints
graphmem's predicted activation peak beside onnxruntime's measured run-1 requested peak
(ORT_DISABLE_ALL, CPU, 1 thread), and whether graphmem says the figure is exact.

    python scripts/llm23_check.py [--no-torch]

Exit 1 when a figure is off.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import graphmem
from graphmem.verify import make_feeds, measure

HIDDEN, HEADS, HEAD = 64, 4, 16
FFN = 128
VOCAB = 100


def _w(name: str, *shape: int, rng: np.random.Generator) -> onnx.TensorProto:
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.05).astype(np.float32), name)


def decoder_block(opset: int, *, kv_cache: bool, layers: int = 2) -> onnx.ModelProto:
    """``layers`` pre-norm decoder layers over input ids [batch, seq] (rotary positions from an
    input [batch, seq] of position ids); with ``kv_cache`` each layer reads past K/V
    [batch, heads, past, head] and writes present K/V."""
    rng = np.random.default_rng(0)
    inits = [_w("embed", VOCAB, HIDDEN, rng=rng)]
    half = HEAD // 2
    freqs = np.arange(256)[:, None] / (10000 ** (np.arange(half)[None, :] / half))
    inits += [numpy_helper.from_array(np.cos(freqs).astype(np.float32), "cos"),
              numpy_helper.from_array(np.sin(freqs).astype(np.float32), "sin"),
              numpy_helper.from_array(np.array([0, 0, HEADS, HEAD], np.int64), "qkv_shape"),
              numpy_helper.from_array(np.array([0, 0, HIDDEN], np.int64), "merge_shape")]
    nodes = [helper.make_node("Gather", ["embed", "input_ids"], ["h0"], name="embed")]
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"])]
    outputs = []
    h = "h0"
    for i in range(layers):
        p = f"l{i}_"
        inits += [numpy_helper.from_array(np.ones(HIDDEN, np.float32), p + "ln1"),
                  numpy_helper.from_array(np.ones(HIDDEN, np.float32), p + "ln2")]
        inits += [_w(p + n, HIDDEN, HIDDEN, rng=rng) for n in ("wq", "wk", "wv", "wo")]
        inits += [_w(p + "w1", HIDDEN, FFN, rng=rng), _w(p + "w2", FFN, HIDDEN, rng=rng)]
        nodes += [
            helper.make_node("RMSNormalization", [h, p + "ln1"], [p + "n1"], name=p + "norm1", axis=-1, epsilon=1e-6),
            *(helper.make_node("MatMul", [p + "n1", p + w], [p + x], name=p + x) for w, x in (("wq", "q"), ("wk", "k"), ("wv", "v"))),
            *(helper.make_node("Reshape", [p + x, "qkv_shape"], [p + x + "4"], name=p + x + "_split") for x in ("q", "k", "v")),
            *(helper.make_node("Transpose", [p + x + "4"], [p + x + "t"], name=p + x + "_t", perm=[0, 2, 1, 3]) for x in ("q", "k", "v")),
            # RotaryEmbedding-23 on [batch, heads, seq, head] (4D input: no num_heads attribute)
            helper.make_node("RotaryEmbedding", [p + "qt", "cos", "sin", "position_ids"], [p + "qr"], name=p + "rope_q"),
            helper.make_node("RotaryEmbedding", [p + "kt", "cos", "sin", "position_ids"], [p + "kr"], name=p + "rope_k"),
        ]
        att_in = [p + "qr", p + "kr", p + "vt", ""]
        att_out = [p + "ctx"]
        if kv_cache:
            att_in += [f"past_key.{i}", f"past_value.{i}"]
            att_out += [f"present_key.{i}", f"present_value.{i}"]
            inputs += [helper.make_tensor_value_info(f"past_{kv}.{i}", TensorProto.FLOAT, ["batch", HEADS, "past", HEAD]) for kv in ("key", "value")]
            outputs += [helper.make_tensor_value_info(f"present_{kv}.{i}", TensorProto.FLOAT, ["batch", HEADS, "total", HEAD]) for kv in ("key", "value")]
        nodes += [
            helper.make_node("Attention", att_in, att_out, name=p + "attn", is_causal=1),
            helper.make_node("Transpose", [p + "ctx"], [p + "ctxt"], name=p + "ctx_t", perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", [p + "ctxt", "merge_shape"], [p + "merged"], name=p + "merge"),
            helper.make_node("MatMul", [p + "merged", p + "wo"], [p + "o"], name=p + "o_proj"),
            helper.make_node("Add", [h, p + "o"], [p + "r1"], name=p + "res1"),
            helper.make_node("RMSNormalization", [p + "r1", p + "ln2"], [p + "n2"], name=p + "norm2", axis=-1, epsilon=1e-6),
            helper.make_node("MatMul", [p + "n2", p + "w1"], [p + "up"], name=p + "up"),
            helper.make_node("Sigmoid", [p + "up"], [p + "sig"], name=p + "sig"),
            helper.make_node("Mul", [p + "up", p + "sig"], [p + "act"], name=p + "silu"),
            helper.make_node("MatMul", [p + "act", p + "w2"], [p + "down"], name=p + "down"),
            helper.make_node("Add", [p + "r1", p + "down"], [p + "out"], name=p + "res2"),
        ]
        h = p + "out"
    outputs.insert(0, helper.make_tensor_value_info(h, TensorProto.FLOAT, ["batch", "seq", HIDDEN]))
    graph = helper.make_graph(nodes, f"llm{opset}", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    onnx.checker.check_model(model, full_check=True)
    return model


def torch_llama(out: Path) -> Path | None:
    try:
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError:
        return None
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    cfg._attn_implementation = "sdpa"
    llama = LlamaForCausalLM(cfg).eval()

    class Logits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.llama = llama

        def forward(self, input_ids):  # type: ignore[no-untyped-def]
            return self.llama(input_ids=input_ids, use_cache=False).logits

    ids = torch.zeros((1, 16), dtype=torch.long)
    path = out / "llama_torch_opset23.onnx"
    batch, seq = torch.export.Dim("batch", min=1, max=64), torch.export.Dim("seq", min=2, max=256)
    with torch.no_grad():
        torch.onnx.export(Logits().eval(), (ids,), str(path), opset_version=23, dynamo=True, input_names=["input_ids"],
                          output_names=["logits"], dynamic_shapes=({0: batch, 1: seq},), external_data=False)
    return path


def check(path: Path, dims: dict[str, int]) -> tuple[int, int, bool, str, dict[str, int]]:
    from graphmem.model.loading import load_model

    named = load_model(path).symbolic_dims  # an exporter may fix a dim (torch: batch 1)
    dims = {d: v for d, v in dims.items() if d in named}
    a = graphmem.analyze(path, dims=dims)
    model = onnx.load(str(path))
    feeds = make_feeds(model, dims)
    if "position_ids" in feeds:
        feeds["position_ids"] = np.broadcast_to(np.arange(dims["seq"]) + dims.get("past", 0), feeds["position_ids"].shape).astype(np.int64).copy()
    measured = measure(str(path), feeds, runs=1).runs[0].requested_peak
    exact = getattr(a.activations, "exact", None)
    ops = ",".join(sorted({n.op_type for n in model.graph.node} & {"RMSNormalization", "RotaryEmbedding", "Attention", "SimplifiedLayerNormalization", "LayerNormalization"}))
    return a.activations.peak_bytes, measured, bool(exact) if exact is not None else True, ops, dims


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()
    bad = 0
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        cases: list[tuple[str, Path, list[dict[str, int]]]] = []
        for opset in (23, 24):
            for kv in (False, True):
                path = tmp / f"llm_opset{opset}{'_kv' if kv else ''}.onnx"
                onnx.save(decoder_block(opset, kv_cache=kv), str(path))
                binds = [{"batch": 1, "seq": 16}, {"batch": 4, "seq": 64}]
                if kv:
                    binds = [dict(b, past=32) for b in binds] + [{"batch": 2, "seq": 1, "past": 127}]
                cases.append((path.stem, path, binds))
        if not args.no_torch:
            path = torch_llama(tmp)
            if path is not None:
                cases.append((path.stem, path, [{"batch": 1, "seq": 16}, {"batch": 4, "seq": 64}]))
            else:
                print("torch/transformers not installed: the torch export is skipped")
        print(f"{'model':<26} {'dims':<26} {'predicted':>12} {'measured':>12}  exact  ops")
        for name, path, binds in cases:
            for dims in binds:
                predicted, measured, exact, ops, model_dims = check(path, dims)
                ok = predicted == measured
                bad += not ok
                label = ",".join(f"{k}={v}" for k, v in model_dims.items())
                print(f"{name:<26} {label:<26} {predicted:>12,} {measured:>12,}  {'yes' if exact else 'no':<5}  {ops}{'' if ok else '   OFF'}")
    print(f"\n{bad} off")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
