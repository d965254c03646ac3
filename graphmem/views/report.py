"""Stage 7 — render an :class:`~graphmem.analysis.pipeline.Analysis` as a table, and the peak
document with its device section.

The JSON document itself (``schema_version`` 1, every byte figure an exact integer) is built by
:mod:`graphmem.analysis.document`, below the gates that read it; its names are re-exported here.
Tables use binary units and name them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphmem.analysis.document import SCHEMA_VERSION, model_json, peak_json
from graphmem.analysis.result import Analysis, Approximation
from graphmem.host import host_line
from graphmem.units import byte_table, format_count

if TYPE_CHECKING:
    from graphmem.views.devices import Device

__all__ = [
    "SCHEMA_VERSION", "model_json", "peak_json", "peak_table", "peak_document", "exactness_lines",
    "approximation_summary", "approximation_effects", "APPROXIMATION_EFFECTS",
]

def peak_table(a: Analysis, *, default_level: Any = None) -> str:
    """The human-readable ``graphmem peak`` table (binary units, exact bytes beside them). Its
    header says when the level is graphmem's static default rather than onnxruntime's
    (:data:`graphmem.analysis.levels.LEVEL_NOTE`), with ``default_level``'s figures at ``all``
    when given (:func:`graphmem.analysis.levels.default_level_figures`)."""
    from graphmem.analysis.levels import default_level_line, level_note

    dims = ", ".join(f"{k}={v}" for k, v in a.model.dims.items()) or "none"
    act = a.activations
    top = " (top graph only: bodies not included)" if a.bodies else ""
    rows = [
        ("weights", a.weights.bytes, f"{format_count(a.weights.params)} params"),
        ("activations peak", act.peak_bytes, f"at node '{act.peak_node}' ({act.runtime})"),
        ("  lower bound", act.lower_bound_bytes, "most bytes that must be live at one step" + top),
        ("  best arena", act.best_arena_bytes, "greedy offset planner, same lifetimes" + top),
        ("  no reuse", act.no_reuse_bytes, "every op output in its own buffer" + top),
    ]
    if act.in_use_peak_bytes is not None:
        rows += [
            ("  with scratch", act.in_use_peak_bytes, "arena in-use high, kernel scratch included (chunk bytes)"),
            ("  largest scratch", act.scratch_bytes, "one kernel's temporary buffers"),
        ]
    rows += [
        ("inputs", a.io.inputs_bytes, ""),
        ("outputs", a.io.outputs_bytes, "included in the activations peak"),
        ("total", a.total_bytes, "weights + activations peak + inputs"),
    ]
    p = a.placement
    if p is not None:
        rows += [
            ("inputs on device", p.inputs_on_device_bytes, "feeds the session copies into the CUDA arena"),
            ("CPU arena peak", p.cpu_peak_bytes, "activations of the nodes on the CPU provider"),
            ("pinned host peak", p.pinned_peak_bytes, "Shape and MemcpyToHost outputs"),
        ]
    lines = [
        f"graphmem peak: {a.model.path}",
        f"  opset {a.model.opset}, {a.model.nodes} nodes, dims: {dims}, graph-opt {a.model.graph_opt}",
        *[f"  graph-opt {a.model.graph_opt}: {note}" for note in [level_note(a.model.graph_opt)] if note],
        *[f"  {line}" for line in [default_level_line(default_level)] if line],
        f"  host: {host_line(a.host)}",
        "",
        *byte_table(rows),
    ]
    f = a.flops
    lines.append(
        f"  {'FLOPs':<18} {format_count(f.flops):>12} {f.flops:>16,}  "
        f"{format_count(f.macs)} MACs (1 MAC = 2 FLOPs); work per run, not a rate"
    )
    if f.int_ops:
        lines.append(
            f"  {'integer ops':<18} {format_count(f.int_ops):>12} {f.int_ops:>16,}  quantized kernels and shape "
            "arithmetic"
        )
    if p is not None:
        fallback = ", ".join(f"{op} {n}" for op, n in p.no_cuda_kernel.items()) or "none"
        lines.append(
            f"  placement: {p.cuda_nodes} nodes on CUDA, {p.cpu_nodes} on CPU ({p.cpu_preferred} shape-arithmetic "
            f"nodes preferred on CPU; no CUDA kernel: {fallback}), {p.memcpy_nodes} Memcpy nodes"
        )
        if p.fp32_nodes or p.cast_nodes:
            lines.append(
                f"  float16 on CPU: {p.fp32_nodes} nodes run in float32 behind {p.cast_nodes} inserted Casts "
                "(InsertCastTransformer; their tensors are in the CPU arena)"
            )
        lines.append("  CUDA kernel workspaces (cuDNN, cuBLAS) and the CUDA context are not in these figures.")
    lines.append("")
    lines.extend(_unknowns(a))
    return "\n".join(lines)


def _unknowns(a: Analysis) -> list[str]:
    out = []
    unresolved = a.shapes.unresolved
    if unresolved:
        shown = ", ".join(unresolved[:8]) + (" …" if len(unresolved) > 8 else "")
        out.append(f"  UNRESOLVED: {len(unresolved)} tensors have no static size ({shown});")
        out.append("  they are not in the figures above, which are therefore lower estimates.")
        out += [f"  cause: {c.detail}" for c in a.shapes.causes[:3]]
        if len(a.shapes.causes) > 3:
            out.append(
                f"  (+{len(a.shapes.causes) - 3} more nodes that cannot take their inputs: shapes.causes in --json)"
            )
    else:
        out.append(f"  shapes: all {a.shapes.tensors} tensors resolved")
    if a.flops.unsupported:
        ops = ", ".join(f"{k} ×{v}" for k, v in sorted(a.flops.unsupported.items()))
        out.append(f"  FLOPs UNSUPPORTED (not counted, so FLOPs are a lower bound): {ops}")
    if a.activations.scratch_unmodelled:
        out.append(f"  scratch not modelled (counted 0): {', '.join(a.activations.scratch_unmodelled)}")
    if a.weights.unknown:
        out.append(f"  weights of unknown size (strings): {', '.join(a.weights.unknown[:8])}")
    out.extend(exactness_lines(a))
    return out


def exactness_lines(a: Analysis) -> list[str]:
    """``exact`` or, one line per kind, what was approximated (its count and first instance)."""
    if a.activations.exact:
        return ["  exact: every buffer planned from resolved shapes under the emulated runtime's rules"]
    return ["  NOT EXACT (activations.approximations):", *(f"    {line}" for line in approximation_summary(a))]


#: What each kind of approximation does to the figures, in a reader's words.
APPROXIMATION_EFFECTS = {
    "unresolved_tensor": "tensors without a static size are not in the figures, which are lower estimates",
    "unplanned_subgraph": "buffers inside control-flow bodies are not in the figures",
    "branch_assumed": "an If branch was assumed (the larger)",
    "unknown_kernel": "kernels without rules are planned from the file's shapes, sharing no buffer",
    "scratch_not_modelled": "some kernels' scratch is counted 0: only 'with scratch' may be low",
    "value_assumed": "an input value was assumed",
    "order_assumed": "onnxruntime's execution order varies between sessions: the largest figures of its orders",
    "rewrite_not_modelled": "a graph rewrite onnxruntime makes is not emulated: the figures may be low",
}


def approximation_effects(a: Analysis) -> list[str]:
    """One phrase per kind present: what it does to the figures (see :data:`APPROXIMATION_EFFECTS`)."""
    kinds = dict.fromkeys(x.kind for x in a.activations.approximations)
    return [APPROXIMATION_EFFECTS.get(k, k) for k in kinds]


def approximation_summary(a: Analysis) -> list[str]:
    """One line per kind of approximation: its count, its first instance and what it means."""
    by_kind: dict[str, list[Approximation]] = {}
    for x in a.activations.approximations:
        by_kind.setdefault(x.kind, []).append(x)
    lines = []
    for kind, xs in by_kind.items():
        first = xs[0]
        where = f"{first.node}: " if first.node else ""
        more = f" (+{len(xs) - 1} more)" if len(xs) > 1 else ""
        lines.append(f"{kind} ×{len(xs)}: {where}{first.detail}{more}")
    return lines


def peak_document(
    a: Analysis, *, as_dtype: str | None = None, device: Device | None = None, overhead_bytes: int = 0,
    default_level: Any = None,
) -> tuple[dict[str, Any], str]:
    """The ``peak`` document and table: :func:`peak_json` plus the what-if dtype, the KV cache of a
    decoder, what the session holds (``a.session``, when the analysis asked for it:
    :mod:`graphmem.analysis.hold`; the ``session`` block and the "held by the session" section)
    and, with a device, its fit and roofline section."""
    from graphmem.views.kvcache import kv_cache, kv_json, kv_lines

    kv = kv_cache(a)
    doc = peak_json(a)
    if as_dtype is not None:
        doc["as_dtype"] = as_dtype
    if kv is not None:
        doc["kv_cache"] = kv_json(kv)
    lines = [peak_table(a, default_level=default_level), *kv_lines(kv)]
    if a.session is not None:
        from graphmem.views.session import session_json, session_lines

        doc["session"] = session_json(a.session)
        lines += session_lines(a.session)
    if device is not None:  # the roofline module loads only for --device (start-up)
        from graphmem.views.roofline import device_lines, device_section

        doc["device"] = device_section(a, device, overhead_bytes=overhead_bytes, session=a.session)
        lines += device_lines(a, device, overhead_bytes=overhead_bytes, session=a.session)
    return doc, "\n".join(lines)
