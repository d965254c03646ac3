#!/usr/bin/env python
"""``graphmem fit`` on held memory against real sessions (issue 27, "How you know it is right").

For exported models (``GRAPHMEM_CORPUS``, default ``.cache/corpus``) and a memory limit each, it
runs ``graphmem fit MODEL --memory LIMIT --solve batch --json`` (``--by resident``, the default;
onnxruntime's default session options with one intra-op thread, graph-opt none) as a user would,
then measures the answer ``n`` and the next value ``n + 1`` in fresh onnxruntime sessions: the
``VmRSS`` growth of a fresh process from just before the session is created to after its fifth
run, the median of ``--processes`` processes (:func:`graphmem.verify.resident.measure_resident`,
issue 26's measurement, the inputs excluded).

Per case it prints the predicted and measured resident at ``n`` and ``n + 1`` and where each
measured figure falls against the limit. The bar (the resident prediction's stated tolerance,
10%): the measured resident of ``n`` is at most the limit + 10%, and that of ``n + 1`` is more
than the limit - 10% ("on the right side of the limit within the 10% tolerance"); the summary
also counts the cases where both are strictly on their side.

    python scripts/fit_check.py [--only NAME ...] [--processes 3] [--json FILE]

Needs onnxruntime and the corpus (missing models are skipped, and said). Measuring takes memory,
not time: a busy machine does not move it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

TOLERANCE = 0.10
MiB = 2**20
#: (model, fixed dims, memory limit): limits chosen so each answer is a small batch (every measured
#: session runs five times in three processes) next to a step of the arena.
CASES: tuple[tuple[str, dict[str, int], str], ...] = (
    ("resnet18", {}, "112MiB"),
    ("mobilenetv2", {}, "112MiB"),
    ("bert_base", {"seq": 32}, "652MiB"),
)
SESSION = ("--session-option", "intra_op_num_threads=1")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="substrings of model names to keep")
    ap.add_argument("--processes", type=int, default=3, help="fresh processes per measurement (median)")
    ap.add_argument("--json", type=Path, help="also write every row to this file")
    args = ap.parse_args(argv)
    rows = []
    print(f"fit on held memory vs fresh onnxruntime sessions (median VmRSS growth of {args.processes} processes, "
          f"session creation to run 5; intra_op_num_threads=1, graph-opt none); tolerance {TOLERANCE:.0%}")
    print(f"{'model':<12} {'dims':<8} {'limit':>8} {'n':>4} {'pred n':>9} {'meas n':>9} {'pred n+1':>9} "
          f"{'meas n+1':>9}  verdict")
    for name, dims, limit in CASES:
        if args.only and not any(s in name for s in args.only):
            continue
        path = corpus.EXPORTED / f"{name}.onnx"
        if not path.is_file():
            print(f"{name:<12} skipped: {path} is missing (scripts/export_corpus.py writes it)")
            continue
        row = check(path, dims, limit, processes=args.processes)
        rows.append(row)
        print(_line(row), flush=True)
    code = summary(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return code


def fit(path: Path, dims: dict[str, int], limit: str) -> dict:  # type: ignore[type-arg]
    """``graphmem fit`` as a user runs it: a subprocess, its JSON document."""
    cmd = [sys.executable, "-m", "graphmem", "fit", str(path), "--memory", limit, "--solve", "batch", *SESSION, "--json"]
    for k, v in dims.items():
        cmd += ["--dim", f"{k}={v}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"graphmem fit failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)


def check(path: Path, dims: dict[str, int], limit: str, *, processes: int) -> dict:  # type: ignore[type-arg]
    """One case: fit's answer and the next value, predicted and measured."""
    import onnx

    from graphmem.analysis.pipeline import analyze
    from graphmem.verify import make_feeds
    from graphmem.verify.resident import measure_resident

    t0 = time.perf_counter()
    doc = fit(path, dims, limit)
    n, budget = doc["largest"], doc["budget_bytes"]
    row: dict = {"model": corpus.name(path), "dims": dims, "limit": limit, "budget_bytes": budget, "largest": n,  # type: ignore[type-arg]
                 "measure": doc["measure"], "predicted": {}, "measured": {}, "processes": {}}
    held = doc["held"]
    row["predicted"] = {"n": held["at"]["resident_bytes"] if held["at"] else None,
                        "next": held["next"]["resident_bytes"] if held["next"] else None}
    model = onnx.load(str(path), load_external_data=False)
    for key, value in (("n", n), ("next", n + 1)):
        if value < 1:
            continue
        a = analyze(path, dims={**dims, "batch": value})
        feeds = make_feeds(model, a.model.dims, seed=0, shapes=a.model.shapes, values=a.model.values)
        r = measure_resident(path, feeds, graph_opt="none", threads=1, processes=processes)
        row["measured"][key] = r.bytes
        row["processes"][key] = list(r.grown)
    m_n, m_next = row["measured"].get("n"), row["measured"].get("next")
    row["n_within"] = m_n is not None and m_n <= budget * (1 + TOLERANCE)
    row["next_within"] = m_next is not None and m_next > budget * (1 - TOLERANCE)
    row["n_strict"] = m_n is not None and m_n <= budget
    row["next_strict"] = m_next is not None and m_next > budget
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def _mb(x: int | None) -> str:
    return "-" if x is None else f"{x / MiB:.1f}M"


def _side(measured: int | None, budget: int) -> str:
    if measured is None:
        return "-"
    return f"{100 * (measured - budget) / budget:+.1f}%"


def _line(row: dict) -> str:  # type: ignore[type-arg]
    p, m, b = row["predicted"], row["measured"], row["budget_bytes"]
    dims = ",".join(f"{k}={v}" for k, v in row["dims"].items()) or "-"
    ok = "ok" if row["n_within"] and row["next_within"] else "OUTSIDE"
    return (f"{row['model']:<12} {dims:<8} {row['limit']:>8} {row['largest']:>4} {_mb(p['n']):>9} {_mb(m.get('n')):>9} "
            f"{_mb(p['next']):>9} {_mb(m.get('next')):>9}  {ok}: n {_side(m.get('n'), b)} of the limit, "
            f"n+1 {_side(m.get('next'), b)} ({row['seconds']} s)")


def summary(rows: list[dict]) -> int:  # type: ignore[type-arg]
    """The bar: every case's answer and next value on the right side of the limit within the tolerance."""
    done = [r for r in rows if r["measured"]]
    within = sum(r["n_within"] and r["next_within"] for r in done)
    strict = sum(r["n_strict"] and r["next_strict"] for r in done)
    print(f"\n{within}/{len(done)} cases on the right side of the limit within {TOLERANCE:.0%} "
          f"(answer measured <= limit + {TOLERANCE:.0%}, next value measured > limit - {TOLERANCE:.0%}); "
          f"{strict}/{len(done)} strictly (answer <= limit < next)")
    ratios = [r["measured"][k] / r["predicted"][k] for r in done for k in ("n", "next")
              if r["measured"].get(k) and r["predicted"].get(k)]
    if ratios:
        print(f"measured / predicted resident over {len(ratios)} sessions: {min(ratios):.3f} .. {max(ratios):.3f}")
    return 0 if within == len(done) else 1


if __name__ == "__main__":
    sys.exit(main())
