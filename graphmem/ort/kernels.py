"""Which kernels onnxruntime 1.31's CPU execution provider has, for which element types.

The table (``_ROWS``) is every CPU kernel definition onnxruntime 1.31.1 registers, read from the
runtime itself by ``scripts/make_kernel_table.py`` (the registrations are in the files named by
each ``[domain]`` line: ``core/providers/cpu/cpu_execution_provider.cc`` for ai.onnx and
ai.onnx.ml, ``contrib_ops/cpu/cpu_contrib_kernels.cc`` for com.microsoft and NCHWc); rows that
``scripts/probe_kernels.py`` confirmed with one-node sessions on the installed onnxruntime end in
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
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
]

_OPEN = None  # LAST of an open-ended kernel

#: ``platform.machine()`` names of the build this table (and graphmem/ort/mlas.py) describes.
TABLE_MACHINES = frozenset({"x86_64", "amd64", "x64"})


def host_problem(machine: str | None = None) -> str | None:
    """Why onnxruntime on this host (``machine``: ``platform.machine()`` when None) may pick other
    CPU kernels than graphmem's table, or None on x86-64. ARM64 builds register float16 kernels
    x86-64 has not (``MLAS_F16VEC_INTRINSICS_SUPPORTED`` blocks of cpu_execution_provider.cc:
    Relu, Conv, Gemm, MaxPool, …) and other MLAS quantized kernels (``ConvSymS8S8Dispatch``)."""
    name = (platform.machine() if machine is None else machine).lower()
    if name in TABLE_MACHINES:
        return None
    return (
        f"this host is {name or 'of unknown architecture'}: graphmem's CPU kernel table and MLAS rules are "
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


@functools.cache
def _table() -> tuple[dict[tuple[str, str], tuple[KernelRow, ...]], dict[tuple[str, str], dict[int, Formals]]]:
    rows: dict[tuple[str, str], list[KernelRow]] = {}
    domain, source = "", ""
    for line in _ROWS.strip().splitlines():
        if line.startswith("["):
            head, _, source = line.partition(" ")
            domain = normalize_domain(head[1:-1])
            continue
        fields = line.split()
        probed = fields.pop() if fields[-1] in ("probed", "partly") else ""
        op, span, *constraints = fields
        first, _, last = span.partition("-")
        types = {}
        for c in constraints:
            name, _, listed = c.partition("=")
            types[name] = _types(_GROUPS.get(listed, listed))
        row = KernelRow(domain=domain, op=op, first=int(first), last=int(last) if last else _OPEN,
                        types=types, source=source, probed=probed)
        rows.setdefault((domain, op), []).append(row)
    schemas: dict[tuple[str, str], dict[int, Formals]] = {}
    for line in _FORMALS.strip().splitlines():
        head, ins, outs = line.split(" | ")
        d, op, since = head.split()

        def parse(text: str) -> tuple[tuple[str | None, str], ...]:
            out = []
            for p in text.split():
                if p == ".":
                    continue
                option = p[-1] if p[-1] in "?*" else ""
                name = p[:-1] if option else p
                out.append((None if name == "-" else name, option))
            return tuple(out)

        schemas.setdefault((normalize_domain(d), op), {})[int(since)] = Formals(inputs=parse(ins), outputs=parse(outs))
    return {k: tuple(v) for k, v in rows.items()}, schemas


def cpu_kernel_rows(domain: str, op: str) -> tuple[KernelRow, ...]:
    """Every CPU kernel row of ``(domain, op)`` (empty: the CPU provider has no such kernel)."""
    return _table()[0].get((normalize_domain(domain), op), ())


def formals(domain: str, op: str, since_version: int) -> Formals | None:
    """The formal parameters of the newest schema of ``op`` not newer than ``since_version``."""
    versions = _table()[1].get((normalize_domain(domain), op), {})
    known = [v for v in versions if v <= since_version]
    return versions[max(known)] if known else None


def since_version(domain: str, op: str, opset: int) -> int | None:
    """The since-version of ``op``'s schema at ``opset`` among onnxruntime's schemas of ops that
    have a CPU kernel (None: none of them, so no CPU kernel either)."""
    versions = _table()[1].get((normalize_domain(domain), op), {})
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
    if any(m is None for m in misses):
        return None
    constraint, actual = misses[0]  # type: ignore[misc]
    return f"the CPU provider has no {op} kernel for {constraint}={type_name(actual)}"


# The table below is replaced by scripts/make_kernel_table.py; probed marks by scripts/probe_kernels.py.
# BEGIN GENERATED by scripts/make_kernel_table.py from onnxruntime 1.31.1 (CPU wheel); do not edit

#: Type lists that many rows share.
_GROUPS = {
    "$A": "float,double,float16,bfloat16,int8,uint8,int16,uint16,int32,uint32,int64,uint64,bool,string,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz,optional(bfloat16),optional(bool),optional(double),optional(float),optional(float16),optional(int16),optional(int32),optional(int64),optional(int8),optional(seq(bfloat16)),optional(seq(bool)),optional(seq(double)),optional(seq(float)),optional(seq(float16)),optional(seq(int16)),optional(seq(int32)),optional(seq(int64)),optional(seq(int8)),optional(seq(string)),optional(seq(uint16)),optional(seq(uint32)),optional(seq(uint64)),optional(seq(uint8)),optional(string),optional(uint16),optional(uint32),optional(uint64),optional(uint8),seq(float),seq(double),seq(float16),seq(bfloat16),seq(int8),seq(uint8),seq(int16),seq(uint16),seq(int32),seq(uint32),seq(int64),seq(uint64),seq(bool),seq(string),seq(float8e4m3fn),seq(float8e4m3fnuz),seq(float8e5m2),seq(float8e5m2fnuz)",
    "$B": "float,double,float16,bfloat16,int8,uint8,int16,uint16,int32,uint32,int64,uint64,bool,string,optional(bfloat16),optional(bool),optional(double),optional(float),optional(float16),optional(int16),optional(int32),optional(int64),optional(int8),optional(seq(bfloat16)),optional(seq(bool)),optional(seq(double)),optional(seq(float)),optional(seq(float16)),optional(seq(int16)),optional(seq(int32)),optional(seq(int64)),optional(seq(int8)),optional(seq(string)),optional(seq(uint16)),optional(seq(uint32)),optional(seq(uint64)),optional(seq(uint8)),optional(string),optional(uint16),optional(uint32),optional(uint64),optional(uint8),seq(float),seq(double),seq(float16),seq(bfloat16),seq(int8),seq(uint8),seq(int16),seq(uint16),seq(int32),seq(uint32),seq(int64),seq(uint64),seq(bool),seq(string)",
    "$C": "float,double,float16,bfloat16,int8,uint8,int16,uint16,int32,uint32,int64,uint64,bool,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz,seq(float),seq(double),seq(float16),seq(bfloat16),seq(int8),seq(uint8),seq(int16),seq(uint16),seq(int32),seq(uint32),seq(int64),seq(uint64),seq(bool),seq(float8e4m3fn),seq(float8e4m3fnuz),seq(float8e5m2),seq(float8e5m2fnuz)",
    "$D": "float,double,float16,bfloat16,int8,uint8,int16,uint16,int32,uint32,int64,uint64,bool,string,seq(float),seq(double),seq(float16),seq(bfloat16),seq(int8),seq(uint8),seq(int16),seq(uint16),seq(int32),seq(uint32),seq(int64),seq(uint64),seq(bool),seq(string)",
    "$E": "optional(bfloat16),optional(bool),optional(double),optional(float),optional(float16),optional(int16),optional(int32),optional(int64),optional(int8),optional(seq(bfloat16)),optional(seq(bool)),optional(seq(double)),optional(seq(float)),optional(seq(float16)),optional(seq(int16)),optional(seq(int32)),optional(seq(int64)),optional(seq(int8)),optional(seq(string)),optional(seq(uint16)),optional(seq(uint32)),optional(seq(uint64)),optional(seq(uint8)),optional(string),optional(uint16),optional(uint32),optional(uint64),optional(uint8)",
    "$F": "float,double,float16,bfloat16,int8,uint8,int16,uint16,int32,uint32,int64,uint64,bool,string,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz,float8e8m0,int2,int4,uint2,uint4",
    "$G": "float,double,float16,bfloat16,int8,uint8,int16,uint16,int32,uint32,int64,uint64,bool,string,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz,int2,int4,uint2,uint4",
    "$H": "float,double,float16,bfloat16,int8,uint8,int16,uint16,int32,uint32,int64,uint64,bool,string,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz,int4,uint4",
    "$I": "float,double,float16,bfloat16,int8,uint8,int16,uint16,int32,uint32,int64,uint64,bool,string,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz",
    "$J": "float,double,float16,bfloat16,int8,uint8,int16,uint16,int32,uint32,int64,uint64,bool,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz",
    "$K": "float,double,float16,bfloat16,int8,uint8,int16,uint16,int32,uint32,int64,uint64,bool,string",
    "$L": "seq(float),seq(double),seq(float16),seq(bfloat16),seq(int8),seq(uint8),seq(int16),seq(uint16),seq(int32),seq(uint32),seq(int64),seq(uint64),seq(bool),seq(string)",
    "$M": "float,double,float16,bfloat16,int8,uint8,int16,uint16,int32,uint32,int64,uint64,bool",
    "$N": "float,double,float16,int8,uint8,int16,uint16,int32,uint32,int64,uint64,bool,string",
    "$O": "float,double,float16,bfloat16,int8,uint8,int16,uint16,int32,uint32,int64,uint64",
    "$P": "float,double,int8,uint8,int16,uint16,int32,uint32,int64,uint64,bool,string",
    "$Q": "float,double,int8,uint8,int16,uint16,int32,uint32,int64,uint64,bool",
    "$R": "float,double,float16,int8,uint8,int16,uint16,int32,uint32,int64,uint64",
    "$S": "int8,uint8,int16,uint16,int32,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz,int4,uint4",
    "$T": "float,double,int8,uint8,int16,uint16,int32,uint32,int64,uint64",
    "$U": "int8,uint8,int16,uint16,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz,int4,uint4",
    "$V": "float,double,int8,uint8,int32,uint32,int64,uint64,bool",
    "$W": "float,double,float16,int8,uint8,int32,uint32,int64,uint64",
    "$X": "float,double,float16,bfloat16,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz",
    "$Y": "float,double,int8,uint8,int32,uint32,int64,string",
    "$Z": "int8,uint8,int16,uint16,int32,uint32,int64,uint64",
}

#: One kernel (or merged typed kernels) per line: OP FIRST-LAST CONSTRAINT=TYPES ... [probed|partly]
#: (LAST empty: open-ended, the kernel claims only FIRST exactly). A [DOMAIN] line starts the
#: rows registered in SOURCE.
_ROWS = """
[ai.onnx] onnxruntime/core/providers/cpu/cpu_execution_provider.cc (RegisterOnnxOperatorKernels)
Abs 6-12 T=$T probed
Abs 13- T=$T probed
Acos 7-21 T=float probed
Acos 22- T=float probed
Acosh 9-21 T=float probed
Acosh 22- T=float probed
Add 7-12 T=float,double,int32,uint32,int64,uint64 probed
Add 13-13 T=float,double,int32,uint32,int64,uint64 probed
Add 14- T=$T probed
Affine 1- T=float probed
AffineGrid 20- T1=float,double T2=int64 probed
And 7- T=bool T1=bool probed
ArgMax 1-10 T=float,double,int8,uint8,int32,int64 probed
ArgMax 11-12 T=float,double,int8,uint8,int32,int64 probed
ArgMax 13- T=float,double,int8,uint8,int32,int64 probed
ArgMin 1-10 T=float,double,int8,uint8,int32,int64 probed
ArgMin 11-12 T=float,double,int8,uint8,int32,int64 probed
ArgMin 13- T=float,double,int8,uint8,int32,int64 probed
Asin 7-21 T=float probed
Asin 22- T=float probed
Asinh 9-21 T=float probed
Asinh 22- T=float probed
Atan 7-21 T=float probed
Atan 22- T=float probed
Atanh 9-21 T=float probed
Atanh 22- T=float probed
Attention 23-23 T1=float T2=float U=float,bool probed
Attention 23-23 T1=float16 T2=float16 U=float16,bool probed
Attention 24- T1=float T2=float U=float,bool probed
Attention 24- T1=float16 T2=float16 U=float16,bool probed
AveragePool 7-9 T=float probed
AveragePool 10-10 T=float probed
AveragePool 11-18 T=float probed
AveragePool 19-21 T=float probed
AveragePool 22- T=float probed
BatchNormalization 7-8 T=float,double probed
BatchNormalization 9-13 T=float,double probed
BatchNormalization 14-14 T=float U=float probed
BatchNormalization 14-14 T=double U=double probed
BatchNormalization 15- T=float T1=float T2=float probed
BatchNormalization 15- T=double T1=double T2=double probed
BitCast 26- T1=$O T2=$O partly
BitShift 11- T=uint8,uint32,uint64
BitwiseAnd 18- T=$Z probed
BitwiseNot 18- T=$Z probed
BitwiseOr 18- T=$Z probed
BitwiseXor 18- T=$Z probed
BlackmanWindow 17- T1=int32,int64 T2=$T probed
Cast 6-12 T1=$G T2=$G partly
Cast 13-18 T1=$G T2=$G probed
Cast 19-20 T1=$G T2=$G probed
Cast 21-22 T1=$G T2=$G probed
Cast 23-23 T1=$G T2=$G probed
Cast 24-24 T1=$F T2=$F probed
Cast 25- T1=$F T2=$F probed
Ceil 6-12 T=float,double probed
Ceil 13- T=float,double probed
Celu 12- T=float probed
Clip 6-10 T=float probed
Clip 11-11 T=float probed
Clip 12-12 T=$W probed
Clip 13- T=$W probed
Col2Im 18- T=float probed
Compress 9-10 T=$K T1=bool partly
Compress 11- T=$K T1=bool partly
Concat 4-10 T=$K partly
Concat 11-12 T=$K partly
Concat 13- T=$K probed
ConcatFromSequence 11- S=$L
ConstantOfShape 9-19 T1=int64 T2=$M probed
ConstantOfShape 20-20 T1=int64 T2=$J probed
ConstantOfShape 21-22 T1=int64 T2=$J probed
ConstantOfShape 23-23 T1=int64 T2=$J probed
ConstantOfShape 24-24 T1=int64 T2=$J probed
ConstantOfShape 25- T1=int64 T2=$J probed
Conv 1-10 T=float probed
Conv 11-21 T=float probed
Conv 22- T=float probed
ConvInteger 10- T1=int8,uint8 T2=int8,uint8 T3=int32 probed
ConvTranspose 1-10 T=float probed
ConvTranspose 11-21 T=float probed
ConvTranspose 22- T=float probed
Cos 7-21 T=float,double probed
Cos 22- T=float,double probed
Cosh 9-21 T=float probed
Cosh 22- T=float probed
Crop 1- T=float probed
CumProd 26- T=float,double,int32,uint32,int64,uint64 T2=int32,int64 probed
CumSum 11-13 T=float,double,int32,int64 T2=int32,int64 probed
CumSum 14- T=float,double,int32,int64 T2=int32,int64 probed
DeformConv 19-21 T=float,double probed
DeformConv 22- T=float,double probed
DepthToSpace 1-10 T=float,double probed
DepthToSpace 11-12 T=float,double,int8,uint8 probed
DepthToSpace 13- T=float,double,int8,uint8 probed
DequantizeLinear 10-12 T=int8,uint8,int32 probed
DequantizeLinear 13-18 T=int8,uint8,int32 probed
DequantizeLinear 19-20 T1=int8,uint8,int32,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz T2=float,float16 probed
DequantizeLinear 21-22 T1=$S T2=float,float16 probed
DequantizeLinear 23-23 T1=$S T2=float,float16 T3=float,float16 probed
DequantizeLinear 24-24 T1=$S T2=float,float16 T3=float,float16 probed
DequantizeLinear 25- T1=int8,uint8,int16,uint16,int32,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz,int2,int4,uint2,uint4 T2=float,float16 T3=float,float16 probed
Det 11-21 T=float probed
Det 22- T=float probed
DFT 17-19 T1=float,double T2=int32,int64 probed
DFT 20- T1=float,double T2=int32,int64 probed
Div 7-12 T=float,double,int32,uint32,int64,uint64 probed
Div 13-13 T=float,double,int32,uint32,int64,uint64 probed
Div 14- T=$T probed
Dropout 7-9 T=float,double,float16 probed
Dropout 10-11 T=float,double,float16 T1=bool probed
Dropout 12-12 T=float,double T1=float,double T2=bool probed
Dropout 13-21 T=float,double T1=float,double T2=bool probed
Dropout 22- T=float,double T1=float,double T2=bool probed
DynamicQuantizeLinear 11- T2=uint8
DynamicSlice 1- T=$K Tind=int32,int64 partly
Einsum 12- T=float,double,int32,int64 probed
Elu 6-21 T=float probed
Elu 22- T=float probed
Equal 7-10 T=float,double,int32,int64,bool T1=bool partly
Equal 11-12 T=$Q T1=bool probed
Equal 13-18 T=$Q T1=bool probed
Equal 19- T=$P T1=bool probed
Erf 9-12 T=float probed
Erf 13- T=float probed
Exp 6-12 T=float,double probed
Exp 13- T=float,double probed
Expand 8-12 T=$N probed
Expand 13- T=$N probed
EyeLike 9-21 T1=float,double,int32,int64,uint64 T2=float,double,int32,int64,uint64 probed
EyeLike 22- T1=float,double,int32,int64,uint64 T2=float,double,int32,int64,uint64 probed
Flatten 1-8 T=$K partly
Flatten 9-10 T=$K partly
Flatten 11-12 T=$K partly
Flatten 13-20 T=$K probed
Flatten 21-22 T=$K probed
Flatten 23-23 T=$K probed
Flatten 24-24 T=$K probed
Flatten 25- T=$K probed
Floor 6-12 T=float,double probed
Floor 13- T=float,double probed
Gather 1-10 T=$K Tind=int32,int64 partly
Gather 11-12 T=$K Tind=int32,int64 partly
Gather 13- T=$K Tind=int32,int64 probed
GatherElements 11-12 T=$K Tind=int32,int64 partly
GatherElements 13- T=$K Tind=int32,int64 probed
GatherND 11-11 T=$K indices=int64 partly
GatherND 12-12 T=$K indices=int64 partly
GatherND 13- T=$K indices=int64 probed
Gelu 20- T=float probed
Gemm 7-8 T=float,double probed
Gemm 9-10 T=float,double probed
Gemm 11-12 T=float,double probed
Gemm 13- T=float,double probed
GlobalAveragePool 1-21 T=float probed
GlobalAveragePool 22- T=float probed
GlobalLpPool 2- T=float probed
GlobalMaxPool 1-21 T=float probed
GlobalMaxPool 22- T=float probed
Greater 7-8 T=float,double T1=bool probed
Greater 9-12 T=$T T1=bool probed
Greater 13- T=$T T1=bool probed
GreaterOrEqual 12-15 T=$T T1=bool probed
GreaterOrEqual 16- T=$T T1=bool probed
GridSample 16-19 T1=float T2=float probed
GridSample 20-21 T1=float T2=float probed
GridSample 20-21 T1=double T2=double probed
GridSample 22- T1=float T2=float probed
GridSample 22- T1=double T2=double probed
GRU 7-13 T=float,double T1=int32
GRU 14-21 T=float,double T1=int32
GRU 22- T=float,double T1=int32
HammingWindow 17- T1=int32,int64 T2=$T probed
HannWindow 17- T1=int32,int64 T2=$T probed
Hardmax 1-10 T=float probed
Hardmax 11-12 T=float probed
Hardmax 13- T=float probed
HardSigmoid 6-21 T=float probed
HardSigmoid 22- T=float probed
Identity 1-12 T=$K partly
Identity 13-13 T=$K probed
Identity 14-15 V=$D probed
Identity 16-18 V=$B probed
Identity 19-20 V=$A probed
Identity 21-22 V=$A probed
Identity 23-23 V=$A probed
Identity 24-24 V=$A probed
Identity 25- V=$A probed
If 1-10 B=bool V=$K
If 11-12 B=bool V=$K
If 13-15 B=bool V=$D
If 16-18 B=bool V=$B
If 19-20 B=bool V=$A
If 21-22 B=bool V=$A
If 23-23 B=bool V=$A
If 24-24 B=bool V=$A
If 25- B=bool V=$A
ImageScaler 1- T=float
InstanceNormalization 6-21 T=float probed
InstanceNormalization 22- T=float probed
IsInf 10-19 T1=float,double T2=bool probed
IsInf 20- T1=$X T2=bool probed
IsNaN 9-12 T1=float,double,float16 T2=bool probed
IsNaN 13-19 T1=float,double,float16 T2=bool probed
IsNaN 20- T1=$X T2=bool probed
LayerNormalization 1-16 T=float U=float V=float probed
LayerNormalization 1-16 T=double U=float V=double probed
LayerNormalization 1-16 T=float16 U=float V=float16 probed
LayerNormalization 1-16 T=bfloat16 U=float V=bfloat16 probed
LayerNormalization 17- T=float,double,float16,bfloat16 U=float probed
LeakyRelu 6-15 T=float probed
LeakyRelu 16- T=float probed
Less 7-8 T=float,double T1=bool probed
Less 9-12 T=$T T1=bool probed
Less 13- T=$T T1=bool probed
LessOrEqual 12-15 T=$T T1=bool probed
LessOrEqual 16- T=$T T1=bool probed
Log 6-12 T=float,double probed
Log 13- T=float,double probed
LogSoftmax 1-10 T=float,double probed
LogSoftmax 11-12 T=float,double probed
LogSoftmax 13- T=float,double probed
Loop 1-10 B=bool I=int64 V=$K
Loop 11-12 B=bool I=int64 V=$K
Loop 13-15 B=bool I=int64 V=$D
Loop 16-18 B=bool I=int64 V=$B
Loop 19-20 B=bool I=int64 V=$A
Loop 21-22 B=bool I=int64 V=$A
Loop 23-23 B=bool I=int64 V=$A
Loop 24-24 B=bool I=int64 V=$A
Loop 25- B=bool I=int64 V=$A
LpNormalization 1-21 T=float,double probed
LpNormalization 22- T=float,double probed
LpPool 2-10 T=float probed
LpPool 11-17 T=float probed
LpPool 18-21 T=float probed
LpPool 22- T=float probed
LRN 1-12 T=float probed
LRN 13- T=float probed
LSTM 7-13 T=float,double T1=int32
LSTM 14-21 T=float,double T1=int32
LSTM 22- T=float,double T1=int32
MatMul 1-8 T=float,double probed
MatMul 9-12 T=float,double,int32,uint32,int64,uint64 probed
MatMul 13- T=float,double,int32,uint32,int64,uint64 probed
MatMulInteger 10- T1=int8,uint8 T2=int8,uint8 T3=int32 probed
Max 6-7 T=float probed
Max 8-11 T=float,double probed
Max 12-12 T=$W probed
Max 13- T=$W probed
MaxPool 1-7 T=float probed
MaxPool 8-11 I=int64 T=float,double probed
MaxPool 12-21 I=int64 T=float,double,int8,uint8 probed
MaxPool 22- I=int64 T=float,double,int8,uint8 probed
MaxRoiPool 1- T=float
MaxUnpool 9-10 T1=float T2=int64 probed
MaxUnpool 11-21 T1=float T2=int64 probed
MaxUnpool 22- T1=float T2=int64 probed
Mean 6-7 T=float probed
Mean 8-12 T=float probed
Mean 13- T=float probed
MeanVarianceNormalization 1-8 T=float probed
MeanVarianceNormalization 9-12 T=float probed
MeanVarianceNormalization 13- T=float probed
MelWeightMatrix 17- T1=int32,int64 T2=float T3=$T probed
MemcpyFromHost 1- T=$C probed
MemcpyToHost 1- T=$C probed
Min 6-7 T=float probed
Min 8-11 T=float,double probed
Min 12-12 T=$W probed
Min 13- T=$W probed
Mod 10-12 T=$R probed
Mod 13- T=$R probed
Mul 7-12 T=float,double,int32,uint32,int64,uint64 probed
Mul 13-13 T=float,double,int32,uint32,int64,uint64 probed
Mul 14- T=$T probed
Multinomial 7- T1=float T2=int32,int64 probed
Neg 6-12 T=float,double,int8,int16,int32,int64 probed
Neg 13- T=float,double,int8,int16,int32,int64 probed
NonMaxSuppression 10-10
NonMaxSuppression 11-
NonZero 9-12 T=float,uint8,int32,int64,bool probed
NonZero 13- T=float,uint8,int32,int64,bool probed
Not 1- T=bool probed
OneHot 9-10 T1=float,int64 T2=int64 T3=int64,string probed
OneHot 9-10 T1=float,int32,int64 T2=float T3=float probed
OneHot 9-10 T1=int64 T2=float T3=int32 probed
OneHot 9-10 T1=int64 T2=int32,int64 T3=float probed
OneHot 9-10 T1=int32 T2=int32 T3=float probed
OneHot 11- T1=float,int64 T2=int64 T3=int64,string probed
OneHot 11- T1=float,int32,int64 T2=float T3=float probed
OneHot 11- T1=int64 T2=float T3=int32 probed
OneHot 11- T1=int64 T2=int32,int64 T3=float probed
OneHot 11- T1=int32 T2=int32 T3=float probed
Optional 15- O=$E V=$D partly
OptionalGetElement 15-17 O=$E V=$D
OptionalGetElement 18- O=$B V=$D partly
OptionalHasElement 15-17 B=bool O=$E
OptionalHasElement 18- B=bool O=$B partly
Or 7- T=bool T1=bool probed
Pad 2-10 T=float,double probed
Pad 11-12 T=float,double,int8,uint8,int32,uint32,int64,uint64 probed
Pad 13-17 T=$V probed
Pad 18-18 T=$V probed
Pad 19-20 T=$V probed
Pad 21-22 T=$V probed
Pad 23-23 T=$V probed
Pad 24-24 T=$V probed
Pad 25- T=$V probed
ParametricSoftplus 1- T=float
Pow 7-11 T=float,double probed
Pow 12-12 T=float,double,int32,int64 T1=float,double,int32,int64 probed
Pow 13-14 T=float,double,int32,int64 T1=float,double,int32,int64 probed
Pow 15- T=float,double,int32,int64 T1=float,double,int32,int64 probed
PRelu 7-8 T=float probed
PRelu 9-15 T=float probed
PRelu 16- T=float probed
QLinearConv 10- T1=uint8 T2=int8,uint8 T3=uint8 T4=int32 probed
QLinearConv 10- T1=int8 T2=int8 T3=int8 T4=int32 probed
QLinearMatMul 10-20 T1=uint8 T2=int8,uint8 T3=uint8 probed
QLinearMatMul 10-20 T1=int8 T2=int8 T3=int8 probed
QLinearMatMul 21- T1=uint8 T2=int8,uint8 T3=uint8 TS=float probed
QLinearMatMul 21- T1=int8 T2=int8 T3=int8 TS=float probed
QuantizeLinear 10-12 T1=float T2=int8,uint8 probed
QuantizeLinear 13-18 T1=float T2=int8,uint8 probed
QuantizeLinear 19-20 T1=float,float16 T2=int8,uint8,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz probed
QuantizeLinear 21-22 T1=float,float16 T2=$U probed
QuantizeLinear 23-23 T1=float,float16 T2=float,float16 T3=$U probed
QuantizeLinear 24-24 T1=float,float16 T2=float,float16 T3=$U probed
QuantizeLinear 25- T1=float,float16 T2=float,float16 T3=int8,uint8,int16,uint16,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz,int2,int4,uint2,uint4 probed
RandomNormal 1- T=float,double
RandomNormalLike 1- T1=$K T2=float,double partly
RandomUniform 1- T=float,double
RandomUniformLike 1- T1=$K T2=float,double partly
Range 11-26 T=float,double,int16,int32,int64 probed
Range 27- T=float,double,int16,int32,int64
Reciprocal 6-12 T=float,double probed
Reciprocal 13- T=float,double probed
ReduceL1 1-10 T=float,double,int32,int64 probed
ReduceL1 11-12 T=float,double,int32,int64 probed
ReduceL1 13-17 T=float,double,int32,int64 probed
ReduceL1 18- T=float,double,int32,int64 probed
ReduceL2 1-10 T=float,double,int32,int64 probed
ReduceL2 11-12 T=float,double,int32,int64 probed
ReduceL2 13-17 T=float,double,int32,int64 probed
ReduceL2 18- T=float,double,int32,int64 probed
ReduceLogSum 1-10 T=float,double,int32,int64 probed
ReduceLogSum 11-12 T=float,double,int32,int64 probed
ReduceLogSum 13-17 T=float,double,int32,int64 probed
ReduceLogSum 18- T=float,double,int32,int64 probed
ReduceLogSumExp 1-10 T=float,double,int32,int64 probed
ReduceLogSumExp 11-12 T=float,double,int32,int64 probed
ReduceLogSumExp 13-17 T=float,double,int32,int64 probed
ReduceLogSumExp 18- T=float,double,int32,int64 probed
ReduceMax 1-10 T=float,double,int32,int64 probed
ReduceMax 11-11 T=float,double,int32,int64 probed
ReduceMax 12-12 T=float,double,int8,uint8,int32,int64 probed
ReduceMax 13-17 T=float,double,int8,uint8,int32,int64 probed
ReduceMax 18-19 T=float,double,int8,uint8,int32,int64 probed
ReduceMax 20- T=float,double,int8,uint8,int32,int64,bool probed
ReduceMean 1-10 T=float,double,int32,int64 probed
ReduceMean 11-12 T=float,double,int32,int64 probed
ReduceMean 13-17 T=float,double,int32,int64 probed
ReduceMean 18- T=float,double,int32,int64 probed
ReduceMin 1-10 T=float,double,int32,int64 probed
ReduceMin 11-11 T=float,double,int32,int64 probed
ReduceMin 12-12 T=float,double,int8,uint8,int32,int64 probed
ReduceMin 13-17 T=float,double,int8,uint8,int32,int64 probed
ReduceMin 18-19 T=float,double,int8,uint8,int32,int64 probed
ReduceMin 20- T=float,double,int8,uint8,int32,int64,bool probed
ReduceProd 1-10 T=float,double,int32,int64 probed
ReduceProd 11-12 T=float,double,int32,int64 probed
ReduceProd 13-17 T=float,double,int32,int64 probed
ReduceProd 18- T=float,double,int32,int64 probed
ReduceSum 1-10 T=float,double,int32,int64 probed
ReduceSum 11-12 T=float,double,int32,int64 probed
ReduceSum 13- T=float,double,int32,int64 probed
ReduceSumSquare 1-10 T=float,double,int32,int64 probed
ReduceSumSquare 11-12 T=float,double,int32,int64 probed
ReduceSumSquare 13-17 T=float,double,int32,int64 probed
ReduceSumSquare 18- T=float,double,int32,int64 probed
RegexFullMatch 20- T1=string T2=bool
Relu 6-12 T=float,double probed
Relu 13-13 T=float,double probed
Relu 14- T=float,double,int8,int32 probed
Reshape 1-4 T=$K
Reshape 5-12 T=$K shape=int64 partly
Reshape 13-13 T=$K shape=int64 probed
Reshape 14-18 T=$K shape=int64 probed
Reshape 19-20 T=$K shape=int64 probed
Reshape 21-22 T=$I shape=int64 probed
Reshape 23-23 T=$I shape=int64 probed
Reshape 24-24 T=$I shape=int64 probed
Reshape 25- T=$I shape=int64 probed
Resize 10-10 T=float,int8,uint8,int32 probed
Resize 11-12 T1=float,int8,uint8,int32
Resize 13-17 T1=float,int8,uint8,int32
Resize 18-18 T1=float,int8,uint8,int32
Resize 19- T1=float,int8,uint8,int32
ReverseSequence 10- T=$K partly
RMSNormalization 23- T=float V=float probed
RMSNormalization 23- T=double V=double probed
RMSNormalization 23- T=float16 V=float16 probed
RNN 7-13 T=float T1=int32
RNN 14-21 T=float T1=int32
RNN 22- T=float T1=int32
RoiAlign 10-15 T1=float,double T2=int64 probed
RoiAlign 16- T1=float,double T2=int64 probed
RotaryEmbedding 23- M=int64 T=float,float16 probed
Round 11-21 T=float,double,float16 probed
Round 22- T=float,double,float16 probed
Scale 1- T=float probed
ScaledTanh 1- T=float
Scan 8-8 I=int64 V=$K
Scan 9-10 V=$K
Scan 11-15 V=$K
Scan 16-18 V=$K
Scan 19-20 V=$I
Scan 21-22 V=$I
Scan 23-23 V=$I
Scan 24-24 V=$I
Scan 25- V=$I
Scatter 9-10 T=$K Tind=int32,int64 partly
ScatterElements 11-12 T=$K Tind=int32,int64 partly
ScatterElements 13-15 T=$K Tind=int32,int64 probed
ScatterElements 16-17 T=$K Tind=int32,int64 probed
ScatterElements 18- T=$K Tind=int32,int64 probed
ScatterND 11-12 T=$K partly
ScatterND 13-15 T=$K probed
ScatterND 16-17 T=$K probed
ScatterND 18- T=$K probed
Selu 6-21 T=float probed
Selu 22- T=float probed
SequenceAt 11- I=int32,int64 S=$L T=$K
SequenceConstruct 11- S=$L T=$K partly
SequenceEmpty 11- S=$L
SequenceErase 11- I=int32,int64 S=$L
SequenceInsert 11- I=int32,int64 S=$L
SequenceLength 11- I=int64 S=$L
Shape 1-12 T=$K T1=int64 partly
Shape 13-14 T=$K T1=int64 probed
Shape 15-18 T=$K T1=int64 probed
Shape 19-20 T=$K T1=int64 probed
Shape 21-22 T=$I T1=int64 probed
Shape 23-23 T=$I T1=int64 probed
Shape 24-24 T=$I T1=int64 probed
Shape 25- T=$I T1=int64 probed
Shrink 9- T=$O partly
Sigmoid 6-12 T=float,double probed
Sigmoid 13- T=float,double probed
Sign 9-12 T=$O partly
Sign 13- T=$O probed
SimplifiedLayerNormalization 1- T=float U=float V=float probed
SimplifiedLayerNormalization 1- T=double U=float V=double probed
SimplifiedLayerNormalization 1- T=float16 U=float V=float16 probed
SimplifiedLayerNormalization 1- T=bfloat16 U=float V=bfloat16 probed
Sin 7-21 T=float,double probed
Sin 22- T=float,double probed
Sinh 9-21 T=float probed
Sinh 22- T=float probed
Size 1-12 T=$P T1=int64 probed
Size 13-18 T=$P T1=int64 probed
Size 19-20 T=$P T1=int64 probed
Size 21-22 T=$P T1=int64 probed
Size 23-23 T=$P T1=int64 probed
Size 24-24 T=$P T1=int64 probed
Size 25- T=$P T1=int64 probed
Slice 1-9 T=$K partly
Slice 10-10 T=$K Tind=int32,int64 partly
Slice 11-12 T=$K Tind=int32,int64 partly
Slice 13- T=$K Tind=int32,int64 probed
Softmax 1-10 T=float,double probed
Softmax 11-12 T=float,double probed
Softmax 13- T=float,double probed
Softplus 1-21 T=float probed
Softplus 22- T=float probed
Softsign 1-21 T=float probed
Softsign 22- T=float probed
SpaceToDepth 1-12 T=float,double,int8,uint8 probed
SpaceToDepth 13- T=float,double,int8,uint8 probed
Split 2-10 T=$K partly
Split 11-12 T=$K partly
Split 13-17 T=$K probed
Split 18- T=$K probed
SplitToSequence 11-23 I=int32,int64 S=$L T=float,double,float16,int32,int64,bool,string probed
SplitToSequence 24- I=int32,int64 S=$L T=float,double,float16,int32,int64,bool,string probed
Sqrt 6-12 T=float,double probed
Sqrt 13- T=float,double probed
Squeeze 1-10 T=$K partly
Squeeze 11-12 T=$K partly
Squeeze 13-20 T=$K probed
Squeeze 21-22 T=$K probed
Squeeze 23-23 T=$K probed
Squeeze 24-24 T=$K probed
Squeeze 25- T=$K probed
STFT 17- T1=float,double T2=int32,int64 probed
StringConcat 20- T=string
StringNormalizer 10- X=string
StringSplit 20- T1=string T2=string T3=int64
Sub 7-12 T=float,double,int32,uint32,int64,uint64 probed
Sub 13-13 T=float,double,int32,uint32,int64,uint64 probed
Sub 14- T=$T probed
Sum 6-7 T=float,double probed
Sum 8-12 T=float,double probed
Sum 13- T=float,double probed
Tan 7-21 T=float probed
Tan 22- T=float probed
Tanh 6-12 T=float,double probed
Tanh 13- T=float,double probed
TensorScatter 24- T=$M probed
TfIdfVectorizer 9- T=int32,int64,string T1=float
ThresholdedRelu 1-9 T=float probed
ThresholdedRelu 10-21 T=float probed
ThresholdedRelu 22- T=float probed
Tile 6-12 T=$P T1=int64 probed
Tile 13- T=$P T1=int64 probed
TopK 1-9 I=int64 T=float,double probed
TopK 10-10 I=int64 T=float,double probed
TopK 11-23 I=int64 T=float,double,int8,uint8,int16,int32,int64 probed
TopK 24- I=int64 T=float,double,int8,uint8,int16,int32,int64 probed
Transpose 1-12 T=$K partly
Transpose 13-20 T=$K probed
Transpose 21-22 T=$H probed
Transpose 23-23 T=$H probed
Transpose 24-24 T=$H probed
Transpose 25- T=$G probed
Trilu 14- T=float,double,int32,int64,bool probed
Unique 11- T=float,double,int8,int64,string probed
Unsqueeze 1-10 T=$K partly
Unsqueeze 11-12 T=$K partly
Unsqueeze 13-20 T=$K probed
Unsqueeze 21-22 T=$K probed
Unsqueeze 23-23 T=$K probed
Unsqueeze 24-24 T=$K probed
Unsqueeze 25- T=$K probed
Upsample 7-8 T=float,int8,uint8,int32 probed
Upsample 9-9 T=float,int8,uint8,int32 probed
Where 9-15 T=$Y
Where 16- T=$Y
Xor 7- T=bool T1=bool probed
[ai.onnx.ml] onnxruntime/core/providers/cpu/cpu_execution_provider.cc (RegisterOnnxMLOperatorKernels)
ArrayFeatureExtractor 1- T=float,double,int32,int64,string probed
Binarizer 1- T=float probed
CastMap 1- T1=map(int64,float),map(int64,string) T2=float,int64,string
CategoryMapper 1- T1=int64,string T2=int64,string
DictVectorizer 1- T1=map(string,int64) T2=int64
DictVectorizer 1- T1=map(int64,float),map(string,float) T2=float
DictVectorizer 1- T1=map(int64,double),map(string,double) T2=double
DictVectorizer 1- T1=map(int64,string) T2=string
FeatureVectorizer 1- T1=float,double,int32,int64
Imputer 1- T=float,int64
LabelEncoder 1-1 T1=int64,string T2=int64,string
LabelEncoder 2-3 T1=float,int64,string T2=float,int64,string
LabelEncoder 4- T1=float T2=float,int64,string
LabelEncoder 4- T1=int64,string T2=float
LabelEncoder 4- T1=double,int64 T2=double,int64,string
LabelEncoder 4- T1=string T2=double,int16,int64,string
LinearClassifier 1- T1=float,double,int32,int64 T2=int64,string
LinearRegressor 1- T=float
Normalizer 1- T=float,double,int32,int64 probed
OneHotEncoder 1- T=float,double,int64,string
Scaler 1- T=float,double,int32,int64
SVMClassifier 1- T1=float,double,int32,int64 T2=int64,string
SVMRegressor 1- T=float
TreeEnsemble 5- T=float,double
TreeEnsembleClassifier 1-2 T1=float,double,int32,int64 T2=int64,string
TreeEnsembleClassifier 3- T1=float,double,int32,int64 T2=int64,string
TreeEnsembleRegressor 1-2 T=float,double
TreeEnsembleRegressor 3- T=float,double
ZipMap 1- T=seq(map(int64,float)),seq(map(string,float))
[com.microsoft] onnxruntime/contrib_ops/cpu/cpu_contrib_kernels.cc (RegisterCpuContribKernels)
Attention 1- T=float probed
AttnLSTM 1- T=float,double T1=int32
BeamSearch 1- T=float
BiasGelu 1- T=float probed
BifurcationDetector 1- T=int64 probed
BranchwiseRMSNorm 1- M=float,float16,bfloat16 T=float,float16,bfloat16 probed
CausalConvWithState 1- T=float probed
CDist 1- T=float,double probed
ConvTransposeWithDynamicPads 1- T=float probed
CropAndResize 1- T1=float T2=int32 probed
DecoderMaskedMultiHeadAttention 1- T=float probed
DequantizeLinear 1- T1=int8,uint8,int16,uint16,int32,int4,uint4 T2=float probed
DynamicQuantizeLSTM 1- T=float T1=int32 T2=int8,uint8
DynamicQuantizeMatMul 1- T1=float T2=int8,uint8 probed
DynamicTimeWarping 1- F=float I=int32 probed
EmbedLayerNormalization 1- T=float
EngramGate 1- T=float,float16 probed
ExpandDims 1- T=$K axis=int32 partly
FastGelu 1- T=float probed
FusedConv 1- T=float probed
FusedGemm 1- T=float
FusedMatMul 1- T=float,double probed
GatedAdd 1- T=float,float16 probed
GatedRMSNorm 1- T=float,float16 probed
GatherBlockQuantized 1- T1=uint8,float4e2m1,float8e4m3fn,float8e4m3fnuz,float8e5m2,float8e5m2fnuz,int4,uint4 T2=float,float16 Tind=int32,int64 probed
GatherND 1- T=$K Tind=int32,int64 partly
Gelu 1- T=float probed
GreedySearch 1- T=float
GridSample 1- T1=float T2=float probed
GroupQueryAttention 1- M=int32 T=float T_CACHE=float,int8,uint8 T_KV_SCALE=float probed
GroupQueryAttention 1- M=int32 T=float16 T_CACHE=float16,int8,uint8 T_KV_SCALE=float probed
HyperConnectionPostMix 1- M=float,float16,bfloat16 T=float,float16,bfloat16 probed
HyperConnectionPreMix 1- M=float,float16,bfloat16 T=float,float16,bfloat16 probed
Inverse 1- T=float,double,float16 probed
LinearAttention 1- T=float probed
LinearAttentionGate 1- T=float,float16 TF=float probed
MatMulBnb4 1- T1=float T2=uint8 probed
MatMulFpQ4 1- T1=float T2=uint8 T3=int64 probed
MatMulInteger16 1- T1=int16 T2=int16 T3=int32
MatMulIntegerToFloat 1- T1=uint8 T2=int8,uint8 T3=float probed
MatMulIntegerToFloat 1- T1=int8 T2=int8 T3=float probed
MatMulNBits 1- T1=float T2=uint8 T3=float,uint8 T4=int32
MatMulNBits 1- T1=float16 T2=uint8 T3=float16,uint8 T4=int32
MaxpoolWithMask 1- T=float
MoE 1- T=float probed
MRotaryEmbedding 1- M=int64 T=float,float16 probed
MultiHeadAttention 1- T=float probed
MurmurHash3 1- T1=float,double,int32,uint32,int64,uint64,string T2=int32,uint32 probed
NGramHashMapping 1- M=int32,int64
NGramRepeatBlock 1- T=float Tid=int64 probed
NhwcMaxPool 1- T=int8,uint8 probed
Pad 1- T=float probed
QAttention 1- T1=uint8 T2=int8,uint8 T3=float T4=int32 probed
QEmbedLayerNormalization 1- T=float
QGemm 1- T=float TA=int8 TB=int8 TC=int32 TY=float,int8 TYZ=int8 probed
QGemm 1- T=float TA=uint8 TB=int8,uint8 TC=int32 TY=float,uint8 TYZ=uint8 probed
QLinearAdd 1- T=int8,uint8 probed
QLinearAveragePool 1-
QLinearConcat 1-
QLinearConv 1- T1=uint8 T2=int8,uint8 T3=uint8 T4=int32 probed
QLinearConv 1- T1=int8 T2=int8 T3=int8 T4=int32 probed
QLinearGlobalAveragePool 1-
QLinearLeakyRelu 1- T=int8,uint8 probed
QLinearMul 1- T=int8,uint8 probed
QLinearSigmoid 1- T=int8,uint8 probed
QLinearSoftmax 1- T=int8,uint8 probed
QLinearWhere 1- T=int8,uint8
QMoE 1- T=float16 T1=uint8 T2=float16 probed
QMoE 1- T=float T1=uint8 T2=float probed
QuantizeLinear 1- T1=float T2=int8,uint8,int16,uint16,int4,uint4 probed
QuickGelu 1- T=float probed
Range 1- T=float,double,int16,int32,int64 probed
RotaryEmbedding 1- M=int64 T=float,float16 probed
SampleOp 1- T=float probed
Sampling 1- T=float
ScaledSiLU 1- M=float,float16,bfloat16 T=float,float16,bfloat16 probed
SkipLayerNormalization 1- T=float,double,float16,bfloat16 partly
SkipSimplifiedLayerNormalization 1- T=float,double,float16,bfloat16 partly
SparseAttention 1- M=int32 T=float,float16 probed
SparseToDenseMatMul 1- T=sparse_double,sparse_float,sparse_int32,sparse_int64,sparse_uint32,sparse_uint64 T1=float,double,int32,uint32,int64,uint64
Tokenizer 1- T=string
TransposeMatMul 1- T=float probed
Trilu 1- T=float,double,int64 probed
UnfoldTensor 1- T=$K probed
Unique 1- T=float probed
VarlenNGramHashMapping 1- M=int32,int64 S=int32
WhisperBeamSearch 1- T=float
WordConvEmbedding 1- T=int32 T1=float probed
[com.microsoft.nchwc] onnxruntime/contrib_ops/cpu/cpu_contrib_kernels.cc (RegisterNchwcKernels)
AveragePool 1- T=float
Conv 1- T=float probed
GlobalAveragePool 1- T=float probed
GlobalMaxPool 1- T=float probed
MaxPool 1- T=float
ReorderInput 1- T=float probed
ReorderOutput 1- T=float
Upsample 1- T=float
"""

#: Formal inputs and outputs of every schema version of those ops: DOMAIN OP SINCE | INPUTS | OUTPUTS
#: (each a type parameter, '-' for a fixed type; '?' optional, '*' variadic).
_FORMALS = """
ai.onnx Abs 1 | T | T
ai.onnx Abs 6 | T | T
ai.onnx Abs 13 | T | T
ai.onnx Acos 7 | T | T
ai.onnx Acos 22 | T | T
ai.onnx Acosh 9 | T | T
ai.onnx Acosh 22 | T | T
ai.onnx Add 1 | T T | T
ai.onnx Add 6 | T T | T
ai.onnx Add 7 | T T | T
ai.onnx Add 13 | T T | T
ai.onnx Add 14 | T T | T
ai.onnx Affine 1 | T | T
ai.onnx Affine 10 | T | T
ai.onnx AffineGrid 20 | T1 T2 | T1
ai.onnx And 1 | T T | T1
ai.onnx And 7 | T T | T1
ai.onnx ArgMax 1 | T | -
ai.onnx ArgMax 11 | T | -
ai.onnx ArgMax 12 | T | -
ai.onnx ArgMax 13 | T | -
ai.onnx ArgMin 1 | T | -
ai.onnx ArgMin 11 | T | -
ai.onnx ArgMin 12 | T | -
ai.onnx ArgMin 13 | T | -
ai.onnx Asin 7 | T | T
ai.onnx Asin 22 | T | T
ai.onnx Asinh 9 | T | T
ai.onnx Asinh 22 | T | T
ai.onnx Atan 7 | T | T
ai.onnx Atan 22 | T | T
ai.onnx Atanh 9 | T | T
ai.onnx Atanh 22 | T | T
ai.onnx Attention 23 | T1 T1 T2 U? T1? T2? | T1 T1? T2? T1?
ai.onnx Attention 24 | T1 T1 T2 U? T1? T2? -? | T1 T1? T2? T1?
ai.onnx AveragePool 1 | T | T
ai.onnx AveragePool 7 | T | T
ai.onnx AveragePool 10 | T | T
ai.onnx AveragePool 11 | T | T
ai.onnx AveragePool 19 | T | T
ai.onnx AveragePool 22 | T | T
ai.onnx BatchNormalization 1 | T T T T T | T T? T? T? T?
ai.onnx BatchNormalization 6 | T T T T T | T T? T? T? T?
ai.onnx BatchNormalization 7 | T T T T T | T T? T? T? T?
ai.onnx BatchNormalization 9 | T T T T T | T T? T? T? T?
ai.onnx BatchNormalization 14 | T T T U U | T U? U?
ai.onnx BatchNormalization 15 | T T1 T1 T2 T2 | T T2? T2?
ai.onnx BitCast 26 | T1 | T2
ai.onnx BitShift 11 | T T | T
ai.onnx BitwiseAnd 18 | T T | T
ai.onnx BitwiseNot 18 | T | T
ai.onnx BitwiseOr 18 | T T | T
ai.onnx BitwiseXor 18 | T T | T
ai.onnx BlackmanWindow 17 | T1 | T2
ai.onnx Cast 1 | T1 | T2
ai.onnx Cast 6 | T1 | T2
ai.onnx Cast 9 | T1 | T2
ai.onnx Cast 13 | T1 | T2
ai.onnx Cast 19 | T1 | T2
ai.onnx Cast 21 | T1 | T2
ai.onnx Cast 23 | T1 | T2
ai.onnx Cast 24 | T1 | T2
ai.onnx Cast 25 | T1 | T2
ai.onnx Ceil 1 | T | T
ai.onnx Ceil 6 | T | T
ai.onnx Ceil 13 | T | T
ai.onnx Celu 12 | T | T
ai.onnx Clip 1 | T | T
ai.onnx Clip 6 | T | T
ai.onnx Clip 11 | T T? T? | T
ai.onnx Clip 12 | T T? T? | T
ai.onnx Clip 13 | T T? T? | T
ai.onnx Col2Im 18 | T - - | T
ai.onnx Compress 9 | T T1 | T
ai.onnx Compress 11 | T T1 | T
ai.onnx Concat 1 | T* | T
ai.onnx Concat 4 | T* | T
ai.onnx Concat 11 | T* | T
ai.onnx Concat 13 | T* | T
ai.onnx ConcatFromSequence 11 | S | T
ai.onnx ConstantOfShape 9 | T1 | T2
ai.onnx ConstantOfShape 20 | T1 | T2
ai.onnx ConstantOfShape 21 | T1 | T2
ai.onnx ConstantOfShape 23 | T1 | T2
ai.onnx ConstantOfShape 24 | T1 | T2
ai.onnx ConstantOfShape 25 | T1 | T2
ai.onnx Conv 1 | T T T? | T
ai.onnx Conv 11 | T T T? | T
ai.onnx Conv 22 | T T T? | T
ai.onnx ConvInteger 10 | T1 T2 T1? T2? | T3
ai.onnx ConvTranspose 1 | T T T? | T
ai.onnx ConvTranspose 11 | T T T? | T
ai.onnx ConvTranspose 22 | T T T? | T
ai.onnx Cos 7 | T | T
ai.onnx Cos 22 | T | T
ai.onnx Cosh 9 | T | T
ai.onnx Cosh 22 | T | T
ai.onnx Crop 1 | T | T
ai.onnx Crop 10 | T | T
ai.onnx CumProd 26 | T T2 | T
ai.onnx CumSum 11 | T T2 | T
ai.onnx CumSum 14 | T T2 | T
ai.onnx DeformConv 19 | T T T T? T? | T
ai.onnx DeformConv 22 | T T T T? T? | T
ai.onnx DepthToSpace 1 | T | T
ai.onnx DepthToSpace 11 | T | T
ai.onnx DepthToSpace 13 | T | T
ai.onnx DequantizeLinear 10 | T - T? | -
ai.onnx DequantizeLinear 13 | T - T? | -
ai.onnx DequantizeLinear 19 | T1 T2 T1? | T2
ai.onnx DequantizeLinear 21 | T1 T2 T1? | T2
ai.onnx DequantizeLinear 23 | T1 T2 T1? | T3
ai.onnx DequantizeLinear 24 | T1 T2 T1? | T3
ai.onnx DequantizeLinear 25 | T1 T2 T1? | T3
ai.onnx Det 11 | T | T
ai.onnx Det 22 | T | T
ai.onnx DFT 17 | T1 T2? | T1
ai.onnx DFT 20 | T1 T2? -? | T1
ai.onnx Div 1 | T T | T
ai.onnx Div 6 | T T | T
ai.onnx Div 7 | T T | T
ai.onnx Div 13 | T T | T
ai.onnx Div 14 | T T | T
ai.onnx Dropout 1 | T | T T?
ai.onnx Dropout 6 | T | T T?
ai.onnx Dropout 7 | T | T T?
ai.onnx Dropout 10 | T | T T1?
ai.onnx Dropout 12 | T T1? T2? | T T2?
ai.onnx Dropout 13 | T T1? T2? | T T2?
ai.onnx Dropout 22 | T T1? T2? | T T2?
ai.onnx DynamicQuantizeLinear 11 | T1 | T2 - T2
ai.onnx DynamicSlice 1 | T Tind Tind Tind? | T
ai.onnx DynamicSlice 10 | T Tind Tind Tind? | T
ai.onnx Einsum 12 | T* | T
ai.onnx Elu 1 | T | T
ai.onnx Elu 6 | T | T
ai.onnx Elu 22 | T | T
ai.onnx Equal 1 | T T | T1
ai.onnx Equal 7 | T T | T1
ai.onnx Equal 11 | T T | T1
ai.onnx Equal 13 | T T | T1
ai.onnx Equal 19 | T T | T1
ai.onnx Erf 9 | T | T
ai.onnx Erf 13 | T | T
ai.onnx Exp 1 | T | T
ai.onnx Exp 6 | T | T
ai.onnx Exp 13 | T | T
ai.onnx Expand 8 | T - | T
ai.onnx Expand 13 | T - | T
ai.onnx EyeLike 9 | T1 | T2
ai.onnx EyeLike 22 | T1 | T2
ai.onnx Flatten 1 | T | T
ai.onnx Flatten 9 | T | T
ai.onnx Flatten 11 | T | T
ai.onnx Flatten 13 | T | T
ai.onnx Flatten 21 | T | T
ai.onnx Flatten 23 | T | T
ai.onnx Flatten 24 | T | T
ai.onnx Flatten 25 | T | T
ai.onnx Floor 1 | T | T
ai.onnx Floor 6 | T | T
ai.onnx Floor 13 | T | T
ai.onnx Gather 1 | T Tind | T
ai.onnx Gather 11 | T Tind | T
ai.onnx Gather 13 | T Tind | T
ai.onnx GatherElements 11 | T Tind | T
ai.onnx GatherElements 13 | T Tind | T
ai.onnx GatherND 11 | T - | T
ai.onnx GatherND 12 | T - | T
ai.onnx GatherND 13 | T - | T
ai.onnx Gelu 20 | T | T
ai.onnx Gemm 1 | T T T | T
ai.onnx Gemm 6 | T T T | T
ai.onnx Gemm 7 | T T T | T
ai.onnx Gemm 9 | T T T | T
ai.onnx Gemm 11 | T T T? | T
ai.onnx Gemm 13 | T T T? | T
ai.onnx GlobalAveragePool 1 | T | T
ai.onnx GlobalAveragePool 22 | T | T
ai.onnx GlobalLpPool 1 | T | T
ai.onnx GlobalLpPool 2 | T | T
ai.onnx GlobalLpPool 22 | T | T
ai.onnx GlobalMaxPool 1 | T | T
ai.onnx GlobalMaxPool 22 | T | T
ai.onnx Greater 1 | T T | T1
ai.onnx Greater 7 | T T | T1
ai.onnx Greater 9 | T T | T1
ai.onnx Greater 13 | T T | T1
ai.onnx GreaterOrEqual 12 | T T | T1
ai.onnx GreaterOrEqual 16 | T T | T1
ai.onnx GridSample 16 | T1 T2 | T1
ai.onnx GridSample 20 | T1 T2 | T1
ai.onnx GridSample 22 | T1 T2 | T1
ai.onnx GRU 1 | T T T T? T1? T? | T? T
ai.onnx GRU 3 | T T T T? T1? T? | T? T?
ai.onnx GRU 7 | T T T T? T1? T? | T? T?
ai.onnx GRU 14 | T T T T? T1? T? | T? T?
ai.onnx GRU 22 | T T T T? T1? T? | T? T?
ai.onnx HammingWindow 17 | T1 | T2
ai.onnx HannWindow 17 | T1 | T2
ai.onnx Hardmax 1 | T | T
ai.onnx Hardmax 11 | T | T
ai.onnx Hardmax 13 | T | T
ai.onnx HardSigmoid 1 | T | T
ai.onnx HardSigmoid 6 | T | T
ai.onnx HardSigmoid 22 | T | T
ai.onnx Identity 1 | T | T
ai.onnx Identity 13 | T | T
ai.onnx Identity 14 | V | V
ai.onnx Identity 16 | V | V
ai.onnx Identity 19 | V | V
ai.onnx Identity 21 | V | V
ai.onnx Identity 23 | V | V
ai.onnx Identity 24 | V | V
ai.onnx Identity 25 | V | V
ai.onnx If 1 | B | V*
ai.onnx If 11 | B | V*
ai.onnx If 13 | B | V*
ai.onnx If 16 | B | V*
ai.onnx If 19 | B | V*
ai.onnx If 21 | B | V*
ai.onnx If 23 | B | V*
ai.onnx If 24 | B | V*
ai.onnx If 25 | B | V*
ai.onnx ImageScaler 1 | T | T
ai.onnx ImageScaler 10 | T | T
ai.onnx InstanceNormalization 1 | T T T | T
ai.onnx InstanceNormalization 6 | T T T | T
ai.onnx InstanceNormalization 22 | T T T | T
ai.onnx IsInf 10 | T1 | T2
ai.onnx IsInf 20 | T1 | T2
ai.onnx IsNaN 9 | T1 | T2
ai.onnx IsNaN 13 | T1 | T2
ai.onnx IsNaN 20 | T1 | T2
ai.onnx LayerNormalization 1 | T V V? | V U? U?
ai.onnx LayerNormalization 17 | T T T? | T U? U?
ai.onnx LeakyRelu 1 | T | T
ai.onnx LeakyRelu 6 | T | T
ai.onnx LeakyRelu 16 | T | T
ai.onnx Less 1 | T T | T1
ai.onnx Less 7 | T T | T1
ai.onnx Less 9 | T T | T1
ai.onnx Less 13 | T T | T1
ai.onnx LessOrEqual 12 | T T | T1
ai.onnx LessOrEqual 16 | T T | T1
ai.onnx Log 1 | T | T
ai.onnx Log 6 | T | T
ai.onnx Log 13 | T | T
ai.onnx LogSoftmax 1 | T | T
ai.onnx LogSoftmax 11 | T | T
ai.onnx LogSoftmax 13 | T | T
ai.onnx Loop 1 | I? B? V* | V*
ai.onnx Loop 11 | I? B? V* | V*
ai.onnx Loop 13 | I? B? V* | V*
ai.onnx Loop 16 | I? B? V* | V*
ai.onnx Loop 19 | I? B? V* | V*
ai.onnx Loop 21 | I? B? V* | V*
ai.onnx Loop 23 | I? B? V* | V*
ai.onnx Loop 24 | I? B? V* | V*
ai.onnx Loop 25 | I? B? V* | V*
ai.onnx LpNormalization 1 | T | T
ai.onnx LpNormalization 22 | T | T
ai.onnx LpPool 1 | T | T
ai.onnx LpPool 2 | T | T
ai.onnx LpPool 11 | T | T
ai.onnx LpPool 18 | T | T
ai.onnx LpPool 22 | T | T
ai.onnx LRN 1 | T | T
ai.onnx LRN 13 | T | T
ai.onnx LSTM 1 | T T T T? T1? T? T? T? | T? T? T?
ai.onnx LSTM 7 | T T T T? T1? T? T? T? | T? T? T?
ai.onnx LSTM 14 | T T T T? T1? T? T? T? | T? T? T?
ai.onnx LSTM 22 | T T T T? T1? T? T? T? | T? T? T?
ai.onnx MatMul 1 | T T | T
ai.onnx MatMul 9 | T T | T
ai.onnx MatMul 13 | T T | T
ai.onnx MatMulInteger 10 | T1 T2 T1? T2? | T3
ai.onnx Max 1 | T* | T
ai.onnx Max 6 | T* | T
ai.onnx Max 8 | T* | T
ai.onnx Max 12 | T* | T
ai.onnx Max 13 | T* | T
ai.onnx MaxPool 1 | T | T
ai.onnx MaxPool 8 | T | T I?
ai.onnx MaxPool 10 | T | T I?
ai.onnx MaxPool 11 | T | T I?
ai.onnx MaxPool 12 | T | T I?
ai.onnx MaxPool 22 | T | T I?
ai.onnx MaxRoiPool 1 | T T | T
ai.onnx MaxRoiPool 22 | T T | T
ai.onnx MaxUnpool 9 | T1 T2 T2? | T1
ai.onnx MaxUnpool 11 | T1 T2 T2? | T1
ai.onnx MaxUnpool 22 | T1 T2 T2? | T1
ai.onnx Mean 1 | T* | T
ai.onnx Mean 6 | T* | T
ai.onnx Mean 8 | T* | T
ai.onnx Mean 13 | T* | T
ai.onnx MeanVarianceNormalization 1 | T | T
ai.onnx MeanVarianceNormalization 9 | T | T
ai.onnx MeanVarianceNormalization 13 | T | T
ai.onnx MelWeightMatrix 17 | T1 T1 T1 T2 T2 | T3
ai.onnx MemcpyFromHost 1 | T | T
ai.onnx MemcpyToHost 1 | T | T
ai.onnx Min 1 | T* | T
ai.onnx Min 6 | T* | T
ai.onnx Min 8 | T* | T
ai.onnx Min 12 | T* | T
ai.onnx Min 13 | T* | T
ai.onnx Mod 10 | T T | T
ai.onnx Mod 13 | T T | T
ai.onnx Mul 1 | T T | T
ai.onnx Mul 6 | T T | T
ai.onnx Mul 7 | T T | T
ai.onnx Mul 13 | T T | T
ai.onnx Mul 14 | T T | T
ai.onnx Multinomial 7 | T1 | T2
ai.onnx Multinomial 22 | T1 | T2
ai.onnx Neg 1 | T | T
ai.onnx Neg 6 | T | T
ai.onnx Neg 13 | T | T
ai.onnx NonMaxSuppression 10 | - - -? -? -? | -
ai.onnx NonMaxSuppression 11 | - - -? -? -? | -
ai.onnx NonZero 9 | T | -
ai.onnx NonZero 13 | T | -
ai.onnx Not 1 | T | T
ai.onnx OneHot 9 | T1 T2 T3 | T3
ai.onnx OneHot 11 | T1 T2 T3 | T3
ai.onnx Optional 15 | V? | O
ai.onnx OptionalGetElement 15 | O | V
ai.onnx OptionalGetElement 18 | O | V
ai.onnx OptionalHasElement 15 | O | B
ai.onnx OptionalHasElement 18 | O? | B
ai.onnx Or 1 | T T | T1
ai.onnx Or 7 | T T | T1
ai.onnx Pad 1 | T | T
ai.onnx Pad 2 | T | T
ai.onnx Pad 11 | T - T? | T
ai.onnx Pad 13 | T - T? | T
ai.onnx Pad 18 | T - T? Tind? | T
ai.onnx Pad 19 | T - T? Tind? | T
ai.onnx Pad 21 | T - T? Tind? | T
ai.onnx Pad 23 | T - T? Tind? | T
ai.onnx Pad 24 | T - T? Tind? | T
ai.onnx Pad 25 | T - T? Tind? | T
ai.onnx ParametricSoftplus 1 | T | T
ai.onnx ParametricSoftplus 10 | T | T
ai.onnx Pow 1 | T T | T
ai.onnx Pow 7 | T T | T
ai.onnx Pow 12 | T T1 | T
ai.onnx Pow 13 | T T1 | T
ai.onnx Pow 15 | T T1 | T
ai.onnx PRelu 1 | T T | T
ai.onnx PRelu 6 | T T | T
ai.onnx PRelu 7 | T T | T
ai.onnx PRelu 9 | T T | T
ai.onnx PRelu 16 | T T | T
ai.onnx QLinearConv 10 | T1 - T1 T2 - T2 - T3 T4? | T3
ai.onnx QLinearMatMul 10 | T1 - T1 T2 - T2 - T3 | T3
ai.onnx QLinearMatMul 21 | T1 TS T1 T2 TS T2 TS T3 | T3
ai.onnx QuantizeLinear 10 | T1 - T2? | T2
ai.onnx QuantizeLinear 13 | T1 - T2? | T2
ai.onnx QuantizeLinear 19 | T1 T1 T2? | T2
ai.onnx QuantizeLinear 21 | T1 T1 T2? | T2
ai.onnx QuantizeLinear 23 | T1 T2 T3? | T3
ai.onnx QuantizeLinear 24 | T1 T2 T3? | T3
ai.onnx QuantizeLinear 25 | T1 T2 T3? | T3
ai.onnx RandomNormal 1 | . | T
ai.onnx RandomNormal 22 | . | T
ai.onnx RandomNormalLike 1 | T1 | T2
ai.onnx RandomNormalLike 22 | T1 | T2
ai.onnx RandomUniform 1 | . | T
ai.onnx RandomUniform 22 | . | T
ai.onnx RandomUniformLike 1 | T1 | T2
ai.onnx RandomUniformLike 22 | T1 | T2
ai.onnx Range 11 | T T T | T
ai.onnx Range 27 | T T T | T
ai.onnx Reciprocal 1 | T | T
ai.onnx Reciprocal 6 | T | T
ai.onnx Reciprocal 13 | T | T
ai.onnx ReduceL1 1 | T | T
ai.onnx ReduceL1 11 | T | T
ai.onnx ReduceL1 13 | T | T
ai.onnx ReduceL1 18 | T -? | T
ai.onnx ReduceL2 1 | T | T
ai.onnx ReduceL2 11 | T | T
ai.onnx ReduceL2 13 | T | T
ai.onnx ReduceL2 18 | T -? | T
ai.onnx ReduceLogSum 1 | T | T
ai.onnx ReduceLogSum 11 | T | T
ai.onnx ReduceLogSum 13 | T | T
ai.onnx ReduceLogSum 18 | T -? | T
ai.onnx ReduceLogSumExp 1 | T | T
ai.onnx ReduceLogSumExp 11 | T | T
ai.onnx ReduceLogSumExp 13 | T | T
ai.onnx ReduceLogSumExp 18 | T -? | T
ai.onnx ReduceMax 1 | T | T
ai.onnx ReduceMax 11 | T | T
ai.onnx ReduceMax 12 | T | T
ai.onnx ReduceMax 13 | T | T
ai.onnx ReduceMax 18 | T -? | T
ai.onnx ReduceMax 20 | T -? | T
ai.onnx ReduceMean 1 | T | T
ai.onnx ReduceMean 11 | T | T
ai.onnx ReduceMean 13 | T | T
ai.onnx ReduceMean 18 | T -? | T
ai.onnx ReduceMin 1 | T | T
ai.onnx ReduceMin 11 | T | T
ai.onnx ReduceMin 12 | T | T
ai.onnx ReduceMin 13 | T | T
ai.onnx ReduceMin 18 | T -? | T
ai.onnx ReduceMin 20 | T -? | T
ai.onnx ReduceProd 1 | T | T
ai.onnx ReduceProd 11 | T | T
ai.onnx ReduceProd 13 | T | T
ai.onnx ReduceProd 18 | T -? | T
ai.onnx ReduceSum 1 | T | T
ai.onnx ReduceSum 11 | T | T
ai.onnx ReduceSum 13 | T -? | T
ai.onnx ReduceSumSquare 1 | T | T
ai.onnx ReduceSumSquare 11 | T | T
ai.onnx ReduceSumSquare 13 | T | T
ai.onnx ReduceSumSquare 18 | T -? | T
ai.onnx RegexFullMatch 20 | T1 | T2
ai.onnx Relu 1 | T | T
ai.onnx Relu 6 | T | T
ai.onnx Relu 13 | T | T
ai.onnx Relu 14 | T | T
ai.onnx Reshape 1 | T | T
ai.onnx Reshape 5 | T - | T
ai.onnx Reshape 13 | T - | T
ai.onnx Reshape 14 | T - | T
ai.onnx Reshape 19 | T - | T
ai.onnx Reshape 21 | T - | T
ai.onnx Reshape 23 | T - | T
ai.onnx Reshape 24 | T - | T
ai.onnx Reshape 25 | T - | T
ai.onnx Resize 10 | T - | T
ai.onnx Resize 11 | T1 T2 - -? | T1
ai.onnx Resize 13 | T1 T2? -? -? | T1
ai.onnx Resize 18 | T1 T2? -? -? | T1
ai.onnx Resize 19 | T1 T2? -? -? | T1
ai.onnx ReverseSequence 10 | T - | T
ai.onnx RMSNormalization 23 | T V | V
ai.onnx RNN 1 | T T T T? T1? T? | T? T?
ai.onnx RNN 7 | T T T T? T1? T? | T? T?
ai.onnx RNN 14 | T T T T? T1? T? | T? T?
ai.onnx RNN 22 | T T T T? T1? T? | T? T?
ai.onnx RoiAlign 10 | T1 T1 T2 | T1
ai.onnx RoiAlign 16 | T1 T1 T2 | T1
ai.onnx RoiAlign 22 | T1 T1 T2 | T1
ai.onnx RotaryEmbedding 23 | T T T M? | T
ai.onnx Round 11 | T | T
ai.onnx Round 22 | T | T
ai.onnx Scale 1 | T | T
ai.onnx Scale 10 | T | T
ai.onnx ScaledTanh 1 | T | T
ai.onnx ScaledTanh 10 | T | T
ai.onnx Scan 8 | I? V* | V*
ai.onnx Scan 9 | V* | V*
ai.onnx Scan 11 | V* | V*
ai.onnx Scan 16 | V* | V*
ai.onnx Scan 19 | V* | V*
ai.onnx Scan 21 | V* | V*
ai.onnx Scan 23 | V* | V*
ai.onnx Scan 24 | V* | V*
ai.onnx Scan 25 | V* | V*
ai.onnx Scatter 9 | T Tind T | T
ai.onnx Scatter 11 | T Tind T | T
ai.onnx ScatterElements 11 | T Tind T | T
ai.onnx ScatterElements 13 | T Tind T | T
ai.onnx ScatterElements 16 | T Tind T | T
ai.onnx ScatterElements 18 | T Tind T | T
ai.onnx ScatterND 11 | T - T | T
ai.onnx ScatterND 13 | T - T | T
ai.onnx ScatterND 16 | T - T | T
ai.onnx ScatterND 18 | T - T | T
ai.onnx Selu 1 | T | T
ai.onnx Selu 6 | T | T
ai.onnx Selu 22 | T | T
ai.onnx SequenceAt 11 | S I | T
ai.onnx SequenceConstruct 11 | T* | S
ai.onnx SequenceEmpty 11 | . | S
ai.onnx SequenceErase 11 | S I? | S
ai.onnx SequenceInsert 11 | S T I? | S
ai.onnx SequenceLength 11 | S | I
ai.onnx Shape 1 | T | T1
ai.onnx Shape 13 | T | T1
ai.onnx Shape 15 | T | T1
ai.onnx Shape 19 | T | T1
ai.onnx Shape 21 | T | T1
ai.onnx Shape 23 | T | T1
ai.onnx Shape 24 | T | T1
ai.onnx Shape 25 | T | T1
ai.onnx Shrink 9 | T | T
ai.onnx Sigmoid 1 | T | T
ai.onnx Sigmoid 6 | T | T
ai.onnx Sigmoid 13 | T | T
ai.onnx Sign 9 | T | T
ai.onnx Sign 13 | T | T
ai.onnx SimplifiedLayerNormalization 1 | T V | V U?
ai.onnx Sin 7 | T | T
ai.onnx Sin 22 | T | T
ai.onnx Sinh 9 | T | T
ai.onnx Sinh 22 | T | T
ai.onnx Size 1 | T | T1
ai.onnx Size 13 | T | T1
ai.onnx Size 19 | T | T1
ai.onnx Size 21 | T | T1
ai.onnx Size 23 | T | T1
ai.onnx Size 24 | T | T1
ai.onnx Size 25 | T | T1
ai.onnx Slice 1 | T | T
ai.onnx Slice 10 | T Tind Tind Tind? Tind? | T
ai.onnx Slice 11 | T Tind Tind Tind? Tind? | T
ai.onnx Slice 13 | T Tind Tind Tind? Tind? | T
ai.onnx Softmax 1 | T | T
ai.onnx Softmax 11 | T | T
ai.onnx Softmax 13 | T | T
ai.onnx Softplus 1 | T | T
ai.onnx Softplus 22 | T | T
ai.onnx Softsign 1 | T | T
ai.onnx Softsign 22 | T | T
ai.onnx SpaceToDepth 1 | T | T
ai.onnx SpaceToDepth 13 | T | T
ai.onnx Split 1 | T T? | T*
ai.onnx Split 2 | T | T*
ai.onnx Split 11 | T | T*
ai.onnx Split 13 | T -? | T*
ai.onnx Split 18 | T -? | T*
ai.onnx SplitToSequence 11 | T I? | S
ai.onnx SplitToSequence 24 | T I? | S
ai.onnx Sqrt 1 | T | T
ai.onnx Sqrt 6 | T | T
ai.onnx Sqrt 13 | T | T
ai.onnx Squeeze 1 | T | T
ai.onnx Squeeze 11 | T | T
ai.onnx Squeeze 13 | T -? | T
ai.onnx Squeeze 21 | T -? | T
ai.onnx Squeeze 23 | T -? | T
ai.onnx Squeeze 24 | T -? | T
ai.onnx Squeeze 25 | T -? | T
ai.onnx STFT 17 | T1 T2 T1? T2? | T1
ai.onnx StringConcat 20 | T T | T
ai.onnx StringNormalizer 10 | - | -
ai.onnx StringSplit 20 | T1 | T2 T3
ai.onnx Sub 1 | T T | T
ai.onnx Sub 6 | T T | T
ai.onnx Sub 7 | T T | T
ai.onnx Sub 13 | T T | T
ai.onnx Sub 14 | T T | T
ai.onnx Sum 1 | T* | T
ai.onnx Sum 6 | T* | T
ai.onnx Sum 8 | T* | T
ai.onnx Sum 13 | T* | T
ai.onnx Tan 7 | T | T
ai.onnx Tan 22 | T | T
ai.onnx Tanh 1 | T | T
ai.onnx Tanh 6 | T | T
ai.onnx Tanh 13 | T | T
ai.onnx TensorScatter 24 | T T -? | T
ai.onnx TfIdfVectorizer 9 | T | T1
ai.onnx ThresholdedRelu 1 | T | T
ai.onnx ThresholdedRelu 10 | T | T
ai.onnx ThresholdedRelu 22 | T | T
ai.onnx Tile 1 | T T T | T
ai.onnx Tile 6 | T T1 | T
ai.onnx Tile 13 | T T1 | T
ai.onnx TopK 1 | T | T I
ai.onnx TopK 10 | T - | T I
ai.onnx TopK 11 | T - | T I
ai.onnx TopK 24 | T - | T I
ai.onnx Transpose 1 | T | T
ai.onnx Transpose 13 | T | T
ai.onnx Transpose 21 | T | T
ai.onnx Transpose 23 | T | T
ai.onnx Transpose 24 | T | T
ai.onnx Transpose 25 | T | T
ai.onnx Trilu 14 | T -? | T
ai.onnx Unique 11 | T | T -? -? -?
ai.onnx Unsqueeze 1 | T | T
ai.onnx Unsqueeze 11 | T | T
ai.onnx Unsqueeze 13 | T - | T
ai.onnx Unsqueeze 21 | T - | T
ai.onnx Unsqueeze 23 | T - | T
ai.onnx Unsqueeze 24 | T - | T
ai.onnx Unsqueeze 25 | T - | T
ai.onnx Upsample 1 | T | T
ai.onnx Upsample 7 | T | T
ai.onnx Upsample 9 | T - | T
ai.onnx Upsample 10 | T - | T
ai.onnx Where 9 | B T T | T
ai.onnx Where 16 | B T T | T
ai.onnx Xor 1 | T T | T1
ai.onnx Xor 7 | T T | T1
ai.onnx.ml ArrayFeatureExtractor 1 | T - | T
ai.onnx.ml Binarizer 1 | T | T
ai.onnx.ml CastMap 1 | T1 | T2
ai.onnx.ml CategoryMapper 1 | T1 | T2
ai.onnx.ml DictVectorizer 1 | T1 | T2
ai.onnx.ml FeatureVectorizer 1 | T1* | -
ai.onnx.ml Imputer 1 | T | T
ai.onnx.ml LabelEncoder 1 | T1 | T2
ai.onnx.ml LabelEncoder 2 | T1 | T2
ai.onnx.ml LabelEncoder 4 | T1 | T2
ai.onnx.ml LinearClassifier 1 | T1 | T2 -
ai.onnx.ml LinearRegressor 1 | T | -
ai.onnx.ml Normalizer 1 | T | -
ai.onnx.ml OneHotEncoder 1 | T | -
ai.onnx.ml Scaler 1 | T | -
ai.onnx.ml SVMClassifier 1 | T1 | T2 -
ai.onnx.ml SVMRegressor 1 | T | -
ai.onnx.ml TreeEnsemble 5 | T | T
ai.onnx.ml TreeEnsembleClassifier 1 | T1 | T2 -
ai.onnx.ml TreeEnsembleClassifier 3 | T1 | T2 -
ai.onnx.ml TreeEnsembleClassifier 5 | T1 | T2 -
ai.onnx.ml TreeEnsembleRegressor 1 | T | -
ai.onnx.ml TreeEnsembleRegressor 3 | T | -
ai.onnx.ml TreeEnsembleRegressor 5 | T | -
ai.onnx.ml ZipMap 1 | - | T
com.microsoft Attention 1 | T T T? M? T? T? M? | T T?
com.microsoft AttnLSTM 1 | T T T T? T1? T? T? T? T? T? T? T? T1? T? | T? T? T?
com.microsoft BeamSearch 1 | F I I? I I T? T? M? M? I? I? I? | I T? T?
com.microsoft BiasGelu 1 | T T | T
com.microsoft BifurcationDetector 1 | T T T T? | T T
com.microsoft BranchwiseRMSNorm 1 | T M? | T
com.microsoft CausalConvWithState 1 | T T T? T? | T T
com.microsoft CDist 1 | T T | T
com.microsoft ConvTransposeWithDynamicPads 1 | T T -? T? | T
com.microsoft CropAndResize 1 | T1 T1 T2 T2 | T1
com.microsoft DecoderMaskedMultiHeadAttention 1 | T T? T? M? T? T? T? M? M? M? T? | T T? T? QK?
com.microsoft DequantizeLinear 1 | T1 T2 T1? | T2
com.microsoft DynamicQuantizeLSTM 1 | T T2 T2 T? T1? T? T? T? T T2 T T2 | T? T? T?
com.microsoft DynamicQuantizeMatMul 1 | T1 T2 T1 T2? T1? | T1
com.microsoft DynamicTimeWarping 1 | F | I
com.microsoft EmbedLayerNormalization 1 | T1 T1? T T T? T T T1? T1? | T T1? T?
com.microsoft EngramGate 1 | T T T T T T? | T T?
com.microsoft ExpandDims 1 | T - | T
com.microsoft FastGelu 1 | T T? | T
com.microsoft FusedConv 1 | T T T? T? | T
com.microsoft FusedGemm 1 | T T T? | T
com.microsoft FusedMatMul 1 | T T | T
com.microsoft GatedAdd 1 | T T T | T
com.microsoft GatedRMSNorm 1 | T T T | T
com.microsoft GatherBlockQuantized 1 | T1 Tind T2 T1? | T2
com.microsoft GatherND 1 | T Tind | T
com.microsoft Gelu 1 | T | T
com.microsoft GreedySearch 1 | I I I? T? I? I? I? | I
com.microsoft GridSample 1 | T1 T1 | T2
com.microsoft GroupQueryAttention 1 | T T? T? T_CACHE? T_CACHE? M M T? T? -? T? T? T_KV_SCALE? T_KV_SCALE? T? T? | T T_CACHE? T_CACHE? T?
com.microsoft HyperConnectionPostMix 1 | T T M M? | T
com.microsoft HyperConnectionPreMix 1 | T M | T
com.microsoft Inverse 1 | T | T
com.microsoft LinearAttention 1 | T T T S? T? T? | T S
com.microsoft LinearAttentionGate 1 | T TF TF T? | T T?
com.microsoft MatMulBnb4 1 | T1 T2 T1 | T1
com.microsoft MatMulFpQ4 1 | T1 T2 T3 | T1
com.microsoft MatMulInteger16 1 | T1 T2 | T3
com.microsoft MatMulIntegerToFloat 1 | T1 T2 T3 T3 T1? T2? T3? | T3
com.microsoft MatMulNBits 1 | T1 T2 T1 T3? T4? T1? | T1
com.microsoft MaxpoolWithMask 1 | T - | T
com.microsoft MoE 1 | T T T T? T T? T? T? | T
com.microsoft MRotaryEmbedding 1 | T M T T | T
com.microsoft MultiHeadAttention 1 | T T? T? T? M? T? T? T? M? M? | T T? T? QK?
com.microsoft MurmurHash3 1 | T1 | T2
com.microsoft NGramHashMapping 1 | M M M M? M? M? -? | M M?
com.microsoft NGramRepeatBlock 1 | Tid T | T
com.microsoft NhwcMaxPool 1 | T | T
com.microsoft Pad 1 | T - T? | T
com.microsoft QAttention 1 | T1 T2 T3 T3 T3 T4? T1? T2? T3? | T3 T3?
com.microsoft QEmbedLayerNormalization 1 | T1 T1? T2 T2 T2? T2 T2 T1? T T T? T T T2 T2 T2? T2 T2 | T T1
com.microsoft QGemm 1 | TA T TA TB T TB TC? T? TYZ? | TY
com.microsoft QLinearAdd 1 | T - T? T - T? - T? | T
com.microsoft QLinearAveragePool 1 | T - T? - T? | T
com.microsoft QLinearConcat 1 | TF T8 TV* | T8
com.microsoft QLinearConv 1 | T1 - T1 T2 - T2 - T3 T4? | T3
com.microsoft QLinearGlobalAveragePool 1 | T - T - T | T
com.microsoft QLinearLeakyRelu 1 | T - T? - T? | T
com.microsoft QLinearMul 1 | T - T? T - T? - T? | T
com.microsoft QLinearSigmoid 1 | T - T? - T? | T
com.microsoft QLinearSoftmax 1 | T - T? - T | T
com.microsoft QLinearWhere 1 | B T TF T T TF T TF T | T
com.microsoft QMoE 1 | T T T1 T2? T? T1 T2? T? T1? T2? T? T1? T1? T1? T? T4? T4? T4? T4? T2? T2? | T
com.microsoft QuantizeLinear 1 | T1 T1 T2? | T2
com.microsoft QuickGelu 1 | T | T
com.microsoft Range 1 | T T T? | T
com.microsoft RotaryEmbedding 1 | T M T T | T
com.microsoft SampleOp 1 | T | T
com.microsoft Sampling 1 | I I I? T? I? I? I? I? I? | I T?
com.microsoft ScaledSiLU 1 | T M? | T
com.microsoft SkipLayerNormalization 1 | T T T T? T? | T U? U? T?
com.microsoft SkipSimplifiedLayerNormalization 1 | T T T T? | T U? U? T?
com.microsoft SparseAttention 1 | T T? T? T T M M M M T? T? | T T T
com.microsoft SparseToDenseMatMul 1 | T T1 | T1
com.microsoft Tokenizer 1 | T | T
com.microsoft TransposeMatMul 1 | T T | T
com.microsoft Trilu 1 | T -? | T
com.microsoft UnfoldTensor 1 | T | T
com.microsoft Unique 1 | T | T - -
com.microsoft VarlenNGramHashMapping 1 | M M M S M? M? M? -? S? S? | M M? S? M?
com.microsoft WhisperBeamSearch 1 | F I I? I I T? T? M? M? I? I? I? I? I? T? | I T? T? V? T?
com.microsoft WordConvEmbedding 1 | T T1 T1 T1 | T1
com.microsoft.nchwc AveragePool 1 | T | T
com.microsoft.nchwc Conv 1 | T T T? T? | T
com.microsoft.nchwc GlobalAveragePool 1 | T | T
com.microsoft.nchwc GlobalMaxPool 1 | T | T
com.microsoft.nchwc MaxPool 1 | T | T
com.microsoft.nchwc ReorderInput 1 | T | T
com.microsoft.nchwc ReorderOutput 1 | T | T
com.microsoft.nchwc Upsample 1 | T | T
"""
# END GENERATED
