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

Shapes that infer can still be refused when the session runs (:mod:`graphmem.ort.refusals`:
an index past its table, a window wider than its input): :func:`check_runnable` raises for the
first such node, with the range of a bound dim it runs in, found the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace

import networkx as nx
import numpy as np

from graphmem.analysis.request import Bindings
from graphmem.analysis.result import UnresolvedCause, range_text
from graphmem.errors import GraphmemError, KernelRefusalError
from graphmem.model.graph import OpGraph
from graphmem.model.program import value_size
from graphmem.model.types import TensorType
from graphmem.ort.inference import infer_types
from graphmem.ort.refusals import CHECKS, Span, refusal
from graphmem.shapes.infer import RUNTIME, ShapeResult

__all__ = ["UnresolvedCause", "unresolved_causes", "check_runnable", "MAX_PROBES"]

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
    failed: Collection[str] = (),
) -> tuple[UnresolvedCause, ...]:
    """The root nodes of the unresolved tensors of ``g`` (run in ``order``, typed ``types``, with
    the small ``values`` inference computed), in order; the first with the range of one of the
    user's ``dims`` it resolves in (the first dim for which one is found). ``bindings``: the
    ``--dim``, ``--shape`` and ``--value`` given. ``failed``: the outputs of the nodes
    whose shape inference raised (``ShapeResult.failed_outputs``): a refusal even where the file
    declares the output's rank (onnxruntime's optimized graphs declare every tensor)."""
    out: list[UnresolvedCause] = []
    for nid in order:
        node = g.node(nid)
        missing = tuple(o for o in node.output if o and value_size(types.get(o)) is None)
        inputs = [x for x in node.input if x]
        if not missing or g.implicit.get(nid) or any(value_size(types.get(x)) is None for x in inputs):
            continue
        label = node.name or f"{node.op_type}_{nid}"
        refused = any(o in failed or types.get(o) is None or types[o].shape is None for o in missing)
        cause = UnresolvedCause(
            node=label,
            op_type=node.op_type,
            tensors=missing,
            inputs=_inputs(inputs, types, values),
            kind="refused" if refused else "value_dependent",
        )
        # the first refusal: the ones after it usually follow from it, and probing costs inferences
        if not out and refused:
            # _search calls the test before the loop moves on: ``missing`` is this node's
            found = _search(
                g,
                order,
                nid,
                lambda r: all(value_size(r.types.get(o)) is not None for o in missing),  # noqa: B023
                bindings=bindings,
            )
            if found is not None:
                cause = replace(cause, dim=found[0], value=found[1], low=found[2], high=found[3])
        out.append(cause)
    return tuple(out)


def check_runnable(
    g: OpGraph,
    order: Sequence[int],
    types: Mapping[str, TensorType],
    values: Mapping[str, np.ndarray],
    *,
    bindings: Bindings,
    failed: Collection[str] = (),
) -> None:
    """Raise :class:`KernelRefusalError` for the first node (in ``order``) whose kernel
    onnxruntime's session would refuse at these shapes and values although they infer
    (:mod:`graphmem.ort.refusals`: GPT-2's position table at ``seq`` past its 128 rows, a
    convolution wider than its input): figures for that binding describe a run that cannot
    happen. For a *ranged* check, the range of one of the user's ``dims`` the node runs in is
    searched as :func:`unresolved_causes` searches one (``seq ≤ 128``, ``h ≥ 5``). ``bindings``:
    the ``--dim``, ``--shape`` and ``--value`` given; ``failed`` as for :func:`unresolved_causes`."""
    spans: dict[str, Span | None] = {}
    for nid in order:
        why = refusal(g, nid, types, values, spans)
        if why is None:
            if _inference_refuses(g, nid, types, failed):
                return  # onnxruntime fails here first: an unresolved cause (unresolved_causes) names it
            continue
        node = g.node(nid)
        label = f"node '{node.name or f'{node.op_type}_{nid}'}' ({node.op_type})"
        found = None
        if CHECKS.of(node).ranged:
            inputs = [x for x in node.input if x]
            # _search calls the test before the loop moves on: ``inputs`` and ``nid`` are this node's
            found = _search(
                g,
                order,
                nid,
                lambda r: (
                    all(value_size(r.types.get(x)) is not None for x in inputs)  # noqa: B023
                    and refusal(g, nid, r.types, r.values) is None  # noqa: B023
                ),
                bindings=bindings,
            )
        bound = ", ".join(f"{k}={v}" for k, v in bindings.dims.items())
        if found is not None:
            name, value, low, high = found
            raise KernelRefusalError(f"{label} fails in onnxruntime at {name}={value}: {why}; "
                                     f"it runs for {range_text(name, low, high)}")
        raise KernelRefusalError(f"{label} fails in onnxruntime at {bound or 'these shapes'}: {why}")


def _inference_refuses(g: OpGraph, nid: int, types: Mapping[str, TensorType], failed: Collection[str]) -> bool:
    """Shape inference refuses node ``nid`` (raises, or gives an output no rank) although every
    input's size is known, and an output has no size: an unresolved cause of kind "refused"."""
    node = g.node(nid)
    refused = [o for o in node.output if o and (o in failed or types.get(o) is None or types[o].shape is None)]
    if not refused or all(value_size(types.get(o)) is not None for o in refused):  # the usual case, cheaply
        return False
    return not g.implicit.get(nid) and all(value_size(types.get(x)) is not None for x in node.input if x)


def _search(
    g: OpGraph, order: Sequence[int], nid: int, works: Callable[[ShapeResult], bool], *, bindings: Bindings,
) -> tuple[str, int, int | None, int | None] | None:
    """(dim, its value, low, high): the first of the user's ``dims`` (largest value first: a long
    ``seq`` before ``batch=1``) with a range of values at which the shape inference of node
    ``nid`` and its ancestors ``works``; None when no dim has one within :data:`MAX_PROBES`."""
    upstream = nx.ancestors(g.dag, nid) | {nid}
    sub = tuple(n for n in order if n in upstream)

    def at(name: str, value: int) -> bool:
        try:
            given = bindings.bind({name: value}).resolve(g.model.inputs)
        except GraphmemError:  # a value the inputs cannot take
            return False
        return works(infer_types(g, sub, view=RUNTIME, dims=given.dims, shapes=given.shapes, input_values=given.values))

    budget = [MAX_PROBES]
    for name, value in sorted(bindings.dims.items(), key=lambda kv: -kv[1]):
        low, high = _working_range(functools.partial(at, name), value, budget)
        if low is not None or high is not None:
            return name, value, low, high
    return None


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
    ``value * 2**16`` does (high None); (None, None) when neither, when the two values inside
    the range next to its end do not both work (not a range), or when the ``budget`` of
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
        return (1, lo) if _holds(ok, [v for v in (lo - 1, lo - 2) if v > 1]) else (None, None)
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
    return (hi, None) if _holds(ok, [hi + 1, hi + 2]) else (None, None)


def _holds(ok: Callable[[int], bool | None], inside: Sequence[int]) -> bool:
    """The values next to the end of a range found by bisection work too: bisection assumes the
    values that work are a range, which a divisibility breaks (an equal Split of ``n`` works at
    4 and 6, not 5: no range is claimed then)."""
    return all(ok(v) is True for v in inside)
