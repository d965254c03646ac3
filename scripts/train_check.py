#!/usr/bin/env python
"""Check ``graphmem train`` against real PyTorch training steps on CPU.

    python scripts/train_check.py [--only NAME ...] [--batches 1 4] [--optimizers sgd momentum adam adamw]
                                  [--grads released persistent] [--foreach] [--precision fp32|mixed-bf16|mixed-fp16]
                                  [--no-cross-check] [--out DIR] [--measured FILE]

Models (random weights, fixed seeds): ResNet-18, MobileNetV2, a small UNet, a bidirectional LSTM
classifier, BERT-base and GPT-2 small at seq 128; EfficientNet-B0, ConvNeXt-Tiny, AlexNet and
ViT-B/16 at 224; LSTM and GRU classifiers (Embedding 10,000x256, 2 layers of 512, Linear head) at
seq 64; a bidirectional GRU classifier (one layer of 512, seq 64); a tied-embedding LM
(Embedding 10,000x256 shared with its output Linear, seq 64: one parameter read by two ops); an
LM with its cross-entropy loss in the graph (``ce_lm``: Embedding 10,000x256, Linear, tanh, a
10,000-way head, ``F.cross_entropy`` against a ``labels`` input, seq 64); and
DenseNet-121, held out: not measured while the rules were written
(issue 15). For each the script

1. exports it once in training mode (``TrainingMode.TRAINING``, ``do_constant_folding=False``,
   TorchScript exporter, opset 17, dynamic batch/seq) into ``DIR`` (default ``.cache/train_check``);
2. for each batch size, gradient mode and optimizer, builds a fresh model and runs two real
   training steps (``zero_grad``; forward; loss = Σ mean(output²) over the outputs;
   ``backward``; ``step``) on CPU with two threads, and measures:

   * **saved**: bytes of the unique storages autograd saves during the forward of step 2
     (``torch.autograd.graph.saved_tensors_hooks``, deduplicated by
     ``untyped_storage().data_ptr()``; parameters and buffers excluded: they are weights);
   * **live bytes over the step**: ``torch.profiler`` with ``profile_memory=True`` is started
     *before the model is built* (inputs are cloned into torch memory, which the profiler sees),
     so every tensor alive during the step was allocated under it; the running sum of its
     ``[memory]`` events (exact requested bytes of the CPU allocator, which does not cache) is
     the live tensor bytes at every moment. Phases are ``record_function`` ranges. **forward
     activation peak** = the forward's (model + loss) highest live bytes minus the live bytes
     when it starts; **backward activation peak** = the backward's highest minus the same start;
     **step peak** = highest live bytes during step 2 (weights, gradients, optimizer state and
     inputs included); its phase is where it happens;

3. prints predicted vs measured, with the relative error of each figure.

``--precision mixed-bf16|mixed-fp16``: the forward (model and loss) under
``torch.autocast('cpu', dtype=torch.bfloat16|torch.float16)``, backward and step outside it;
mixed-fp16 with ``torch.amp.GradScaler('cpu')`` (``scaler.scale(loss).backward()``,
``scaler.step(opt)``, ``scaler.update()``: float16's range needs it, bfloat16 is used without one),
step 1 repeated until the scaler stops skipping it. ``--foreach``: the optimizers with
``foreach=True`` (``_multi_tensor_*``). ``--measured FILE`` keeps the measurements in a JSON file
and reuses them (to re-compare graphmem's predictions without re-running torch).

First, a **cross-check** of the method itself: a Linear-ReLU-Linear MLP whose saved bytes,
forward peak and Adam step peak are counted by hand (:func:`mlp_by_hand`) must measure equal.

Bars: saved within 2 %, activation peaks within 5 %, step peak within 5 %, for every optimizer
and both gradient modes.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
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
BARS = {"saved": 0.02, "act": 0.05, "step": 0.05}


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
            Spec("efficientnet_b0", tm.EfficientNetB0, img(3, 224), ["logits"], out("logits")),
            Spec("convnext_tiny", tm.ConvNeXtTiny, img(3, 224), ["logits"], out("logits")),
            # ConvNeXt-atto widths and depths with 3x3 depthwise convs on the channels-last stream:
            # jit_uni_dw's nhwc weight gradient and its per-thread reduction buffers
            Spec("convnext_dw3", lambda: tm.ConvNeXtTiny(dims=(40, 80, 160, 320), depths=(2, 2, 6, 2), kernel=3),
                 img(3, 224), ["logits"], out("logits")),
            Spec("alexnet", tm.AlexNet, img(3, 224), ["logits"], out("logits")),
            Spec(
                "vit_b16",
                tm.build_vit,
                tm.image_inputs("pixel_values", 3, 224, 224),
                ["last_hidden_state"],
                tm.batch_axes(["pixel_values", "last_hidden_state"]),
            ),
            *(
                Spec(
                    name,
                    lambda cell=cell: tm.RNNClassifier(cell, vocab=10000, emb=256, hidden=512, layers=2),
                    tm.token_inputs(10000, with_mask=False),
                    ["logits"],
                    {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch"}},
                    seq=64,
                )
                for name, cell in (("lstm_2x512", "lstm"), ("gru_2x512", "gru"))
            ),
            Spec(
                "bigru_512",
                tm.BiGRUClassifier,
                tm.token_inputs(10000, with_mask=False),
                ["logits"],
                {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch"}},
                seq=64,
            ),
            Spec(
                "tied_lm",
                tm.TiedLM,
                tm.token_inputs(10000, with_mask=False),
                ["logits"],
                {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}},
                seq=64,
            ),
            Spec(
                "ce_lm",
                tm.CrossEntropyLM,
                tm.lm_inputs(10000),
                ["loss"],
                {"input_ids": {0: "batch", 1: "seq"}, "labels": {0: "batch", 1: "seq"}},
                seq=64,
            ),
            # held out: not measured while the rules were written (issue 15)
            Spec("densenet121", tm.DenseNet121, img(3, 224), ["logits"], out("logits")),
        )
    }


# --------------------------------------------------------------------------- measuring
@dataclass
class Measured:
    saved: int
    act_peak: int  # forward (model + loss) above the live bytes when it starts
    bwd_peak: int  # backward above the live bytes when the forward starts
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


#: ``--precision`` -> the autocast dtype of the forward (model + loss); fp32: no autocast.
AUTOCAST = {"fp32": None, "mixed-bf16": torch.bfloat16, "mixed-fp16": torch.float16}


def measure(spec: Spec, batch: int, optimizer: str, grads: str, foreach: bool,
            precision: str = "fp32") -> Measured:
    """One measured run. ``precision`` mixed-*: the forward (model and loss) runs under
    ``torch.autocast('cpu', dtype=...)`` and backward/step outside it, as a user writes a CPU
    mixed-precision step; mixed-fp16 also scales the loss with ``torch.amp.GradScaler('cpu')``
    (float16's range needs it; bfloat16's does not, PyTorch's AMP recipe uses none for it)."""
    from torch.autograd.graph import saved_tensors_hooks
    from torch.profiler import ProfilerActivity, profile, record_function

    t0 = time.perf_counter()
    saved: dict[int, int] = {}
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        with record_function("build"):
            torch.manual_seed(0)
            model = spec.build().train()
            # cloned: torch.from_numpy shares numpy's memory, which the profiler does not see
            feeds = [torch.from_numpy(v).clone() for v in spec.make_inputs(batch, spec.seq, np.random.default_rng(1)).values()]
            opt = make_optimizer(optimizer, model, foreach)
            scaler = torch.amp.GradScaler("cpu") if precision == "mixed-fp16" else None
        dtype = AUTOCAST[precision]

        def autocast():  # type: ignore[no-untyped-def]
            return contextlib.nullcontext() if dtype is None else torch.autocast("cpu", dtype=dtype)

        owned = {t.untyped_storage().data_ptr() for t in (*model.parameters(), *model.buffers())}

        def pack(t: torch.Tensor) -> torch.Tensor:
            st = t.untyped_storage()
            if st.data_ptr() not in owned:
                saved[st.data_ptr()] = st.nbytes()
            return t

        def one_step(step: int) -> bool:
            """One training step (``s<step>:*`` ranges); True when it updated the weights."""
            with record_function(f"s{step}:zero_grad"):
                opt.zero_grad(set_to_none=grads == "released")
            with record_function(f"s{step}:forward"), autocast():
                if step == 2:
                    with saved_tensors_hooks(pack, lambda t: t):
                        out = model(*feeds)
                else:
                    out = model(*feeds)
                loss = loss_of(out)
                del out
            with record_function(f"s{step}:backward"):
                (loss if scaler is None else scaler.scale(loss)).backward()
            with record_function(f"s{step}:optimizer"):  # the loss is alive until the step is done
                if scaler is None:
                    opt.step()
                    updated = True
                else:
                    before = scaler.get_scale()
                    scaler.step(opt)
                    scaler.update()
                    updated = scaler.get_scale() >= before  # update() halves a skipped step's scale
            del loss
            return updated

        # step 2 is measured once a step has updated the weights (steady state: optimizer state
        # allocated). GradScaler skips a step whose scaled gradients overflow (and halves the
        # scale): under mixed-fp16 step 1 is repeated until one updates (at most 16 times).
        for _ in range(16):
            if one_step(1):
                break
        if not one_step(2):
            print(f"  note: {spec.name} b{batch} {optimizer}: GradScaler skipped the measured step", flush=True)
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
        bwd_peak=phases["backward"] - start,
        step_peak=phases[top],
        phase=top,
        phase_peaks=phases,
        seconds=time.perf_counter() - t0,
    )


