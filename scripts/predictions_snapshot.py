"""Dump graphmem's predictions for a corpus to one sorted text file, to diff two versions.

Each line is ``MODEL<TAB>COMMAND<TAB>JSON.PATH<TAB>VALUE``: every leaf of ``graphmem peak --json``
for each model, and of ``graphmem train --json`` (fp32, mixed-bf16, mixed-fp16) for the
training-mode exports of ``models/``; a command that fails gives one ``error`` line (its exit code
and message). Named dims are bound to ``--dim NAME=2``. The lines are sorted, so two runs of the
same code give the same file, and a diff of two versions shows only what moved.

Corpus: ``models/*.onnx``, the onnx wheel's ``backend/test/data`` models (``light``,
``pytorch-converted``, ``pytorch-operator``, ``simple``, and ``node`` where the wheel has it),
the exported corpus (``scripts/corpus.py``'s ``EXPORTED``: ``$GRAPHMEM_CORPUS`` or ``.cache/corpus``) when present (or the folders given with ``--corpus``), and two
one-node models whose figures depend on the host (:func:`host_models`: a GroupQueryAttention
whose flash tiles follow the L2 size, a QLinearConv whose filter MLAS packs only on AVX-512).

    python scripts/predictions_snapshot.py OUT.txt [--corpus DIR ...] [--quick]

The commands run in this process through :func:`graphmem.cli.main`, so ``PYTHONPATH`` chooses the
graphmem that is snapshotted (e.g. a worktree of another commit); extra ``graphmem`` options (e.g.
``--host FILE``) follow ``--``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from pathlib import Path

import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent
PRECISIONS = ("fp32", "mixed-bf16", "mixed-fp16")


def corpus(extra: list[Path], quick: bool) -> list[Path]:
    data = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data"
    paths = sorted((ROOT / "models").glob("*.onnx"))
    paths += sorted((data / "light").glob("*.onnx"))
    if not quick:
        for folder in ("pytorch-converted", "pytorch-operator", "simple", "node"):
            paths += sorted((data / folder).glob("*/model.onnx"))
    exported = Path(os.environ.get("GRAPHMEM_CORPUS", ROOT / ".cache" / "corpus"))  # as scripts/corpus.py
    for folder in extra or ([exported] if exported.is_dir() else []):
        paths += sorted(folder.glob("*.onnx"))
    return paths


def host_models(folder: Path) -> list[tuple[Path, list[str]]]:
    """Two one-node models whose scratch depends on the host, with the options that bind them."""
    f, i32, u8, i8 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.UINT8, TensorProto.INT8
    vi = helper.make_tensor_value_info
    gqa = helper.make_node("GroupQueryAttention", ["q", "", "", "pk", "pv", "seqlens", "total"], ["y", "pk2", "pv2"],
                           domain="com.microsoft", num_heads=4, kv_num_heads=2)
    graph = helper.make_graph([gqa], "gqa", [vi("q", f, [1, 1024, 256]), vi("pk", f, [1, 2, 0, 32]), vi("pv", f, [1, 2, 0, 32]),
                                             vi("seqlens", i32, [1]), vi("total", i32, [1])],
                              [vi("y", f, [1, 1024, 128]), vi("pk2", f, [1, 2, 1024, 32]), vi("pv2", f, [1, 2, 1024, 32])])
    ms = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    out = [(folder / "host_gqa.onnx", helper.make_model(graph, opset_imports=ms), ["--value", "total=1024", "--value", "seqlens=1023"])]
    w = np.arange(20 * 16 * 9, dtype=np.int64).reshape(20, 16, 3, 3) % 7 - 3
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(np.array(128, np.uint8), "z"),
             numpy_helper.from_array(w.astype(np.int8), "w"), numpy_helper.from_array(np.array(0, np.int8), "wz")]
    conv = helper.make_node("QLinearConv", ["x", "s", "z", "w", "s", "wz", "s", "z"], ["y"], pads=[1, 1, 1, 1])
    graph = helper.make_graph([conv], "qconv", [vi("x", u8, [1, 16, 32, 32])], [vi("y", u8, [1, 20, 32, 32])], inits)
    out.append((folder / "host_qlinearconv.onnx", helper.make_model(graph, opset_imports=ms[:1]), []))
    for path, model, _ in out:
        model.ir_version = 8
        onnx.save(model, str(path))
    return [(path, args) for path, _, args in out]


def named_dims(path: Path) -> list[str]:
    """``--dim NAME=2`` for every named dim of the model's inputs."""
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - a file onnx cannot read: graphmem reports it
        return []
    inits = {i.name for i in model.graph.initializer}
    names = sorted({d.dim_param for i in model.graph.input if i.name not in inits
                    for d in i.type.tensor_type.shape.dim if d.dim_param})
    return [arg for name in names for arg in ("--dim", f"{name}=2")]


def run(args: list[str]) -> tuple[int, str, str]:
    from graphmem.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def leaves(value: object, prefix: str) -> list[tuple[str, str]]:
    """Every leaf of a JSON value as (dotted path, JSON text)."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in leaves(v, f"{prefix}.{k}" if prefix else str(k))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in leaves(v, f"{prefix}[{i}]")]
    return [(prefix, json.dumps(value, sort_keys=True))]


def snapshot(path: Path, command: list[str], label: str, extra: list[str], name: str = "") -> list[str]:
    data = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data"
    name = name or (str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path))
    name = f"onnx:{path.relative_to(data)}" if path.is_relative_to(data) else name
    code, out, err = run([*command, str(path), *named_dims(path), "--json", *extra])
    if code != 0 or not out.strip():
        message = err.strip().splitlines()[-1] if err.strip() else ""
        return [f"{name}\t{label}\terror\t{code} {message}"]
    doc = json.loads(out)
    if name.startswith("generated:"):  # written to a temporary folder: its path differs from run to run
        doc.get("model", {}).pop("path", None)
    return [f"{name}\t{label}\t{key}\t{value}" for key, value in leaves(doc, "")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--corpus", type=Path, action="append", default=[])
    parser.add_argument("--quick", action="store_true", help="models/ and light only")
    argv = sys.argv[1:]
    extra: list[str] = []
    if "--" in argv:
        argv, extra = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    args = parser.parse_args(argv)
    lines: list[str] = []
    for path in corpus(args.corpus, args.quick):
        lines += snapshot(path, ["peak"], "peak", extra)
    with tempfile.TemporaryDirectory() as tmp:
        for path, options in host_models(Path(tmp)):
            lines += snapshot(path, ["peak", *options], "peak", extra, name=f"generated:{path.name}")
    for path in sorted((ROOT / "models").glob("train_*.onnx")):
        for precision in PRECISIONS:
            lines += snapshot(path, ["train", "--precision", precision], f"train {precision}", extra)
    args.out.write_text("".join(f"{line}\n" for line in sorted(lines)))
    errors = sum(1 for line in lines if "\terror\t" in line)
    print(f"{len(lines)} lines, {errors} commands failed, written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
