#!/usr/bin/env python
"""Print every figure ``scripts/train_check.py`` compares, predicted only (nothing measured).

    python scripts/train_predictions.py [--dir DIR] [--batches 1 4] > predictions.txt

For each exported ``DIR/*.onnx`` (default ``.cache/train_check``, written by train_check.py), each
batch, gradient mode and optimizer: saved, forward and backward activation peaks, step peak and its
phase, in bytes, plus the warnings. Two checkouts that print the same lines predict the same
train_check figures, so a train_check run on one holds for the other (diff the two outputs).
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

sys.dont_write_bytecode = True
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=os.path.join(REPO, ".cache", "train_check"))
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 4])
    args = ap.parse_args(argv)

    from graphmem.training import estimate_training
    from train_check import specs  # the sequence length of each architecture (imports torch)

    seq = {name: spec.seq for name, spec in specs().items()}
    for path in sorted(glob.glob(os.path.join(args.dir, "*.onnx"))):
        name = os.path.basename(path)[:-5]
        for batch in args.batches:
            dims = {"batch": batch, **({"seq": seq[name]} if seq.get(name) else {})}
            for grads in ("released", "persistent"):
                for optimizer in ("sgd", "momentum", "adam", "adamw"):
                    e = estimate_training(path, dims=dims, optimizer=optimizer, grads=grads)
                    print(f"{name} b{batch} {grads} {optimizer}: saved {e.saved_bytes} fwd {e.activation_peak_bytes} "
                          f"bwd {e.backward_peak_bytes} step {e.step_peak_bytes} {e.peak_phase} "
                          f"warnings {list(e.warnings)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
