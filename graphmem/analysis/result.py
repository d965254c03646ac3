"""The :class:`Analysis` every view reads: what ``graphmem peak`` reports, as typed data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graphmem.flops import FlopReport
from graphmem.host import HostProfile
from graphmem.model.graph import OpGraph
from graphmem.model.types import TensorType
from graphmem.ort.allocation import OrtPlan
from graphmem.ort.session import PlacementInfo
from graphmem.planner.program import Program

if TYPE_CHECKING:  # control flow's modules load only for a model that has it
    from graphmem.ort.controlflow import Replay

__all__ = [
    "Analysis", "ModelInfo", "WeightsInfo", "ActivationsInfo", "IOInfo", "ShapesInfo", "Approximation",
    "APPROXIMATION_KINDS", "StepMemory", "UnresolvedCause", "range_text",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInfo:
    path: str
    opset: int
    nodes: int
    dims: dict[str, int]
    graph_opt: str = "none"  # onnxruntime optimization level of the graph analysed
    shapes: dict[str, tuple | None] = field(
        default_factory=dict
    )  # --shape: inputs' whole shapes (a sequence: elements'; None: none)
    values: dict[str, tuple[int | float, ...]] = field(default_factory=dict)  # --value: small inputs' values


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightsInfo:
    """Initializers and Constant outputs, each counted once."""

    params: int
    bytes: int
    by_dtype: dict[str, tuple[int, int]]  # dtype -> (params, bytes)
    external_bytes: int
    unknown: tuple[str, ...]  # weights whose dtype has no fixed size (not in ``bytes``)


#: Why a figure is not exact (``activations.approximations[].kind``), documented in docs/pages/memory-model.md
#: (exactness):
#: a tensor without a static size; a control-flow body whose buffers are not planned; an If
#: branch assumed (the larger); a kernel graphmem has no rules for; kernel scratch not modelled
#: (``in_use_peak_bytes`` may be low); an input value assumed; a session order assumed; an
#: onnxruntime graph rewrite graphmem does not emulate (both figures).
APPROXIMATION_KINDS = (
    "unresolved_tensor",
    "unplanned_subgraph",
    "branch_assumed",
    "unknown_kernel",
    "scratch_not_modelled",
    "value_assumed",
    "order_assumed",
    "rewrite_not_modelled",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Approximation:
    """One reason the activation figures are not exact: its ``kind`` (one of
    :data:`APPROXIMATION_KINDS`), the node ('' when none), and what."""

    kind: str
    node: str
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ActivationsInfo:
    """Activation memory: the runtime's peak, the bounds, and where the peak happens."""

    peak_bytes: int
    peak_node: str
    peak_step: int
    lower_bound_bytes: int
    no_reuse_bytes: int
    best_arena_bytes: int
    unknown: tuple[str, ...]  # activations of unknown size: not in the figures above
    runtime: str
    timeline: tuple[tuple[str, int], ...] = ()  # (node, bytes held after it) in execution order
    step_ops: tuple[str, ...] = ()  # op type of each timeline step (Memcpy nodes included on CUDA)
    # Kernel scratch (graphmem.ort.scratch): the largest one kernel requests, and the arena's in-use
    # high-water mark with it, in arena chunk bytes (the profiler's mem_in_use_peak).
    scratch_bytes: int = 0
    in_use_peak_bytes: int | None = 0  # None: not modelled (CUDA kernels' workspaces)
    scratch_unmodelled: tuple[str, ...] = ()  # op types without a scratch rule (counted 0)
    live_at_peak: frozenset[str] = frozenset()  # tensors whose buffer is held at the peak step
    provider: str = "cpu"  # the execution provider whose allocator is emulated
    approximations: tuple[Approximation, ...] = ()  # empty: every buffer planned exactly
    # the peaks of the execution orders a session may pick (order_assumed), ascending; peak_bytes
    # is the largest; () when the order is known or the orders could not be enumerated
    order_peaks: tuple[int, ...] = ()

    @property
    def exact(self) -> bool:
        """True only when every buffer was planned from resolved shapes under emulated rules."""
        return not self.approximations


@dataclass(frozen=True, slots=True, kw_only=True)
class IOInfo:
    inputs_bytes: int
    outputs_bytes: int


