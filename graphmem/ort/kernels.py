"""Which kernels onnxruntime 1.31's CPU execution provider has, for which element types.

The table is package data, loaded the first time it is asked (:data:`KERNELS_FILE`, with the
schemas' formal parameters in :data:`FORMALS_FILE`): every CPU kernel definition onnxruntime
1.31.1 registers, read from the runtime itself by ``scripts/make_kernel_table.py`` (the
registrations are in the files named by each ``[domain]`` line:
``core/providers/cpu/cpu_execution_provider.cc`` for ai.onnx and ai.onnx.ml,
``contrib_ops/cpu/cpu_contrib_kernels.cc`` for com.microsoft and NCHWc); rows that
``scripts/probes/probe_kernels.py`` confirmed with one-node sessions on the installed onnxruntime end in
``probed`` (every type of the row tried) or ``partly``. The build is x86-64: the float16 kernels
behind ``MLAS_F16VEC_INTRINSICS_SUPPORTED`` (Relu, Gemm, MaxPool, … on ARM64) are not there.

Matching follows ``core/framework/kernel_registry.cc``:

* version (``VerifyVersion``): a kernel ``FIRST-LAST`` serves a node whose schema since-version
  is FIRST, or lies in FIRST..LAST when LAST is closed; an open-ended kernel (``FIRST-``) serves
  only since-version FIRST exactly (a newer schema version needs its own kernel);
* types (``MatchKernelDefTypes``): for each type constraint of the kernel, the first existing
  argument bound to it (the schema's formal inputs in order, then its outputs; the first actual
  argument of a variadic formal) must have one of the constraint's types.

``has_cpu_kernel`` answers whether a node has a kernel; ``kernel_type_problem`` says why not.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

from onnx import TensorProto

from graphmem.optable import normalize_domain

__all__ = [
    "KernelRow",
    "Formals",
    "cpu_kernel_rows",
    "formals",
    "since_version",
    "has_cpu_kernel",
    "has_cpu_kernel_for",
    "kernel_type_problem",
    "type_name",
    "TABLE_MACHINES",
    "host_problem",
    "KERNELS_FILE",
    "FORMALS_FILE",
    "data_lines",
]

_OPEN = None  # LAST of an open-ended kernel

#: The package data of the table, relative to ``graphmem/ort`` (see ``scripts/make_kernel_table.py``).
KERNELS_FILE = "data/cpu_kernels.txt"
FORMALS_FILE = "data/cpu_formals.txt"

#: ``platform.machine()`` names of the build this table (and graphmem/ort/mlas.py) describes.
TABLE_MACHINES = frozenset({"x86_64", "amd64", "x64"})


def host_problem(machine: str) -> str | None:
    """Why onnxruntime on a host of architecture ``machine`` (``platform.machine()``'s name:
    :attr:`graphmem.host.HostProfile.machine`) may pick other CPU kernels than graphmem's table,
    or None on x86-64. ARM64 builds register float16 kernels x86-64 has not
    (``MLAS_F16VEC_INTRINSICS_SUPPORTED`` blocks of cpu_execution_provider.cc: Relu, Conv, Gemm,
    MaxPool, …) and other MLAS quantized kernels (``ConvSymS8S8Dispatch``)."""
    name = machine.lower()
    if name in TABLE_MACHINES:
        return None
    return (
        f"the host is {name or 'of unknown architecture'}: graphmem's CPU kernel table and MLAS rules are "
        "onnxruntime's x86-64 build (ARM64 has float16 Relu, Conv, Gemm, MaxPool, … kernels and other "
        "quantized kernels): the Casts around float16 nodes and the quantized kernels' buffers may differ here"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelRow:
    """One CPU kernel definition (typed registrations of one version range merged)."""

    domain: str
    op: str
    first: int
    last: int | None  # None: open-ended
    types: Mapping[str, frozenset[int | str]]  # constraint -> element types (str: seq/map/opt types)
    source: str  # the file that registers it
    probed: str  # "probed", "partly" or ""

    def serves(self, since_version: int) -> bool:
        """``VerifyVersion`` (kernel_registry.cc)."""
        if self.first == since_version:
            return True
        return self.last is not None and self.first <= since_version <= self.last


@dataclass(frozen=True, slots=True, kw_only=True)
class Formals:
    """A schema version's formal parameters: type parameter (or None: fixed type) and option."""

    inputs: tuple[tuple[str | None, str], ...]  # (constraint, "" | "?" | "*")
    outputs: tuple[tuple[str | None, str], ...]


