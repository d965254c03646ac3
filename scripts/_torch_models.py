"""Shared helpers for scripts/export_corpus.py and scripts/make_models.py.

Contains:

* torchvision-equivalent ResNet-50 and MobileNetV2 architectures, written out here
  because torchvision cannot be installed beside the pinned torch (same module
  layout, layer sizes and init as torchvision; ResNet-50 has 25,557,032 and
  MobileNetV2 3,504,872 parameters, like torchvision's);
* the small models used for ``models/`` (TinyCNN, TinyUNet, TinyLSTM);
* wrappers that make transformers' BertModel / GPT2Model traceable with plain
  tensor inputs and tuple outputs;
* ``export_onnx`` (TorchScript exporter, ``dynamo=False``) and ``verify_onnx``
  (onnx.load + onnx.checker + onnxruntime CPU runs, optional comparison with torch).

Only torch, transformers, onnx, onnxruntime and numpy are imported.
"""

from __future__ import annotations

import contextlib
import io
import os
import time
import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn

OPSET = 17


# --------------------------------------------------------------------------- ResNet-50
def _conv3x3(cin: int, cout: int, stride: int = 1, groups: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, groups=groups, bias=False)


def _conv1x1(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 1, stride=stride, bias=False)


class Bottleneck(nn.Module):
    """torchvision ResNet v1.5 bottleneck (stride on the 3x3 conv)."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = _conv1x1(inplanes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = _conv1x1(planes, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out = out + identity
        return self.relu(out)


class ResNet50(nn.Module):
    """Same layers, names and init as torchvision.models.resnet50()."""

    def __init__(self, num_classes: int = 1000, layers: Sequence[int] = (3, 4, 6, 3)):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * Bottleneck.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * Bottleneck.expansion:
            downsample = nn.Sequential(
                _conv1x1(self.inplanes, planes * Bottleneck.expansion, stride),
                nn.BatchNorm2d(planes * Bottleneck.expansion),
            )
        layers = [Bottleneck(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * Bottleneck.expansion
        layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


# --------------------------------------------------------------------------- MobileNetV2
def _make_divisible(v: float, divisor: int = 8, min_value: int | None = None) -> int:
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNReLU6(nn.Sequential):
    """torchvision Conv2dNormActivation(norm=BatchNorm2d, activation=ReLU6)."""

    def __init__(self, cin: int, cout: int, kernel_size: int = 3, stride: int = 1, groups: int = 1):
        super().__init__(
            nn.Conv2d(cin, cout, kernel_size, stride, (kernel_size - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU6(inplace=True),
        )


class InvertedResidual(nn.Module):
    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int):
        super().__init__()
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU6(inp, hidden, kernel_size=1))
        layers += [
            ConvBNReLU6(hidden, hidden, stride=stride, groups=hidden),
            nn.Conv2d(hidden, oup, 1, 1, 0, bias=False),
            nn.BatchNorm2d(oup),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    """Same layers, names and init as torchvision.models.mobilenet_v2() (width 1.0, 224)."""

    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0):
        super().__init__()
        settings = [
            # t, c, n, s
            [1, 16, 1, 1],
            [6, 24, 2, 2],
            [6, 32, 3, 2],
            [6, 64, 4, 2],
            [6, 96, 3, 1],
            [6, 160, 3, 2],
            [6, 320, 1, 1],
        ]
        input_channel = _make_divisible(32 * width_mult)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult))
        features: list[nn.Module] = [ConvBNReLU6(3, input_channel, stride=2)]
        for t, c, n, s in settings:
            output_channel = _make_divisible(c * width_mult)
            for i in range(n):
                features.append(InvertedResidual(input_channel, output_channel, s if i == 0 else 1, t))
                input_channel = output_channel
        features.append(ConvBNReLU6(input_channel, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=0.2), nn.Linear(self.last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        return self.classifier(x)


# --------------------------------------------------------------------------- tiny models
class TinyCNN(nn.Module):
    """Conv-BN-Relu stem, MaxPool, Conv, a depthwise-separable residual block (Add),
    an unfused BatchNorm after the Add, GlobalAveragePool, Flatten, Linear (Gemm)."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU())
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)  # depthwise
        self.dw_act = nn.ReLU()
        self.pw = nn.Conv2d(32, 32, 1)  # pointwise
        self.post_bn = nn.BatchNorm2d(32)  # follows an Add, so the exporter cannot fold it
        self.act = nn.ReLU()
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv2(self.pool(self.stem(x)))
        y = self.pw(self.dw_act(self.dw(x)))
        x = self.act(self.post_bn(x + y))
        return self.fc(torch.flatten(self.gap(x), 1))


