#!/usr/bin/env python
"""Every saving ``graphmem advise`` predicts, measured in fresh onnxruntime sessions (issue 27, item 3).

For the exported corpus (``GRAPHMEM_CORPUS``, default ``.cache/corpus``: every ``*.onnx`` there,
``scripts/export_corpus.py --all`` writes them) at batch 1 and 4 (other dims 128, 64 for
``lstm``), it runs :func:`graphmem.batch.advise.advise` from ``--graph-opt none`` with onnxruntime's
defaults and one intra-op thread (``--session-option intra_op_num_threads=1``), then measures the
current options and every setting advised (:func:`graphmem.verify.advice.check_advice`): the
arena's held bytes from the profiler in one fresh process per option set, the resident growth as
the median of ``--processes`` fresh processes (``graphmem verify``'s measurement).

Printed per option set: the arena's steady bytes and the resident growth, predicted/measured,
and the saving against the current options, predicted/measured. The bars are issue 26's
tolerances: the arena's three figures within 0.5%, the resident growth within 10%; a saving
holds when predicted and measured differ by at most that tolerance of the current options'
measured figure. A figure outside its bar with an approximation naming it is counted apart from
one claimed exact.

    python scripts/advise_check.py [--only NAME ...] [--batches 1,4] [--processes 3]
                                   [--levels none,basic,extended,all] [--json FILE]

Needs onnxruntime (graphmem[cpu] or [cuda]). RSS is memory, not time: a busy machine does not move it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

ARENA = ("arena_before_run_bytes", "arena_first_run_bytes", "arena_steady_bytes")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="model names to keep (exact stems)")
    ap.add_argument("--batches", default="1,4")
    ap.add_argument("--processes", type=int, default=3, help="fresh processes per resident measurement (median)")
    ap.add_argument("--levels", default="none,basic,extended,all", help="graph levels advised (the current one is none)")
    ap.add_argument("--json", type=Path, help="also write every row to this file")
    args = ap.parse_args(argv)
    batches = tuple(int(b) for b in args.batches.split(","))
    levels = [lv for lv in args.levels.split(",") if lv != "none"]
    paths = sorted(corpus.EXPORTED.glob("*.onnx"))
    if args.only:
        paths = [p for p in paths if p.stem in args.only]
    print(f"{len(paths)} models from {corpus.EXPORTED}, batches {batches}, current options: --graph-opt none "
          f"--session-option intra_op_num_threads=1; resident: median of {args.processes} fresh processes")
    results = []
    for path in paths:
        seq = 64 if path.stem == "lstm" else 128
        for dims in corpus.bindings(path, batches, seq=seq):
            results.append(check(path, dims, levels, args.processes))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return summary(results)


def check(path: Path, dims: dict[str, int], levels: list[str], processes: int) -> dict:  # type: ignore[type-arg]
    """Advise, measure, print one binding's table; its rows as plain data."""
    from dataclasses import asdict

    from graphmem.batch.advise import advise
    from graphmem.errors import GraphmemError
    from graphmem.verify.advice import check_advice

    label = f"{path.stem} {','.join(f'{k}={v}' for k, v in dims.items()) or 'static'}"
    t0 = time.perf_counter()
    try:
        a = advise(path, dims=dims, session_options=["intra_op_num_threads=1"], levels=levels)
        rows = check_advice(a, processes=processes)
    except GraphmemError as exc:
        print(f"\n{label}: not checked: {exc}")
        return {"model": label, "error": str(exc), "rows": []}
    print(f"\n{label}  ({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"  {'option set':<40} {'arena steady p/m (MiB)':>24} {'ok':>3} {'resident p/m (MiB)':>21} {'ok':>3} "
          f"{'Δ arena p/m':>17} {'Δ resident p/m':>17} {'holds':>5}")
    for r in rows:
        print(_line(r), flush=True)
    for s in a.skipped:
        print(f"  not predicted: {s.setting}={s.value}: {s.reason}")
    return {"model": label, "error": None, "rows": [asdict(r) for r in rows],
            "skipped": [asdict(s) for s in a.skipped]}


