#!/usr/bin/env python
"""Write the small training-mode exports kept under ``models/`` for the ``graphmem train`` tests.

    python scripts/make_train_models.py [--out DIR]      (default: <repo>/models)

Both are exported with ``torch.onnx.export(..., training=TrainingMode.TRAINING,
do_constant_folding=False)`` (TorchScript exporter, opset 17, traced at batch 2 / seq 16, fixed
seeds, random init), so BatchNormalization keeps ``training_mode=1`` and Dropout stays in the
graph with ``training_mode=True``:

* ``train_cnn.onnx``   Conv3x3(3->16)+BatchNorm+Relu, MaxPool 2x2, Conv3x3(16->32)+BatchNorm+Relu,
                       GlobalAveragePool, Flatten, Dropout(0.5), Linear(32->10).
                       Input ``input[batch,3,32,32]``, output ``logits[batch,10]``.
* ``train_bert.onnx``  transformers BertModel, BertConfig(hidden 64, 2 layers, 4 heads,
                       intermediate 128, vocab 1000, max positions 64), eager attention, with
                       pooler; exact GELU (exported as Div/Erf/Add/Mul/Mul), Dropout 0.1.
                       Inputs ``input_ids``/``attention_mask[batch,seq]`` int64, outputs
                       ``last_hidden_state[batch,seq,64]``, ``pooler_output[batch,64]``.

Each file is checked with onnx.checker and graphmem's own analysis at batch 2 (seq 16); its
size must stay under 1 MB (3 MB for both).
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
MAX_FILE_BYTES = 1024 * 1024
MAX_TOTAL_BYTES = 3 * 1024 * 1024


def train_cnn():  # type: ignore[no-untyped-def]
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Dropout(0.5),
        nn.Linear(32, 10),
    )


def specs():  # type: ignore[no-untyped-def]
    import _torch_models as tm

    return [
        tm.ModelSpec(
            name="train_cnn",
            build=train_cnn,
            make_inputs=tm.image_inputs("input", 3, 32, 32),
            output_names=["logits"],
            dynamic_axes=tm.batch_axes(["input", "logits"]),
        ),
        tm.ModelSpec(
            name="train_bert",
            build=lambda: tm.build_bert(
                hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                vocab_size=1000, max_position_embeddings=64,
            ),
            make_inputs=tm.token_inputs(1000, with_mask=True),
            output_names=["last_hidden_state", "pooler_output"],
            dynamic_axes={
                **tm.batch_axes(["input_ids", "attention_mask", "last_hidden_state"], {1: "seq"}),
                "pooler_output": {0: "batch"},
            },
            seq=16,
        ),
    ]


def check(path: str, seq: int) -> str:
    import onnx

    from graphmem.training import estimate_training

    onnx.checker.check_model(path, full_check=True)
    proto = onnx.load(path)
    ops = {n.op_type for n in proto.graph.node}
    if "Dropout" not in ops:
        raise RuntimeError(f"{path}: no Dropout in a training-mode export")
    dims = {"batch": TRACE_BATCH, **({"seq": seq} if seq else {})}
    est = estimate_training(path, dims=dims)
    if est.warnings:
        raise RuntimeError(f"{path}: {est.warnings}")
    return (
        f"{os.path.basename(path):<16} {os.path.getsize(path):>8} B | {len(proto.graph.node):4d} nodes | "
        f"saved {est.saved_bytes} B, step peak {est.step_peak_bytes} B ({est.peak_phase}) at b2"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="write the training-mode models in models/")
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    import torch

    import _torch_models as tm

    torch.set_num_threads(1)
    sizes = {}
    for spec in specs():
        path = os.path.join(args.out, f"{spec.name}.onnx")
        torch.manual_seed(spec.seed)
        model = spec.build()
        feeds = spec.make_inputs(TRACE_BATCH, TRACE_SEQ if spec.seq else 0, np.random.default_rng(0))
        tm.export_onnx(model, feeds, path, spec.output_names, spec.dynamic_axes, training=True)
        print(check(path, spec.seq), flush=True)
        sizes[path] = os.path.getsize(path)
    too_big = [p for p, s in sizes.items() if s > MAX_FILE_BYTES]
    if too_big or sum(sizes.values()) > MAX_TOTAL_BYTES:
        print(f"size budget exceeded: {too_big or 'total'}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
