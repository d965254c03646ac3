"""Predicted vs measured activation peak of float16 and quantized models (issue 18).

For every file ``scripts/make_type_models.py`` made (ResNet-18, MobileNetV2, BERT-base; their
onnxconverter-common float16 conversions and onnxruntime quantize_dynamic / quantize_static
QDQ and QOperator outputs, per-tensor and per-channel), at graph-opt ``none`` and ``all``,
batch 1 and 4 (BERT seq 128): graphmem's ``activations.peak_bytes`` against the measured
requested peak of run 1 of a fresh onnxruntime CPU session (one thread, a fresh interpreter per
measurement, as ``scripts/accuracy_opt.py`` does). Level ``none`` analyses the file itself,
level ``all`` the graph onnxruntime writes at that level (``graphmem.verify.optimized``).

Rows ``as-f16`` are ``graphmem peak --as-dtype float16`` (and ``--graph-opt all``) of the float32
model against the measured ``fp16`` conversion (keep_io_types false: what --as-dtype sizes).

Each row also compares the scratch-inclusive prediction (run 1 replayed through onnxruntime's
arena with every kernel's scratch, ``graphmem.analysis.scratch.scratch_profile``) with the
profiler's in-use high-water mark (``RunMemory.in_use_peak_bytes``), and lists the kernels
without a scratch rule (counted 0, ``scratch_not_modelled``); ``as-f16`` rows at ``none`` have no
scratch figure (a what-if's plan is not replayed; at ``all`` the converted file is optimized and
analysed as it is).

A model that onnxruntime cannot load must be refused by graphmem too: such a row shows both
refusals; a refusal on one side only is a failure. Bars: every requested-peak ratio within 0.5 %
(goal 1.0000), every in-use ratio within 10 % (goal 1.0000), no kernel without a scratch rule.

    python scripts/accuracy_types.py [--dir DIR] [--only SUBSTR ...] [--levels none,all]
                                     [--batches 1,4]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import onnx  # noqa: E402
from accuracy_opt import measure_fresh  # noqa: E402

import graphmem  # noqa: E402
from graphmem.analysis import analyze_graph_opt  # noqa: E402
from graphmem.analysis.scratch import scratch_profile  # noqa: E402
from graphmem.errors import GraphmemError  # noqa: E402
from graphmem.verify import make_feeds  # noqa: E402

TOLERANCE = 0.005
SCRATCH_TOLERANCE = 0.10
DEFAULT_DIR = Path(str(Path(__file__).resolve().parents[1] / ".cache" / "types/models"))
ORDER = ("", "fp16_io", "fp16", "dyn", "dyn_pc", "qdq", "qdq_pc", "qop", "qop_pc")


def files(folder: Path, only: list[str] | None) -> list[tuple[str, str, Path]]:
    """(model, variant, path) of every file in ``folder``, base models first."""
    out = []
    for path in folder.glob("*.onnx"):
        model, _, variant = path.stem.partition(".")
        if variant in ORDER and (not only or any(s in path.stem for s in only)):
            out.append((model, variant, path))
    return sorted(out, key=lambda r: (r[0], ORDER.index(r[1])))


def predict(path: Path, level: str, dims: dict[str, int], as_dtype: str | None = None) -> tuple[int, int | None, tuple[str, ...]] | str:
    """graphmem's requested peak, its scratch-inclusive in-use peak (None for a what-if) and the
    kernels without a scratch rule; or the refusal's message."""
    try:
        if level == "none":
            result = graphmem.analyze(path, dims=dims, as_dtype=as_dtype)
        else:
            result = analyze_graph_opt(path, level, dims=dims, as_dtype=as_dtype)
        if as_dtype and level == "none":
            return result.activations.peak_bytes, None, ()
        profile = scratch_profile(result)
        return result.activations.peak_bytes, profile.peak_bytes, profile.unmodelled
    except GraphmemError as exc:
        return f"refused: {str(exc)[:60]}"


