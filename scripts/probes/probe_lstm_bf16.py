#!/usr/bin/env python
"""oneDNN's bf16 LSTM buffers: PyTorch measured vs ``graphmem.training.kernels.onednn_rnn``.

For each shape (steps, batch, input size, hidden) one ``nn.LSTM`` layer runs a forward and a
backward under ``torch.autocast('cpu', dtype=torch.bfloat16)`` with
``torch.profiler(profile_memory=True)`` (the second of two steps, so no first-call caches count).
Measured, inside the innermost ``aten::mkldnn_rnn_layer`` and ``aten::mkldnn_rnn_layer_backward``:
the brgemm scratchpad (the last allocation before the first free: ideep allocates it after the
layer's tensors) and the two reordered weights (the two allocations before it forward; backward,
the two before oneDNN's f32 weight and bias gradients). Predicted: ``lstm_bf16_scratchpad`` and
``lstm_bf16_weights`` with torch's thread count and this CPU's flags.

    python scripts/probes/probe_lstm_bf16.py [--threads N] [T,B,I,H ...]

Without shapes, a built-in list: the train_check LSTMs (TinyLSTM 128->256, 2x512) at batch 1
and 4, odd sizes (AMX refused: K blocks not whole VNNI pairs; H no multiple of 64) and a large
batch. Exit status 1 when a figure differs. ``ONEDNN_VERBOSE=1`` shows the kernels oneDNN picks.
"""

from __future__ import annotations

import argparse
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from graphmem.host import this_host
from graphmem.training.kernels.onednn_rnn import lstm_bf16_scratchpad, lstm_bf16_weights

DEFAULT = [(64, 1, 128, 256), (64, 4, 128, 256), (64, 1, 256, 512), (64, 4, 256, 512), (64, 1, 512, 512),
           (64, 4, 512, 512), (7, 3, 33, 20), (5, 3, 8, 16), (3, 130, 64, 64)]


def measure(steps: int, batch: int, size: int, hidden: int) -> tuple[int, int, int, int]:
    """(forward scratchpad, forward weights, backward scratchpad, backward weights) in bytes."""
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(size, hidden)
    x = torch.randn(steps, batch, size, requires_grad=True)

    def step() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y, (h, _) = lstm(x)
        (y.float().sum() + h.float().sum()).backward()

    step()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = prof.profiler.kineto_results.events()
    mem = sorted((e.start_ns(), e.nbytes()) for e in events if e.name() == "[memory]")
    found = []
    for name, weights_at in (("aten::mkldnn_rnn_layer", (-3, -2)), ("aten::mkldnn_rnn_layer_backward", (-6, -5))):
        inner = max((e for e in events if e.name() == name), key=lambda e: e.start_ns())
        inside = [n for t, n in mem if inner.start_ns() <= t <= inner.end_ns()]
        first_free = next(k for k, n in enumerate(inside) if n < 0)
        found += [inside[first_free - 1], sum(inside[first_free + k] for k in weights_at)]
    return found[0], found[1], found[2], found[3]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("shapes", nargs="*", help="T,B,I,H")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    shapes = [tuple(int(v) for v in s.split(",")) for s in args.shapes] or DEFAULT
    host = this_host()  # the measurement is on this machine: its CPU flags and per-core L2
    cpu = {"flags": host.cpu_flags, "l2": host.l2_per_core_bytes}
    print(f"torch {torch.__version__}, {args.threads} threads; bytes measured / predicted")
    print(f"{'T,B,I,H':>16}  {'fwd scratchpad':>17}  {'fwd weights':>17}  {'bwd scratchpad':>17}  {'bwd weights':>17}")
    bad = 0
    for shape in shapes:
        t, b, i, h = shape
        measured = measure(t, b, i, h)
        predicted = (lstm_bf16_scratchpad(t, b, i, h, forward=True, threads=args.threads, **cpu),
                     lstm_bf16_weights(i, h, forward=True, flags=host.cpu_flags),
                     lstm_bf16_scratchpad(t, b, i, h, forward=False, threads=args.threads, **cpu),
                     lstm_bf16_weights(i, h, forward=False, flags=host.cpu_flags))
        cells = []
        for m, p in zip(measured, predicted):
            cells.append(f"{m:>8}/{p:<8}" + (" " if m == p else "!"))
            bad += m != p
        print(f"{','.join(map(str, shape)):>16}  " + "  ".join(cells))
    print(f"{4 * len(shapes) - bad} of {4 * len(shapes)} figures exact")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
