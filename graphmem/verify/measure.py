"""Measure the real activation memory of onnxruntime runs from its profiler.

Since onnxruntime 1.31 every profiled ``Node`` event (``<node>_kernel_time``)
carries the statistics of the allocator of the node's execution provider,
sampled right after the kernel computed and before the inputs it was the last
consumer of are released:

- ``mem_bytes_requested_in_use``: bytes requested by live allocations (exact
  tensor sizes), ``mem_requested_in_use_delta``: its change during this kernel;
- ``mem_bytes_in_use`` / ``mem_in_use_delta``: the same in arena chunk sizes
  (rounded up, to 256 bytes on CPU);
- ``mem_in_use_peak``: the allocator's all-time high of ``mem_bytes_in_use``
  -- it sees kernel scratch that is freed inside Compute, and is never reset,
  neither per run nor per node;
- ``mem_arena_held`` / ``mem_arena_held_delta``: bytes the arena reserved.

Deltas are relative to the kernel's start, so ``value - delta`` of a run's
first node is what was in use when the run started executing nodes.

Everything is measured relative to the *session baseline*: what was in use
before the first node of run 1 (small initializers, for instance).  Each run's
outputs are released before the next run starts, so a later run that starts
higher has allocated that memory itself before its first node -- with
``enable_mem_pattern`` that is the memory-pattern block holding the planned
intermediates, which then no longer show up as per-node deltas.

onnxruntime is imported lazily inside functions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from graphmem.errors import ExternalDataError, MeasureError, ModelLoadError, RuntimeUnavailableError, UsageError
from graphmem.tempdirs import private_dir
from graphmem.verify import cuda as cuda_memory
from graphmem.verify.providers import (
    CUDA,
    choose_provider,
    session_options,
    session_providers,
)

if TYPE_CHECKING:
    import onnxruntime

    from graphmem.verify.cuda import CudaFootprint
    from graphmem.verify.feeds import Feed

NODE_EVENT_SUFFIX = "_kernel_time"

MEMORY_FIELDS = (
    "mem_bytes_requested_in_use",
    "mem_requested_in_use_delta",
    "mem_bytes_in_use",
    "mem_in_use_delta",
    "mem_in_use_peak",
    "mem_arena_held",
    "mem_arena_held_delta",
)

# Largest model protobuf can serialize; above it ORT must load from a file.
PROTOBUF_LIMIT = onnx.checker.MAXIMUM_PROTOBUF


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeMemory:
    """One profiled kernel and its allocator's statistics just after it computed."""

    name: str
    op_type: str
    provider: str
    requested_in_use: int
    requested_delta: int
    in_use: int
    in_use_delta: int
    in_use_peak: int  # allocator's all-time high so far (cumulative over the session)
    arena_held: int
    arena_held_delta: int