_CODES = {name.lower(): code for name, code in TensorProto.DataType.items()}


@functools.cache
def _types(listed: str) -> frozenset[int | str]:
    """'float,int8' -> {TensorProto.FLOAT, TensorProto.INT8}; sequence, map and optional types
    stay strings. Lists repeat across rows: each is parsed once."""
    return frozenset(_CODES.get(t, t) for t in listed.split(","))


def type_name(dtype: int | str) -> str:
    """TensorProto.FLOAT -> 'float'."""
    return dtype if isinstance(dtype, str) else TensorProto.DataType.Name(dtype).lower()


def data_lines(name: str) -> Iterator[str]:
    """The lines of a table file (``KERNELS_FILE`` or ``FORMALS_FILE``), comments and blank lines left out."""
    text = resources.files("graphmem.ort").joinpath(name).read_text(encoding="utf-8")
    return (line for line in text.splitlines() if line and not line.startswith("#"))


@functools.cache
def _split() -> tuple[dict[str, str], dict[tuple[str, str], list[tuple[str, str]]], dict[tuple[str, str], list[str]]]:
    """The two table files split by ``(domain, op)``, their rows not parsed yet: (type lists by
    name, key -> [(source, row line)], key -> [formals line]). Parsing every row costs about as
    much as a small model's whole analysis; a model asks about a few dozen ops."""
    groups: dict[str, str] = {}
    rows: dict[tuple[str, str], list[tuple[str, str]]] = {}
    domain, source = "", ""
    for line in data_lines(KERNELS_FILE):
        if line.startswith("$"):  # a type list rows share: $NAME TYPES
            name, _, listed = line.partition(" ")
            groups[name] = listed
            continue
        if line.startswith("["):
            head, _, source = line.partition(" ")
            domain = normalize_domain(head[1:-1])
            continue
        rows.setdefault((domain, line.partition(" ")[0]), []).append((source, line))
    schemas: dict[tuple[str, str], list[str]] = {}
    for line in data_lines(FORMALS_FILE):
        d, op, _ = line.partition(" | ")[0].split()
        schemas.setdefault((normalize_domain(d), op), []).append(line)
    return groups, rows, schemas


@functools.cache
def _rows(domain: str, op: str) -> tuple[KernelRow, ...]:
    """The parsed rows of one (normalised) ``(domain, op)``, in the file's order."""
    groups, lines, _ = _split()
    out = []
    for source, line in lines.get((domain, op), ()):
        fields = line.split()
        probed = fields.pop() if fields[-1] in ("probed", "partly") else ""
        _, span, *constraints = fields
        first, _, last = span.partition("-")
        types = {}
        for c in constraints:
            name, _, listed = c.partition("=")
            types[name] = _types(groups.get(listed, listed))
        out.append(KernelRow(domain=domain, op=op, first=int(first), last=int(last) if last else _OPEN,
                             types=types, source=source, probed=probed))
    return tuple(out)


@functools.cache
def _schemas(domain: str, op: str) -> dict[int, Formals]:
    """Since-version -> formal parameters of one (normalised) ``(domain, op)``."""
    out: dict[int, Formals] = {}
    for line in _split()[2].get((domain, op), ()):
        head, ins, outs = line.split(" | ")
        out[int(head.split()[2])] = Formals(inputs=_formal(ins), outputs=_formal(outs))
    return out


def _table() -> tuple[dict[tuple[str, str], tuple[KernelRow, ...]], dict[tuple[str, str], dict[int, Formals]]]:
    """The whole table parsed: (domain, op) -> rows, (domain, op) -> since-version -> formals."""
    _, rows, schemas = _split()
    return {k: _rows(*k) for k in rows}, {k: _schemas(*k) for k in schemas}


def _formal(text: str) -> tuple[tuple[str | None, str], ...]:
    """'T1 -? V*' -> (("T1", ""), (None, "?"), ("V", "*")); '.': none."""
    out = []
    for p in text.split():
        if p == ".":
            continue
        option = p[-1] if p[-1] in "?*" else ""
        name = p[:-1] if option else p
        out.append((None if name == "-" else name, option))
    return tuple(out)


