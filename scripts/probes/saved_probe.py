#!/usr/bin/env python
"""What autograd saves in one forward of a ``scripts/train_check.py`` model, by autograd node and
dtype, next to what ``graphmem train`` predicts it saves, by op (a cast autocast makes marked ``cast``).

    python scripts/probes/saved_probe.py NAME [--batch B] [--precision fp32|mixed-bf16|mixed-fp16] [--layer SCOPE]

Measured: the forward (model and loss, under ``torch.autocast('cpu')`` for mixed-*) is run once;
the autograd graph from the loss is walked and every ``_saved_*`` tensor of every node read. Each
storage (``untyped_storage().data_ptr()``; parameters and buffers excluded) is counted once, for
the first node (forward order: the node's sequence number) that holds it. Printed: bytes per
(node, dtype) measured and per (op, label, dtype) predicted, and the totals. ``--layer SCOPE``:
the predicted storages of node names containing SCOPE only (the measured side is not scoped).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections import defaultdict

import numpy as np
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # scripts/: train_check
import train_check as tc  # noqa: E402


def measured(spec: tc.Spec, batch: int, precision: str) -> dict[tuple[str, str], list[int]]:
    """(autograd node, dtype) -> [bytes, storages] of what the forward saves."""
    torch.manual_seed(0)
    model = spec.build().train()
    feeds = [torch.from_numpy(v).clone() for v in spec.make_inputs(batch, spec.seq, np.random.default_rng(1)).values()]
    dtype = tc.AUTOCAST[precision]
    ctx = contextlib.nullcontext() if dtype is None else torch.autocast("cpu", dtype=dtype)
    with ctx:
        loss = tc.loss_of(model(*feeds))
    owned = {t.untyped_storage().data_ptr() for t in (*model.parameters(), *model.buffers())}
    nodes, seen, stack = [], set(), [loss.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        nodes.append(n)
        stack.extend(f for f, _ in n.next_functions)
    nodes.sort(key=lambda n: n._sequence_nr())
    out: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    held: set[int] = set()
    for n in nodes:
        for attr in dir(n):
            if not attr.startswith("_saved_"):
                continue
            try:
                v = getattr(n, attr)
            except Exception:  # noqa: BLE001 - a released or non-tensor attribute
                continue
            for t in v if isinstance(v, (tuple, list)) else (v,):
                if not isinstance(t, torch.Tensor):
                    continue
                st = t.untyped_storage()
                if st.data_ptr() in owned or st.data_ptr() in held or st.nbytes() == 0:
                    continue
                held.add(st.data_ptr())
                row = out[(f"{n.name()}.{attr[7:]}", str(t.dtype).replace("torch.", ""))]
                row[0] += st.nbytes()
                row[1] += 1
    return out


def predicted(path: str, spec: tc.Spec, batch: int, precision: str, layer: str) -> dict[tuple[str, str], list[int]]:
    from graphmem.training import estimate_training
    from graphmem.training.autocast import is_cast

    dims = {"batch": batch, **({"seq": spec.seq} if spec.seq else {})}
    est = estimate_training(path, dims=dims, precision=precision)
    out: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for s in est.saved_storages:
        if layer and layer not in s.node:
            continue
        dt = "cast" if is_cast(s.name) else "-"
        row = out[(f"{s.op_type}.{'+'.join(s.labels)}", dt)]
        row[0] += s.bytes or 0
        row[1] += 1
    for w in est.warnings:
        print("  warning:", w[:160])
    return out


def main(argv: list[str] | None = None) -> int:
    specs = tc.specs()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", choices=list(specs))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--precision", default="mixed-bf16", choices=list(tc.AUTOCAST))
    ap.add_argument("--layer", default="")
    ap.add_argument("--out", default=tc.DEFAULT_OUT)
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    spec = specs[args.name]
    path = os.path.join(args.out, f"{args.name}.onnx")
    mib = lambda n: f"{n / 2**20:10.3f}"  # noqa: E731
    for title, get in (("measured", lambda: measured(spec, args.batch, args.precision)),
                       ("predicted", lambda: predicted(path, spec, args.batch, args.precision, args.layer))):
        rows = get()
        total = sum(r[0] for r in rows.values())
        print(f"{title}: {mib(total)} MiB in {sum(r[1] for r in rows.values())} storages")
        for (what, dt), (nbytes, count) in sorted(rows.items(), key=lambda kv: -kv[1][0]):
            print(f"  {mib(nbytes)} {count:5d}  {dt:9s} {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