def measure(path: Path, level: str, dims: dict[str, int]) -> tuple[int, int] | str:
    """onnxruntime's measured requested and in-use peaks, or why it could not load or run it."""
    proto = onnx.load(str(path), load_external_data=False)
    try:
        run = measure_fresh(path, make_feeds(proto, dims, seed=0), level)
    except GraphmemError as exc:
        return f"ort: {str(exc)[:60]}"
    return run.requested_peak, run.in_use_peak_bytes


def dims_for(model: str, batch: int) -> dict[str, int]:
    return {"batch": batch, "seq": 128} if model.startswith("bert") else {"batch": batch}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--levels", default="none,all")
    ap.add_argument("--batches", default="1,4")
    args = ap.parse_args()
    levels = args.levels.split(",")
    batches = [int(b) for b in args.batches.split(",")]
    rows = files(args.dir, args.only)
    if not rows:
        print(f"no models in {args.dir}: run python scripts/make_type_models.py")
        return 1
    print(
        f"{'model':<12} {'variant':<8} {'level':<5} {'batch':>5} {'predicted':>13} {'measured':>13} {'ratio':>7}"
        f" {'pred+scr':>13} {'in-use':>13} {'ratio':>7}"
    )
    worst = worst_scratch = 0.0
    bad: list[str] = []
    count = 0
    unmodelled: dict[str, None] = {}
    plan = [(m, v, p, lv, b, None) for m, v, p in rows for lv in levels for b in batches]
    plan += [(m, "as-f16", p, lv, b, "float16") for m, v, p in rows if v == "" for lv in levels for b in batches]
    converted = {(m, v): p for m, v, p in rows}
    for model, variant, path, level, batch, as_dtype in plan:
        dims = dims_for(model, batch)
        predicted = predict(path, level, dims, as_dtype)
        target = converted.get((model, "fp16")) if as_dtype else path
        if target is None:
            continue
        measured = measure(target, level, dims)
        count += 1
        label = f"{model}.{variant or 'fp32'} {level} b{batch}"
        if isinstance(predicted, tuple) and isinstance(measured, tuple):
            (p, ps, missing), (m, ms) = predicted, measured
            ratio = p / m if m else float("nan")
            worst = max(worst, abs(ratio - 1))
            text = f"{p:>13,} {m:>13,} {ratio:>7.4f}"
            failed = abs(ratio - 1) > TOLERANCE
            if ps is not None:
                sratio = ps / ms if ms else float("nan")
                worst_scratch = max(worst_scratch, abs(sratio - 1))
                failed = failed or abs(sratio - 1) > SCRATCH_TOLERANCE or bool(missing)
                text += f" {ps:>13,} {ms:>13,} {sratio:>7.4f}"
                if missing:
                    text += f"  no scratch rule: {', '.join(missing)}"
                    unmodelled.update(dict.fromkeys(missing))
            else:
                text += f" {'-':>13} {ms:>13,} {'-':>7}"
            if failed:
                bad.append(label)
        elif isinstance(predicted, str) and isinstance(measured, str):
            text = f"both refuse ({measured[:50]})"
        else:
            bad.append(label)
            text = f"{predicted!s:>13} {measured!s:>13}  MISMATCH"
        print(f"{model:<12} {variant or 'fp32':<8} {level:<5} {batch:>5} {text}", flush=True)
    print(
        f"\n{count} rows, worst requested deviation {worst * 100:.3f}% (bar {TOLERANCE * 100:.1f}%), "
        f"worst in-use deviation {worst_scratch * 100:.3f}% (bar {SCRATCH_TOLERANCE * 100:.0f}%), {len(bad)} failing"
    )
    if unmodelled:
        print(f"kernels without a scratch rule (counted 0): {', '.join(unmodelled)}")
    for b in bad:
        print(f"  failing: {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
