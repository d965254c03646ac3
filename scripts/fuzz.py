"""Mutation fuzzer for graphmem: damaged files, mutated protobufs and odd command lines.

Every case is made from a seed model (``models/``, the onnx wheel's ``light``, ``pytorch-converted``,
``pytorch-operator`` and node test models) by one mutation class:

* ``byte``: byte-level damage of the file (flips, truncation, insertion, deletion, duplication);
* ``proto``: protobuf-level mutations (dims, dtypes, opsets, attributes, names, types, op types,
  input counts, initializers, external data, graph structure, IR version, functions);
* ``cli``: a valid seed with an odd command line (dims, budgets, seeds, formats, ``--output`` onto
  an input, configs, device specs, ...).

Each case runs ``graphmem`` in a child process forked from this one (graphmem and its
dependencies are imported once, so a case costs a fork, not an interpreter start) with its
standard streams on files, its own process group, a timeout and an address-space limit; an
uncaught exception prints its traceback and exits 1, exactly as the console script does. The
checks, each a problem class in the summary:

* exit code in {0, 1, 2}, and 1 only when the command line has a gate;
* no traceback, no crash (signal), no timeout, no MemoryError;
* on failure, stderr is exactly one line ``graphmem: error: …`` (besides ``graphmem check``'s
  one status line per model; gate failures: every line ``graphmem: …``); no control characters in stderr nor in table output; no onnxruntime log
  lines anywhere;
* every input file (models, configs, device files, their links) has the same hash afterwards, and
  nothing but ``--output`` appeared in the case folder or its private ``TMPDIR``;
* exit-0 (and gate-1) JSON documents validate against graphmem's schemas and hold no negative
  number outside the keys that are differences (diff changes, headroom, fitted coefficients);
* every model graphmem answered with exit 0 is given to ``onnx.checker.check_model(full_check=True)``
  and to an onnxruntime ``InferenceSession`` (CPU, ORT_DISABLE_ALL), each in its own child:
  ``accepted_invalid`` counts those onnxruntime refuses to load (``accepted_external_absent``
  those whose only problem is absent external data, the documented exception),
  ``accepted_checker_only`` those only the checker refuses;
* graphmem's internal-error line (``graphmem: error: internal error: Type at graphmem/x.py:N in f``)
  counts as a traceback, with that root cause;
* informational, not a problem: ``refused_loadable`` counts mutants graphmem refused (exit 2)
  that onnxruntime loads, with graphmem's reasons.

Cases are deterministic: case ``i`` of seed ``s`` depends on nothing but ``(s, i)`` and the seed
files, so ``--only i`` replays one. Results go to ``OUT/results.jsonl`` (one line per case) and
the cases with a problem are kept under ``OUT/cases/`` (with ``--keep``).

    python scripts/fuzz.py --seed 1 --cases 300 --jobs 2 [--quick] [--out DIR] [--keep]
    python scripts/fuzz.py --seed 1 --only 1234 --out DIR     # replay one case, print it

``--quick`` leaves out the node test models (regenerating them takes ~12 s when the wheel lacks
``data/node/``; they are cached under ``$GRAPHMEM_FUZZ_CACHE``, default ``~/.cache/graphmem-fuzz``).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

MEMORY_LIMIT = 4 << 30
TIMEOUT_S = 60.0
TERM_GRACE_S = 10.0  # after the timeout's SIGTERM, before SIGKILL
ORT_TIMEOUT_S = 60.0
GATE_OPTIONS = ("--max-weights", "--max-peak", "--max-total", "--max-params", "--max-flops", "--max-increase")
#: Keys whose numbers are differences or fitted coefficients and may be negative.
SIGNED_KEYS = frozenset(
    {
        "headroom_bytes", "coefficient", "fixed_bytes", "per_unit_bytes", "per_unit2_bytes",
        "worst_residual_bytes", "worst_error_bytes", "change", "delta", "excess", "ratio_change",
    }
)
HUGE = (-1, 0, -7, 1 << 31, 1 << 40, 1 << 62, (1 << 63) - 1, -(1 << 63))


# ---------------------------------------------------------------------------------------- seeds


@dataclasses.dataclass(frozen=True)
class Seed:
    source: str
    name: str
    data: bytes
    dims: tuple[str, ...]


def _onnx_data() -> Path:
    return Path(onnx.__file__).parent / "backend" / "test" / "data"


def _cache_dir() -> Path:
    return Path(os.environ.get("GRAPHMEM_FUZZ_CACHE", Path.home() / ".cache" / "graphmem-fuzz"))


def _node_seed_files() -> list[Path]:
    """The node test models: the wheel's data/node, or regenerated once into the cache."""
    shipped = sorted((_onnx_data() / "node").glob("*/model.onnx"))
    if shipped:
        return shipped
    cache = _cache_dir() / f"node-seeds-onnx-{onnx.__version__}"
    done = cache / "DONE"
    if not done.exists():
        import warnings

        import numpy as np

        np.random.seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from onnx.backend.test.case import node as node_cases

            cases = node_cases.collect_testcases(None)
        cache.mkdir(parents=True, exist_ok=True)
        for case in cases:
            (cache / f"{case.name}.onnx").write_bytes(case.model.SerializeToString())
        done.write_text("ok\n")
    return sorted(cache.glob("*.onnx"))


def _symbolic_dims(model: onnx.ModelProto) -> tuple[str, ...]:
    names: list[str] = []
    for vi in model.graph.input:
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            for d in vi.type.tensor_type.shape.dim:
                if d.HasField("dim_param") and d.dim_param and d.dim_param not in names:
                    names.append(d.dim_param)
    return tuple(names)


def load_seeds(*, quick: bool) -> dict[str, list[Seed]]:
    """Seed models by source, each list sorted by name (the order cases index into)."""
    data = _onnx_data()
    sources: dict[str, list[Path]] = {
        "models": sorted((REPO / "models").glob("*.onnx")),
        "light": sorted((data / "light").glob("*.onnx")),
        "pytorch-converted": sorted((data / "pytorch-converted").glob("*/model.onnx")),
        "pytorch-operator": sorted((data / "pytorch-operator").glob("*/model.onnx")),
    }
    if not quick:
        sources["node"] = _node_seed_files()
    seeds: dict[str, list[Seed]] = {}
    for source, paths in sources.items():
        out = []
        for path in paths:
            raw = path.read_bytes()
            name = path.parent.name if path.name == "model.onnx" else path.stem
            try:
                dims = _symbolic_dims(onnx.load_from_string(raw))
            except Exception:
                continue
            out.append(Seed(source, name, raw, dims))
        if out:
            seeds[source] = out
    return seeds


SOURCE_WEIGHTS = {"node": 35, "models": 25, "pytorch-converted": 20, "pytorch-operator": 10, "light": 10}


def pick_seed(rng: random.Random, seeds: dict[str, list[Seed]]) -> Seed:
    names = sorted(seeds)
    source = rng.choices(names, weights=[SOURCE_WEIGHTS.get(n, 10) for n in names])[0]
    return rng.choice(seeds[source])


# ----------------------------------------------------------------------------------------- cases


@dataclasses.dataclass
class Case:
    """One fuzz case: files to lay out, links to make, the command line and what to check."""

    index: int
    klass: str
    mutation: str
    seed: str
    files: dict[str, bytes]
    argv: list[str]
    links: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)  # (kind, name, target)
    models: list[str] = dataclasses.field(default_factory=list)  # files whose loadability is checked
    gate: bool = False
    doc: tuple[str, str] | None = None  # (schema name, "-" for stdout or a file name)
    output: str | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "index": self.index, "class": self.klass, "mutation": self.mutation, "seed": self.seed,
            "argv": self.argv, "links": self.links,
        }


# ------------------------------------------------------------------------------ byte mutations


def _byte_flip(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    buf = bytearray(data)
    n = rng.choice((1, 1, 2, 4, 16, 64))
    for _ in range(n):
        if buf:
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8) if rng.random() < 0.5 else rng.randrange(1, 256)
    return bytes(buf), f"flip {n} bytes"


