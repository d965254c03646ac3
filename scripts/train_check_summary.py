#!/usr/bin/env python
"""Summarise ``scripts/train_check.py`` output: one row per architecture, batch and metric.

    python scripts/train_check.py ... > out.txt; python scripts/train_check_summary.py out.txt [more.txt ...]

For each architecture, batch size and metric (saved, forward activation peak, backward activation
peak, step peak) it prints the ratio predicted / measured (``1 + err``, from the printed err, so to
0.1 %) of the row with the largest |err| over both gradient modes and every optimizer, the bar, and
where that row is; a row any of whose lines missed its bar is flagged ``OUTSIDE BAR``.
"""

from __future__ import annotations

import argparse
import re
import sys

ROW = re.compile(
    r"^(\S+)\s+b(\d+)\s+(released|persistent)\s+(saved|fwd act peak|bwd act peak|step peak \w+)\s+"
    r"pred\s+[\d.]+ meas\s+[\d.]+ MiB\s+err\s+([+-][\d.]+)%\s+(ok|MISS)"
)
BARS = {"saved": 2, "fwd act peak": 5, "bwd act peak": 5, "step peak": 5}


def main(paths: list[str]) -> int:
    worst: dict[tuple[str, int, str], tuple[float, str, bool]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = ROW.match(line)
                if m is None:
                    continue
                arch, batch, grads, label, e, ok = m.groups()
                key = (arch, int(batch), "step peak" if label.startswith("step peak") else label)
                err, missed = float(e), ok == "MISS"
                prev = worst.get(key)
                if prev is None or abs(err) > abs(prev[0]):
                    worst[key] = (err, f"{grads} {label}", missed or (prev is not None and prev[2]))
                elif missed:
                    worst[key] = (prev[0], prev[1], True)
    print(f"{'architecture':<16}{'batch':>5}  {'metric':<13}{'ratio':>7}  {'bar':>4}  worst row")
    for (arch, batch, metric), (err, where, missed) in worst.items():
        flag = "  <-- OUTSIDE BAR" if missed else ""
        print(f"{arch:<16}{batch:>5}  {metric:<13}{1 + err / 100:>7.3f}  {BARS[metric]:>3}%  {where}{flag}")
    misses = sum(missed for _, _, missed in worst.values())
    print(f"{len(worst)} rows, {misses} outside their bar")
    return 1 if misses else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outputs", nargs="+", metavar="OUT.txt", help="scripts/train_check.py output files")
    args = parser.parse_args()
    try:
        sys.exit(main(args.outputs))
    except OSError as e:
        sys.exit(f"train_check_summary: error: {e}")
