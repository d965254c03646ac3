"""Sweep and fit on real exports: ResNet-50 over batch, BERT-base over seq, and an exact fit.

    python scripts/sweep_demo.py [--corpus .cache/corpus]

Needs ``resnet50.onnx`` (dynamic batch) and ``bert_base.onnx`` (dims batch, seq) made by
``scripts/export_corpus.py``. It shows:

1. ResNet-50: the fitted per-sample slope and the sweep's batch-8 row agree with what
   ``graphmem peak --dim batch=8`` (and ``batch=9``) print — run as a separate process.
2. BERT-base, batch 1: the fit over seq picks the quadratic term (attention scores are
   ``[batch, 12 heads, seq, seq]``). Where attention sets the peak (seq ≥ 384) the quadratic is
   exact, and its coefficient counts the live ``[12, seq, seq]`` float32 tensors (two, plus the
   ``[seq, seq]`` float32 mask: 2 × 48 + 4 = 100 B per seq²).
3. ``fit``: the largest ResNet-50 batch on a T4 with 500 MiB overhead, by exact search.

A decoder with a KV cache for ``fit --solve`` comes from a torch export with ``use_cache=True``,
e.g. for GPT-2: ``torch.onnx.export(model, (input_ids, past), "gpt2_past.onnx",
input_names=["input_ids", *past_names], output_names=["logits", *present_names],
dynamic_axes={"input_ids": {0: "batch"}, **{n: {0: "batch", 2: "past_seq"} for n in
past_names}})`` with ``past_names = [f"past_key_values.{i}.{kv}" ...]``; then
``graphmem fit gpt2_past.onnx --device t4 --dim batch=4 --solve past_seq`` gives the longest
context. The tests use a two-layer decoder written with onnx.helper instead.

Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from graphmem.batch.search import parse_sweep_dims, search_largest, sweep
from graphmem.batch.report import fit_formula, sweep_table
from graphmem.views.devices import find_device
from graphmem.model.loading import load_model
from graphmem.units import format_bytes, parse_bytes

ROOT = Path(__file__).resolve().parent.parent
BERT_HEADS = 12
MASK_BYTES = 4  # the export's 4-D float32 attention mask, [batch, 1, seq, seq]


def peak_json(path: Path, dims: dict[str, int]) -> dict:
    """``graphmem peak --json`` as a user runs it, in a separate process."""
    args = [sys.executable, "-m", "graphmem", "peak", str(path), "--json"]
    for k, v in dims.items():
        args += ["--dim", f"{k}={v}"]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)


def check(ok: bool, what: str, failures: list[str]) -> str:
    if not ok:
        failures.append(what)
    return "ok" if ok else "MISMATCH"


def resnet(path: Path, failures: list[str]) -> None:
    print(f"== ResNet-50 over batch: {path}")
    s = sweep(path, parse_sweep_dims(["batch=1,2,4,8,16"]))
    print(sweep_table(s))
    p8, p9 = peak_json(path, {"batch": 8}), peak_json(path, {"batch": 9})
    row8 = next(r for r in s.rows if r.value == 8)
    slope = s.fit.per_unit_bytes
    print()
    print("  vs `graphmem peak --dim batch=8` (separate process):")
    print(f"    activation peak  sweep {row8.activations_peak_bytes:,}  peak "
          f"{p8['activations']['peak_bytes']:,}  "
          + check(row8.activations_peak_bytes == p8["activations"]["peak_bytes"], "resnet peak@8",
                  failures))
    print(f"    total            sweep {row8.total_bytes:,}  peak {p8['total_bytes']:,}  fit "
          f"{s.fit.predict(8):,.0f}  "
          + check(row8.total_bytes == p8["total_bytes"]
                  and abs(s.fit.predict(8) - p8["total_bytes"]) <= max(1.0, s.fit.worst_residual_bytes),
                  "resnet total@8", failures))
    step = p9["total_bytes"] - p8["total_bytes"]
    print(f"    per sample       fit slope {slope:,.1f} B ({format_bytes(round(slope))}); peak "
          f"batch 9 - batch 8 = {step:,} B  "
          + check(abs(slope - step) <= max(1.0, 2 * s.fit.worst_residual_bytes), "resnet slope",
                  failures))
    print()


def bert(path: Path, failures: list[str]) -> None:
    print(f"== BERT-base over seq (batch 1): {path}")
    s = sweep(path, parse_sweep_dims(["batch=1", "seq=32,64,128,256,384,448,512"]))
    print(sweep_table(s))
    check(s.fit.degree == 2 and s.fit.per_unit2_bytes > 0, "bert quadratic", failures)
    tail = sweep(path, parse_sweep_dims(["batch=1", "seq=384..512:32"]))  # 5 points, 3 terms
    c2 = tail.fit.per_unit2_bytes
    live = (c2 - MASK_BYTES) / (BERT_HEADS * 4)
    print()
    print(f"  where attention sets the peak (seq 384..512): total ≈ {fit_formula(tail.fit)}")
    print(f"    worst residual {tail.fit.worst_residual_bytes:.3g} B: exact. {c2:.1f} B × seq² = "
          f"{live:.2f} × ({BERT_HEADS} heads × 4 B) + {MASK_BYTES} B: at the peak node "
          f"(attention Add) the scaled scores and scores + mask, [batch, {BERT_HEADS}, seq, seq] "
          "float32, and the [batch, 1, seq, seq] float32 mask are live")
    check(abs(live - 2) < 1e-6, "bert attention term", failures)
    print()


def fit_demo(path: Path, failures: list[str]) -> None:
    t4 = find_device("t4")
    overhead = parse_bytes("500MiB")
    r = search_largest(load_model(path), solve="batch", budget_bytes=t4.memory_bytes or 0,
                       overhead_bytes=overhead)
    a = r.analysis
    print(f"== fit: ResNet-50 on {t4.title} ({t4.memory}), overhead 500 MiB")
    if a is None:
        failures.append("resnet fit")
        print("  nothing fits")
        return
    print(f"  largest batch {r.largest}: total {format_bytes(a.total_bytes)}, batch "
          f"{r.largest + 1} needs {format_bytes(r.next_total_bytes)}; headroom "
          f"{format_bytes(r.headroom_bytes)}; {len(r.probes)} analyses; monotone: {r.monotone}")
    check(r.monotone and r.next_total_bytes is not None
          and r.next_total_bytes + overhead > (t4.memory_bytes or 0), "resnet fit", failures)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=ROOT / ".cache" / "corpus")
    args = ap.parse_args()
    resnet_path, bert_path = args.corpus / "resnet50.onnx", args.corpus / "bert_base.onnx"
    missing = [p for p in (resnet_path, bert_path) if not p.exists()]
    if missing:
        print(f"missing {', '.join(map(str, missing))}: run scripts/export_corpus.py first")
        return 2
    failures: list[str] = []
    resnet(resnet_path, failures)
    bert(bert_path, failures)
    fit_demo(resnet_path, failures)
    print()
    print("all checks agree" if not failures else f"FAILED: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
