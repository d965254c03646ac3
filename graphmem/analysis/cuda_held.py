"""What a CUDA session holds on the device: its arena through the session's life, the weights, and
the device memory outside the arena (the ``session`` block of ``peak --provider cuda``).

NOT CHECKED AGAINST A GPU: there was none where this was written. From the sources (onnxruntime
1.31, ``core/providers/cuda/cuda_execution_provider.cc``, ``cuda_provider_options``):

* the CUDA provider's allocator is the same ``BFCArena`` as the CPU's
  (:class:`graphmem.ort.arena.BfcArena`) over ``cudaMalloc``, with its own defaults:
  ``arena_extend_strategy`` kNextPowerOfTwo, ``gpu_mem_limit`` SIZE_MAX (``max_mem``);
* the initializers placed on the device (read by CUDA kernels) are copied from host memory into
  one block of the memory pattern planner for initializers, each rounded up to 256 bytes
  (``TensorAllocatorWithMemPattern``, ``session_state_utils.cc``: external or in-memory data on a
  non-CPU device is traced and planned), taken before run 1;
* the runs replay the CUDA arena's requests (:func:`graphmem.ort.held.life.replay_life` on the CUDA
  plan: values on other devices are the CPU arena's and pinned memory's); cuDNN's and cuBLAS's
  workspaces are taken from the arena too (``GetScratchBuffer``), and graphmem has no rule for
  them: the arena figures leave them out and say so;
* outside the arena the device holds the CUDA context and the libraries' handles and workspaces
  (cuBLAS, cuBLASLt, cuDNN), which depend on the GPU, the driver and lazy module loading: an
  estimate per device class (:data:`CONTEXT_BYTES`), marked approximate.

``resident_bytes`` is the device memory the session takes: the arena's steady bytes plus that
estimate (host memory is the CPU block's business).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from typing import Any

from graphmem.analysis.result import Analysis
from graphmem.analysis.session import ARENA_FIGURES, SessionApproximation
from graphmem.errors import UsageError
from graphmem.ort.held.life import replay_life
from graphmem.ort.held.options import EXTEND_STRATEGIES, SessionOptions
from graphmem.ort.held.prepack import CreationEvent
from graphmem.ort.scratch_common import KernelScratch
from graphmem.units import parse_bytes

__all__ = [
    "CudaOptions",
    "CudaParts",
    "DeviceOverhead",
    "CudaSessionFigures",
    "cuda_session_figures",
    "parse_cuda_options",
    "reject_cuda_keys",
    "CUDA_KEYS",
    "CONTEXT_BYTES",
    "CUDA_ALLOC_ALIGNMENT",
]

#: ``kAllocAlignment`` on the CUDA device too: the initializer block's entries are rounded to it.
CUDA_ALLOC_ALIGNMENT = 256
#: The provider options (and session options) a CUDA session's figures take, onnxruntime's names.
CUDA_KEYS = ("enable_mem_pattern", "arena_extend_strategy", "gpu_mem_limit", "cudnn_conv_algo_search",
             "cudnn_conv_use_max_workspace", "intra_op_num_threads")
_ALGO_SEARCH = ("EXHAUSTIVE", "HEURISTIC", "DEFAULT")

#: Device memory outside the arena: the CUDA context with the modules onnxruntime's kernels load,
#: and the cuBLAS (4 MiB workspace before Hopper, 32 MiB from it: cuBLAS documentation,
#: "cublasSetWorkspace"), cuBLASLt and cuDNN handles of the provider's one stream. The context is
#: the driver's: a few hundred MiB with CUDA 12's lazy loading on the GPUs of the catalog (NVIDIA's
#: CUDA C++ Programming Guide, "Lazy Loading"; typical ``nvidia-smi`` readings of a process that
#: only created a context). Approximate by nature: ``verify --provider cuda`` measures it.
CONTEXT_BYTES = {
    "default": (300 << 20, 4 << 20),  # (context, handles' workspaces)
    "h100-80gb": (500 << 20, 32 << 20),
    "h200-141gb": (500 << 20, 32 << 20),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaOptions:
    """A CUDA session's options (onnxruntime's names and defaults): the session's memory pattern,
    the CUDA provider's arena and cuDNN options, the CPU side's intra-op threads."""

    enable_mem_pattern: bool = True
    arena_extend_strategy: str = "kNextPowerOfTwo"
    gpu_mem_limit: int = 0  # 0: SIZE_MAX, onnxruntime's default
    cudnn_conv_algo_search: str = "EXHAUSTIVE"
    cudnn_conv_use_max_workspace: bool = True
    intra_op_num_threads: int = 0
    device: str = "default"  # the catalog device the context estimate is for

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "device"}
        out["cudnn_conv_use_max_workspace"] = "1" if self.cudnn_conv_use_max_workspace else "0"
        out["execution_mode"] = "ORT_SEQUENTIAL"
        return out

    def provider_options(self) -> dict[str, str]:
        """The CUDA provider options onnxruntime takes for these."""
        out = {
            "arena_extend_strategy": self.arena_extend_strategy,
            "cudnn_conv_algo_search": self.cudnn_conv_algo_search,
            "cudnn_conv_use_max_workspace": "1" if self.cudnn_conv_use_max_workspace else "0",
        }
        if self.gpu_mem_limit:
            out["gpu_mem_limit"] = str(self.gpu_mem_limit)
        return out


def parse_cuda_options(pairs: Iterable[str], *, device: str | None = None) -> CudaOptions:
    """``--session-option KEY=VALUE`` strings for a CUDA session; :class:`UsageError` naming a
    bad key or value (and the known keys)."""
    values: dict[str, Any] = {}  # each parsed by _value to its CudaOptions field's type
    for pair in pairs:
        key, sep, text = str(pair).partition("=")
        key, text = key.strip(), text.strip()
        if not sep or not key:
            raise UsageError(f"--session-option {pair!r}: expected KEY=VALUE")
        if key not in CUDA_KEYS:
            raise UsageError(
                f"--session-option {key}: not an option of a CUDA session's figures; known: {', '.join(CUDA_KEYS)}"
            )
        values[key] = _value(key, text)
    opts = CudaOptions(**values)
    if device is not None:
        opts = replace(opts, device=device)
    return opts


def reject_cuda_keys(pairs: Iterable[str]) -> None:
    """A CUDA-only key on a CPU session: one line naming it."""
    for pair in pairs:
        key = str(pair).partition("=")[0].strip()
        if key in ("gpu_mem_limit", "cudnn_conv_algo_search", "cudnn_conv_use_max_workspace"):
            raise UsageError(f"--session-option {key}: a CUDA provider option; use it with --provider cuda")


def _value(key: str, text: str) -> object:
    if key in ("enable_mem_pattern", "cudnn_conv_use_max_workspace"):
        flags = {"1": True, "0": False, "true": True, "false": False}
        if text.lower() not in flags:
            raise UsageError(f"--session-option {key}={text}: expected 0 or 1 (or true/false)")
        return flags[text.lower()]
    if key == "arena_extend_strategy":
        by_number = {str(v): k for k, v in EXTEND_STRATEGIES.items()}
        if text not in EXTEND_STRATEGIES and text not in by_number:
            raise UsageError(f"--session-option {key}={text}: expected one of {', '.join(EXTEND_STRATEGIES)} (or 0, 1)")
        return by_number.get(text, text)
    if key == "cudnn_conv_algo_search":
        if text.upper() not in _ALGO_SEARCH:
            raise UsageError(f"--session-option {key}={text}: expected one of {', '.join(_ALGO_SEARCH)}")
        return text.upper()
    if key == "gpu_mem_limit":
        n = parse_bytes(text)
        if n < 0:
            raise UsageError(f"--session-option {key}={text}: expected a byte size >= 0")
        return n
    try:
        n = int(text)
    except ValueError:
        raise UsageError(f"--session-option {key}={text}: expected an integer") from None
    if not 0 <= n <= 1 << 16:
        raise UsageError(f"--session-option {key}={text}: expected an integer in [0, 65536]")
    return n


def _placed_weights(program, device: str, weights) -> list:
    """The initializers a kernel on ``device`` reads (the planner locates an initializer where its
    consumers run, ``allocation_planner.cc`` GeneratePlanForWeights): a step runs where its first
    output lives."""
    on_device: set[int] = set()
    for step in program.steps:
        if step.outputs and program.values[step.outputs[0]].device == device:
            on_device.update(step.inputs)
    return [program.values[i] for i in sorted(on_device)
            if program.values[i].source and program.values[i].name in weights]


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaParts:
    """``resident_bytes`` on the device: the arena's steady bytes, the context and the handles."""

    arena: int
    context: int
    handles: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceOverhead:
    """The device memory outside the arena (see :data:`CONTEXT_BYTES`), for the document."""

    device: str
    context_bytes: int
    handles_bytes: int
    basis: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaSessionFigures:
    """The ``session`` block of a CUDA analysis (same figures as the CPU one; device bytes)."""

    options: CudaOptions
    provider: str
    weights_held_bytes: int
    arena_before_run_bytes: int
    arena_first_run_bytes: int
    arena_steady_bytes: int
    resident_bytes: int
    steady_after_run: int
    parts: CudaParts
    device: DeviceOverhead
    approximations: tuple[SessionApproximation, ...]

    @property
    def exact(self) -> bool:
        return not self.approximations

    def exact_figure(self, name: str) -> bool:
        return not any(name in a.figures for a in self.approximations)


