"""Stage 4 — from the typed op graph to the planners' input (a :class:`Program`).

This is the only place that translates ONNX into the planner's vocabulary: each node in
execution order becomes a :class:`Step`; each tensor a :class:`Value` whose *size* comes from
the runtime shapes (dims bound) and whose reuse *key* comes from the shapes onnxruntime knows at
session creation. Keeping both is what makes the emulation exact (see ``../ORT-FACTS``: reuse
decided on symbolic shapes, sizes from the bound run).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import onnx

from graphmem.model.dtypes import element_bits, tensor_bytes
from graphmem.model.graph import OpGraph
from graphmem.planner.program import Key, Program, Step, Value
from graphmem.model.types import TensorType, is_concrete, numel

__all__ = ["build_program", "tensor_size", "reuse_key", "Devices"]

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
    """Exact bytes of a tensor with a concrete shape and a sized dtype; None otherwise."""
    if t is None or t.kind != "tensor" or not is_concrete(t.shape):
        return None
    if any(d < 0 for d in t.shape):  # type: ignore[operator]  # inferred from odd values: no size
        return None
    return tensor_bytes(t.dtype, numel(t.shape))  # type: ignore[arg-type]


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
    runtime: dict[str, TensorType],
    static: dict[str, TensorType],
    sharing: SharingRule,
    unwritten: Callable[[str, str], tuple[int, ...]] = lambda domain, op: (),
    devices: Devices | None = None,
) -> tuple[Program, tuple[str, ...]]:
    """The planners' input, and the tensor name of each value (same indices).

    ``order`` is the order the steps run in; with ``devices``, values carry their device and
    steps their stream (one device, one stream, when None)."""
    model = g.model
    names: list[str] = []
    index: dict[str, int] = {}
    values: list[Value] = []

    def add(name: str, *, source: bool) -> int:
        index[name] = len(values)
        names.append(name)
        values.append(
            Value(
                name=name,
                size=tensor_size(runtime.get(name)),
                key=reuse_key(static.get(name)),
                source=source,
                output=name in model.outputs,
                device=devices.value.get(name, "cpu") if devices is not None else "cpu",
            )
        )
        return index[name]

    for name in (*model.inputs, *model.weights):
        add(name, source=True)
    steps: list[Step] = []
    for nid in order:
        node = g.node(nid)
        in_pos: dict[int, int] = {}
        inputs: list[int] = []
        for k, name in enumerate(node.input):
            if name and name in index:
                in_pos[k] = len(inputs)
                inputs.append(index[name])
        inputs.extend(index[name] for name in g.implicit.get(nid, ()) if name in index)
        out_pos: dict[int, int] = {}
        outputs: list[int] = []
        # a graph output is allocated even when the kernel never writes it (onnx backend test
        # test_batchnorm_example_training_mode, measured by scripts/accuracy_nodes.py)
        never = {
            k
            for k in unwritten(node.domain, node.op_type)
            if k < len(node.output) and node.output[k] not in model.outputs
        }
        for k, name in enumerate(node.output):
            if name and k in never:
                add(name, source=False)  # known to the program, never requested
            elif name:
                out_pos[k] = len(outputs)
                outputs.append(add(name, source=False))
        on_main = devices is not None and devices.node[nid] == devices.main
        alias, inplace = devices.main_sharing(node) if on_main else sharing(node.domain, node.op_type)  # type: ignore[union-attr]
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


def _remap(pairs, in_pos, out_pos) -> tuple[tuple[int, int], ...]:  # type: ignore[no-untyped-def]
    return tuple((in_pos[i], out_pos[o]) for i, o in pairs if i in in_pos and o in out_pos)