def arena_held(nodes: Iterable[NodeMemory], provider: str = CUDA) -> int:
    """Bytes the arena of ``provider`` held, from profiled nodes (0 if none ran there).

    The arena only grows during a session (no shrinkage is configured), so
    the largest ``arena_held`` seen is what it holds at the end.
    """
    return max((node.arena_held for node in nodes if node.provider == provider), default=0)


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocatorRun:
    """Figures of one run for the allocator of one execution provider.

    ``baseline``: requested bytes in use before this run's first node.
    ``session_baseline``: the same before run 1 -- the reference of all figures.
    ``preallocated``: ``baseline - session_baseline``, allocated by ORT at run
    start before any node (the memory-pattern block on runs after the first).
    ``requested_peak``: max requested_in_use over the run - session_baseline;
    tensors only (outputs included, kernel scratch excluded).
    ``in_use_peak_bytes``: max mem_in_use_peak - in-use session baseline; kernel
    scratch included, in arena chunk sizes.  The allocator's high-water mark is
    cumulative, so it is exactly this run's only when the run raised it
    (``in_use_peak_exact``); otherwise it is an upper bound set by an earlier run. A mark set at
    session creation by prepacking is not told apart here (the arena's held bytes, the bound, fall
    back when the original weights are freed): ``graphmem verify`` compares with a session
    without prepacking (:func:`graphmem.verify.compare._in_use_set_at_creation`).
    """

    provider: str
    baseline: int
    session_baseline: int
    preallocated: int
    requested_peak: int
    peak_node: str
    in_use_session_baseline: int
    in_use_peak_bytes: int
    in_use_peak_exact: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputInfo:
    """Name, shape and size of one output a run returned."""

    name: str
    shape: tuple[int, ...] | None  # None for non-tensor outputs
    dtype: str
    nbytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RunMemory:
    """One run: its kernels in execution order, per-allocator figures, outputs."""

    run: int  # 1-based
    nodes: tuple[NodeMemory, ...]
    allocators: tuple[AllocatorRun, ...]  # main provider first
    outputs: tuple[OutputInfo, ...]

    @property
    def primary(self) -> AllocatorRun:
        """Figures of the session's main provider (CUDA on CUDA sessions)."""
        return self.allocators[0]

    @property
    def requested_peak(self) -> int:
        """Peak requested activation bytes of the main provider's allocator."""
        return self.primary.requested_peak

    @property
    def in_use_peak_bytes(self) -> int:
        """Peak in-use bytes (scratch included) of the main provider's allocator."""
        return self.primary.in_use_peak_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Measurement:
    """Result of ``measure``: per-run figures plus how the session was set up."""

    providers: tuple[str, ...]  # session.get_providers()
    provider_reason: str
    graph_opt: str
    threads: int
    mem_pattern: bool
    runs: tuple[RunMemory, ...]
    cuda_footprint: CudaFootprint | None = None  # device bytes outside the CUDA arena
    cuda_footprint_problem: str | None = None  # why there is none on a CUDA session

    @property
    def requested_peak(self) -> int:
        """Largest requested activation peak over all runs (main provider)."""
        return max(run.requested_peak for run in self.runs)


def measure(
    model: onnx.ModelProto | str | Path,
    feeds: Mapping[str, Feed],
    *,
    provider: str = "cpu",
    graph_opt: str = "none",
    threads: int = 1,
    runs: int = 2,
    mem_pattern: bool = True,
    session_config: Mapping[str, str] | None = None,
    arena_cfg: Mapping[str, int] | None = None,
    provider_opts: Mapping[str, str] | None = None,
) -> Measurement:
    """Run ``model`` ``runs`` times in a fresh profiled session and return its memory figures.

    ``session_config`` adds onnxruntime session config entries (e.g. ``session.disable_prepacking``);
    ``arena_cfg``: ``OrtArenaCfg`` entries of a CPU arena registered in onnxruntime's environment
    (the session then needs ``session.use_env_allocators`` "1" in ``session_config``; the
    registration lasts for the process); ``provider_opts``: the CUDA provider's options.

    ``provider`` is "cpu" | "cuda" | "auto" (see ``choose_provider``).  A path
    is handed to ORT as is, so external data resolves next to it; a ModelProto
    above protobuf's 2 GB limit is written with external data into a private
    temporary directory, which also receives the profile.  Nothing is written
    next to the user's model, and the profile is deleted.
    """
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise UsageError(f"runs must be an int >= 1, got {runs!r}")
    # Read the GPU before the provider probe: its session creates the CUDA context for good.
    first = cuda_memory.device_memory(0) if provider != "cpu" else None
    choice = choose_provider(provider)
    on_cuda = choice.name == CUDA

    def reading() -> cuda_memory.DeviceMemory | None:
        return cuda_memory.device_memory(0) if on_cuda else None

    options = session_options(graph_opt, threads, True, None, mem_pattern=mem_pattern)
    for key, value in (session_config or {}).items():
        options.add_session_config_entry(key, value)
    if arena_cfg:
        _register_env_arena(arena_cfg)
    with private_dir("graphmem-measure-") as workdir:
        options.profile_file_prefix = str(workdir / "profile")
        session = _create_session(session_source(model, workdir), options, choice.name, provider_opts)
        after_session = reading()
        after_run = None
        try:
            outputs = _run_session(session, feeds, runs)
            after_run = reading()  # session alive, outputs released
        finally:
            profile = Path(session.end_profiling())
        events = load_events(profile)
        providers = tuple(session.get_providers())
        del session
    per_run_nodes = split_runs(events, runs)
    order = provider_order(providers, per_run_nodes)
    allocators = summarize_allocators(per_run_nodes, order)
    footprint = problem = None
    if on_cuda:
        if first is not None and after_session is not None and after_run is not None:
            arena = arena_held(node for nodes in per_run_nodes for node in nodes)
            footprint = cuda_memory.footprint(first, after_session, after_run, arena)
        else:
            problem = cuda_memory.device_memory_problem(0)
    return Measurement(
        providers=providers,
        provider_reason=choice.reason,
        graph_opt=graph_opt,
        threads=threads,
        mem_pattern=mem_pattern,
        runs=tuple(
            RunMemory(run=index + 1, nodes=nodes, allocators=allocators[index], outputs=outputs[index])
            for index, nodes in enumerate(per_run_nodes)
        ),
        cuda_footprint=footprint,
        cuda_footprint_problem=problem,
    )