def _double_conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU()
    )


class TinyUNet(nn.Module):
    """2 down steps (MaxPool), 2 up steps (ConvTranspose 2x2/2 + Concat skip), 1x1 head."""

    def __init__(self, cin: int = 1, cout: int = 1, c: int = 8):
        super().__init__()
        self.enc1 = _double_conv(cin, c)
        self.enc2 = _double_conv(c, 2 * c)
        self.bott = _double_conv(2 * c, 4 * c)
        self.pool = nn.MaxPool2d(2)
        self.up2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2)
        self.dec2 = _double_conv(4 * c, 2 * c)
        self.up1 = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.dec1 = _double_conv(2 * c, c)
        self.head = nn.Conv2d(c, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)  # [b, c, 64, 64]
        e2 = self.enc2(self.pool(e1))  # [b, 2c, 32, 32]
        b = self.bott(self.pool(e2))  # [b, 4c, 16, 16]
        d2 = self.dec2(torch.cat([self.up2(b), e2], dim=1))  # [b, 2c, 32, 32]
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))  # [b, c, 64, 64]
        return self.head(d1)


class TinyLSTM(nn.Module):
    """Embedding(1000, 32) -> 1-layer bidirectional LSTM(hidden 48) -> Linear(96, classes)
    on the concatenated final forward/backward hidden states."""

    def __init__(self, vocab: int = 1000, emb: int = 32, hidden: int = 48, num_classes: int = 4):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=1, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, num_classes)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        _, (h_n, _) = self.lstm(self.embedding(input_ids))  # h_n: [2, batch, hidden]
        return self.fc(torch.cat([h_n[0], h_n[1]], dim=1))


# --------------------------------------------------------------------------- transformers wrappers
class BertWrapper(nn.Module):
    """(input_ids, attention_mask) -> (last_hidden_state, pooler_output)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)
        return out[0], out[1]


class GPT2Wrapper(nn.Module):
    """input_ids -> last_hidden_state, no past key values.

    An all-ones attention mask is built inside the graph: without any mask,
    transformers >= 5 traces a packed-sequence check through ``torch.diff``, which
    the TorchScript exporter cannot export.
    """

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor):
        out = self.model(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            use_cache=False,
            return_dict=False,
        )
        return out[0]


def jitter_constant_params(model: nn.Module, std: float = 0.02, seed: int = 0) -> nn.Module:
    """Add small deterministic noise to every parameter whose elements are all equal
    (fresh LayerNorm weights/biases, zero Linear biases).

    Otherwise the exporter deduplicates byte-identical initializers and routes them
    through Identity nodes, which a trained checkpoint would never show.
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            flat = p.reshape(-1)
            if flat.numel() > 0 and bool((flat == flat[0]).all()):
                p.add_(torch.randn(p.shape, generator=g) * std)
    return model


def build_bert(**config_kwargs) -> nn.Module:
    from transformers import BertConfig, BertModel

    cfg = BertConfig(attn_implementation="eager", **config_kwargs)
    return jitter_constant_params(BertWrapper(BertModel(cfg, add_pooling_layer=True))).eval()


def build_gpt2(**config_kwargs) -> nn.Module:
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(attn_implementation="eager", **config_kwargs)
    return jitter_constant_params(GPT2Wrapper(GPT2Model(cfg))).eval()


# --------------------------------------------------------------------------- specs
@dataclass
class ModelSpec:
    """How to build, feed and export one model.

    ``make_inputs(batch, seq, rng)`` returns a dict name -> numpy array, in the
    order of the model's forward arguments.
    """

    name: str
    build: Callable[[], nn.Module]
    make_inputs: Callable[[int, int, np.random.Generator], dict]
    output_names: list[str]
    dynamic_axes: dict[str, dict[int, str]]
    seq: int = 0  # 0: no sequence axis
    check_batches: tuple[int, ...] = (1, 8)
    seed: int = 0
    # If set: (n_batches, batch) of random inputs for calibrate_batchnorm after build.
    calibrate: tuple[int, int] | None = None


