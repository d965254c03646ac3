"""The pipeline, end to end: load → expand functions → types and shapes → CPU kernels → the
session's graph → program → plans → control-flow replay → FLOPs → assembly.

:func:`analyze` is the library call behind ``graphmem peak``; the CLI only renders its result.
:func:`analyze_model` wires the stages (:mod:`graphmem.analysis.stages`,
:mod:`graphmem.analysis.plans`, :mod:`graphmem.analysis.assemble`); the graph onnxruntime
optimizes (``--graph-opt``) is :mod:`graphmem.analysis.graph_opt`'s.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from graphmem.analysis.assemble import assemble, record_session
from graphmem.analysis.hold import held
from graphmem.analysis.plans import (
    count_flops,
    plan_headline,
    plan_memory,
    program,
    replay_control_flow,
    replay_headline,
)
from graphmem.analysis.request import AnalysisRequest, Bindings, request_of
from graphmem.analysis.result import Analysis
from graphmem.analysis.stages import (
    cpu_kernels,
    expand_for_kernels,
    expand_functions,
    load,
    session_graph,
    types_and_shapes,
)
from graphmem.errors import UnsupportedOpError, UsageError
from graphmem.host import HostProfile
from graphmem.model.dtypes import parse_dtype
from graphmem.model.loading import Model, load_model

__all__ = ["analyze", "analyze_model", "with_session"]


def analyze(
    path: str | os.PathLike[str],
    *,
    dims: Mapping[str, int] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
    values: Mapping[str, Sequence[int]] | None = None,
    bindings: Bindings | None = None,
    provider: str = "cpu",
    as_dtype: str | None = None,
    execution_order: str = "ort",
    host: HostProfile | None = None,
    session_options: Sequence[str] | None = None,
) -> Analysis:
    """Analyze the ONNX file at ``path`` with symbolic dims bound by ``dims``, for a run on
    ``host`` (None: this machine, :func:`graphmem.host.this_host`; the result records it).

    ``shapes`` set inputs' whole shapes (overriding named, unnamed, ``-1`` and shared-name
    dims) and ``values`` the values of small inputs (:mod:`graphmem.analysis.dims`); or give all
    three as one ``bindings`` (:class:`graphmem.analysis.request.Bindings`).

    ``as_dtype`` ("float16", "bfloat16", "int8", …) is a what-if: every floating tensor, weights
    included, is sized as if cast to that type; integer shape tensors are untouched.
    ``execution_order``: "ort" runs the nodes in onnxruntime's order for the graph as given;
    "file" in the file's node order — for a graph onnxruntime wrote after optimizing
    (``graphmem.ort.optimized``), which it writes in its session's execution order but
    renumbered, so that its reverse DFS over the file no longer gives that order.
    ``session_options``: ``KEY=VALUE`` items (onnxruntime's names, ``--session-option``; ``[]``:
    its defaults) asks for what the session holds (``Analysis.session``, :mod:`graphmem.analysis.hold`);
    None leaves it out.
    Raises a :class:`graphmem.errors.GraphmemError` subclass on bad input.
    """
    request = request_of(
        bindings=bindings, dims=dims, shapes=shapes, values=values, provider=provider, as_dtype=as_dtype,
        execution_order=execution_order, host=host,
        session_options=None if session_options is None else tuple(session_options),
    )
    with gc_paused():
        return with_session(analyze_model(load_model(path), request), request)


def with_session(analysis: Analysis, request: AnalysisRequest) -> Analysis:
    """The session stage on the analysis of the graph the session runs (:mod:`graphmem.analysis.hold`),
    recorded by the assembly; nothing when the request asks for no session block."""
    return record_session(analysis, held(analysis, request))


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while analysing: the analysis builds tens of thousands of
    small objects that all live until it returns, and the collector's passes over them cost
    about a tenth of the run on a GPT-2 export. The caller's setting is restored."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def analyze_model(model: Model, request: AnalysisRequest | None = None, **options: Any) -> Analysis:
    """:func:`analyze` of an already loaded :class:`Model`, as ``request`` asks (or as the
    keywords of :func:`graphmem.analysis.request.request_of` ask: ``dims``, ``bindings``,
    ``provider``, ``as_dtype``, ``execution_order``, ``kernel_rules``, ``host``).

    The headline activation peak is onnxruntime's allocation plan's (:func:`plan_headline`,
    :func:`graphmem.ort.allocation.plan_ort`) or, when the graph has If/Loop/Scan bodies, the
    control-flow replay's (:func:`replay_headline`); :mod:`graphmem.planner` gives only the
    bounds beside it (lower bound, no-reuse sum, best arena)."""
    if request is None:
        request = request_of(**options)
    elif options:
        raise UsageError(f"analyze_model: give a request or its fields ({', '.join(options)}), not both")
    loaded = load(model, request)  # what onnxruntime refuses at load; the bindings checked
    expanded = expand_functions(loaded.model, request)  # function ops as onnxruntime expands them
    typed = types_and_shapes(expanded.model, loaded.inputs, request)
    kernels = cpu_kernels(typed, request)  # which CPU kernels the element types find
    if kernels.inline and request.execution_order == "ort":
        # nodes onnxruntime runs as their function body for their element types (float16 Softmax)
        written = _as_onnxruntime_writes_it(model, request)
        if written is not None:
            return written
        expanded = expand_for_kernels(expanded, typed, kernels)
        typed = types_and_shapes(expanded.model, loaded.inputs, request, check=False)
        kernels = cpu_kernels(typed, request)
    session = session_graph(typed, kernels, request)  # Casts, duplicate-Cast remover, CUDA partition
    programmed = program(session)
    plans = plan_memory(session, programmed, request)  # onnxruntime's plan, run 1 in the arena, the planner's bounds
    cf = replay_control_flow(session, programmed, plans, request)  # None without If/Loop/Scan
    # The headline peak: the control-flow replay's when there are bodies, else onnxruntime's plan's.
    headline = replay_headline(plans, cf) if cf is not None else plan_headline(session, programmed, plans)
    flops = count_flops(session, cf)
    return assemble(
        request=request, loaded=loaded, expanded=expanded, kernels=kernels, session=session,
        programmed=programmed, plans=plans, cf=cf, headline=headline, flops=flops,
    )


def _as_onnxruntime_writes_it(model: Model, request: AnalysisRequest) -> Analysis | None:
    """A graph with nodes onnxruntime runs as their function body *because of their element types*
    (float16 Softmax, ...): the graph onnxruntime builds, written by onnxruntime at
    ORT_DISABLE_ALL (bodies inlined, Casts inserted, in its execution order) and analysed as it
    runs; for a what-if, of the converted file (``write_converted``). The static expansion
    (ort/functions.py) does not reproduce the Casts around those bodies exactly (BERT-base float16
    at batch 4: 0.6 % over), so it is used only when onnxruntime cannot write the graph (None)."""
    from pathlib import Path

    from graphmem.analysis.whatif import write_converted
    from graphmem.ort.optimized import optimized_model, temporary_dir

    if not model.path or not Path(model.path).is_file():
        return None
    try:
        with temporary_dir() as tmp:
            source = Path(model.path)
            if request.as_dtype is not None:
                source = write_converted(source, parse_dtype(request.as_dtype), Path(tmp) / "converted.onnx")
            written = optimized_model(source, "none", Path(tmp), always=True)
            as_written = replace(request, execution_order="file", as_dtype=None)  # converted already
            result = analyze_model(load_model(written, validate=False), as_written)
    except UnsupportedOpError:
        return None
    note = f"{result.activations.runtime}; graph as onnxruntime builds it (function bodies for the element types)"
    return replace(
        result,
        model=replace(result.model, path=model.path),
        activations=replace(result.activations, runtime=note),
    )