def session_source(model: onnx.ModelProto | str | Path, workdir: Path, *, limit: int = PROTOBUF_LIMIT) -> str | bytes:
    """What to hand to InferenceSession: serialized bytes, or a model file path.

    In-memory models at or above ``limit`` bytes are saved with external data
    under ``workdir`` (a copy is saved; the caller's proto is not modified).
    A proto that still references external files cannot be resolved without
    its directory, so it is rejected in favour of passing the path.
    """
    if isinstance(model, (str, Path)):
        path = Path(model)
        if not path.is_file():
            raise ModelLoadError(f"model file not found: {path}")
        return str(path)
    if not isinstance(model, onnx.ModelProto):
        raise UsageError(f"model must be an onnx.ModelProto or a path, got {type(model).__name__}")
    external = next((tensor.name for tensor in _all_tensors(model.graph) if _is_external(tensor)), None)
    if external is not None:
        raise ExternalDataError(
            f"initializer {external!r} refers to external data the in-memory model cannot locate; pass the model's "
            "path instead"
        )
    if model.ByteSize() < limit:
        return model.SerializeToString()
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    path = workdir / "model.onnx"
    onnx.save_model(
        copy, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="model.onnx.data"
    )
    return str(path)


def load_events(path: Path) -> list[dict[str, Any]]:
    """The event list of an ORT profile JSON file."""
    with open(path, encoding="utf-8") as handle:
        events = json.load(handle)
    if not isinstance(events, list):
        raise MeasureError(f"unexpected onnxruntime profile format in {path.name}: {type(events).__name__}")
    return events


def split_runs(events: Sequence[Mapping[str, Any]], runs: int) -> list[tuple[NodeMemory, ...]]:
    """Node events of each run, in execution order.

    ORT records one ``model_run`` Session event per run, spanning its kernels;
    a node event belongs to the run whose time span contains its start.
    """
    spans = sorted(
        (int(event["ts"]), int(event["ts"]) + int(event.get("dur", 0)))
        for event in events
        if event.get("cat") == "Session" and event.get("name") == "model_run"
    )
    if len(spans) != runs:
        raise MeasureError(
            f"profile holds {len(spans)} model_run events for {runs} runs; the profiler may have dropped events"
        )
    grouped: list[list[Mapping[str, Any]]] = [[] for _ in spans]
    for event in events:
        if event.get("cat") != "Node" or not str(event.get("name", "")).endswith(NODE_EVENT_SUFFIX):
            continue
        start = int(event["ts"])
        index = next((i for i, (begin, end) in enumerate(spans) if begin <= start <= end), None)
        if index is not None:
            grouped[index].append(event)
    result = []
    for index, group in enumerate(grouped):
        if not group:
            raise MeasureError(f"run {index + 1} has no node events in the profile; nothing to measure")
        ordered = sorted(group, key=lambda event: int(event["ts"]))
        result.append(tuple(node_memory(event) for event in ordered))
    return result


