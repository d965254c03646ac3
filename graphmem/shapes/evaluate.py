"""Evaluate small integer "shape subgraph" nodes with onnx's reference implementation.

Transformer exports compute their Reshape targets, Expand shapes and masks from the input's shape
(Shape → Gather → Concat, Range, Where, ConstantOfShape, …). Per-node shape inference cannot see
through them; evaluating those nodes on their (small, known) values can. We use
``onnx.reference`` — a maintained evaluator — instead of writing op semantics by hand.
The evaluator of a one-node function is built once per (op, attributes, opset); its op instance
is then called directly (``ReferenceEvaluator.run`` costs twice as much per call, and shape
subgraphs are hundreds of tiny calls).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import onnx
from onnx import helper

from graphmem.optable import is_default_domain

__all__ = ["evaluate_node", "MAX_VALUE_ELEMENTS"]

#: Values are computed and kept only for tensors up to this many elements.
MAX_VALUE_ELEMENTS = 1 << 16


def evaluate_node(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], opsets: dict[str, int]
) -> list[np.ndarray] | None:
    """Run one node on known input values; None when the reference evaluator cannot."""
    key = (
        node.domain,
        node.op_type,
        opsets.get(node.domain, opsets.get("", 0)),
        tuple(a.SerializeToString() for a in node.attribute),
        tuple(x is not None for x in inputs),
        len(node.output),
    )
    try:
        op = _op_instance(key)
    except Exception:  # noqa: BLE001 - any failure to build means "cannot evaluate"
        return None
    try:
        with np.errstate(all="ignore"):
            out = op.run(*inputs)
    except Exception:  # noqa: BLE001 - reference ops raise many types; all mean "unknown"
        return None
    return [np.asarray(o) for o in out]


@lru_cache(maxsize=4096)
def _op_instance(key: tuple) -> Any:
    """The reference op instance the evaluator of a one-node function runs (``rt_nodes_``)."""
    from onnx.reference import ReferenceEvaluator

    domain, op_type, version, attrs, present, n_out = key
    ins = [f"i{k}" if p else "" for k, p in enumerate(present)]
    outs = [f"o{k}" for k in range(n_out)]
    generic = helper.make_node(op_type, ins, outs, domain=domain)
    generic.attribute.extend(onnx.AttributeProto.FromString(a) for a in attrs)
    opset_ids = [helper.make_opsetid(domain, version)]
    if not is_default_domain(domain):
        opset_ids.append(helper.make_opsetid("", 18))
    fn = helper.make_function(
        "graphmem.eval", "node", [x for x in ins if x], outs, [generic], opset_ids
    )
    (op,) = ReferenceEvaluator(fn).rt_nodes_
    return op
