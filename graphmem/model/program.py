"""Stage 4 — from the typed op graph to the planners' input (a :class:`Program`).

This is the only place that translates ONNX into the planner's vocabulary: each node in
execution order becomes a :class:`Step`; each tensor a :class:`Value` whose *size* comes from
the runtime shapes (dims bound) and whose reuse *key* comes from the shapes onnxruntime knows at
session creation. Keeping both is what makes the emulation exact (see ``../ORT-FACTS``: reuse
decided on symbolic shapes, sizes from the bound run).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import onnx

from graphmem.model.dtypes import STRING_OBJECT_BYTES, element_bits, tensor_bytes
from graphmem.model.graph import OpGraph
from graphmem.model.types import CONTAINERS, TensorType, is_concrete, numel
from graphmem.optable import is_default_domain
from graphmem.planner.program import Key, Program, Step, Value

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "build_program",
    "tensor_size",
    "value_size",
    "reuse_key",
    "Devices",
    "SequenceElements",
    "sequence_elements",
]

Pairs = tuple[tuple[int, int], ...]
SharingRule = Callable[[str, str], tuple[Pairs, Pairs]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Devices:
    """Where a session with several execution providers runs each node and keeps each value.

    ``main`` is the device whose arena the plan's headline figures describe; ``stream`` numbers
    each node's stream; nodes on ``main`` share buffers by ``main_sharing`` (their provider's
    kernels), the others by the ``sharing`` rule :func:`build_program` is given.
    """

    main: str
    node: Mapping[int, str]
    value: Mapping[str, str]
    stream: Mapping[int, int]
    main_sharing: Callable[[onnx.NodeProto], tuple[Pairs, Pairs]]


def tensor_size(t: TensorType | None) -> int | None:
    """Exact bytes of a tensor with a concrete shape and a sized dtype, as a session's arena holds
    it (a string tensor: its ``std::string`` objects, :data:`STRING_OBJECT_BYTES` each); None otherwise.
    Remembered by type: a graph's tensors share a few hundred types."""
    return None if t is None else _tensor_size(t)


@functools.lru_cache(maxsize=1 << 16)
def _tensor_size(t: TensorType) -> int | None:
    if t.kind != "tensor" or not is_concrete(t.shape):
        return None
    if any(d < 0 for d in t.shape):  # inferred from odd values: no size
        return None
    if t.dtype == onnx.TensorProto.STRING:
        return STRING_OBJECT_BYTES * numel(t.shape)
    return tensor_bytes(t.dtype, numel(t.shape))


def value_size(t: TensorType | None) -> int | None:
    """Bytes a value takes in the arena: a tensor's (:func:`tensor_size`); a sequence's own object
    none (its elements are buffers of their own, :func:`sequence_elements`) when every element's
    size is known; None otherwise."""
    if t is not None and t.kind in CONTAINERS:
        if t.elements is None or any(tensor_size(e) is None for e in t.elements):
            return None
        return 0
    return tensor_size(t)


@dataclass(frozen=True, slots=True, kw_only=True)
class SequenceElements:
    """The element buffers of a graph's sequences, as onnxruntime 1.31 shares them.

    ``holds``: sequence name -> the element buffers it holds in order (None for an element the
    graph did not allocate: of a graph input, a body feed or an outer value); ``created``: element
    buffer name -> (node id that allocates it, its type), in allocation order.
    """

    holds: Mapping[str, tuple[str | None, ...]]
    created: Mapping[str, tuple[int, TensorType]]
    # elements an Identity's output sequence holds: the planner gives that output its input's slot
    # (``allocation_planner.cc`` FindReusableInput before the non-tensor case; ``identity_op.h``:
    # "the output is an alias of the input: nothing to be done") and releases only the slot's
    # first value, so the output's reference holds them until the frame ends (measured: Identity
    # of a sequence keeps its elements to the end of the run)
    pinned: frozenset[str] = frozenset()

    def read_by(self, names) -> list[str]:
        """The element buffers of the sequences among ``names``."""
        return [e for n in names if n in self.holds for e in self.holds[n] if e is not None]