def _mb(x: int | None) -> str:
    return "-" if x is None else f"{x / 2**20:.1f}"


def _ok(flag: bool | None, exact: bool) -> str:
    if flag is None:
        return "-"
    return "ok" if flag else ("OUT" if exact else "out~")


def _line(r) -> str:  # type: ignore[no-untyped-def]
    p, m = r.predicted, r.measured
    arena_ok = [r.within[k] for k in ARENA if r.within[k] is not None]
    arena_exact = all(r.exact[k] for k in ARENA)
    a_ok = _ok(all(arena_ok) if arena_ok else None, arena_exact)
    r_ok = _ok(r.within["resident_bytes"], r.exact["resident_bytes"])
    sa = f"{_mb(r.saving_predicted['arena_steady_bytes'])}/{_mb(r.saving_measured['arena_steady_bytes'])}"
    sr = f"{_mb(r.saving_predicted['resident_bytes'])}/{_mb(r.saving_measured['resident_bytes'])}"
    held = [v for v in r.saving_holds.values() if v is not None]
    holds = "-" if not held else ("yes" if all(held) else "NO")
    return (f"  {r.change:<40} {_mb(p['arena_steady_bytes']):>11}/{_mb(m['arena_steady_bytes']):<12} {a_ok:>3} "
            f"{_mb(p['resident_bytes']):>10}/{_mb(m['resident_bytes']):<10} {r_ok:>3} {sa:>17} {sr:>17} {holds:>5}"
            + (f"  ({r.note})" if r.note else ""))


def summary(results: list[dict]) -> int:  # type: ignore[type-arg]
    rows = [r for res in results for r in res["rows"]]
    arena = [r for r in rows if r["measured"]["arena_steady_bytes"] is not None]
    arena_in = [r for r in arena if all(r["within"][k] for k in ARENA)]
    arena_out_exact = [r for r in arena if r not in arena_in and all(r["exact"][k] for k in ARENA)]
    res = [r for r in rows if r["measured"]["resident_bytes"] is not None]
    res_in = [r for r in res if r["within"]["resident_bytes"]]
    savings = [r for r in rows if any(v is not None for v in r["saving_holds"].values())]
    savings_in = [r for r in savings if all(v for v in r["saving_holds"].values() if v is not None)]
    n_a, n_r, n_s = len(arena) or 1, len(res) or 1, len(savings) or 1
    print()
    print(f"SUMMARY over {len(results)} bindings, {len(rows)} option sets:")
    print(f"  arena figures within 0.5%: {len(arena_in)}/{len(arena)} ({len(arena_in) / n_a:.1%}); outside and "
          f"claimed exact: {len(arena_out_exact)}")
    print(f"  resident within 10%: {len(res_in)}/{len(res)} ({len(res_in) / n_r:.1%})")
    print(f"  savings (arena and resident) holding: {len(savings_in)}/{len(savings)} ({len(savings_in) / n_s:.1%})")
    failing = [r for r in savings if r not in savings_in]
    caveated = [r for r in failing if r["resident_caveats"]]
    print(f"  of the {len(failing)} not holding, {len(caveated)} on a resident figure the table marks ~ "
          f"({', '.join(sorted({k for r in caveated for k in r['resident_caveats']})) or 'none'})")
    for res_ in results:
        for r in res_["rows"]:
            bad = [k for k, v in {**r["within"], **{f"saving {k}": v for k, v in r["saving_holds"].items()}}.items()
                   if v is False]
            if bad:
                why = f" [~ {', '.join(r['resident_caveats'])}]" if r["resident_caveats"] else ""
                print(f"    outside: {res_['model']} {r['change']}: {', '.join(bad)}{why}")
        if res_["error"]:
            print(f"    not checked: {res_['model']}: {res_['error'][:120]}")
    return 0 if not arena_out_exact else 1


if __name__ == "__main__":
    sys.exit(main())
