#!/usr/bin/env python
"""Write the models of issue 14's accuracy bars: inputs as users have them.

    python scripts/make_input_models.py [--out DIR] [--only odd,rnn,optimum,genai]

(default DIR: ``$GRAPHMEM_INPUTS`` or ``.cache/inputs``). Random weights everywhere, fixed
seeds; nothing is downloaded. Parts:

* ``odd`` (torch + onnx, this interpreter): files whose input dims are not the clean named dims
  graphmem binds with ``--dim``:
  ``odd/ocr_cls.onnx``  a small CNN classifier whose input is declared ``[-1, 3, ?, ?]``
                        (``dim_value -1`` for the batch, one name ``?`` for both height and
                        width, as paddle2onnx writes them); output ``[-1, 2]``.
  ``odd/bert_neg1.onnx`` ``models/tiny_bert.onnx`` with every input and output dim that was
                        symbolic rewritten to ``-1`` and its value_info dropped.
  ``odd/vad_unnamed.onnx`` onnx.helper: a VAD-like model whose ``input`` and ``state`` dims have
                        neither value nor name (silero's layout) and an int64 scalar ``sr``:
                        frames of ``sr / 250`` samples (Reshape by a computed shape), a
                        projection, Relu, an LSTM over the frames fed from ``state``, a Gemm
                        on the mean and a Sigmoid. Runs only at ``sr`` 16000 (64-sample frames).
* ``rnn`` (torch): ``rnn/{gru,lstm}_{uni,bi}_cls.onnx`` (2-layer GRU/LSTM over ``[batch, seq,
  40]`` features, batch_first, the last step through a Linear: Gemm) and
  ``rnn/{gru,lstm}_enc.onnx`` (the 2-layer unidirectional encoder alone, all steps out).
* ``optimum`` (run with ``$GRAPHMEM_OPTIMUM_PYTHON``, default ``.cache/venvs/optimum/bin/python``:
  torch, transformers < 4.58, optimum-onnx): ``optimum/{gpt2,llama}/model.onnx``, optimum's
  ``text-generation-with-past`` export of a small GPT-2 and Llama built from configs.
* ``genai`` (run with ``$GRAPHMEM_GENAI_PYTHON``, default ``.cache/venvs/genai/bin/python``:
  torch, transformers 5, onnxruntime-genai, which brings plain onnxruntime — keep it out of
  graphmem's environment): ``genai/{llama,qwen2}/model.onnx`` + ``genai_config.json``, the
  onnxruntime-genai builder's fp32 CPU export (GroupQueryAttention, past_present_share_buffer).

A part whose interpreter or packages are missing is skipped with a message. Every model written
is checked by onnx.checker (genai's only loaded: it uses contrib ops in the default
domain); one line per model.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = Path(os.environ.get("GRAPHMEM_INPUTS", str(Path(__file__).resolve().parents[1] / ".cache" / "inputs")))
OPTIMUM_PYTHON = os.environ.get("GRAPHMEM_OPTIMUM_PYTHON", str(Path(__file__).resolve().parents[1] / ".cache" / "venvs" / "optimum/bin/python"))
GENAI_PYTHON = os.environ.get("GRAPHMEM_GENAI_PYTHON", str(Path(__file__).resolve().parents[1] / ".cache" / "venvs" / "genai/bin/python"))
PARTS = ("odd", "rnn", "optimum", "genai")

# The decoders: small, but with head sizes the genai kernels accept (multiple of 16).
DECODER = dict(vocab=1000, hidden=128, layers=2, heads=4, kv_heads=2, intermediate=256, positions=2048)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--only", default=",".join(PARTS), help="comma-separated parts: " + ",".join(PARTS))
    ap.add_argument("--in-venv", choices=("optimum", "genai"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    out = args.out.resolve()
    if args.in_venv == "optimum":
        return _optimum(out)
    if args.in_venv == "genai":
        return _genai(out)
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        ap.error(f"unknown part(s): {', '.join(unknown)}")
    status = 0
    for part in parts:
        if part == "odd":
            status |= _odd(out / "odd")
        elif part == "rnn":
            status |= _rnn(out / "rnn")
        else:
            python = OPTIMUM_PYTHON if part == "optimum" else GENAI_PYTHON
            if not Path(python).exists():
                print(f"{part}: skipped, no interpreter at {python} (see the docstring)")
                continue
            done = subprocess.run([python, __file__, "--out", str(out), "--in-venv", part])
            status |= done.returncode != 0
    return status


# --------------------------------------------------------------------------- odd input dims
def _odd(out: Path) -> int:
    import onnx

    out.mkdir(parents=True, exist_ok=True)
    _ocr_cls(out / "ocr_cls.onnx")
    _bert_neg1(REPO / "models" / "tiny_bert.onnx", out / "bert_neg1.onnx")
    _vad_unnamed(out / "vad_unnamed.onnx")
    for name in ("ocr_cls", "bert_neg1", "vad_unnamed"):
        path = out / f"{name}.onnx"
        onnx.checker.check_model(str(path))
        print(f"odd/{name}.onnx  inputs {_io_dims(path)}")
    return 0


def _io_dims(path: Path) -> str:
    import onnx

    m = onnx.load(str(path), load_external_data=False)

    def dims(v):  # type: ignore[no-untyped-def]
        return "[" + ",".join(
            str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "·") for d in v.type.tensor_type.shape.dim
        ) + "]"

    return " ".join(f"{v.name}{dims(v)}" for v in m.graph.input)


def _set_dims(value, dims) -> None:  # type: ignore[no-untyped-def]
    """Rewrite a ValueInfo's dims: an int is a dim_value (-1 included), a str a dim_param,
    None a dim with neither."""
    shape = value.type.tensor_type.shape
    del shape.dim[:]
    for d in dims:
        dim = shape.dim.add()
        if isinstance(d, int):
            dim.dim_value = d
        elif isinstance(d, str):
            dim.dim_param = d


def _ocr_cls(path: Path) -> None:
    import onnx
    import torch
    from torch import nn

    sys.path.insert(0, str(REPO / "scripts"))
    from _torch_models import export_onnx

    torch.manual_seed(0)

    def block(cin: int, cout: int, stride: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

    model = nn.Sequential(
        block(3, 16, 2), block(16, 32, 2), block(32, 64, 2), block(64, 64, 1),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 2), nn.Softmax(dim=1),
    ).eval()
    import numpy as np

    feeds = {"x": np.random.default_rng(0).standard_normal((2, 3, 48, 192)).astype(np.float32)}
    export_onnx(model, feeds, str(path), ["probs"], {"x": {0: "N", 2: "H", 3: "W"}, "probs": {0: "N"}})
    m = onnx.load(str(path))
    _set_dims(m.graph.input[0], [-1, 3, "?", "?"])
    _set_dims(m.graph.output[0], [-1, 2])
    del m.graph.value_info[:]
    onnx.save(m, str(path))


def _bert_neg1(src: Path, path: Path) -> None:
    import onnx

    m = onnx.load(str(src))
    for v in list(m.graph.input) + list(m.graph.output):
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in v.type.tensor_type.shape.dim]
        _set_dims(v, dims)
    del m.graph.value_info[:]
    onnx.save(m, str(path))


def _vad_unnamed(path: Path) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    frame, proj, hidden = 64, 32, 32

    def w(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32), name)

    def i64(name: str, *values: int) -> onnx.TensorProto:
        return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

    inits = [
        w("proj_w", frame, proj), w("proj_b", proj),
        w("lstm_w", 1, 4 * hidden, proj), w("lstm_r", 1, 4 * hidden, hidden), w("lstm_b", 1, 8 * hidden),
        w("head_w", hidden, 1), w("head_b", 1),
        i64("c0", 0), i64("c1", 1), i64("cm1", -1), i64("ax0", 0),
        numpy_helper.from_array(np.array(0, dtype=np.int64), "idx0"),
        numpy_helper.from_array(np.array(250, dtype=np.int64), "c250"),
    ]
    nodes = [
        # frames of sr / 250 samples: [batch, samples] -> [batch, frames, sr/250]
        helper.make_node("Div", ["sr", "c250"], ["frame"]),
        helper.make_node("Unsqueeze", ["frame", "ax0"], ["frame1"]),
        helper.make_node("Shape", ["input"], ["in_shape"]),
        helper.make_node("Gather", ["in_shape", "idx0"], ["batch0"], axis=0),
        helper.make_node("Unsqueeze", ["batch0", "ax0"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "cm1", "frame1"], ["frames_shape"], axis=0),
        helper.make_node("Reshape", ["input", "frames_shape"], ["frames"]),
        helper.make_node("MatMul", ["frames", "proj_w"], ["proj_mm"]),
        helper.make_node("Add", ["proj_mm", "proj_b"], ["proj_add"]),
        helper.make_node("Relu", ["proj_add"], ["proj_relu"]),
        helper.make_node("Transpose", ["proj_relu"], ["seq_first"], perm=[1, 0, 2]),
        helper.make_node("Split", ["state"], ["h0", "c0_state"], axis=0, num_outputs=2),
        helper.make_node(
            "LSTM", ["seq_first", "lstm_w", "lstm_r", "lstm_b", "", "h0", "c0_state"], ["lstm_y", "lstm_h", "lstm_c"],
            hidden_size=hidden,
        ),
        helper.make_node("Concat", ["lstm_h", "lstm_c"], ["stateN"], axis=0),
        helper.make_node("Squeeze", ["lstm_y", "c1"], ["lstm_y3"]),
        helper.make_node("ReduceMean", ["lstm_y3", "c0"], ["pooled"], keepdims=0),
        helper.make_node("Gemm", ["pooled", "head_w", "head_b"], ["logit"]),
        helper.make_node("Sigmoid", ["logit"], ["output"]),
    ]
    unnamed = helper.make_tensor_value_info("input", TensorProto.FLOAT, [None, None])
    _set_dims(unnamed, [None, None])
    state = helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, None, hidden])
    _set_dims(state, [2, None, hidden])
    sr = helper.make_tensor_value_info("sr", TensorProto.INT64, [])
    output = helper.make_tensor_value_info("output", TensorProto.FLOAT, [None, 1])
    _set_dims(output, [None, 1])
    state_n = helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, None, hidden])
    _set_dims(state_n, [2, None, hidden])
    graph = helper.make_graph(nodes, "vad_unnamed", [unnamed, state, sr], [output, state_n], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], producer_name="make_input_models")
    model.ir_version = 8
    onnx.save(model, str(path))


# --------------------------------------------------------------------------- GRU / LSTM
def _rnn(out: Path) -> int:
    import numpy as np
    import onnx
    import torch
    from torch import nn

    sys.path.insert(0, str(REPO / "scripts"))
    from _torch_models import export_onnx

    class Classifier(nn.Module):
        def __init__(self, cell: type[nn.Module], bidirectional: bool) -> None:
            super().__init__()
            self.rnn = cell(40, 64, num_layers=2, batch_first=True, bidirectional=bidirectional)
            self.fc = nn.Linear(128 if bidirectional else 64, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y, _ = self.rnn(x)
            return self.fc(y[:, -1])

    class Encoder(nn.Module):
        def __init__(self, cell: type[nn.Module]) -> None:
            super().__init__()
            self.rnn = cell(40, 64, num_layers=2, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.rnn(x)[0]

    out.mkdir(parents=True, exist_ok=True)
    feeds = {"features": np.random.default_rng(0).standard_normal((2, 16, 40)).astype(np.float32)}
    axes = {"features": {0: "batch", 1: "seq"}}
    for cell_name, cell in (("gru", nn.GRU), ("lstm", nn.LSTM)):
        for variant in ("uni_cls", "bi_cls", "enc"):
            torch.manual_seed(0)
            model = Encoder(cell) if variant == "enc" else Classifier(cell, variant == "bi_cls")
            path = out / f"{cell_name}_{variant}.onnx"
            name = "hidden" if variant == "enc" else "logits"
            out_axes = {0: "batch", 1: "seq"} if variant == "enc" else {0: "batch"}
            export_onnx(model.eval(), feeds, str(path), [name], {**axes, name: out_axes})
            onnx.checker.check_model(str(path))
            ops = sorted({n.op_type for n in onnx.load(str(path)).graph.node} & {"GRU", "LSTM", "Gemm"})
            print(f"rnn/{path.name}  {'+'.join(ops)}  inputs {_io_dims(path)}")
    return 0


# --------------------------------------------------------------------------- decoders
def _hf_folder(folder: Path, arch: str) -> None:
    """A transformers model folder (config, random weights, a word-level tokenizer) from a config."""
    import torch
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    d = DECODER
    torch.manual_seed(0)
    if arch == "gpt2":
        cfg = transformers.GPT2Config(
            vocab_size=d["vocab"], n_embd=d["hidden"], n_layer=d["layers"], n_head=d["heads"], n_positions=d["positions"]
        )
        model = transformers.GPT2LMHeadModel(cfg)
    else:
        cls = {"llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
               "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM)}[arch]
        cfg = cls[0](
            vocab_size=d["vocab"], hidden_size=d["hidden"], intermediate_size=d["intermediate"],
            num_hidden_layers=d["layers"], num_attention_heads=d["heads"], num_key_value_heads=d["kv_heads"],
            max_position_embeddings=d["positions"], tie_word_embeddings=False,
        )
        model = cls[1](cfg)
    model.save_pretrained(str(folder))
    vocab = {f"t{i}": i for i in range(d["vocab"])}
    vocab["<unk>"] = 0
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="t1", eos_token="t2", pad_token="t3"
    )
    fast.save_pretrained(str(folder))


def _optimum(out: Path) -> int:
    import tempfile

    import onnx
    from optimum.exporters.onnx import main_export

    for arch in ("gpt2", "llama"):
        target = out / "optimum" / arch
        with tempfile.TemporaryDirectory(prefix="graphmem-hf-") as tmp:
            _hf_folder(Path(tmp), arch)
            main_export(tmp, output=str(target), task="text-generation-with-past", no_post_process=False)
        onnx.checker.check_model(str(target / "model.onnx"))
        print(f"optimum/{arch}/model.onnx  inputs {_io_dims(target / 'model.onnx')}")
    return 0


def _genai(out: Path) -> int:
    import tempfile

    import onnx

    for arch in ("llama", "qwen2"):
        target = out / "genai" / arch
        with tempfile.TemporaryDirectory(prefix="graphmem-hf-") as tmp, \
                tempfile.TemporaryDirectory(prefix="graphmem-genai-cache-") as cache:
            _hf_folder(Path(tmp), arch)
            cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", tmp, "-o", str(target),
                   "-p", "fp32", "-e", "cpu", "-c", cache]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode:
                print(done.stderr[-2000:])
                return 1
        onnx.load(str(target / "model.onnx"), load_external_data=False)  # the checker rejects its contrib ops
        print(f"genai/{arch}/model.onnx  inputs {_io_dims(target / 'model.onnx')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