# --------------------------------------------------------------------------- cross-check
def mlp_by_hand(batch: int, precision: str = "fp32", foreach: bool = False) -> dict[str, int]:
    """What the measurement must give for :class:`tm.MLP` (Linear 256→512, ReLU, Linear 512→10),
    counted by hand, Adam, gradients released.

    fp32:

    * saved: fc1's addmm holds its input x f32[b,256]; ReLU its result r f32[b,512]; fc2's addmm
      holds r again (one storage); the weights (W.t() views) are parameters: 1024·b + 2048·b;
    * forward: h = fc1(x) f32[b,512] and r = relu(h) are both alive while ReLU runs (then h dies,
      nothing saves it): 4096·b. Later, r + y + y² + the loss scalars stay far below;
    * Adam step (step 2): weights W, gradients G (= W), exp_avg and exp_avg_sq (2W), four 4-byte
      ``step`` scalars, the input x, the 4-byte loss, and sqrt(exp_avg_sq) / c of the largest
      parameter (fc1.weight, 512·256·4 bytes) — two temporaries alive at once — with the 8-byte
      and 4-byte scalar tensors the division makes of the Python float ``bias_correction2_sqrt``.
      ``foreach``: ``_foreach_sqrt`` makes sqrt(exp_avg_sq) of every parameter at once
      (``_multi_tensor_adam``), then ``_foreach_div_`` divides each in place by its Python float
      (the same 8- and 4-byte scalars, one parameter at a time).

    mixed-bf16 / mixed-fp16 (``torch.autocast('cpu')``, 2-byte half; ``cached_cast`` in
    aten/src/ATen/autocast_mode.cpp):

    * fc1: linear casts x (512·b B, not cached: not a leaf needing a gradient), W1 (262,144 B)
      and b1 (1,024 B) — both leaves needing a gradient, so held by the cast cache until autocast
      exits; h = addmm f16[b,512] (1024·b); r = relu(h) (1024·b), then h dies;
    * fc2 casts W2 (10,240 B) and b2 (20 B), cached; y f16[b,10] (20·b); the loss: y² (20·b),
      mean's 2-byte result, its 4-byte fp32 sum and y² cast to fp32 (40·b; CPU ``mean`` of a
      reduced-precision tensor sums in fp32);
    * saved: x's cast (fc1's addmm; W1's cast is not saved: x needs no gradient), r, W2's cast
      (fc2's addmm: r needs a gradient): 512·b + 1024·b + 10,240;
    * forward peak: the larger of ReLU's moment (casts of W1, b1, x; h; r) and the loss's (casts
      of W1, b1, x, W2, b2; r; y; y²; the mean's 2 + 4 + 40·b);
    * Adam step: as fp32 (weights, gradients and state stay fp32) with a 2-byte loss; mixed-fp16
      adds the GradScaler's 0-d fp32 ``_scale`` and int32 ``_growth_tracker`` and the 4-byte
      ``found_inf`` copy ``unscale_`` keeps per device for ``step`` (torch/amp/grad_scaler.py).
    """
    params = (256 * 512 + 512 + 512 * 10 + 10) * 4
    adam_temps = params if foreach else 2 * 512 * 256 * 4
    if precision == "fp32":
        return {
            "saved": 1024 * batch + 2048 * batch,
            "act": 4096 * batch,
            "step": 4 * params + 4 * 4 + 1024 * batch + 4 + adam_temps + 8 + 4,
        }
    casts1 = 2 * 512 * 256 + 2 * 512 + 2 * 256 * batch  # W1, b1, x
    relu_moment = casts1 + 2 * 512 * batch + 2 * 512 * batch  # + h + r
    loss_moment = casts1 + 2 * 512 * batch + 2 * 512 * 10 + 2 * 10 + 2 * 10 * batch + 2 * 10 * batch + 2 + 4 + 40 * batch
    scaler = 4 + 4 + 4 if precision == "mixed-fp16" else 0
    return {
        "saved": 2 * 256 * batch + 2 * 512 * batch + 2 * 512 * 10,
        "act": max(relu_moment, loss_moment),
        "step": 4 * params + 4 * 4 + 1024 * batch + 2 + adam_temps + 8 + 4 + scaler,
    }


