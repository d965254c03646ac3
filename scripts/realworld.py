#!/usr/bin/env python
"""graphmem against onnxruntime on the real-world corpus (scripts/collect_models.py).

    python scripts/realworld.py [--corpus DIR] [--only NAME ...] [--levels none,all] [--jobs 1]
                                [--json FILE] [--timeout 300]

For every manifest entry, every binding (batch 1 and 4 where the model has a batch dim) and every
graph-optimization level, runs ``graphmem peak MODEL --json`` and ``graphmem verify MODEL --json``
as subprocesses (``python -m graphmem``, so ``PYTHONPATH`` picks the tree under test), with
``--dim``/``--shape``/``--value`` from the binding. When verify gives no measurement, a probe
subprocess measures onnxruntime directly with the library (``graphmem.verify.make_feeds`` and
``measure``: one fresh session, one intra-op thread, run 1, requested bytes), so a run's class
never depends on which options today's CLI has. Each run gets one class:

* ``exact``: peak within 0.5% of onnxruntime's requested peak; ``close``: within 5%;
* ``off``: more than 5% off with exit 0 (the worst case; the ratio predicted/measured is printed);
* ``refused``: ``graphmem peak`` exit 2 (its one line is printed; an option today's CLI lacks
  lands here too);
* ``crash``: a traceback, a timeout or another exit status;
* ``ort-fails``: onnxruntime itself cannot run the model with these inputs (graphmem should then
  refuse too: flagged when ``peak`` exits 0);
* ``unmeasured``: peak answered but neither verify nor the probe produced a measurement.

Also flagged: ``activations.exact`` true on a run whose prediction is not byte-exact, negative numbers anywhere in
the peak or verify document, verify's ``predicted_bytes`` differing from peak's
``activations.peak_bytes``. Prints one row per run, then counts per class and per model family,
then the flagged runs. Exit 1 when a run is ``off`` or ``crash`` or flagged, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

DEFAULT_CORPUS = Path(os.environ.get("GRAPHMEM_REALWORLD", str(Path(__file__).resolve().parents[1] / ".cache" / "realworld")))
EXACT, CLOSE = 0.005, 0.05
CLASSES = ("exact", "close", "off", "refused", "crash", "ort-fails", "unmeasured")
ORT_FAILED = re.compile(r"onnxruntime (could not create the session|run failed)")
BOX = re.compile(r"[│╭╮╰╯─┌┐└┘|]+")


@dataclass(kw_only=True)
class Run:
    model: str
    family: str
    binding: str
    batch: int | None
    level: str
    args: list[str]
    cls: str = ""
    predicted: int | None = None
    measured: int | None = None
    ratio: float | None = None
    detail: str = ""
    flags: list[str] = field(default_factory=list)
    exact_claim: bool | None = None
    approximations: list[str] = field(default_factory=list)
    unresolved: int = 0  # peak's shapes.unresolved (tensors without a static size)
    seconds: float = 0.0


# --------------------------------------------------------------------------- one command
def cli_args(binding: dict) -> list[str]:
    """The binding as graphmem options: --dim, --shape NAME=D0xD1…, --value NAME=V,…"""
    args = []
    for name, size in binding.get("dims", {}).items():
        args += ["--dim", f"{name}={size}"]
    for name, shape in binding.get("shapes", {}).items():
        args += ["--shape", f"{name}={'x'.join(str(d) for d in shape)}"]
    for name, values in binding.get("values", {}).items():
        args += ["--value", f"{name}={','.join(str(v) for v in values)}"]
    return args


@dataclass(frozen=True, kw_only=True)
class Outcome:
    code: int | None  # None: timed out
    document: dict | None
    stderr: str
    traceback: bool


def run_graphmem(command: str, path: Path, level: str, args: list[str], timeout: float) -> Outcome:
    cmd = [sys.executable, "-m", "graphmem", command, str(path), "--json", "--graph-opt", level, *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Outcome(code=None, document=None, stderr=f"timed out after {timeout:.0f} s", traceback=False)
    try:
        document = json.loads(done.stdout) if done.stdout.strip() else None
    except json.JSONDecodeError:
        document = None
    return Outcome(code=done.returncode, document=document, stderr=done.stderr, traceback="Traceback (most recent call last)" in done.stderr)


def one_line(stderr: str) -> str:
    """The line that says why: ``graphmem: error: …``, else the first meaningful line (typer boxes stripped)."""
    lines = [BOX.sub(" ", line).strip() for line in stderr.splitlines()]
    lines = [line for line in lines if line]
    preferred = [line for line in lines if line.startswith("graphmem: error")]
    preferred += [line for line in lines if "No such option" in line or "Error:" in line or "error:" in line]
    useful = [line for line in lines if not line.startswith(("Usage:", "Try ", "Error"))]
    return (preferred or useful or lines or ["(no message)"])[-1 if not preferred else 0][:300]


def ort_reason(text: str) -> str:
    """onnxruntime's own reason, without the wrapper text and the model path."""
    text = re.sub(r".*\[ONNXRuntimeError\] : \d+ : \w+ : ", "onnxruntime: ", text)
    return re.sub(r"Load model from \S+ failed:", "", text)


