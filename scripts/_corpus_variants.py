"""Tool-made variants for the real-world corpus (used by scripts/collect_models.py).

Every model here is built from code or a config with random weights (fixed seeds) and then put
through the tools people really use on ONNX files:

* torch's TorchScript exporter (``dynamo=False``, opset 17, via ``_torch_models.export_onnx``):
  a full-size ResNet-18, a MobileNetV2-like CNN (width 0.5), full-size BERT-base, a small BERT
  and a small GPT-2;
* torch's dynamo exporter (``torch.onnx.export(..., dynamo=True)``, onnxscript) of a CNN and a
  small BERT;
* ``torch.jit.script`` modules with ``if`` and ``for`` exported by the TorchScript exporter
  (If and Loop nodes);
* onnxconverter-common ``convert_float_to_float16`` (keep_io_types True and False);
* onnxruntime.quantization ``quantize_dynamic`` and ``quantize_static`` (QDQ and QOperator,
  per-tensor and per-channel, MinMax calibration on random data).

Each maker writes one file and returns ``(source, bindings)``; collect_models.py hashes it and
writes the manifest entry. torch, transformers, onnxconverter-common and onnxruntime are
imported inside the makers, so importing this module costs nothing.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

BATCHES = (1, 4)
SEQ = 128


@contextlib.contextmanager
def quiet():
    """Hide the tools' advice (quantization pre-processing, missing torchvision, exporter reports)."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def version(dist: str) -> str:
    """``dist==version`` of an installed distribution (what made a variant)."""
    try:
        return f"{dist}=={metadata.version(dist)}"
    except metadata.PackageNotFoundError:
        return f"{dist} (not installed)"


def batched(**fixed: int) -> list[dict]:
    """Bindings at batch 1 and 4 of a model whose batch dim is named ``batch``."""
    return [{"label": f"b{b}", "batch": b, "dims": {"batch": b, **fixed}} for b in BATCHES]


@dataclass(frozen=True, kw_only=True)
class Variant:
    """One tool-made model: ``make(path, base_path)`` writes ``path`` and returns its source."""

    name: str
    family: str
    make: Callable[[Path, Path | None], dict]
    bindings: list[dict]
    base: str | None = None  # the variant whose file this one is made from
    notes: tuple[str, ...] = field(default_factory=tuple)


# --------------------------------------------------------------------------- torch models
def _resnet18():
    import torch
    from torch import nn

    import _torch_models as tm

    class BasicBlock(nn.Module):
        """torchvision ResNet basic block (two 3x3 convs)."""

        def __init__(self, cin: int, cout: int, stride: int = 1):
            super().__init__()
            self.conv1 = tm._conv3x3(cin, cout, stride)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = tm._conv3x3(cout, cout)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(tm._conv1x1(cin, cout, stride), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            identity = x if self.downsample is None else self.downsample(x)
            return self.relu(out + identity)

    class ResNet18(nn.Module):
        """torchvision.models.resnet18() layout: 11,689,512 parameters."""

        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            layers, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers.append(nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout)))
                cin = cout
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.fc = nn.Linear(512, 1000)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    return ResNet18()


def _calibrated(model, size: int):
    import torch

    import _torch_models as tm

    g = torch.Generator().manual_seed(0)
    return tm.calibrate_batchnorm(model, [torch.randn(8, 3, size, size, generator=g) for _ in range(2)])


def _image_export(build: Callable, size: int) -> Callable[[Path, Path | None], dict]:
    def make(path: Path, _base: Path | None) -> dict:
        import torch

        import _torch_models as tm

        torch.manual_seed(0)
        model = _calibrated(build(), size)
        feeds = {"input": np.random.default_rng(0).standard_normal((2, 3, size, size), dtype=np.float32)}
        tm.export_onnx(model, feeds, str(path), ["logits"], tm.batch_axes(["input", "logits"]))
        return {"tool": version("torch"), "options": f"torch.onnx.export(dynamo=False, opset={tm.OPSET}), input 3x{size}x{size}, dynamic batch"}

    return make


def _mobilenet_half():
    import _torch_models as tm

    return tm.MobileNetV2(width_mult=0.5)


def _token_export(build: Callable, vocab: int, with_mask: bool, outputs: list[str]) -> Callable[[Path, Path | None], dict]:
    def make(path: Path, _base: Path | None) -> dict:
        import torch

        import _torch_models as tm

        torch.manual_seed(0)
        model = build()
        feeds = tm.token_inputs(vocab, with_mask)(2, 16, np.random.default_rng(0))
        axes = tm.batch_axes(list(feeds) + outputs[:1], {1: "seq"})
        axes.update({o: {0: "batch"} for o in outputs[1:]})
        tm.export_onnx(model, feeds, str(path), outputs, axes)
        return {"tool": version("torch") + " " + version("transformers"),
                "options": f"torch.onnx.export(dynamo=False, opset={tm.OPSET}), random weights from a config, dynamic batch and seq"}

    return make


