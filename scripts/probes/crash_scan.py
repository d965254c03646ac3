"""Look for crashes (signals) of graphmem's C++ calls on near variants of the ONNX node test models.

Each node test model (and every model in ``models/``) is varied: a graph-input dim set to -1, an
attribute dropped, an attribute's type field changed (INT <-> FLOAT, INTS -> INT, STRING -> INT)
or its integer value set to -1 or 2**62; each change alone and each dim change with each attribute
change; every variant at IR 3 (case 19790 crashed there, not at IR 8).
Every variant is analysed the way ``graphmem peak`` does (``graphmem.analyze``, which runs onnx's
checker and shape inference) in a forked child; a child killed by a signal is a crash, printed with
the variant. Errors graphmem raises are the expected outcome and are not counted.

Usage: ``python scripts/probes/crash_scan.py [--limit N] [--match SUBSTRING]`` (deterministic; about a
minute per thousand variants on one core).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import onnx
from onnx import AttributeProto

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import graphmem  # noqa: E402  (imported once, before the children fork)
from fuzz import _node_seed_files  # noqa: E402  (the fuzzer's seed list: the wheel's or regenerated)
from graphmem.errors import GraphmemError  # noqa: E402

_RETYPE = {AttributeProto.INT: AttributeProto.FLOAT, AttributeProto.FLOAT: AttributeProto.INT,
           AttributeProto.INTS: AttributeProto.INT, AttributeProto.STRING: AttributeProto.INT,
           AttributeProto.FLOATS: AttributeProto.FLOAT}


def variants(model: onnx.ModelProto) -> Iterator[tuple[str, onnx.ModelProto]]:
    """(label, variant) of ``model``: each change alone, then each dim change with each attribute
    change (a dim of -1 is harmless where an attribute offsets it: GatherND's ``batch_dims``)."""
    dims = [(i, j) for i, vi in enumerate(model.graph.input) if vi.type.HasField("tensor_type")
            for j in range(len(vi.type.tensor_type.shape.dim))]
    attrs: list[tuple[int, int, str]] = []
    for n, node in enumerate(model.graph.node):
        for a, attr in enumerate(node.attribute):
            attrs.append((n, a, "drop"))
            if attr.type in _RETYPE:
                attrs.append((n, a, "retype"))
            if attr.type == AttributeProto.INT:
                attrs += [(n, a, "-1"), (n, a, "2**62")]
    dims += [(i, -1) for i, vi in enumerate(model.graph.input) if vi.type.HasField("tensor_type")]  # -1: a dim added
    changes = [[("dim", d)] for d in dims] + [[("attr", c)] for c in attrs]
    changes += [[("dim", d), ("attr", c)] for d in dims for c in attrs]
    for change in changes:
        m = onnx.ModelProto()
        m.CopyFrom(model)
        labels = []
        for kind, what in sorted(change, key=lambda x: x[0] == "dim"):  # attributes first: indices stay valid
            if kind == "dim":
                i, j = what
                shape = m.graph.input[i].type.tensor_type.shape
                (shape.dim[j] if j >= 0 else shape.dim.add()).dim_value = -1
                labels.append(f"input {m.graph.input[i].name} dim {j if j >= 0 else 'added'} = -1")
                continue
            n, a, how = what
            node, attr = m.graph.node[n], m.graph.node[n].attribute[a]
            labels.append(f"{node.op_type} {attr.name} {how}")
            if how == "drop":
                del node.attribute[a]
            elif how == "retype":
                attr.type = _RETYPE[attr.type]
            else:
                attr.i = eval(how)  # noqa: S307 - one of the two literals above
        m.ir_version = 3  # below 4, where onnx 1.23's checker crashed on case 19790 (the proxy judges it as 4)
        yield "; ".join(labels), m


def _child(items: list[tuple[str, bytes]], start: int, progress: Path, work: Path) -> None:
    code = 0
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        for k in range(start, len(items)):
            progress.write_text(str(k))
            path = work / "model.onnx"
            path.write_bytes(items[k][1])
            try:
                graphmem.analyze(path)
            except GraphmemError:
                pass
            except Exception:  # noqa: BLE001 - a traceback is the fuzzer's business, not this scan's
                pass
    finally:
        os._exit(code)


def scan(seed: Path, work: Path) -> list[str]:
    """The labels of the variants of ``seed`` that crash."""
    try:
        model = onnx.load(str(seed))
    except Exception:  # noqa: BLE001
        return []
    items = [(label, m.SerializeToString()) for label, m in variants(model)]
    crashes = []
    start = 0
    progress = work / "progress"
    while start < len(items):
        pid = os.fork()
        if pid == 0:
            _child(items, start, progress, work)
        _, status = os.waitpid(pid, 0)
        if not os.WIFSIGNALED(status):
            break
        k = int(progress.read_text())
        crashes.append(f"{seed.parent.name if seed.name == 'model.onnx' else seed.stem}: {items[k][0]} "
                       f"(signal {os.WTERMSIG(status)})")
        start = k + 1
    return crashes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=0, help="scan only the first N seed models")
    ap.add_argument("--match", default="", help="scan only seeds whose name contains one of these (comma-separated)")
    args = ap.parse_args()
    seeds = [*sorted((REPO / "models").glob("*.onnx")), *_node_seed_files()]
    seeds = [s for s in seeds if any(m in str(s) for m in args.match.split(","))]
    if args.limit:
        seeds = seeds[: args.limit]
    crashes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="graphmem-crash-scan-") as tmp:
        for seed in seeds:
            crashes += scan(seed, Path(tmp))
    for line in crashes:
        print(line)
    print(f"crash scan: {len(seeds)} seed models, {len(crashes)} crashing variants")
    return 1 if crashes else 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
