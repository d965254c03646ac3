"""``graphmem diff``: two models side by side, gated on relative increases.

Weights, params, activation peak, total, FLOPs and node count with absolute and relative change,
and which op types and which layers (matched by node name) account for the change. Budgets and
their reporting are shared with :mod:`graphmem.gate.budgets`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphmem.errors import FlopsUnavailableError, UsageError
from graphmem.gate.budgets import METRICS, Metric, _fmt, lookup
from graphmem.optable import is_default_domain

if TYPE_CHECKING:
    from graphmem.analysis.result import Analysis
    from graphmem.host import HostProfile

__all__ = [
    "DIFF_METRICS",
    "Thresholds",
    "parse_percent",
    "parse_thresholds",
    "Layer",
    "layer_profile",
    "compare",
    "diff_documents",
    "diff_warnings",
    "exactness",
    "is_exact",
    "with_session",
]

#: Figures compared by ``graphmem diff``: the gated metrics plus the node count (never gated).
DIFF_METRICS: tuple[Metric, ...] = (
    *METRICS,
    Metric(key="nodes", option="", label="nodes", path=("model", "nodes"), unit="count"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Thresholds:
    """Largest allowed relative increase per metric, in percent; None = not gated.

    ``flops_required``: the FLOP threshold was asked for explicitly (``--max-increase-flops``),
    so missing FLOPs are an error rather than a figure left out.
    """

    weights: float | None = None
    peak: float | None = None
    total: float | None = None
    params: float | None = None
    flops: float | None = None
    resident: float | None = None
    arena: float | None = None
    flops_required: bool = False

    def limit(self, metric: Metric) -> float | None:
        return getattr(self, metric.key, None)

    def to_json(self) -> dict[str, float]:
        """``{"--max-increase-peak": 2.0, …}`` for the thresholds that are set."""
        out: dict[str, float] = {}
        for m in METRICS:
            limit = self.limit(m)
            if limit is not None:
                out[f"--max-increase-{m.key}"] = limit
        return out


def parse_percent(option: str, text: str) -> float:
    """``"5%"`` → 5.0; anything else (no ``%``, negative, not a number) is a UsageError."""
    value = text.strip()
    if not value.endswith("%"):
        raise UsageError(f"{option} '{text}': give a percentage such as 5% or 2.5%")
    try:
        pct = float(value[:-1])
    except ValueError:
        raise UsageError(f"{option} '{text}': '{value[:-1]}' is not a number") from None
    if not (pct >= 0 and pct != float("inf")):
        raise UsageError(f"{option} '{text}': a threshold must be a finite percentage ≥ 0")
    return pct


def parse_thresholds(
    *,
    max_increase: str | None = None,
    weights: str | None = None,
    peak: str | None = None,
    total: str | None = None,
    params: str | None = None,
    flops: str | None = None,
    resident: str | None = None,
    arena: str | None = None,
) -> Thresholds:
    """Thresholds from ``--max-increase`` (every metric) and ``--max-increase-<metric>``."""
    base = None if max_increase is None else parse_percent("--max-increase", max_increase)
    given = dict(weights=weights, peak=peak, total=total, params=params, flops=flops, resident=resident, arena=arena)
    out = {
        k: base if v is None else parse_percent(f"--max-increase-{k}", v)
        for k, v in given.items()
    }
    return Thresholds(**out, flops_required=flops is not None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Layer:
    """What one node costs: the weights it is the first reader of, and its outputs' bytes."""

    name: str
    op_type: str
    params: int
    weight_bytes: int
    output_bytes: int

    def to_json(self) -> dict[str, int]:
        return {
            "params": self.params,
            "weight_bytes": self.weight_bytes,
            "output_bytes": self.output_bytes,
        }


def layer_profile(analysis: Analysis) -> dict[str, Layer]:
    """Per-node cost of an :class:`~graphmem.analysis.pipeline.Analysis`, keyed by node name.

    Each weight is charged to the first node (in execution order) that reads it, so layer
    params sum to ``weights.params`` minus weights nothing reads. Unnamed nodes are keyed
    ``<op_type:first output>``; repeated names get ``#2``, ``#3``….
    """
    from graphmem.model.program import tensor_size

    g = analysis.graph
    weights = g.model.weights
    charged: set[str] = set()
    out: dict[str, Layer] = {}
    for nid in analysis.order:
        node = g.node(nid)
        params = wbytes = 0
        for name in (*node.input, *g.implicit.get(nid, ())):
            w = weights.get(name)
            if w is not None and name not in charged:
                charged.add(name)
                params += w.numel
                wbytes += w.nbytes or 0
        outputs = sum(tensor_size(analysis.types.get(o)) or 0 for o in node.output if o)
        op = node.op_type if is_default_domain(node.domain) else f"{node.domain}.{node.op_type}"
        key = node.name or f"<{op}:{next((o for o in node.output if o), nid)}>"
        base, k = key, 1
        while key in out:
            k += 1
            key = f"{base}#{k}"
        out[key] = Layer(
            name=key, op_type=op, params=params, weight_bytes=wbytes, output_bytes=outputs
        )
    return out