def negatives(value, where: str = "") -> list[str]:
    """Paths of negative numbers in a JSON document."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [where or "."] if value < 0 else []
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in negatives(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in negatives(v, f"{where}[{i}]")]
    return []


# --------------------------------------------------------------------------- the probe (own process)
def probe(path: str, level: str, binding: dict) -> dict:
    """Measure onnxruntime's requested peak with the library; ``{"measured"}``, ``{"ort_error"}`` or ``{"error"}``."""
    try:
        import numpy as np
        import onnx

        from graphmem.verify import make_feeds, measure
    except ImportError as exc:
        return {"error": f"library API unavailable: {exc}"}
    try:
        proto = onnx.load(path, load_external_data=False)
        for value in proto.graph.input:  # whole shapes replace the declared ones, for the feeds only
            if value.name in binding.get("shapes", {}):
                dims = value.type.tensor_type.shape.dim
                del dims[:]
                for size in binding["shapes"][value.name]:
                    dims.add().dim_value = size
        feeds = make_feeds(proto, binding.get("dims", {}), seed=0)
        for name, values in binding.get("values", {}).items():
            old = feeds[name]
            array = np.array(values, dtype=old.dtype)
            feeds[name] = array.reshape(old.shape) if array.size == old.size else np.full(old.shape, values[0], old.dtype)
    except Exception as exc:  # noqa: BLE001  any failure to build feeds is reported, not raised
        return {"error": f"feeds: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]}
    try:
        measured = measure(path, feeds, graph_opt=level, threads=1, runs=1)
    except Exception as exc:  # noqa: BLE001
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        key = "ort_error" if ORT_FAILED.search(text) or type(exc).__module__.startswith("onnxruntime") else "error"
        return {key: text[:300]}
    return {"measured": int(measured.runs[0].requested_peak)}


def run_probe(path: Path, level: str, binding: dict, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--probe", str(path), level, json.dumps(binding)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"probe timed out after {timeout:.0f} s"}
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        # onnxruntime aborting the process (no JSON) is onnxruntime failing
        return {"ort_error": f"probe exit {done.returncode}: {one_line(done.stderr)}"}


# --------------------------------------------------------------------------- one run
def measure_run(run: Run, path: Path, binding: dict, timeout: float) -> Run:
    t0 = time.perf_counter()
    peak = run_graphmem("peak", path, run.level, run.args, timeout)
    verify = run_graphmem("verify", path, run.level, run.args, timeout)
    activations = (peak.document or {}).get("activations") or {}
    if peak.code == 0 and peak.document:
        run.predicted = activations.get("peak_bytes")
        run.exact_claim = activations.get("exact")
        run.approximations = sorted({a.get("kind", "?") for a in activations.get("approximations") or []})
        run.unresolved = len((peak.document.get("shapes") or {}).get("unresolved") or [])
        run.flags += [f"negative {p}" for p in negatives(peak.document, "peak")]
    report = (verify.document or {}).get("verify") or {}
    if verify.document:
        run.flags += [f"negative {p}" for p in negatives(verify.document, "verify")]
    ort_error = probe_error = None
    if verify.code in (0, 1) and report.get("measured_bytes") is not None:
        run.measured = report["measured_bytes"]
        if run.predicted is not None and report.get("predicted_bytes") not in (None, run.predicted):
            run.flags.append(f"verify predicted {report['predicted_bytes']:,} != peak {run.predicted:,}")
    elif verify.code == 2 and ORT_FAILED.search(verify.stderr):
        ort_error = ort_reason(one_line(verify.stderr))
    else:
        if verify.code == 2 and peak.code == 0:
            run.flags.append(f"peak answers but verify refuses: {one_line(verify.stderr)}")
        found = run_probe(path, run.level, binding, timeout)
        run.measured = found.get("measured")
        ort_error = found.get("ort_error") and ort_reason(found["ort_error"])
        probe_error = found.get("error")
    if verify.traceback:
        run.flags.append(f"verify traceback: {one_line(verify.stderr)}")
    classify(run, peak, ort_error, probe_error)
    run.seconds = time.perf_counter() - t0
    return run


def classify(run: Run, peak: Outcome, ort_error: str | None, probe_error: str | None) -> None:
    if peak.traceback or peak.code not in (0, 2):
        run.cls = "crash"
        run.detail = "timeout" if peak.code is None else f"exit {peak.code}: {one_line(peak.stderr)}"
    elif ort_error:
        run.cls = "ort-fails"
        run.detail = ort_error
        if peak.code == 0:
            run.flags.append("onnxruntime cannot run it but graphmem peak exits 0")
    elif peak.code == 2:
        run.cls = "refused"
        run.detail = one_line(peak.stderr)
    elif run.measured is None or run.predicted is None:
        run.cls = "unmeasured"
        run.detail = probe_error or "no measurement"
    else:
        run.ratio = run.predicted / run.measured if run.measured else (1.0 if run.predicted == 0 else float("inf"))
        error = abs(run.ratio - 1)
        run.cls = "exact" if error <= EXACT else "close" if error <= CLOSE else "off"
        said = [f"approximations: {', '.join(run.approximations)}"] if run.approximations else []
        said += [f"{run.unresolved} tensors unresolved"] if run.unresolved else []
        run.detail = "; ".join(said)
    if run.exact_claim is True and run.ratio is not None and run.predicted != run.measured:
        run.flags.append(f"activations.exact is true but predicted - measured = {run.predicted - run.measured:+,} bytes "
                         f"(ratio {run.ratio:.4f}, class {run.cls})")


# --------------------------------------------------------------------------- reporting
def row(run: Run) -> str:
    fmt = lambda n: f"{n:,}" if n is not None else "-"  # noqa: E731
    ratio = f"{run.ratio:.4f}" if run.ratio is not None else "-"
    note = run.detail + ("  [" + "; ".join(run.flags) + "]" if run.flags else "")
    return (f"{run.model:<26} {run.binding:<18} {run.level:<5} {run.cls:<10} {fmt(run.predicted):>13} "
            f"{fmt(run.measured):>13} {ratio:>7}  {note[:200]}")


def summary(runs: list[Run]) -> str:
    counts = Counter(r.cls for r in runs)
    lines = [f"{len(runs)} runs: " + ", ".join(f"{c} {counts[c]}" for c in CLASSES if counts[c])]
    by_family: dict[str, Counter] = defaultdict(Counter)
    models: dict[str, set] = defaultdict(set)
    for r in runs:
        by_family[r.family][r.cls] += 1
        models[r.family].add(r.model)
    used = [c for c in CLASSES if counts[c]]
    lines.append(f"\n{'family':<26} {'models':>6} " + " ".join(f"{c:>10}" for c in used))
    for family in sorted(by_family):
        lines.append(f"{family:<26} {len(models[family]):>6} " + " ".join(f"{by_family[family][c]:>10}" for c in used))
    by_level = defaultdict(Counter)
    for r in runs:
        by_level[r.level][r.cls] += 1
    for level, c in sorted(by_level.items()):
        lines.append(f"{'level ' + level:<26} {'':>6} " + " ".join(f"{c[k]:>10}" for k in used))
    flagged = [r for r in runs if r.flags]
    lines.append(f"\nflagged runs: {len(flagged)}")
    lines += [f"  {r.model} {r.binding} {r.level}: {'; '.join(r.flags)}" for r in flagged]
    worst = sorted((r for r in runs if r.cls == "off"), key=lambda r: -abs((r.ratio or 0) - 1))
    if worst:
        lines.append("\noff (predicted/measured):")
        lines += [f"  {r.model} {r.binding} {r.level}: {r.ratio:.4f} ({r.predicted:,} vs {r.measured:,})" for r in worst]
    return "\n".join(lines)


def tree_under_test() -> str:
    """Which graphmem the subprocesses import, and its commit."""
    done = subprocess.run([sys.executable, "-c", "import graphmem, os; print(os.path.dirname(os.path.dirname(graphmem.__file__)))"],
                          capture_output=True, text=True)
    root = done.stdout.strip() or "?"
    commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    return f"graphmem from {root} at {commit or 'unknown commit'}"


def load_runs(corpus: Path, only: list[str] | None, levels: list[str]) -> list[tuple[Run, Path, dict]]:
    manifest_path = corpus / "manifest.json"
    if not manifest_path.exists():
        raise SystemExit(f"no {manifest_path}: run python scripts/collect_models.py first")
    manifest = json.loads(manifest_path.read_text())
    work = []
    for e in manifest["models"]:
        if only and not any(o in e["name"] for o in only):
            continue
        for b in e["bindings"]:
            for level in levels:
                run = Run(model=e["name"], family=e["family"], binding=b["label"], batch=b.get("batch"), level=level, args=cli_args(b))
                work.append((run, corpus / e["path"], b))
    return work


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help=f"folder holding manifest.json (default {DEFAULT_CORPUS})")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="substrings of model names to keep")
    ap.add_argument("--levels", default="none,all", help="graph-optimization levels, comma-separated (default none,all)")
    ap.add_argument("--jobs", type=int, default=1, help="runs at once (default 1)")
    ap.add_argument("--json", type=Path, metavar="FILE", help="save every run and the counts as JSON")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per subprocess (default 300)")
    args = ap.parse_args(argv)
    work = load_runs(args.corpus, args.only, [lv.strip() for lv in args.levels.split(",") if lv.strip()])
    print(f"{len(work)} runs from {args.corpus / 'manifest.json'}, {args.jobs} at a time; {tree_under_test()}\n")
    print(f"{'model':<26} {'binding':<18} {'level':<5} {'class':<10} {'predicted':>13} {'measured':>13} {'ratio':>7}  note")
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(measure_run, run, path, b, args.timeout) for run, path, b in work]
        runs = []
        for future in futures:
            runs.append(future.result())
            print(row(runs[-1]), flush=True)
    print(f"\n{summary(runs)}\n\n({time.perf_counter() - t0:.0f} s)")
    if args.json:
        counts = Counter(r.cls for r in runs)
        args.json.write_text(json.dumps({"runs": [asdict(r) for r in runs], "counts": dict(counts)}, indent=1))
    bad = any(r.cls in ("off", "crash") or r.flags for r in runs)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--probe":
        print(json.dumps(probe(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))))
        sys.exit(0)
    sys.exit(main())
