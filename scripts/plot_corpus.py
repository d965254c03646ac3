#!/usr/bin/env python
"""Render the report and the `peak --plot` picture of every model of the shared corpus.

    python scripts/plot_corpus.py [--corpus .cache/realworld] [--out .cache/plots/corpus]

For each model of ``manifest.json`` at its first binding (dims, shapes, values) it analyses the
model, renders the HTML report and the PNG timeline, and checks the page: the peak's exact bytes
and node appear, no network reference, one hover column per step (or bin) whose highest value
is the peak. Prints one line per model and a summary; models graphmem cannot analyse are counted
apart (that is the analysis's business, not the pictures').
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parents[1] / ".cache" / "realworld")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / ".cache" / "plots/corpus")
    args = ap.parse_args()
    import graphmem
    from graphmem.errors import GraphmemError
    from graphmem.views.html_report import render_report
    from graphmem.views.plot import peak_plot, render

    args.out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((args.corpus / "manifest.json").read_text())
    ok = bad = skipped = 0
    for m in manifest["models"]:
        binding = (m.get("bindings") or [{}])[0]
        kwargs = {"dims": binding.get("dims") or None}
        if binding.get("shapes"):
            kwargs["shapes"] = {k: tuple(v) for k, v in binding["shapes"].items()}
        if binding.get("values"):
            kwargs["values"] = {k: tuple(v) for k, v in binding["values"].items()}
        path = args.corpus / m["path"]
        try:
            a = graphmem.analyze(path, **kwargs)
        except (GraphmemError, TypeError) as exc:
            skipped += 1
            print(f"{m['name']:<28} not analysed: {exc}")
            continue
        start = time.perf_counter()
        page = render_report(a)
        png = render(peak_plot(a), "png")
        took = time.perf_counter() - start
        (args.out / f"{m['name']}.html").write_text(page, encoding="utf-8")
        (args.out / f"{m['name']}.png").write_bytes(png)
        cols = [int(x) for x in re.findall(r'data-requested="(\d+)"', page.split("Tensors live at the peak")[0])]
        act = a.activations
        problems = [
            p for p, failed in (
                ("peak bytes", f"{act.peak_bytes:,}" not in page),
                ("peak node", act.peak_node and act.peak_node.replace("&", "&amp;").replace("<", "&lt;") not in page),
                ("network reference", re.search(r"https?://", page) is not None),
                ("columns' highest != peak", bool(cols) and max(cols) != act.peak_bytes),
            ) if failed
        ]
        ok += not problems
        bad += bool(problems)
        exact = "exact" if act.exact else "not exact (" + ", ".join(sorted({x.kind for x in act.approximations})) + ")"
        print(f"{m['name']:<28} {len(act.timeline):>6} steps  peak {act.peak_bytes:>13,} B  {took:5.2f}s  "
              f"{exact}  {'ok' if not problems else 'PROBLEM: ' + ', '.join(problems)}")
    print(f"\n{ok} models rendered and checked, {bad} with problems, {skipped} not analysed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
