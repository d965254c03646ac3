#!/usr/bin/env python
"""Measure the constants of a session's resident memory (``graphmem/ort/held/constants.py``,
``RESIDENT_CONSTANTS``) and print the table to paste there; or trace the C allocator.

    python scripts/held_constants.py [--processes 3]
    python scripts/held_constants.py --trace MODEL [--level none|all] [--dims batch=1,...] [--replay]

Constants, each in fresh processes that do what ``graphmem.verify.resident`` does (import numpy and
onnxruntime, load the inputs, read VmRSS, create the session, run it five times, read VmRSS again):

* ``mmap_threshold``: glibc's mmap threshold at the point the session is created, probed with
  ``malloc`` of growing sizes (128 KiB up, 4 KiB steps) until one is a mapping of its own (the
  chunk header's IS_MMAPPED bit);
* ``creation_bytes`` / ``node_bytes`` / ``runs_bytes``: over the committed models (``models/``,
  inference ones) and the onnx wheel's light models at ``--graph-opt none`` with one intra-op
  thread: the growth measured at creation minus the growth replayed there
  (:func:`graphmem.analysis.session.session_figures` with every constant 0), fitted as a constant
  plus a cost per node (least squares); and the median of the growth over the runs minus the
  replayed one;
* ``thread_bytes``: the growth after five runs with 1, 2 and 4 intra-op threads, per extra thread
  (the slope from 1 to 4), median over tiny_cnn and tiny_bert.

``--trace`` compiles ``scripts/held_trace.c`` (needs a C compiler), preloads it into a fresh process
creating a session of MODEL and running it three times, and prints the calls of 64 KiB or more
(runs of equal calls folded); with ``--replay`` it also replays them into
:class:`graphmem.ort.held.heap.Heap` and prints the growth the replay gives beside the one measured
(the check of the heap's rules on a real sequence). The rules of ``graphmem/ort/held/loading.py``
were read from such traces.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.dont_write_bytecode = True
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import corpus  # noqa: E402

#: What the fresh process runs before the probe: the same steps as graphmem/verify/_rss_child.py.
_THRESHOLD_CHILD = r"""
import ctypes, gc, json, sys
import numpy as np
import onnxruntime as ort
with np.load(sys.argv[1]) as data:
    feeds = {n: data[n] for n in data.files}
gc.collect()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
size = 128 << 10
while size <= 64 << 20:
    p = libc.malloc(size)
    header = ctypes.c_size_t.from_address(p - 8).value
    libc.free(p)
    if header & 2:
        print(json.dumps({"threshold": size}))
        break
    size += 4096
"""

_TRACE_CHILD = r"""
import gc, json, os, sys
import numpy as np
import onnxruntime as ort
spec = json.loads(sys.argv[1])
def mark(what):
    rss = [l.split()[1] for l in open("/proc/self/status") if l.startswith("VmRSS")][0]
    with open(os.environ["HELD_TRACE_FILE"], "a") as f:
        f.write(f"M {what} {rss}\n")