def sequence_elements(
    g: OpGraph,
    order: tuple[int, ...],
    runtime: Mapping[str, TensorType],
    values: Mapping[str, np.ndarray] | None = None,
) -> SequenceElements:
    """Which element buffers each sequence holds (``core/providers/cpu/sequence/sequence_ops.cc``,
    measured on onnxruntime 1.31): SequenceConstruct and SequenceInsert copy the tensors they add
    into new buffers (CloneTensor, temp-space allocator: the arena) and share the input sequence's
    (TensorSeq holds OrtValues); SequenceErase and Identity share; SplitToSequence allocates its
    pieces; a Loop copies a carried sequence into its output element by element (``loop.cc``); an
    If's output sequence is the branch's, whose elements the branch allocated. An element buffer
    is released when no live sequence holds it any more. ``values``: known input values (positions)."""
    values = values or {}
    holds: dict[str, tuple[str | None, ...]] = {}
    created: dict[str, tuple[int, TensorType]] = {}
    pinned: set[str] = set()
    for name in g.model.inputs:
        t = runtime.get(name)
        if t is not None and t.kind in CONTAINERS:
            holds[name] = (None,) * len(t.elements or ())

    def new(nid: int, out: str, elements) -> tuple[str, ...]:
        names: list[str] = []
        for t in elements:
            name = f"{out}#{len(names)}"
            created[name] = (nid, t)
            names.append(name)
        return tuple(names)

    for nid in order:
        node = g.node(nid)
        op = node.op_type if is_default_domain(node.domain) else ""
        for out in node.output:
            t = runtime.get(out)
            if not out or t is None or t.kind not in CONTAINERS:
                continue
            src = holds.get(node.input[0], ()) if node.input else ()
            if op in ("SequenceEmpty",):
                holds[out] = ()
            elif op == "SequenceConstruct":
                holds[out] = new(nid, out, [runtime.get(x) for x in node.input])
            elif op == "SequenceInsert" and t.elements is not None:
                pos = _position(values, node, 2, len(src), insert=True)
                added = new(nid, out, [t.elements[pos]])
                holds[out] = src[:pos] + added + src[pos:]
            elif op == "SequenceErase" and t.elements is not None:
                pos = _position(values, node, 1, len(src), insert=False)
                holds[out] = src[:pos] + src[pos + 1 :]
            elif op == "Identity" or (op == "OptionalGetElement" and out not in g.model.outputs):
                # OptionalGetElement (Alias(0, 0), optional_ops.cc) takes its input's value; as a
                # graph output (an If branch's) it copies the elements (CopySequenceTensor)
                holds[out] = src
                pinned.update(e for e in src if e is not None)
            else:  # SplitToSequence, Optional's copies, a Loop's or an If's: new buffers, one per element
                holds[out] = new(nid, out, t.elements or ())
    return SequenceElements(holds=holds, created=created, pinned=frozenset(pinned))


def _position(values: Mapping[str, np.ndarray], node: onnx.NodeProto, at: int, size: int, *, insert: bool) -> int:
    """The position input ``at`` of SequenceInsert / SequenceErase as an index into a sequence of
    ``size`` elements (default: append, erase the last)."""
    name = node.input[at] if len(node.input) > at else ""
    if not name:
        return size if insert else size - 1
    v = values.get(name)
    pos = int(v.reshape(-1)[0]) if v is not None else (size if insert else size - 1)
    return pos + size if pos < 0 else pos


def reuse_key(t: TensorType | None) -> Key:
    """The static identity the runtime compares for reuse; None when it never matches."""
    if t is None or t.kind != "tensor" or t.shape is None:
        return None
    bits = element_bits(t.dtype)
    if bits is None:  # strings and unknown dtypes are never reused
        return None
    return (bits, tuple(t.shape))


