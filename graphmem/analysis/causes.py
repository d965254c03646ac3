"""Why a tensor has no static size, when that is knowable: the node that cannot take its inputs.

A tensor is unresolved either because a node upstream of it is, or because its own node gives no
size for inputs whose shapes are all known: a *root*. Either a dim of its output depends on
values not known before the run (NonZero; a shape computed from data), or shape inference refuses
the inputs: e.g. BERT's ``Expand`` of a slice of its 512-entry token-type table to
``[batch, seq]``: at ``seq=600`` the slice is ``[1, 512]`` and the target ``[1, 600]`` do not
broadcast, onnx refuses them and onnxruntime fails at run time ("invalid expand shape"). Each
root is named with its inputs' shapes; for the first refusal, the values of a ``--dim`` at which
the node does resolve: the shape inference of its ancestors is rerun at other values of that one
dim (bisection, assuming the values that work are a range: ``seq ≤ 512``, or ``seq ≥ K``).
Nothing is guessed: when no value of one dim alone makes the node resolve, no range is given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import networkx as nx
import numpy as np

from graphmem.analysis.request import Bindings
from graphmem.analysis.result import UnresolvedCause
from graphmem.errors import GraphmemError
from graphmem.model.graph import OpGraph
from graphmem.model.program import value_size
from graphmem.model.types import TensorType
from graphmem.ort.inference import infer_types
from graphmem.shapes.infer import RUNTIME

__all__ = ["UnresolvedCause", "unresolved_causes", "MAX_PROBES"]

#: Shape inferences of a root's ancestors, at most, over the dims searched.
MAX_PROBES = 64
#: Values up to the bound one times 2**this are tried above it.
_MAX_DOUBLINGS = 16


def unresolved_causes(
    g: OpGraph,
    order: Sequence[int],
    types: Mapping[str, TensorType],
    values: Mapping[str, np.ndarray],
    *,
    bindings: Bindings,
) -> tuple[UnresolvedCause, ...]:
    """The root nodes of the unresolved tensors of ``g`` (run in ``order``, typed ``types``, with
    the small ``values`` inference computed), in order; the first with the range of one of the
    user's ``dims`` it resolves in (the first dim for which one is found). ``bindings``: the
    ``--dim``, ``--shape`` and ``--value`` given."""
    dims = bindings.dims
    out = []
    for nid in order:
        node = g.node(nid)
        missing = tuple(o for o in node.output if o and value_size(types.get(o)) is None)
        inputs = [x for x in node.input if x]
        if not missing or g.implicit.get(nid) or any(value_size(types.get(x)) is None for x in inputs):
            continue
        label = node.name or f"{node.op_type}_{nid}"
        ranked = all(types.get(o) is not None and types[o].shape is not None for o in missing)
        cause = UnresolvedCause(node=label, op_type=node.op_type, tensors=missing, inputs=_inputs(inputs, types, values),
                                kind="value_dependent" if ranked else "refused")
        if not out and not ranked:  # the first refusal: the ones after it usually follow from it, and probing costs inferences
            upstream = nx.ancestors(g.dag, nid) | {nid}
            sub = tuple(n for n in order if n in upstream)

            def resolves(name: str, value: int) -> bool:
                try:
                    given = bindings.bind({name: value}).resolve(g.model.inputs)
                except GraphmemError:  # a value the inputs cannot take
                    return False
                r = infer_types(g, sub, view=RUNTIME, dims=given.dims, shapes=given.shapes, input_values=given.values)
                return all(value_size(r.types.get(o)) is not None for o in missing)

            budget = [MAX_PROBES]
            for name, value in sorted(dims.items(), key=lambda kv: -kv[1]):  # a long seq before batch=1
                low, high = _working_range(lambda v, name=name: resolves(name, v), value, budget)  # type: ignore[misc]
                if low is not None or high is not None:
                    cause = replace(cause, dim=name, value=value, low=low, high=high)
                    break
        out.append(cause)
    return tuple(out)


def _inputs(names: Sequence[str], types: Mapping[str, TensorType], values: Mapping[str, np.ndarray]) -> str:
    """``[1, 512], [2] = [1, 600]``: each input's shape, and its values when it holds a few."""
    shown = []
    for name in names:
        t = types.get(name)
        shape = list(t.shape) if t is not None and t.shape is not None else "?"
        v = values.get(name)
        if v is not None and v.size <= 8:
            shown.append(f"{shape} = {np.asarray(v).reshape(-1).tolist()}")
        else:
            shown.append(f"{shape}")
    return ", ".join(shown)


def _working_range(works: Callable[[int], bool], value: int, budget: list[int]) -> tuple[int | None, int | None]:
    """(low, high) such that the values from low to high work, by bisection from ``value`` (which
    does not work): below it when 1 works (low 1), else above it when some value up to
    ``value * 2**16`` does (high None); (None, None) when neither, or when the ``budget`` of
    inferences (shared by the dims searched) runs out."""

    def ok(v: int) -> bool | None:
        if budget[0] <= 0:
            return None
        budget[0] -= 1
        return works(v)

    if value > 1 and ok(1):
        lo, hi = 1, value  # lo works, hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            found = ok(mid)
            if found is None:
                return None, None
            lo, hi = (mid, hi) if found else (lo, mid)
        return 1, lo
    above, limit = max(value, 1) * 2, max(value, 1) << _MAX_DOUBLINGS
    while above <= limit:
        found = ok(above)
        if found is None:
            return None, None
        if found:
            break
        above *= 2
    else:
        return None, None
    lo, hi = value, above  # lo does not work, hi does
    while hi - lo > 1:
        mid = (lo + hi) // 2
        found = ok(mid)
        if found is None:
            return None, None
        lo, hi = (lo, mid) if found else (mid, hi)
    return hi, None
