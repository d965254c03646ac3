"""Control flow in the analysis: plan every body execution and describe each If/Loop/Scan node
as a :class:`graphmem.ort.controlflow.Kernel` for the run-1 replay.

The shapes stage (:mod:`graphmem.shapes.controlflow`) says which bodies run with which types;
here each run becomes a planned program (its own plan, as onnxruntime gives every subgraph its
own session state) with the kernel's behaviour attached, from the kernels' sources
(``providers/cpu/controlflow/if.cc``, ``loop.cc``, ``scan_8.cc``, ``scan_9.cc``,
``scan_utils.cc``; rules and measurements in the project notes, controlflow.md):

* If: outputs whose branch output has a static shape are allocated (parent plan) before the
  branch runs and the branch writes into them; the others are allocated by the branch's
  producing node, into the parent's plan;
* Loop: 8 + 1 bytes of iteration-number and condition scalars; every body output is allocated by
  the body and kept: carried values and the condition until two iterations later, scan outputs
  until the Loop ends; a body output that is ``Identity`` of a pre-existing value is shared
  (``allocation_planner.cc``), so is a feed passed through;
* Scan: temporaries (transposed inputs, two loop-state buffers per state, temporary outputs for
  ``scan_output_axes`` != 0), outputs allocated upfront when their final shape is static, else on
  the first iteration; the body writes into slices and allocates no output.

An If whose condition is unknown runs the branch with the larger peak (an approximation, said
so); a Loop or Scan whose iterations are unknown is an error that says how to bind it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import onnx

from graphmem.errors import UnboundDimError
from graphmem.host import HostProfile
from graphmem.model.loading import Model
from graphmem.model.program import build_program, sequence_elements, tensor_size, value_size
from graphmem.model.subgraphs import body_graphs, body_model
from graphmem.model.types import CONTAINERS, TensorType, is_concrete
from graphmem.ort.allocation import OrtPlan, plan_ort
from graphmem.ort.controlflow import Frame, Kernel, Scratch, Temp, Upfront, replay
from graphmem.ort.rules import prepacks, sharing, unwritten_outputs
from graphmem.ort.scratch import step_scratch
from graphmem.planner.program import Program, Step
from graphmem.shapes.controlflow import BodyRun, ControlFlowShapes

__all__ = [
    "SHORT",
    "BranchChoice",
    "ControlFlowPlan",
    "control_flow_approximations",
    "plan_control_flow",
    "released_initializers",
]

#: Label of each subgraph attribute in paths such as ``If_3/then/MatMul_1``.
SHORT = {"then_branch": "then", "else_branch": "else", "body": "body"}

_ITER_NUM, _COND = 8, 1  # loop.cc: int64 iteration number, bool condition (the CPU allocator: the arena)


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchChoice:
    """An If whose condition is unknown: the branch assumed (the larger) and both peaks."""

    node: str
    assumed: str
    peaks: Mapping[str, int]


@dataclass(slots=True)
class ControlFlowPlan:
    """Kernels of the top program's control-flow steps, and what was assumed or left unknown."""

    host: HostProfile  # the machine the bodies' kernel scratch is for
    kernels: dict[int, Kernel] = field(default_factory=dict)
    choices: list[BranchChoice] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)  # body tensors without a static size
    bodies_planned: int = 0
    released: frozenset[str] = frozenset()  # initializers onnxruntime frees after prepacking them
    tensors: list[str] = field(default_factory=list)  # body tensors planned (path-qualified), once per body
    seen: set[str] = field(default_factory=set)
    frames: dict[object, tuple[BodyRun, Frame]] = field(default_factory=dict)
    scratch_unmodelled: dict[str, None] = field(default_factory=dict)  # body op types without a scratch rule
    scratch_bytes: int = 0  # the largest scratch one body kernel requests
    assumed: list[tuple[str, str]] = field(default_factory=list)  # (node, what): value_assumed approximations