def image_inputs(name: str, c: int, h: int, w: int):
    def make(batch: int, seq: int, rng: np.random.Generator) -> dict:
        return {name: rng.standard_normal((batch, c, h, w), dtype=np.float32)}

    return make


def token_inputs(vocab: int, with_mask: bool):
    def make(batch: int, seq: int, rng: np.random.Generator) -> dict:
        feeds = {"input_ids": rng.integers(0, vocab, (batch, seq), dtype=np.int64)}
        if with_mask:
            mask = np.ones((batch, seq), dtype=np.int64)
            if batch > 1:  # pad the tail of the last row, so the mask actually matters
                mask[-1, seq // 2 :] = 0
            feeds["attention_mask"] = mask
        return feeds

    return make


def build_model(spec: "ModelSpec") -> nn.Module:
    """Seed, build, optionally calibrate BatchNorm; returns the model in eval mode."""
    torch.manual_seed(spec.seed)
    model = spec.build()
    if spec.calibrate:
        n, b = spec.calibrate
        rng = np.random.default_rng(spec.seed)
        batches = [
            tuple(torch.from_numpy(v) for v in spec.make_inputs(b, spec.seq, rng).values())[0] for _ in range(n)
        ]
        calibrate_batchnorm(model, batches)
    return model.eval()


def batch_axes(names: Sequence[str], extra_axes: dict[int, str] | None = None) -> dict[str, dict[int, str]]:
    axes = {0: "batch", **(extra_axes or {})}
    return {n: dict(axes) for n in names}


# --------------------------------------------------------------------------- export / verify
def export_onnx(
    model: nn.Module,
    feeds: dict,
    path: str,
    output_names: Sequence[str],
    dynamic_axes: dict[str, dict[int, str]],
    training: bool = False,
) -> None:
    """Export with the TorchScript exporter (dynamo=False), opset 17.

    training=True uses TrainingMode.TRAINING and do_constant_folding=False
    (BatchNormalization keeps training_mode=1, Dropout keeps its training flag).
    """
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    model.train(training)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # The TorchScript exporter prints per-op diagnostics on stdout for some
        # models; keep the script's output to one line per model.
        with contextlib.redirect_stdout(io.StringIO()):
            torch.onnx.export(
                model,
                args,
                path,
                dynamo=False,
                opset_version=OPSET,
                input_names=list(feeds.keys()),
                output_names=list(output_names),
                dynamic_axes=dynamic_axes,
                training=mode,
                do_constant_folding=not training,
                export_params=True,
            )
    model.train(training)  # the exporter restores the mode it found; keep it explicit
    model.eval()
    with torch.no_grad():
        ref = model(*args)
    model.train(training)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    _pin_static_output_dims(path, {n: tuple(r.shape) for n, r in zip(output_names, refs)}, dynamic_axes)


def _pin_static_output_dims(path: str, shapes: dict, dynamic_axes: dict) -> None:
    """Replace exporter-invented dim names on graph outputs (e.g. GPT-2's
    ``Reshapelast_hidden_state_dim_2``, from a view with a computed shape) by the
    traced static size, for every axis that was not declared dynamic."""
    import onnx

    proto = onnx.load(path)
    changed = False
    for out in proto.graph.output:
        dyn = dynamic_axes.get(out.name, {})
        for i, d in enumerate(out.type.tensor_type.shape.dim):
            if i not in dyn and not d.HasField("dim_value") and out.name in shapes:
                d.dim_value = int(shapes[out.name][i])
                changed = True
    if changed:
        onnx.save(proto, path)


def _dims(vi) -> str:
    t = vi.type.tensor_type
    dims = [d.dim_param if d.HasField("dim_param") else str(d.dim_value) for d in t.shape.dim]
    return f"{vi.name}[{','.join(dims)}]"


def human_size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError


def verify_onnx(
    path: str,
    spec: ModelSpec,
    reference: nn.Module | None = None,
    rtol: float = 1e-3,
    atol: float = 1e-4,
    repeats: int = 3,
) -> str:
    """onnx.load, onnx.checker (by path, so >2 GB would work), onnxruntime CPU runs at
    each batch in spec.check_batches; compare with ``reference`` (a torch module) if given.
    Returns the one-line summary; raises on any failure."""
    import onnx
    import onnxruntime as ort

    size = os.path.getsize(path)
    proto = onnx.load(path)
    onnx.checker.check_model(path, full_check=False)
    domains = sorted({n.domain or "ai.onnx" for n in proto.graph.node})
    if domains != ["ai.onnx"]:
        raise RuntimeError(f"{path}: non-standard op domains {domains}")
    n_nodes = len(proto.graph.node)
    inputs = " ".join(_dims(i) for i in proto.graph.input)
    outputs = " ".join(_dims(o) for o in proto.graph.output)
    del proto

    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1234)
    timings = []
    worst = 0.0
    for b in spec.check_batches:
        feeds = spec.make_inputs(b, spec.seq, rng)
        outs = sess.run(None, feeds)  # warm-up (and the checked result)
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            sess.run(None, feeds)
            ts.append(time.perf_counter() - t0)
        for o in outs:
            if not np.all(np.isfinite(o)):
                raise RuntimeError(f"{path}: non-finite output at batch {b}")
        if outs[0].shape[0] != b:
            raise RuntimeError(f"{path}: output batch {outs[0].shape[0]} != {b}")
        if reference is not None:
            with torch.no_grad():
                ref = reference(*[torch.from_numpy(v) for v in feeds.values()])
            refs = ref if isinstance(ref, (tuple, list)) else (ref,)
            for o, r in zip(outs, refs):
                r = r.numpy()
                scale = float(np.abs(r).max())
                diff = float(np.abs(o - r).max())
                err = diff / max(scale, 1e-30)
                worst = max(worst, err)
                if diff > atol + rtol * scale:
                    raise RuntimeError(f"{path}: batch {b} differs from torch by {err:.3g} (relative)")
        seq = f"x{spec.seq}" if spec.seq else ""
        timings.append(f"b{b}{seq} {np.median(ts) * 1000:.1f} ms")
    diff = f" | max rel diff vs torch {worst:.1e}" if reference is not None else ""
    return (
        f"{spec.name:<14} {human_size(size):>9} | {n_nodes:5d} nodes | in {inputs} | out {outputs} | "
        f"ort {', '.join(timings)}{diff}"
    )


