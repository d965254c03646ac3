"""Tiny inline planner programs for the planner tests: keys, values and steps by name."""

from __future__ import annotations

from collections.abc import Sequence

from graphmem.planner.program import Key, Program, Step, Value

A: Key = (32, (2, 3))  # 24 bytes
B: Key = (32, (6,))  # 24 bytes, another rank: what a Reshape of an A makes
T1: Key = (8, (1,))  # 1 byte
T2: Key = (8, (2,))  # 2 bytes
T3: Key = (8, (3,))  # 3 bytes
T5: Key = (8, (5,))  # 5 bytes


def val(
    name: str, size: int | None, key: Key = None, *, source: bool = False, output: bool = False
) -> Value:
    return Value(name=name, size=size, key=key, source=source, output=output)


def src(name: str = "in", size: int | None = 24, key: Key = A) -> Value:
    return val(name, size, key, source=True)


def step(
    label: str,
    inputs: str,
    outputs: str,
    *,
    alias: Sequence[tuple[int, int]] = (),
    inplace: Sequence[tuple[int, int]] = (),
) -> tuple[str, str, str, tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """A step by value names: ``step("relu", "x", "y", inplace=[(0, 0)])``."""
    return (label, inputs, outputs, tuple(alias), tuple(inplace))


def program(values: Sequence[Value], *steps: tuple) -> Program:  # type: ignore[type-arg]
    index = {v.name: i for i, v in enumerate(values)}
    return Program(
        values=tuple(values),
        steps=tuple(
            Step(
                label=label,
                inputs=tuple(index[n] for n in ins.split()),
                outputs=tuple(index[n] for n in outs.split()),
                alias=alias,
                inplace=inplace,
            )
            for label, ins, outs, alias, inplace in steps
        ),
    )
