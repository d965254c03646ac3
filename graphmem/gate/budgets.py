"""Deployment gates: budgets checked against the ``graphmem peak`` JSON document.

A gate reads only the peak document (``schema_version`` 1), so it works the same on a fresh
analysis, on a document saved by an earlier run, and inside ``graphmem check``:

    budgets = parse_budgets(max_peak="10MiB", max_params="25M")
    result = evaluate(doc, budgets)            # GateResult(passed=..., failures=(...))
    doc = apply_gate(doc, result)              # adds doc["gate"]

Budget conventions: byte budgets take binary or decimal units (``512MiB``, ``1.5GB``; a bare
``K``/``M``/``G`` is binary), count budgets decimal prefixes (``25M``, ``4G``). A budget is
never silently passed: a FLOP budget on a document without FLOPs is an error, and a figure
that is only a lower estimate (tensors of unknown size; for FLOPs, ops without a FLOP rule)
fails unless it already exceeds the budget, in which case it fails as an excess.

Writing a document and reporting failures (``--output``, GitHub Actions annotations) is
:mod:`graphmem.views.output`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from graphmem.errors import FlopsUnavailableError, UsageError
from graphmem.units import parse_bytes, parse_count, short_bytes, short_count

__all__ = [
    "METRICS",
    "Metric",
    "Budgets",
    "Failure",
    "GateResult",
    "parse_budgets",
    "budgets_from_mapping",
    "evaluate",
    "apply_gate",
    "lookup",
    "parse_budget",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Metric:
    """One gated figure: where it lives in the peak document and how it is named and shown."""

    key: str  # "peak": the Budgets field is "max_" + key
    option: str  # "--max-peak"
    label: str  # "activations peak"
    path: tuple[str, ...]  # ("activations", "peak_bytes")
    unit: Literal["bytes", "count"]


def _metric(key: str, label: str, path: str, unit: Literal["bytes", "count"]) -> Metric:
    keys = tuple(path.split("."))
    return Metric(key=key, option=f"--max-{key}", label=label, path=keys, unit=unit)


#: The gated figures, in report order. ``resident`` and ``arena`` are what the session holds (the
#: peak document's ``session`` block): the process's predicted resident growth and the arena held
#: in steady state (the arena never shrinks: its largest figure).
METRICS: tuple[Metric, ...] = (
    _metric("weights", "weights", "weights.bytes", "bytes"),
    _metric("peak", "activations peak", "activations.peak_bytes", "bytes"),
    _metric("total", "total", "total_bytes", "bytes"),
    _metric("resident", "resident (predicted)", "session.resident_bytes", "bytes"),
    _metric("arena", "arena held", "session.arena_steady_bytes", "bytes"),
    _metric("params", "params", "weights.params", "count"),
    _metric("flops", "FLOPs", "flops.total", "count"),
)
#: The session figures a gate can ask for: a document must carry the ``session`` block.
SESSION_METRICS = ("resident", "arena")
#: Approximations every resident figure has (measured constants, glibc's heap between processes):
#: its stated 10% tolerance, not a reason ``--require-exact`` fails it.
INHERENT_RESIDENT = frozenset({"measured_constant", "heap_fragmentation"})
_BY_KEY = {m.key: m for m in METRICS}


@dataclass(frozen=True, slots=True, kw_only=True)
class Budgets:
    """Upper limits; ``None`` means not gated. Bytes for weights/peak/total/resident/arena, counts
    otherwise."""

    max_weights: int | None = None
    max_peak: int | None = None
    max_total: int | None = None
    max_params: int | None = None
    max_flops: int | None = None
    max_resident: int | None = None
    max_arena: int | None = None
    require_exact: bool = False  # --require-exact: an approximate gated figure fails

    def __post_init__(self) -> None:
        if not isinstance(self.require_exact, bool):
            raise UsageError(f"budget require_exact={self.require_exact!r}: expected true or false")
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or f.name == "require_exact":
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise UsageError(f"budget {f.name}={value!r}: expected an integer")
            if value < 0:
                raise UsageError(f"budget {f.name}={value}: a budget cannot be negative")

    @property
    def session(self) -> bool:
        """True when a budget needs the document's ``session`` block."""
        return any(getattr(self, "max_" + k) is not None for k in SESSION_METRICS)

    @property
    def active(self) -> bool:
        """True when at least one budget is set."""
        return self.require_exact or any(getattr(self, "max_" + m.key) is not None for m in METRICS)

    def limit(self, metric: Metric) -> int | None:
        """The limit for ``metric`` (None: not gated)."""
        return getattr(self, "max_" + metric.key)

    def over(self, other: Budgets) -> Budgets:
        """These budgets, with every budget set in ``other`` taking precedence."""
        given = {f.name: getattr(other, f.name) for f in fields(other) if f.name != "require_exact"}
        merged = replace(self, **{k: v for k, v in given.items() if v is not None})
        return replace(merged, require_exact=self.require_exact or other.require_exact)

    def to_json(self) -> dict[str, int | bool]:
        """``{"--max-peak": 10485760, …}`` for the budgets that are set (``--require-exact``: true)."""
        limits: dict[str, int | bool | None] = {m.option: self.limit(m) for m in METRICS}
        if self.require_exact:
            limits["--require-exact"] = True
        return {k: v for k, v in limits.items() if v is not None}


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """One budget a document does not meet.

    ``reason`` is ``"exceeds"`` (``excess`` = actual − limit > 0), ``"unknown"``: the figure
    is a lower estimate within the limit, so fitting cannot be shown (``excess`` is None), or
    ``"approximate"``: with ``--require-exact``, the gated figure is not exact (``limit`` 0,
    ``actual`` the number of approximations, ``excess`` None).
    """

    metric: str
    option: str
    limit: int
    actual: int
    excess: int | None
    reason: Literal["exceeds", "unknown", "approximate"]
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "option": self.option,
            "limit": self.limit,
            "actual": self.actual,
            "excess": self.excess,
            "reason": self.reason,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class GateResult:
    """The outcome of :func:`evaluate`: passed, the failures, and the budgets checked."""

    passed: bool
    failures: tuple[Failure, ...]
    budgets: Budgets

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "budgets": self.budgets.to_json(),
            "failures": [f.to_json() for f in self.failures],
        }