def plan_control_flow(
    program: Program,
    plan: OrtPlan,
    names: tuple[str, ...],
    order: tuple[int, ...],
    graph_nodes: Mapping[int, onnx.NodeProto],
    runtime: Mapping[int, ControlFlowShapes],
    static: Mapping[int, ControlFlowShapes],
    static_types: Mapping[str, TensorType],
    runtime_types: Mapping[str, TensorType],
    opset: int,
    model: Model,
    *,
    host: HostProfile,
) -> ControlFlowPlan:
    """Kernels for every control-flow step of ``program`` (planned as ``plan``) on ``host``."""
    result = ControlFlowPlan(released=released_initializers(model), host=host)
    _kernels_of(
        program,
        plan,
        names,
        order,
        graph_nodes,
        runtime,
        static,
        static_types,
        runtime_types,
        opset,
        "",
        result,
        result.kernels,
    )
    return result


def _kernels_of(
    program, plan, names, order, nodes, runtime, static, static_types, runtime_types, opset, prefix, result, out
) -> None:
    index = {n: i for i, n in enumerate(names)}
    step_of = {nid: s for s, nid in enumerate(order)}
    for nid, cfs in runtime.items():
        if nid not in step_of:
            continue
        node = nodes[nid]
        label = prefix + (node.name or f"{node.op_type}_{nid}")
        ctx = _Node(node, label, program, plan, index, static.get(nid), static_types, runtime_types, opset, result)
        if node.op_type == "If":
            kernel = _if_kernel(ctx, cfs)
        elif node.op_type == "Loop":
            kernel = _loop_kernel(ctx, cfs)
        else:
            kernel = _scan_kernel(ctx, cfs)
        out[step_of[nid]] = kernel


@dataclass(frozen=True, slots=True)
class _Node:
    node: onnx.NodeProto
    label: str
    program: Program
    plan: OrtPlan
    index: Mapping[str, int]
    static: ControlFlowShapes | None
    static_types: Mapping[str, TensorType]
    runtime_types: Mapping[str, TensorType]
    opset: int
    result: ControlFlowPlan

    def fresh(self, name: str) -> bool:
        """Whether the parent plan gives this output a buffer of its own (not a reused one)."""
        v = self.index.get(name)
        return v is not None and self.plan.buffer_of[v] == v and v in set(self.plan.fresh)

    def value(self, name: str) -> int | None:
        return self.index.get(name)

    def static_body(self, attr: str) -> BodyRun | None:
        return self.static.branches.get(attr) if self.static is not None else None

    def frame(
        self,
        run: BodyRun,
        *,
        provided=frozenset(),
        sizes=None,
        shared=frozenset(),
        kept_drop=None,
        key_extra=0,
        delayed=None,
        copies=(),
    ) -> Frame:
        """Plan one execution of ``run``; ``provided`` body outputs are the kernel's buffers,
        ``shared`` ones cost nothing, ``sizes`` overrides output sizes; ``kept_drop`` maps kept
        outputs to how many frames later they are released (Loop). Identical requests share one
        planned frame (a Loop's iterations with the same types)."""
        key = (
            id(run),
            frozenset(provided),
            tuple(sorted((sizes or {}).items())),
            frozenset(shared),
            tuple(sorted((kept_drop or {}).items(), key=str)),
            key_extra,
            tuple(sorted((delayed or {}).items())),
            tuple(copies),
        )
        cached = self.result.frames.get(key)
        if cached is not None and cached[0] is run:
            return cached[1]
        frame = self._frame(
            run,
            provided=provided,
            sizes=sizes,
            shared=shared,
            kept_drop=kept_drop,
            key_extra=key_extra,
            delayed=delayed,
        )
        frame = replace(frame, copies=tuple(copies))
        self.result.frames[key] = (run, frame)
        return frame

    def _frame(self, run, *, provided, sizes, shared, kept_drop, key_extra, delayed) -> Frame:
        attr = SHORT.get(run.attr, run.attr)
        static = self.static_body(run.attr)
        static_types = static.shapes.types if static is not None else {}
        program, names = build_program(
            run.graph, run.order, runtime=run.shapes.types, static=static_types,
            sharing=sharing, unwritten=unwritten_outputs, values_known=run.shapes.values,
        )
        program = _adjust(program, names, provided=provided, shared=shared, sizes=sizes or {})
        plan = plan_ort(program)
        self.result.bodies_planned += 1
        body_label = f"{self.label}/{attr}/"
        if body_label not in self.result.seen:
            self.result.seen.add(body_label)
            produced = [o for nid in run.order for o in run.graph.node(nid).output if o]
            self.result.tensors.extend(body_label + o for o in produced)
            self.result.unresolved.extend(
                body_label + o for o in produced if value_size(run.shapes.types.get(o)) is None
            )
        nested: dict[int, Kernel] = {}
        _kernels_of(
            program, plan, names, run.order, run.graph.protos, run.shapes.bodies,
            static.shapes.bodies if static is not None else {}, static_types, run.shapes.types,
            self.opset, body_label, self.result, nested,
        )
        index = {n: i for i, n in enumerate(names)}
        kept = tuple(index[n] for n in (kept_drop or {}) if n in index)
        scratch = self._scratch(run)
        return Frame(
            label=body_label,
            program=program,
            plan=plan,
            body=body_label,
            key=_feed_key(run) ^ key_extra,
            pattern=_pattern_enabled(run, static_types, self.static_types, self.result.released),
            kept=kept,
            dropped_at={index[n]: d for n, d in (kept_drop or {}).items() if n in index},
            nested=nested,
            ops=tuple(run.graph.node(nid).op_type for nid in run.order),
            delayed={index[b]: p for b, p in (delayed or {}).items() if b in index},
            scratch=scratch,
        )

    def _scratch(self, run: BodyRun) -> tuple[Scratch, ...]:
        """Each body step's kernel scratch (``graphmem.ort.scratch``), from the body's runtime types;
        op types without a rule are noted (counted 0)."""
        per_step, unmodelled = step_scratch(run.graph, run.order, run.shapes.types, run.shapes.values,
                                            host=self.result.host)
        self.result.scratch_unmodelled.update(dict.fromkeys(unmodelled))
        self.result.scratch_bytes = max([self.result.scratch_bytes, *(ks.total for ks in per_step)])
        return tuple((ks.before, ks.after) for ks in per_step)


