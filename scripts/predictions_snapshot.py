"""Every prediction graphmem makes on a fixed set of models, as sorted text, to diff two versions.

Runs ``graphmem peak --json`` (and ``train --json`` on the training exports) in this process on:
the onnx wheel's backend test models (``light``, ``pytorch-converted``), ``models/*.onnx`` at fixed
bindings (CPU, ``--graph-opt all``, ``--provider cuda``, ``--as-dtype float16``), and
``/work/cache/corpus/*.onnx`` when present. One line per case: the case, the exit code, and the
document (paths removed) or the error line. A refactoring that changes no figure gives no diff::

    python scripts/predictions_snapshot.py OUT.txt
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

import onnx

from graphmem.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
CORPUS = Path("/work/cache/corpus")
#: The bindings of every symbolic dim, by name; any other name gets 8.
DIMS = {"batch": 2, "batch_size": 2, "seq": 16, "sequence": 16, "sequence_length": 16}


def _dims(path: Path) -> list[str]:
    model = onnx.load(str(path), load_external_data=False)
    names = sorted({d.dim_param for i in model.graph.input for d in i.type.tensor_type.shape.dim if d.dim_param})
    return [x for n in names for x in ("--dim", f"{n}={DIMS.get(n, 8)}")]


def _run(argv: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    if code in (0, 1) and out.getvalue().strip():
        doc = json.loads(out.getvalue())
        doc.get("model", {}).pop("path", None)
        return f"exit={code} {json.dumps(doc, sort_keys=True)}"
    return f"exit={code} {err.getvalue().strip()}"


def cases() -> list[tuple[str, list[str]]]:
    out = []
    backend = sorted((DATA / "light").glob("*.onnx")) + sorted((DATA / "pytorch-converted").glob("*/model.onnx"))
    for p in backend:
        out.append((str(p.relative_to(DATA)), ["peak", str(p), "--json"]))
    for p in sorted((ROOT / "models").glob("*.onnx")):
        base = ["peak", str(p), "--json", *_dims(p)]
        name = f"models/{p.name}"
        out += [(name, base), (f"{name} graph-opt all", [*base, "--graph-opt", "all"]),
                (f"{name} cuda", [*base, "--provider", "cuda"]), (f"{name} float16", [*base, "--as-dtype", "float16"])]
        if p.name.startswith("train_"):
            train = ["train", str(p), "--json", *_dims(p)]
            out += [(f"{name} train", train), (f"{name} train bf16", [*train, "--precision", "mixed-bf16"])]
    for p in sorted(CORPUS.glob("*.onnx")) if CORPUS.is_dir() else ():
        base = ["peak", str(p), "--json", *_dims(p)]
        out += [(f"corpus/{p.name}", base), (f"corpus/{p.name} graph-opt all", [*base, "--graph-opt", "all"])]
    return out


def main_(path: str) -> None:
    lines = []
    for name, argv in cases():
        lines.append(f"{name}\t{_run(argv)}")
        print(name, lines[-1].split("\t")[1][:7], file=sys.stderr, flush=True)
    Path(path).write_text("\n".join(sorted(lines)) + "\n", encoding="utf-8")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main_(sys.argv[1])
