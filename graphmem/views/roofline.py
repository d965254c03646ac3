"""Roofline: a latency lower bound for one run of the graph on a device, and the ``peak --device``
section.

Per node, ``time = max(work ÷ peak rate at the node's precision, bytes moved ÷ bandwidth)``:

* **work** = FLOPs + integer ops of the node, from :mod:`graphmem.flops` (its conventions). A
  node whose cost is unsupported, or every node when the FLOP counter is missing, has no compute
  time: its time is the memory term alone, which keeps the total a lower bound.
* **bytes moved** = the node's inputs (weights included) + its outputs, each tensor once, at their
  static sizes — what one kernel per node must read and write at least once. Views move nothing,
  Shape/Size read no data, Gather/Slice read at most what they write (see :func:`_traffic`).
* **precision** = the dtype of the node's first input when it is floating or 8-bit integer (a
  quantized kernel's data), else of the first floating tensor it touches: float32 → ``fp32``,
  or ``tf32`` for contractions (nodes with MACs: Conv, Gemm, MatMul, …) when the device has it and
  ``tf32=True`` (the higher rate keeps the bound a bound); float16 → ``fp16``; bfloat16 →
  ``bf16``; float8 → ``fp8``; int8/uint8 → ``int8``. A precision the device states no rate for
  falls back to the next wider one (fp8 → fp16 → fp32; bf16 → fp32; int8 → fp32): frameworks
  upcast where a fast path is missing.

A node is **compute-bound** when its compute term is the larger, else memory-bound; an op type is
marked by where most of its time goes. Arithmetic intensity = work ÷ bytes moved (ops/byte), to
compare with the device's ridge point (rate ÷ bandwidth).

The **bound** is the sum of node times: one kernel per node, kernels not overlapping, every byte
from device memory. Real runs are slower (launch overhead, rates below peak). It can be beaten
only where tensors stay in on-chip cache between kernels (small activations) or where kernels are
fused and move fewer bytes; the **floor** — max(total compute time, (weights + inputs + outputs)
÷ bandwidth), each weight and input counted at the most any node reads of it — is the bound
under perfect fusion.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphmem.optable import MS_DOMAIN, OpTable, default_domain_ops
from graphmem.units import format_bytes, format_count
from graphmem.views.devices import Device, device_json

if TYPE_CHECKING:
    from graphmem.analysis.result import Analysis

__all__ = [
    "NodeWork",
    "NodeTime",
    "OpTime",
    "Roofline",
    "flop_report",
    "node_work",
    "total_flops",
    "precision_of",
    "roofline",
    "roofline_json",
    "roofline_lines",
    "device_section",
    "device_lines",
]

_FALLBACK = {"fp8": "fp16", "fp16": "fp32", "bf16": "fp32", "tf32": "fp32", "int8": "fp32"}


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeWork:
    """One node's work as the FLOP counter reports it; ``counted`` False: no cost known."""

    flops: int
    int_ops: int
    macs: int
    counted: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeTime:
    node: str
    op_type: str
    precision: str
    work: int | None  # flops + int_ops; None: unknown
    bytes: int
    compute_s: float | None
    memory_s: float | None
    time_s: float  # max of the known terms (0.0 when neither is known)
    bound: str  # "compute", "memory" or "unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class OpTime:
    op_type: str
    nodes: int
    work: int | None  # None: some node's work unknown
    bytes: int
    time_s: float
    bound: str
    intensity: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Roofline:
    device: str
    bound_s: float
    floor_s: float
    compute_s: float
    memory_s: float
    nodes: tuple[NodeTime, ...]
    by_op: tuple[OpTime, ...]
    flops_available: bool
    no_work: tuple[str, ...]  # nodes whose work is unknown (memory term only)
    missing: tuple[str, ...]  # what the device lacks ("bandwidth", "rates")


def flop_report(a: Analysis) -> Any | None:
    """:func:`graphmem.flops.count_flops` of ``a`` (a ``FlopReport``), or None when the FLOP
    counter is not installed."""
    try:
        from graphmem.flops import count_flops
    except ImportError:
        return None
    return count_flops(a.graph, a.types, a.order)


