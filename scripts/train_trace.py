#!/usr/bin/env python
"""Op-by-op comparison of one PyTorch CPU training step with ``graphmem train``'s passes.

    python scripts/train_trace.py NAME [--batch B] [--phase forward|backward] [--top N] [--precision P]

NAME is a model of ``scripts/train_check.py``. The step is measured as there (profiler started
before the model is built, step 2, Adam, gradients released); each ``[memory]`` event is given to
the innermost top-level op (forward: ``aten::`` ops called from Python; backward: the autograd
engine's ``evaluate_function`` nodes) around it. Printed: the N ops with the highest live bytes
(above the phase's start) measured, and the N steps with the highest predicted, side by side,
so a rule that misses a kernel's temporaries shows which op it is.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_check as tc  # noqa: E402


def measured_ops(spec: tc.Spec, batch: int, phase: str, detail: bool = False, grads: str = "released",
                 precision: str = "fp32") -> list[tuple[str, int, int]]:
    """(op name, live bytes at its start, highest live bytes inside it), above the phase start.
    ``precision`` mixed-*: the forward under ``torch.autocast('cpu')`` (no GradScaler: the
    backward and forward are the same with it, only the loss scalar is scaled)."""
    import contextlib

    from torch.profiler import ProfilerActivity, profile, record_function

    dtype = tc.AUTOCAST[precision]

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        torch.manual_seed(0)
        model = spec.build().train()
        feeds = [torch.from_numpy(v).clone() for v in spec.make_inputs(batch, spec.seq, np.random.default_rng(1)).values()]
        opt = tc.make_optimizer("adam", model, False)
        for step in (1, 2):
            opt.zero_grad(set_to_none=grads == "released")
            with record_function(f"s{step}:forward"), (
                    contextlib.nullcontext() if dtype is None else torch.autocast("cpu", dtype=dtype)):
                loss = tc.loss_of(model(*feeds))
            with record_function(f"s{step}:backward"):
                loss.backward()
            opt.step()
            del loss
    events = prof.profiler.kineto_results.events()
    mem = sorted((e.start_ns(), e.nbytes()) for e in events if e.name() == "[memory]")
    a, b = next((e.start_ns(), e.end_ns()) for e in events if e.name() == f"s2:{phase}")
    times = np.array([m[0] for m in mem], dtype=np.int64)
    live = np.cumsum([m[1] for m in mem])
    i0 = np.searchsorted(times, a)
    base = int(live[i0 - 1])
    if phase == "backward":
        fa = next(e.start_ns() for e in events if e.name() == "s2:forward")
        base = int(live[np.searchsorted(times, fa) - 1])
        tops = [e for e in events if e.name().startswith("autograd::engine::evaluate_function") and a <= e.start_ns() <= b]
    else:
        ops = [e for e in events if e.name().startswith("aten::") and a <= e.start_ns() <= b]
        ops.sort(key=lambda e: (e.start_ns(), -e.end_ns()))
        tops, end = [], 0
        for e in ops:  # outermost aten ops only
            if e.start_ns() >= end:
                tops.append(e)
                end = e.end_ns()
    rows = []
    for e in tops:
        i, j = np.searchsorted(times, e.start_ns()), np.searchsorted(times, e.end_ns(), side="right")
        before = int(live[i - 1]) - base
        inside = max([before, *(int(x) - base for x in live[i:j])])
        name = e.name().replace("autograd::engine::evaluate_function: ", "")
        if detail:
            name += " " + str([m[1] for m in mem[i:j]])
        rows.append((name, before, inside))
    return rows


def main(argv: list[str] | None = None) -> int:
    specs = tc.specs()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", choices=list(specs))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--phase", default="backward", choices=["forward", "backward"])
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--grads", default="released", choices=["released", "persistent"])
    ap.add_argument("--all", action="store_true", help="every op in order, not the top N")
    ap.add_argument("--detail", action="store_true", help="with --all: each op's allocations and frees")
    ap.add_argument("--precision", default="fp32", choices=list(tc.AUTOCAST))
    ap.add_argument("--out", default=tc.DEFAULT_OUT)
    args = ap.parse_args(argv)

    from graphmem.training import estimate_training

    torch.set_num_threads(2)
    spec = specs[args.name]
    path = os.path.join(args.out, f"{args.name}.onnx")
    if not os.path.exists(path):
        tc.export(spec, path)
    rows = measured_ops(spec, args.batch, args.phase, args.detail, args.grads, args.precision)
    dims = {"batch": args.batch, **({"seq": spec.seq} if spec.seq else {})}
    est = estimate_training(path, dims=dims, grads=args.grads, precision=args.precision)
    trace = est.forward if args.phase == "forward" else est.backward
    pred = list(zip(trace.labels, trace.live_bytes))
    mib = lambda n: f"{n / 2**20:9.2f}"  # noqa: E731
    print(f"{args.name} b{args.batch} {args.phase}: measured peak {mib(max(r[2] for r in rows))} MiB, "
          f"predicted {mib(trace.peak_bytes)} MiB")
    if args.all:
        for name, before, inside in rows:
            print(f"  meas {mib(before)} {mib(inside)}  {name}")
        for label, live in pred:
            print(f"  pred {mib(live)}  {label}")
        return 0
    top_m = sorted(rows, key=lambda r: -r[2])[: args.top]
    top_p = sorted(pred, key=lambda r: -r[1])[: args.top]
    for k in range(args.top):
        m = f"{mib(top_m[k][2])} {top_m[k][0][:48]:<48}" if k < len(top_m) else " " * 58
        p = f"{mib(top_p[k][1])} {top_p[k][0][-60:]}" if k < len(top_p) else ""
        print(f"  {m} | {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
