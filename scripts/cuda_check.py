"""The CUDA session emulation (``peak --provider cuda``) over the corpus: how each model is split
and what its CUDA-arena peak is beside the CPU one, with the structural checks that need no GPU.

    python scripts/cuda_check.py [--only NAME ...] [--nodes]

Per model (batch 1, other dims 128, or 64 for models/): nodes on CUDA / on CPU / Memcpy nodes,
the CPU and CUDA activation peaks, and the graph inputs the session copies to the device. Checks:
no kernel reads memory on the wrong side (``placement_errors``) and the two-stream run order is a
topological order of the session graph. ``--nodes`` also runs the emulation on onnx's 1,884
single-op test models and counts crashes (there must be none; documented input errors are fine).
Exit status 1 when a check fails. None of this is a GPU measurement: ``scripts/accuracy.py
--provider cuda`` is, where a GPU is.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

import graphmem  # noqa: E402
from graphmem.ort.cuda.placement import session_problems  # noqa: E402
from graphmem.errors import GraphmemError  # noqa: E402
from graphmem.model.loading import load_model  # noqa: E402


def structural_problems(path: Path) -> list[str]:
    return session_problems(load_model(path))


def node_cases() -> tuple[int, int, int, list[str]]:
    """(cases, analysed, rejected with a documented error, crashes) over onnx's node tests."""
    import onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case import node as cases_module

        cases = cases_module.collect_testcases(None)
    ok = rejected = 0
    crashes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            path = Path(tmp) / f"{case.name}.onnx"
            try:
                onnx.save(case.model, str(path))
                dims = {d: 2 for d in load_model(path).symbolic_dims}
                graphmem.analyze(path, dims=dims, provider="cuda")
                problems = structural_problems(path)
                if problems:
                    crashes.append(f"{case.name}: {problems[0]}")
                else:
                    ok += 1
            except GraphmemError:
                rejected += 1
            except Exception as exc:  # noqa: BLE001 - a crash is what this counts
                crashes.append(f"{case.name}: {type(exc).__name__}: {exc}")
    return len(cases), ok, rejected, crashes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--nodes", action="store_true", help="also onnx's single-op test models")
    args = ap.parse_args()
    paths, missing = corpus.select(only=args.only)
    head = f"{'model':<22} {'cuda':>5} {'cpu':>5} {'copy':>5} {'cpu peak':>13} {'cuda peak':>13} {'ratio':>6} {'to device':>11}  checks"
    print(head)
    failed = 0
    for path in paths:
        seq = 64 if path.parent == corpus.MODELS else 128
        dims = corpus.bindings(path, (1,), seq=seq)[0]
        cpu = graphmem.analyze(path, dims=dims)
        cuda = graphmem.analyze(path, dims=dims, provider="cuda")
        p = cuda.placement
        assert p is not None
        problems = structural_problems(path)
        failed += bool(problems)
        ratio = cuda.activations.peak_bytes / cpu.activations.peak_bytes if cpu.activations.peak_bytes else float("nan")
        print(
            f"{corpus.name(path):<22} {p.cuda_nodes:>5} {p.cpu_nodes:>5} {p.memcpy_nodes:>5} "
            f"{cpu.activations.peak_bytes:>13,} {cuda.activations.peak_bytes:>13,} {ratio:>6.3f} "
            f"{p.inputs_on_device_bytes:>11,}  {'ok' if not problems else problems[0]}",
            flush=True,
        )
    for name in missing:
        print(f"{name:<22} (not exported: run python scripts/export_corpus.py)")
    print(f"\n{len(paths)} models, {failed} with a structural problem")
    if args.nodes:
        total, ok, rejected, crashes = node_cases()
        print(f"onnx node tests: {total} models, {ok} analysed and consistent, {rejected} rejected with a documented error, {len(crashes)} crashes or problems")
        for line in crashes[:10]:
            print(f"  {line}")
        failed += len(crashes)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