so = ort.SessionOptions()
so.graph_optimization_level = {"none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL, "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[spec["level"]]
so.intra_op_num_threads = 1
so.log_severity_level = 3
with np.load(spec["feeds"]) as data:
    feeds = {n: data[n] for n in data.files}
gc.collect()
mark("before")
s = ort.InferenceSession(spec["path"], so, providers=["CPUExecutionProvider"])
mark("created")
for i in range(3):
    s.run(None, feeds)
    mark(f"run{i + 1}")
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--trace", type=Path, help="trace the C allocator while MODEL's session is created and run")
    ap.add_argument("--level", default="none")
    ap.add_argument("--dims", default="", help="NAME=VALUE,... for --trace (default: batch 1, other dims 128)")
    ap.add_argument("--replay", action="store_true", help="with --trace: replay the calls into graphmem's Heap")
    args = ap.parse_args(argv)
    if args.trace:
        return trace(args.trace, args.level, _dims(args.trace, args.dims), replay=args.replay)
    return constants(args.processes)


def _dims(path: Path, text: str) -> dict[str, int]:
    if text:
        return {k: int(v) for k, v in (item.split("=") for item in text.split(","))}
    return corpus.bindings(path, (1,))[0]


def _feeds(path: Path, dims: dict[str, int], workdir: Path):  # type: ignore[no-untyped-def]
    """(analysis at none, the inputs as an .npz in ``workdir``, the feeds)."""
    import numpy as np
    import onnx

    from graphmem.analysis.graph_opt import analyze_graph_opt
    from graphmem.verify import make_feeds

    a = analyze_graph_opt(path, "none", dims=dims)
    feeds = make_feeds(onnx.load(str(path), load_external_data=False), a.model.dims, seed=0, shapes=a.model.shapes,
                       values=a.model.values)
    npz = workdir / f"{path.stem}.npz"
    np.savez(npz, **feeds)
    return a, npz, feeds


def constants(processes: int) -> int:
    from graphmem.analysis.graph_opt import analyze_graph_opt
    from graphmem.analysis.session import session_figures
    from graphmem.ort.held.constants import RESIDENT_CONSTANTS
    from graphmem.ort.held.options import parse_session_options
    from graphmem.verify.resident import measure_resident

    models = [p for p in corpus.committed_models() if not p.stem.startswith("train_")] + corpus.light_models()
    with tempfile.TemporaryDirectory(prefix="held-constants-") as tmp:
        work = Path(tmp)
        _, npz, _ = _feeds(models[0], corpus.bindings(models[0], (1,), seq=64)[0], work)
        done = subprocess.run([sys.executable, "-c", _THRESHOLD_CHILD, str(npz)], capture_output=True, text=True, check=True)
        threshold = json.loads(done.stdout.strip().splitlines()[-1])["threshold"]
        print(f"mmap threshold when the session is created: {threshold:,} B")
        zero = replace(RESIDENT_CONSTANTS, creation_bytes=0, node_bytes=0, runs_bytes=0, thread_bytes=0,
                       mmap_threshold=threshold)
        at_creation, over_runs, nodes = [], [], []
        print(f"{'model':<20} {'dims':<16} {'nodes':>6} {'created meas':>13} {'replayed':>10} {'runs meas':>10} {'replayed':>10}")
        for path in models:
            dims = corpus.bindings(path, (1,), seq=64)[0]
            a, _, feeds = _feeds(path, dims, work)
            options = parse_session_options(["intra_op_num_threads=1"], graph_opt="none", default_threads=1)
            s = session_figures(a, options, constants=zero)
            m = measure_resident(path, feeds, threads=1, processes=processes)
            created, grown = int(statistics.median(m.created)), m.bytes
            at_creation.append(created - s.resident_after_creation)
            over_runs.append((grown - created) - (s.resident_bytes - s.resident_after_creation))
            nodes.append(a.model.nodes)
            print(f"{path.stem:<20} {','.join(f'{k}={v}' for k, v in dims.items()):<16} {a.model.nodes:>6} {created:>13,} "
                  f"{s.resident_after_creation:>10,} {grown - created:>10,} {s.resident_bytes - s.resident_after_creation:>10,}")
        slopes = []
        for path in (corpus.MODELS / "tiny_cnn.onnx", corpus.MODELS / "tiny_bert.onnx"):
            dims = corpus.bindings(path, (1,), seq=64)[0]
            _, _, feeds = _feeds(path, dims, work)
            grown = {t: measure_resident(path, feeds, threads=t, processes=processes).bytes for t in (1, 2, 4)}
            slopes.append((grown[4] - grown[1]) // 3)
            print(f"{path.stem}: growth with 1, 2, 4 intra-op threads: {grown[1]:,}, {grown[2]:,}, {grown[4]:,} B")
    per_node, constant = statistics.linear_regression(nodes, at_creation)
    creation = _round(constant)
    node = int(round(per_node))
    runs = _round(statistics.median(over_runs))
    thread = _round(statistics.median(slopes))
    worst = max(abs(c - (constant + per_node * n)) for c, n in zip(at_creation, nodes))
    spread = (f"creation fit within {worst:,.0f} B over {min(nodes)}..{max(nodes)} nodes, "
              f"runs {min(over_runs):,}..{max(over_runs):,} B, "
              f"thread {min(slopes):,}..{max(slopes):,} B over {', '.join(p.stem for p in models)}")
    import onnxruntime

    print("\nRESIDENT_CONSTANTS = ResidentConstants(")
    print('    script="scripts/held_constants.py",')
    print(f'    date="{datetime.date.today().isoformat()}",')
    print(f'    runtime="onnxruntime {onnxruntime.__version__} (CPU provider), Python {sys.version_info.major}.{sys.version_info.minor}",')
    print(f"    creation_bytes={creation:_},")
    print(f"    node_bytes={node:_},")
    print(f"    runs_bytes={runs:_},")
    print(f"    thread_bytes={thread:_},")
    print(f"    mmap_threshold={threshold:_},")
    print(f'    sample="{spread}",')
    print(")")
    return 0


def _round(x: float) -> int:
    """To a whole page (the figures are pages)."""
    return int(round(x / 4096)) * 4096


def trace(path: Path, level: str, dims: dict[str, int], *, replay: bool) -> int:
    with tempfile.TemporaryDirectory(prefix="held-trace-") as tmp:
        work = Path(tmp)
        lib = work / "held_trace.so"
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(ROOT / "scripts" / "held_trace.c"), "-ldl"], check=True)
        _, npz, _ = _feeds(path, dims, work)
        log = work / "trace.log"
        spec = {"path": str(path), "level": level, "feeds": str(npz)}
        env = {"LD_PRELOAD": str(lib), "HELD_TRACE_FILE": str(log), "PATH": "/usr/bin:/bin"}
        subprocess.run([sys.executable, "-c", _TRACE_CHILD, json.dumps(spec)], check=True, env=env)
        lines = log.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("M before"))
    calls = lines[start:]
    folded: list[list[object]] = []
    for line in calls:
        p = line.split()
        key = line if p[0] == "M" else f"{p[0]} {int(p[2]):>12,} {'mmap' if p[3] == '1' else 'heap'} align={p[4]}"
        if folded and folded[-1][0] == key:
            folded[-1][1] = int(folded[-1][1]) + 1  # type: ignore[call-overload]
        else:
            folded.append([key, 1])
    for key, count in folded:
        print(f"{count:>4} x {key}")
    if replay:
        _replay(calls)
    return 0


def _replay(calls: list[str]) -> None:
    from graphmem.ort.held.constants import RESIDENT_CONSTANTS
    from graphmem.ort.held.heap import Heap

    for keep in (True, False):
        heap = Heap(threshold=RESIDENT_CONSTANTS.mmap_threshold, keep_slivers=keep)
        blocks, base, rows = {}, None, []
        for line in calls:
            p = line.split()
            if p[0] == "M":
                rss = int(p[2]) * 1024
                base = rss if base is None else base
                rows.append(f"{p[1]} measured {(rss - base) / 2**20:.1f} MiB, replayed {heap.resident / 2**20:.1f} MiB")
                continue
            addr = int(p[1], 16)
            if p[0] == "A":
                align = int(p[4]) % 1000 if int(p[4]) else 16
                blocks[addr] = heap.malloc(int(p[2]), align=max(align, 16))
            elif addr in blocks:
                heap.free(blocks.pop(addr))
        print(f"replay, slivers {'apart' if keep else 'merged'}: " + "; ".join(rows))


if __name__ == "__main__":
    sys.exit(main())
