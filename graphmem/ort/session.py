"""The graph a session of a given execution provider runs, and where its memory lives.

``cpu`` (the default, checked byte for byte): the graph as loaded, one device, one stream.
``cuda`` (emulated from onnxruntime's source, not checked on a GPU): :mod:`graphmem.ort.cuda.placement`
partitions it, adds its copies and replays its two-stream run order; the plan's headline figures
are the CUDA arena's, the CPU arena's and pinned host memory's peaks are reported beside them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from graphmem.model.graph import OpGraph, build_graph
from graphmem.model.loading import Model
from graphmem.model.program import Devices, tensor_size
from graphmem.model.types import TensorType
from graphmem.ort.allocation import OrtPlan
from graphmem.planner.program import Program

if TYPE_CHECKING:  # the CUDA modules load only for --provider cuda (peak starts faster)
    from graphmem.ort.cuda.placement import CudaPlacement

__all__ = ["PROVIDERS", "CUDA_RUNTIME", "PlacementInfo", "SessionGraph", "session_graph", "main_device_only"]

PROVIDERS = ("cpu", "cuda")
CUDA_RUNTIME = "onnxruntime 1.31 CUDAExecutionProvider (emulated, not checked on a GPU)"


@dataclass(frozen=True, slots=True, kw_only=True)
class PlacementInfo:
    """How a CUDA session splits the graph, and the memory outside the CUDA arena's plan."""

    cuda_nodes: int
    cpu_nodes: int  # CPU-provider nodes: no CUDA kernel, or moved by GetCpuPreferredNodes
    memcpy_nodes: int
    cpu_preferred: int  # of the CPU nodes, those a CUDA kernel existed for (shape arithmetic)
    fp32_nodes: int  # of the CPU nodes, float16 ones run in float32 behind inserted Casts
    cast_nodes: int  # of the CPU nodes, the Casts InsertCastTransformer added (after the remover)
    no_cuda_kernel: dict[str, int]  # op type -> nodes
    inputs_on_device_bytes: int  # graph inputs the session copies into the CUDA arena (held all run)
    cpu_peak_bytes: int  # CPU arena: activations of CPU nodes
    pinned_peak_bytes: int  # CUDA-pinned host memory: Shape and MemcpyToHost outputs


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionGraph:
    graph: OpGraph
    order: tuple[int, ...]  # the order kernels run in
    runtime: dict[str, TensorType]
    static: dict[str, TensorType]
    devices: Devices | None = None
    cuda: CudaPlacement | None = None

    def placement_info(self, plan: OrtPlan, types: Mapping[str, TensorType]) -> PlacementInfo | None:
        if self.cuda is None:
            return None
        from graphmem.ort.cuda.rules import PINNED

        c = self.cuda
        others = dict(plan.other_peaks)
        on_cuda = [nid for nid, d in c.node_device.items() if d == "cuda"]
        memcpy = sum(1 for nid in on_cuda if self.graph.node(nid).op_type.startswith("Memcpy"))
        return PlacementInfo(
            cuda_nodes=len(on_cuda) - memcpy,
            cpu_nodes=len(c.node_device) - len(on_cuda),
            memcpy_nodes=memcpy,
            cpu_preferred=c.cpu_preferred,
            fp32_nodes=len(c.fp32_fallback),
            cast_nodes=len(c.inserted_casts),
            no_cuda_kernel=dict(sorted(c.no_kernel.items())),
            inputs_on_device_bytes=sum(tensor_size(types.get(x)) or 0 for x in c.copied_inputs),
            cpu_peak_bytes=others.get("cpu", 0),
            pinned_peak_bytes=others.get(PINNED, 0),
        )


def session_graph(
    model: Model,
    g: OpGraph,
    order: tuple[int, ...],
    runtime: dict[str, TensorType],
    static: dict[str, TensorType],
    provider: str,
    ordering: Callable[[OpGraph], tuple[int, ...]],
) -> SessionGraph:
    """The graph, order and types the ``provider``'s session plans."""
    if provider == "cpu":
        return SessionGraph(graph=g, order=order, runtime=runtime, static=static)
    from graphmem.errors import UnsupportedOpError
    from graphmem.ort.cuda.placement import fallback_without_kernel, place_cuda, run_order, since_version
    from graphmem.ort.cuda.rules import cuda_sharing

    placed = place_cuda(model, g, order, static, runtime)
    runtime = placed.runtime if placed.runtime is not None else runtime
    static = placed.static if placed.static is not None else static
    named = {**static, **{new: static[old] for new, old in placed.renamed.items() if old in static}}
    missing = fallback_without_kernel(placed, named)
    if missing:  # the CPU case's form (analysis/pipeline.py _cpu_type_note)
        name, op, why = missing[0]
        more = f" (and {len(missing) - 1} more nodes)" if len(missing) > 1 else ""
        raise UnsupportedOpError(
            f"node '{name}' ({op}): the CUDA provider has no kernel for it and {why}{more}; "
            "onnxruntime cannot load this model"
        )
    graph = build_graph(placed.model)
    ran = run_order(graph, ordering(graph), placed.node_device)
    stream = dict(ran)

    def renamed(types: dict[str, TensorType]) -> dict[str, TensorType]:
        return {**types, **{new: types[old] for new, old in placed.renamed.items() if old in types}}

    devices = Devices(
        main="cuda",
        node=placed.node_device,
        value=placed.value_device,
        stream=stream,
        main_sharing=lambda node: cuda_sharing(node.domain, node.op_type, since_version(placed.model, node)),
    )
    return SessionGraph(
        graph=graph,
        order=tuple(nid for nid, _ in ran),
        runtime=renamed(runtime),
        static=renamed(static),
        devices=devices,
        cuda=placed,
    )


def main_device_only(p: Program) -> Program:
    """``p`` with the values of other devices treated as outside the planned memory (for the
    runtime-independent bounds, which describe the main device's arena)."""
    if all(v.device == p.device for v in p.values):
        return p
    values = tuple(v if v.device == p.device else replace(v, source=True, output=False) for v in p.values)
    return replace(p, values=values)