def _adjust(program: Program, names, *, provided, shared, sizes) -> Program:
    """The body program with the kernel's buffers: ``provided`` outputs are not requested by the
    body, ``shared`` outputs take their input's buffer, ``sizes`` overrides some sizes."""
    if not provided and not shared and not sizes:
        return program
    index = {n: i for i, n in enumerate(names)}
    values = list(program.values)
    for n in provided:
        if n in index:
            values[index[n]] = replace(values[index[n]], source=True)
    for n in shared:
        if n in index:
            values[index[n]] = replace(values[index[n]], output=False)
    for n, size in sizes.items():
        if n in index:
            values[index[n]] = replace(values[index[n]], size=size)
    steps = list(program.steps)
    shared_ids = {index[n] for n in shared if n in index}
    for s, step in enumerate(steps):
        for pos, out in enumerate(step.outputs):
            if out in shared_ids and step.inputs:
                steps[s] = replace(step, alias=((0, pos),))
    return Program(values=tuple(values), steps=tuple(steps), device=program.device)


def _feed_key(run: BodyRun) -> int:
    """CalculateMemoryPatternsKey (``session_state.cc``): XOR of every dim of every feed."""
    key = 0
    for name in run.model.inputs:
        t = run.shapes.types.get(name)
        if t is None or not is_concrete(t.shape):
            continue
        for d in t.shape:
            key ^= int(d)
    return key


def _pattern_enabled(run: BodyRun, body_static, outer_static, released) -> bool:
    """Whether an execution of the body can use and record memory patterns: every graph input and
    implicit input has a shape (rank known) in onnxruntime's view (ResolveMemoryPatternFlag,
    ``session_state.cc``), and every feed is a tensor (ExecutionFrame's ``all_tensors``): an
    outer-scope initializer released after prepacking is fed as an empty value."""
    if any(name in released for name in run.model.inputs if name not in run.feeds):
        return False
    if any(t.kind != "tensor" for t in run.model.inputs.values()):  # a sequence feed: not all tensors
        return False
    for name in run.model.inputs:
        t = body_static.get(name) or outer_static.get(name)
        if t is None or t.shape is None:
            return False
    return True


