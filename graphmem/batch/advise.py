"""``graphmem advise``: the session settings that change what a session holds, for one model and
binding, each predicted, ranked by what it saves against the user's current options.

For the current options (onnxruntime's defaults, or ``--session-option``/``--graph-opt``) and one
binding, each setting below is changed on its own and the session block predicted again
(:func:`graphmem.analysis.session.session_figures`; a graph level is a new analysis of the graph
onnxruntime runs at that level):

* ``enable_mem_pattern`` flipped (the memory pattern's block from run 2 on, in a region of its own);
* ``arena_extend_strategy`` the other strategy (kNextPowerOfTwo ↔ kSameAsRequested);
* ``enable_cpu_mem_arena`` flipped (no arena: every buffer a system allocation);
* ``session.disable_prepacking`` flipped (pre-packed weight copies against the originals);
* the graph level, each other one (``--graph-opt``; needs onnxruntime to optimize the graph);
* ``intra_op_num_threads``: 1 when the current count is larger, else this host's default.

Each line carries its predicted held bytes (the arena's steady state) and resident bytes, the
saving of each against the current options (positive: it holds less), what the setting costs in
speed where onnxruntime's sources say (:data:`SPEED`: what work moves, never a figure), and the
``graphmem verify`` command that measures it. Lines are ranked by the resident saving, then the
arena's. A setting whose prediction fails (onnxruntime not installed for a level, an option that
cannot be emulated) is listed in ``skipped`` with the reason, never dropped silently.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphmem.errors import GraphmemError, UsageError
from graphmem.host import HostProfile
from graphmem.ort.held.options import GRAPH_OPT_LEVELS, SessionOptions, parse_session_options

if TYPE_CHECKING:
    from graphmem.analysis.request import Bindings

__all__ = ["Advice", "AdviceLine", "Skipped", "advise", "SPEED", "option_pairs", "verify_command", "input_items"]

#: What a setting costs in speed, as onnxruntime's sources state it (the work that moves, where
#: it moves to), never a measured or guessed figure: setting key → (text, source file).
SPEED: dict[str, tuple[str, str]] = {
    "enable_mem_pattern=0": (
        "from run 2 on, one arena allocation per tensor per run instead of one planned block per run",
        "core/framework/execution_frame.cc",
    ),
    "enable_mem_pattern=1": (
        "from run 2 on, one planned block per run instead of one arena allocation per tensor",
        "core/framework/execution_frame.cc",
    ),
    "arena_extend_strategy=kSameAsRequested": (
        "the arena grows by exactly each request that does not fit: more system allocations while it "
        "grows, none once it stops; a session-level setting only through an environment arena",
        "core/framework/bfc_arena.cc (Extend)",
    ),
    "arena_extend_strategy=kNextPowerOfTwo": (
        "the arena grows by doubling regions: fewer system allocations while it grows",
        "core/framework/bfc_arena.cc (Extend)",
    ),
    "enable_cpu_mem_arena=0": (
        "every tensor is a system allocation and free in every run (no arena reuse)",
        "core/framework/allocator.cc (CPUAllocator)",
    ),
    "enable_cpu_mem_arena=1": (
        "tensors are carved from the arena's regions instead of a system allocation each",
        "core/framework/bfc_arena.cc",
    ),
    "session.disable_prepacking=1": (
        "the kernels that pre-pack their weights at session creation ({prepacking}) pack them as they "
        "compute, in every run, instead",
        "core/framework/session_state.cc (PrepackConstantInitializedTensors), core/mlas/lib/sgemm.cpp",
    ),
    "session.disable_prepacking=0": (
        "the kernels that can ({prepacking}) pack their weights once at session creation instead of in every run",
        "core/framework/session_state.cc (PrepackConstantInitializedTensors)",
    ),
    "graph_opt": (
        "other kernels run (fusions, layout changes): the speed difference is not known from the sources",
        "core/optimizer/graph_transformer_utils.cc",
    ),
    "intra_op_num_threads": (
        "kernels that split their work over the intra-op thread pool use {threads} thread(s) instead of "
        "{current}: by how much that is slower or faster is not known from the sources",
        "core/common/threadpool.cc",
    ),
}

#: The settings advised, in the order ties are listed.
SETTINGS = (
    "enable_mem_pattern", "arena_extend_strategy", "enable_cpu_mem_arena", "session.disable_prepacking",
    "graph_opt", "intra_op_num_threads",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class AdviceLine:
    """One setting changed from the current options: ``setting`` (onnxruntime's key, or
    ``graph_opt``) and its ``value``; the whole option set it is predicted under (``graph_opt``,
    ``pairs``: every ``--session-option`` that differs from onnxruntime's defaults, and the thread
    count); the predicted figures (:class:`graphmem.analysis.session.SessionFigures`); the savings
    against the current options (positive: holds less); the speed cost as the sources state it
    and where; the command that measures it."""

    setting: str
    value: str
    graph_opt: str
    pairs: tuple[str, ...]
    figures: Any  # SessionFigures
    arena_saving_bytes: int | None  # None when one side has no arena (its buffers are system allocations)
    resident_saving_bytes: int
    speed: str
    speed_source: str
    command: str

    @property
    def change(self) -> str:
        """``KEY=VALUE`` as a user writes it (``--graph-opt all`` for a level)."""
        return f"--graph-opt {self.value}" if self.setting == "graph_opt" else f"{self.setting}={self.value}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Skipped:
    """A setting not predicted, and why (one line)."""

    setting: str
    value: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Advice:
    """The advice for ``path`` under one binding: the current options (``graph_opt``, ``pairs``)
    and their figures (``current``), the lines ranked (most resident saved first), the settings
    not predicted (``skipped``)."""

    path: str
    dims: dict[str, int]
    inputs: tuple[str, ...]  # the binding as verify's words (--dim NAME=VALUE, --shape ..., --value ...)
    graph_opt: str
    pairs: tuple[str, ...]
    current: Any  # SessionFigures
    current_command: str
    lines: tuple[AdviceLine, ...]
    skipped: tuple[Skipped, ...]
    host: HostProfile
    model: Any  # the current analysis's ModelInfo: every dim bound, the inputs' shapes and values


def option_pairs(opts: SessionOptions) -> tuple[str, ...]:
    """``--session-option`` items that give ``opts``: every option that differs from
    onnxruntime's default, then the thread count (always: ``peak`` and ``verify`` resolve its
    default differently), in :meth:`SessionOptions.as_dict` order; the level is ``--graph-opt``'s."""
    default = SessionOptions().as_dict()
    out = []
    for key, value in opts.as_dict().items():
        if key in ("graph_optimization_level", "intra_op_num_threads") or default.get(key) == value:
            continue
        out.append(f"{key}={_text(value)}")
    out.append(f"intra_op_num_threads={opts.intra_op_num_threads}")
    return tuple(out)


