"""The one table of FLOP rules, keyed by ``(domain, op_type)`` ("" is the default domain).

:data:`REGISTRY` merges the per-domain tables; :func:`evaluate` is the only way a node's cost
is computed: look the rule up (no rule → unsupported "no rule for ..."), run it, and book the
work of an op whose tensors are all integer or bool as ``int_ops`` instead of ``flops``.
"""

from __future__ import annotations

from onnx import TensorProto

from graphmem.flops.contrib import MS_TABLE, NCHWC_TABLE
from graphmem.flops.cost import Cost, NodeView, Rule, unsupported
from graphmem.flops.default_ops import DEFAULT_TABLE
from graphmem.optable import OpRule, OpTable, normalize_domain

__all__ = ["Entry", "REGISTRY", "lookup", "evaluate", "run", "normalize_domain", "FLOAT_DTYPES"]


#: A rule and the outcome it has for the op in general ("counted" | "zero" | "unsupported"):
#: what coverage reports.
Entry = OpRule[Rule]

REGISTRY: OpTable[Entry] = OpTable(DEFAULT_TABLE, MS_TABLE, NCHWC_TABLE)

#: Element types whose arithmetic is floating point; every other known type books int_ops.
FLOAT_DTYPES = frozenset(
    getattr(TensorProto, n)
    for n in (
        "FLOAT", "FLOAT16", "DOUBLE", "BFLOAT16", "COMPLEX64", "COMPLEX128", "FLOAT8E4M3FN",
        "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "FLOAT8E8M0", "FLOAT4E2M1",
    )
    if hasattr(TensorProto, n)
)


def lookup(domain: str, op_type: str) -> Entry | None:
    """The registry entry of an op, or None when it has no rule."""
    return REGISTRY.lookup(domain, op_type)


def evaluate(node: NodeView) -> Cost:
    """The cost of one node: its rule's answer, or unsupported when there is no rule."""
    return run(lookup(node.domain, node.op_type), node)


def run(entry: Entry | None, node: NodeView) -> Cost:
    """:func:`evaluate` with the registry entry already looked up (None: no rule)."""
    if entry is None:
        where = f"{node.domain}:{node.op_type}" if node.domain else node.op_type
        return unsupported(f"no rule for {where}")
    cost = entry.rule(node)
    if cost.outcome == "counted" and cost.flops and not cost.int_ops and _integer_only(node):
        return Cost(flops=0, macs=cost.macs, int_ops=cost.flops)
    return cost


def _integer_only(node: NodeView) -> bool:
    """True when every tensor of known type is integer or bool (and at least one is known)."""
    known = False
    for t in (*node.inputs, *node.outputs):
        if t is None or t.dtype == 0:
            continue
        if t.dtype in FLOAT_DTYPES:
            return False
        known = True
    return known
