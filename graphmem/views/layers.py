"""The per-layer view: for each node (or name scope), what it costs.

For each node: op type, output shape, parameters (weights it reads, each counted at its first
reader only, so shared weights are not counted twice), FLOPs and share of the total, output
bytes, and whether one of its outputs is held at the activation peak. ``group_depth`` folds nodes
into their name scope (``/layer1/layer1.0/conv1/Conv`` at depth 2 → ``/layer1/layer1.0``).
"""

from __future__ import annotations

from dataclasses import dataclass

from graphmem.analysis.result import Analysis
from graphmem.errors import UsageError
from graphmem.model.program import tensor_size

__all__ = ["LayerRow", "layer_rows", "group_rows", "SORT_KEYS"]

SORT_KEYS = ("order", "flops", "params", "memory")


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerRow:
    """One node or name scope."""

    name: str
    op_type: str  # for a group: the op types it holds, most FLOPs first
    output_shape: tuple[int | str | None, ...] | None
    params: int
    flops: int
    macs: int
    flop_share: float
    output_bytes: int
    live_at_peak: bool
    unsupported: int  # nodes whose FLOPs are unknown (not in ``flops``)
    nodes: int


def layer_rows(
    a: Analysis, *, sort: str = "order", top: int | None = None, group_depth: int | None = None
) -> list[LayerRow]:
    """Rows in execution order (or sorted), optionally grouped by name scope and cut to ``top``."""
    if sort not in SORT_KEYS:
        raise UsageError(f"--sort {sort}: expected one of {', '.join(SORT_KEYS)}")
    if top is not None and top < 1:
        raise UsageError("--top must be a positive number")
    if group_depth is not None and group_depth < 1:
        raise UsageError("--group must be a positive depth")
    total = max(a.flops.flops, 1)
    rows: list[LayerRow] = []
    _node_rows(a, a.graph, a.order, a.types, a.flops, a.bodies, prefix="", times=1, total=total, seen=set(), out=rows)
    if group_depth is not None:
        rows = _grouped(rows, group_depth, total)
    if sort != "order":
        key = {"flops": lambda r: r.flops, "params": lambda r: r.params, "memory": lambda r: r.output_bytes}[sort]
        rows.sort(key=key, reverse=True)
    return rows[:top] if top else rows


def _node_rows(a, g, order, types, flops, bodies, *, prefix, times, total, seen, out) -> None:
    """Rows of one graph's nodes; a control-flow node is followed by the rows of the bodies it
    ran (``If_3/then/MatMul``), their FLOPs counted over every execution (``times``)."""
    weights = g.model.weights
    for nid in order:
        node = g.node(nid)
        params = 0
        for x in node.input:
            if x in weights and (prefix, x) not in seen:
                seen.add((prefix, x))
                params += weights[x].numel
        cost = flops.costs.get(nid)
        outs = [o for o in node.output if o]
        first = types.get(outs[0]) if outs else None
        name = prefix + (node.name or f"{node.op_type}_{nid}")
        node_flops = (cost.flops if cost else 0) * times
        out.append(
            LayerRow(
                name=name,
                op_type=node.op_type,
                output_shape=first.shape if first is not None else None,
                params=params,
                flops=node_flops,
                macs=(cost.macs if cost else 0) * times,
                flop_share=node_flops / total,
                output_bytes=sum(tensor_size(types.get(o)) or 0 for o in outs),
                live_at_peak=not prefix and any(o in a.activations.live_at_peak for o in outs),
                unsupported=int(cost is not None and cost.outcome == "unsupported"),
                nodes=1,
            )
        )
        for body in bodies.get(nid, ()):
            _node_rows(a, body.graph, body.order, body.types, body.flops, body.nested, prefix=body.label + "/",
                       times=times * body.executions, total=total, seen=seen, out=out)


def _scope(name: str, depth: int) -> str:
    parts = [p for p in name.split("/") if p]
    if len(parts) <= 1:
        return name
    return "/" + "/".join(parts[: min(depth, len(parts) - 1)])


def group_rows(rows: list[LayerRow], depth: int, total_flops: int) -> list[LayerRow]:
    """Node rows (from :func:`layer_rows`, in order) folded into their name scope at ``depth``,
    FLOP shares taken of ``total_flops``; the same as ``layer_rows(a, group_depth=depth)``."""
    return _grouped(rows, depth, max(total_flops, 1))


def _grouped(rows: list[LayerRow], depth: int, total: int) -> list[LayerRow]:
    groups: dict[str, list[LayerRow]] = {}
    for r in rows:
        groups.setdefault(_scope(r.name, depth), []).append(r)
    out = []
    for name, members in groups.items():
        by_op: dict[str, int] = {}
        for r in members:
            by_op[r.op_type] = by_op.get(r.op_type, 0) + r.flops
        flops = sum(r.flops for r in members)
        out.append(
            LayerRow(
                name=name,
                op_type=",".join(k for k, _ in sorted(by_op.items(), key=lambda kv: -kv[1])),
                output_shape=members[-1].output_shape,
                params=sum(r.params for r in members),
                flops=flops,
                macs=sum(r.macs for r in members),
                flop_share=flops / total,
                output_bytes=sum(r.output_bytes for r in members),
                live_at_peak=any(r.live_at_peak for r in members),
                unsupported=sum(r.unsupported for r in members),
                nodes=len(members),
            )
        )
    return out