def node_work(a: Analysis, report: Any | None = None) -> dict[int, NodeWork] | None:
    """Per-node work from the FLOP counter's report (computed when not given), or None when the
    counter is not installed."""
    if report is None:
        report = flop_report(a)
        if report is None:
            return None
    return {
        int(nid): NodeWork(flops=c.flops, int_ops=c.int_ops, macs=c.macs,
                           counted=c.outcome != "unsupported")
        for nid, c in report.costs.items()
    }


def total_flops(a: Analysis) -> tuple[int, int] | None:
    """(total FLOPs of one run, nodes the counter could not cost), or None without the counter.
    With unsupported nodes the total is a lower bound ("at least")."""
    report = flop_report(a)
    if report is None:
        return None
    return report.flops, sum(report.unsupported.values())


def precision_of(dtype: int, *, contraction: bool, device: Device, tf32: bool = True) -> str:
    """The rate key a node of ``dtype`` runs at on ``device`` (see the module docstring)."""
    from onnx import TensorProto

    from graphmem.model.dtypes import dtype_name

    if dtype == TensorProto.FLOAT:
        key = "tf32" if contraction and tf32 and device.rate("tf32") else "fp32"
    elif dtype == TensorProto.FLOAT16:
        key = "fp16"
    elif dtype == TensorProto.BFLOAT16:
        key = "bf16"
    elif dtype in (TensorProto.INT8, TensorProto.UINT8):
        key = "int8"
    elif dtype_name(dtype).startswith("float8"):
        key = "fp8"
    else:
        key = "fp32"
    while device.rate(key) is None and key in _FALLBACK:
        key = _FALLBACK[key]
    return key


def roofline(a: Analysis, device: Device, *, tf32: bool = True,
             work: Mapping[int, NodeWork] | None = None) -> Roofline:
    """The roofline of ``a`` on ``device``; ``work`` defaults to :func:`node_work`."""
    from graphmem.model.graph import node_inputs

    if work is None:
        work = node_work(a)
    flops_available = work is not None
    g = a.graph
    times: list[NodeTime] = []
    no_work = []
    first_read: dict[str, int] = {}  # graph input or weight -> most bytes any node reads of it
    sources = set(a.graph.model.inputs) | set(a.graph.model.weights)
    for nid in a.order:
        node = g.node(nid)
        names = list(dict.fromkeys(node_inputs(g, nid) + tuple(o for o in node.output if o)))
        reads, written = _traffic(a, nid)
        for name, size in reads.items():
            if name in sources:
                first_read[name] = max(first_read.get(name, 0), size)
        moved = sum(reads.values()) + written
        dtype = _node_dtype(a, names)
        w = work.get(nid) if work is not None else None
        label = node.name or f"{node.op_type}#{nid}"
        precision = precision_of(dtype, contraction=bool(w and w.macs), device=device, tf32=tf32)
        ops = w.flops + w.int_ops if w is not None and w.counted else None
        if ops is None:
            no_work.append(label)
        rate = device.rate(precision)
        compute = ops / rate if ops is not None and rate else None
        memory = moved / device.bandwidth if device.bandwidth else None
        known = [t for t in (compute, memory) if t is not None]
        bound = "unknown" if not known else (
            "compute" if compute is not None and (memory is None or compute >= memory) else "memory"
        )
        times.append(NodeTime(node=label, op_type=node.op_type, precision=precision, work=ops,
                              bytes=moved, compute_s=compute, memory_s=memory,
                              time_s=max(known, default=0.0), bound=bound))
    compute_s = sum(t.compute_s or 0.0 for t in times)
    ends = sum(first_read.values()) + a.io.outputs_bytes
    floor_memory = ends / device.bandwidth if device.bandwidth else 0.0
    missing = tuple(
        m for m, ok in (("bandwidth", device.bandwidth), ("rates", device.peak)) if not ok
    )
    return Roofline(
        device=device.name,
        bound_s=sum(t.time_s for t in times),
        floor_s=max(compute_s, floor_memory),
        compute_s=compute_s,
        memory_s=sum(t.memory_s or 0.0 for t in times),
        nodes=tuple(times),
        by_op=_by_op(times),
        flops_available=flops_available,
        no_work=tuple(no_work),
        missing=missing,
    )