def compare(
    old: Analysis, new: Analysis, *, thresholds: Thresholds, top: int = 20, require_exact: bool = False,
    host: HostProfile | None = None,
) -> dict[str, Any]:
    """The ``graphmem diff`` document for two analyses (``old`` → ``new``).

    Metric rows give old, new, change and change_percent (None when old is 0 and new is not);
    ``op_types`` and ``layers`` list what changed, largest first (``layers``: the ``top``
    largest, ``layers_changed``: how many changed). Raises :class:`FlopsUnavailableError` for
    ``--max-increase-flops`` when either model has no FLOP count. ``require_exact``
    (``--require-exact``): a side whose activation figures are not exact is a failure. Each side's
    document carries its ``session`` block (onnxruntime's default options on ``host``, None: the
    analysis's), so ``resident`` and ``arena`` rows give a change's cost in held memory.
    """
    from graphmem.analysis.document import peak_json

    return diff_documents(
        with_session(peak_json(old), old, host),
        with_session(peak_json(new), new, host),
        old_layers=layer_profile(old),
        new_layers=layer_profile(new),
        thresholds=thresholds,
        top=top,
        require_exact=require_exact,
    )


def diff_documents(
    old_doc: Mapping[str, Any],
    new_doc: Mapping[str, Any],
    *,
    old_layers: Mapping[str, Layer],
    new_layers: Mapping[str, Layer],
    thresholds: Thresholds,
    top: int = 20,
    require_exact: bool = False,
) -> dict[str, Any]:
    """:func:`compare` on documents and layer profiles already computed."""
    if top < 0:
        raise UsageError(f"--top {top}: must be ≥ 0")
    rows, failures = [], []
    for metric in DIFF_METRICS:
        row, failure = _diff_row(metric, old_doc, new_doc, thresholds)
        if row is not None:
            rows.append(row)
        if failure is not None:
            failures.append(failure)
    sides = {"old": old_doc, "new": new_doc}
    if require_exact:
        failures += [_inexact(side, doc) for side, doc in sides.items() if not is_exact(doc)]
    layers = _layer_changes(old_layers, new_layers)
    return {
        "schema_version": 1,
        "old": dict(old_doc),
        "new": dict(new_doc),
        "exact": {side: is_exact(doc) for side, doc in sides.items()},
        "metrics": rows,
        "op_types": _op_type_changes(old_layers, new_layers),
        "layers": layers[:top],
        "layers_changed": len(layers),
        "gate": {
            "passed": not failures,
            "thresholds": thresholds.to_json(),
            "require_exact": require_exact,
            "failures": failures,
        },
    }


def with_session(doc: Mapping[str, Any], analysis: Analysis, host: HostProfile | None = None,
                 pairs: list[str] | None = None) -> dict[str, Any]:
    """``doc`` with the ``session`` block of ``analysis`` (``--session-option`` ``pairs``, onnxruntime's
    defaults for the rest, on ``host``: None, the analysis's own)."""
    from graphmem.analysis.hold import held_figures
    from graphmem.analysis.session_doc import session_json

    figures = analysis.session if analysis.session is not None and not pairs else held_figures(
        analysis, list(pairs or ()), host if host is not None else analysis.host)
    return {**doc, "session": session_json(figures)}


def is_exact(doc: Mapping[str, Any]) -> bool:
    """Whether a peak document's activation figures are exact (a document without the key, from
    before exactness was reported, is not known to be)."""
    return lookup(doc, ("activations", "exact")) is True


def exactness(doc: Mapping[str, Any]) -> str:
    """One side's exactness in words: ``exact``, or why not (unresolved tensors and their cause
    first: they leave whole tensors out of the figures)."""
    if is_exact(doc):
        return "exact"
    unresolved = lookup(doc, ("shapes", "unresolved")) or []
    causes = lookup(doc, ("shapes", "causes")) or []
    if unresolved:
        cause = f"; cause: {causes[0]['detail']}" if causes else ""
        return (f"NOT EXACT: {len(unresolved)} tensors have no static size, so its figures are lower estimates"
                f"{cause}")
    found = lookup(doc, ("activations", "approximations")) or []
    kinds = ", ".join(sorted({str(x.get("kind")) for x in found if isinstance(x, Mapping)})) or "unknown"
    return f"NOT EXACT: {len(found)} approximations ({kinds})"


def diff_warnings(doc: Mapping[str, Any]) -> list[str]:
    """One line per side with unresolved tensors: its figures leave tensors out, so the changes
    against the other side are not like for like."""
    out = []
    for side in ("old", "new"):
        unresolved = lookup(doc[side], ("shapes", "unresolved")) or []
        causes = lookup(doc[side], ("shapes", "causes")) or []
        if unresolved:
            cause = f" (cause: {causes[0]['detail']})" if causes else ""
            out.append(f"{side.upper()} {doc[side]['model']['path']}: {len(unresolved)} tensors have no static size"
                       f"{cause}: its figures leave them out, so the changes against it are not like for like")
    return out


