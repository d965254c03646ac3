#!/usr/bin/env python
"""Time ``graphmem check`` on 20 models with --jobs 1 and --jobs 2 (target: ≥ 1.6× faster).

    python scripts/bench_check.py [--repeat 3] [--keep DIR]

The 20 models are copied into a temporary directory with a ``graphmem.toml`` naming each
with its dims and generous budgets: the nine ``light`` models of the onnx wheel
(``onnx/backend/test/data/light``: AlexNet, DenseNet-121, Inception v1/v2, ResNet-50,
ShuffleNet, SqueezeNet, VGG-19, ZFNet-512; fixed 1×3×224×224 inputs), the six models in
``models/``, and five copies of the larger ones (DenseNet-121 twice, Inception v2, ResNet-50,
GPT-2 at other dims). Each command is a fresh process (``python -m graphmem check``), so
start-up (~0.6 s of imports, the same for both) is included in both timings. The runs
alternate between --jobs 1 and --jobs 2, so both see the same machine load, and the best of
``--repeat`` is reported after one warm-up run of each, with the CPU seconds (the process and
its workers): on a shared machine, wall time well above CPU time means other processes held
the CPUs, and the ratio says little.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx

REPO = Path(__file__).resolve().parents[1]
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"

#: (source, copy name, dims); dims as TOML inline-table text.
TINY = [
    ("tiny_bert.onnx", "tiny_bert.onnx", "{ batch = 8, seq = 128 }"),
    ("tiny_gpt2.onnx", "tiny_gpt2.onnx", "{ batch = 8, seq = 128 }"),
    ("tiny_cnn.onnx", "tiny_cnn.onnx", "{ batch = 8 }"),
    ("tiny_lstm.onnx", "tiny_lstm.onnx", "{ batch = 8, seq = 128 }"),
    ("tiny_unet.onnx", "tiny_unet.onnx", "{ batch = 8 }"),
    ("static_mlp.onnx", "static_mlp.onnx", "{}"),
]
VARIANTS = [
    (LIGHT / "light_densenet121.onnx", "densenet121_copy1.onnx", "{}"),
    (LIGHT / "light_densenet121.onnx", "densenet121_copy2.onnx", "{}"),
    (LIGHT / "light_inception_v2.onnx", "inception_v2_copy.onnx", "{}"),
    (LIGHT / "light_resnet50.onnx", "resnet50_copy.onnx", "{}"),
    (REPO / "models" / "tiny_gpt2.onnx", "tiny_gpt2_b1_s64.onnx", "{ batch = 1, seq = 64 }"),
]


def build(root: Path) -> Path:
    """Copy the 20 models under ``root/models`` and write ``root/graphmem.toml``."""
    (root / "models").mkdir(parents=True, exist_ok=True)
    entries = [(p, p.name, "{}") for p in sorted(LIGHT.glob("*.onnx"))]
    entries += [(REPO / "models" / src, name, dims) for src, name, dims in TINY]
    entries += VARIANTS
    lines = ['max-total = "2GiB"', 'max-params = "1G"', ""]
    for src, name, dims in entries:
        shutil.copyfile(src, root / "models" / name)
        lines += ["[[models]]", f'path = "models/{name}"', f"dims = {dims}", ""]
    config = root / "graphmem.toml"
    config.write_text("\n".join(lines))
    if len(entries) != 20:
        raise SystemExit(f"expected 20 models, made {len(entries)}")
    return config


def time_check(config: Path, jobs: int) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + sys, the process and its workers) of one check."""
    cmd = [sys.executable, "-m", "graphmem", "check", "--config", str(config),
           "--jobs", str(jobs), "--format", "json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"graphmem check --jobs {jobs} exited {proc.returncode}:\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build the models and config here, and keep them")
    args = parser.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="graphmem-bench-"))
    try:
        config = build(root)
        print(f"graphmem check on 20 models ({config}); {os.cpu_count()} CPUs; "
              f"best of {args.repeat} after a warm-up; load average {_load()}")
        for jobs in (1, 2):
            time_check(config, jobs)  # warm-up: page cache
        runs: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
        for _ in range(args.repeat):  # alternate, so that both see the same machine load
            for jobs in (1, 2):
                runs[jobs].append(time_check(config, jobs))
        times = {}
        for jobs in (1, 2):
            wall, cpu = min(runs[jobs])
            times[jobs] = wall
            print(f"  --jobs {jobs}: {wall:.2f} s wall, {cpu:.2f} s CPU")
        print(f"  load average afterwards {_load()} (other processes share these CPUs)")
        ratio = times[1] / times[2]
        verdict = "meets" if ratio >= 1.6 else "misses"
        print(f"  speed-up --jobs 2 vs --jobs 1: {ratio:.2f}x ({verdict} the 1.6x target)")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