def _node_dtype(a: Analysis, names: list[str]) -> int:
    """The dtype a node computes in: its first input's when that is floating or 8-bit integer
    (a quantized kernel's data), else the first floating tensor it touches."""
    from onnx import TensorProto

    from graphmem.model.dtypes import is_float

    dtypes = [a.types[n].dtype for n in names if n in a.types]
    if dtypes and (is_float(dtypes[0]) or dtypes[0] in (TensorProto.INT8, TensorProto.UINT8)):
        return dtypes[0]
    return next((d for d in dtypes if is_float(d)), dtypes[0] if dtypes else 0)


def _traffic(a: Analysis, nid: int) -> tuple[dict[str, int], int]:
    """(bytes read per input tensor, bytes written) by node ``nid``: what any kernel must move.

    Views (:data:`graphmem.optable.VIEW_OPS`) move nothing;
    Shape and Size read no data; Gather*, Slice read at most as much of their data input as
    they write (an embedding lookup reads its rows, not the table). Everything else reads each
    input once, whole.
    """
    from graphmem.model.graph import node_inputs
    from graphmem.model.program import tensor_size
    from graphmem.optable import VIEW_OPS, is_default_domain

    g = a.graph
    node = g.node(nid)
    if is_default_domain(node.domain) and node.op_type in VIEW_OPS:
        return {}, 0
    written = sum(tensor_size(a.types.get(o)) or 0 for o in dict.fromkeys(node.output) if o)
    reads: dict[str, int] = {}
    data = node.input[0] if node.input else ""
    data_read = _DATA_READ.of(node)
    for name in node_inputs(g, nid):
        size = tensor_size(a.types.get(name)) or 0
        if name == data and data_read is not None:
            size = data_read(size, written)
        reads[name] = max(reads.get(name, 0), size)
    return reads, written


def _reads_nothing(size: int, written: int) -> int:
    return 0


def _reads_at_most_written(size: int, written: int) -> int:
    return min(size, written)


#: Ops that read less of their data input (input 0) than all of it -> the bytes they read, from
#: (its size, the bytes the node writes).
_DATA_READ: OpTable[Callable[[int, int], int]] = OpTable(
    default_domain_ops(("Shape", "Size"), _reads_nothing),
    default_domain_ops(("Gather", "GatherElements", "GatherND", "Slice"), _reads_at_most_written),
    {(MS_DOMAIN, "GatherND"): _reads_at_most_written},
)


def _by_op(times: list[NodeTime]) -> tuple[OpTime, ...]:
    groups: dict[str, list[NodeTime]] = {}
    for t in times:
        groups.setdefault(t.op_type, []).append(t)
    out = []
    for op, ts in groups.items():
        work = None if any(t.work is None for t in ts) else sum(t.work or 0 for t in ts)
        moved = sum(t.bytes for t in ts)
        by_bound = {b: sum(t.time_s for t in ts if t.bound == b) for b in ("compute", "memory")}
        bound = "unknown" if not any(by_bound.values()) else max(by_bound, key=by_bound.__getitem__)
        out.append(OpTime(op_type=op, nodes=len(ts), work=work, bytes=moved,
                          time_s=sum(t.time_s for t in ts), bound=bound,
                          intensity=work / moved if work is not None and moved else None))
    return tuple(sorted(out, key=lambda o: -o.time_s))


def roofline_json(r: Roofline) -> dict[str, Any]:
    """The roofline as JSON: seconds, ops, bytes; per op type."""
    return {
        "device": r.device,
        "bound_s": r.bound_s,
        "floor_s": r.floor_s,
        "compute_s": r.compute_s,
        "memory_s": r.memory_s,
        "flops_available": r.flops_available,
        "nodes_without_work": list(r.no_work),
        "device_missing": list(r.missing),
        "by_op": [
            {"op_type": o.op_type, "nodes": o.nodes, "work": o.work, "bytes": o.bytes,
             "time_s": o.time_s, "bound": o.bound, "intensity": o.intensity}
            for o in r.by_op
        ],
    }


def _ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s >= 1e-4 else f"{s * 1e6:.2f} µs"


