"""``--graph-opt``: the graph onnxruntime runs at an optimization level, analysed as it runs.

Above ``none`` onnxruntime itself writes the optimized graph (:func:`graphmem.ort.optimized.optimized_model`)
and it is analysed in its execution order (:func:`graphmem.analysis.pipeline.analyze_model` with
``execution_order="file"``), in every order a session may give it (NCHWc reorders).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from graphmem.analysis.pipeline import analyze_model, gc_paused, with_session
from graphmem.analysis.request import AnalysisRequest, request_of
from graphmem.analysis.result import Analysis, Approximation
from graphmem.analysis.stages import static_types
from graphmem.errors import UnsupportedOpError, UsageError
from graphmem.host import HostProfile, this_host
from graphmem.model.dtypes import parse_dtype
from graphmem.model.graph import OpGraph, build_graph
from graphmem.model.loading import Model, load_model
from graphmem.model.program import build_program
from graphmem.ort.allocation import plan_ort
from graphmem.ort.inference import infer_types
from graphmem.ort.insert_cast import cpu_session
from graphmem.ort.order import file_order, finalize_reorders, node_stages, session_orders
from graphmem.ort.rewrites import remove_duplicate_casts
from graphmem.ort.rules import sharing, unwritten_outputs
from graphmem.ort.scratch import replay_run
from graphmem.shapes.infer import ORT_STATIC, RUNTIME

__all__ = ["analyze_graph_opt", "with_session_shapes"]


def analyze_graph_opt(
    path: str | os.PathLike[str], graph_opt: str = "none", request: AnalysisRequest | None = None, **options: Any
) -> Analysis:
    """:func:`analyze` of the graph onnxruntime runs at ``graph_opt`` (none|basic|extended|all).

    Above ``none`` onnxruntime itself optimizes the file (:func:`graphmem.verify.optimized_model`,
    into a private temporary directory, never next to the model) and the graph it writes is
    analysed in its execution order; the result names the original file and the level.

    With ``as_dtype`` the what-if is the converted model as onnxruntime optimizes *it*: the file
    is converted first (:func:`graphmem.analysis.whatif.write_converted`, every floating tensor),
    then optimized — a float16 graph fuses and keeps weights differently from the float32 one,
    so retyping the optimized float32 graph would be wrong (ResNet-18 at batch 1: 2.4x the
    measured conversion). A conversion onnxruntime cannot build is refused (UsageError naming
    onnxruntime's reason): at ``none`` the what-if is sized without a session.

    ``request`` (or the keywords of :func:`graphmem.analysis.request.request_of`) as for
    :func:`graphmem.analysis.pipeline.analyze_model`; its execution order is the level's.
    """
    if request is None:
        request = request_of(**options)
    elif options:
        raise UsageError(f"analyze_graph_opt: give a request or its fields ({', '.join(options)}), not both")
    as_dtype, host = request.as_dtype, request.host
    if graph_opt == "none":
        with gc_paused():
            return with_session(analyze_model(load_model(path), request), request)
    if not request.cpu:
        raise UsageError(
            f"--graph-opt {graph_opt} with --provider {request.provider}: the optimized graph is the one a CPU "
            "session writes (fusions differ by provider); use --graph-opt none"
        )
    from pathlib import Path

    from graphmem.analysis.whatif import write_converted
    from graphmem.ort.optimized import optimized_model, temporary_dir

    _check_optimizing_host(graph_opt, host)
    original = load_model(path)  # one-line errors for bad files before onnxruntime sees them
    with temporary_dir() as tmp:
        source = Path(path)
        if as_dtype is not None:
            source = write_converted(source, parse_dtype(as_dtype), Path(tmp) / "converted.onnx")
            original = load_model(source)
        try:
            optimized = optimized_model(source, graph_opt, Path(tmp))
        except UnsupportedOpError as exc:
            if as_dtype is None:
                raise
            raise UsageError(
                f"--as-dtype {as_dtype} --graph-opt {graph_opt}: onnxruntime cannot build the converted "
                "model, so there is no optimized graph to size "
                f"({str(exc).removeprefix('onnxruntime could not optimize the model: ')}); "
                "--graph-opt none sizes the what-if without a session"
            ) from None
        with gc_paused():
            model = with_session_shapes(load_model(optimized, validate=False), original)  # onnxruntime wrote it
            model = replace(model, node_stage=node_stages(model.nodes, original.nodes))  # NodeIndex order
            result = _analyze_session_orders(model, replace(request, as_dtype=None))  # converted already
    if as_dtype is not None:
        note = f"{result.activations.runtime}; as {as_dtype}: the converted file as onnxruntime optimizes it"
        result = replace(result, activations=replace(result.activations, runtime=note))
    result = replace(result, model=replace(result.model, path=str(path), graph_opt=graph_opt))
    return with_session(result, request)  # the session runs the optimized graph, named by the file and level


def _check_optimizing_host(graph_opt: str, host: HostProfile) -> None:
    """Above ``none`` the graph analysed is the one onnxruntime *on this machine* writes; at ``all``
    its NCHWc layout follows this machine's MLAS block size (``MlasNchwcGetBlockSize``: 8 with AVX2,
    16 with AVX-512F; none off x86-64). For a host whose layout would differ there is no graph to
    analyse: refused (UsageError) rather than predicted from this machine's."""
    if graph_opt != "all":
        return
    here = this_host()
    if (here.machine, here.nchwc_block) != (host.machine, host.nchwc_block):
        raise UsageError(
            f"--graph-opt all --host: onnxruntime on this machine ({here.machine}, NCHWc blocks of "
            f"{here.nchwc_block}) writes the optimized graph, and the host predicted for ({host.machine}, "
            f"NCHWc blocks of {host.nchwc_block}) would run another layout; use --graph-opt extended, or "
            "run graphmem on a machine like that host"
        )


