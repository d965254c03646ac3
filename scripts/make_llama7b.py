#!/usr/bin/env python
"""Generate a Llama-7B-shaped decoder graph with onnx.helper only (no torch, no weights).

    python scripts/make_llama7b.py [--out DIR] [--layers 32] [--dtype float32|float16]

Writes ``DIR/llama7b.onnx`` (default DIR: ``<repo>/.cache/corpus``). Shape defaults are
Llama-1/2 7B: 32 layers, hidden 4096, 32 heads (no grouped-query attention), head dim
128, MLP intermediate 11008, vocab 32000, untied lm_head: 6,738,415,616 parameters.

Graph (opset 17, ir_version 8), input ``input_ids[batch,seq]`` int64, output
``logits[batch,seq,vocab]``:

* embedding: Gather(model.embed_tokens.weight [vocab,hidden], input_ids)
* per layer: RMSNorm written out as Pow(x,2) -> ReduceMean(axis -1) -> Add(eps) -> Sqrt ->
  Div(x, .) -> Mul(weight); q/k/v projections as MatMul with [hidden,hidden] weights
  (stored [in,out], i.e. transposed compared with a torch Linear), Reshape to
  [batch,seq,heads,head_dim], Transpose to [batch,heads,seq,head_dim]; rotary embedding
  (cos/sin computed in-graph from Range(seq) and a small inv_freq Constant; rotate_half
  as Split/Neg/Concat) on q and k; scores = MatMul(q, Transpose(k)) * 1/sqrt(head_dim) +
  causal mask (ConstantOfShape + Trilu) -> Softmax -> MatMul(v) -> Transpose -> Reshape ->
  o_proj MatMul -> residual Add; post-attention RMSNorm; SiLU MLP: MatMul gate and up
  [hidden,inter], gate * Sigmoid(gate) * up, MatMul down [inter,hidden], residual Add.
* final RMSNorm, lm_head MatMul [hidden,vocab].

Every weight is a graph initializer with no data in the file: ``data_location=EXTERNAL``
and ``external_data`` entries ``location=llama7b.weights``, ``offset``, ``length``
(offsets consecutive, each aligned to 4096 bytes). ``llama7b.weights`` is NOT written, so
load the model with ``onnx.load(path, load_external_data=False)``. The small constants
(eps, shapes, inv_freq, ...) are Constant nodes with inline data.

For testing the graph numerically, ``--write-weights`` writes the weights file with
random data (only sensible for small shapes, e.g. ``--layers 2 --hidden 64 --heads 4
--intermediate 128 --vocab 100``); onnxruntime can then run the model.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, ".cache", "corpus")
WEIGHTS_FILE = "llama7b.weights"
ALIGN = 4096

DTYPES = {"float32": (np.float32, TensorProto.FLOAT), "float16": (np.float16, TensorProto.FLOAT16)}


class Builder:
    def __init__(self, np_dtype, onnx_dtype, location: str):
        self.np_dtype = np.dtype(np_dtype)
        self.onnx_dtype = onnx_dtype
        self.location = location
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.offset = 0
        self.n_params = 0
        self._counter = 0

    # -- weights -------------------------------------------------------------
    def weight(self, name: str, shape: tuple[int, ...]) -> str:
        t = TensorProto()
        t.name = name
        t.data_type = self.onnx_dtype
        t.dims.extend(shape)
        length = int(np.prod(shape)) * self.np_dtype.itemsize
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", self.location), ("offset", self.offset), ("length", length)):
            e = t.external_data.add()
            e.key, e.value = k, str(v)
        self.offset += (length + ALIGN - 1) // ALIGN * ALIGN
        self.n_params += int(np.prod(shape))
        self.initializers.append(t)
        return name

    # -- nodes ---------------------------------------------------------------
    def op(self, op_type: str, inputs: list[str], name: str, n_out: int = 1, **attrs) -> str | list[str]:
        outs = [f"{name}_out{i}" if n_out > 1 else f"{name}_out" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name, **attrs))
        return outs if n_out > 1 else outs[0]

    def const(self, name: str, value: np.ndarray) -> str:
        self.nodes.append(
            helper.make_node("Constant", [], [name], name=name, value=numpy_helper.from_array(value, name + "_value"))
        )
        return name

    def scalar(self, name: str, value: float) -> str:
        return self.const(name, np.array(value, dtype=self.np_dtype))


def rms_norm(b: Builder, x: str, weight: str, eps: str, two: str, prefix: str) -> str:
    sq = b.op("Pow", [x, two], f"{prefix}/Pow")
    mean = b.op("ReduceMean", [sq], f"{prefix}/ReduceMean", axes=[-1], keepdims=1)
    var = b.op("Add", [mean, eps], f"{prefix}/Add")
    std = b.op("Sqrt", [var], f"{prefix}/Sqrt")
    normed = b.op("Div", [x, std], f"{prefix}/Div")
    return b.op("Mul", [normed, weight], f"{prefix}/Mul")


def rotary(b: Builder, x: str, cos: str, sin: str, half: str, prefix: str) -> str:
    x1, x2 = b.op("Split", [x, half], f"{prefix}/Split", n_out=2, axis=-1)
    neg = b.op("Neg", [x2], f"{prefix}/Neg")
    rot = b.op("Concat", [neg, x1], f"{prefix}/Concat", axis=-1)
    a = b.op("Mul", [x, cos], f"{prefix}/MulCos")
    c = b.op("Mul", [rot, sin], f"{prefix}/MulSin")
    return b.op("Add", [a, c], f"{prefix}/Add")


def build(
    layers: int = 32,
    hidden: int = 4096,
    heads: int = 32,
    intermediate: int = 11008,
    vocab: int = 32000,
    dtype: str = "float32",
    rope_theta: float = 10000.0,
    eps_value: float = 1e-5,
    location: str = WEIGHTS_FILE,
) -> tuple[onnx.ModelProto, int, int]:
    """Returns (model, parameter count, bytes of external data referenced)."""
    if hidden % heads:
        raise ValueError("hidden must be divisible by heads")
    head_dim = hidden // heads
    if head_dim % 2:
        raise ValueError("head_dim must be even for rotary embedding")
    np_dtype, onnx_dtype = DTYPES[dtype]
    b = Builder(np_dtype, onnx_dtype, location)

    # shared constants
    eps = b.scalar("const/rms_eps", eps_value)
    two = b.scalar("const/two", 2.0)
    scale = b.scalar("const/attn_scale", 1.0 / np.sqrt(head_dim))
    split_shape = b.const("const/heads_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_shape = b.const("const/merge_shape", np.array([0, 0, hidden], dtype=np.int64))
    half = b.const("const/rotary_half", np.array([head_dim // 2, head_dim // 2], dtype=np.int64))
    inv_freq = (1.0 / rope_theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)).astype(np.float32)
    inv_freq_c = b.const("const/inv_freq", inv_freq.reshape(1, -1))
    zero = b.const("const/zero", np.array(0, dtype=np.int64))
    one = b.const("const/one", np.array(1, dtype=np.int64))
    one_1d = b.const("const/axis1", np.array([1], dtype=np.int64))

    # sequence length, rotary tables [seq, head_dim], causal mask [seq, seq]
    ids_shape = b.op("Shape", ["input_ids"], "seq/Shape")
    seq = b.op("Gather", [ids_shape, one], "seq/Gather", axis=0)
    positions = b.op("Range", [zero, seq, one], "rotary/Range")
    pos_f = b.op("Cast", [positions], "rotary/Cast", to=TensorProto.FLOAT)
    pos_col = b.op("Unsqueeze", [pos_f, one_1d], "rotary/Unsqueeze")
    freqs = b.op("Mul", [pos_col, inv_freq_c], "rotary/Mul")
    emb = b.op("Concat", [freqs, freqs], "rotary/Concat", axis=-1)
    cos = b.op("Cos", [emb], "rotary/Cos")
    sin = b.op("Sin", [emb], "rotary/Sin")
    if onnx_dtype != TensorProto.FLOAT:
        cos = b.op("Cast", [cos], "rotary/CastCos", to=onnx_dtype)
        sin = b.op("Cast", [sin], "rotary/CastSin", to=onnx_dtype)
    seq_1d = b.op("Reshape", [seq, one_1d], "mask/SeqTo1D")
    mask_shape = b.op("Concat", [seq_1d, seq_1d], "mask/Concat", axis=0)
    min_val = numpy_helper.from_array(np.array([np.finfo(np_dtype).min], dtype=np_dtype), "mask_fill")
    filled = b.op("ConstantOfShape", [mask_shape], "mask/ConstantOfShape", value=min_val)
    causal = b.op("Trilu", [filled, one], "mask/Trilu", upper=1)  # strictly-upper part = min, rest 0

    x = b.op("Gather", [b.weight("model.embed_tokens.weight", (vocab, hidden)), "input_ids"], "embed/Gather", axis=0)

    for i in range(layers):
        p = f"model.layers.{i}"
        h = rms_norm(b, x, b.weight(f"{p}.input_layernorm.weight", (hidden,)), eps, two, f"/{p}/input_layernorm")
        qkv = []
        for proj in ("q", "k", "v"):
            w = b.weight(f"{p}.self_attn.{proj}_proj.weight", (hidden, hidden))
            t = b.op("MatMul", [h, w], f"/{p}/self_attn/{proj}_proj/MatMul")
            t = b.op("Reshape", [t, split_shape], f"/{p}/self_attn/{proj}/Reshape")
            t = b.op("Transpose", [t], f"/{p}/self_attn/{proj}/Transpose", perm=[0, 2, 1, 3])
            qkv.append(t)
        q, k, v = qkv
        q = rotary(b, q, cos, sin, half, f"/{p}/self_attn/rotary_q")
        k = rotary(b, k, cos, sin, half, f"/{p}/self_attn/rotary_k")
        kt = b.op("Transpose", [k], f"/{p}/self_attn/k/TransposeT", perm=[0, 1, 3, 2])
        scores = b.op("MatMul", [q, kt], f"/{p}/self_attn/MatMul_qk")
        scores = b.op("Mul", [scores, scale], f"/{p}/self_attn/Scale")
        scores = b.op("Add", [scores, causal], f"/{p}/self_attn/AddMask")
        probs = b.op("Softmax", [scores], f"/{p}/self_attn/Softmax", axis=-1)
        ctx = b.op("MatMul", [probs, v], f"/{p}/self_attn/MatMul_pv")
        ctx = b.op("Transpose", [ctx], f"/{p}/self_attn/ctx/Transpose", perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", [ctx, merge_shape], f"/{p}/self_attn/ctx/Reshape")
        o = b.op("MatMul", [ctx, b.weight(f"{p}.self_attn.o_proj.weight", (hidden, hidden))],
                 f"/{p}/self_attn/o_proj/MatMul")
        x = b.op("Add", [x, o], f"/{p}/AddAttn")

        h = rms_norm(b, x, b.weight(f"{p}.post_attention_layernorm.weight", (hidden,)), eps, two,
                     f"/{p}/post_attention_layernorm")
        gate = b.op("MatMul", [h, b.weight(f"{p}.mlp.gate_proj.weight", (hidden, intermediate))],
                    f"/{p}/mlp/gate_proj/MatMul")
        up = b.op("MatMul", [h, b.weight(f"{p}.mlp.up_proj.weight", (hidden, intermediate))],
                  f"/{p}/mlp/up_proj/MatMul")
        sig = b.op("Sigmoid", [gate], f"/{p}/mlp/act/Sigmoid")
        act = b.op("Mul", [gate, sig], f"/{p}/mlp/act/Mul")
        prod = b.op("Mul", [act, up], f"/{p}/mlp/Mul")
        down = b.op("MatMul", [prod, b.weight(f"{p}.mlp.down_proj.weight", (intermediate, hidden))],
                    f"/{p}/mlp/down_proj/MatMul")
        x = b.op("Add", [x, down], f"/{p}/AddMLP")

    x = rms_norm(b, x, b.weight("model.norm.weight", (hidden,)), eps, two, "/model/norm")
    logits = b.op("MatMul", [x, b.weight("lm_head.weight", (hidden, vocab))], "/lm_head/MatMul")
    b.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="/logits/Identity"))

    graph = helper.make_graph(
        b.nodes,
        "llama7b",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", onnx_dtype, ["batch", "seq", vocab])],
        initializer=b.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name="graphmem/scripts/make_llama7b.py",
        ir_version=8,
        doc_string=(
            f"Llama-7B-shaped decoder: layers={layers} hidden={hidden} heads={heads} "
            f"intermediate={intermediate} vocab={vocab} dtype={dtype}. Weights are external "
            f"references into {location}, which is not shipped."
        ),
    )
    return model, b.n_params, b.offset


def write_random_weights(model: onnx.ModelProto, out_dir: str, seed: int = 0) -> str:
    """Fill the external-data file with random values (for small test configs)."""
    rng = np.random.default_rng(seed)
    path = None
    for t in model.graph.initializer:
        info = {e.key: e.value for e in t.external_data}
        path = os.path.join(out_dir, info["location"])
        np_dtype = onnx.helper.tensor_dtype_to_np_dtype(t.data_type)
        if t.name.endswith("layernorm.weight") or t.name.endswith("norm.weight"):
            data = 1.0 + 0.1 * rng.standard_normal(tuple(t.dims))
        else:
            data = rng.standard_normal(tuple(t.dims)) / np.sqrt(t.dims[0])
        raw = data.astype(np_dtype).tobytes()
        assert len(raw) == int(info["length"])
        mode = "r+b" if os.path.exists(path) and int(info["offset"]) > 0 else "wb"
        with open(path, mode) as f:
            f.seek(int(info["offset"]))
            f.write(raw)
    return path


def _weights_as_inputs(model: onnx.ModelProto) -> onnx.ModelProto:
    """Copy with each initializer turned into a graph input of the same type/shape.

    onnx.checker insists that external data files exist; this lets it check the node
    graph (op schemas, types, full shape inference) without the weights file.
    """
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inputs = [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in m.graph.initializer]
    del m.graph.initializer[:]
    m.graph.input.extend(inputs)
    return m


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="write a Llama-7B-shaped ONNX graph with external weight references")
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--intermediate", type=int, default=11008)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    ap.add_argument("--name", default="llama7b.onnx", help="file name inside --out")
    ap.add_argument("--write-weights", action="store_true",
                    help="also write random weights (small test shapes only)")
    args = ap.parse_args(argv)

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, args.name)
    t0 = time.perf_counter()
    model, n_params, n_bytes = build(args.layers, args.hidden, args.heads, args.intermediate, args.vocab, args.dtype)
    onnx.save(model, path)  # no tensor has raw_data, so nothing external is written
    t_build = time.perf_counter() - t0

    # self-check: quick load without external data, checker on the proto, strict shape inference
    t0 = time.perf_counter()
    loaded = onnx.load(path, load_external_data=False)
    t_load = time.perf_counter() - t0
    onnx.checker.check_model(_weights_as_inputs(loaded), full_check=True)
    inferred = onnx.shape_inference.infer_shapes(loaded, check_type=True, strict_mode=True, data_prop=True)
    out_dims = [d.dim_param or d.dim_value for d in inferred.graph.output[0].type.tensor_type.shape.dim]
    print(
        f"{args.name}: {n_params:,} params ({n_params / 1e9:.3f}e9), {args.layers} layers, "
        f"{len(loaded.graph.node)} nodes, {len(loaded.graph.initializer)} external initializers "
        f"({n_bytes / 2**30:.2f} GiB referenced in {WEIGHTS_FILE}, {args.dtype}) | "
        f"file {os.path.getsize(path) / 1024:.1f} KiB | build+save {t_build:.2f} s, "
        f"load {t_load * 1000:.0f} ms | shape inference ok, logits {out_dims}"
    )
    if args.write_weights:
        wpath = write_random_weights(model, args.out)
        print(f"wrote random weights to {wpath} ({os.path.getsize(wpath)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
