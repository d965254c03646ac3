"""FLOPs and layer rows of control-flow bodies: each If/Loop/Scan node costs the bodies that ran
(an If: its branch, or the one assumed; a Loop: every iteration; a Scan: every slice), and
``layers`` lists their nodes under the node (``Loop_1/body/MatMul``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphmem.model.types import TensorType

if TYPE_CHECKING:  # control flow's modules load only for a model that has it
    from graphmem.shapes.controlflow import BodyRun

if TYPE_CHECKING:
    from graphmem.flops import FlopReport

__all__ = ["BodyLayers", "flops_with_bodies", "merge_bodies"]



@dataclass(frozen=True, slots=True, kw_only=True)
class BodyLayers:
    """One body as it ran: its nodes (for ``layers``), types, FLOPs of one execution, how often.

    ``label`` is the body's path (``Loop_1/body``); ``nested`` maps a node id of this body to the
    bodies its control-flow node ran."""

    label: str
    graph: object  # graphmem.model.graph.OpGraph
    order: tuple[int, ...]
    types: Mapping[str, TensorType]
    flops: FlopReport  # of one execution, nested bodies included
    executions: int
    nested: Mapping[int, tuple[BodyLayers, ...]]


def flops_with_bodies(graph, shapes, order, *, label: str = "", assumed: Mapping[str, str] | None = None):
    """The graph's FlopReport with each control-flow node costed as the bodies that run (an If:
    its branch, or the assumed one; a Loop: every iteration; a Scan: every slice), and the
    :class:`BodyLayers` of each control-flow node (node id -> bodies)."""
    from graphmem.flops import FlopReport, count_flops
    from graphmem.flops.cost import Cost

    assumed = assumed or {}
    report = count_flops(graph, shapes.types, order, values=shapes.values)
    if not shapes.bodies:
        return report, {}
    from graphmem.analysis.controlflow import SHORT
    costs = dict(report.costs)
    by_op = dict(report.by_op_type)
    unsupported = dict(report.unsupported)
    zero = set(report.zero)
    bodies: dict[int, tuple[BodyLayers, ...]] = {}
    for nid, cfs in shapes.bodies.items():
        node = graph.node(nid)
        node_label = label + (node.name or f"{node.op_type}_{nid}")
        runs = list(cfs.runs)
        if not runs and node.op_type == "If" and cfs.branches:
            attr = {"then": "then_branch", "else": "else_branch"}.get(assumed.get(node_label, ""), "")
            runs = [cfs.branches.get(attr) or max(cfs.branches.values(), key=lambda r: _work(r))]
        groups: dict[int, list] = {}
        for run in runs:
            groups.setdefault(id(run), [run, 0])[1] += 1
        flops = macs = int_ops = 0
        layers = []
        old = costs.get(nid)
        if old is not None and old.outcome == "counted":
            by_op[node.op_type] = by_op.get(node.op_type, 0) - old.flops
        elif old is not None and old.outcome == "unsupported":
            unsupported[node.op_type] -= 1
            if unsupported[node.op_type] == 0:
                del unsupported[node.op_type]
        for run, count in groups.values():
            sub_label = f"{node_label}/{SHORT.get(run.attr, run.attr)}"
            sub, nested = flops_with_bodies(run.graph, run.shapes, run.order, label=sub_label + "/", assumed=assumed)
            flops += sub.flops * count
            macs += sub.macs * count
            int_ops += sub.int_ops * count
            for op, f in sub.by_op_type.items():
                by_op[op] = by_op.get(op, 0) + f * count
            for op, n in sub.unsupported.items():
                unsupported[op] = unsupported.get(op, 0) + n * count
            zero.update(sub.zero)
            layers.append(BodyLayers(label=sub_label, graph=run.graph, order=run.order, types=run.shapes.types,
                                     flops=sub, executions=count, nested=nested))
        costs[nid] = (
            Cost(flops=flops, macs=macs, int_ops=int_ops) if (flops or macs or int_ops) else Cost(outcome="zero")
        )
        bodies[nid] = merge_bodies(layers)
    by_op = {k: v for k, v in by_op.items() if v}
    total = sum(c.flops for c in costs.values() if c.outcome == "counted")
    total_macs = sum(c.macs for c in costs.values() if c.outcome == "counted")
    total_int = sum(c.int_ops for c in costs.values() if c.outcome == "counted")
    return FlopReport(flops=total, macs=total_macs, int_ops=total_int, costs=costs, by_op_type=by_op,
                      unsupported=unsupported, zero=tuple(sorted(zero))), bodies


def _work(run: BodyRun) -> int:
    from graphmem.flops import count_flops

    r = count_flops(run.graph, run.shapes.types, run.order, values=run.shapes.values)
    return r.flops + r.int_ops


def merge_bodies(layers: tuple[BodyLayers, ...] | list[BodyLayers]) -> tuple[BodyLayers, ...]:
    """One :class:`BodyLayers` per body label: the executions of a body (Loop iterations, both
    branches of an If over a Loop) summed node by node, so ``layers`` lists each body once."""
    from graphmem.flops import FlopReport
    from graphmem.flops.cost import Cost

    groups: dict[str, list[BodyLayers]] = {}
    for b in layers:
        groups.setdefault(b.label, []).append(b)
    out = []
    for label, members in groups.items():
        first = members[0]
        costs: dict[int, Cost] = {}
        for m in members:
            for nid, c in m.flops.costs.items():
                have = costs.get(nid)
                scaled = c.scaled(m.executions)
                if have is None or have.outcome != "counted":
                    costs[nid] = scaled if have is None or scaled.outcome == "counted" else have
                elif scaled.outcome == "counted":
                    costs[nid] = Cost(
                        flops=have.flops + scaled.flops,
                        macs=have.macs + scaled.macs,
                        int_ops=have.int_ops + scaled.int_ops,
                    )
        nested_lists: dict[int, list[BodyLayers]] = {}
        for m in members:
            for nid, subs in m.nested.items():
                nested_lists.setdefault(nid, []).extend(subs)
        report = first.flops
        merged = FlopReport(
            flops=sum(m.flops.flops * m.executions for m in members),
            macs=sum(m.flops.macs * m.executions for m in members),
            int_ops=sum(m.flops.int_ops * m.executions for m in members),
            costs=costs,
            by_op_type=report.by_op_type,
            unsupported=report.unsupported,
            zero=report.zero,
        )
        out.append(BodyLayers(label=label, graph=first.graph, order=first.order, types=first.types, flops=merged,
                              executions=1, nested={nid: merge_bodies(subs) for nid, subs in nested_lists.items()}))
    return tuple(out)