def _bert_small():
    import _torch_models as tm

    return tm.build_bert(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024, vocab_size=8000)


def _bert_base():
    import _torch_models as tm

    return tm.build_bert()


def _gpt2_small():
    import _torch_models as tm

    return tm.build_gpt2(n_layer=4, n_embd=256, n_head=4, vocab_size=8000)


# --------------------------------------------------------------------------- dynamo exporter
def _dynamo_export(build: Callable, feeds_of: Callable[[], dict], dynamic: dict) -> Callable[[Path, Path | None], dict]:
    def make(path: Path, _base: Path | None) -> dict:
        import torch

        torch.manual_seed(0)
        model = build().eval()
        feeds = feeds_of()
        args = tuple(torch.from_numpy(v) for v in feeds.values())
        shapes = tuple(dynamic[name] for name in feeds)  # positional: forward's argument names differ
        with quiet():
            program = torch.onnx.export(model, args, dynamo=True, input_names=list(feeds), dynamic_shapes=shapes)
            program.save(str(path))
        return {"tool": version("torch") + " " + version("onnxscript"), "options": "torch.onnx.export(dynamo=True), dynamic_shapes " + repr(dynamic)}

    return make


def _dynamo_cnn_feeds() -> dict:
    return {"input": np.random.default_rng(0).standard_normal((2, 3, 128, 128), dtype=np.float32)}


def _dynamo_bert_feeds() -> dict:
    import _torch_models as tm

    return tm.token_inputs(8000, True)(2, 16, np.random.default_rng(0))


def _dynamo_resnet18():
    return _calibrated(_resnet18(), 128)


