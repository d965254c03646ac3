"""What one analysis is asked: the user's bindings and the session it emulates, as typed values.

:class:`Bindings` carries ``--dim``, ``--shape`` and ``--value`` from the CLI (or a Python
caller's ``dims=``, ``shapes=``, ``values=``) to the stages, parsed and checked for form once
(:mod:`graphmem.analysis.dims` has the parsers; the bindings are checked against a model's inputs
by :meth:`Bindings.resolve`). :class:`AnalysisRequest` is everything else the stages read: the
provider, the what-if dtype, the execution order, whether the CPU provider's type rules apply,
the host the figures are for (:mod:`graphmem.host`), the session options the session stage
assumes (:mod:`graphmem.analysis.hold`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from graphmem.analysis.dims import ResolvedInputs, parse_dims, parse_shapes, parse_values, resolve_inputs
from graphmem.errors import UsageError
from graphmem.host import HostProfile, resolve_host, this_host
from graphmem.model.types import TensorType
from graphmem.ort.session import PROVIDERS

__all__ = ["Bindings", "AnalysisRequest", "EXECUTION_ORDERS", "request_of"]

#: ``ort``: onnxruntime's order for the graph as given; ``file``: the file's node order (a graph
#: onnxruntime wrote, :mod:`graphmem.analysis.optimized`).
EXECUTION_ORDERS = ("ort", "file")


@dataclass(frozen=True, slots=True, kw_only=True)
class Bindings:
    """The user's bindings of a model's inputs: named dims (``dims``), whole input shapes
    (``shapes``: a tuple of ints; a sequence input's element shapes; None for an optional input
    without a value) and small inputs' values (``values``). Build one with :meth:`parse` (option
    items) or :meth:`of` (Python mappings), which copy what they are given; nothing changes them
    afterwards (a sweep's point is a new value, :meth:`bind`)."""

    dims: dict[str, int] = field(default_factory=dict)
    shapes: dict[str, tuple | None] = field(default_factory=dict)
    values: dict[str, tuple[int | float, ...]] = field(default_factory=dict)

    @classmethod
    def parse(
        cls, dims: Iterable[str] | None = None, shapes: Iterable[str] | None = None, values: Iterable[str] | None = None
    ) -> Bindings:
        """From ``--dim``, ``--shape`` and ``--value`` items (``["batch=8"]``, ``["x=1x3x8x8"]``,
        ``["sr=16000"]``); a malformed item is a :class:`~graphmem.errors.UsageError`."""
        return cls.of(dims=parse_dims(dims), shapes=parse_shapes(shapes), values=parse_values(values))

    @classmethod
    def of(
        cls,
        dims: Mapping[str, int] | None = None,
        shapes: Mapping[str, Sequence[object] | None] | None = None,
        values: Mapping[str, Sequence[int | float]] | None = None,
    ) -> Bindings:
        """From Python mappings (``graphmem.analyze(path, dims={"batch": 8})``); shapes and values
        become tuples. What they bind is checked against a model by :meth:`resolve`."""
        for what, given in (("dims", dims), ("shapes", shapes), ("values", values)):
            if given is not None and not isinstance(given, Mapping):
                raise UsageError(f"{what}: expected a mapping of input or dim names, got {type(given).__name__}")
        return cls(
            dims=dict(dims or {}),
            shapes={k: _shape_tuple(v) for k, v in (shapes or {}).items()},
            values={k: tuple(v) for k, v in (values or {}).items()},
        )

    def bind(self, dims: Mapping[str, int]) -> Bindings:
        """The same bindings with ``dims`` bound too (over any given value): a sweep's point."""
        return replace(self, dims={**self.dims, **dims})

    def resolve(self, inputs: Mapping[str, TensorType]) -> ResolvedInputs:
        """Checked against a model's graph inputs (name → type): every input's shape for the run
        (:func:`graphmem.analysis.dims.resolve_inputs`, which names what is wrong or unbound)."""
        return resolve_inputs(inputs, dims=self.dims, shapes=self.shapes, values=self.values)

    def as_kwargs(self) -> dict[str, dict]:
        """``dims``, ``shapes`` and ``values`` as plain dicts (for callers that take them apart)."""
        return {"dims": dict(self.dims), "shapes": dict(self.shapes), "values": dict(self.values)}


def _shape_tuple(shape: Sequence[object] | None) -> tuple | None:
    if shape is None:
        return None
    return tuple(tuple(e) if isinstance(e, (tuple, list)) else e for e in shape)


@dataclass(frozen=True, slots=True, kw_only=True)
class AnalysisRequest:
    """One analysis as asked: ``bindings``; ``provider`` whose session is emulated (cpu|cuda);
    ``as_dtype``, the what-if dtype every floating tensor is sized as (None: as the file has
    them); ``execution_order`` (see :data:`EXECUTION_ORDERS`); ``kernel_rules``: False leaves out
    what the CPU provider does with element types (the PyTorch training estimate); ``host``, the
    machine the figures are for (this machine unless given); ``session_options``: the
    ``--session-option`` ``KEY=VALUE`` items the session block assumes (onnxruntime's defaults for
    the rest; ``()``: all defaults), None for no session block (:mod:`graphmem.analysis.hold`).
    Checked when built: a bad provider or order is a :class:`~graphmem.errors.UsageError` (the
    session options' keys and values are checked by the session stage, which knows the level and
    provider they apply to)."""

    bindings: Bindings = field(default_factory=Bindings)
    provider: str = "cpu"
    as_dtype: str | None = None
    execution_order: str = "ort"
    kernel_rules: bool = True
    host: HostProfile = field(default_factory=this_host)
    session_options: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.session_options is not None and (
            not isinstance(self.session_options, tuple) or not all(isinstance(x, str) for x in self.session_options)
        ):
            raise UsageError(f"session_options: expected a tuple of KEY=VALUE strings, got {self.session_options!r}")
        if self.provider not in PROVIDERS:
            raise UsageError(f"provider '{self.provider}': expected one of {', '.join(PROVIDERS)}")
        if self.execution_order not in EXECUTION_ORDERS:
            raise UsageError(
                f"execution order '{self.execution_order}': expected one of {', '.join(EXECUTION_ORDERS)}"
            )

    @property
    def cpu(self) -> bool:
        return self.provider == "cpu"

    @property
    def cpu_type_rules(self) -> bool:
        """Whether the CPU provider's element-type rules apply (Cast insertion, function bodies
        for types without a kernel, the duplicate-Cast remover's CPU part)."""
        return self.provider == "cpu" and self.kernel_rules


def request_of(
    *,
    bindings: Bindings | None = None,
    dims: Mapping[str, int] | None = None,
    shapes: Mapping[str, Sequence[object] | None] | None = None,
    values: Mapping[str, Sequence[int | float]] | None = None,
    host: HostProfile | str | os.PathLike[str] | None = None,
    **options: Any,  # AnalysisRequest's other fields, by keyword
) -> AnalysisRequest:
    """An :class:`AnalysisRequest` from the public API's keywords: ``bindings``, or ``dims``,
    ``shapes`` and ``values`` (not both), ``host`` (a profile, the file of one, or None: this
    machine; :func:`graphmem.host.resolve_host`), and the request's other fields."""
    if bindings is not None and any(x is not None for x in (dims, shapes, values)):
        raise UsageError("give either bindings= or dims=/shapes=/values=, not both")
    if bindings is None:
        bindings = Bindings.of(dims=dims, shapes=shapes, values=values)
    return AnalysisRequest(bindings=bindings, host=resolve_host(host), **options)
