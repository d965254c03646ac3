#!/usr/bin/env python
"""Backward temporaries of channels-last convolutions: PyTorch measured vs graphmem's rule.

For each convolution (batch, C_in, C_out, H, W, kernel, stride, pad, groups) the input is an NHWC
tensor viewed as NCHW (``permute(0, 3, 1, 2)``, as ConvNeXt's LayerNorm leaves it), and one
backward runs twice — the input gradient alone, then the weight (and bias) gradients alone —
under ``torch.profiler(profile_memory=True)`` (the second of two runs, so no first-call caches
count). Measured: the highest live bytes inside ``torch.autograd.grad`` above its start, minus the
gradients it returns. Predicted: ``graphmem.training.kernels.backward_temporaries`` of the same
Conv (what the kernel holds beyond the gradients it returns) on this machine's host profile
(``graphmem host``) with torch's thread count.

    python scripts/probes/probe_conv_nhwc.py [--threads N] [--only dx|dw] [--dtype fp32|bf16|fp16] [--nchw] [CONFIG ...]

CONFIG is ``B,Cin,Cout,H,W,k,s,p,g`` (e.g. ``4,96,192,56,56,2,2,0,1``, ConvNeXt-T's first
downsample); without any, a built-in list: ConvNeXt's downsamples, stride 1 (3x3, 7x7, 1x1),
strided with padding, widths not a multiple of the stride, more than 4096 input positions,
grouped, and 3x3 depthwise ones. Exit status 1 when a figure differs. ``ONEDNN_VERBOSE=1`` shows
the kernels oneDNN picks. ``--dtype bf16|fp16``: the convolution in that type (input, weight and
bias, as ``torch.autocast('cpu')`` runs it: its weight is the cast copy, and the gradients come
back in the half type); ``--nchw``: a contiguous input instead of the permuted one.
"""

from __future__ import annotations

import argparse
import sys

import torch
from onnx import TensorProto, helper
from torch.profiler import ProfilerActivity, profile

from graphmem.model.types import TensorType
from graphmem.host import HostProfile
from graphmem.training.kernels import backward_temporaries
from graphmem.training.saved import OpView

DEFAULT = [
    (1, 96, 192, 56, 56, 2, 2, 0, 1), (4, 96, 192, 56, 56, 2, 2, 0, 1),  # ConvNeXt-T downsamples
    (1, 192, 384, 28, 28, 2, 2, 0, 1), (4, 192, 384, 28, 28, 2, 2, 0, 1),
    (1, 384, 768, 14, 14, 2, 2, 0, 1), (4, 384, 768, 14, 14, 2, 2, 0, 1),
    (4, 64, 64, 32, 32, 3, 1, 1, 1), (4, 64, 64, 32, 32, 7, 1, 3, 1), (4, 64, 64, 32, 32, 1, 1, 0, 1),
    (4, 64, 128, 32, 32, 3, 2, 1, 1), (4, 64, 128, 32, 32, 1, 2, 0, 1), (1, 32, 64, 64, 64, 4, 4, 0, 1),
    (4, 64, 128, 31, 31, 3, 2, 1, 1), (4, 64, 128, 33, 33, 2, 2, 0, 1),  # iw % stride: exec_trans
    (2, 32, 64, 80, 80, 3, 2, 1, 1), (2, 16, 32, 112, 112, 2, 2, 0, 1),  # > 4096 input positions
    (4, 64, 128, 32, 32, 3, 2, 1, 2), (4, 64, 128, 32, 32, 3, 1, 1, 2),  # grouped
    (1, 32, 32, 112, 112, 3, 1, 1, 32), (4, 96, 96, 56, 56, 3, 1, 1, 96),  # 3x3 depthwise
    (4, 144, 144, 56, 56, 3, 2, 1, 144), (1, 960, 960, 7, 7, 3, 1, 1, 960),
]


DTYPES = {"fp32": (torch.float32, TensorProto.FLOAT), "bf16": (torch.bfloat16, TensorProto.BFLOAT16),
          "fp16": (torch.float16, TensorProto.FLOAT16)}


def measure(cfg: tuple[int, ...], phase: str, dtype: str = "fp32", nhwc: bool = True) -> tuple[int, tuple[int, ...]]:
    b, cin, cout, h, w, k, s, p, g = cfg
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(cin, cout, k, s, padding=p, groups=g).to(DTYPES[dtype][0])
    conv.weight.requires_grad_(phase == "dw")
    conv.bias.requires_grad_(phase == "dw")
    x = torch.randn(b, h, w, cin, dtype=DTYPES[dtype][0]).permute(0, 3, 1, 2)
    if not nhwc:
        x = x.contiguous()
    if phase == "dx":
        x.requires_grad_()
    wrt = [x] if phase == "dx" else [conv.weight, conv.bias]
    for _ in range(2):
        y = conv(x)
        dy = torch.ones_like(y)
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            grads = torch.autograd.grad(y, wrt, dy)
    live = peak = 0
    for e in sorted(prof.profiler.kineto_results.events(), key=lambda e: e.start_ns()):
        if e.name() == "[memory]":
            live += e.nbytes()
            peak = max(peak, live)
    return peak - sum(t.numel() * t.element_size() for t in grads), tuple(y.shape)


def predicted(cfg: tuple[int, ...], phase: str, y_shape: tuple[int, ...], host: HostProfile, dtype: str = "fp32",
              nhwc: bool = True) -> int:
    b, cin, cout, h, w, k, s, p, g = cfg
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], group=g, kernel_shape=[k, k], strides=[s, s], pads=[p] * 4)
    t = lambda shape: TensorType(dtype=DTYPES[dtype][1], shape=tuple(shape))  # noqa: E731
    types = {"x": t((b, cin, h, w)), "W": t((cout, cin // g, k, k)), "B": t((cout,)), "y": t(y_shape)}
    op = OpView(op_type="Conv", node=node, inputs=("x", "W", "B"), outputs=("y",), types=types,
                needs_grad=frozenset({"x"} if phase == "dx" else {"W", "B"}), weights=frozenset({"W", "B"}),
                orders={"x": (0, 2, 3, 1)} if nhwc else {})
    return backward_temporaries(op, host)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", metavar="CONFIG")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads (graphmem's host profile follows it)")
    ap.add_argument("--only", choices=("dx", "dw"))
    ap.add_argument("--dtype", choices=list(DTYPES), default="fp32")
    ap.add_argument("--nchw", action="store_true", help="a contiguous (NCHW) input")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    configs = [tuple(int(v) for v in c.split(",")) for c in args.configs] or DEFAULT
    from dataclasses import replace

    from graphmem.host import this_host

    host = replace(this_host(), torch_threads=torch.get_num_threads())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads (graphmem assumes {host.torch_threads}); "
          f"{args.dtype}, {'nchw' if args.nchw else 'nhwc'}; bytes held beyond the returned gradients")
    bad = 0
    for cfg in configs:
        for phase in ("dx", "dw") if args.only is None else (args.only,):
            meas, y_shape = measure(cfg, phase, args.dtype, not args.nchw)
            pred = predicted(cfg, phase, y_shape, host, args.dtype, not args.nchw)
            ok = "ok" if pred == meas else "DIFF"
            bad += pred != meas
            print(f"{'x'.join(map(str, cfg)):<28} {phase}  measured {meas:>11,}  predicted {pred:>11,}  "
                  f"diff {pred - meas:>+10,}  {ok}", flush=True)
    print(f"{bad} figure(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
