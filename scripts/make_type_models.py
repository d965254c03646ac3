#!/usr/bin/env python
"""float16 and quantized variants of ResNet-18, MobileNetV2 and BERT-base (issue 18's corpus).

    python scripts/make_type_models.py [--out DIR] [--only NAME ...] [--variants V ...]

Base models (fp32, random weights from fixed seeds, opset 17, TorchScript exporter, dynamic
``batch`` axis, BERT also ``seq``) come from ``scripts/_torch_models.py`` (ResNet-18 is written
out below: torchvision's BasicBlock layout); an existing ``.cache/corpus/NAME.onnx`` made
by ``scripts/export_corpus.py`` is reused. Needs ``pip install torch==2.13.0 transformers
onnxconverter-common``.

Variants, written as ``DIR/NAME.VARIANT.onnx`` by the standard tools:

* ``fp16_io``  onnxconverter-common ``convert_float_to_float16(keep_io_types=True)``
* ``fp16``     the same with ``keep_io_types=False`` (float16 inputs and outputs)
* ``dyn``      onnxruntime ``quantize_dynamic`` (int8 weights, per-tensor)
* ``dyn_pc``   ``quantize_dynamic(per_channel=True)``
* ``qdq``      ``quantize_static`` QDQ format, per-tensor (4 random calibration samples)
* ``qdq_pc``   ``quantize_static`` QDQ, per-channel
* ``qop``      ``quantize_static`` QOperator format (QLinearConv, QLinearMatMul, ...), per-tensor
* ``qop_pc``   ``quantize_static`` QOperator, per-channel

One line per file; a tool that fails on a model is reported and the rest go on.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import logging
import warnings

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

DEFAULT_OUT = Path(str(Path(__file__).resolve().parents[1] / ".cache" / "types/models"))
CORPUS = Path(str(Path(__file__).resolve().parents[1] / ".cache" / "corpus"))
MODELS = ("resnet18", "mobilenetv2", "bert_base")
VARIANTS = ("fp16_io", "fp16", "dyn", "dyn_pc", "qdq", "qdq_pc", "qop", "qop_pc")


def _resnet18():  # torchvision.models.resnet18() layout (BasicBlock, layers 2-2-2-2)
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int = 1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + (x if self.downsample is None else self.downsample(x)))

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            blocks, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout)]
                cin = cout
            self.layers = nn.Sequential(*blocks)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, 1000)

        def forward(self, x):
            x = self.layers(self.maxpool(self.relu(self.bn1(self.conv1(x)))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet18()


def base_model(name: str, out: Path) -> Path:
    """The fp32 export of ``name`` (reused from the corpus when it is there)."""
    path = out / f"{name}.onnx"
    if path.exists():
        return path
    if (CORPUS / f"{name}.onnx").exists():
        shutil.copyfile(CORPUS / f"{name}.onnx", path)
        return path
    import torch

    import _torch_models as tm
    import export_corpus

    torch.set_num_threads(2)
    if name == "resnet18":
        spec = tm.ModelSpec(
            name=name, build=_resnet18, make_inputs=tm.image_inputs("input", 3, 224, 224),
            output_names=["logits"], dynamic_axes=tm.batch_axes(["input", "logits"]), calibrate=(2, 8),
        )
    else:
        spec = export_corpus.SPECS[name]
    model = tm.build_model(spec)
    feeds = spec.make_inputs(2, 16 if spec.seq else 0, np.random.default_rng(0))
    tm.export_onnx(model, feeds, str(path), spec.output_names, spec.dynamic_axes)
    return path


def calibration(path: Path, n: int = 4):
    """A CalibrationDataReader with ``n`` random batch-1 samples (seq 128 for BERT)."""
    import onnx
    from onnxruntime.quantization import CalibrationDataReader

    from graphmem.verify import make_feeds

    proto = onnx.load(str(path), load_external_data=False)
    dims = {"batch": 1, "seq": 128}
    samples = [make_feeds(proto, dims, seed=i) for i in range(n)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(samples)

        def get_next(self):
            return next(self.it, None)

    return Reader()


def make_variant(base: Path, variant: str, dest: Path) -> None:
    import onnx

    if variant.startswith("fp16"):
        from onnxconverter_common import float16

        model = onnx.load(str(base))
        converted = float16.convert_float_to_float16(model, keep_io_types=variant == "fp16_io")
        onnx.save(converted, str(dest))
        return
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

    per_channel = variant.endswith("_pc")
    if variant.startswith("dyn"):
        quantize_dynamic(str(base), str(dest), weight_type=QuantType.QInt8, per_channel=per_channel)
        return
    fmt = QuantFormat.QDQ if variant.startswith("qdq") else QuantFormat.QOperator
    quantize_static(
        str(base), str(dest), calibration(base), quant_format=fmt, per_channel=per_channel,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
    )


def main(argv: list[str] | None = None) -> int:
    warnings.simplefilter("ignore")  # onnxconverter-common warns once per truncated weight
    logging.getLogger().setLevel(logging.ERROR)  # the quantizer logs one line per tensor it skips
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--only", nargs="+", choices=MODELS, default=list(MODELS))
    ap.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in args.only:
        base = base_model(name, args.out)
        print(f"{base.name:<28} {base.stat().st_size / 1e6:8.1f} MB  base", flush=True)
        for variant in args.variants:
            dest = args.out / f"{name}.{variant}.onnx"
            if dest.exists():
                print(f"{dest.name:<28} {dest.stat().st_size / 1e6:8.1f} MB  (exists)", flush=True)
                continue
            t0 = time.perf_counter()
            try:
                make_variant(base, variant, dest)
            except Exception as exc:  # noqa: BLE001 - report the tool's failure and go on
                failed.append(dest.name)
                dest.unlink(missing_ok=True)
                print(f"{dest.name:<28} FAILED: {type(exc).__name__}: {str(exc)[:120]}", flush=True)
                continue
            print(f"{dest.name:<28} {dest.stat().st_size / 1e6:8.1f} MB  {time.perf_counter() - t0:6.1f} s", flush=True)
    if failed:
        print(f"failed: {' '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