# --------------------------------------------------------------------------- TorchScript control flow
def _scripted_modules():
    import torch
    from torch import nn

    class BranchNet(nn.Module):
        """``if`` on the input's values: If node with a Linear stack in each branch."""

        def __init__(self):
            super().__init__()
            self.small = nn.Linear(64, 64)
            self.wide = nn.Linear(64, 256)
            self.back = nn.Linear(256, 64)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if bool(x.mean() > 0.0):
                y = torch.relu(self.small(x))
            else:
                y = self.back(torch.tanh(self.wide(x)))
            return y * 2.0

    class RecurrentNet(nn.Module):
        """``for`` over the sequence axis (Loop, trip count from the input's shape)."""

        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(32, 64)
            self.rec = nn.Linear(64, 64)
            self.out = nn.Linear(64, 16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = torch.zeros(x.size(0), 64)
            for t in range(x.size(1)):
                h = torch.tanh(self.inp(x[:, t]) + self.rec(h))
            return self.out(h)

    class RepeatNet(nn.Module):
        """``for`` a number of times given as an input value (Loop, trip count from a scalar)."""

        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(128, 128)

        def forward(self, x: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
            for _ in range(int(steps)):
                x = torch.relu(self.layer(x)) + x
            return x

    return BranchNet, RecurrentNet, RepeatNet


def _scripted(index: int, feeds_of: Callable[[], dict], axes: dict) -> Callable[[Path, Path | None], dict]:
    def make(path: Path, _base: Path | None) -> dict:
        import torch

        torch.manual_seed(0)
        module = torch.jit.script(_scripted_modules()[index]().eval())
        feeds = feeds_of()
        args = tuple(torch.from_numpy(v) for v in feeds.values())
        with quiet():
            torch.onnx.export(module, args, str(path), dynamo=False, opset_version=17,
                              input_names=list(feeds), output_names=["y"], dynamic_axes=axes)
        return {"tool": version("torch"), "options": "torch.jit.script module, torch.onnx.export(dynamo=False, opset=17)"}

    return make


def _rand(*shape: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape, dtype=np.float32)


# --------------------------------------------------------------------------- converters
def _fp16(keep_io_types: bool) -> Callable[[Path, Path | None], dict]:
    def make(path: Path, base: Path | None) -> dict:
        import onnx
        from onnxconverter_common import float16

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # one "number will be truncated" warning per small weight
            model = float16.convert_float_to_float16(onnx.load(str(base)), keep_io_types=keep_io_types)
        onnx.save(model, str(path))
        return {"tool": version("onnxconverter-common"), "options": f"float16.convert_float_to_float16(keep_io_types={keep_io_types})"}

    return make


def _quant_dynamic(path: Path, base: Path | None) -> dict:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with quiet():
        quantize_dynamic(str(base), str(path), weight_type=QuantType.QInt8)
    return {"tool": version("onnxruntime-gpu"), "options": "onnxruntime.quantization.quantize_dynamic(weight_type=QInt8)"}


def _quant_static(fmt: str, per_channel: bool, size: int = 224) -> Callable[[Path, Path | None], dict]:
    def make(path: Path, base: Path | None) -> dict:
        from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

        class RandomImages(CalibrationDataReader):
            def __init__(self):
                rng = np.random.default_rng(0)
                self.batches = iter([{"input": rng.standard_normal((1, 3, size, size), dtype=np.float32)} for _ in range(4)])

            def get_next(self):
                return next(self.batches, None)

        with quiet():
            quantize_static(str(base), str(path), RandomImages(), quant_format=getattr(QuantFormat, fmt),
                            per_channel=per_channel, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        return {"tool": version("onnxruntime-gpu"),
                "options": f"onnxruntime.quantization.quantize_static(quant_format={fmt}, per_channel={per_channel}, "
                           "QUInt8 activations, QInt8 weights, MinMax calibration on 4 random images)"}

    return make


# --------------------------------------------------------------------------- the list
def variants() -> list[Variant]:
    """Every shared-env variant, bases before the variants made from them."""
    b = batched
    scripted_if = _scripted(0, lambda: {"x": _rand(2, 64)}, {"x": {0: "batch"}, "y": {0: "batch"}})
    scripted_loop = _scripted(1, lambda: {"x": _rand(2, 5, 32)}, {"x": {0: "batch", 1: "seq"}, "y": {0: "batch"}})
    scripted_repeat = _scripted(2, lambda: {"x": _rand(2, 128), "steps": np.array(3, dtype=np.int64)},
                                {"x": {0: "batch"}, "y": {0: "batch"}})
    return [
        Variant(name="resnet18", family="torch-cnn", make=_image_export(_resnet18, 224), bindings=b()),
        Variant(name="mobilenetv2_w05", family="torch-cnn", make=_image_export(_mobilenet_half, 160), bindings=b()),
        Variant(name="bert_base", family="torch-transformer", bindings=b(seq=SEQ),
                make=_token_export(_bert_base, 30522, True, ["last_hidden_state", "pooler_output"])),
        Variant(name="bert_small", family="torch-transformer", bindings=b(seq=SEQ),
                make=_token_export(_bert_small, 8000, True, ["last_hidden_state", "pooler_output"])),
        Variant(name="gpt2_small4", family="torch-transformer", bindings=b(seq=SEQ),
                make=_token_export(_gpt2_small, 8000, False, ["last_hidden_state"])),
        Variant(name="resnet18_dynamo", family="dynamo", bindings=b(),
                make=_dynamo_export(_dynamo_resnet18, _dynamo_cnn_feeds, {"input": {0: "batch"}})),
        Variant(name="bert_small_dynamo", family="dynamo", bindings=b(seq=SEQ),
                make=_dynamo_export(_bert_small, _dynamo_bert_feeds,
                                    {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}})),
        Variant(name="script_if", family="torchscript-control-flow", make=scripted_if, bindings=b()),
        Variant(name="script_loop_seq", family="torchscript-control-flow", make=scripted_loop, bindings=b(seq=16)),
        Variant(name="script_loop_value", family="torchscript-control-flow", make=scripted_repeat,
                bindings=[{**x, "values": {"steps": [3]}} for x in b()]),
        Variant(name="resnet18_fp16", family="fp16", base="resnet18", make=_fp16(False), bindings=b()),
        Variant(name="resnet18_fp16_io32", family="fp16", base="resnet18", make=_fp16(True), bindings=b()),
        Variant(name="bert_small_fp16", family="fp16", base="bert_small", make=_fp16(False), bindings=b(seq=SEQ)),
        Variant(name="bert_small_fp16_io32", family="fp16", base="bert_small", make=_fp16(True), bindings=b(seq=SEQ)),
        Variant(name="bert_small_qdyn", family="quant", base="bert_small", make=_quant_dynamic, bindings=b(seq=SEQ)),
        Variant(name="mobilenetv2_w05_qdyn", family="quant", base="mobilenetv2_w05", make=_quant_dynamic, bindings=b()),
        Variant(name="resnet18_qdq", family="quant", base="resnet18", make=_quant_static("QDQ", False), bindings=b()),
        Variant(name="resnet18_qdq_pc", family="quant", base="resnet18", make=_quant_static("QDQ", True), bindings=b()),
        Variant(name="resnet18_qop", family="quant", base="resnet18", make=_quant_static("QOperator", False), bindings=b()),
        Variant(name="resnet18_qop_pc", family="quant", base="resnet18", make=_quant_static("QOperator", True), bindings=b()),
    ]