def verify_command(path: str, inputs: Sequence[str], graph_opt: str, pairs: Sequence[str]) -> str:
    """The ``graphmem verify`` command line that measures a session of ``path`` under these options."""
    words = ["graphmem", "verify", path, *inputs, "--graph-opt", graph_opt]
    for pair in pairs:
        words += ["--session-option", pair]
    return " ".join(shlex.quote(w) for w in words)


def advise(
    path: str | Path,
    *,
    dims: Mapping[str, int] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
    values: Mapping[str, Sequence[int | float]] | None = None,
    bindings: Bindings | None = None,
    graph_opt: str = "none",
    session_options: Sequence[str] = (),
    host: HostProfile | str | Path | None = None,
    levels: Sequence[str] | None = None,
) -> Advice:
    """The settings that change what a CPU session of ``path`` holds (see the module doc).

    ``dims``, ``shapes`` and ``values`` (or ``bindings``) bind the inputs as for
    :func:`graphmem.analyze`; ``session_options``: the current ``--session-option`` items
    (onnxruntime's defaults for the rest; ``intra_op_num_threads`` unset is the host's default);
    ``levels``: the graph levels other than ``graph_opt`` to predict (all of them when None;
    ``()``: none).

    Raises :class:`graphmem.errors.UsageError` on a bad option or level; the current options'
    analysis raises what :func:`graphmem.analysis.graph_opt.analyze_graph_opt` raises."""
    from graphmem.analysis.graph_opt import analyze_graph_opt
    from graphmem.analysis.request import request_of
    from graphmem.analysis.session import session_figures

    request = request_of(bindings=bindings, dims=dims, shapes=shapes, values=values, host=host)
    here = request.host
    if graph_opt not in GRAPH_OPT_LEVELS:
        raise UsageError(f"--graph-opt {graph_opt!r}: expected one of {', '.join(GRAPH_OPT_LEVELS)}")
    others = [lv for lv in GRAPH_OPT_LEVELS if lv != graph_opt] if levels is None else list(levels)
    for lv in others:
        if lv not in GRAPH_OPT_LEVELS:
            raise UsageError(f"level {lv!r}: expected one of {', '.join(GRAPH_OPT_LEVELS)}")
    options = parse_session_options(
        list(session_options), graph_opt=graph_opt, default_threads=here.ort_intra_op_threads
    )
    analysis = analyze_graph_opt(path, graph_opt, request)
    if analysis.activations.provider != "cpu":
        raise UsageError("advise predicts CPU sessions")
    current = session_figures(analysis, options, page_size=here.page_size)
    given = request.bindings
    inputs = input_items(given.dims, given.shapes, given.values)
    text = str(path)
    pairs = option_pairs(options)
    lines: list[AdviceLine] = []
    skipped: list[Skipped] = []
    prepacking = _prepacking_ops(analysis)

    def add(setting: str, value: str, opts: SessionOptions, a: Any) -> None:
        try:
            f = session_figures(a, opts, page_size=here.page_size)
        except GraphmemError as exc:
            skipped.append(Skipped(setting=setting, value=value, reason=str(exc)))
            return
        cand = option_pairs(opts)
        speed, source = _speed(setting, value, options, prepacking if a is analysis else _prepacking_ops(a))
        lines.append(AdviceLine(
            setting=setting, value=value, graph_opt=opts.graph_opt, pairs=cand, figures=f,
            arena_saving_bytes=_arena_saving(current, f),
            resident_saving_bytes=current.resident_bytes - f.resident_bytes,
            speed=speed, speed_source=source, command=verify_command(text, inputs, opts.graph_opt, cand),
        ))

    for setting, value, changed in _flips(options, here):
        add(setting, value, changed, analysis)
    for lv in others:
        try:
            other = analyze_graph_opt(path, lv, request)
        except GraphmemError as exc:
            skipped.append(Skipped(setting="graph_opt", value=lv, reason=str(exc)))
            continue
        add("graph_opt", lv, replace(options, graph_optimization_level=GRAPH_OPT_LEVELS[lv]), other)
    order = {s: i for i, s in enumerate(SETTINGS)}
    ranked = sorted(
        lines, key=lambda x: (-x.resident_saving_bytes, -(x.arena_saving_bytes or 0), order[x.setting], x.value)
    )
    return Advice(
        path=text, dims=dict(analysis.model.dims), inputs=inputs, graph_opt=graph_opt, pairs=pairs, current=current,
        current_command=verify_command(text, inputs, graph_opt, pairs), lines=tuple(ranked), skipped=tuple(skipped),
        host=here, model=analysis.model,
    )