def range_text(dim: str | None, low: int | None, high: int | None) -> str:
    """``low ≤ dim ≤ high`` as ``seq ≤ 512`` (low 1 or open), ``h ≥ 5`` (high open) or
    ``2 ≤ n ≤ 7``; '' without a dim."""
    if dim is None:
        return ""
    if low is not None and low > 1 and high is not None:
        return f"{low} ≤ {dim} ≤ {high}"
    return f"{dim} ≤ {high}" if high is not None else f"{dim} ≥ {low}"


@dataclass(frozen=True, slots=True, kw_only=True)
class UnresolvedCause:
    """A node whose outputs have no static size although every input's shape is known."""

    node: str  # its name (or ``OpType_id`` when unnamed)
    op_type: str
    tensors: tuple[str, ...]  # its unresolved outputs
    inputs: str  # its inputs' shapes (and small values), as shown
    # "refused": shape inference gives no shape for these inputs; "value_dependent": it gives a
    # rank, but a dim depends on values graphmem does not know (NonZero, a Reshape by a computed shape)
    kind: str = "refused"
    dim: str | None = None  # the bound dim whose value the node cannot take (None: none found)
    value: int | None = None  # that dim's bound value
    low: int | None = None  # the range of that dim its shapes resolve in: low ≤ dim ≤ high (None: open)
    high: int | None = None

    @property
    def resolves_for(self) -> str:
        """The range of ``dim`` the node's shapes resolve in, as ``seq ≤ 512`` ('' when none was found)."""
        return range_text(self.dim, self.low, self.high)

    @property
    def detail(self) -> str:
        """One line: the node, what it cannot take, the range its shapes resolve in."""
        if self.kind == "value_dependent":
            return (f"node '{self.node}' ({self.op_type}): the size of its output depends on values not known "
                    f"before the run (its inputs: {self.inputs})")
        if self.dim is None:
            return f"node '{self.node}' ({self.op_type}) gives no shape for its inputs ({self.inputs})"
        return (f"node '{self.node}' ({self.op_type}) cannot take {self.dim}={self.value} (its inputs: {self.inputs}); "
                f"its shapes resolve for {self.resolves_for}")

    def to_json(self) -> dict[str, object]:
        return {
            "node": self.node, "op_type": self.op_type, "tensors": list(self.tensors), "inputs": self.inputs,
            "kind": self.kind,
            "dim": self.dim, "value": self.value, "resolves_for": self.resolves_for or None, "detail": self.detail,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ShapesInfo:
    tensors: int
    unresolved: tuple[str, ...]
    # the nodes that cannot take their inputs (graphmem.analysis.causes), in execution order
    causes: tuple[UnresolvedCause, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class StepMemory:
    """The planners' own per-step results, kept (not copied) for the views that draw them
    (:func:`graphmem.analysis.timeline.memory_timeline`)."""

    program: Program  # the steps and values onnxruntime's plan was made for
    plan: OrtPlan  # its ``in_use`` is ``activations.timeline``'s bytes
    lower_bound: tuple[int, ...]  # bytes that must be live at each step (liveness)
    in_use: tuple[int, ...] | None  # arena in-use at each step's highest, scratch included; None: not modelled
    scratch: tuple[int, ...] | None  # kernel scratch requested per step; None: not modelled


@dataclass(frozen=True, slots=True, kw_only=True)
class Analysis:
    """Everything ``graphmem peak`` reports, as typed data."""

    model: ModelInfo
    weights: WeightsInfo
    activations: ActivationsInfo
    io: IOInfo
    shapes: ShapesInfo
    total_bytes: int
    graph: OpGraph
    order: tuple[int, ...]
    types: dict[str, TensorType]
    flops: FlopReport
    host: HostProfile  # the machine the figures are for (graphmem.host)
    values: dict[str, Any] = field(default_factory=dict)  # tensor -> value (numpy) shape inference computed
    placement: PlacementInfo | None = None  # CUDA sessions: the partition and other memories
    steps: StepMemory | None = None  # per-step planner results, for the pictures
    # control-flow node id -> the bodies it ran (graphmem.analysis.controlflow.BodyLayers)
    bodies: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    replay: Replay | None = None  # a run with control flow, request by request (for the pictures)
    session: Any = None  # what the session holds (graphmem.analysis.hold), when the request asked for it