def build_program(
    g: OpGraph,
    order: tuple[int, ...],
    *,
    runtime: Mapping[str, TensorType],
    static: Mapping[str, TensorType],
    sharing: SharingRule,
    unwritten: Callable[[str, str], tuple[int, ...]] = lambda domain, op: (),
    devices: Devices | None = None,
    values_known: Mapping[str, np.ndarray] | None = None,
) -> tuple[Program, tuple[str, ...]]:
    """The planners' input, and the tensor name of each value (same indices).

    ``order`` is the order the steps run in; with ``devices``, values carry their device and
    steps their stream (one device, one stream, when None). The element buffers of sequences
    (:func:`sequence_elements`; ``values_known``: the runtime values, for positions) are values
    of their own, named ``seq#k``: written by the step that allocates them, read by every step
    that reads a sequence holding them, never reused, graph outputs when a graph output holds them."""
    model = g.model
    names: list[str] = []
    index: dict[str, int] = {}
    values: list[Value] = []
    seqs = sequence_elements(g, order, runtime, values_known)
    kept = set(seqs.read_by(model.outputs)) | seqs.pinned
    by_node: dict[int, list[str]] = {}
    for element, (nid, _) in seqs.created.items():
        by_node.setdefault(nid, []).append(element)

    def add(name: str, *, source: bool) -> int:
        index[name] = len(values)
        names.append(name)
        element = seqs.created.get(name)
        values.append(
            Value(
                name=name,
                size=value_size(runtime.get(name) if element is None else element[1]),
                key=None if element is not None else reuse_key(static.get(name)),
                source=source,
                output=name in model.outputs or name in kept,
                device=devices.value.get(name, "cpu") if devices is not None else "cpu",
                dynamic=element is not None,
            )
        )
        return index[name]

    for name in (*model.inputs, *model.weights):
        add(name, source=True)
    steps: list[Step] = []
    rules: dict[tuple[str, str], tuple] = {}  # (domain, op) -> (never written, sharing)
    for nid in order:
        node = g.node(nid)
        op = (node.domain, node.op_type)
        if op not in rules:
            rules[op] = (unwritten(*op), sharing(*op))
        in_pos: dict[int, int] = {}
        inputs: list[int] = []
        for k, name in enumerate(node.input):
            if name and name in index:
                in_pos[k] = len(inputs)
                inputs.append(index[name])
        inputs.extend(index[name] for name in g.implicit.get(nid, ()) if name in index)
        if seqs.holds:
            inputs.extend(index[e] for e in seqs.read_by((*node.input, *g.implicit.get(nid, ()))) if e in index)
        out_pos: dict[int, int] = {}
        outputs: list[int] = []
        # a graph output is allocated even when the kernel never writes it (onnx backend test
        # test_batchnorm_example_training_mode, measured by scripts/accuracy_nodes.py)
        never = {
            k
            for k in rules[op][0]
            if k < len(node.output) and node.output[k] not in model.outputs
        }
        for k, name in enumerate(node.output):
            if name and k in never:
                add(name, source=False)  # known to the program, never requested
            elif name:
                out_pos[k] = len(outputs)
                outputs.append(add(name, source=False))
                # the element buffers the step allocates for this sequence, right after it
                if by_node:
                    outputs.extend(add(e, source=False) for e in by_node.get(nid, ()) if e.rsplit("#", 1)[0] == name)
        on_main = devices is not None and devices.node[nid] == devices.main
        alias, inplace = devices.main_sharing(node) if devices is not None and on_main else rules[op][1]
        steps.append(
            Step(
                label=node.name or f"{node.op_type}_{nid}",
                inputs=tuple(inputs),
                outputs=tuple(outputs),
                alias=_remap(alias, in_pos, out_pos),
                inplace=_remap(inplace, in_pos, out_pos),
                stream=devices.stream[nid] if devices is not None else 0,
            )
        )
    device = devices.main if devices is not None else "cpu"
    return Program(values=tuple(values), steps=tuple(steps), device=device), tuple(names)


def _remap(pairs, in_pos, out_pos) -> tuple[tuple[int, int], ...]:
    return tuple((in_pos[i], out_pos[o]) for i, o in pairs if i in in_pos and o in out_pos)