def cuda_session_figures(
    analysis: Analysis, options: CudaOptions | None = None, *, runs: int = 5
) -> CudaSessionFigures:
    """The CUDA session's device figures for a ``--provider cuda`` analysis (see the module doc)."""
    opts = options if options is not None else CudaOptions()
    if analysis.activations.provider != "cuda" or analysis.steps is None:
        raise UsageError("CUDA session figures need a --provider cuda analysis with a per-step plan")
    program, plan = analysis.steps.program, analysis.steps.plan
    device = program.device
    on_device = {i for i, v in enumerate(program.values) if v.device == device}
    weights = analysis.graph.model.weights
    placed = _placed_weights(program, device, weights)
    weights_held = sum(weights[v.name].nbytes or 0 for v in placed)
    block = sum(-(-(weights[v.name].nbytes or 0) // CUDA_ALLOC_ALIGNMENT) * CUDA_ALLOC_ALIGNMENT for v in placed)
    events = [CreationEvent(kind="reserve", key="initializer-block", nbytes=block)] if block else []
    from dataclasses import replace as _replace

    values = tuple(v if i in on_device else _replace(v, size=0) for i, v in enumerate(program.values))
    device_program = _replace(program, values=values)
    arena_options = SessionOptions(
        enable_mem_pattern=opts.enable_mem_pattern, arena_extend_strategy=opts.arena_extend_strategy,
        max_mem=opts.gpu_mem_limit, intra_op_num_threads=1,
    )
    scratch = [KernelScratch()] * len(program.steps)
    life = replay_life(device_program, plan, scratch, events, arena_options, runs=runs)
    held = life.held_after_run
    context, handles = CONTEXT_BYTES.get(opts.device, CONTEXT_BYTES["default"])
    notes = [
        SessionApproximation(
            kind="not_checked_on_gpu",
            figures=("weights_held_bytes", *ARENA_FIGURES, "resident_bytes"),
            node="",
            detail="emulated from onnxruntime's CUDA provider sources; no GPU was there to check it",
        ),
        SessionApproximation(
            kind="scratch_not_modelled",
            figures=(*ARENA_FIGURES, "resident_bytes"),
            node="",
            detail=(
                f"cuDNN's and cuBLAS's workspaces come from the arena and are not modelled "
                f"(cudnn_conv_algo_search={opts.cudnn_conv_algo_search}, "
                f"cudnn_conv_use_max_workspace={int(opts.cudnn_conv_use_max_workspace)}): the figures may be low"
            ),
        ),
        SessionApproximation(
            kind="device_overhead_estimated",
            figures=("resident_bytes",),
            node="",
            detail=(
                f"the CUDA context ({context >> 20} MiB) and the libraries' handles ({handles >> 20} MiB) are an "
                "estimate "
                f"for {'a catalog GPU' if opts.device == 'default' else opts.device}: they depend on the GPU, the "
                "driver "
                "and lazy module loading; graphmem verify --provider cuda measures them"
            ),
        ),
    ]
    if analysis.activations.approximations:
        notes.append(
            SessionApproximation(
                kind="activations_not_exact",
                figures=(*ARENA_FIGURES, "resident_bytes"),
                node="",
                detail="the activation plan replayed is not exact (activations.approximations)",
            )
        )
    return CudaSessionFigures(
        options=opts,
        provider="cuda",
        weights_held_bytes=weights_held,
        arena_before_run_bytes=held[0],
        arena_first_run_bytes=held[1],
        arena_steady_bytes=held[-1],
        resident_bytes=held[-1] + context + handles,
        steady_after_run=life.steady_after_run,
        parts=CudaParts(arena=held[-1], context=context, handles=handles),
        device=DeviceOverhead(device=opts.device, context_bytes=context, handles_bytes=handles,
                              basis="estimate (CONTEXT_BYTES, graphmem/analysis/cuda_held.py)"),
        approximations=tuple(notes),
    )