def node_memory(event: Mapping[str, Any]) -> NodeMemory:
    """A NodeMemory from one ``*_kernel_time`` profile event."""
    args = event.get("args", {})
    name = str(event["name"])[: -len(NODE_EVENT_SUFFIX)]
    missing = [field for field in MEMORY_FIELDS if field not in args]
    if missing:
        raise MeasureError(
            f"profile event of node {name!r} ({args.get('provider', '?')}) lacks {', '.join(missing)}: "
            "memory statistics need onnxruntime >= 1.31 with the provider's memory arena enabled"
        )
    return NodeMemory(
        name=name,
        op_type=str(args.get("op_name", "")),
        provider=str(args.get("provider", "")),
        requested_in_use=int(args["mem_bytes_requested_in_use"]),
        requested_delta=int(args["mem_requested_in_use_delta"]),
        in_use=int(args["mem_bytes_in_use"]),
        in_use_delta=int(args["mem_in_use_delta"]),
        in_use_peak=int(args["mem_in_use_peak"]),
        arena_held=int(args["mem_arena_held"]),
        arena_held_delta=int(args["mem_arena_held_delta"]),
    )


def provider_order(session_order: Iterable[str], per_run_nodes: Sequence[Sequence[NodeMemory]]) -> tuple[str, ...]:
    """Providers that ran nodes: the session's order first, then any other seen."""
    seen = list(dict.fromkeys(node.provider for nodes in per_run_nodes for node in nodes))
    ordered = [name for name in session_order if name in seen]
    return tuple(ordered + [name for name in seen if name not in ordered])


def summarize_allocators(
    per_run_nodes: Sequence[Sequence[NodeMemory]], providers: Sequence[str]
) -> list[tuple[AllocatorRun, ...]]:
    """Per run, one AllocatorRun for each provider in ``providers`` that ran nodes in it.

    Each provider's nodes report its own allocator, so figures are never mixed
    across providers.
    """
    result: list[list[AllocatorRun]] = [[] for _ in per_run_nodes]
    for provider in providers:
        session_base: tuple[int, int] | None = None
        peak_bound = 0
        for index, nodes in enumerate(per_run_nodes):
            mine = [node for node in nodes if node.provider == provider]
            if not mine:
                continue
            if session_base is None:
                first = mine[0]
                session_base = (first.requested_in_use - first.requested_delta, first.in_use - first.in_use_delta)
                # The arena never held more than this before run 1, so no earlier
                # in-use high can exceed it.
                peak_bound = first.arena_held - first.arena_held_delta
            figures = allocator_run(provider, mine, session_base, peak_bound)
            result[index].append(figures)
            peak_bound = max(peak_bound, max(node.in_use_peak for node in mine))
    return [tuple(figures) for figures in result]


def allocator_run(
    provider: str, nodes: Sequence[NodeMemory], session_base: tuple[int, int], peak_bound: int
) -> AllocatorRun:
    """Figures of one run's ``nodes`` (all of one provider) against the session baseline.

    ``peak_bound`` is the highest the allocator's in-use can have been before
    this run; the run's in-use peak is exact only if the run went above it.
    """
    requested_base, in_use_base = session_base
    first = nodes[0]
    baseline = first.requested_in_use - first.requested_delta
    peak = max(nodes, key=lambda node: node.requested_in_use)  # first node reaching the max
    high_water = max(node.in_use_peak for node in nodes)
    return AllocatorRun(
        provider=provider,
        baseline=baseline,
        session_baseline=requested_base,
        preallocated=baseline - requested_base,
        requested_peak=peak.requested_in_use - requested_base,
        peak_node=peak.name,
        in_use_session_baseline=in_use_base,
        in_use_peak_bytes=high_water - in_use_base,
        in_use_peak_exact=high_water > peak_bound,
    )


