"""Control flow as PyTorch trains it: an If whose branch is known is the ops of that branch, a
Loop whose trip count is known is its body once per iteration, a Scan its body once per slice.

An ONNX If or Loop in a training export comes from Python control flow in the model's
``forward`` (``torch.jit.script``): eager PyTorch runs the branch the condition picks and the
loop body once per iteration, and autograd records exactly those ops, so a training step costs
what the flat sequence of executed ops costs. :func:`inline_control_flow` builds that sequence
from what the runtime view of shape inference knows (:mod:`graphmem.shapes.controlflow`: the
branch a known condition selects, every iteration of a Loop), round after round until no
control flow is left:

* If: the branch's nodes, its internal values renamed ``If_3/then/…``, its outputs written as
  the If's outputs;
* Loop: iteration k's body nodes renamed ``Loop_1/k/…``, the iteration number a constant k, the
  carried values of iteration k-1 as its inputs; the Loop's carried outputs are the last
  iteration's, its scan outputs the iterations' stacked (Unsqueeze + Concat on axis 0, as
  ``torch.stack`` of a Python list);
* the weights a body holds are one parameter, shared by every iteration; those of an If's other
  branch exist too (parameters without a gradient).

* Scan: the Python loop ``for t in range(T)`` over the scanned axis (its length after shape
  resolution): iteration t's body nodes renamed ``Scan_2/t/…``, scan input j's slice
  ``x_j.select(axis_j, t)`` (a Gather of one index, a view; ``T-1-t`` when reversed), the state
  of iteration t-1 as its state, scan output j the iterations' stacked on its axis (reversed:
  in the opposite order); Scan 8 that loop per batch entry b (``Scan_2/b0/t/…``), its states
  and inputs ``select(0, b)``, its outputs stacked on axis 0.

An If whose condition is not known raises :class:`UnknownBranch` unless ``branches`` names the
branch to assume: :mod:`graphmem.training.estimate` estimates both and keeps the larger. What
cannot be estimated is refused in one line naming the node: a Loop whose trip count or a Scan
whose length is not known, a Scan 8 whose batch entries scan different lengths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import onnx
from onnx import helper

from graphmem.errors import UnsupportedOpError
from graphmem.model.graph import build_graph
from graphmem.model.loading import Model, Weight
from graphmem.model.subgraphs import body_graphs, body_model, is_control_flow
from graphmem.model.types import type_from_proto
from graphmem.ort.inference import infer_types
from graphmem.ort.order import file_order
from graphmem.shapes.controlflow import BodyRun
from graphmem.shapes.infer import RUNTIME

__all__ = ["MAX_ROUNDS", "UnknownBranch", "inline_control_flow"]

#: Nesting depth unrolled at most (each round removes one level).
MAX_ROUNDS = 16

_INT64, _BOOL = onnx.TensorProto.INT64, onnx.TensorProto.BOOL


class UnknownBranch(UnsupportedOpError):
    """An If whose condition is not known statically: the caller estimates both branches."""

    def __init__(self, node: str, condition: str, path: str) -> None:
        super().__init__(
            f"{path}: graphmem train cannot tell which branch If '{node}' takes (its condition "
            f"'{condition}' is not known): bind the inputs it depends on with --value NAME=V"
        )
        self.node, self.condition = node, condition


def inline_control_flow(
    model: Model,
    *,
    dims: Mapping[str, int] | None = None,
    shapes: Mapping[str, Sequence[Any] | None] | None = None,
    values: Mapping[str, np.ndarray] | None = None,
    branches: Mapping[str, str] | None = None,
) -> tuple[Model, tuple[str, ...]]:
    """``model`` with every If, Loop and Scan replaced by the ops that run, and one line per node
    saying what it became; the model itself when it has no control flow. ``branches`` names the
    branch (``then_branch`` | ``else_branch``) assumed for an If whose condition is not known.
    Raises :class:`UnknownBranch` for such an If not in ``branches``, and
    :class:`UnsupportedOpError` naming a node that cannot be estimated."""
    branches = branches or {}
    notes: list[str] = []
    for _ in range(MAX_ROUNDS):
        if not any(is_control_flow(n) for n in model.nodes):
            return model, tuple(notes)
        g = build_graph(model)
        order = file_order(g)
        shaped = infer_types(g, order, view=RUNTIME, dims=dims, shapes=shapes, input_values=values)
        flat = _Flat(model)
        for nid in order:
            node = g.node(nid)
            if not is_control_flow(node):
                flat.nodes.append(node)
                continue
            cfs = shaped.bodies[nid]
            name = node.name or f"{node.op_type}_{nid}"
            if node.op_type == "If":
                runs, assumed = cfs.runs, False
                if not runs and name in branches and branches[name] in cfs.branches:
                    runs, assumed = (cfs.branches[branches[name]],), True
                if not runs:
                    raise UnknownBranch(name, node.input[0] if node.input else "", str(model.path))
                notes.append(flat.inline_if(node, name, runs, assumed=assumed))
            elif node.op_type == "Loop":
                if cfs.problem is not None:
                    raise UnsupportedOpError(
                        f"{model.path}: graphmem train cannot unroll Loop '{name}': {cfs.problem} (bind it with "
                        "--value)"
                    )
                notes.append(flat.unroll_loop(node, name, cfs.runs))
            else:
                if cfs.problem is not None:
                    raise UnsupportedOpError(
                        f"{model.path}: graphmem train cannot unroll Scan '{name}': {cfs.problem} (bind it with "
                        "--shape or --value)"
                    )
                v8 = model.opsets.get("", 0) < 9
                first = shaped.types.get(node.input[-1]) if v8 else None  # Scan 8: [batch, sequence, ...]
                batch = first.shape[0] if first is not None and first.shape else None
                if cfs.lengths is not None and (
                    first is None or first.shape is None or set(cfs.lengths) != {first.shape[1]}
                ):
                    batch = None  # entries scanning fewer slices than the sequence: refused
                notes.append(flat.unroll_scan(node, name, cfs.runs, batch if isinstance(batch, int) else None, v8=v8))
        model = flat.model()
    raise UnsupportedOpError(f"{model.path}: graphmem train unrolls control flow nested at most {MAX_ROUNDS} deep")


class _Flat:
    """The nodes, weights and values of the flattened graph being built."""

    def __init__(self, model: Model) -> None:
        self.source = model
        self.nodes: list[onnx.NodeProto] = []
        self.weights: dict[str, Weight] = dict(model.weights)
        self.values: dict[str, np.ndarray] = dict(model.values)

    def model(self) -> Model:
        m = self.source
        graph = helper.make_graph(self.nodes, m.graph.name or "g", list(m.graph.input), list(m.graph.output))
        return replace(m, graph=graph, nodes=tuple(self.nodes), weights=self.weights, values=self.values, node_ids=())

    def constant(self, name: str, value: np.ndarray) -> str:
        """A constant of the unrolled loop (the iteration number, the condition, the stacking
        axis, a slice index): a Python value in PyTorch, no tensor memory (0 bytes), never a
        parameter (0 elements)."""
        if name not in self.weights:
            dtype = onnx.helper.np_dtype_to_tensor_dtype(value.dtype)
            self.weights[name] = Weight(name=name, dtype=dtype, dims=tuple(value.shape), numel=0,
                                        nbytes=0, external=False, from_constant_node=True)
            self.values[name] = value
        return name

    def emit(
        self, run: BodyRun, prefix: str, weights_prefix: str, feeds: Mapping[str, str], outputs: Mapping[str, str]
    ) -> dict[str, str]:
        """The nodes of one body execution, renamed; returns body name -> flat name."""
        body = run.model
        names: dict[str, str] = dict(feeds)
        for w, weight in body.weights.items():
            if w in names:
                continue
            flat = weights_prefix + w
            names[w] = flat
            if flat not in self.weights:
                self.weights[flat] = replace(weight, name=flat)
                if w in body.values:
                    self.values[flat] = body.values[w]
        for node in body.nodes:
            for o in node.output:
                if o:
                    names[o] = outputs.get(o, prefix + o)
        for node in body.nodes:
            self.nodes.append(_renamed(node, names, prefix))
        return names

    def inline_if(self, node: onnx.NodeProto, name: str, runs: Sequence[BodyRun], *, assumed: bool = False) -> str:
        run = runs[0]
        attr = {"then_branch": "then", "else_branch": "else"}[run.attr]
        for other, graph in body_graphs(node):  # the other branch's parameters exist, unused
            if other != run.attr:
                short = {"then_branch": "then", "else_branch": "else"}[other]
                body = body_model(self.source, graph, inputs={}, outer={}, label=short)
                for w, weight in body.weights.items():
                    if not weight.from_constant_node:
                        self.weights.setdefault(f"{name}/{short}/{w}", replace(weight, name=f"{name}/{short}/{w}"))
        body_outs = [vi.name for vi in run.model.graph.output]
        produced = {o for n in run.model.nodes for o in n.output if o}
        direct = {b: out for b, out in zip(body_outs, node.output) if out and b in produced}
        names = self.emit(run, f"{name}/{attr}/", f"{name}/{attr}/", {}, direct)
        for b, out in zip(body_outs, node.output):
            if out and b not in direct:  # a value from outside returned as it is: the same tensor
                self.nodes.append(helper.make_node("Identity", [names.get(b, b)], [out], name=f"{name}/{attr}/{out}"))
        return f"If '{name}': its {attr} branch ({len(run.model.nodes)} ops{', assumed' if assumed else ''})"

    def unroll_loop(self, node: onnx.NodeProto, name: str, runs: Sequence[BodyRun]) -> str:
        carried = list(node.input[2:])
        n_carried = len(carried)
        scans: list[list[str]] = [[] for _ in node.output[n_carried:]]
        current = carried
        for k, run in enumerate(runs):
            inputs = [vi.name for vi in run.model.graph.input]
            outs = [vi.name for vi in run.model.graph.output]
            feeds = {inputs[0]: self.constant(f"{name}/{k}/iteration", np.array(k, np.int64))}
            if len(inputs) > 1:
                feeds[inputs[1]] = self.constant(f"{name}/condition", np.array(True))
            feeds.update({b: c for b, c in zip(inputs[2:], current) if c})
            names = self.emit(run, f"{name}/{k}/", f"{name}/body/", feeds, {})
            current = [names.get(o, o) for o in outs[1 : 1 + n_carried]]
            for j, o in enumerate(outs[1 + n_carried :]):
                scans[j].append(names.get(o, o))
        for out, value in zip(node.output[:n_carried], current):
            if out:
                self.nodes.append(helper.make_node("Identity", [value], [out], name=f"{name}/{out}"))
        body_outputs = list(dict(body_graphs(node))["body"].output)
        for j, (out, pieces) in enumerate(zip(node.output[n_carried:], scans)):
            if not out:
                continue
            if not pieces:  # no iteration: an empty output, [0, *the body output's dims] (loop.cc)
                t = (
                    type_from_proto(body_outputs[1 + n_carried + j].type)
                    if 1 + n_carried + j < len(body_outputs)
                    else None
                )
                dims = [d if isinstance(d, int) and d >= 0 else 0 for d in ((t.shape or ()) if t is not None else ())]
                dtype = helper.tensor_dtype_to_np_dtype(t.dtype) if t is not None and t.dtype else np.float32
                empty = self.constant(f"{name}/{out}/empty", np.zeros([0, *dims], dtype))
                self.nodes.append(helper.make_node("Identity", [empty], [out], name=f"{name}/{out}"))
                continue
            self.stack(name, out, pieces, axis=0)
        return f"Loop '{name}': its body unrolled {len(runs)} times"

    def stack(self, name: str, out: str, pieces: Sequence[str], *, axis: int) -> None:
        """``out`` = the per-iteration ``pieces`` stacked on ``axis`` (Unsqueeze + Concat, as
        ``torch.stack`` of a Python list)."""
        stacked = []
        for k, piece in enumerate(pieces):
            stacked.append(f"{name}/{k}/{out}/unsqueezed")
            label = f"{name}/{k}/{out}/unsqueeze"
            if self.source.opsets.get("", 0) < 13:  # axes an attribute before opset 13
                self.nodes.append(helper.make_node("Unsqueeze", [piece], [stacked[-1]], name=label, axes=[axis]))
            else:
                axes = self.constant(f"{name}/axes/{axis}", np.array([axis], np.int64))
                self.nodes.append(helper.make_node("Unsqueeze", [piece, axes], [stacked[-1]], name=label))
        self.nodes.append(helper.make_node("Concat", stacked, [out], name=f"{name}/{out}/stack", axis=axis))

    def select(self, name: str, x: str, index: int, axis: int, out: str) -> str:
        """``out`` = ``x.select(axis, index)``: a Gather of one index (a view in PyTorch)."""
        i = self.constant(f"{name}/index/{index}", np.array(index, np.int64))
        self.nodes.append(helper.make_node("Gather", [x, i], [out], name=f"{out}/select", axis=axis))
        return out

    def unroll_scan(
        self, node: onnx.NodeProto, name: str, runs: Sequence[BodyRun], batch: int | None, *, v8: bool
    ) -> str:
        """A Scan as the Python loop ``for t in range(T)``: the state chained through the body's
        copies, scan input j's slice ``x_j.select(axis_j, t)`` (``T-1-t`` reversed), scan output j
        the iterations' ``torch.stack`` on its axis (reversed: in the opposite order). Scan 8 runs
        that loop per batch entry b (states and inputs ``select(0, b)``, outputs stacked on 0)."""
        attrs = {a.name: a for a in node.attribute}
        n_scan = attrs["num_scan_inputs"].i
        inputs = list(node.input[1:] if v8 else node.input)
        n_state = len(inputs) - n_scan
        outs = list(node.output)
        n_scan_out = len(outs) - n_state

        def ints(key: str, n: int) -> list[int]:
            return list(attrs[key].ints) if key in attrs else [0] * n

        if not runs:
            raise UnsupportedOpError(
                f"{self.source.path}: graphmem train cannot unroll Scan '{name}': it scans no slices"
            )
        run = runs[0]
        if not v8:
            in_rev, in_axes = ints("scan_input_directions", n_scan), ints("scan_input_axes", n_scan)
            out_rev, out_axes = ints("scan_output_directions", n_scan_out), ints("scan_output_axes", n_scan_out)
            final, pieces = self._scan_steps(
                name, run, f"{name}/", inputs[:n_state], inputs[n_state:], in_axes, in_rev, len(runs)
            )
            for out, value in zip(outs[:n_state], final):
                if out:
                    self.nodes.append(helper.make_node("Identity", [value], [out], name=f"{name}/{out}"))
            for j, out in enumerate(outs[n_state:]):
                if out:
                    self.stack(name, out, pieces[j][::-1] if out_rev[j] else pieces[j], axis=out_axes[j])
            return f"Scan '{name}': its body unrolled {len(runs)} times"
        # Scan 8: axis 0 batch, axis 1 sequence, in every state and scan input (scan_8.cc); a
        # batch whose entries scan different lengths (sequence_lens) is no single Python loop
        if not batch or len(runs) % batch:
            raise UnsupportedOpError(
                f"{self.source.path}: graphmem train cannot unroll Scan '{name}': its batch entries scan different "
                "lengths (sequence_lens), or its batch size is not known"
            )
        in_rev = ints("directions", n_scan)
        steps = len(runs) // batch
        per_entry: list[tuple[list[str], list[list[str]]]] = []
        for b in range(batch):
            prefix = f"{name}/b{b}/"
            states = [self.select(name, s, b, 0, f"{prefix}{s}") for s in inputs[:n_state]]
            scans = [self.select(name, x, b, 0, f"{prefix}{x}") for x in inputs[n_state:]]
            per_entry.append(self._scan_steps(name, run, prefix, states, scans, [0] * n_scan, in_rev, steps))
        for i, out in enumerate(outs[:n_state]):
            if out:
                self.stack(f"{name}/state", out, [final[i] for final, _ in per_entry], axis=0)
        for j, out in enumerate(outs[n_state:]):
            if not out:
                continue
            rows = []
            for b, (_, pieces) in enumerate(per_entry):
                rows.append(f"{name}/b{b}/{out}")
                self.stack(f"{name}/b{b}", rows[-1], pieces[j], axis=0)
            self.stack(f"{name}/rows", out, rows, axis=0)
        return f"Scan '{name}': its body unrolled {len(runs)} times ({batch} batch entries of {steps})"

    def _scan_steps(self, name: str, run: BodyRun, prefix: str, states: Sequence[str], scans: Sequence[str],
                    axes: Sequence[int], reverse: Sequence[int], steps: int) -> tuple[list[str], list[list[str]]]:
        """``steps`` executions of a Scan body: the last states, and each scan output's pieces."""
        feeds_in = [vi.name for vi in run.model.graph.input]
        body_outs = [vi.name for vi in run.model.graph.output]
        n_state = len(states)
        current = list(states)
        pieces: list[list[str]] = [[] for _ in body_outs[n_state:]]
        for k in range(steps):
            feeds = {b: c for b, c in zip(feeds_in[:n_state], current) if c}
            for j, (b, x) in enumerate(zip(feeds_in[n_state:], scans)):
                t = steps - 1 - k if reverse[j] else k
                feeds[b] = self.select(name, x, t, axes[j], f"{prefix}{k}/{b}")
            names = self.emit(run, f"{prefix}{k}/", f"{name}/body/", feeds, {})
            current = [names.get(o, o) for o in body_outs[:n_state]]
            for j, o in enumerate(body_outs[n_state:]):
                pieces[j].append(names.get(o, o))
        return current, pieces


def _renamed(node: onnx.NodeProto, names: Mapping[str, str], prefix: str) -> onnx.NodeProto:
    """A copy of ``node`` with its names mapped (nested bodies: the outer names they read)."""
    out = onnx.NodeProto()
    out.CopyFrom(node)
    out.name = prefix + (node.name or node.op_type)
    del out.input[:]
    out.input.extend(names.get(x, x) if x else x for x in node.input)
    del out.output[:]
    out.output.extend(names.get(x, x) if x else x for x in node.output)
    for attr in out.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            _rename_free(attr.g, names)
    return out


def _rename_free(graph: onnx.GraphProto, names: Mapping[str, str]) -> None:
    """Rename, in place, the names ``graph`` (and its nested bodies) reads from outside."""
    bound = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    for node in graph.node:
        for k, x in enumerate(node.input):
            if x and x not in bound and x in names:
                node.input[k] = names[x]
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                _rename_free(attr.g, {k: v for k, v in names.items() if k not in bound})
        bound.update(o for o in node.output if o)
    for o in graph.output:
        if o.name not in bound and o.name in names:
            o.name = names[o.name]