def _analyze_session_orders(model: Model, request: AnalysisRequest) -> Analysis:
    """The optimized ``model`` analysed in every execution order a session may give it
    (:func:`graphmem.ort.order.session_orders`: NCHWc ReorderOutput nodes numbered in heap-address
    order). The order with the largest figures is reported; when the orders' figures differ (or
    the orders cannot be enumerated) the analysis says so (``order_assumed``)."""
    request = replace(request, execution_order="file")
    g = build_graph(model)
    written = file_order(g)
    orders = session_orders(g, written)
    if orders is not None and len(orders) == 1:
        return analyze_model(model, request)

    def in_order(order: tuple[int, ...]) -> Analysis:
        reordered = replace(model, nodes=tuple(g.node(n) for n in order), node_ids=())
        return analyze_model(reordered, request)

    figures = None
    if orders is None:
        result = analyze_model(model, request)
    else:
        figures = _order_figures(model, g, orders, request)
        if figures is None:  # order-dependent stages: a whole analysis per order
            figures = [(a.activations.peak_bytes, a.activations.in_use_peak_bytes) for a in map(in_order, orders)]
        worst = max(range(len(orders)), key=lambda i: (figures[i][0], figures[i][1] or 0))
        result = in_order(orders[worst])
    why = (
        "onnxruntime numbers the ReorderOutput nodes its NCHWc transformer adds last in an order that "
        "follows heap addresses (nchwc_transformer.cc Finalize iterates an unordered_map keyed by "
        "NodeArg pointers), so the execution order changes from session to session"
    )
    if figures is None:
        detail = f"{why}; too many orders to enumerate: the figures are those of one session's order"
    else:
        peaks = sorted({peak for peak, _ in figures})
        in_use = sorted({held for _, held in figures if held is not None})
        if len(peaks) == 1 and len(in_use) <= 1:
            return result  # every order gives the same figures
        detail = (
            f"{why}; {len(figures)} orders possible, peak {', '.join(f'{b:,}' for b in peaks)} B"
            + (f", in use {', '.join(f'{b:,}' for b in in_use)} B" if len(in_use) > 1 else "")
            + ": the largest is reported"
        )
    reordered = sorted(g.node(n).output[0] for n in finalize_reorders(g))  # ids vary by session
    node = f"ReorderOutput -> {reordered[0]}" if reordered else ""
    note = Approximation(kind="order_assumed", node=node, detail=detail)
    approximations = (*result.activations.approximations, note)
    alternatives = tuple(sorted({peak for peak, _ in figures})) if figures is not None else ()
    return replace(result, activations=replace(result.activations, approximations=approximations,
                                               order_peaks=alternatives))


def _order_figures(
    model: Model, g: OpGraph, orders: Sequence[tuple[int, ...]], request: AnalysisRequest
) -> list[tuple[int, int | None]] | None:
    """(peak, in-use peak) of ``model`` run in each of ``orders``, typed once and planned per order
    as :func:`analyze_model` plans it; None when a stage of that analysis depends on the order
    (inserted or removed Casts, control flow, another provider, a what-if): then only whole
    analyses give the figures."""
    if not request.cpu or request.as_dtype is not None:
        return None
    given = request.bindings.resolve(model.inputs)
    runtime = infer_types(
        g,
        orders[0],
        view=RUNTIME,
        dims=given.dims,
        shapes=given.shapes,
        input_values=given.values,
        body_order=file_order,
    )
    static = infer_types(g, orders[0], view=ORT_STATIC, body_order=file_order)
    if runtime.bodies or static.type_conflicts:
        return None
    cpu = cpu_session(model, orders[0], static.types, runtime.types)
    if cpu.inline or cpu.missing or cpu.insertion.casts or remove_duplicate_casts(model, static.types) is not model:
        return None
    figures: list[tuple[int, int | None]] = []
    for order in orders:
        program, _ = build_program(
            g, order, runtime=runtime.types, static=static.types, sharing=sharing, unwritten=unwritten_outputs
        )
        plan = plan_ort(program)
        run = replay_run(
            program, plan, graph=g, order=order, types=runtime.types, values=runtime.values, host=request.host
        )
        figures.append((plan.peak_bytes, run.peak_bytes))
    return figures


def with_session_shapes(optimized: Model, original: Model) -> Model:
    """The optimized graph with the static types its session knows for tensors it kept.

    A tensor an optimizer keeps (by name) is the same ``NodeArg`` in onnxruntime's graph: it keeps
    the shape the first resolve gave it, symbolic names included, and later inference only merges
    into it (``Graph::InferAndVerifyTypeMatch``, core/graph/graph.cc). The file onnxruntime writes
    lists only the value_info it read, so, e.g., a QDQ fusion's output loses the ``unk__49`` dims
    that its planner matches buffers by; they are restored here from the original's static view.
    """
    static = static_types(original)
    produced = {o for n in original.nodes for o in n.output if o}
    kept = {o for n in optimized.nodes for o in n.output if o}
    extra = {k: static[k] for k in produced & kept if k in static and k not in optimized.value_info}
    return replace(optimized, value_info={**extra, **optimized.value_info}) if extra else optimized