def released_initializers(model: Model) -> frozenset[str]:
    """Initializers (of any graph) whose every consumer packs them at session creation: onnxruntime
    releases them (``session_state.cc`` PrepackConstantInitializedTensors, use counts over node
    inputs of the graph and its bodies)."""
    weights: dict[str, tuple[int, int]] = {}
    uses: dict[str, int] = {}
    packed: dict[str, int] = {}

    def walk(m: Model) -> None:
        for w in m.weights.values():
            if not w.from_constant_node:
                weights.setdefault(w.name, (w.dtype, len(w.dims)))
        for node in m.nodes:
            for pos, name in enumerate(node.input):
                if not name:
                    continue
                uses[name] = uses.get(name, 0) + 1
                held = weights.get(name)
                if held is not None and prepacks(node.domain, node.op_type, pos, held[0], held[1]):
                    packed[name] = packed.get(name, 0) + 1
            for attr, sub in body_graphs(node):
                walk(body_model(m, sub, inputs={}, outer={}, label=attr))

    walk(model)
    return frozenset(n for n, count in packed.items() if count == uses.get(n))


def _outputs(run: BodyRun) -> list[str]:
    return [vi.name for vi in run.model.graph.output]


def _static_concrete(ctx: _Node, attr: str, name: str, runtime: Mapping[str, TensorType]) -> bool:
    """Whether onnxruntime knows the body output's shape statically (TensorShape::Size() >= 0)."""
    static = ctx.static_body(attr)
    t = static.shapes.types.get(name) if static is not None else None
    return t is not None and is_concrete(t.shape)


def _bytes(t: TensorType | None) -> int:
    return tensor_size(t) or 0


# ------------------------------------------------------------------------ If


def _if_kernel(ctx: _Node, cfs: ControlFlowShapes) -> Kernel:
    if cfs.runs:
        return _if_branch(ctx, cfs.runs[0])
    options = {attr: _if_branch(ctx, run) for attr, run in cfs.branches.items()}
    outputs = sum(ctx.program.values[v].size or 0 for o in ctx.node.output if o and (v := ctx.value(o)) is not None)
    peaks = {attr: max(_kernel_peak(k, ctx.program), outputs) for attr, k in options.items()}
    assumed = max(peaks, key=lambda a: (peaks[a], a == "then_branch"))
    ctx.result.choices.append(
        BranchChoice(node=ctx.label, assumed=SHORT[assumed], peaks={SHORT[a]: p for a, p in peaks.items()})
    )
    return options[assumed]


def _if_branch(ctx: _Node, run: BodyRun) -> Kernel:
    upfront: list[int] = []
    provided: set[str] = set()
    delayed: dict[str, int] = {}
    elements = sequence_elements(run.graph, run.order, run.shapes.types, run.shapes.values)
    for out, body_out in zip(ctx.node.output, _outputs(run)):
        if not out:
            continue
        t = run.shapes.types.get(body_out)
        if t is not None and t.kind in CONTAINERS:
            # the If's output is the branch's sequence (if.cc: non-tensor fetches are moved): its
            # element buffers are allocated by the branch as the If output's
            for j, element in enumerate(elements.holds.get(body_out, ())):
                v = ctx.value(f"{out}#{j}")
                if element is not None and v is not None:
                    delayed[element] = v
            continue
        if _static_concrete(ctx, run.attr, body_out, run.shapes.types):
            provided.add(body_out)  # IfImpl::AllocateOutputTensors: allocated before the branch
            v = ctx.value(out)
            if v is not None:
                upfront.append(v)
        elif not ctx.fresh(out):
            provided.add(body_out)  # delayed into a reused parent buffer: nothing requested
        elif (vid := ctx.value(out)) is not None:
            delayed[body_out] = vid  # the custom fetch allocator
    return Kernel(
        frames=(ctx.frame(run, provided=frozenset(provided), delayed=delayed),),
        before=tuple(Upfront(v) for v in upfront),
    )