def _arena_saving(current: Any, f: Any) -> int | None:
    """The arena's steady bytes saved; None when either session has no arena (0 held there
    says nothing: its buffers are system allocations, counted in the resident figure)."""
    if not (current.options.enable_cpu_mem_arena and f.options.enable_cpu_mem_arena):
        return None
    return current.arena_steady_bytes - f.arena_steady_bytes


def _flips(options: SessionOptions, host: HostProfile) -> list[tuple[str, str, SessionOptions]]:
    """Each session option advised, changed on its own: (key, new value as text, options)."""
    out = [
        ("enable_mem_pattern", _bit(not options.enable_mem_pattern),
         replace(options, enable_mem_pattern=not options.enable_mem_pattern)),
    ]
    other = "kSameAsRequested" if options.arena_extend_strategy == "kNextPowerOfTwo" else "kNextPowerOfTwo"
    out.append(("arena_extend_strategy", other, replace(options, arena_extend_strategy=other)))
    out.append(("enable_cpu_mem_arena", _bit(not options.enable_cpu_mem_arena),
                replace(options, enable_cpu_mem_arena=not options.enable_cpu_mem_arena)))
    out.append(("session.disable_prepacking", _bit(not options.disable_prepacking),
                replace(options, disable_prepacking=not options.disable_prepacking)))
    threads = 1 if options.intra_op_num_threads > 1 else host.ort_intra_op_threads
    if threads != options.intra_op_num_threads:
        out.append(("intra_op_num_threads", str(threads), replace(options, intra_op_num_threads=threads)))
    return out


def _speed(setting: str, value: str, current: SessionOptions, prepacking: Sequence[str]) -> tuple[str, str]:
    """What the change costs in speed, from :data:`SPEED`, filled in for this model."""
    if setting == "graph_opt":
        return SPEED["graph_opt"]
    if setting == "intra_op_num_threads":
        text, source = SPEED[setting]
        return text.format(threads=value, current=current.intra_op_num_threads), source
    text, source = SPEED[f"{setting}={value}"]
    if setting == "session.disable_prepacking":
        ops = ", ".join(prepacking) if prepacking else "none in this graph"
        text = text.format(prepacking=ops)
    return text, source


def _prepacking_ops(analysis: Any) -> tuple[str, ...]:
    """The op types (with counts) whose nodes pre-pack weights at session creation."""
    from graphmem.ort.held.prepack import session_creation

    creation = session_creation(analysis.graph)
    nodes = {e.node for e in creation.events if e.node}
    ops: dict[str, int] = {}
    by_label = {(n.name or f"{n.op_type}#{nid}"): n.op_type for nid, n in analysis.graph.protos.items()}
    for label in nodes:
        op = by_label.get(label, label)
        ops[op] = ops.get(op, 0) + 1
    return tuple(f"{n} {op}" for op, n in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])))


def input_items(
    dims: Mapping[str, int] | None, shapes: Mapping[str, Any] | None, values: Mapping[str, Sequence[Any]] | None,
) -> tuple[str, ...]:
    """The binding as the ``--dim``/``--shape``/``--value`` words that give it (for a command line)."""
    out: list[str] = []
    for k, v in (dims or {}).items():
        out += ["--dim", f"{k}={v}"]
    for name, shape in (shapes or {}).items():
        out += ["--shape", f"{name}={_shape_text(shape)}"]
    for name, vals in (values or {}).items():
        out += ["--value", f"{name}={','.join(str(v) for v in vals)}"]
    return tuple(out)


def _shape_text(shape: Any) -> str:
    if shape is None:
        return "none"
    if any(isinstance(d, (tuple, list)) for d in shape):
        return "[" + ",".join(_shape_text(e) for e in shape) + "]"
    return "x".join(str(d) for d in shape)


def _bit(flag: bool) -> str:
    return "1" if flag else "0"


def _text(value: object) -> str:
    return _bit(value) if isinstance(value, bool) else str(value)
