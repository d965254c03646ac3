"""Every figure of ``graphmem peak --json`` over a fixed set of models, as sorted text lines.

Run it on two checkouts and ``diff`` the outputs: a refactoring that changes no behaviour
gives an empty diff.

    python scripts/predictions_snapshot.py OUT.txt [--provider cpu,cuda] [--only NAME ...]

Models: the onnx wheel's ``backend/test/data/light`` and ``pytorch-converted`` folders, the
committed ``models/*.onnx`` and, when present, the exported corpus (``$GRAPHMEM_CORPUS`` or
``/work/cache/corpus``, ``*.onnx``). Bindings: batch 1 and 8, every other symbolic dim 64
(``models/``) or 128 (``scripts/corpus.py``'s ``bindings``). Each line is
``MODEL PROVIDER DIMS KEY = VALUE`` with KEY the JSON path of one leaf (``model.path`` and
``activations.runtime`` left out: they name the checkout and the installed runtime); a model
graphmem rejects gives one ``exit=N`` line with the error. Needs onnx and onnxruntime only;
about 5 minutes for both providers on a quiet machine.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

from graphmem.cli import main as graphmem_main  # noqa: E402

SKIPPED_KEYS = frozenset({"model.path", "activations.runtime"})


def models() -> list[Path]:
    """The model files, in a fixed order."""
    folder = Path(os.environ.get("GRAPHMEM_CORPUS", "/work/cache/corpus"))
    return (corpus.light_models() + corpus.pytorch_converted_models() + corpus.committed_models()
            + sorted(folder.glob("*.onnx")))


def leaves(value: object, prefix: str = "") -> list[tuple[str, str]]:
    """(dotted path, JSON text) of every scalar in a JSON document."""
    if isinstance(value, dict):
        return [kv for k, v in value.items() for kv in leaves(v, f"{prefix}{k}.")]
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return [kv for i, v in enumerate(value) for kv in leaves(v, f"{prefix}{i}.")]
    return [(prefix[:-1], json.dumps(value, sort_keys=True))]


def snapshot(path: Path, provider: str) -> list[str]:
    """The lines of one model at each binding."""
    seq = 64 if path.parent == corpus.MODELS else 128
    name = f"{path.parent.name}/{path.name}"
    out = []
    for dims in corpus.bindings(path, (1, 8), seq=seq):
        dim_args = [a for k, v in dims.items() for a in ("--dim", f"{k}={v}")]
        dim_text = ",".join(f"{k}={v}" for k, v in dims.items()) or "static"
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = graphmem_main(["peak", str(path), "--json", "--provider", provider, *dim_args])
        head = f"{name} {provider} {dim_text}"
        if code != 0:
            out.append(f"{head} exit={code} {stderr.getvalue().strip()}")
            continue
        out += [f"{head} {k} = {v}" for k, v in leaves(json.loads(stdout.getvalue())) if k not in SKIPPED_KEYS]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--provider", default="cpu,cuda")
    ap.add_argument("--only", nargs="*", default=None, help="substrings of model paths to keep")
    args = ap.parse_args(argv)
    paths = [p for p in models() if not args.only or any(s in str(p) for s in args.only)]
    lines = [line for p in paths for provider in args.provider.split(",") for line in snapshot(p, provider)]
    args.out.write_text("\n".join(sorted(lines)) + "\n")
    print(f"{len(paths)} models, {len(lines)} lines -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