# --- parsing ------------------------------------------------------------------------------


def parse_budget(metric: Metric, text: str | int) -> int:
    """Parse one budget value (CLI string or config integer) for ``metric``; UsageError if bad."""
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise UsageError(f"{metric.option} {text!r}: expected a string such as '512MiB' or an int")
    if isinstance(text, int):
        if text < 0:
            raise UsageError(f"{metric.option} {text}: a budget cannot be negative")
        return text
    if text.strip().startswith("-"):
        raise UsageError(f"{metric.option} '{text}': a budget cannot be negative")
    try:
        return parse_bytes(text) if metric.unit == "bytes" else parse_count(text)
    except UsageError as exc:
        raise UsageError(f"{metric.option} {exc}") from None


def parse_budgets(
    *,
    max_weights: str | None = None,
    max_peak: str | None = None,
    max_total: str | None = None,
    max_params: str | None = None,
    max_flops: str | None = None,
    require_exact: bool = False,
    max_resident: str | None = None,
    max_arena: str | None = None,
) -> Budgets:
    """Budgets from command-line strings (``"512MiB"``, ``"1.5GB"``, ``"25M"``); None = unset.

    Raises :class:`UsageError` (exit 2) naming the option for a malformed or negative value.
    """
    given = dict(
        weights=max_weights, peak=max_peak, total=max_total, params=max_params, flops=max_flops,
        resident=max_resident, arena=max_arena,
    )
    parsed = {k: parse_budget(_BY_KEY[k], v) for k, v in given.items() if v is not None}
    return Budgets(**{"max_" + k: v for k, v in parsed.items()}, require_exact=require_exact)


