#!/usr/bin/env python
"""Export the full-size benchmark corpus (random weights) to ONNX.

    python scripts/export_corpus.py [--out DIR] [--all | --only NAME ...] [--training]

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

With ``--all`` the seven other inference architectures of scripts/train_check.py's ``specs()``
are exported too (eleven in all), the same way (eval mode, opset 17, dynamic ``batch``):

* ``resnet18.onnx``        torchvision-equivalent ResNet-18 (train_check.ResNet18), BatchNorm
                           calibrated like ResNet-50's; ``input[batch,3,224,224]`` -> ``logits``.
* ``unet.onnx``            TinyUNet(cin=1, cout=1, c=16); ``input[batch,1,128,128]`` -> ``mask``.
* ``lstm.onnx``            TinyLSTM(vocab 10000, emb 128, hidden 256, 4 classes), bidirectional;
                           ``input_ids[batch,seq]`` int64 (checked at seq 64) -> ``logits[batch,4]``.
* ``efficientnet_b0.onnx`` torchvision-equivalent EfficientNet-B0 (no stochastic depth).
* ``convnext_tiny.onnx``   torchvision-equivalent ConvNeXt-Tiny (no stochastic depth).
* ``alexnet.onnx``         torchvision-equivalent AlexNet.
* ``vit_b16.onnx``         transformers ViTModel(ViTConfig()) without pooler, eager attention;
                           ``pixel_values[batch,3,224,224]`` -> ``last_hidden_state[batch,197,768]``.

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



def _resnet18():  # type: ignore[no-untyped-def]
    import train_check  # the class lives there (the training check introduced it)

    return train_check.ResNet18()


_IMAGE = tm.image_inputs("input", 3, 224, 224)
_CNN = dict(make_inputs=_IMAGE, output_names=["logits"], dynamic_axes=tm.batch_axes(["input", "logits"]))

#: The other inference architectures of scripts/train_check.py's ``specs()`` (``--all``).
EXTRA_SPECS = {
    "resnet18": tm.ModelSpec(name="resnet18", build=_resnet18, calibrate=(2, 8), **_CNN),
    "unet": tm.ModelSpec(
        name="unet",
        build=lambda: tm.TinyUNet(cin=1, cout=1, c=16),
        make_inputs=tm.image_inputs("input", 1, 128, 128),
        output_names=["mask"],
        dynamic_axes=tm.batch_axes(["input", "mask"]),
    ),
    "lstm": tm.ModelSpec(
        name="lstm",
        build=lambda: tm.TinyLSTM(vocab=10000, emb=128, hidden=256, num_classes=4),
        make_inputs=tm.token_inputs(10000, with_mask=False),
        output_names=["logits"],
        dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch"}},
        seq=64,
    ),
    "efficientnet_b0": tm.ModelSpec(name="efficientnet_b0", build=tm.EfficientNetB0, calibrate=(2, 8), **_CNN),
    "convnext_tiny": tm.ModelSpec(name="convnext_tiny", build=tm.ConvNeXtTiny, **_CNN),
    "alexnet": tm.ModelSpec(name="alexnet", build=tm.AlexNet, **_CNN),
    "vit_b16": tm.ModelSpec(
        name="vit_b16",
        build=tm.build_vit,
        make_inputs=tm.image_inputs("pixel_values", 3, 224, 224),
        output_names=["last_hidden_state"],
        dynamic_axes=tm.batch_axes(["pixel_values", "last_hidden_state"]),
    ),
}
ALL_SPECS = {**SPECS, **EXTRA_SPECS}

# Shapes used for tracing: batch 2 (not 1, so nothing gets specialised to a
# broadcastable 1) and a short sequence.
TRACE_BATCH, TRACE_SEQ = 2, 16


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--only", nargs="+", choices=sorted(ALL_SPECS), metavar="NAME",
                       help=f"export only these ({', '.join(ALL_SPECS)})")
    which.add_argument("--all", action="store_true",
                       help=f"export all eleven ({', '.join(ALL_SPECS)}); default: {', '.join(SPECS)}")
    ap.add_argument("--training", action="store_true",
                    help="export in TrainingMode.TRAINING without constant folding, into OUT/train/")
    args = ap.parse_args(argv)

    torch.set_num_threads(min(2, os.cpu_count() or 1))
    out_dir = os.path.join(args.out, "train") if args.training else args.out
    os.makedirs(out_dir, exist_ok=True)
    names = args.only or list(ALL_SPECS if args.all else SPECS)
    print(f"torch {torch.__version__}, TorchScript exporter (dynamo=False), opset {tm.OPSET}, "
          f"{'TRAINING' if args.training else 'EVAL'} mode -> {out_dir}")
    failed = []
    for name in names:
        spec = ALL_SPECS[name]
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