def output_info(name: str, value: Any) -> OutputInfo:
    """Shape, dtype and size of one value returned by ``session.run``."""
    if isinstance(value, np.ndarray):
        return OutputInfo(
            name=name, shape=tuple(int(d) for d in value.shape), dtype=str(value.dtype), nbytes=int(value.nbytes)
        )
    return OutputInfo(name=name, shape=None, dtype=type(value).__name__, nbytes=0)


_ENV_ARENA: list[dict[str, int]] = []  # the environment arena this process registered (at most one)


def _register_env_arena(arena_cfg: Mapping[str, int]) -> None:
    """Register a CPU arena with ``arena_cfg`` in onnxruntime's environment (for sessions with
    ``session.use_env_allocators``); onnxruntime keeps one per process, so a second, different
    configuration is refused."""
    from graphmem.ort.runtime import onnxruntime as _runtime

    if _ENV_ARENA:
        if _ENV_ARENA[0] != dict(arena_cfg):
            raise MeasureError(f"this process registered an environment arena with {_ENV_ARENA[0]} already; "
                               f"measure {dict(arena_cfg)} in a fresh process")
        return
    ort = _runtime()
    info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
    try:
        ort.create_and_register_allocator(info, ort.OrtArenaCfg(dict(arena_cfg)))
    except Exception as exc:  # onnxruntime raises bare Exception subclasses
        raise MeasureError(f"onnxruntime could not register an arena with {dict(arena_cfg)}: {_one_line(exc)}") from exc
    _ENV_ARENA.append(dict(arena_cfg))


def _create_session(
    source: str | bytes,
    options: onnxruntime.SessionOptions,
    provider: str,
    provider_opts: Mapping[str, str] | None = None,
) -> onnxruntime.InferenceSession:
    """A session on ``provider``; MeasureError if ORT fails or silently falls back."""
    from graphmem.ort.runtime import create_session

    try:
        session = create_session(source, options, session_providers(provider, provider_opts))
    except Exception as exc:  # onnxruntime raises bare Exception subclasses
        raise MeasureError(f"onnxruntime could not create the session: {_one_line(exc)}") from exc
    got = session.get_providers()
    if provider == CUDA and (not got or got[0] != CUDA):
        session.end_profiling()
        raise RuntimeUnavailableError(f"onnxruntime fell back from CUDA to {got}; the measurement would not be on CUDA")
    return session


def _run_session(
    session: onnxruntime.InferenceSession, feeds: Mapping[str, Feed], runs: int
) -> list[tuple[OutputInfo, ...]]:
    """Run ``runs`` times; describe each run's outputs, then release them.

    Outputs live in the session's arena: holding them would inflate the next
    run's baseline, so only their description is kept.
    """
    from graphmem.ort.runtime import run_session

    names = [meta.name for meta in session.get_outputs()]
    described = []
    for _ in range(runs):
        try:
            outputs = run_session(session, dict(feeds))
        except Exception as exc:  # onnxruntime raises bare Exception subclasses
            raise MeasureError(f"onnxruntime run failed: {_one_line(exc)}") from exc
        described.append(tuple(output_info(name, value) for name, value in zip(names, outputs)))
        del outputs
    return described


def _all_tensors(graph: onnx.GraphProto) -> Iterable[onnx.TensorProto]:
    """Every TensorProto of ``graph``: initializers and tensor attributes, subgraphs included."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _all_tensors(attr.g)
            for sub in attr.graphs:
                yield from _all_tensors(sub)


def _is_external(tensor: onnx.TensorProto) -> bool:
    """Whether ``tensor``'s data lives in an external file."""
    return tensor.HasField("data_location") and tensor.data_location == onnx.TensorProto.EXTERNAL


def _one_line(exc: BaseException) -> str:
    """An exception message folded onto one line."""
    return " ".join(str(exc).split())
