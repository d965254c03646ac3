#!/usr/bin/env python
"""Check ``graphmem train`` against real PyTorch training steps on CPU.

    python scripts/train_check.py [--only NAME ...] [--batches 1 4] [--optimizers sgd momentum adam adamw]
                                  [--grads released|persistent] [--foreach] [--out DIR]

For each model (ResNet-18, MobileNetV2, a small UNet, an LSTM classifier, BERT-base and GPT-2
small at seq 128; random weights, fixed seeds) the script

1. exports it once in training mode (``TrainingMode.TRAINING``, ``do_constant_folding=False``,
   TorchScript exporter, opset 17, dynamic batch/seq) into ``DIR`` (default ``.cache/train_check``);
2. for each batch size and optimizer, builds a fresh model and runs two real training steps
   (``zero_grad``; forward; loss = Σ mean(output²) over the outputs; ``backward``; ``step``) on
   CPU with two threads, and measures:

   * **saved**: bytes of the unique storages autograd saves during the forward of step 2
     (``torch.autograd.graph.saved_tensors_hooks``, deduplicated by
     ``untyped_storage().data_ptr()``; parameters and buffers excluded: they are weights);
   * **live bytes over the step**: ``torch.profiler`` with ``profile_memory=True`` is started
     *before the model is built*, so every tensor alive during the step was allocated under it;
     the running sum of its ``[memory]`` events (exact requested bytes of the CPU allocator, which
     does not cache) is the live tensor bytes at every moment. Phases are ``record_function``
     ranges. **activation peak** = the forward's (model + loss) highest live bytes minus the
     live bytes when it starts; **step peak** = highest live bytes during step 2 (weights,
     gradients, optimizer state and inputs included); its phase is where it happens;

3. prints predicted vs measured, with the relative error of each figure.

Bars: saved within 5 %, activation peak within 10 %, step peak (Adam, step 2) within 10 %.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch import nn

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _torch_models as tm  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, ".cache", "train_check")
TRACE_BATCH, TRACE_SEQ = 2, 16
BARS = {"saved": 0.05, "act": 0.10, "step": 0.10}


# --------------------------------------------------------------------------- models
class BasicBlock(nn.Module):
    """torchvision ResNet basic block."""

    def __init__(self, inplanes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = tm._conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = tm._conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(tm._conv1x1(inplanes, planes, stride), nn.BatchNorm2d(planes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    """Same layers as torchvision.models.resnet18() (11,689,512 parameters)."""

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], 64
        for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.Sequential(BasicBlock(cin, planes, stride), BasicBlock(planes, planes)))
            cin = planes
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


@dataclass
class Spec:
    name: str
    build: Callable[[], nn.Module]
    make_inputs: Callable[[int, int, np.random.Generator], dict]
    output_names: list[str]
    dynamic_axes: dict
    seq: int = 0


def specs() -> dict[str, Spec]:
    img = lambda c, s: tm.image_inputs("input", c, s, s)  # noqa: E731
    out = lambda n: tm.batch_axes(["input", n])  # noqa: E731
    return {
        s.name: s
        for s in (
            Spec("resnet18", ResNet18, img(3, 224), ["logits"], out("logits")),
            Spec("mobilenetv2", tm.MobileNetV2, img(3, 224), ["logits"], out("logits")),
            Spec("unet", lambda: tm.TinyUNet(cin=1, cout=1, c=16), img(1, 128), ["mask"], out("mask")),
            Spec(
                "lstm",
                lambda: tm.TinyLSTM(vocab=10000, emb=128, hidden=256, num_classes=4),
                tm.token_inputs(10000, with_mask=False),
                ["logits"],
                {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch"}},
                seq=64,
            ),
            Spec(
                "bert_base",
                tm.build_bert,
                tm.token_inputs(30522, with_mask=True),
                ["last_hidden_state", "pooler_output"],
                {
                    **tm.batch_axes(["input_ids", "attention_mask", "last_hidden_state"], {1: "seq"}),
                    "pooler_output": {0: "batch"},
                },
                seq=128,
            ),
            Spec(
                "gpt2_small",
                tm.build_gpt2,
                tm.token_inputs(50257, with_mask=False),
                ["last_hidden_state"],
                tm.batch_axes(["input_ids", "last_hidden_state"], {1: "seq"}),
                seq=128,
            ),
        )
    }


# --------------------------------------------------------------------------- measuring
@dataclass
class Measured:
    saved: int
    act_peak: int
    step_peak: int
    phase: str
    phase_peaks: dict
    seconds: float


def make_optimizer(name: str, model: nn.Module, foreach: bool) -> torch.optim.Optimizer:
    p = model.parameters()
    kw = {"foreach": foreach}
    if name == "sgd":
        return torch.optim.SGD(p, lr=1e-3, **kw)
    if name == "momentum":
        return torch.optim.SGD(p, lr=1e-3, momentum=0.9, **kw)
    if name == "adam":
        return torch.optim.Adam(p, lr=1e-4, **kw)
    return torch.optim.AdamW(p, lr=1e-4, **kw)


def loss_of(out) -> torch.Tensor:  # type: ignore[no-untyped-def]
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return sum(o.pow(2).mean() for o in outs)


def measure(spec: Spec, batch: int, optimizer: str, grads: str, foreach: bool) -> Measured:
    from torch.autograd.graph import saved_tensors_hooks
    from torch.profiler import ProfilerActivity, profile, record_function

    t0 = time.perf_counter()
    saved: dict[int, int] = {}
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        with record_function("build"):
            torch.manual_seed(0)
            model = spec.build().train()
            feeds = [torch.from_numpy(v) for v in spec.make_inputs(batch, spec.seq, np.random.default_rng(1)).values()]
            opt = make_optimizer(optimizer, model, foreach)
        owned = {t.untyped_storage().data_ptr() for t in (*model.parameters(), *model.buffers())}

        def pack(t: torch.Tensor) -> torch.Tensor:
            st = t.untyped_storage()
            if st.data_ptr() not in owned:
                saved[st.data_ptr()] = st.nbytes()
            return t

        for step in (1, 2):
            with record_function(f"s{step}:zero_grad"):
                opt.zero_grad(set_to_none=grads == "released")
            with record_function(f"s{step}:forward"):
                if step == 2:
                    with saved_tensors_hooks(pack, lambda t: t):
                        out = model(*feeds)
                else:
                    out = model(*feeds)
                loss = loss_of(out)
                del out
            with record_function(f"s{step}:backward"):
                loss.backward()
            with record_function(f"s{step}:optimizer"):
                opt.step()
            del loss
    events = prof.profiler.kineto_results.events()
    mem = sorted(((e.start_ns(), e.nbytes()) for e in events if e.name() == "[memory]"), key=lambda x: x[0])
    ranges = {e.name(): (e.start_ns(), e.end_ns()) for e in events if e.name().startswith("s2:")}
    times = np.array([m[0] for m in mem], dtype=np.int64)
    live = np.cumsum([m[1] for m in mem])

    def peak(name: str) -> int:
        a, b = ranges[name]
        i, j = np.searchsorted(times, a), np.searchsorted(times, b, side="right")
        before = int(live[i - 1]) if i > 0 else 0
        return max([before, *live[i:j].tolist()])

    fa = ranges["s2:forward"][0]
    start = int(live[np.searchsorted(times, fa) - 1])
    phases = {p: peak(f"s2:{p}") for p in ("zero_grad", "forward", "backward", "optimizer")}
    top = max(phases, key=phases.get)  # type: ignore[arg-type]
    return Measured(
        saved=sum(saved.values()),
        act_peak=phases["forward"] - start,
        step_peak=phases[top],
        phase=top,
        phase_peaks=phases,
        seconds=time.perf_counter() - t0,
    )


# --------------------------------------------------------------------------- main
def export(spec: Spec, path: str) -> None:
    torch.manual_seed(0)
    model = spec.build()
    feeds = spec.make_inputs(TRACE_BATCH, TRACE_SEQ if spec.seq else 0, np.random.default_rng(0))
    tm.export_onnx(model, feeds, path, spec.output_names, spec.dynamic_axes, training=True)


def err(pred: int, meas: int) -> float:
    return (pred - meas) / meas if meas else 0.0


def mib(n: int) -> str:
    return f"{n / 2**20:9.2f}"


def main(argv: list[str] | None = None) -> int:
    all_specs = specs()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", choices=list(all_specs), metavar="NAME")
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 4])
    ap.add_argument("--optimizers", nargs="+", default=["sgd", "momentum", "adam", "adamw"],
                    choices=["sgd", "momentum", "adam", "adamw"])
    ap.add_argument("--grads", default="released", choices=["released", "persistent"])
    ap.add_argument("--foreach", action="store_true", help="optimizers with foreach=True")
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args(argv)

    from graphmem.training import estimate_training

    torch.set_num_threads(2)
    os.makedirs(args.out, exist_ok=True)
    print(f"torch {torch.__version__}, CPU, 2 threads, grads {args.grads}, foreach {args.foreach}; "
          "MiB = 2**20 bytes; err = (predicted - measured) / measured")
    failures = []
    for name in args.only or list(all_specs):
        spec = all_specs[name]
        path = os.path.join(args.out, f"{name}.onnx")
        if not os.path.exists(path):
            export(spec, path)
        for batch in args.batches:
            dims = {"batch": batch, **({"seq": spec.seq} if spec.seq else {})}
            first = True
            for optimizer in args.optimizers:
                est = estimate_training(path, dims=dims, optimizer=optimizer, grads=args.grads,
                                        foreach=args.foreach)
                m = measure(spec, batch, optimizer, args.grads, args.foreach)
                rows = []
                if first:
                    rows += [("saved", est.saved_bytes, m.saved), ("act peak", est.activation_peak_bytes, m.act_peak)]
                rows.append((f"step peak {optimizer}", est.step_peak_bytes, m.step_peak))
                for label, p, q in rows:
                    e = err(p, q)
                    key = "saved" if label == "saved" else "act" if label == "act peak" else "step"
                    gated = key != "step" or optimizer == "adam"
                    ok = abs(e) <= BARS[key]
                    mark = ("ok" if ok else "MISS") if gated else ""
                    extra = f"  phase {est.peak_phase}/{m.phase}" if key == "step" else ""
                    print(f"{name:<12} b{batch:<2} {label:<20} pred {mib(p)} meas {mib(q)} MiB  "
                          f"err {e:+6.1%} {mark:<4}{extra}", flush=True)
                    if gated and not ok:
                        failures.append(f"{name} b{batch} {label}")
                if optimizer == "adam":
                    naive = est.weights_bytes + est.grads_bytes + est.optimizer_state_bytes + est.saved_bytes
                    print(f"{name:<12} b{batch:<2} {'naive W+G+S+saved':<20} {mib(naive)} MiB: measured "
                          f"adam step peak {err(m.step_peak, naive):+.1%} of it", flush=True)
                first = False
            print(f"{name:<12} b{batch:<2} ({m.seconds:.0f} s per measured run)", flush=True)
    print("bars missed: " + (", ".join(failures) if failures else "none"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
