"""The forward and backward passes as planner programs, and their live bytes step by step.

Both passes are written in the planners' vocabulary (:class:`graphmem.planner.Program`: values
with sizes, steps that read and write them, ``alias`` for views) and measured with
:func:`graphmem.planner.liveness.analyze_liveness`, which groups views into storages.

Forward (PyTorch eager, the file's order): an op's output lives until its last reader; a storage
autograd saves — and each graph output, which the loss holds — lives to the end of the pass.
Buffers an op makes for backward (masks, indices, statistics) are extra outputs of its step;
so are its kernel's temporaries (:mod:`graphmem.training.kernels.workspace`), which nothing reads.

Backward (the reverse order, as the autograd engine runs a single-threaded CPU graph):

* step 0 holds every saved storage; step 1 is the loss: it reads the outputs it held and writes
  a full-size gradient for each of them;
* each op then reads the gradients of its outputs and its saved storages (released after it:
  ``retain_graph=False``) and writes a gradient per input that needs one. View ops, Add, Sub
  (first operand), Concat and inactive Dropout pass the gradient on as a view; every other op
  allocates one of the input's size. A second gradient for the same tensor is added in place
  into the first (``InputBuffer::accumulate``) and freed;
* weight gradients: a parameter's one gradient becomes its ``.grad`` and is held to the end
  (gradients ``released``: AccumulateGrad steals it) or is added into ``.grad`` and freed
  (``persistent``). A parameter several ops read (a tied embedding; a recurrent weight inside
  one GRU is its kernel's business) gets a contribution from each: the engine sums them in a
  buffer held from the first to the last, out of place at the second when the first is a view
  (:func:`_accumulate`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from graphmem.model.program import tensor_size
from graphmem.model.types import TensorType
from graphmem.optable import OpTable, domain_table
from graphmem.planner.liveness import Liveness, analyze_liveness
from graphmem.planner.program import Program, Step, Value
from graphmem.training.classify import differentiable_input
from graphmem.training.patterns import Op
from graphmem.training.saved import Saved

__all__ = ["Pass", "ForwardPass", "SavedStorage", "run_forward", "run_backward", "GRAD_VIEW_OPS"]

#: Ops whose input gradient is a view of (or the same tensor as) their output gradient.
GRAD_VIEW_OPS = frozenset(
    {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity", "Concat", "Add", "Sum"}
)
#: Outputs PyTorch never allocates: running statistics updated in place, Dropout's bool mask
#: (its saved mask is a buffer of its own), LayerNormalization's optional statistics.
_NOT_ALLOCATED: OpTable[frozenset[int]] = OpTable(domain_table("", {
    "BatchNormalization": frozenset({1, 2}), "Dropout": frozenset({1}), "LayerNormalization": frozenset({1, 2}),
}))


@dataclass(frozen=True, slots=True, kw_only=True)
class Pass:
    """Live bytes of one pass, step by step (activations, gradients; no weights)."""

    labels: tuple[str, ...]
    live_bytes: tuple[int, ...]
    peak_bytes: int
    peak_label: str
    # ``live_bytes`` split by what holds it (SAVED, ACTIVATIONS, TEMPORARIES, WEIGHT_GRADS):
    # (band, bytes per step); the bands of a step add up to its live bytes.
    bands: tuple[tuple[str, tuple[int, ...]], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SavedStorage:
    """One storage autograd holds for backward."""

    name: str  # the tensor that owns it, or "<node>:<label>" for a buffer an op made
    nbytes: int | None
    savers: tuple[int, ...]  # indices into the op list of the ops holding it
    labels: tuple[str, ...]  # what each saver holds it as ("input 0", "mask", ...)
    graph_input: bool  # a graph input: the caller's memory, counted with the inputs


@dataclass(frozen=True, slots=True, kw_only=True)
class ForwardPass:
    trace: Pass
    saved: tuple[SavedStorage, ...]
    held_outputs: tuple[str, ...]  # storages of graph outputs the loss holds (not saved ones)
    held_sizes: tuple[int, ...]
    unknown: tuple[str, ...]  # tensors of unknown size (not in the figures)


#: The bands a pass's live bytes are split into (:attr:`Pass.bands`).
SAVED = "saved for backward"
ACTIVATIONS = "activations and their gradients"
TEMPORARIES = "kernel and optimizer temporaries"
WEIGHT_GRADS = "gradients"


def _trace(program: Program, live: Liveness, band_of: Callable[[str], str]) -> Pass:
    labels = tuple(s.label for s in program.steps)
    lb = live.live_bytes
    peak = max(lb, default=0)
    deltas: dict[str, list[int]] = {}
    for st in live.storages:
        d = deltas.setdefault(band_of(program.values[st.root].name), [0] * (len(labels) + 1))
        d[st.first] += st.size
        d[st.last + 1] -= st.size
    bands = []
    for name, d in deltas.items():
        held, total = [], 0
        for x in d[:-1]:
            total += x
            held.append(total)
        bands.append((name, tuple(held)))
    return Pass(
        labels=labels, live_bytes=lb, peak_bytes=peak, peak_label=labels[lb.index(peak)] if lb else "",
        bands=tuple(bands),
    )


def run_forward(
    ops: tuple[Op, ...],
    saved: tuple[Saved, ...],
    *,
    types: dict[str, TensorType],
    sources: dict[str, str],  # name -> "input" | "weight" (weights, weight-derived tensors)
    outputs: tuple[str, ...],
    view_input: Callable[[Op], int | None],
    temporaries: tuple[int, ...] = (),
    held: tuple[str, ...] = (),
) -> ForwardPass:
    """Live bytes of the forward pass and the storages autograd saves (see module doc).
    ``held``: tensors something outside the graph holds to the end of the pass (autocast's
    cast cache), freed then unless saved."""
    values: list[Value] = []
    index: dict[str, int] = {}
    unknown: list[str] = []

    def add(name: str, size: int | None, *, source: bool = False) -> int:
        index[name] = len(values)
        values.append(Value(name=name, size=size, source=source))
        if size is None and not source:
            unknown.append(name)
        return index[name]

    for name in sources:
        add(name, tensor_size(types.get(name)), source=True)
    steps: list[Step] = []
    made: dict[tuple[int, int], int] = {}  # (op, item) -> value of a buffer the op made
    for i, op in enumerate(ops):
        ins = [index[x] for x in op.inputs if x and x in index]
        hidden = set(op.hidden)
        skip = _NOT_ALLOCATED.of(op, frozenset())
        outs: list[int] = []
        out_pos: list[int] = []  # positions (in ``outs``) of the op's own outputs
        for k, name in enumerate(op.outputs):
            if name and name not in index:
                zero = k in skip or name in hidden
                out_pos.append(len(outs))
                outs.append(add(name, 0 if zero else tensor_size(types.get(name))))
        for name in op.hidden:
            if name not in index:
                add(name, 0)
        for j, item in enumerate(saved[i].items):
            if not item.tensor:
                made[(i, j)] = add(f"{op.label}#{i}:{item.label}", item.nbytes)
                outs.append(made[(i, j)])
        if i < len(temporaries) and temporaries[i]:
            outs.append(add(f"{op.label}#{i}:temporaries", temporaries[i]))
        alias: tuple[tuple[int, int], ...] = ()
        v = view_input(op)
        if v is not None and v < len(op.inputs) and op.inputs[v] in index:
            pos = ins.index(index[op.inputs[v]])
            alias = tuple((pos, o) for o in out_pos)
        steps.append(Step(label=op.label, inputs=tuple(ins), outputs=tuple(outs), alias=alias))
    held_reads = [index[x] for i, s in enumerate(saved) for x in (it.tensor for it in s.items) if x in index]
    held_reads += [index[n] for n in outputs if n in index]
    held_reads += list(made.values())
    held_reads += [index[n] for n in held if n in index]
    steps.append(Step(label="(end of forward)", inputs=tuple(held_reads), outputs=()))
    program = Program(values=tuple(values), steps=tuple(steps))
    live = analyze_liveness(program)

    storages: dict[int, dict] = {}
    for i, s in enumerate(saved):
        for j, item in enumerate(s.items):
            vid = made.get((i, j)) if not item.tensor else index.get(item.tensor)
            if vid is None:
                continue
            root = live.storage_of[vid]
            if values[root].source and sources.get(values[root].name) != "input":
                continue  # a weight: counted once, as a weight
            entry = storages.setdefault(root, {"savers": [], "labels": []})
            entry["savers"].append(i)
            entry["labels"].append(item.label)
    saved_names = {values[root].name for root in storages}
    saved_storages = tuple(
        SavedStorage(
            name=values[root].name,
            nbytes=values[root].size,
            savers=tuple(e["savers"]),
            labels=tuple(e["labels"]),
            graph_input=values[root].source,
        )
        for root, e in storages.items()
    )
    held_outputs: list[str] = []  # not ``held`` (the tensors held from outside): the outputs the pass holds
    for n in outputs:
        if n in index:
            root = live.storage_of[index[n]]
            if root not in storages and not values[root].source and values[root].name not in held_outputs:
                held_outputs.append(values[root].name)
    return ForwardPass(
        trace=_trace(program, live, lambda name: _forward_band(name, saved_names)),
        saved=saved_storages,
        held_outputs=tuple(held_outputs),
        held_sizes=tuple(values[index[n]].size or 0 for n in held_outputs),
        unknown=tuple(unknown),
    )


def run_backward(
    ops: tuple[Op, ...],
    fwd: ForwardPass,
    *,
    types: dict[str, TensorType],
    needs_grad: frozenset[str],
    outputs: tuple[str, ...],
    weight_grads: Callable[[str], dict[str, int] | None],  # weight -> {param: grad bytes}
    keep_weight_grads: bool,
    grad_view: Callable[[Op, int], bool],
    weight_grad_view: Callable[[Op, int], bool] = lambda op, k: True,
    temporaries: tuple[int, ...] = (),
) -> Pass:
    """Live bytes of the backward pass, step by step (see module doc).

    ``weight_grad_view(op, k)``: the gradient ``op``'s backward gives the weight at input ``k``
    reaches the parameter as a view (the engine then sums a second one out of place)."""
    values: list[Value] = []
    steps: list[_StepDraft] = []

    def add(name: str, size: int | None, *, output: bool = False) -> int:
        values.append(Value(name=name, size=size, output=output))
        return len(values) - 1

    saved_vid = {s.name: add(f"saved:{s.name}", s.nbytes) for s in fwd.saved if not s.graph_input}
    held_vid = [add(f"held:{n}", size) for n, size in zip(fwd.held_outputs, fwd.held_sizes)]
    steps.append(("(forward end)", [], [*saved_vid.values(), *held_vid], []))
    by_op: dict[int, list[int]] = {}
    for s in fwd.saved:
        if not s.graph_input:
            for i in set(s.savers):
                by_op.setdefault(i, []).append(saved_vid[s.name])
    grad: dict[str, int] = {}
    loss_out = []
    for n in outputs:
        if n in needs_grad and n not in grad:
            grad[n] = add(f"d:{n}", tensor_size(types.get(n)))
            loss_out.append(grad[n])
    steps.append(("(loss backward)", list(held_vid), loss_out, []))
    # weight gradient contributions: param -> [(step, value, arrived as a view)]
    contributions: dict[str, list[tuple[int, int, bool]]] = {}
    leftover: list[int] = []
    for i in range(len(ops) - 1, -1, -1):
        op = ops[i]
        out_grads = [grad[o] for o in op.outputs if o in grad]
        if not out_grads:
            leftover.extend(by_op.get(i, ()))
            continue
        ins = out_grads + by_op.get(i, [])
        outs: list[int] = []
        alias: list[tuple[int, int]] = []
        for k, x in enumerate(op.inputs):
            if not x or x not in needs_grad or not differentiable_input(op.op_type, k, op.domain):
                continue
            wg = weight_grads(x)
            if wg is not None:
                for w, size in wg.items():
                    vid = add(f"dW:{w}", size)
                    contributions.setdefault(w, []).append((len(steps), vid, weight_grad_view(op, k)))
                    outs.append(vid)
                continue
            vid = add(f"d:{x}", tensor_size(types.get(x)))
            if grad_view(op, k):
                alias.append((0, len(outs)))
            outs.append(vid)
            grad.setdefault(x, vid)
        if i < len(temporaries) and temporaries[i]:
            outs.append(add(f"{op.label}#{i}:temporaries", temporaries[i]))
        steps.append((op.label, ins, outs, alias))
    steps.append(("(end of backward)", leftover, [], []))
    for w, found in contributions.items():
        _accumulate(values, steps, w, found, keep_weight_grads)
    program = Program(
        values=tuple(values),
        steps=tuple(Step(label=s, inputs=tuple(a), outputs=tuple(b), alias=tuple(c)) for s, a, b, c in steps),
    )
    return _trace(program, analyze_liveness(program), _backward_band)


#: A backward step while the pass is written: (label, inputs, outputs, alias), all mutable.
_StepDraft = tuple[str, list[int], list[int], list[tuple[int, int]]]


def _accumulate(
    values: list[Value], steps: list[_StepDraft], w: str, found: list[tuple[int, int, bool]], keep: bool
) -> None:
    """A parameter's gradient contributions, as the engine sums them: each goes to the
    parameter's ``AccumulateGrad`` node, which runs once the last has arrived
    (``torch/csrc/autograd/engine.cpp``: a node is ready when its dependencies are met); until
    then its ``InputBuffer`` holds the running sum (``input_buffer.cpp``, ``accumulate``). The
    second is added in place only when the first owns its storage (``can_accumulate_inplace``:
    ``storage().use_count() == 1``); a view shares its base's, so the sum is then a new tensor
    (first, second and sum alive together); later ones are added in place into that sum. The
    buffer then becomes ``.grad`` (released: held to the end) or is added into it and freed
    (persistent). One contribution: ``.grad`` itself, or freed once added."""
    first_step, buffer, view = found[0]
    if len(found) == 1:
        values[buffer] = replace(values[buffer], output=keep)
        return
    written = first_step
    for n, (step, vid, _) in enumerate(found[1:], start=1):
        reads, writes = steps[step][1], steps[step][2]
        if step != written:
            reads.append(buffer)  # the running sum lives through every contribution
        if n == 1 and view:
            buffer, written = len(values), step
            values.append(Value(name=f"dW:{w}", size=values[vid].size))
            writes.append(buffer)
    if keep:
        values[buffer] = replace(values[buffer], output=True)


def _forward_band(name: str, saved: set[str]) -> str:
    if name in saved:
        return SAVED
    return TEMPORARIES if name.endswith(":temporaries") else ACTIVATIONS


def _backward_band(name: str) -> str:
    """By the names :func:`run_backward` gives its values: ``saved:``, ``dW:``, ``d:``, ``held:``."""
    if name.startswith("saved:"):
        return SAVED
    if name.startswith("dW:"):
        return WEIGHT_GRADS
    return TEMPORARIES if name.endswith(":temporaries") else ACTIVATIONS
