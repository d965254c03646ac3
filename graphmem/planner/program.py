"""The planners' whole input: values and steps, nothing about ONNX.

A :class:`Value` is one tensor a step writes (or a source the program reads: a graph input or a
weight, which lives outside the planned memory). A :class:`Step` is one kernel launch: the values
it reads (with multiplicity), the values it writes, and which outputs must share (``alias``: a
view) or may share (``inplace``) the buffer of which input.

``key`` is the value's *static* identity for reuse matching: ``(element_bits, dims)`` where dims
are ints or symbol names; ``None`` means the shape is unknown and never matches. The planner
compares keys, never sizes, because the runtime decides reuse before it knows the sizes.

``device`` names the memory a value lives in ("cpu", "cuda", …); buffers are reused only within
one device, and a program's ``device`` is the one whose arena its headline figures describe.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Key", "Value", "Step", "Program", "same_key"]

Key = tuple[int, tuple[int | str | None, ...]] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Value:
    """One tensor: its bytes at run time (None when unknown) and its static reuse key."""

    name: str
    size: int | None
    key: Key = None
    source: bool = False  # graph input or weight: owned outside the planned memory
    output: bool = False  # graph output: its own buffer, held to the end of the run
    device: str = "cpu"  # the memory (allocator) the value lives in
    # allocated by its kernel while it runs (a sequence's element): outside a frame's memory pattern
    dynamic: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One kernel: reads ``inputs`` and writes ``outputs`` (indices into ``Program.values``)."""

    label: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    alias: tuple[tuple[int, int], ...] = ()  # (input position, output position): must share
    inplace: tuple[tuple[int, int], ...] = ()  # (input position, output position): may share
    stream: int = 0  # the execution stream (one per device type) that runs it


@dataclass(frozen=True, slots=True, kw_only=True)
class Program:
    """Values and the steps that read and write them, in execution order."""

    values: tuple[Value, ...]
    steps: tuple[Step, ...]
    device: str = "cpu"  # the allocator whose figures the plan reports first


def same_key(a: Key, b: Key) -> bool:
    """onnxruntime's SameSize/SameShape (``allocation_planner.cc``): same element size and rank,
    every dim equal as a number or as the same non-empty symbol; unknown never matches."""
    if a is None or b is None:
        return False
    (bits_a, dims_a), (bits_b, dims_b) = a, b
    if bits_a != bits_b or len(dims_a) != len(dims_b):
        return False
    for x, y in zip(dims_a, dims_b):
        if x is None or y is None or x == "" or x != y:
            return False
    return True