def _kernel_peak(kernel: Kernel, parent: Program) -> int:
    """What one If branch adds at its highest over what the graph holds before the If: the
    outputs allocated before the branch, and the branch's own buffers (to compare branches)."""
    # one step that writes nothing, over the parent's values (outputs a branch allocates are sized there)
    program = Program(values=parent.values, steps=(Step(label="k", inputs=(), outputs=()),))
    plan = plan_ort(program)
    upfront = sum(parent.values[v].size or 0 for v in kernel.upfront)
    return upfront + replay(program, plan, {0: kernel}).peak_bytes


# ------------------------------------------------------------------------ Loop


def _loop_kernel(ctx: _Node, cfs: ControlFlowShapes) -> Kernel:
    if cfs.problem is not None:
        raise _unbound(ctx, cfs.problem)
    frames = []
    carried = len(ctx.node.input) - 2
    cond_allocated = False
    owners, ends = _sequence_owners(ctx, cfs.runs, carried)
    # carried values a later iteration's scan output is (Identity or pass-through of its feed):
    # loop_output_tensors_ holds them to the end, so they are not released two iterations later
    scanned = [_scanned_feeds(run, carried) for run in cfs.runs] + [set()]
    for i, run in enumerate(cfs.runs):
        outs = _outputs(run)
        shared = _shared_outputs(run)
        drop: dict[str, int | None] = {}
        copies: list[tuple[int, int | None]] = []
        for k, name in enumerate(outs):
            after = (
                2 if k <= carried else None
            )  # carried values and the condition: replaced as feeds two iterations later
            if 1 <= k <= carried and k - 1 in scanned[i + 1]:
                after = None
            if name in shared or name in run.model.inputs:
                continue  # shared or passed through: no buffer of its own
            if name in run.model.weights:  # an initializer returned: copied when the frame starts
                copies.append((run.model.weights[name].nbytes or 0, after))
                continue
            drop[name] = after
        # element buffers of the sequences it returns: the later sequences hold them (shared); those
        # the Loop's output sequence ends with are that output's; those a later iteration no longer
        # holds (it copied them: OptionalGetElement) go with the last carried sequence holding them;
        # the others are held to the end
        delayed = owners[i]
        for element in sequence_elements(run.graph, run.order, run.shapes.types, run.shapes.values).read_by(outs):
            if element not in delayed:
                drop[element] = ends[i].get(element)
        if i == 0:  # the first condition scalar goes unless the body hands that same value back
            cond_allocated = not _same_value(run, outs[0], run.feeds[1] if len(run.feeds) > 1 else "")
        frames.append(ctx.frame(run, shared=frozenset(shared), kept_drop=drop, copies=tuple(copies), delayed=delayed))
    # loop.cc LoopImpl::Initialize: the iteration number, then the condition (the first released
    # before iteration 2 unless the body hands it back)
    return Kernel(
        frames=tuple(frames), before=(Temp(_ITER_NUM), Temp(_COND)), released_before={1: (1,)} if cond_allocated else {}
    )


