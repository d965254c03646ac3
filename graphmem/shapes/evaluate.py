"""Evaluate small integer "shape subgraph" nodes with onnx's reference implementation.

Transformer exports compute their Reshape targets, Expand shapes and masks from the input's shape
(Shape → Gather → Concat, Range, Where, ConstantOfShape, …). Per-node shape inference cannot see
through them; evaluating those nodes on their (small, known) values can. We use
``onnx.reference`` — a maintained evaluator — instead of writing op semantics by hand.
Evaluators are cached per (op, attributes, opset), since exports repeat the same few nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import onnx
from onnx import helper

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
        ev = _evaluator(key, node)
    except Exception:  # noqa: BLE001 - any failure to build means "cannot evaluate"
        return None
    if ev is None:
        return None
    feeds = {f"i{k}": v for k, v in enumerate(inputs) if v is not None}
    try:
        with np.errstate(all="ignore"):
            out = ev.run(None, feeds, attributes={})
    except Exception:  # noqa: BLE001 - reference ops raise many types; all mean "unknown"
        return None
    return [np.asarray(o) for o in out]


@lru_cache(maxsize=4096)
def _evaluator_cached(key: tuple, node_bytes: bytes):  # type: ignore[type-arg]
    from onnx.reference import ReferenceEvaluator

    domain, op_type, version, _attrs, present, n_out = key
    node = onnx.NodeProto.FromString(node_bytes)
    ins = [f"i{k}" if p else "" for k, p in enumerate(present)]
    outs = [f"o{k}" for k in range(n_out)]
    generic = helper.make_node(op_type, ins, outs, domain=domain)
    generic.attribute.extend(node.attribute)
    opset_ids = [helper.make_opsetid(domain, version)]
    if domain not in ("", "ai.onnx"):
        opset_ids.append(helper.make_opsetid("", 18))
    fn = helper.make_function(
        "graphmem.eval", "node", [x for x in ins if x], outs, [generic], opset_ids
    )
    return ReferenceEvaluator(fn)


def _evaluator(key: tuple, node: onnx.NodeProto):  # type: ignore[type-arg]
    # Cache on the key only: build from a copy without names, so equal keys share one evaluator.
    stripped = onnx.NodeProto()
    stripped.attribute.extend(node.attribute)
    return _evaluator_cached(key, stripped.SerializeToString())