def calibrate_batchnorm(model: nn.Module, inputs: Sequence[torch.Tensor]) -> nn.Module:
    """Give BatchNorm layers realistic running statistics.

    With fresh init (running mean 0, var 1) eval-mode activations of a deep random
    network drift to ~0 or blow up. A few train-mode forward passes over random
    inputs (cumulative average, momentum=None) set running_mean/var to the batch
    statistics, so outputs stay O(1) and the folded Conv weights look like real ones.
    Deterministic for a fixed seed. Returns the model in eval mode.
    """
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for x in inputs:
            model(x)
    for m in bns:
        m.momentum = 0.1
    return model.eval()


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# --------------------------------------------------------------------------- train_check models
# Written out because torchvision cannot be installed beside the pinned torch: the same layers
# and sizes as torchvision's models (StochasticDepth left out: its per-sample Bernoulli noise is
# not a pattern the TorchScript exporter writes as such).
class SqueezeExcitation(nn.Module):
    """torchvision.ops.SqueezeExcitation: avgpool → 1x1 conv → act → 1x1 conv → sigmoid → x·s."""

    def __init__(self, cin: int, squeeze: int, act: Callable[[], nn.Module] = nn.SiLU):
        super().__init__()
        self.fc1 = nn.Conv2d(cin, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, cin, 1)
        self.act = act()
        self.gate = nn.Sigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = nn.functional.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.fc2(self.act(self.fc1(s))))