def roofline_lines(r: Roofline, *, top: int = 8, indent: str = "  ") -> list[str]:
    """Table lines: the bound, the floor, and the op types taking the most time."""
    lines = [
        f"{indent}roofline on {r.device} (a lower bound, not a prediction):",
        f"{indent}  latency bound {_ms(r.bound_s)}  one kernel per node, each at "
        "max(work/peak, bytes/bandwidth)",
        f"{indent}  fused floor   {_ms(r.floor_s)}  perfect fusion: weights, inputs and outputs "
        "moved once",
    ]
    if not r.flops_available:
        lines.append(f"{indent}  FLOPs unavailable (graphmem.flops not installed): the compute "
                     "term is missing, the bound is memory traffic only")
    elif r.no_work:
        lines.append(f"{indent}  {len(r.no_work)} nodes without a FLOP count (memory term only): "
                     + ", ".join(r.no_work[:4]) + (" …" if len(r.no_work) > 4 else ""))
    if r.missing:
        lines.append(f"{indent}  the device states no {' and no '.join(r.missing)}: those terms "
                     "are missing from the bound")
    lines.append(f"{indent}  {'op type':<20} {'nodes':>5} {'work':>10} {'moved':>11} "
                 f"{'ops/byte':>9} {'time':>11}  bound")
    for o in r.by_op[:top]:
        ai = "-" if o.intensity is None else f"{o.intensity:.2f}"
        lines.append(f"{indent}  {o.op_type:<20} {o.nodes:>5} {format_count(o.work):>10} "
                     f"{format_bytes(o.bytes):>11} {ai:>9} {_ms(o.time_s):>11}  {o.bound}")
    if len(r.by_op) > top:
        lines.append(f"{indent}  … {len(r.by_op) - top} more op types")
    return lines


def device_section(a: Analysis, device: Device, *, overhead_bytes: int = 0,
                   tf32: bool = True, session: Any = None) -> dict[str, Any]:
    """The ``device`` object of ``peak --device --json``: the device, whether the analysis fits
    its memory (with ``overhead_bytes`` reserved; null when the device's memory is not known) and
    the roofline (null when the device states no rates and no bandwidth). With ``session`` (the
    session block's figures) the fit is on its ``resident_bytes``, as ``graphmem fit`` decides it;
    without, on the requested total; ``memory.figure`` names the one used."""
    return {
        "device": device_json(device),
        "memory": _fit(a, device, overhead_bytes, session),
        "roofline": roofline_json(roofline(a, device, tf32=tf32)) if _has_roof(device) else None,
    }


def _fit(a: Analysis, device: Device, overhead_bytes: int, session: Any = None) -> dict[str, Any] | None:
    if device.memory_bytes is None:
        return None
    figure, used = _used(a, session)
    needed = used + overhead_bytes
    return {
        "figure": figure,
        "used_bytes": used,
        "budget_bytes": device.memory_bytes,
        "overhead_bytes": overhead_bytes,
        "needed_bytes": needed,
        "fits": needed <= device.memory_bytes,
        "headroom_bytes": device.memory_bytes - needed,
    }


def _used(a: Analysis, session: Any) -> tuple[str, int]:
    """The figure a device check compares: the session's resident bytes when known (what
    ``graphmem fit`` compares by default), else the requested total."""
    if session is not None:
        return "session.resident_bytes", int(session.resident_bytes)
    return "total_bytes", a.total_bytes


def device_lines(a: Analysis, device: Device, *, overhead_bytes: int = 0,
                 tf32: bool = True, session: Any = None) -> list[str]:
    """Table lines for ``peak --device``: fit in the device's memory (on the session's resident
    bytes when ``session`` is given), then the roofline."""
    lines = [f"  device: {device.title} ({device.memory}; {device.source})"]
    fit = _fit(a, device, overhead_bytes, session)
    if fit is None:
        lines.append("  memory: not known for this device (give --memory)")
    else:
        verdict = "fits" if fit["fits"] else "DOES NOT FIT"
        word = "resident (predicted)" if fit["figure"] == "session.resident_bytes" else "total requested"
        lines.append(
            f"  memory: {word} {format_bytes(fit['used_bytes'])} + overhead "
            f"{format_bytes(overhead_bytes)} = {format_bytes(fit['needed_bytes'])} of "
            f"{format_bytes(device.memory_bytes)}: {verdict}, headroom "
            f"{format_bytes(fit['headroom_bytes'])}"
        )
    if _has_roof(device):
        lines.extend(roofline_lines(roofline(a, device, tf32=tf32)))
    else:
        lines.append("  roofline: the device states no rates and no bandwidth (add them with "
                     "--device-spec, e.g. fp32=2T,bandwidth=100GB/s)")
    return lines


def _has_roof(device: Device) -> bool:
    return bool(device.bandwidth or device.peak)
