"""Every default-domain op of the installed onnx: graphmem's FLOP outcome and onnxruntime's CPU kernels.

    python scripts/op_coverage.py [--opset N] [--kernels FILE] [--all]

For each op onnx defines in the default domain up to ``--opset`` (default: the installed onnx's
newest), prints its newest since-version, the outcome ``graphmem ops --json --opset N`` gives it
(counted / zero / unsupported), whether graphmem's emulation runs it as a function body
(``RUNS_AS_FUNCTION``), whether onnx gives it a function body, and the CPU kernel version ranges
the installed onnxruntime registers (``onnxruntime.capi.onnxruntime_pybind11_state
.get_all_opkernel_def``; onnxruntime-gpu's build cannot list them on a machine without CUDA,
so pass ``--kernels FILE``, a JSON ``{op: [[start, end], ...]}`` dumped by
``--dump-kernels FILE`` under a plain onnxruntime of the same version). Without ``--all`` only
the ops graphmem calls unsupported are listed. Then: ops with no FLOP table entry at all, and
ops onnxruntime runs as function bodies (an onnx body, no CPU kernel at that version) that
``RUNS_AS_FUNCTION`` misses. Exit 1 when either list is not empty.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from onnx import defs

from graphmem.optable import is_default_domain, normalize_domain


def _gpu_build() -> bool:
    """Whether the installed onnxruntime is the onnxruntime-gpu distribution."""
    from importlib import metadata

    try:
        metadata.version("onnxruntime-gpu")
    except metadata.PackageNotFoundError:
        return False
    return True


def cpu_kernels() -> dict[str, list[list[int]]]:
    import onnxruntime.capi.onnxruntime_pybind11_state as C

    out: dict[str, set[tuple[int, int]]] = {}
    for k in C.get_all_opkernel_def():
        if k.provider == "CPUExecutionProvider" and is_default_domain(k.domain):
            out.setdefault(k.op_name, set()).add(tuple(k.version_range))
    return {op: sorted([list(r) for r in ranges]) for op, ranges in out.items()}


def newest_schemas(opset: int) -> dict[str, defs.OpSchema]:
    newest: dict[str, defs.OpSchema] = {}
    for s in defs.get_all_schemas_with_history():
        if is_default_domain(s.domain) and s.since_version <= opset:
            if s.name not in newest or s.since_version > newest[s.name].since_version:
                newest[s.name] = s
    return newest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--opset", type=int, default=defs.onnx_opset_version())
    ap.add_argument("--kernels", default=None, help="JSON kernel ranges dumped by --dump-kernels")
    ap.add_argument("--dump-kernels", default=None, help="write this onnxruntime's CPU kernel ranges and exit")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--ort-opset", type=int, default=26,
                    help="newest default-domain opset onnxruntime loads (1.31 and 1.32: 26; 27 is refused)")
    args = ap.parse_args()
    if args.dump_kernels:
        import onnxruntime

        with open(args.dump_kernels, "w") as f:
            json.dump({"onnxruntime": onnxruntime.__version__, "kernels": cpu_kernels()}, f, indent=1, sort_keys=True)
        return 0
    if args.kernels:
        with open(args.kernels) as f:
            dumped = json.load(f)
        kernels, ort_version = dumped["kernels"], dumped["onnxruntime"]
    else:
        if _gpu_build():
            print("op_coverage.py: onnxruntime-gpu cannot list its kernels on this machine (it crashes "
                  "loading the CUDA provider); pass --kernels FILE dumped by --dump-kernels under a plain "
                  "onnxruntime of the same version", file=sys.stderr)
            return 2
        import onnxruntime

        kernels, ort_version = cpu_kernels(), onnxruntime.__version__
    from graphmem.ort.rules import RUNS_AS_FUNCTION

    doc = json.loads(
        subprocess.run(
            [sys.executable, "-m", "graphmem", "ops", "--json", "--opset", str(args.opset)],
            check=True, capture_output=True, text=True,
        ).stdout
    )
    outcome = {(normalize_domain(r["domain"]), r["op_type"]): r["outcome"] for r in doc["ops"]}
    schemas = newest_schemas(args.opset)
    rows = []
    for op, s in sorted(schemas.items()):
        if s.deprecated:
            continue
        got = outcome.get(("", op), "not listed")
        ranges = kernels.get(op, [])
        newest_kernel = any(a <= s.since_version <= b for a, b in ranges)
        rows.append((op, s.since_version, got, ("", op) in RUNS_AS_FUNCTION, s.has_function or s.has_context_dependent_function, ranges, newest_kernel))
    print(f"onnx default domain at opset {args.opset}: {len(rows)} ops; graphmem ops --opset {args.opset}; "
          f"CPU kernels of onnxruntime {ort_version}")
    print(f"{'op':<34} {'since':>5}  {'graphmem':<12} {'fn-table':<8} {'onnx body':<9} cpu kernel (ranges)")
    shown = [r for r in rows if args.all or r[2] not in ("counted", "zero")]
    for op, since, got, table, body, ranges, newest_kernel in shown:
        rng = ", ".join(f"{a}-{b if b < 2**31 - 1 else ''}" for a, b in ranges) or "none"
        mark = "" if newest_kernel or not ranges else " (not at this version)"
        print(f"{op:<34} {since:>5}  {got:<12} {'yes' if table else '':<8} {'yes' if body else '':<9} {rng}{mark}")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[2]] = counts.get(r[2], 0) + 1
    print("outcomes:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    from graphmem.flops.registry import REGISTRY

    no_entry = [r[0] for r in rows if ("", r[0]) not in REGISTRY]
    print(f"ops without a FLOP table entry (unsupported by omission): {', '.join(no_entry) or 'none'}")
    # Kernel rules: an op with an onnx body and no CPU kernel at a version onnxruntime loads
    # (opset <= its newest) runs as that body: it must be in RUNS_AS_FUNCTION from that version.
    newest_ort_opset = args.ort_opset
    missing_fn = []
    for s in defs.get_all_schemas_with_history():
        if not is_default_domain(s.domain) or s.since_version > min(args.opset, newest_ort_opset):
            continue
        has_body = s.has_function or s.has_context_dependent_function
        has_kernel = any(a <= s.since_version <= b for a, b in kernels.get(s.name, []))
        since = RUNS_AS_FUNCTION.lookup("", s.name)
        if has_body and not has_kernel and (since is None or since > s.since_version):
            missing_fn.append(f"{s.name}-{s.since_version}")
    print(f"ops onnxruntime {ort_version} runs as function bodies missing from RUNS_AS_FUNCTION: {', '.join(missing_fn) or 'none'}")
    return 1 if no_entry or missing_fn else 0


if __name__ == "__main__":
    sys.exit(main())