def cross_check(batches: list[int], precision: str = "fp32", foreach: bool = False) -> list[str]:
    """Measure the hand-counted MLP; a mismatch means the measuring method, not graphmem, is off.

    Under autocast the MLP is measured with oneDNN off (``torch.backends.mkldnn.flags``): a
    reduced-precision addmm then runs ATen's own gemm, which allocates nothing, where oneDNN's
    matmul allocates a scratchpad no hand count can know (75 to 135 kB here; graphmem names it
    in ``warnings``). The models are measured with oneDNN on, as a user runs them."""
    spec = Spec("mlp", tm.MLP, lambda b, s, rng: {"x": rng.standard_normal((b, 256), dtype=np.float32)},
                ["y"], {})
    failures = []
    mode = f"{precision}{' foreach' if foreach else ''}"
    for batch in batches:
        with contextlib.nullcontext() if precision == "fp32" else torch.backends.mkldnn.flags(enabled=False):
            m = measure(spec, batch, "adam", "released", foreach, precision)
        hand = mlp_by_hand(batch, precision, foreach)
        got = {"saved": m.saved, "act": m.act_peak, "step": m.step_peak}
        same = got == hand
        print(f"cross-check mlp b{batch} {mode}: measured saved {got['saved']:,} act peak {got['act']:,} "
              f"adam step peak {got['step']:,} B; by hand {hand['saved']:,} {hand['act']:,} {hand['step']:,} B: "
              + ("equal" if same else "DIFFERENT"), flush=True)
        if not same:
            failures.append(f"cross-check mlp b{batch} {mode}")
    return failures