def _byte_truncate(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    at = rng.choice((0, 1, 2, 7, rng.randrange(len(data) + 1), len(data) - 1, len(data) // 2))
    at = max(0, min(at, len(data)))
    return data[:at], f"truncate at {at}/{len(data)}"


def _byte_insert(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    at = rng.randrange(len(data) + 1)
    junk = rng.choice(
        (bytes(rng.randrange(256) for _ in range(rng.choice((1, 3, 17)))), b"\xff" * 11, b"\x00" * 5, b"\x08\x96\x01")
    )
    return data[:at] + junk + data[at:], f"insert {len(junk)} bytes at {at}"


def _byte_delete(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    at = rng.randrange(len(data) + 1)
    n = rng.choice((1, 2, 8, 100))
    return data[:at] + data[at + n :], f"delete {n} bytes at {at}"


def _byte_duplicate(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    at = rng.randrange(len(data) + 1)
    n = rng.choice((4, 32, 512))
    return data[:at] + data[at : at + n] + data[at:], f"duplicate {n} bytes at {at}"


def _byte_whole(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    choice = rng.randrange(5)
    if choice == 0:
        return b"", "empty file"
    if choice == 1:
        return data + bytes(rng.randrange(256) for _ in range(9)), "trailing garbage"
    if choice == 2:
        return b"\x0a\xff\xff\xff\xff\x0f" + data, "huge length prefix"
    if choice == 3:
        return bytes(rng.randrange(256) for _ in range(rng.choice((16, 1000)))), "random bytes"
    return b"ir_version: 8\ngraph { }\n", "text format"


def _byte_varint(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """Overwrite a byte that looks like a length-delimited field tag's length with 0xff.."""
    buf = bytearray(data)
    tags = [i for i in range(len(buf) - 1) if buf[i] & 7 == 2 and buf[i] >> 3 in (1, 2, 3, 4, 5, 7, 8, 9, 10, 11)]
    if not tags:
        return _byte_flip(rng, data)
    i = rng.choice(tags) + 1
    buf[i : i + 1] = rng.choice((b"\xff\xff\xff\xff\x07", b"\x7f", b"\x00", b"\xff\x01"))
    return bytes(buf), f"length varint at {i}"


BYTE_MUTATIONS: list[Callable[[random.Random, bytes], tuple[bytes, str]]] = [
    _byte_flip, _byte_flip, _byte_truncate, _byte_truncate, _byte_insert, _byte_delete,
    _byte_duplicate, _byte_whole, _byte_varint, _byte_varint,
]


# ----------------------------------------------------------------------------- proto mutations

#: Placeholder names replaced, after serialization, by non-UTF-8 bytes of the same length.
BAD_UTF8 = {"ZQbadutf8A": b"\xff\xfe\xc3(bad\x80\x81", "ZQbadutf8B": b"caf\xe9\xed\xa0\x80xyz"}


def _value_infos(g: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    return [*g.input, *g.output, *g.value_info]


def _tensor_vis(g: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    return [vi for vi in _value_infos(g) if vi.type.HasField("tensor_type")]


def _all_tensors(g: onnx.GraphProto) -> list[onnx.TensorProto]:
    out = list(g.initializer)
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                out.append(a.t)
    return out


def _m_dim(rng: random.Random, m: onnx.ModelProto) -> str | None:
    vis = [vi for vi in _tensor_vis(m.graph) if vi.type.tensor_type.HasField("shape")]
    if not vis:
        return None
    vi = rng.choice(vis)
    dims = vi.type.tensor_type.shape.dim
    if not dims or rng.random() < 0.1:
        dims.add().dim_value = rng.choice(HUGE)
        return f"add dim to {vi.name!r}"
    d = rng.choice(dims)
    if rng.random() < 0.85:
        d.dim_value = rng.choice(HUGE)
        return f"dim of {vi.name!r} -> {d.dim_value}"
    d.dim_param = rng.choice(("", " ", "a\nb", "batch", "seq", "N" * 300, "ZQbadutf8A"))
    return f"dim_param of {vi.name!r} -> {d.dim_param!r}"


def _m_input_dims_all(rng: random.Random, m: onnx.ModelProto) -> str | None:
    inputs = [vi for vi in m.graph.input if vi.type.tensor_type.HasField("shape")]
    if not inputs:
        return None
    value = rng.choice((1 << 20, 1 << 31, 1 << 40))
    for vi in inputs:
        for d in vi.type.tensor_type.shape.dim:
            d.dim_value = value
    return f"every input dim -> {value}"


def _m_tensor_dims(rng: random.Random, m: onnx.ModelProto) -> str | None:
    tensors = _all_tensors(m.graph)
    if not tensors:
        return None
    t = rng.choice(tensors)
    if rng.random() < 0.3:
        t.ClearField("dims")
        t.dims.extend(rng.choice(([-1, 5], [0], [1 << 31, 1 << 31], [1 << 40], [1 << 62, 4], [2, 3, 4, 5, 6, 7])))
        return f"tensor {t.name!r} dims -> {list(t.dims)}"
    if not t.dims:
        t.dims.append(rng.choice(HUGE))
        return f"tensor {t.name!r} gains dim"
    i = rng.randrange(len(t.dims))
    t.dims[i] = rng.choice(HUGE)
    return f"tensor {t.name!r} dim {i} -> {t.dims[i]}"


def _m_elem_type(rng: random.Random, m: onnx.ModelProto) -> str | None:
    value = rng.choice((100, 0, 8, 16, 10, 9, 14, 17, 19, 21, 22, 23, 24, 25, 26, -1))
    if rng.random() < 0.5:
        vis = _tensor_vis(m.graph)
        if not vis:
            return None
        vi = rng.choice(vis)
        vi.type.tensor_type.elem_type = value
        return f"elem_type of {vi.name!r} -> {value}"
    tensors = _all_tensors(m.graph)
    if not tensors:
        return None
    t = rng.choice(tensors)
    t.data_type = value
    return f"data_type of tensor {t.name!r} -> {value}"


def _m_cast_to(rng: random.Random, m: onnx.ModelProto) -> str | None:
    nodes = [n for n in m.graph.node if n.op_type in ("Cast", "EyeLike", "RandomNormal", "RandomUniform", "ConstantOfShape")]
    if not nodes:
        return None
    n = rng.choice(nodes)
    value = rng.choice((100, 0, 8, -3))
    for a in n.attribute:
        if a.name in ("to", "dtype"):
            a.i = value
            return f"{n.op_type} {a.name} -> {value}"
    n.attribute.append(helper.make_attribute("to" if n.op_type == "Cast" else "dtype", value))
    return f"{n.op_type} gains dtype {value}"


def _m_opset(rng: random.Random, m: onnx.ModelProto) -> str | None:
    choice = rng.randrange(5)
    if choice == 0 or not m.opset_import:
        del m.opset_import[:]
        return "no opset_import"
    defaults = [o for o in m.opset_import if o.domain in ("", "ai.onnx")] or list(m.opset_import)
    o = rng.choice(defaults)
    if choice == 1:
        o.domain = rng.choice(("com.unknown", "ai.onnx", "ZQbadutf8A", ""))
        return f"opset domain -> {o.domain!r}"
    if choice == 2:
        m.opset_import.add(domain=o.domain, version=rng.choice((1, 7, 99)))
        return "duplicate opset_import"
    o.version = rng.choice((-1, 0, 1, 5, 22, 23, 99, 1 << 31, 1 << 62))
    return f"opset version -> {o.version}"


def _m_ir_version(rng: random.Random, m: onnx.ModelProto) -> str | None:
    m.ir_version = rng.choice((-1, 0, 1, 2, 3, 11, 12, 99, 1 << 62))
    return f"ir_version -> {m.ir_version}"


def _attr_nodes(m: onnx.ModelProto) -> list[onnx.NodeProto]:
    return [n for n in m.graph.node if n.attribute]


def _m_attr_type(rng: random.Random, m: onnx.ModelProto) -> str | None:
    nodes = _attr_nodes(m)
    if not nodes:
        return None
    n = rng.choice(nodes)
    a = rng.choice(n.attribute)
    old = a.type
    a.type = rng.choice([t for t in range(1, 14) if t != old] + [0, 99])
    return f"{n.op_type}.{a.name} type {old} -> {a.type} (data unchanged)"


def _m_attr_value(rng: random.Random, m: onnx.ModelProto) -> str | None:
    nodes = _attr_nodes(m)
    if not nodes:
        return None
    n = rng.choice(nodes)
    a = rng.choice(n.attribute)
    if a.type == onnx.AttributeProto.INT:
        a.i = rng.choice((0, -1, 2, 99, 1 << 40, 1 << 62, -(1 << 62)))
        return f"{n.op_type}.{a.name} = {a.i}"
    if a.type == onnx.AttributeProto.INTS:
        choice = rng.randrange(4)
        if choice == 0 and len(a.ints) > 0:
            del a.ints[len(a.ints) // 2 :]
        elif choice == 1:
            del a.ints[:]
        elif choice == 2 and a.ints:
            a.ints[rng.randrange(len(a.ints))] = rng.choice((0, -1, -5, 1 << 40, 1 << 62))
        else:
            a.ints.extend([1] * rng.choice((1, 3)))
        return f"{n.op_type}.{a.name} = {list(a.ints)}"
    if a.type == onnx.AttributeProto.FLOAT:
        a.f = rng.choice((float("nan"), float("inf"), -1.0, 0.0, 1e30))
        return f"{n.op_type}.{a.name} = {a.f}"
    if a.type == onnx.AttributeProto.STRING:
        a.s = rng.choice((b"", b"bogus", b"ZQbadutf8A", b"A\nB"))
        return f"{n.op_type}.{a.name} = {a.s!r}"
    return _m_attr_string(rng, m)


def _m_attr_string(rng: random.Random, m: onnx.ModelProto) -> str | None:
    nodes = _attr_nodes(m)
    if not nodes:
        return None
    n = rng.choice(nodes)
    a = rng.choice(n.attribute)
    name = a.name
    a.Clear()
    a.name = name
    a.type = onnx.AttributeProto.STRING
    a.s = b"abc"
    return f"{n.op_type}.{name} replaced by string 'abc'"


def _m_ref_attr(rng: random.Random, m: onnx.ModelProto) -> str | None:
    nodes = _attr_nodes(m)
    if not nodes:
        return None
    n = rng.choice(nodes)
    a = rng.choice(n.attribute)
    a.ref_attr_name = rng.choice(("x", "alpha", ""))
    return f"{n.op_type}.{a.name} ref_attr_name={a.ref_attr_name!r} outside a function"


def _m_conv_attrs(rng: random.Random, m: onnx.ModelProto) -> str | None:
    nodes = [
        n for n in m.graph.node
        if n.op_type in ("Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "QLinearConv", "ConvInteger")
    ]
    if not nodes:
        return None
    n = rng.choice(nodes)
    choice = rng.randrange(6)
    name, value = [
        ("group", 0), ("pads", [1]), ("strides", [1]), ("dilations", [0, 0]), ("kernel_shape", [1 << 40, 1]),
        ("strides", [0, 0]),
    ][choice]
    if name == "group" and n.op_type not in ("Conv", "ConvTranspose"):
        name, value = "pads", [0, 0, 0]
    for a in list(n.attribute):
        if a.name == name:
            n.attribute.remove(a)
    n.attribute.append(helper.make_attribute(name, value))
    return f"{n.op_type} {name}={value}"


def _m_unknown_attr(rng: random.Random, m: onnx.ModelProto) -> str | None:
    if not m.graph.node:
        return None
    n = rng.choice(m.graph.node)
    n.attribute.append(helper.make_attribute(rng.choice(("bogus", "axis", "ZQbadutf8A")), rng.choice((1, 1.5, "s"))))
    return f"{n.op_type} gains attribute {n.attribute[-1].name!r}"


def _m_drop_attr(rng: random.Random, m: onnx.ModelProto) -> str | None:
    nodes = _attr_nodes(m)
    if not nodes:
        return None
    n = rng.choice(nodes)
    a = rng.choice(n.attribute)
    n.attribute.remove(a)
    return f"{n.op_type} loses attribute {a.name!r}"


def _rename_tensor(m: onnx.ModelProto, old: str, new: str) -> None:
    g = m.graph
    for n in g.node:
        for i, x in enumerate(n.input):
            if x == old:
                n.input[i] = new
        for i, x in enumerate(n.output):
            if x == old:
                n.output[i] = new
    for vi in _value_infos(g):
        if vi.name == old:
            vi.name = new
    for t in g.initializer:
        if t.name == old:
            t.name = new


def _m_name(rng: random.Random, m: onnx.ModelProto) -> str | None:
    g = m.graph
    new = rng.choice(("ZQbadutf8A", "ZQbadutf8B", "a\nb", "x\x1b[31mred\x1b[0m", "tab\there", "\r", "\u202etxt", "é" * 3, "N" * 5000))
    choice = rng.randrange(4)
    if choice == 0 and g.node:
        n = rng.choice(g.node)
        n.name = new
        return f"node name -> {new[:20]!r}"
    if choice == 1:
        g.name = new
        return f"graph name -> {new[:20]!r}"
    names = sorted({x for n in g.node for x in (*n.input, *n.output) if x} | {vi.name for vi in g.input})
    if not names:
        return None
    old = rng.choice(names)
    _rename_tensor(m, old, new)
    return f"tensor {old!r} -> {new[:20]!r}"


def _m_io_type(rng: random.Random, m: onnx.ModelProto) -> str | None:
    g = m.graph
    vis = list(g.input) + list(g.output)
    if not vis:
        return None
    vi = rng.choice(vis)
    old = onnx.TypeProto()
    old.CopyFrom(vi.type)
    choice = rng.randrange(5)
    if choice == 0:
        vi.type.Clear()
        vi.type.optional_type.elem_type.CopyFrom(old)
        kind = "optional(tensor)"
    elif choice == 1:
        vi.type.Clear()
        vi.type.sequence_type.elem_type.CopyFrom(old)
        kind = "sequence(tensor)"
    elif choice == 2:
        vi.type.Clear()
        vi.type.map_type.key_type = TensorProto.INT64
        vi.type.map_type.value_type.CopyFrom(old)
        kind = "map"
    elif choice == 3:
        vi.type.Clear()
        kind = "no type"
    else:
        vi.type.tensor_type.ClearField("shape")
        kind = "no shape"
    return f"{vi.name!r} type -> {kind}"


OP_POOL = ("FooBar", "Add", "Relu", "Conv", "MatMul", "LSTM", "Reshape", "If", "Loop", "Split", "Gather",
           "Concat", "Softmax", "Identity", "Resize", "Scan", "NonZero", "StringNormalizer", "Attention")


def _m_op_type(rng: random.Random, m: onnx.ModelProto) -> str | None:
    if not m.graph.node:
        return None
    n = rng.choice(m.graph.node)
    old = n.op_type
    choice = rng.randrange(3)
    if choice == 0:
        n.op_type = rng.choice(OP_POOL)
        return f"op {old} -> {n.op_type}"
    if choice == 1:
        n.domain = rng.choice(("com.microsoft", "com.unknown", "ai.onnx", "ai.onnx.ml", "ZQbadutf8A"))
        return f"op {old} domain -> {n.domain!r}"
    n.op_type = rng.choice(("", "relu", "Foo\nBar", "ZQbadutf8A"))
    return f"op {old} -> {n.op_type!r}"


def _m_arity(rng: random.Random, m: onnx.ModelProto) -> str | None:
    g = m.graph
    if not g.node:
        return None
    n = rng.choice(g.node)
    choice = rng.randrange(5)
    if choice == 0 and n.input:
        del n.input[-1]
        return f"{n.op_type} loses its last input"
    if choice == 1:
        pool = [x for x in (*[i.name for i in g.input], *[t.name for t in g.initializer]) if x] or ["x"]
        n.input.append(rng.choice(pool))
        return f"{n.op_type} gains an input"
    if choice == 2:
        n.input.insert(0, "") if n.input else n.input.append("")
        return f"{n.op_type} gains an empty input"
    if choice == 3 and n.output:
        n.output.append(n.output[0] + "_extra")
        return f"{n.op_type} gains an output"
    if n.output:
        del n.output[:]
        return f"{n.op_type} loses its outputs"
    return None


def _m_structure(rng: random.Random, m: onnx.ModelProto) -> str | None:
    g = m.graph
    nodes = list(g.node)
    if len(nodes) < 1:
        return None
    choice = rng.randrange(7)
    if choice == 0 and len(nodes) >= 2 and nodes[-1].output:
        i = rng.randrange(len(nodes) - 1)
        if nodes[i].input:
            nodes[i].input[0] = nodes[-1].output[0]
            return f"cycle: node {i} reads the last node's output"
    if choice == 1:
        n = rng.choice(nodes)
        if n.output:
            n.input.append(n.output[0])
            return f"{n.op_type} reads its own output"
    if choice == 2:
        i = rng.randrange(len(nodes))
        del g.node[i]
        return f"node {i} removed"
    if choice == 3:
        i = rng.randrange(len(nodes))
        g.node.insert(i, nodes[i])
        return f"node {i} duplicated"
    if choice == 4:
        rev = list(reversed(nodes))
        del g.node[:]
        g.node.extend(rev)
        return "node order reversed"
    if choice == 5:
        n = rng.choice(nodes)
        if n.input:
            n.input[rng.randrange(len(n.input))] = "no_such_tensor"
            return f"{n.op_type} reads a dangling tensor"
    if choice == 6 and len(nodes) >= 2 and nodes[0].output and nodes[1].output:
        nodes[1].output[0] = nodes[0].output[0]
        return "two nodes write the same tensor"
    return None


def _m_graph_io(rng: random.Random, m: onnx.ModelProto) -> str | None:
    g = m.graph
    choice = rng.randrange(5)
    if choice == 0:
        del g.input[:]
        return "no graph inputs"
    if choice == 1:
        del g.output[:]
        return "no graph outputs"
    if choice == 2:
        g.output.add().name = "never_produced"
        return "output nothing produces"
    if choice == 3 and g.input:
        dup = g.input.add()
        dup.CopyFrom(g.input[0])
        return "duplicate graph input"
    if g.initializer:
        t = g.initializer[0]
        vi = g.input.add()
        vi.CopyFrom(helper.make_tensor_value_info(t.name, TensorProto.FLOAT, [7, 7, 7]))
        return f"initializer {t.name!r} shadowed by a [7,7,7] graph input"
    return None


def _m_initializer(rng: random.Random, m: onnx.ModelProto) -> str | None:
    g = m.graph
    tensors = _all_tensors(g)
    if not tensors:
        return None
    t = rng.choice(tensors)
    choice = rng.randrange(6)
    if choice == 0 and t.raw_data:
        t.raw_data = t.raw_data[: len(t.raw_data) // 2]
        return f"raw_data of {t.name!r} halved"
    if choice == 1:
        t.float_data.extend([1.0, 2.0])
        return f"{t.name!r} has float_data too"
    if choice == 2:
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        del t.external_data[:]
        loc = rng.choice(("missing.bin", "../outside.bin", "/etc/passwd", "", "a\nb.bin", "model.onnx"))
        offset = str(rng.choice((0, 1 << 40, -1)))
        length = str(rng.choice((16, 1 << 40, -5)))
        for key, value in (("location", loc), ("offset", offset), ("length", length)):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        return f"{t.name!r} external data {loc!r} offset {offset} length {length}"
    if choice == 3 and g.initializer:
        dup = g.initializer.add()
        dup.CopyFrom(t)
        return f"duplicate initializer {t.name!r}"
    if choice == 4:
        t.ClearField("raw_data")
        t.ClearField("float_data")
        t.int64_data.extend([1 << 62, -1])
        return f"{t.name!r} values replaced by int64_data"
    t.data_location = 99
    return f"{t.name!r} data_location 99"


def _int_constants(m: onnx.ModelProto) -> list[onnx.TensorProto]:
    return [t for t in _all_tensors(m.graph) if t.data_type == TensorProto.INT64 and len(t.dims) <= 1]


def _m_shape_values(rng: random.Random, m: onnx.ModelProto) -> str | None:
    """Integer constants (Reshape shapes, Slice bounds, ConstantOfShape sizes) set to odd values."""
    tensors = _int_constants(m)
    if not tensors:
        return None
    t = rng.choice(tensors)
    import numpy as np
    from onnx import numpy_helper

    arr = numpy_helper.to_array(t).astype(np.int64).reshape(-1)
    value = rng.choice((-1, 0, -5, 1 << 31, 1 << 40, 1 << 62))
    arr = arr.copy()
    if arr.size:
        arr[rng.randrange(arr.size)] = value
    else:
        arr = np.array([value], dtype=np.int64)
    new = numpy_helper.from_array(arr.reshape(tuple(t.dims)) if len(t.dims) else arr.reshape(()), t.name)
    t.CopyFrom(new)
    return f"int constant {t.name!r} -> {arr.tolist()[:8]}"


def _m_lstm_huge(rng: random.Random, m: onnx.ModelProto) -> str | None:
    nodes = [n for n in m.graph.node if n.op_type in ("LSTM", "GRU", "RNN")]
    if not nodes:
        return _m_shape_values(rng, m)
    n = rng.choice(nodes)
    if rng.random() < 0.5:
        for a in n.attribute:
            if a.name == "hidden_size":
                a.i = rng.choice((1 << 40, 0, -1))
                return f"{n.op_type} hidden_size -> {a.i}"
    names = set(n.input)
    for vi in _tensor_vis(m.graph):
        if vi.name in names and vi.type.tensor_type.shape.dim:
            vi.type.tensor_type.shape.dim[0].dim_value = 1 << 40
            return f"{n.op_type} input {vi.name!r} dim0 -> 2**40"
    for t in m.graph.initializer:
        if t.name in names and t.dims:
            t.dims[-1] = 1 << 40
            return f"{n.op_type} weight {t.name!r} last dim -> 2**40"
    return None


def _m_function(rng: random.Random, m: onnx.ModelProto) -> str | None:
    g = m.graph
    if not g.node or not g.node[0].input or not g.node[0].output:
        return None
    first = g.node[0]
    body = helper.make_node("Relu", ["x"], ["y"])
    if rng.random() < 0.5:
        body = helper.make_node("LeakyRelu", ["x"], ["y"])
        attr = onnx.AttributeProto(name="alpha", type=onnx.AttributeProto.FLOAT, ref_attr_name="missing_attr")
        body.attribute.append(attr)
    fn = helper.make_function("local.fuzz", "MyFn", ["x"], ["y"], [body], [helper.make_opsetid("", 17)])
    if rng.random() < 0.3:
        fn = helper.make_function("local.fuzz", "MyFn", ["x"], ["y"], [body, body], [helper.make_opsetid("", 17)])
    m.functions.append(fn)
    m.opset_import.add(domain="local.fuzz", version=1)
    call = helper.make_node("MyFn", [first.output[0]], [first.output[0] + "_fn"], domain="local.fuzz")
    g.node.insert(1, call)
    g.output.add().name = first.output[0] + "_fn"
    return "local function call"


def _m_subgraph(rng: random.Random, m: onnx.ModelProto) -> str | None:
    g = m.graph
    if not g.node or not g.node[0].output:
        return None
    out = g.node[0].output[0]
    empty = helper.make_graph([], "empty", [], [])
    branch = helper.make_graph(
        [helper.make_node("Identity", [out], ["b_out"])], "branch", [], [helper.make_tensor_value_info("b_out", 1, None)]
    )
    cond = helper.make_tensor("fuzz_cond", TensorProto.BOOL, [], [True])
    g.initializer.append(cond)
    else_branch = empty if rng.random() < 0.5 else branch
    node = helper.make_node("If", ["fuzz_cond"], ["if_out"], then_branch=branch, else_branch=else_branch)
    g.node.append(node)
    g.output.add().name = "if_out"
    return "If node" + (" with an empty else branch" if else_branch is empty else "")


PROTO_MUTATIONS: list[tuple[str, Callable[[random.Random, onnx.ModelProto], str | None]]] = [
    ("dim", _m_dim), ("dim", _m_dim), ("input_dims_all", _m_input_dims_all), ("tensor_dims", _m_tensor_dims),
    ("elem_type", _m_elem_type), ("cast_to", _m_cast_to), ("opset", _m_opset), ("opset", _m_opset),
    ("ir_version", _m_ir_version), ("attr_type", _m_attr_type), ("attr_value", _m_attr_value),
    ("attr_value", _m_attr_value), ("attr_string", _m_attr_string), ("ref_attr", _m_ref_attr),
    ("conv_attrs", _m_conv_attrs), ("unknown_attr", _m_unknown_attr), ("drop_attr", _m_drop_attr),
    ("name", _m_name), ("name", _m_name), ("io_type", _m_io_type), ("op_type", _m_op_type),
    ("op_type", _m_op_type), ("arity", _m_arity), ("arity", _m_arity), ("structure", _m_structure),
    ("graph_io", _m_graph_io), ("initializer", _m_initializer), ("shape_values", _m_shape_values),
    ("shape_values", _m_shape_values), ("lstm_huge", _m_lstm_huge), ("function", _m_function),
    ("subgraph", _m_subgraph),
]


def _serialize(m: onnx.ModelProto) -> bytes:
    data = m.SerializeToString()
    for placeholder, raw in BAD_UTF8.items():
        data = data.replace(placeholder.encode(), raw)
    return data


def mutate_proto(rng: random.Random, seed: Seed) -> tuple[bytes, str, tuple[str, ...]]:
    m = onnx.load_from_string(seed.data)
    done: list[str] = []
    wanted = rng.choices((1, 2, 3), weights=(70, 20, 10))[0]
    for _ in range(20):
        if len(done) >= wanted:
            break
        name, fn = rng.choice(PROTO_MUTATIONS)
        try:
            what = fn(rng, m)
        except Exception as exc:  # a mutation the protobuf API refuses (e.g. out-of-range int)
            what = None
            done.append(f"{name}: not applied ({type(exc).__name__})")
        if what:
            done.append(f"{name}: {what}")
    dims = _symbolic_dims(m)
    return _serialize(m), "; ".join(done) or "none applied", dims


# ------------------------------------------------------------------------------- command lines


def _dim_args(rng: random.Random, dims: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for d in dims:
        out += ["--dim", f"{d}={rng.choice((1, 2, 3))}"]
    return out


def analysis_command(rng: random.Random, case: Case, dims: tuple[str, ...], seed_bytes: bytes) -> None:
    """A command that analyses ``model.onnx`` (the mutant); sets argv, gate and doc on ``case``."""
    d = _dim_args(rng, dims)
    pick = rng.choices(
        ("peak_json", "peak_table", "layers_json", "layers_table", "verify", "train", "sweep", "fit", "diff",
         "check", "graph_opt", "cuda", "symbolic", "peak_md"),
        weights=(38, 12, 8, 3, 6, 5, 4, 3, 5, 3, 4, 3, 2, 4),
    )[0]
    if pick in ("sweep", "symbolic") and not dims:
        pick = "peak_json"
    if pick == "peak_json":
        case.argv = ["peak", "model.onnx", *d, "--json"]
        case.doc = ("peak", "-")
    elif pick == "peak_table":
        case.argv = ["peak", "model.onnx", *d]
    elif pick == "peak_md":
        case.argv = ["peak", "model.onnx", *d, "--format", rng.choice(("markdown", "csv")), "--max-peak", "1TiB"]
        case.gate = True
    elif pick == "layers_json":
        case.argv = ["layers", "model.onnx", *d, "--json"]
        case.doc = ("layers", "-")
    elif pick == "layers_table":
        case.argv = ["layers", "model.onnx", *d, "--group", "1"]
    elif pick == "verify":
        case.argv = ["verify", "model.onnx", *d, "--json"] + (["--random-weights"] if rng.random() < 0.5 else [])
        case.doc = ("verify", "-")
        case.gate = True
    elif pick == "train":
        case.argv = ["train", "model.onnx", *d, "--json"]
        case.doc = ("train", "-")
    elif pick == "sweep":
        rest = _dim_args(rng, dims[1:])
        case.argv = ["sweep", "model.onnx", "--dim", f"{dims[0]}=1,2", *rest, "--json"]
        case.doc = ("sweep", "-")
    elif pick == "fit":
        case.argv = ["fit", "model.onnx", *d, "--memory", "1GiB", "--json"]
        case.doc = ("fit", "-")
        case.gate = True
    elif pick == "diff":
        case.files["base.onnx"] = seed_bytes
        case.models.append("base.onnx")
        case.argv = ["diff", "base.onnx", "model.onnx", *d, "--json"]
        case.doc = ("diff", "-")
    elif pick == "check":
        dims_toml = ", ".join(f'"{k}" = 2' for k in dims)
        case.files["graphmem.toml"] = (
            f'[[models]]\npath = "model.onnx"\ndims = {{ {dims_toml} }}\nmax-peak = "1TiB"\n'
        ).encode()
        case.argv = ["check", "--jobs", "1", "--format", "json"]
        case.doc = ("check", "-")
        case.gate = True
    elif pick == "graph_opt":
        case.argv = ["peak", "model.onnx", *d, "--graph-opt", rng.choice(("basic", "extended", "all")), "--json"]
        case.doc = ("peak", "-")
    elif pick == "cuda":
        case.argv = ["peak", "model.onnx", *d, "--provider", "cuda", "--json"]
        case.doc = ("peak", "-")
    elif pick == "symbolic":
        case.argv = ["peak", "model.onnx", "--symbolic", "--json"]
        case.doc = ("symbolic", "-")


ODD_DIMS = ("batch", "batch=", "=3", "batch=abc", "batch=-1", "batch=0", "batch=1e3", "batch=2**40",
            "batch=99999999999999999999999", "nosuchdim=3", "batch=3=4", "\n=3", "batch=\u0663",
            " batch = 2 ", "batch=1,2", "batch=1099511627776", "batch=0x10", "ZQ\x1b[2J=1", "batch=+4")
ODD_BYTES = ("1e400", "-5MiB", "inf", "nan", "-0", "0", "12XB", "1e-400", "1" * 400, "5%", "", " ", "1e20GiB",
             "9" * 30, "0x10", "1_000", "\n", "1.5", "-inf", "1e308TiB")
ODD_INTS = ("-1", "0", "abc", "1e3", str(1 << 62), str(1 << 64), "", "-9999999999999999999999", "1.5", " 3")
ODD_PERCENT = ("-5%", "abc", "1e400%", "nan%", "inf", "5", "%", "", "-0%", "1e-400%")


def cli_command(rng: random.Random, case: Case, seed: Seed) -> str:
    """An odd command line on a valid seed; returns a description."""
    dims = seed.dims
    d = _dim_args(rng, dims)
    choice = rng.randrange(24)
    if choice == 0:
        bad = rng.choice(ODD_DIMS)
        case.argv = ["peak", "model.onnx", "--dim", bad, *d, "--json"]
        case.doc = ("peak", "-")
        return f"peak --dim {bad!r}"
    if choice == 1:
        opt = rng.choice(("--max-peak", "--max-total", "--max-weights", "--max-params", "--max-flops"))
        val = rng.choice(ODD_BYTES)
        case.argv = ["peak", "model.onnx", *d, opt, val, "--json"]
        case.doc = ("peak", "-")
        case.gate = True
        return f"peak {opt} {val!r}"
    if choice == 2:
        val = rng.choice(ODD_INTS)
        case.argv = ["verify", "model.onnx", *d, "--seed", val, "--json"]
        case.doc = ("verify", "-")
        case.gate = True
        return f"verify --seed {val!r}"
    if choice == 3:
        opt = rng.choice(("--top", "--group"))
        val = rng.choice(ODD_INTS + ("1000000",))
        case.argv = ["layers", "model.onnx", *d, opt, val, "--json"]
        case.doc = ("layers", "-")
        return f"layers {opt} {val!r}"
    if choice == 4:
        val = rng.choice(ODD_INTS + ("999", "1"))
        case.argv = ["ops", "--opset", val, "--json"]
        case.doc = ("ops", "-")
        return f"ops --opset {val!r}"
    if choice in (5, 6, 7):
        return _clobber(rng, case, d)
    if choice == 8:
        val = rng.choice(ODD_PERCENT)
        case.argv = ["verify", "model.onnx", *d, "--tolerance", val, "--json"]
        case.doc = ("verify", "-")
        case.gate = True
        return f"verify --tolerance {val!r}"
    if choice == 9:
        val = rng.choice(("5,1", "a,b", "1e400,2", "-1,-1", "0,0", ",", "1", "-9223372036854775809,0"))
        case.argv = ["verify", "model.onnx", *d, "--input-range", val, "--json"]
        case.doc = ("verify", "-")
        case.gate = True
        return f"verify --input-range {val!r}"
    if choice == 10:
        name = dims[0] if dims else "batch"
        val = rng.choice(("1..100000", "8..1", "1..64:x1", "1..64:x0", "1..8:0", "1..8:-1", "1,1,1", "0..4",
                          "1..", "..4", "1..1099511627776:x2", "2,abc"))
        rest = _dim_args(rng, dims[1:])
        case.argv = ["sweep", "model.onnx", "--dim", f"{name}={val}", *rest, "--json"]
        case.doc = ("sweep", "-")
        return f"sweep --dim {name}={val!r}"
    if choice == 11:
        opt = rng.choice(("--memory", "--overhead"))
        val = rng.choice(ODD_BYTES)
        extra = ["--memory", "1GiB"] if opt == "--overhead" else []
        solve = ["--solve", rng.choice(("nosuch", dims[0] if dims else "batch", ""))] if rng.random() < 0.4 else []
        case.argv = ["fit", "model.onnx", *d, opt, val, *extra, *solve, "--json"]
        case.doc = ("fit", "-")
        case.gate = True
        return f"fit {opt} {val!r} {solve}"
    if choice == 12:
        val = rng.choice(("nosuchdevice", "", "a100", "T4\n", "h100 80gb sxm"))
        case.argv = ["fit", "model.onnx", *d, "--device", val, "--json"]
        case.doc = ("fit", "-")
        case.gate = True
        return f"fit --device {val!r}"
    if choice == 13:
        val = rng.choice(("memory=-1", "memory=1e400", "fp16=abc", "bogus=1", "memory=24GiB,fp16=-1T", "", "=",
                          "memory=24GiB,bandwidth=0", "memory=0"))
        case.argv = ["devices", "--device-spec", val, "--json"]
        case.doc = ("devices", "-")
        return f"devices --device-spec {val!r}"
    if choice == 14:
        text = rng.choice((
            "[devices.x]\nmemory = -5\n", "[devices]\nx = 3\n", "not toml [[[", "[devices.y]\nmemory = \"1e400GiB\"\n",
            "[devices.\"a\\nb\"]\nmemory = \"1GiB\"\n", "\xff\xfe",
        ))
        case.files["devices.toml"] = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
        case.argv = ["devices", "--devices-file", "devices.toml", "--json"]
        case.doc = ("devices", "-")
        return f"devices file {text[:30]!r}"
    if choice == 15:
        return _config(rng, case, seed)
    if choice == 16:
        val = rng.choice(("bogus", "", "ADAM", "adam\n"))
        opt = rng.choice(("--optimizer", "--grads", "--precision", "--frozen"))
        if opt == "--frozen":
            val = rng.choice(("*", "[", "", "nothing*"))
        case.argv = ["train", "model.onnx", *d, opt, val, "--json"]
        case.doc = ("train", "-")
        return f"train {opt} {val!r}"
    if choice == 17:
        opt = rng.choice(("--max-increase", "--max-increase-peak", "--top"))
        val = rng.choice(ODD_PERCENT + ("-1", "abc"))
        case.files["base.onnx"] = seed.data
        case.models.append("base.onnx")
        case.argv = ["diff", "base.onnx", "model.onnx", *d, opt, val, "--json"]
        case.doc = ("diff", "-")
        case.gate = True
        return f"diff {opt} {val!r}"
    if choice == 18:
        path = rng.choice(("missing.onnx", ".", "/dev/null", "fifo.onnx", "dir.onnx", "/dev/zero", "", "link_loop.onnx",
                           "a\nb.onnx", "model.onnx/x"))
        if path == "fifo.onnx":
            case.links.append(("fifo", path, ""))
        elif path == "dir.onnx":
            case.links.append(("dir", path, ""))
        elif path == "link_loop.onnx":
            case.links.append(("symlink", path, path))
        case.argv = [rng.choice(("peak", "layers", "verify", "train")), path, *d]
        return f"model path {path!r}"
    if choice == 19:
        val = rng.choice(("bogus", "", "CSV", "json\n"))
        cmd = rng.choice(("peak", "layers"))
        case.argv = [cmd, "model.onnx", *d, "--format", val] + (["--json"] if rng.random() < 0.3 else [])
        return f"{cmd} --format {val!r}"
    if choice == 20:
        opt = rng.choice(("--provider", "--graph-opt", "--as-dtype"))
        val = rng.choice(("bogus", "", "CUDA", "all", "float16", "int4", "string", "float8e4m3fn"))
        case.argv = ["peak", "model.onnx", *d, opt, val, "--json"]
        case.doc = ("peak", "-")
        return f"peak {opt} {val!r}"
    if choice == 21:
        argv = rng.choice((
            [], ["bogus"], ["peak"], ["peak", "--json"], ["peak", "model.onnx", "--dim"], ["--version"],
            ["peak", "model.onnx", "--nosuch"], ["layers", "model.onnx", "--top"], ["help"], ["-h"],
        ))
        case.argv = list(argv)
        return f"argv {argv}"
    if choice == 22:
        val = rng.choice(ODD_INTS)
        case.argv = ["verify", "model.onnx", *d, "--random-weights", "--json"]
        case.doc = ("verify", "-")
        case.gate = True
        big = [f"{x}=1099511627776" for x in dims[:1]] or []
        if big and rng.random() < 0.7:
            case.argv = ["verify", "model.onnx", "--dim", big[0], *(_dim_args(rng, dims[1:])), "--random-weights"]
        return f"verify --random-weights {big} {val!r}"
    val = rng.choice(ODD_INTS + ("1000000",))
    case.files["graphmem.toml"] = b'[[models]]\npath = "model.onnx"\n'
    case.argv = ["check", "--jobs", val, "--format", "json"]
    case.doc = ("check", "-")
    case.gate = True
    return f"check --jobs {val!r}"


def _clobber(rng: random.Random, case: Case, d: list[str]) -> str:
    """``--output`` onto an input: the model, a spelling of it, a hard or symbolic link, the config."""
    target = rng.choice(("model.onnx", "./model.onnx", "hard.onnx", "soft.onnx", "graphmem.toml", "soft_cfg.toml",
                         "sub/../model.onnx", ".", "nodir/out.json", "out.json", "base.onnx"))
    if target == "hard.onnx":
        case.links.append(("hardlink", target, "model.onnx"))
    elif target == "soft.onnx":
        case.links.append(("symlink", target, "model.onnx"))
    elif target == "soft_cfg.toml":
        case.links.append(("symlink", target, "graphmem.toml"))
    elif target == "sub/../model.onnx":
        case.links.append(("dir", "sub", ""))
    cmd = rng.choice(("peak", "layers", "diff", "check"))
    fmt = rng.choice(("json", "markdown", "csv", "table"))
    if cmd == "check" or target in ("graphmem.toml", "soft_cfg.toml"):
        case.files["graphmem.toml"] = b'[[models]]\npath = "model.onnx"\n'
        cmd = "check" if cmd == "check" or rng.random() < 0.5 else cmd
    if cmd == "diff" or target == "base.onnx":
        case.files["base.onnx"] = case.files["model.onnx"]
        case.models.append("base.onnx")
    head = {
        "peak": ["peak", "model.onnx", *d], "layers": ["layers", "model.onnx", *d],
        "diff": ["diff", "base.onnx" if "base.onnx" in case.files else "model.onnx", "model.onnx", *d],
        "check": ["check", "--jobs", "1"],
    }[cmd]
    case.argv = [*head, "--format", fmt, "--output", target]
    case.output = target
    kind = {"peak": "peak", "layers": "layers", "diff": "diff", "check": "check"}[cmd]
    if fmt == "json":
        case.doc = (kind, target)
    return f"{cmd} --output {target!r} ({fmt})"


def _config(rng: random.Random, case: Case, seed: Seed) -> str:
    dims = seed.dims
    text = rng.choice((
        '[[models]]\npath = "model.onnx"\nmax-peak = "-5MiB"\n',
        '[[models]]\npath = "model.onnx"\nmax-peak = "1e400"\n',
        '[[models]]\npath = "*.onnx"\nmax_peak = "1MiB"\n',
        '[[models]]\npath = "graphmem.toml"\n',
        '[[models]]\npath = "."\n',
        '[[models]]\npath = "/dev/zero"\n',
        '[[models]]\npath = "nothing_*.onnx"\n',
        'models = 3\n',
        '[[models]]\npath = "model.onnx"\ndims = { nosuch = 2 }\n',
        '[[models]]\npath = "model.onnx"\ndims = { batch = -1 }\n',
        '[[models]]\npath = "model.onnx"\ndims = { batch = 1e400 }\n',
        '[[models]]\npath = "model.onnx"\nprovider = "bogus"\n',
        '[[models]]\npath = "model.onnx"\nname = "a\\nb"\nmax-peak = "1B"\n',
        "not = toml = at all",
        '[[models]]\npath = "model.onnx"\nmax-flops = "1"\n',
    ))
    if dims and "dims" not in text and "path = \"model.onnx\"" in text:
        text += "dims = { " + ", ".join(f'"{k}" = 1' for k in dims) + " }\n"
    case.files["graphmem.toml"] = text.encode()
    case.argv = ["check", "--jobs", "1", "--format", "json"]
    case.doc = ("check", "-")
    case.gate = True
    return f"config {text[:60]!r}"


def make_case(seed_value: int, index: int, seeds: dict[str, list[Seed]]) -> Case:
    rng = random.Random(f"graphmem-fuzz:{seed_value}:{index}")
    seed = pick_seed(rng, seeds)
    klass = rng.choices(("byte", "proto", "cli"), weights=(25, 50, 25))[0]
    case = Case(index=index, klass=klass, mutation="", seed=f"{seed.source}/{seed.name}", files={}, argv=[])
    case.models.append("model.onnx")
    if klass == "byte":
        fn = rng.choice(BYTE_MUTATIONS)
        data, case.mutation = fn(rng, seed.data)
        case.files["model.onnx"] = data
        analysis_command(rng, case, seed.dims, seed.data)
    elif klass == "proto":
        data, case.mutation, dims = mutate_proto(rng, seed)
        case.files["model.onnx"] = data
        analysis_command(rng, case, dims, seed.data)
    else:
        case.files["model.onnx"] = seed.data
        case.mutation = cli_command(rng, case, seed)
    return case


# ------------------------------------------------------------------------------- running a case


def _lay_out(case: Case, root: Path) -> None:
    (root / "tmp").mkdir()
    for name, data in case.files.items():
        (root / name).write_bytes(data)
    for kind, name, target in case.links:
        path = root / name
        if kind == "hardlink":
            os.link(root / target, path)
        elif kind == "symlink":
            os.symlink(target, path)
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "dir":
            path.mkdir(exist_ok=True)


def _snapshot(root: Path) -> dict[str, str]:
    """Relative path -> sha256 (or a kind marker) of everything under ``root``."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "symlink:" + os.readlink(path)
            elif path.is_fifo():
                out[rel] = "fifo"
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _child_graphmem(argv: list[str], root: Path) -> None:
    """In the forked child: run graphmem as the console script would; never returns."""
    code = 70
    try:
        os.setpgrp()
        os.chdir(root)
        os.environ["TMPDIR"] = str(root / "tmp")
        os.environ.pop("GITHUB_ACTIONS", None)
        tempfile.tempdir = None
        fd_in = os.open(os.devnull, os.O_RDONLY)
        fd_out = os.open(root.parent / f"{root.name}.stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        fd_err = os.open(root.parent / f"{root.name}.stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd_in, 0)
        os.dup2(fd_out, 1)
        os.dup2(fd_err, 2)
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        import graphmem.cli

        try:
            code = graphmem.cli.main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)


def _wait(pid: int, timeout: float) -> tuple[int | None, str | None]:
    """(exit code, None) or (None, 'signal N' | 'timeout'); kills the child's group on timeout."""
    deadline = time.monotonic() + timeout
    delay = 0.002
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            if os.WIFEXITED(status):
                return os.WEXITSTATUS(status), None
            return None, f"signal {os.WTERMSIG(status)}"
        if time.monotonic() > deadline:
            # SIGTERM first, as a user's tools do: graphmem removes its temporary folders on it
            # (a leftover is a stray_write); SIGKILL only when it has not ended after the grace
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            grace = time.monotonic() + TERM_GRACE_S
            reaped = False
            while not reaped and time.monotonic() < grace:
                reaped = os.waitpid(pid, os.WNOHANG)[0] != 0
                if not reaped:
                    time.sleep(0.05)
            if not reaped:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                os.waitpid(pid, 0)
            return None, "timeout"
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_graphmem(argv: list[str], root: Path, timeout: float) -> tuple[int | None, str | None, str, str]:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child_graphmem(argv, root)
    code, abnormal = _wait(pid, timeout)
    _kill_group(pid)  # leftovers (check --jobs workers) of a finished child
    out = (root.parent / f"{root.name}.stdout").read_bytes().decode("utf-8", "replace")
    err = (root.parent / f"{root.name}.stderr").read_bytes().decode("utf-8", "replace")
    return code, abnormal, out, err


def _loadability(path: Path) -> dict[str, Any]:
    """In a child: onnx full check and an onnxruntime session at ORT_DISABLE_ALL."""
    result: dict[str, Any] = {"checker": None, "ort": None, "external_absent": False}
    try:
        m = onnx.load(str(path), load_external_data=False)
        base = path.parent
        for t in [*m.graph.initializer]:
            if t.data_location == TensorProto.EXTERNAL:
                loc = {e.key: e.value for e in t.external_data}.get("location", "")
                if not loc or not (base / loc).is_file():
                    result["external_absent"] = True
    except Exception as exc:
        result["checker"] = f"load: {type(exc).__name__}: {exc}"
        result["ort"] = "not tried (onnx cannot parse it)"
        return result
    try:
        onnx.checker.check_model(str(path), full_check=True)
        result["checker"] = "ok"
    except Exception as exc:
        result["checker"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ''}"
    return result


def _child_loadability(path: Path, out: Path) -> None:
    code = 0
    try:
        os.setpgrp()
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        result = _loadability(path)
        out.write_text(json.dumps(result))
        if result["ort"] is None:
            import onnxruntime as ort

            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            so.log_severity_level = 4
            try:
                ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
                result["ort"] = "ok"
            except Exception as exc:
                text = str(exc).strip().splitlines()
                result["ort"] = f"{type(exc).__name__}: {text[0][:300] if text else ''}"
            out.write_text(json.dumps(result))
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def loadability(path: Path, cache: Path) -> dict[str, Any]:
    """checker/onnxruntime verdicts for the model at ``path``, cached by content hash."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    cached = cache / f"{digest}.json"
    if cached.exists():
        try:
            return json.loads(cached.read_text())
        except ValueError:
            pass
    work = Path(tempfile.mkdtemp(prefix="load-", dir=path.parent.parent))
    try:
        copy = work / "model.onnx"
        shutil.copyfile(path, copy)
        out = work / "verdict.json"
        pid = os.fork()
        if pid == 0:
            _child_loadability(copy, out)
        code, abnormal = _wait(pid, ORT_TIMEOUT_S)
        _kill_group(pid)
        result = json.loads(out.read_text()) if out.exists() else {"checker": None, "ort": None}
        if result.get("ort") is None:
            result["ort"] = f"onnxruntime crashed ({abnormal or f'exit {code}'})"
        if result.get("checker") is None:
            result["checker"] = f"checker crashed ({abnormal or f'exit {code}'})"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(result))
    os.replace(tmp, cached)
    return result


# ---------------------------------------------------------------------------------- the checks

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ORT_LOG = re.compile(r"\[[EWIVF]:onnxruntime|onnxruntime::|:onnxruntime:")
#: graphmem's report of a bug: ``graphmem: error: internal error: Type at graphmem/x.py:12 in f: …``
_INTERNAL = re.compile(r"internal error: ([\w.]+) at (graphmem/[\w/]+\.py):\d+ in (\S+?):")
_FRAME = re.compile(r'File "([^"]*)", line (\d+), in (\S+)')


def root_cause(stderr: str) -> str:
    """``ExcType at graphmem/file.py:function`` of the last traceback in ``stderr``, or of
    graphmem's one-line ``internal error`` report (which names the same)."""
    internal = _INTERNAL.search(stderr)
    if internal and "Traceback (most recent call last)" not in stderr:
        return f"{internal.group(1)} at {internal.group(2)}:{internal.group(3)}"
    block = stderr[stderr.rfind("Traceback (most recent call last)") :]
    frames = _FRAME.findall(block)
    inner = [f for f in frames if "/graphmem/" in f[0] and "/scripts/" not in f[0]]
    exc_type = "?"
    last_frame = block.rfind('  File "')
    for ln in block[last_frame:].splitlines()[1:]:
        if ln and not ln.startswith(" "):
            exc_type = ln.split(":", 1)[0].strip()
            break
    if inner:
        path, line, func = inner[-1]
        rel = path[path.rfind("/graphmem/") + 1 :]
        return f"{exc_type} at {rel}:{func}"
    if frames:
        path, line, func = frames[-1]
        return f"{exc_type} at {Path(path).name}:{func} (outside graphmem)"
    return f"{exc_type} (no frame)"


#: A shape written as a table writes it (``2x-1x2``, ``[2, -1, 2]``) with a negative dim in it.
_NEGATIVE_SHAPE = re.compile(r"\d+x-\d|(?<![\w.])-\d+x\d|\[(?:[\w?]+, )*-\d+(?:, [\w?]+)*\]")


def _negative_shapes(text: str) -> list[str]:
    """Shapes with a negative dim in a table (or a JSON string): an unknown dim is ``?`` there."""
    return [m.group() for m in _NEGATIVE_SHAPE.finditer(text)]


def _negatives(doc: Any, path: str = "$") -> list[str]:
    out: list[str] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k in SIGNED_KEYS or "change" in k or "delta" in k or "increase" in k:
                continue
            out += _negatives(v, f"{path}.{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _negatives(v, f"{path}[{i}]")
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool) and doc < 0:
        out.append(f"{path}={doc}")
    elif isinstance(doc, str) and _negative_shapes(doc):
        out.append(f"{path}={doc[:60]!r}")
    return out


def _gate_in(case: Case) -> bool:
    return case.gate or any(a.startswith(GATE_OPTIONS) for a in case.argv)


def evaluate(case: Case, root: Path, before: dict[str, str], code: int | None, abnormal: str | None,
             out: str, err: str, load_cache: Path) -> dict[str, Any]:
    problems: dict[str, str] = {}
    if abnormal == "timeout":
        problems["timeout"] = "killed after the timeout"
    elif abnormal:
        problems["crash"] = abnormal
    if "Traceback (most recent call last)" in err or _INTERNAL.search(err):
        cause = root_cause(err)
        problems["memory" if cause.startswith("MemoryError") else "traceback"] = cause
    if code is not None and code not in (0, 1, 2):
        problems["bad_exit"] = f"exit {code}"
    if code == 1 and not _gate_in(case) and "traceback" not in problems:
        problems["exit1_not_gate"] = err.strip().splitlines()[0][:200] if err.strip() else "(no stderr)"
    lines = err.splitlines()
    progress = [ln for ln in lines if ln.startswith("graphmem check: [")]  # check's per-model lines
    if code == 2 and "traceback" not in problems:
        errors = [ln for ln in lines if ln not in progress]
        if len(errors) != 1 or not errors[0].startswith("graphmem: error: "):
            problems["multiline_error"] = f"{len(lines)} lines: {err[:200]!r}"
    if code == 1 and "traceback" not in problems:
        bad = [ln for ln in lines if not ln.startswith(("graphmem: ", "graphmem check: "))]
        if bad:
            problems["multiline_error"] = f"gate stderr: {bad[0][:200]!r}"
    if code == 0 and "traceback" not in problems:
        bad = [ln for ln in lines if not ln.startswith(("graphmem: ", "graphmem check: "))]
        if bad:
            problems["stray_stderr"] = bad[0][:200]
    if _CONTROL.search(err.rstrip("\n")):
        problems["control_chars"] = "stderr: " + repr(_CONTROL.search(err.rstrip("\n")).group())
    elif case.doc is None and _CONTROL.search(out.replace("\n", "")):
        problems["control_chars"] = "stdout: " + repr(_CONTROL.search(out.replace("\n", "")).group())
    # onnxruntime's reason inside graphmem's own one-line message is how it should reach the user
    foreign = [ln for ln in lines if not ln.startswith("graphmem")] + ([out] if case.doc is None else [])
    logged = [ln for ln in foreign if _ORT_LOG.search(ln)]
    if logged:
        problems["ort_log"] = logged[0][:200]
    # inputs unchanged, nothing new but --output
    after = _snapshot(root)
    inputs = _inputs(case)
    output_names = set()
    if case.output:  # the output and, when it is a link, the file it leads to
        output_names.add(os.path.normpath(case.output))
        output_names.add(os.path.relpath(os.path.realpath(root / case.output), root))
    for name, digest in before.items():
        if name.startswith("tmp/") or name == "tmp" or after.get(name) == digest:
            continue
        if name in inputs:
            problems["overwrite"] = f"{name} changed"
            break
        if name not in output_names:
            problems["stray_write"] = f"{name} changed"
    new = [n for n in after if n not in before and os.path.normpath(n) not in output_names]
    if new:
        problems["stray_write"] = ", ".join(sorted(new)[:5])
    # documents
    doc_ok = None
    if case.doc and code in (0, 1) and not problems.keys() & {"traceback", "crash", "timeout"}:
        kind, where = case.doc
        text = out if where == "-" else ((root / where).read_text(errors="replace") if (root / where).is_file() else None)
        if text is not None and (code == 0 or text.strip()):
            try:
                doc = json.loads(text)
            except ValueError as exc:
                problems["schema_invalid"] = f"not JSON: {exc}"[:200]
            else:
                from graphmem.schema import schema_errors

                errs = schema_errors(doc, kind)
                if errs:
                    problems["schema_invalid"] = "; ".join(errs[:3])[:300]
                neg = _negatives(doc)
                if neg:
                    problems["negative"] = ", ".join(neg[:4])
                doc_ok = not errs
    if case.doc is None and code in (0, 1) and _negative_shapes(out):  # a table: an unknown dim is '?'
        problems["negative"] = "table: " + ", ".join(_negative_shapes(out)[:4])
    verdicts = {}
    if code == 0 and not problems.keys() & {"traceback", "crash", "timeout"}:
        for name in case.models:
            path = root / name
            if name in before and path.is_file() and name in _read_args(case) + _config_models(case):
                verdicts[name] = loadability(path, load_cache)
        for name, v in verdicts.items():
            if v["ort"] != "ok":
                if v.get("external_absent"):
                    problems.setdefault("accepted_external_absent", f"{name}: {v['ort']}"[:300])
                else:
                    problems.setdefault("accepted_invalid", f"{name}: {v['ort']}"[:300])
            elif v["checker"] != "ok":
                problems.setdefault("accepted_checker_only", f"{name}: {v['checker']}"[:300])
    if code == 2 and case.klass in ("proto", "byte") and not problems and (root / "model.onnx").is_file():
        v = loadability(root / "model.onnx", load_cache)
        verdicts["model.onnx"] = v
        if v["ort"] == "ok":  # informational: graphmem refused what onnxruntime loads
            problems["refused_loadable"] = (lines[0] if lines else "")[:300]
    return {
        **case.describe(),
        "exit": code,
        "abnormal": abnormal,
        "problems": problems,
        "doc_valid": doc_ok,
        "stderr": err[-2000:],
        "verdicts": verdicts,
    }


def _inputs(case: Case) -> set[str]:
    """The files the command reads: its models, and its configuration or devices file.
    A hard link shares its target's content, so both names of a linked input are inputs."""
    names = {m for m in case.models if m in _read_args(case) or (case.argv[:1] == ["check"] and m == "model.onnx")}
    if case.argv[:1] == ["check"]:
        names.add("graphmem.toml")
    names |= {f for f in ("devices.toml",) if f in case.argv}
    for kind, name, target in case.links:
        if kind == "hardlink" and target in names:
            names.add(name)
    return names


def _read_args(case: Case) -> list[str]:
    """The command line without its ``--output FILE`` (the one file graphmem may write)."""
    out, skip = [], False
    for arg in case.argv:
        if skip:
            skip = False
        elif arg in ("--output", "-o"):
            skip = True
        else:
            out.append(arg)
    return out


def _config_models(case: Case) -> list[str]:
    return ["model.onnx"] if case.argv[:1] == ["check"] else []


def run_case(case: Case, work: Path, load_cache: Path, timeout: float) -> dict[str, Any]:
    root = work / f"case{case.index}"
    root.mkdir()
    _lay_out(case, root)
    before = _snapshot(root)
    code, abnormal, out, err = run_graphmem(case.argv, root, timeout)
    return evaluate(case, root, before, code, abnormal, out, err, load_cache)


# ------------------------------------------------------------------------------------ the driver


def _case_process(case: Case, work: Path, load_cache: Path, timeout: float, result_path: Path) -> None:
    code = 0
    try:
        os.setpgrp()
        result = run_case(case, work, load_cache, timeout)
        result_path.write_text(json.dumps(result))
    except BaseException:
        result_path.write_text(json.dumps({**case.describe(), "exit": None, "abnormal": None,
                                           "problems": {"fuzzer_error": traceback.format_exc()[-500:]},
                                           "stderr": "", "verdicts": {}}))
        code = 1
    finally:
        os._exit(code)


def run_all(cases: list[Case], *, jobs: int, out_dir: Path, timeout: float, keep: bool,
            progress: bool) -> list[dict[str, Any]]:
    """Run ``cases`` ``jobs`` at a time; each result is appended to ``OUT/results.jsonl`` as it
    comes (a long run that is stopped keeps what it did)."""
    load_cache = out_dir / "loadability"
    load_cache.mkdir(parents=True, exist_ok=True)
    results: dict[int, dict[str, Any]] = {}
    running: dict[int, tuple[Case, Path, float]] = {}
    pending = list(reversed(cases))
    work_parent = Path(tempfile.mkdtemp(prefix="graphmem-fuzz-"))
    started = time.monotonic()
    stream = open(out_dir / "results.jsonl", "w")
    try:
        while pending or running:
            while pending and len(running) < jobs:
                case = pending.pop()
                work = work_parent / f"w{case.index}"
                work.mkdir()
                result_path = work / "result.json"
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _case_process(case, work, load_cache, timeout, result_path)
                running[pid] = (case, work, time.monotonic())
            pid, status = os.wait()
            if pid not in running:
                continue
            case, work, t0 = running.pop(pid)
            result_path = work / "result.json"
            try:
                result = json.loads(result_path.read_text())
            except (OSError, ValueError):
                result = {**case.describe(), "exit": None, "problems": {"fuzzer_error": f"case process status {status}"},
                          "stderr": "", "verdicts": {}}
            result["seconds"] = round(time.monotonic() - t0, 3)
            results[case.index] = result
            stream.write(json.dumps(result) + "\n")
            stream.flush()
            if keep and result["problems"]:
                _keep(case, out_dir)
            shutil.rmtree(work, ignore_errors=True)
            if progress and len(results) % 250 == 0:
                rate = len(results) / (time.monotonic() - started)
                print(f"  {len(results)}/{len(cases)} cases, {rate:.1f}/s", file=sys.stderr, flush=True)
    finally:
        stream.close()
        shutil.rmtree(work_parent, ignore_errors=True)
    return [results[c.index] for c in cases]


def _keep(case: Case, out_dir: Path) -> None:
    dest = out_dir / "cases" / f"case{case.index}"
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        (dest / name).write_bytes(data)
    (dest / "case.json").write_text(json.dumps(case.describe(), indent=1))


PROBLEMS = ("traceback", "memory", "crash", "timeout", "bad_exit", "exit1_not_gate", "multiline_error",
            "control_chars", "ort_log", "stray_stderr", "overwrite", "stray_write", "schema_invalid", "negative",
            "accepted_invalid", "accepted_external_absent", "accepted_checker_only", "fuzzer_error",
            "refused_loadable")


def summarize(results: list[dict[str, Any]], *, seconds: float) -> str:
    n = len(results)
    exits = collections.Counter(str(r["exit"]) if r["exit"] is not None else str(r.get("abnormal")) for r in results)
    counts = collections.Counter(p for r in results for p in r["problems"])
    by_class = collections.Counter(r["class"] for r in results)
    ok0 = [r for r in results if r["exit"] == 0]
    lines = [
        f"graphmem fuzz: {n} cases in {seconds:.0f} s "
        f"({', '.join(f'{k} {v}' for k, v in sorted(by_class.items()))})",
        "exit codes: " + ", ".join(f"{k}: {v}" for k, v in sorted(exits.items())),
        "",
        "problem class                   cases",
    ]
    for p in PROBLEMS:
        extra = ""
        if p.startswith("accepted") and ok0:
            extra = f"   ({100 * counts[p] / len(ok0):.1f}% of {len(ok0)} exit-0 cases)"
        lines.append(f"  {p:<28} {counts[p]:>6}{extra}")
    causes: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in results:
        for p in ("traceback", "memory"):
            if p in r["problems"]:
                causes[r["problems"][p]].append(r)
    if causes:
        lines += ["", f"root causes of tracebacks ({len(causes)} distinct; cases, first case, its mutation):"]
        for cause, rs in sorted(causes.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append(f"  {len(rs):>5}  {cause}   [case {rs[0]['index']}: {rs[0]['mutation'][:70]}]")
    for p in ("crash", "timeout", "bad_exit", "exit1_not_gate", "multiline_error", "control_chars", "ort_log",
              "stray_stderr", "overwrite", "stray_write", "schema_invalid", "negative", "fuzzer_error"):
        rs = [r for r in results if p in r["problems"]]
        if rs:
            lines += ["", f"{p}: {len(rs)} cases, e.g."]
            seen: set[str] = set()
            for r in rs:
                key = r["mutation"].split(":")[0] + "|" + " ".join(r["argv"][:1])
                if key in seen:
                    continue
                seen.add(key)
                lines.append(f"  case {r['index']} [{r['mutation'][:60]}] {' '.join(r['argv'])[:80]!s}: "
                             f"{r['problems'][p][:140]!r}")
                if len(seen) >= 6:
                    break
    for p in ("accepted_invalid", "accepted_checker_only", "refused_loadable"):
        rs = [r for r in results if p in r["problems"]]
        if rs:
            reasons = collections.Counter(_reason(r["problems"][p]) for r in rs)
            why = "graphmem's reasons" if p == "refused_loadable" else "why onnxruntime/the checker refuses"
            lines += ["", f"{p}: {why} (top 15 of {len(reasons)}):"]
            for reason, k in reasons.most_common(15):
                lines.append(f"  {k:>5}  {reason}")
    return "\n".join(lines)


def _reason(text: str) -> str:
    text = text.replace("graphmem: error: ", "")
    text = re.sub(r"\[ONNXRuntimeError\] : \d+ : \w+ : ", "", text)
    text = re.sub(r"Load model from \S+ failed:", "", text)
    text = re.sub(r"/onnxruntime_src/\S+/", "", text)
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"\d+", "N", text)
    text = text.split(": ", 1)[1] if ": " in text else text
    return text[:150]


def _warm_up() -> None:
    """Run a few commands in this process so that the lazy imports (rich, typer's help) are done
    once before forking; nothing here creates an onnxruntime session (its threads must not be
    forked)."""
    import contextlib
    import io

    import graphmem.cli

    for argv in (["--version"], ["ops", "--json"], ["peak", "--bogus"],
                 ["peak", str(REPO / "models" / "tiny_cnn.onnx"), "--dim", "batch=1", "--json"],
                 ["layers", str(REPO / "models" / "tiny_cnn.onnx"), "--dim", "batch=1", "--format", "markdown"]):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                graphmem.cli.main(argv)
            except BaseException:
                pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--start", type=int, default=0, help="first case index")
    ap.add_argument("--only", type=int, nargs="*", help="run only these case indices and print them")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S)
    ap.add_argument("--quick", action="store_true", help="leave out the node test models")
    ap.add_argument("--out", type=Path, default=None, help="results folder (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the files of every case with a problem")
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--summarize", type=Path, nargs="+", metavar="RESULTS",
                    help="print the summary of results.jsonl files of earlier (or split) runs; run nothing")
    args = ap.parse_args(argv)
    if args.summarize:
        merged: dict[int, dict[str, Any]] = {}
        for path in args.summarize:
            for line in path.read_text().splitlines():
                r = json.loads(line)
                merged[r["index"]] = r
        results = [merged[i] for i in sorted(merged)]
        print(summarize(results, seconds=sum(r.get("seconds", 0) for r in results)))
        return 0
    import importlib
    import pkgutil

    import graphmem

    for info in pkgutil.walk_packages(graphmem.__path__, "graphmem."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    import onnxruntime  # noqa: F401  (imported before forking, once)

    _warm_up()

    seeds = load_seeds(quick=args.quick)
    indices = args.only if args.only else range(args.start, args.start + args.cases)
    cases = [make_case(args.seed, i, seeds) for i in indices]
    out_dir = args.out or Path(tempfile.mkdtemp(prefix="graphmem-fuzz-out-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    results = run_all(cases, jobs=max(1, args.jobs), out_dir=out_dir, timeout=args.timeout, keep=args.keep,
                      progress=args.progress)
    seconds = time.monotonic() - t0
    if args.only:
        for r in results:
            print(json.dumps(r, indent=1))
    text = summarize(results, seconds=seconds)
    (out_dir / "summary.txt").write_text(text + "\n")
    print(text)
    print(f"\nresults: {out_dir / 'results.jsonl'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