def _sequence_owners(ctx: _Node, runs, carried: int) -> tuple[list[dict[str, int]], list[dict[str, int]]]:
    """Per iteration, the element buffers it allocates that the Loop's output sequences end with,
    and the parent value each becomes (``out#j``); and the element buffers of its carried
    sequences that a later iteration's sequence no longer holds, with how many frames later they
    are released (with the last carried sequence holding them: two iterations after it, as any
    carried value). onnxruntime 1.31 hands the last iteration's carried sequence to the Loop output
    with its elements (measured on a TorchScript ``list.append`` loop: no copy at the end, the
    in-use peak stays below what copies need); an iteration's sequence shares the elements of the
    one before unless the body copies them (OptionalGetElement returned from an If branch:
    onnx's test_loop16_seq_none, measured)."""
    owners: list[dict[str, int]] = [{} for _ in runs]
    ends: list[dict[str, int]] = [{} for _ in runs]
    for c in range(carried):
        out = ctx.node.output[c] if c < len(ctx.node.output) else ""
        t = ctx.runtime_types.get(out) if out else None
        if t is None or t.kind not in CONTAINERS:
            continue
        initial = ctx.runtime_types.get(ctx.node.input[2 + c])
        track: list[tuple[int, str]] = [(-1, "")] * len((initial.elements or ()) if initial is not None else ())
        if any(n.op_type == "SequenceErase" for run in runs for n in run.model.nodes):
            ctx.result.assumed.append((ctx.label, f"the body erases from the carried sequence '{out}': an element "
                                       "erased in a later iteration is counted until the Loop ends"))
        last: dict[tuple[int, str], int] = {}  # (iteration, element) -> the last iteration whose sequence holds it
        for i, run in enumerate(runs):
            holds = sequence_elements(run.graph, run.order, run.shapes.types, run.shapes.values).holds
            body_out = _outputs(run)[c + 1]
            before = iter(track)
            track = [next(before, (-1, "")) if e is None else (i, e) for e in holds.get(body_out, ())]
            last.update({entry: i for entry in track if entry[0] >= 0})
        for (i, element), j in last.items():
            if j < len(runs) - 1:  # not in the output: released before iteration j + 2
                ends[i][element] = max(ends[i].get(element, 0), j - i + 2)
        for j, (i, element) in enumerate(track):
            v = ctx.value(f"{out}#{j}")
            if i < 0:
                ctx.result.assumed.append((ctx.label, f"the output sequence '{out}' keeps elements of the sequence "
                                           "the Loop was given: counted as buffers of its own"))
            elif v is not None:
                owners[i][element] = v
    return owners, ends


def _scanned_feeds(run: BodyRun, carried: int) -> set[int]:
    """Positions of the carried feeds one of the body's scan outputs is (kShare Identity or the
    input passed through)."""
    outs = _outputs(run)
    feeds = run.feeds[2 : 2 + carried]
    return {c for c, feed in enumerate(feeds) for scan in outs[1 + carried :] if _same_value(run, scan, feed)}


def _same_value(run: BodyRun, output: str, feed: str) -> bool:
    """Whether body output ``output`` is the feed ``feed`` itself (passed through, or Identity)."""
    if output == feed:
        return True
    return any(
        n.op_type == "Identity" and n.output and n.output[0] == output and n.input and n.input[0] == feed
        for n in run.model.nodes
    )


def _shared_outputs(run: BodyRun) -> set[str]:
    """Loop body outputs made by Identity of a pre-existing value (a body input other than the
    iteration number, or an outer-scope value): kShare in ``allocation_planner.cc``."""
    outputs = set(_outputs(run))
    iteration = run.feeds[0] if run.feeds else None
    pre_existing = set(run.model.inputs) - {iteration}
    shared = set()
    for node in run.model.nodes:
        if (
            node.op_type == "Identity"
            and node.output
            and node.output[0] in outputs
            and node.input
            and node.input[0] in pre_existing
        ):
            shared.add(node.output[0])
    return shared


def _unbound(ctx: _Node, problem: str | None) -> UnboundDimError:
    return UnboundDimError(
        f"{problem}: graphmem cannot plan its iterations (bind the inputs it depends on with "
        "--value NAME=V, fixed dims with --dim/--shape, a sequence input's elements with --shape NAME=[D0xD1,...])"
    )


# ------------------------------------------------------------------------ Scan