def budgets_from_mapping(values: Mapping[str, Any], *, where: str = "") -> Budgets:
    """Budgets from config keys ``max-weights`` … ``max-flops`` (strings or integers) and
    ``require-exact`` (a boolean)."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if name == "require-exact":
            if not isinstance(value, bool):
                raise UsageError(f"{where}require-exact = {value!r}: expected true or false")
            out["require_exact"] = value
            continue
        key = name.removeprefix("max-")
        if not name.startswith("max-") or key not in _BY_KEY:
            raise UsageError(f"{where}unknown budget '{name}'")
        try:
            out["max_" + key] = parse_budget(_BY_KEY[key], value)
        except UsageError as exc:
            raise UsageError(f"{where}{exc}") from None
    return Budgets(**out)


# --- evaluation ---------------------------------------------------------------------------


def lookup(doc: Mapping[str, Any], path: Iterable[str]) -> Any:
    """``doc[a][b]…``, or None when any key along the path is missing."""
    node: Any = doc
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def evaluate(doc: Mapping[str, Any], budgets: Budgets) -> GateResult:
    """Check the peak document ``doc`` against ``budgets``.

    Raises :class:`FlopsUnavailableError` when ``--max-flops`` is set and ``doc`` has no
    ``flops.total``, and :class:`UsageError` when another gated figure is missing (not a
    peak document).
    """
    failures = []
    for metric in METRICS:
        limit = budgets.limit(metric)
        if limit is None:
            continue
        actual = lookup(doc, metric.path)
        if actual is None and metric.key == "flops":
            raise FlopsUnavailableError(
                "--max-flops: FLOPs are unavailable for this model (the document has no "
                "flops.total), so the FLOP budget cannot be checked"
            )
        if isinstance(actual, bool) or not isinstance(actual, int):
            where = ".".join(metric.path)
            why = " (a peak document from before the session block, or of a session graphmem does not emulate)" \
                if metric.key in SESSION_METRICS else ""
            raise UsageError(f"{metric.option}: the document has no integer '{where}'{why}")
        failure = _check_one(metric, actual, limit, _unknown_sizes(doc, metric))
        if failure is not None:
            failures.append(failure)
    if budgets.require_exact:
        failure = _check_exact(doc, budgets)
        if failure is not None:
            failures.append(failure)
        failures += _check_session_exact(doc, budgets)
    return GateResult(passed=not failures, failures=tuple(failures), budgets=budgets)


def _check_exact(doc: Mapping[str, Any], budgets: Budgets) -> Failure | None:
    """``--require-exact``: a failure when the activation figures (what every gated byte
    figure but the weights holds; the peak when no budget is set) are not exact (the session
    figures' own approximations: :func:`_check_session_exact`)."""
    gated = [m for m in METRICS if budgets.limit(m) is not None]
    if gated and all(m.key in ("weights", "params", "flops") for m in gated):
        return None  # nothing gated depends on the activations
    exact = lookup(doc, ("activations", "exact"))
    found = list(lookup(doc, ("activations", "approximations")) or ())
    if exact is not False:
        return None
    kinds = sorted({str(x.get("kind")) for x in found if isinstance(x, Mapping)})
    first = next((x for x in found if isinstance(x, Mapping)), {})
    where = f" (first: {first.get('kind')} at '{first.get('node')}': {first.get('detail')})" if first else ""
    message = (
        f"activations peak is not exact: {len(found)} approximations of kind {', '.join(kinds) or 'unknown'}"
        f"{where}; --require-exact"
    )
    return Failure(metric="exact", option="--require-exact", limit=0, actual=len(found), excess=None,
                   reason="approximate", message=message)


def _check_session_exact(doc: Mapping[str, Any], budgets: Budgets) -> list[Failure]:
    """``--require-exact`` on the session figures gated: a failure per figure with an
    approximation (``session.approximations[].figures`` names it), the resident figure's inherent
    ones aside (:data:`INHERENT_RESIDENT`: every resident figure rests on them, within its 10%)."""
    out = []
    for metric in METRICS:
        if metric.key not in SESSION_METRICS or budgets.limit(metric) is None:
            continue
        name = metric.path[-1]
        found = [x for x in lookup(doc, ("session", "approximations")) or () if isinstance(x, Mapping)
                 and name in (x.get("figures") or ()) and x.get("kind") not in INHERENT_RESIDENT]
        if not found:
            continue
        kinds = ", ".join(sorted({str(x.get("kind")) for x in found}))
        first = found[0]
        where = f" at '{first.get('node')}'" if first.get("node") else ""
        message = (f"{metric.label} is not exact: {len(found)} approximations of kind {kinds} (first: "
                   f"{first.get('kind')}{where}: {first.get('detail')}); --require-exact")
        out.append(Failure(metric="exact", option="--require-exact", limit=0, actual=len(found), excess=None,
                           reason="approximate", message=message))
    return out


def _check_one(metric: Metric, actual: int, limit: int, unknown: list[str]) -> Failure | None:
    """The failure of ``actual`` against ``limit``, or None when it provably fits."""
    if actual > limit:
        message = _exceeds_message(metric, actual, limit, lower=bool(unknown))
        return Failure(metric=metric.key, option=metric.option, limit=limit, actual=actual, excess=actual - limit,
                       reason="exceeds", message=message)
    if not unknown:
        return None
    shown = ", ".join(f"'{n}'" for n in unknown[:3]) + (" …" if len(unknown) > 3 else "")
    what = "op types have no FLOP rule" if metric.key == "flops" else "tensors have no static size"
    message = (
        f"{metric.label} is at least {_fmt(metric, actual)} (within {metric.option} "
        f"{_fmt(metric, limit)}), but {len(unknown)} {what} ({shown}): "
        "it cannot be shown to fit"
    )
    return Failure(metric=metric.key, option=metric.option, limit=limit, actual=actual, excess=None,
                   reason="unknown", message=message)


def _unknown_sizes(doc: Mapping[str, Any], metric: Metric) -> list[str]:
    """Names missing from ``metric``'s figure (making it a lower estimate).

    Tensors of unknown size for the byte figures; op types without a FLOP rule for FLOPs.
    """
    acts = list(lookup(doc, ("activations", "unknown")) or ()) + list(
        lookup(doc, ("shapes", "unresolved")) or ()
    )
    weights = list(lookup(doc, ("weights", "unknown")) or ())
    flops = list(lookup(doc, ("flops", "unsupported")) or ())
    names = {"weights": weights, "peak": acts, "total": weights + acts, "flops": flops,
             "resident": weights + acts, "arena": acts}
    return list(dict.fromkeys(names.get(metric.key, [])))


def _exceeds_message(metric: Metric, actual: int, limit: int, *, lower: bool) -> str:
    excess = actual - limit
    pct = f" ({_percent(excess / limit)})" if limit else ""
    at_least = "at least " if lower else ""
    return (
        f"{metric.label} {at_least}{_fmt(metric, actual)} exceeds {metric.option} "
        f"{_fmt(metric, limit)} by {_fmt(metric, excess)}{pct}"
    )


def _fmt(metric: Metric, n: int) -> str:
    return short_bytes(n) if metric.unit == "bytes" else short_count(n)


def _percent(ratio: float) -> str:
    pct = ratio * 100
    return f"{pct:.0f}%" if abs(pct) >= 10 else f"{pct:.1f}%".replace(".0%", "%")


def apply_gate(doc: Mapping[str, Any], result: GateResult) -> dict[str, Any]:
    """A copy of ``doc`` with ``gate.passed``, ``gate.budgets`` and ``gate.failures`` added.

    ``doc`` itself is not modified.
    """
    return {**doc, "gate": result.to_json()}
