"""Where onnx's schemas and onnxruntime's own differ, at the opsets onnxruntime loads.

graphmem checks models with the installed onnx (checker, shape inference); onnxruntime resolves
their graphs with the schemas compiled into it. Where onnx is newer, a model the checker passes
can be refused by onnxruntime ("Unrecognized attribute: left_window_size for operator
Attention"). This prints, for the default and ai.onnx.ml domains, every schema version onnx has
that onnxruntime does not (and the attributes onnx's has that onnxruntime's version in use
lacks), up to the newest opset onnxruntime loads (``graphmem.ort.loadable.MAX_OPSETS``); the
attribute gaps are ``graphmem.ort.loadable.ORT_SCHEMA_GAPS``.

    python scripts/probes/ort_schema_gap.py [--all]     (--all: opsets onnxruntime refuses too)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import onnx  # noqa: E402
import onnxruntime  # noqa: E402
from onnx import defs  # noqa: E402
from onnxruntime.capi import onnxruntime_pybind11_state as ort_c  # noqa: E402

from graphmem.ort.loadable import MAX_OPSETS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="also opsets onnxruntime refuses to load")
    args = ap.parse_args(argv)
    ort: dict[tuple[str, str], dict[int, set[str]]] = {}
    for s in ort_c.get_all_operator_schema():
        ort.setdefault((s.domain, s.name), {})[s.since_version] = set(s.attributes)
    print(f"onnx {onnx.__version__} vs onnxruntime {onnxruntime.__version__}")
    gaps = 0
    for s in sorted(defs.get_all_schemas_with_history(), key=lambda s: (s.domain, s.name, s.since_version)):
        if s.domain not in MAX_OPSETS or (not args.all and s.since_version > MAX_OPSETS[s.domain]):
            continue
        versions = ort.get((s.domain, s.name))
        name = f"{s.domain or 'ai.onnx'} {s.name}-{s.since_version}"
        if versions is None:
            print(f"  {name}: onnxruntime has no {s.name} schema")
            gaps += 1
            continue
        used = max((v for v in versions if v <= s.since_version), default=None)
        lacks = sorted(set(s.attributes) - versions[used]) if used is not None else []
        if used != s.since_version or lacks:
            print(f"  {name}: onnxruntime uses {s.name}-{used}" + (f", which lacks {', '.join(lacks)}" if lacks else ""))
            gaps += 1
    print(f"{gaps} differences")
    return 0


if __name__ == "__main__":
    sys.exit(main())