# --------------------------------------------------------------------------- main
def export(spec: Spec, path: str) -> None:
    torch.manual_seed(0)
    model = spec.build()
    feeds = spec.make_inputs(TRACE_BATCH, TRACE_SEQ if spec.seq else 0, np.random.default_rng(0))
    tm.export_onnx(model, feeds, path, spec.output_names, spec.dynamic_axes, training=True)


def measured(path: str | None, key: tuple, run: Callable[[], Measured]) -> Measured:
    """``run()``, or its result stored in the JSON file ``path`` under ``key`` (stored there after
    running when missing). The stored figures are exact profiler bytes of an earlier run."""
    import json

    if path is None:
        return run()
    store = json.load(open(path)) if os.path.exists(path) else {}
    k = " ".join(map(str, key)) + f" torch {torch.__version__}"
    if k not in store:
        store[k] = dataclasses.asdict(run())
        with open(path + ".tmp", "w") as f:
            json.dump(store, f, indent=0, sort_keys=True)
        os.replace(path + ".tmp", path)
    return Measured(**store[k])


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
    ap.add_argument("--grads", nargs="+", default=["released", "persistent"], choices=["released", "persistent"])
    ap.add_argument("--foreach", action="store_true", help="optimizers with foreach=True")
    ap.add_argument("--precision", default="fp32", choices=list(AUTOCAST),
                    help="mixed-*: the forward under torch.autocast('cpu'); mixed-fp16 with a GradScaler")
    ap.add_argument("--no-cross-check", action="store_true", help="skip the hand-counted MLP")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--measured", metavar="FILE",
                    help="JSON file of measurements: runs found in it are not measured again, new ones "
                         "are added (to re-compare graphmem's predictions without re-running torch)")
    args = ap.parse_args(argv)

    from graphmem.training import estimate_training

    torch.set_num_threads(2)
    os.makedirs(args.out, exist_ok=True)
    print(f"torch {torch.__version__}, CPU, 2 threads, foreach {args.foreach}, precision {args.precision}; MiB = 2**20 bytes; "
          f"err = (predicted - measured) / measured; bars: saved {BARS['saved']:.0%}, activation "
          f"peaks {BARS['act']:.0%}, step peak {BARS['step']:.0%}")
    failures = [] if args.no_cross_check else cross_check(args.batches, args.precision, args.foreach)
    worst: dict[str, float] = {}
    for name in args.only or list(all_specs):
        spec = all_specs[name]
        path = os.path.join(args.out, f"{name}.onnx")
        if not os.path.exists(path):
            export(spec, path)
        for batch in args.batches:
            m: Measured | None = None
            dims = {"batch": batch, **({"seq": spec.seq} if spec.seq else {})}
            for grads in args.grads:
                first = True
                for optimizer in args.optimizers:
                    est = estimate_training(path, dims=dims, optimizer=optimizer, grads=grads, foreach=args.foreach,
                                             precision=args.precision)
                    try:
                        m = measured(args.measured, (name, batch, optimizer, grads, args.foreach, args.precision),
                                     lambda: measure(spec, batch, optimizer, grads, args.foreach, args.precision))
                    except RuntimeError as e:  # a step PyTorch itself cannot run (LSTM in float16)
                        print(f"{name:<15} b{batch:<2} {grads:<10} torch cannot run this step: "
                              f"{str(e).splitlines()[0][:120]}; graphmem warnings {list(est.warnings)}", flush=True)
                        break

                    rows = []
                    if first:
                        rows += [("saved", "saved", est.saved_bytes, m.saved),
                                 ("act", "fwd act peak", est.activation_peak_bytes, m.act_peak),
                                 ("act", "bwd act peak", est.backward_peak_bytes, m.bwd_peak)]
                    rows.append(("step", f"step peak {optimizer}", est.step_peak_bytes, m.step_peak))
                    for key, label, p, q in rows:
                        e = err(p, q)
                        ok = abs(e) <= BARS[key]
                        worst[key] = max(worst.get(key, 0.0), abs(e))
                        extra = f"  phase {est.peak_phase}/{m.phase}" if key == "step" else ""
                        print(f"{name:<15} b{batch:<2} {grads:<10} {label:<18} pred {mib(p)} meas {mib(q)} MiB  "
                              f"err {e:+6.1%} {'ok' if ok else 'MISS':<4}{extra}", flush=True)
                        if not ok:
                            failures.append(f"{name} b{batch} {grads} {label}")
                    if first and (est.unknown_ops or est.warnings):
                        print(f"{name:<15} b{batch:<2} {grads:<10} unknown ops {dict(est.unknown_ops)} "
                              f"warnings {list(est.warnings)}", flush=True)
                    first = False
            if m is not None:
                print(f"{name:<15} b{batch:<2} ({m.seconds:.0f} s per measured run)", flush=True)
    print("worst |err|: " + ", ".join(f"{k} {v:.2%}" for k, v in worst.items()))
    print("bars missed: " + (", ".join(failures) if failures else "none"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