def cpu_kernel_rows(domain: str, op: str) -> tuple[KernelRow, ...]:
    """Every CPU kernel row of ``(domain, op)`` (empty: the CPU provider has no such kernel)."""
    return _rows(normalize_domain(domain), op)


def formals(domain: str, op: str, since_version: int) -> Formals | None:
    """The formal parameters of the newest schema of ``op`` not newer than ``since_version``."""
    versions = _schemas(normalize_domain(domain), op)
    known = [v for v in versions if v <= since_version]
    return versions[max(known)] if known else None


def since_version(domain: str, op: str, opset: int) -> int | None:
    """The since-version of ``op``'s schema at ``opset`` among onnxruntime's schemas of ops that
    have a CPU kernel (None: none of them, so no CPU kernel either)."""
    versions = _schemas(normalize_domain(domain), op)
    known = [v for v in versions if v <= opset]
    return max(known) if known else None


def has_cpu_kernel_for(domain: str, op: str, since_version: int, constraints: Mapping[str, int | str]) -> bool:
    """A CPU kernel serving ``since_version`` whose constraints include each ``name -> type`` given
    (``KernelRegistry::TryFindKernel`` with a type-constraint map, as InsertCastTransformer asks:
    every constraint of the map must be one of the kernel's, with that type)."""
    return any(
        r.serves(since_version) and all(c in r.types and t in r.types[c] for c, t in constraints.items())
        for r in cpu_kernel_rows(domain, op)
    )


def _bound_args(f: Formals, constraint: str, inputs: Sequence[int | str | None],
                outputs: Sequence[int | str | None]) -> list[int | str | None]:
    """The actual arguments bound to ``constraint``, in the order MatchKernelDefTypes tries them:
    the first actual argument of each formal input bound to it, then the outputs."""
    out: list[int | str | None] = []
    position = 0
    for k, (name, option) in enumerate(f.inputs):
        count = max(len(inputs) - position, 0) if option == "*" and k == len(f.inputs) - 1 else 1
        if name == constraint and position < len(inputs) and count:
            out.append(inputs[position])
        position += count
    for k, (name, _) in enumerate(f.outputs):
        if name == constraint and k < len(outputs):
            out.append(outputs[k])
    return out


def _mismatch(row: KernelRow, f: Formals | None, inputs: Sequence[int | str | None],
              outputs: Sequence[int | str | None]) -> tuple[str, int | str] | None:
    """The (constraint, type) that stops ``row`` from matching, or None when it matches."""
    if f is None:
        return None  # no schema known: the version match is all that can be checked
    for constraint, allowed in row.types.items():
        for actual in _bound_args(f, constraint, inputs, outputs):
            if actual is None:  # absent or unknown: not checked (onnxruntime skips absent args)
                continue
            if actual not in allowed:
                return constraint, actual
            break
    return None


def has_cpu_kernel(domain: str, op: str, since_version: int, input_types: Sequence[int | str | None],
                   output_types: Sequence[int | str | None] = ()) -> bool:
    """Does onnxruntime 1.31's CPU provider have a kernel for this node?

    ``since_version`` is the since-version of the node's schema (not the model's opset);
    ``input_types``/``output_types`` are the element types (``TensorProto`` values) of the
    node's actual inputs and outputs in order, None for an absent or unknown one.

    >>> has_cpu_kernel("", "Relu", 14, [TensorProto.FLOAT])
    True
    >>> has_cpu_kernel("", "Add", 14, [TensorProto.BFLOAT16, TensorProto.BFLOAT16])
    False
    """
    return kernel_type_problem(domain, op, since_version, input_types, output_types) is None


def kernel_type_problem(domain: str, op: str, since_version: int, input_types: Sequence[int | str | None],
                        output_types: Sequence[int | str | None] = ()) -> str | None:
    """None when the CPU provider has a kernel for the node, else why not (one phrase)."""
    rows = cpu_kernel_rows(domain, op)
    if not rows:
        return f"the CPU provider has no {op} kernel"
    serving = [r for r in rows if r.serves(since_version)]
    if not serving:
        return f"the CPU provider has no {op} kernel for opset version {since_version}"
    f = formals(domain, op, since_version)
    misses = [_mismatch(r, f, input_types, output_types) for r in serving]
    found = [m for m in misses if m is not None]
    if len(found) < len(misses):  # a kernel serves these types
        return None
    constraint, actual = found[0]
    return f"the CPU provider has no {op} kernel for {constraint}={type_name(actual)}"