def _inexact(side: str, doc: Mapping[str, Any]) -> dict[str, Any]:
    """The ``--require-exact`` failure of one side."""
    found = lookup(doc, ("activations", "approximations")) or []
    return {
        "metric": "exact",
        "option": "--require-exact",
        "side": side,
        "approximations": len(found),
        "message": f"{side.upper()} ({doc['model']['path']}): {exactness(doc)}; --require-exact",
    }


def _diff_row(
    metric: Metric, old_doc: Mapping[str, Any], new_doc: Mapping[str, Any], th: Thresholds
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    old, new = lookup(old_doc, metric.path), lookup(new_doc, metric.path)
    limit = th.limit(metric)
    if old is None or new is None:
        if metric.key == "flops" and th.flops_required:
            which = "OLD" if new is not None else "NEW" if old is not None else "either model"
            raise FlopsUnavailableError(
                f"--max-increase-flops: FLOPs are unavailable for {which}, so the FLOP "
                "increase cannot be checked"
            )
        if metric.key in ("flops", "resident", "arena") and old is None and new is None:
            return None, None  # no FLOP count or session block (an older document): the row is left out, not 0
    change = None if old is None or new is None else new - old
    if change is None:
        pct = None
    elif old == 0:
        pct = 0.0 if new == 0 else None
    else:
        pct = 100.0 * change / old
    exceeded = (
        limit is not None and change is not None and change > 0 and (pct is None or pct > limit)
    )
    status = "unavailable" if change is None else ("exceeded" if exceeded else "ok")
    row = {
        "metric": metric.key,
        "label": metric.label,
        "unit": metric.unit,
        "old": old,
        "new": new,
        "change": change,
        "change_percent": None if pct is None else round(pct, 4),
        "limit_percent": limit,
        "status": status,
    }
    if not exceeded or old is None or new is None or change is None:  # exceeded: all three are known
        return row, None
    option = f"--max-increase-{metric.key}"
    grew = "appeared" if pct is None else f"grew {pct:.1f}%"
    message = (
        f"{metric.label} {grew} ({_fmt(metric, old)} → {_fmt(metric, new)}, "
        f"+{_fmt(metric, change)}), over {option} {limit:g}%"
    )
    failure = {
        "metric": metric.key,
        "option": option,
        "limit_percent": limit,
        "old": old,
        "new": new,
        "change": change,
        "change_percent": row["change_percent"],
        "message": message,
    }
    return row, failure


_LAYER_FIELDS = ("params", "weight_bytes", "output_bytes")


def _layer_changes(old: Mapping[str, Layer], new: Mapping[str, Layer]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name in dict.fromkeys([*old, *new]):
        a, b = old.get(name), new.get(name)
        if a is not None and b is not None and a == b:
            continue
        status = "added" if a is None else "removed" if b is None else "changed"
        before = a.to_json() if a else dict.fromkeys(_LAYER_FIELDS, 0)
        after = b.to_json() if b else dict.fromkeys(_LAYER_FIELDS, 0)
        rows.append(
            {
                "name": name,
                "op_type": b.op_type if b is not None else a.op_type if a is not None else "",  # one is set
                "status": status,
                "old": a.to_json() if a else None,
                "new": b.to_json() if b else None,
                "change": {k: after[k] - before[k] for k in _LAYER_FIELDS},
            }
        )
    rows.sort(key=lambda r: (-_weight_of(r["change"]), -abs(r["change"]["params"]), r["name"]))
    return rows


def _weight_of(change: Mapping[str, int]) -> int:
    """How much a layer's change matters: bytes of weights plus bytes of outputs it moved."""
    return abs(change["weight_bytes"]) + abs(change["output_bytes"])


def _op_type_changes(old: Mapping[str, Layer], new: Mapping[str, Layer]) -> list[dict[str, Any]]:
    def totals(layers: Mapping[str, Layer]) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for layer in layers.values():
            t = out.setdefault(layer.op_type, {"count": 0, **dict.fromkeys(_LAYER_FIELDS, 0)})
            t["count"] += 1
            for k in _LAYER_FIELDS:
                t[k] += getattr(layer, k)
        return out

    zero = {"count": 0, **dict.fromkeys(_LAYER_FIELDS, 0)}
    a, b = totals(old), totals(new)
    rows: list[dict[str, Any]] = []
    for op in sorted({*a, *b}):
        before, after = a.get(op, zero), b.get(op, zero)
        if before == after:
            continue
        change = {k: after[k] - before[k] for k in before}
        rows.append({"op_type": op, "old": before, "new": after, "change": change})
    rows.sort(key=lambda r: (-_weight_of(r["change"]), -abs(r["change"]["count"]), r["op_type"]))
    return rows