def _scan_kernel(ctx: _Node, cfs: ControlFlowShapes) -> Kernel:
    if cfs.problem is not None or not cfs.runs:
        raise _unbound(ctx, cfs.problem or f"Scan '{ctx.label}' has an empty sequence")
    node = ctx.node
    run = cfs.runs[0]
    attrs = {a.name: a for a in node.attribute}
    v8 = ctx.opset < 9
    n_scan = attrs["num_scan_inputs"].i
    inputs = list(node.input[1:] if v8 else node.input)
    n_state = len(inputs) - n_scan
    n_out = len(node.output) - n_state
    in_axes = list(attrs["scan_input_axes"].ints) if "scan_input_axes" in attrs else [0] * n_scan
    out_axes = list(attrs["scan_output_axes"].ints) if "scan_output_axes" in attrs else [0] * n_out
    parent = ctx.runtime_types
    body_types = run.shapes.types
    steps = len(cfs.runs)
    if v8:
        shape = (parent.get(inputs[n_state]) or TensorType(dtype=0, shape=None)).shape or (1, steps)
        batch, seq = shape[0], shape[1]
        if not isinstance(batch, int) or not isinstance(seq, int):  # known when the shapes stage ran the body
            raise _unbound(ctx, f"Scan '{ctx.label}' has an unknown batch or sequence length")
    else:
        batch, seq = 1, steps
    # scan_9.cc ScanImpl::Initialize then Execute (scan_8.cc the same without transposes), in order:
    before: list[Temp | Upfront] = []
    for k in range(n_scan):  # SetupInputs: an input scanned on another axis is transposed into a temporary
        if not v8 and in_axes[k] != 0:
            before.append(Temp(_bytes(parent.get(inputs[n_state + k]))))
    first_sizes: dict[str, int] = {}
    delayed: dict[str, int] = {}
    first_temps: dict[str, int | None] = {}  # temporaries iteration 1 allocates, held to the kernel's end
    outs = _outputs(run)
    for k, out in enumerate(node.output):  # AllocateOutputTensors, in output order
        v = ctx.value(out) if out else None
        if k < n_state:  # OutputIterator for a loop state: the final state, allocated upfront
            if v is not None:
                before.append(Upfront(v))
            continue
        axis = out_axes[k - n_state] if k - n_state < len(out_axes) else 0
        final = _bytes(parent.get(out))
        if not v8 and axis != 0:  # a temporary of the untransposed shape; the output is written after
            if _static_concrete(ctx, "body", outs[k], body_types):
                before.append(Temp(final))
            else:  # scan_utils.cc OutputIterator::Initialize: no static shape, allocated by iteration 1 (whole)
                first_sizes[outs[k]] = final
                first_temps[outs[k]] = None
        elif _static_concrete(ctx, "body", outs[k], body_types):
            if v is not None:
                before.append(Upfront(v))
        elif out and ctx.fresh(out) and v is not None:
            first_sizes[outs[k]] = final  # OutputIterator::AllocateSubgraphOutput: by iteration 1, whole
            delayed[outs[k]] = v
    # CreateLoopStateVariables (scan_utils.cc LoopStateVariable): per batch entry, per state, a_
    # when seq > 1 and b_ when seq > 2, shaped like the state
    for entry in range(batch):
        n = cfs.lengths[entry] if cfs.lengths is not None and entry < len(cfs.lengths) else seq  # sequence_lens
        for k in range(n_state):
            state = _bytes(body_types.get(run.feeds[k]))
            before.extend([Temp(state)] * ((n > 1) + (n > 2)))
    provided = frozenset(outs)
    frames = [
        ctx.frame(
            run, provided=provided - set(first_sizes), sizes=first_sizes, delayed=delayed, kept_drop=first_temps or None
        )
    ]
    if steps > 1:
        later = ctx.frame(run, provided=provided)
        frames.extend([later] * (steps - 1))
    return Kernel(frames=tuple(frames), before=tuple(before))


def control_flow_approximations(flow: ControlFlowPlan) -> list:
    """The approximations a control-flow plan makes: branches assumed, body tensors unresolved."""
    from graphmem.analysis.result import Approximation

    out = [
        Approximation(
            kind="branch_assumed",
            node=c.node,
            detail=f"condition unknown (bind the inputs it depends on with --value NAME=V): assumed the "
            f"{c.assumed} branch, the larger ("
            + ", ".join(f"{b} {p:,} B" for b, p in sorted(c.peaks.items(), key=lambda kv: -kv[1]))
            + " over what the graph holds before it)",
        )
        for c in flow.choices
    ]
    out.extend(
        Approximation(kind="unresolved_tensor", node=n, detail="body tensor without a static size")
        for n in flow.unresolved
    )
    out.extend(Approximation(kind="value_assumed", node=n, detail=d) for n, d in dict.fromkeys(flow.assumed))
    return out
