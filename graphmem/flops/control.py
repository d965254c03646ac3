"""Control flow: If, Loop, Scan. Their bodies are counted first (by :mod:`graphmem.flops.count`,
recursively) and handed to these rules as ``node.subgraphs`` — one :class:`Cost` per graph
attribute — so the rules stay pure functions of the view.

* If: the larger branch (by flops + int_ops): which branch runs is data, so this is an upper
  bound; both branches must be countable.
* Loop: the body times the trip count ``M`` when it is a known constant (the loop may still exit
  early through its condition: an upper bound then); no constant ``M`` → "trip count unknown".
* Scan: the body once per slice along the first scan input's axis.
"""

from __future__ import annotations

from graphmem.flops.cost import ZERO, Cost, MissingInfo, NodeView, rule, unsupported

__all__ = ["if_rule", "loop_rule", "scan_rule", "TRIP_COUNT_UNKNOWN", "MAX_TRIP_COUNT"]

TRIP_COUNT_UNKNOWN = "trip count unknown"

#: A larger constant M is a "run until the condition says stop" sentinel, not a trip count.
MAX_TRIP_COUNT = 1 << 40


def _body(node: NodeView, name: str) -> Cost:
    cost = node.subgraphs.get(name)
    if cost is None:
        raise MissingInfo(f"subgraph '{name}' not given")
    return cost


@rule
def if_rule(node: NodeView) -> Cost:
    """If: the larger of then_branch and else_branch."""
    then_c = _body(node, "then_branch")
    else_c = _body(node, "else_branch")
    for c in (then_c, else_c):
        if c.outcome == "unsupported":
            return c
    if then_c.outcome == "zero" and else_c.outcome == "zero":
        return ZERO
    return max(then_c, else_c, key=lambda c: (c.work, c.macs))


@rule
def loop_rule(node: NodeView) -> Cost:
    """Loop: body × constant trip count."""
    body = _body(node, "body")
    if body.outcome == "unsupported":
        return body
    if node.trip_count is None or node.trip_count > MAX_TRIP_COUNT:
        return unsupported(TRIP_COUNT_UNKNOWN)
    if body.outcome == "zero" or node.trip_count <= 0:  # M <= 0: the body never runs
        return ZERO
    return body.scaled(node.trip_count)


@rule
def scan_rule(node: NodeView) -> Cost:
    """Scan: body × the length of the first scan input along its scan axis.

    Opset 8 Scan has a leading batch axis and scans axis 1: body × batch × length.
    """
    body = _body(node, "body")
    if body.outcome == "unsupported":
        return body
    n_scan = node.attr_int("num_scan_inputs", 0)
    if n_scan <= 0:
        raise MissingInfo("num_scan_inputs missing")
    x = node.in_shape(len(node.inputs) - n_scan)
    if node.opset < 9:
        steps = x[0] * x[1]
    else:
        axes = node.attr_ints("scan_input_axes")
        axis = axes[0] if axes else 0
        steps = x[axis + len(x) if axis < 0 else axis]
    if body.outcome == "zero" or steps == 0:
        return ZERO
    return body.scaled(steps)
