#!/usr/bin/env python
"""Every figure of the ``session`` block predicted against measured (issue 26, "How you know it is right").

For the exported corpus (``GRAPHMEM_CORPUS``, default ``.cache/corpus``: every ``*.onnx`` there,
``scripts/export_corpus.py --all`` writes the eleven architectures) at batch 1 and 4 (other dims
128, 64 for ``lstm``), and for the onnx wheel's ``backend/test/data/light`` models (static shapes),
at ``--graph-opt none`` and ``all``, under onnxruntime's default session options with one intra-op
thread, it prints what :func:`graphmem.analysis.session.session_figures` predicts and what fresh
processes measure:

* the arena (``arena_before_run_bytes``, ``arena_first_run_bytes``, ``arena_steady_bytes``): the
  profiler's ``mem_arena_held`` before run 1, its largest over run 1 and over run 5, in one fresh
  profiled process (``scripts/held_arena_check.py``'s measurement);
* ``resident_bytes``: the VmRSS growth from just before the session is created (inputs loaded) to
  after run 5, the median of ``--processes`` fresh processes (:func:`graphmem.verify.resident.measure_resident`);
* ``weights_held_bytes`` is printed without a measurement of its own (it is in the resident growth;
  with prepacking off it is the arena's held bytes before run 1, which ``held_arena_check.py`` checks).

The summary applies the issue's bars: the three arena figures within 0.5% on at least 95% of the
runs, and every run outside with those figures not exact (an approximation naming them, its reason
printed); ``resident_bytes`` within 10% on at least 90% of the runs.

    python scripts/held_check.py [--only NAME ...] [--batches 1,4] [--levels none,all]
                                 [--processes 3] [--no-light] [--no-exported] [--json FILE]
    python scripts/held_check.py --summarize LOG [LOG ...]

``--summarize`` reads the rows this script printed (several runs over parts of the corpus, e.g.
``--only`` in parallel processes; a row printed twice counts once, the first) and prints them
and the summary again, from the printed figures (MiB to 0.1, ratios to 0.001).

Needs onnxruntime (graphmem[cpu] or [cuda]). The processes run one after another; RSS is memory,
not time, so a busy machine does not move it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402
import held_arena_check  # noqa: E402

ARENA_TOLERANCE = 0.005
RESIDENT_TOLERANCE = 0.10
ARENA = ("arena_before_run_bytes", "arena_first_run_bytes", "arena_steady_bytes")
MEASURED_KEYS = {"arena_before_run_bytes": "before", "arena_first_run_bytes": "first", "arena_steady_bytes": "steady"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="substrings of model names to keep")
    ap.add_argument("--batches", default="1,4")
    ap.add_argument("--levels", default="none,all")
    ap.add_argument("--processes", type=int, default=3, help="fresh processes per resident measurement (median)")
    ap.add_argument("--no-light", action="store_true", help="leave out the onnx wheel's light models")
    ap.add_argument("--no-exported", action="store_true", help="leave out the exported corpus")
    ap.add_argument("--json", type=Path, help="also write every row to this file")
    ap.add_argument("--summarize", type=Path, nargs="+", help="the summary of rows printed by earlier runs")
    args = ap.parse_args(argv)
    if args.summarize:
        return summarize(args.summarize)
    batches = tuple(int(b) for b in args.batches.split(","))
    levels = args.levels.split(",")
    paths = [] if args.no_light else corpus.light_models()
    if not args.no_exported:
        paths += sorted(corpus.EXPORTED.glob("*.onnx"))
    if args.only:
        paths = [p for p in paths if any(s in corpus.name(p) for s in args.only)]
    print(f"{len(paths)} models, batches {batches}, levels {levels}, resident: median of {args.processes} fresh processes")
    print(_head())
    rows = []
    for path in paths:
        seq = 64 if path.stem == "lstm" else 128
        for dims in corpus.bindings(path, batches, seq=seq):
            for level in levels:
                row = check(path, dims, level, processes=args.processes)
                rows.append(row)
                print(_line(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return summary(rows)


def check(path: Path, dims: dict[str, int], level: str, *, processes: int) -> dict:  # type: ignore[type-arg]
    """One model, binding and level: predicted, measured, ratios, exactness."""
    from graphmem.analysis.graph_opt import analyze_graph_opt
    from graphmem.analysis.session import SESSION_FIGURES, session_figures
    from graphmem.errors import GraphmemError
    from graphmem.ort.held.options import parse_session_options
    from graphmem.verify import make_feeds
    from graphmem.verify.resident import measure_resident

    import onnx

    row: dict = {"model": corpus.name(path), "dims": ",".join(f"{k}={v}" for k, v in dims.items()) or "static",  # type: ignore[type-arg]
                 "level": level, "error": None}
    t0 = time.perf_counter()
    try:
        analysis = analyze_graph_opt(path, level, dims=dims)
        options = parse_session_options(["intra_op_num_threads=1"], graph_opt=level, default_threads=1)
        s = session_figures(analysis, options)
    except GraphmemError as exc:
        row["error"] = f"not predicted: {exc}"
        return row
    row["predicted"] = {name: getattr(s, name) for name in SESSION_FIGURES}
    row["predicted_created"] = s.resident_after_creation
    row["other_case"] = s.resident_other_case
    row["exact"] = {name: s.exact_figure(name) for name in SESSION_FIGURES}
    row["reasons"] = {name: sorted({a.kind for a in s.approximations if name in a.figures}) for name in SESSION_FIGURES}
    arena = held_arena_check._measure(path, dims, options)
    if arena.get("error"):
        row["error"] = f"arena not measured: {arena['error']}"
        return row
    measured = {name: arena[key] for name, key in MEASURED_KEYS.items()}
    feeds = make_feeds(onnx.load(str(path), load_external_data=False), analysis.model.dims, seed=0,
                       shapes=analysis.model.shapes, values=analysis.model.values)
    r = measure_resident(path, feeds, graph_opt=level, threads=1, processes=processes)
    measured["resident_bytes"] = r.bytes
    row["measured"] = measured
    row["measured_created"] = int(statistics.median(r.created))
    row["processes"] = list(r.grown)
    row["ratio"] = {k: (row["predicted"][k] / v if v else (1.0 if row["predicted"][k] == 0 else None)) for k, v in measured.items()}
    row["arena_within"] = all(_close(row["predicted"][k], measured[k], ARENA_TOLERANCE) for k in ARENA)
    row["resident_within"] = _close(row["predicted"]["resident_bytes"], measured["resident_bytes"], RESIDENT_TOLERANCE)
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def _close(p: int, m: int, tol: float) -> bool:
    return p == m or (m > 0 and abs(p / m - 1) <= tol)


def _mb(x: int | None) -> str:
    return "-" if x is None else f"{x / 2**20:.1f}"


def _head() -> str:
    return (f"{'model':<20} {'dims':<16} {'opt':<4} {'weights':>8} | {'before p/m':>15} {'first p/m':>15} {'steady p/m':>15} "
            f"{'arena':>5} | {'resident p/m (MiB)':>19} {'ratio':>6} {'ok':>3} | per process (MiB)  not exact")


def _line(row: dict) -> str:  # type: ignore[type-arg]
    head = f"{row['model']:<20} {row['dims']:<16} {row['level']:<4}"
    if row["error"]:
        return f"{head} {row['error'][:100]}"
    p, m = row["predicted"], row["measured"]
    cells = [f"{_mb(p[k]):>7}/{_mb(m[k]):<7}" for k in ARENA]
    arena_ok = "ok" if row["arena_within"] else "OUT"
    res_ok = "ok" if row["resident_within"] else "OUT"
    procs = ",".join(_mb(x) for x in row["processes"])
    reasons = sorted({k for names in row["reasons"].values() for k in names} - {"measured_constant", "heap_fragmentation"})
    exact_arena = "arena exact" if all(row["exact"][k] for k in ARENA) else "arena: " + ",".join(
        sorted({k for name in ARENA for k in row["reasons"][name]}))
    return (f"{head} {_mb(p['weights_held_bytes']):>8} | {cells[0]} {cells[1]} {cells[2]} {arena_ok:>5} | "
            f"{_mb(p['resident_bytes']):>9}/{_mb(m['resident_bytes']):<9} {row['ratio']['resident_bytes']:6.3f} {res_ok:>3} | "
            f"{procs}  {exact_arena}{'; ' + ','.join(reasons) if reasons and not exact_arena.startswith('arena:') else ''}")


def summary(rows: list[dict]) -> int:  # type: ignore[type-arg]
    done = [r for r in rows if not r["error"]]
    arena_in = [r for r in done if r["arena_within"]]
    arena_out = [r for r in done if not r["arena_within"]]
    out_claiming = [r for r in arena_out if all(r["exact"][k] for k in ARENA)]
    res_in = [r for r in done if r["resident_within"]]
    n = len(done) or 1
    arena_share, res_share = len(arena_in) / n, len(res_in) / n
    ratios = sorted(r["ratio"]["resident_bytes"] for r in done)
    print()
    print(f"SUMMARY over {len(done)} runs ({len(rows) - len(done)} not measured):")
    print(f"  arena figures within {ARENA_TOLERANCE:.1%}: {len(arena_in)}/{len(done)} ({arena_share:.1%}); outside: "
          f"{len(arena_out)}, of which claiming exact: {len(out_claiming)}  -> bar (>=95%, none outside exact): "
          f"{'MET' if arena_share >= 0.95 and not out_claiming else 'NOT MET'}")
    for r in arena_out:
        why = sorted({k for name in ARENA for k in r["reasons"][name]})
        print(f"    outside: {r['model']} {r['dims']} {r['level']}: {', '.join(why) or 'CLAIMS EXACT'}")
    print(f"  resident_bytes within {RESIDENT_TOLERANCE:.0%}: {len(res_in)}/{len(done)} ({res_share:.1%})  -> bar (>=90%): "
          f"{'MET' if res_share >= 0.90 else 'NOT MET'}")
    if ratios:
        print(f"  resident predicted/measured: median {statistics.median(ratios):.3f}, range {ratios[0]:.3f}-{ratios[-1]:.3f}")
    for r in done:
        if not r["resident_within"]:
            print(f"    outside: {r['model']} {r['dims']} {r['level']}: predicted {_mb(r['predicted']['resident_bytes'])} MiB "
                  f"(other heap case {_mb(r['other_case'])}), measured {_mb(r['measured']['resident_bytes'])} MiB "
                  f"(processes {', '.join(_mb(x) for x in r['processes'])})")
    for r in rows:
        if r["error"]:
            print(f"    not measured: {r['model']} {r['dims']} {r['level']}: {r['error'][:120]}")
    return 0 if not out_claiming else 1


def summarize(logs: list[Path]) -> int:
    """The summary of the rows printed in ``logs`` (see the module doc)."""
    rows: dict[tuple[str, str, str], dict] = {}  # type: ignore[type-arg]
    for log in logs:
        for line in log.read_text(encoding="utf-8").splitlines():
            row = _parse(line)
            if row is not None:
                rows.setdefault((row["model"], row["dims"], row["level"]), row)
    print(f"{len(rows)} rows read from {', '.join(str(x) for x in logs)}")
    print(_head())
    for r in rows.values():
        print(r["line"])
    done = [r for r in rows.values() if not r["error"]]
    arena_in = [r for r in done if r["arena_within"]]
    arena_out = [r for r in done if not r["arena_within"]]
    claiming = [r for r in arena_out if r["arena_exact"]]
    res_in = [r for r in done if r["resident_within"]]
    n = len(done) or 1
    ratios = sorted(r["ratio"] for r in done)
    print()
    print(f"SUMMARY over {len(done)} runs ({len(rows) - len(done)} not measured):")
    print(f"  arena figures within {ARENA_TOLERANCE:.1%}: {len(arena_in)}/{len(done)} ({len(arena_in) / n:.1%}); outside: "
          f"{len(arena_out)}, of which claiming exact: {len(claiming)}  -> bar (>=95%, none outside exact): "
          f"{'MET' if len(arena_in) / n >= 0.95 and not claiming else 'NOT MET'}")
    for r in arena_out:
        print(f"    outside: {r['model']} {r['dims']} {r['level']}: {r['why'] or 'CLAIMS EXACT'}")
    print(f"  resident_bytes within {RESIDENT_TOLERANCE:.0%}: {len(res_in)}/{len(done)} ({len(res_in) / n:.1%})  -> bar (>=90%): "
          f"{'MET' if len(res_in) / n >= 0.90 else 'NOT MET'}")
    if ratios:
        print(f"  resident predicted/measured: median {statistics.median(ratios):.3f}, range {ratios[0]:.3f}-{ratios[-1]:.3f}")
    for r in done:
        if not r["resident_within"]:
            print(f"    outside: {r['model']} {r['dims']} {r['level']}: predicted/measured {r['resident']} MiB, "
                  f"ratio {r['ratio']:.3f}; {r['why']}")
    for r in rows.values():
        if r["error"]:
            print(f"    not measured: {r['model']} {r['dims']} {r['level']}: {r['error'][:120]}")
    return 0 if not claiming else 1


def _parse(line: str) -> dict | None:  # type: ignore[type-arg]
    """A row printed by :func:`_line` (None for any other line)."""
    words = line.split()
    if len(words) < 4 or words[0] in ("model", "SUMMARY") or words[2] not in ("none", "basic", "extended", "all"):
        return None
    row = {"model": words[0], "dims": words[1], "level": words[2], "line": line, "error": None}
    parts = line.split(" | ")
    if len(parts) != 4:
        row["error"] = line[len(f"{words[0]:<20} {words[1]:<16} {words[2]:<4} "):]
        return row
    resident = parts[2].split()
    procs, _, exactness = parts[3].partition("  ")
    row.update(arena_within=parts[1].split()[-1] == "ok", resident_within=resident[2] == "ok", ratio=float(resident[1]),
               resident=resident[0], arena_exact=exactness.startswith("arena exact"), why=exactness.strip())
    return row


if __name__ == "__main__":
    sys.exit(main())