def _conv_bn_act(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
                 act: Callable[[], nn.Module] | None = nn.SiLU) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class MBConv(nn.Module):
    """torchvision EfficientNet MBConv: expand 1x1, depthwise kxk, SE (squeeze = cin/4), project."""

    def __init__(self, cin: int, cout: int, expand: int, k: int, stride: int):
        super().__init__()
        hidden = _make_divisible(cin * expand)
        self.use_res = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if hidden != cin:
            layers.append(_conv_bn_act(cin, hidden, 1))
        layers += [
            _conv_bn_act(hidden, hidden, k, stride, groups=hidden),
            SqueezeExcitation(hidden, max(1, cin // 4)),
            _conv_bn_act(hidden, cout, 1, act=None),
        ]
        self.block = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return y + x if self.use_res else y


class EfficientNetB0(nn.Module):
    """torchvision.models.efficientnet_b0() layers (5,288,548 parameters), no stochastic depth."""

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        # expand, kernel, stride, cin, cout, repeats
        settings = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
                    (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]
        layers: list[nn.Module] = [_conv_bn_act(3, 32, 3, 2)]
        for e, k, s, cin, cout, n in settings:
            layers.append(nn.Sequential(*[MBConv(cin if i == 0 else cout, cout, e, k, s if i == 0 else 1)
                                          for i in range(n)]))
        layers.append(_conv_bn_act(320, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2, inplace=True), nn.Linear(1280, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


class LayerNorm2d(nn.LayerNorm):
    """torchvision ConvNeXt LayerNorm2d: permute to channels-last, layer_norm, permute back."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.permute(0, 2, 3, 1)
        x = nn.functional.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    """torchvision ConvNeXt block: dw 7x7, permute, LayerNorm, Linear 4x, GELU, Linear, permute,
    layer scale, residual."""

    def __init__(self, dim: int, kernel: int = 7):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel, padding=kernel // 2, groups=dim),
            Permute(0, 2, 3, 1),
            nn.LayerNorm(dim, eps=1e-6),
            nn.Linear(dim, 4 * dim),
            nn.GELU(),
            nn.Linear(4 * dim, dim),
            Permute(0, 3, 1, 2),
        )
        self.layer_scale = nn.Parameter(torch.ones(dim, 1, 1) * 1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer_scale * self.block(x) + x


class Permute(nn.Module):
    def __init__(self, *dims: int):
        super().__init__()
        self.dims = dims

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.permute(*self.dims)


class ConvNeXtTiny(nn.Module):
    """torchvision.models.convnext_tiny() layers (28,589,128 parameters), no stochastic depth."""

    def __init__(self, num_classes: int = 1000, dims: Sequence[int] = (96, 192, 384, 768),
                 depths: Sequence[int] = (3, 3, 9, 3), kernel: int = 7):
        super().__init__()
        layers: list[nn.Module] = [nn.Sequential(nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0], eps=1e-6))]
        for i, (d, n) in enumerate(zip(dims, depths)):
            layers.append(nn.Sequential(*[CNBlock(d, kernel) for _ in range(n)]))
            if i + 1 < len(dims):
                layers.append(nn.Sequential(LayerNorm2d(d, eps=1e-6), nn.Conv2d(d, dims[i + 1], 2, 2)))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(LayerNorm2d(dims[-1], eps=1e-6), nn.Flatten(1), nn.Linear(dims[-1], num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(x)


class AlexNet(nn.Module):
    """torchvision.models.alexnet() layers (61,100,840 parameters)."""

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 11, 4, 2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
            nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
            nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        )
        self.classifier = nn.Sequential(
            nn.Dropout(0.5), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(0.5), nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Linear(4096, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (6, 6))
        return self.classifier(torch.flatten(x, 1))


class _DenseLayer(nn.Module):
    """torchvision DenseNet layer: BN-ReLU-Conv1x1 (4k) - BN-ReLU-Conv3x3 (k) on the concatenation."""

    def __init__(self, cin: int, growth: int, bn_size: int = 4):
        super().__init__()
        self.norm1, self.relu1 = nn.BatchNorm2d(cin), nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2, self.relu2 = nn.BatchNorm2d(bn_size * growth), nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        x = torch.cat(features, 1)
        return self.conv2(self.relu2(self.norm2(self.conv1(self.relu1(self.norm1(x))))))


class _DenseBlock(nn.Module):
    def __init__(self, n: int, cin: int, growth: int):
        super().__init__()
        self.layers = nn.ModuleList([_DenseLayer(cin + i * growth, growth) for i in range(n)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, 1)


class DenseNet121(nn.Module):
    """torchvision.models.densenet121() layers (7,978,856 parameters)."""

    def __init__(self, num_classes: int = 1000, growth: int = 32, blocks: Sequence[int] = (6, 12, 24, 16)):
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                   nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
        c = 64
        for i, n in enumerate(blocks):
            layers.append(_DenseBlock(n, c, growth))
            c += n * growth
            if i + 1 < len(blocks):
                layers += [nn.BatchNorm2d(c), nn.ReLU(inplace=True), nn.Conv2d(c, c // 2, 1, bias=False),
                           nn.AvgPool2d(2, 2)]
                c //= 2
        layers.append(nn.BatchNorm2d(c))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(c, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.relu(self.features(x), inplace=True)
        x = nn.functional.adaptive_avg_pool2d(x, 1)
        return self.classifier(torch.flatten(x, 1))


class RNNClassifier(nn.Module):
    """Embedding → stacked LSTM or GRU (batch first) → Linear on the last layer's final hidden state."""

    def __init__(self, cell: str = "lstm", vocab: int = 10000, emb: int = 256, hidden: int = 512,
                 layers: int = 2, num_classes: int = 4):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(emb, hidden, num_layers=layers, batch_first=True)
        self.fc = nn.Linear(hidden, num_classes)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        _, state = self.rnn(self.embedding(input_ids))
        h_n = state[0] if isinstance(state, tuple) else state
        return self.fc(h_n[-1])


class BiGRUClassifier(nn.Module):
    """Embedding → one bidirectional GRU layer (batch first) → Linear on the last step's output
    (both directions concatenated)."""

    def __init__(self, vocab: int = 10000, emb: int = 256, hidden: int = 512, num_classes: int = 4):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.rnn = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, num_classes)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(self.embedding(input_ids))
        return self.fc(y[:, -1])


class TiedLM(nn.Module):
    """Embedding (vocab x dim) → Linear → tanh → a Linear head whose weight *is* the embedding's
    (tied, as GPT-2's LM head): one parameter read by two ops. The logits are averaged over the
    vocabulary inside the graph, so the loss (outside it) stays small."""

    def __init__(self, vocab: int = 10000, dim: int = 256):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.fc = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embedding.weight

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.fc(self.embedding(input_ids)))).mean(-1)


class CrossEntropyLM(nn.Module):
    """Embedding (vocab x dim) → Linear → tanh → Linear head (vocab) → the cross-entropy loss
    against ``labels``, inside the graph (the exporter writes one SoftmaxCrossEntropyLoss): the
    loss autocast runs in fp32 (``cross_entropy_loss`` is in autocast_mode.cpp's CPU fp32 list)."""

    def __init__(self, vocab: int = 10000, dim: int = 256):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.fc = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = self.head(torch.tanh(self.fc(self.embedding(input_ids))))
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def lm_inputs(vocab: int):
    """input_ids and labels, both int64 [batch, seq] below ``vocab``."""

    def make(batch: int, seq: int, rng: np.random.Generator) -> dict:
        return {name: rng.integers(0, vocab, (batch, seq), dtype=np.int64) for name in ("input_ids", "labels")}

    return make


class MLP(nn.Module):
    """Linear(256, 512) → ReLU → Linear(512, 10): the cross-check model, counted by hand."""

    def __init__(self):
        super().__init__()
        self.fc1, self.relu, self.fc2 = nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.relu(self.fc1(x)))


class ViTWrapper(nn.Module):
    """pixel_values -> last_hidden_state of transformers' ViTModel (no pooler)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixel_values, return_dict=False)[0]


def build_vit(**config_kwargs) -> nn.Module:
    """ViT-B/16 at 224 (transformers' ViTConfig defaults: 12 layers, hidden 768, patch 16)."""
    from transformers import ViTConfig, ViTModel

    cfg = ViTConfig(attn_implementation="eager", **config_kwargs)
    return jitter_constant_params(ViTWrapper(ViTModel(cfg, add_pooling_layer=False))).eval()
