#!/usr/bin/env python
"""Export the full-size benchmark corpus (random weights) to ONNX.

    python scripts/export_corpus.py [--out DIR] [--only NAME ...] [--training]

Models (all fp32, random weights from fixed seeds, eval mode, opset 17, exported with
the TorchScript exporter ``torch.onnx.export(..., dynamo=False)``; every input and
output has a dynamic first axis named ``batch``):

* ``resnet50.onnx``    torchvision-equivalent ResNet-50 written in scripts/_torch_models.py
                       (torchvision itself cannot be installed beside torch 2.13);
                       input ``input[batch,3,224,224]``, output ``logits[batch,1000]``.
                       The exporter folds each BatchNorm into the preceding Conv.
* ``mobilenetv2.onnx`` torchvision-equivalent MobileNetV2 (width 1.0, 224), same way.
* ``bert_base.onnx``   transformers BertModel(BertConfig()) (base: 12 layers, hidden 768),
                       eager attention; inputs ``input_ids``/``attention_mask[batch,seq]``
                       int64, outputs ``last_hidden_state[batch,seq,768]`` and
                       ``pooler_output[batch,768]``; dynamic ``batch`` and ``seq``.
* ``gpt2_small.onnx``  transformers GPT2Model(GPT2Config()) (124M), eager attention, no
                       past key values; input ``input_ids[batch,seq]``, output
                       ``last_hidden_state[batch,seq,768]``; weights inline (~475 MiB, one file).

Default DIR is ``<repo>/.cache/corpus`` (``.cache/`` is git-ignored). With
``--training`` the models are exported instead with
``training=TrainingMode.TRAINING, do_constant_folding=False`` into ``DIR/train/``
(BatchNormalization keeps ``training_mode=1``, Dropout stays in the graph).

Each file is checked after export: onnx.load, onnx.checker.check_model(path),
only standard-domain ops, onnxruntime CPUExecutionProvider at batch 1 and 8
(seq 128 for BERT/GPT-2), and (eval mode) agreement with the torch model. One line is
printed per model.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch

sys.dont_write_bytecode = True  # no scripts/__pycache__ from importing _torch_models
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _torch_models as tm  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, ".cache", "corpus")

SPECS = {
    "resnet50": tm.ModelSpec(
        name="resnet50",
        build=tm.ResNet50,
        make_inputs=tm.image_inputs("input", 3, 224, 224),
        output_names=["logits"],
        dynamic_axes=tm.batch_axes(["input", "logits"]),
        calibrate=(2, 8),
    ),
    "mobilenetv2": tm.ModelSpec(
        name="mobilenetv2",
        build=tm.MobileNetV2,
        make_inputs=tm.image_inputs("input", 3, 224, 224),
        output_names=["logits"],
        dynamic_axes=tm.batch_axes(["input", "logits"]),
        calibrate=(2, 8),
    ),
    "bert_base": tm.ModelSpec(
        name="bert_base",
        build=tm.build_bert,
        make_inputs=tm.token_inputs(30522, with_mask=True),
        output_names=["last_hidden_state", "pooler_output"],
        dynamic_axes={
            **tm.batch_axes(["input_ids", "attention_mask", "last_hidden_state"], {1: "seq"}),
            "pooler_output": {0: "batch"},
        },
        seq=128,
    ),
    "gpt2_small": tm.ModelSpec(
        name="gpt2_small",
        build=tm.build_gpt2,
        make_inputs=tm.token_inputs(50257, with_mask=False),
        output_names=["last_hidden_state"],
        dynamic_axes=tm.batch_axes(["input_ids", "last_hidden_state"], {1: "seq"}),
        seq=128,
    ),
}

# Shapes used for tracing: batch 2 (not 1, so nothing gets specialised to a
# broadcastable 1) and a short sequence.
TRACE_BATCH, TRACE_SEQ = 2, 16


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    ap.add_argument("--only", nargs="+", choices=sorted(SPECS), metavar="NAME",
                    help=f"export only these ({', '.join(SPECS)})")
    ap.add_argument("--training", action="store_true",
                    help="export in TrainingMode.TRAINING without constant folding, into OUT/train/")
    args = ap.parse_args(argv)

    torch.set_num_threads(min(2, os.cpu_count() or 1))
    out_dir = os.path.join(args.out, "train") if args.training else args.out
    os.makedirs(out_dir, exist_ok=True)
    names = args.only or list(SPECS)
    print(f"torch {torch.__version__}, TorchScript exporter (dynamo=False), opset {tm.OPSET}, "
          f"{'TRAINING' if args.training else 'EVAL'} mode -> {out_dir}")
    failed = []
    for name in names:
        spec = SPECS[name]
        path = os.path.join(out_dir, f"{name}.onnx")
        try:
            model = tm.build_model(spec)
            feeds = spec.make_inputs(TRACE_BATCH, TRACE_SEQ if spec.seq else 0, np.random.default_rng(0))
            t0 = time.perf_counter()
            tm.export_onnx(model, feeds, path, spec.output_names, spec.dynamic_axes, training=args.training)
            t_export = time.perf_counter() - t0
            # In training mode Dropout is random and BatchNorm uses batch statistics,
            # so only eval-mode exports are compared against torch.
            reference = None if args.training else model.eval()
            line = tm.verify_onnx(path, spec, reference=reference)
            print(f"{line} | {tm.count_params(model) / 1e6:.2f}M params | export {t_export:.1f} s", flush=True)
        except Exception as e:  # keep going, report at the end
            failed.append(name)
            print(f"{name:<14} FAILED: {type(e).__name__}: {e}", flush=True)
    if failed:
        print(f"failed: {' '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
