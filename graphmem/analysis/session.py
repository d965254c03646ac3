"""What a session holds from the machine, not only what it requests: the ``session`` block of
``graphmem peak --json`` (issue 26), from an :class:`Analysis` and the session options.

* ``weights_held_bytes``: the bytes the session keeps for weights once created: every initializer
  a node reads, in the buffer the graph copied it into (at most 127 bytes: reserved in the arena),
  or mapped from its external-data file, except those every use of which a kernel pre-packed
  (``SessionState::PrepackConstantInitializedTensors`` releases them), plus the pre-packed copies
  the kernels keep (:mod:`graphmem.ort.held.prepack`). With ``session.disable_prepacking`` and the
  memory pattern, onnxruntime also reserves one block for every initializer that nothing writes:
  held by the arena (``arena_before_run_bytes``), not resident, not counted here;
* ``arena_before_run_bytes`` / ``arena_first_run_bytes`` / ``arena_steady_bytes``: the CPU arena's
  held bytes (:func:`graphmem.analysis.held.arena_figures`);
* ``resident_bytes``: how much the process's resident memory (``VmRSS``) grows from just before
  the session is created until after its fifth run, the caller's input arrays excluded: the
  session's calls to the C allocator replayed through glibc's rules
  (:mod:`graphmem.ort.held.loading` over :class:`graphmem.ort.held.heap.Heap`: the model read and
  copied, the optimizers' new weights, the pre-packed copies, the arena's regions and the pages
  the tensors write in them), plus what was measured once
  (:data:`graphmem.ort.held.constants.RESIDENT_CONSTANTS`: onnxruntime's code pages and small
  objects, each extra intra-op thread).

"Exact, or says why": each :class:`SessionApproximation` names the figures it concerns.
``resident_bytes`` always rests on measured constants and on how glibc's heap fragments while
the model loads, which varies between processes (the small slivers ``aligned_alloc`` leaves stay
apart or merge): the figure is for the case where they stay apart (the more frequent one
measured), and the approximation gives the other.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from graphmem.analysis.held import ARENA_APPROXIMATION_KINDS, ArenaFigures, arena_figures
from graphmem.analysis.result import Analysis
from graphmem.ort.held.constants import RESIDENT_CONSTANTS, ResidentConstants
from graphmem.ort.held.heap import PAGE, Heap
from graphmem.ort.held.loading import (
    Weight,
    graph_calls,
    parse_calls,
    region_calls,
    replay,
    rewrite_calls,
    session_calls,
)
from graphmem.ort.held.options import SessionOptions
from graphmem.ort.held.prepack import Creation, session_creation

__all__ = [
    "SESSION_APPROXIMATION_KINDS",
    "SessionFigures",
    "SessionApproximation",
    "ResidentParts",
    "session_figures",
    "SESSION_FIGURES",
    "ARENA_FIGURES",
]

#: The figures of the block, in document order.
SESSION_FIGURES = (
    "weights_held_bytes", "arena_before_run_bytes", "arena_first_run_bytes", "arena_steady_bytes", "resident_bytes",
)
ARENA_FIGURES = ("arena_before_run_bytes", "arena_first_run_bytes", "arena_steady_bytes")

#: Why a session figure is not exact (``session.approximations[].kind``): the arena's reasons
#: (:data:`graphmem.analysis.held.ARENA_APPROXIMATION_KINDS`), then the resident figure's: it rests
#: on measured constants; glibc's heap fragments differently between processes; the file could not
#: be read again; external data is counted resident; without the arena the runs are not replayed;
#: a weight rewritten twice is replayed once; and the CUDA provider's (not checked on a GPU, the
#: device memory outside the arena estimated).
SESSION_APPROXIMATION_KINDS = (
    *ARENA_APPROXIMATION_KINDS,
    "measured_constant",
    "heap_fragmentation",
    "loading_not_modelled",
    "external_data_mapped",
    "arena_disabled",
    "rewrite_not_replayed",
    "not_checked_on_gpu",
    "device_overhead_estimated",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionApproximation:
    """Why ``figures`` may differ from what a session shows: ``kind``, the node ('' when none), what."""

    kind: str
    figures: tuple[str, ...]
    node: str
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ResidentParts:
    """Where ``resident_bytes`` comes from (the parts sum to it):

    ``weights``: the weights held (:attr:`SessionFigures.weights_held_bytes`, resident once written);
    ``arena``: the arena's pages the runs wrote and its regions' chunk handles, those that became
    resident (a region that reused a hole loading left adds only the pages beyond it);
    ``loading``: what the C heap keeps from loading beyond those (holes left by the model's strings,
    the optimizers' temporaries and the released weights);
    ``runtime``: the measured constants (onnxruntime's code, the graph's and kernels' small objects
    per node, extra threads)."""

    weights: int
    arena: int
    loading: int
    runtime: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionFigures:
    """The ``session`` block (see the module doc); ``resident_other_case``: ``resident_bytes`` when
    the heap's slivers merge instead (the less frequent case)."""

    options: SessionOptions
    provider: str
    weights_held_bytes: int
    arena_before_run_bytes: int
    arena_first_run_bytes: int
    arena_steady_bytes: int
    resident_bytes: int
    resident_other_case: int
    resident_after_creation: int  # the growth once the session is created, before run 1
    parts: ResidentParts
    arena: ArenaFigures
    approximations: tuple[SessionApproximation, ...]
    device: None = None  # the CUDA provider's device memory outside the arena (CPU: none)

    @property
    def steady_after_run(self) -> int:
        """The last run that grew the arena (1 when none after the first did)."""
        return self.arena.steady_after_run

    @property
    def exact(self) -> bool:
        """True only when no approximation applies to any figure."""
        return not self.approximations

    def exact_figure(self, name: str) -> bool:
        """Whether figure ``name`` (one of :data:`SESSION_FIGURES`) has no approximation."""
        return not any(name in a.figures for a in self.approximations)


def session_figures(
    analysis: Analysis,
    options: SessionOptions | None = None,
    *,
    constants: ResidentConstants = RESIDENT_CONSTANTS,
    page_size: int | None = None,
) -> SessionFigures:
    """The ``session`` block for ``analysis`` under ``options`` (onnxruntime's defaults with one
    intra-op thread when None; its level must be the analysis's). ``page_size``: the user's
    machine's (the analysis's host profile's when None).

    Raises :class:`graphmem.errors.UsageError` (from :func:`arena_figures`) on a level mismatch or
    a provider other than CPU, and :class:`graphmem.errors.ArenaLimitError` when ``max_mem`` is too
    small for the session.
    """
    opts = options if options is not None else SessionOptions(
        intra_op_num_threads=1, graph_optimization_level=_level(analysis.model.graph_opt))
    if page_size is None:
        host = getattr(analysis, "host", None)
        page_size = host.page_size if host else PAGE
    arena = arena_figures(analysis, opts)
    graph = analysis.graph
    creation = session_creation(graph, disable_prepacking=opts.disable_prepacking, mem_pattern=opts.enable_mem_pattern)
    session = _session_weights(analysis)
    original, loaded, produced, fused = _original_weights(analysis, session)
    if original is not None and analysis.model.graph_opt != "none":
        # graphmem had onnxruntime write the optimized graph's large initializers to a file of
        # their own: whether one is external data is the user's file's business
        external = {w.name for w in original if w.external}
        session = {n: Weight(name=n, nbytes=w.nbytes, external=n in external) for n, w in session.items()}
    used = _used(analysis)
    released = set(creation.released)
    kept = {n: w for n, w in session.items() if n in used and n not in released}
    weights_held = sum(w.nbytes for w in kept.values()) + creation.kept_packed_bytes
    notes = _arena_notes(arena)
    if not loaded:
        notes.append(SessionApproximation(kind="loading_not_modelled", figures=("resident_bytes",), node="", detail=(
            f"the model file {analysis.model.path!r} cannot be read again: reading and copying it is not replayed")))
    if fused:
        notes.append(
            SessionApproximation(
                kind="rewrite_not_replayed",
                figures=("resident_bytes",),
                node=fused[0],
                detail=(
                    f"{len(fused)} Conv nodes are fused with the BatchNormalization after them before their filters "
                    "are "
                    "re-laid out: a weight rewritten twice is replayed once, the figure may be low"
                ),
            )
        )
    refolded = [w.name for w in produced if w.name not in session and w.nbytes > 0]
    if refolded:
        notes.append(
            SessionApproximation(
                kind="rewrite_not_replayed",
                figures=("resident_bytes",),
                node=refolded[0],
                detail=(
                    f"{len(refolded)} constants computed by constant folding are rewritten again by a later pass "
                    "(NCHWc "
                    "filters): the folded buffer and the rewrite are replayed as two independent steps, and the "
                    "process "
                    "measured up to a quarter more than replayed (scripts/held_check.py, onnx's light models at all): "
                    "the figure may be low"
                ),
            )
        )
    if any(w.external for w in kept.values()):
        notes.append(SessionApproximation(kind="external_data_mapped", figures=("resident_bytes",), node="", detail=(
            "external data is mapped from its file and counted resident in full (the kernels read every page each "
            "run); the system may drop clean file pages under memory pressure")))
    if not opts.enable_cpu_mem_arena:
        notes.append(SessionApproximation(kind="arena_disabled", figures=("resident_bytes",), node="", detail=(
            "without the arena every tensor is its own malloc: the runs' buffers are not replayed through the "
            "C heap, the figure counts run 1's requested peak as resident")))
    cases = [
        _resident(analysis, arena, creation, original, produced, session, kept, opts, constants, page_size,
                  keep_slivers=keep)
        for keep in (True, False)
    ]
    (resident, parts, created), (other, _, _) = cases
    notes.append(SessionApproximation(kind="measured_constant", figures=("resident_bytes",), node="", detail=(
        f"{_mib(parts.runtime)} of it is onnxruntime's code pages, small objects and extra threads, measured once "
        f"({constants.script}, {constants.date}; {constants.runtime})")))
    if other != resident:
        notes.append(SessionApproximation(kind="heap_fragmentation", figures=("resident_bytes",), node="", detail=(
            f"how glibc's heap fragments while the model loads varies between processes: this is the case where "
            f"aligned_alloc's slivers stay apart (the more frequent one measured); where they merge the process "
            f"holds {other:,} B ({_mib(other)})")))
    return SessionFigures(
        options=opts,
        provider="cpu",
        weights_held_bytes=weights_held,
        arena_before_run_bytes=arena.before_run_bytes,
        arena_first_run_bytes=arena.first_run_bytes,
        arena_steady_bytes=arena.steady_bytes,
        resident_bytes=resident,
        resident_other_case=other,
        resident_after_creation=created,
        parts=parts,
        arena=arena,
        approximations=tuple(notes),
    )


def _resident(
    analysis: Analysis,
    arena: ArenaFigures,
    creation: Creation,
    original: list[Weight] | None,
    produced: list[Weight],
    session: dict[str, Weight],
    kept: dict[str, Weight],
    opts: SessionOptions,
    constants: ResidentConstants,
    page_size: int,
    *,
    keep_slivers: bool,
) -> tuple[int, ResidentParts, int]:
    """Replay the session's C-allocator calls; ``resident_bytes``, its parts, and the growth once
    the session is created."""
    heap = Heap(threshold=constants.mmap_threshold, page=page_size, keep_slivers=keep_slivers)
    blocks: dict = {}
    if original is not None:
        path = analysis.model.path
        blocks = replay(heap, parse_calls(original, os.path.getsize(path)), blocks)
        blocks = replay(heap, graph_calls(original), blocks)
        if analysis.model.graph_opt != "none":
            names = {w.name for w in original} | {w.name for w in produced}
            made = sorted((w for n, w in session.items() if n not in names), key=_first_use(analysis))
            dropped = [w for w in (*original, *produced) if w.name not in session]
            blocks = replay(heap, rewrite_calls(made, dropped, folded=produced), blocks)
    else:  # the session's weights as if copied straight in
        blocks = replay(heap, graph_calls(list(session.values())), blocks)
    packed = [(e.key, e.nbytes, e.weight) for e in creation.events if e.kind == "reserve" and e.node]
    block = next((e.nbytes for e in creation.events if e.key == "initializer-block"), 0)
    sizes = {n: w.nbytes for n, w in session.items()}
    blocks = replay(heap, session_calls(packed, creation.released, initializer_block=block, sizes=sizes), blocks)
    mapped = sum(_pages(w.nbytes, page_size) for w in kept.values() if w.external)
    threads = max(opts.intra_op_num_threads, 1) - 1
    nodes = constants.node_bytes * analysis.model.nodes
    created = heap.resident + mapped + constants.creation_bytes + nodes + threads * constants.thread_bytes
    regions = [(r.size, _pages(r.touched, page_size)) for r in arena.regions]
    if opts.enable_cpu_mem_arena:
        blocks = replay(heap, region_calls(regions), blocks)
        arena_pages = sum(t + _pages(size // 32, page_size) for size, t in regions)
    else:
        arena_pages = analysis.activations.peak_bytes
    heap_steady = heap.resident + (0 if opts.enable_cpu_mem_arena else arena_pages)
    runtime = constants.creation_bytes + nodes + constants.runs_bytes + threads * constants.thread_bytes
    weights = sum(w.nbytes for w in kept.values()) + creation.kept_packed_bytes
    total = heap_steady + mapped + runtime
    loading = total - runtime - weights - arena_pages
    if loading < 0:  # the arena's regions reused holes loading left: those pages are not new
        arena_pages, loading = arena_pages + loading, 0
    return total, ResidentParts(weights=weights, arena=arena_pages, loading=loading, runtime=runtime), created


def _pages(n: int, page: int) -> int:
    return -(-n // page) * page


def _session_weights(analysis: Analysis) -> dict[str, Weight]:
    """The initializers of the graph the session runs (bytes known; strings count 0)."""
    return {
        n: Weight(name=n, nbytes=w.nbytes or 0, external=w.external) for n, w in analysis.graph.model.weights.items()
    }


def _used(analysis: Analysis) -> set[str]:
    """Initializers a node reads (subgraph bodies and outer-scope reads included) or a graph
    output is: the others are dropped when the graph resolves (``Graph::CleanUnusedInitializersAndNodeArgs``)."""
    graph = analysis.graph
    weights = graph.model.weights
    out = {x for x in graph.model.outputs if x in weights}
    out |= {x for names in graph.implicit.values() for x in names if x in weights}
    out |= {x for x in graph.consumers if x in weights}
    return out


def _original_weights(
    analysis: Analysis, session: dict[str, Weight],
) -> tuple[list[Weight] | None, bool, list[Weight], list[str]]:
    """The file's initializers in file order (the session's at ``none``), whether the file could
    be read, what constant folding computes at the analysis's level (:func:`_folded`), and the
    Conv nodes fused with a BatchNormalization (their filter is rewritten before it is re-laid out)."""
    path = analysis.model.path
    if not os.path.isfile(path):
        return None, False, [], []
    if analysis.model.graph_opt == "none":
        return list(session.values()), True, [], []
    from graphmem.errors import ModelLoadError
    from graphmem.model.loading import load_model

    try:
        model = load_model(path, validate=False)
    except ModelLoadError:
        return None, False, [], []
    weights = [Weight(name=n, nbytes=w.nbytes or 0, external=w.external) for n, w in model.weights.items()]
    readers: dict[str, list[str]] = {}
    for node in model.nodes:
        for x in node.input:
            readers.setdefault(x, []).append(node.op_type)
    fused = [node.name or node.output[0] for node in model.nodes
             if node.op_type == "Conv" and node.output and readers.get(node.output[0]) == ["BatchNormalization"]]
    return weights, True, _folded(analysis, model, session), fused


#: Nodes constant folding leaves alone (``constant_folding.cc``: non-deterministic ops, the QDQ
#: pair it keeps for quantization, control flow).
_NOT_FOLDED = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                         "QuantizeLinear", "DequantizeLinear", "If", "Loop", "Scan"})


def _folded(analysis: Analysis, model, session: dict[str, Weight]) -> list[Weight]:
    """The outputs of the file's nodes whose inputs are all constant, in the file's node order:
    constant folding computes them (level basic and above). Their bytes are the session's when it
    kept them, else the file's analysed at ``none`` (a later pass rewrote them: NCHWc filters)."""
    constant = set(model.weights)
    outputs: list[str] = []
    for node in model.nodes:
        ins = [x for x in node.input if x]
        if (
            ins
            and node.op_type not in _NOT_FOLDED
            and node.domain in ("", "ai.onnx")
            and all(x in constant for x in ins)
        ):
            outs = [x for x in node.output if x]
            constant.update(outs)
            outputs += outs
    if not outputs:
        return []
    sizes = {n: w.nbytes for n, w in session.items()}
    if any(x not in sizes for x in outputs):
        from graphmem.analysis.request import request_of
        from graphmem.analysis.stages import expand_functions, load, types_and_shapes
        from graphmem.model.program import tensor_size

        m = analysis.model  # the file's types at none, as the user bound its inputs
        request = request_of(dims=m.dims, shapes=m.shapes or None, values=m.values or None, host=analysis.host)
        loaded = load(model, request)
        types = types_and_shapes(expand_functions(loaded.model, request).model, loaded.inputs, request).runtime.types
        sizes = {x: sizes.get(x, tensor_size(types.get(x)) or 0) for x in outputs}
    return [Weight(name=x, nbytes=sizes.get(x, 0)) for x in outputs]


def _first_use(analysis: Analysis):
    """Sort key of an initializer an optimizer made: where its first reader stood in the file
    (the node keeps its name; the passes walk the graph in order), else where it runs."""
    nodes = analysis.graph.model.nodes
    first: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for x in node.input:
            first.setdefault(x, i)
    return lambda w: (first.get(w.name, len(nodes)), w.name)


def _arena_notes(arena: ArenaFigures) -> list[SessionApproximation]:
    """The arena's approximations, for the figures they move (resident too: it holds the regions)."""
    figures = {
        "prepack_not_modelled": ("weights_held_bytes", *ARENA_FIGURES, "resident_bytes"),
    }
    return [
        SessionApproximation(kind=a.kind, figures=figures.get(a.kind, (*ARENA_FIGURES, "resident_bytes")),
                             node=a.node, detail=a.detail)
        for a in arena.approximations
    ]


def _level(graph_opt: str) -> str:
    from graphmem.ort.held.options import GRAPH_OPT_LEVELS

    return GRAPH_OPT_LEVELS[graph_opt]


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"
