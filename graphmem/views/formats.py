"""Output formats of the gating commands: ``--format table|json|markdown|csv``.

Every renderer takes a JSON document (peak, check, diff or layers; ``schema_version`` 1) and
returns text, so what the table, the markdown and the CSV show is exactly what the JSON holds:

* **table** — aligned text for a terminal (binary units, three significant digits);
* **json** — the document, indented; exact integers;
* **markdown** — GitHub-flavoured, for a pull-request comment (✅/❌ marks, details blocks);
* **csv** — one row per model (peak, check), per changed figure (diff) or per layer (layers),
  exact integers.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphmem.errors import UsageError
from graphmem.gate.budgets import METRICS, lookup
from graphmem.units import short_bytes, short_count

__all__ = [
    "FORMATS",
    "check_format",
    "resolve_format",
    "render_peak",
    "render_check",
    "render_diff",
    "render_layers",
    "to_json",
]

FORMATS = ("table", "json", "markdown", "csv")


def check_format(fmt: str) -> str:
    """Return ``fmt`` if it is one of :data:`FORMATS`; raise UsageError otherwise."""
    if fmt not in FORMATS:
        raise UsageError(f"--format '{fmt}': choose one of {', '.join(FORMATS)}")
    return fmt


def resolve_format(fmt: str, *, as_json: bool) -> str:
    """Combine ``--json`` (a shorthand) with ``--format``; conflicting values are an error."""
    check_format(fmt)
    if as_json and fmt not in ("table", "json"):
        raise UsageError(f"--json conflicts with --format {fmt}")
    return "json" if as_json else fmt


def to_json(doc: Mapping[str, Any]) -> str:
    """The document as ``graphmem peak --json`` prints it (indent 2)."""
    return json.dumps(doc, indent=2)


# --- shared helpers -----------------------------------------------------------------------


def _fmt(unit: str, n: int | None) -> str:
    if n is None:
        return "—"
    return short_bytes(n) if unit == "bytes" else short_count(n)


def _signed(unit: str, n: int | None) -> str:
    if n is None:
        return "—"
    if n == 0:
        return "0"
    return ("+" if n > 0 else "") + _fmt(unit, n)


def _pct(pct: float | None, change: int | None) -> str:
    if change is None:
        return "—"
    if pct is None:
        return "new"
    return "0%" if pct == 0 else f"{pct:+.1f}%"


def _dims(doc: Mapping[str, Any]) -> str:
    dims = lookup(doc, ("model", "dims")) or {}
    return ",".join(f"{k}={v}" for k, v in dims.items())


def _grid(header: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    """Aligned text columns (indices in ``right`` right-aligned), indented by two spaces."""
    table = [list(header), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = []
    for r in table:
        cells = [c.rjust(w) if i in right else c.ljust(w)
                 for i, (c, w) in enumerate(zip(r, widths))]
        lines.append(("  " + "  ".join(cells)).rstrip())
    return lines


def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md(header: Sequence[str], rows: Sequence[Sequence[Any]], right: set[int]) -> list[str]:
    align = ["---:" if i in right else "---" for i in range(len(header))]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
    return out


def _csv(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(["" if c is None else c for c in r] for r in rows)
    return buf.getvalue()


# --- peak ---------------------------------------------------------------------------------

_PEAK_COLUMNS = (
    "dims",
    "weights_bytes",
    "params",
    "peak_bytes",
    "peak_node",
    "total_bytes",
    "inputs_bytes",
    "outputs_bytes",
    "flops",
    "unresolved",
    "gate",
    "failures",
)


def render_peak(doc: Mapping[str, Any], fmt: str, *, table: str = "") -> str:
    """Render a peak document; ``table`` is the text of :func:`graphmem.views.report.peak_table`."""
    check_format(fmt)
    if fmt == "json":
        return to_json(doc)
    if fmt == "csv":
        row = [lookup(doc, ("model", "path")), *_peak_cells(doc)]
        return _csv(["path", *_PEAK_COLUMNS], [row])
    if fmt == "markdown":
        return "\n".join(_peak_markdown(doc))
    return "\n".join([table.rstrip("\n"), *_gate_lines(doc)])


def _gate_lines(doc: Mapping[str, Any]) -> list[str]:
    """The budget lines under the peak table: one per budget, ok or FAIL."""
    gate = doc.get("gate")
    if not gate:
        return []
    failed = {f["option"]: f for f in gate["failures"]}
    n = len(gate["budgets"])
    head = "passed" if gate["passed"] else f"FAILED, {len(failed)} of {n} budgets not met"
    lines = ["", f"  gate: {head}"]
    for m in METRICS:
        if m.option not in gate["budgets"]:
            continue
        if m.option in failed:
            lines.append(f"    FAIL  {failed[m.option]['message']}")
            continue
        actual, limit = _fmt(m.unit, lookup(doc, m.path)), _fmt(m.unit, gate["budgets"][m.option])
        lines.append(f"    ok    {m.label} {actual} within {m.option} {limit}")
    return lines


def _peak_markdown(doc: Mapping[str, Any]) -> list[str]:
    model, w, act, io_ = doc["model"], doc["weights"], doc["activations"], doc["io"]
    dims = ", ".join(f"{k}={v}" for k, v in model["dims"].items()) or "none"
    rows = [
        ("weights", w["bytes"], f"{short_count(w['params'])} params"),
        ("**activations peak**", act["peak_bytes"], f"at `{act['peak_node']}` ({act['runtime']})"),
        ("lower bound", act["lower_bound_bytes"], "must be live at one step"),
        ("best arena", act["best_arena_bytes"], "greedy offset planner"),
        ("no reuse", act["no_reuse_bytes"], "every output in its own buffer"),
        ("inputs", io_["inputs_bytes"], ""),
        ("outputs", io_["outputs_bytes"], "included in the activations peak"),
        ("**total**", doc["total_bytes"], "weights + activations peak + inputs"),
    ]
    cells = [(label, short_bytes(n), f"{n:,}", note) for label, n, note in rows]
    lines = [
        f"### graphmem peak: `{model['path']}`",
        "",
        f"opset {model['opset']} · {model['nodes']} nodes · dims: {dims}",
        "",
        *_md(["", "size", "bytes", "note"], cells, {1, 2}),
    ]
    flops = lookup(doc, ("flops", "total"))
    if flops is not None:
        lines += ["", f"FLOPs: {short_count(flops)} ({flops:,})"]
    unresolved = lookup(doc, ("shapes", "unresolved")) or []
    if unresolved:
        note = f"⚠️ {len(unresolved)} tensors have no static size: these are lower estimates."
        lines += ["", note]
    return lines + _gate_markdown(doc.get("gate"), "budgets")


def _gate_markdown(gate: Mapping[str, Any] | None, limits: str) -> list[str]:
    if not gate:
        return []
    if gate["passed"]:
        return ["", f"**Gate: ✅ passed** ({len(gate[limits])} limits)"]
    return ["", "**Gate: ❌ failed**", "", *[f"- ❌ {f['message']}" for f in gate["failures"]]]


def _peak_cells(doc: Mapping[str, Any] | None) -> list[Any]:
    if doc is None:
        return [None] * len(_PEAK_COLUMNS)
    gate = doc.get("gate")
    return [
        _dims(doc),
        lookup(doc, ("weights", "bytes")),
        lookup(doc, ("weights", "params")),
        lookup(doc, ("activations", "peak_bytes")),
        lookup(doc, ("activations", "peak_node")),
        lookup(doc, ("total_bytes",)),
        lookup(doc, ("io", "inputs_bytes")),
        lookup(doc, ("io", "outputs_bytes")),
        lookup(doc, ("flops", "total")),
        len(lookup(doc, ("shapes", "unresolved")) or ()),
        "" if not gate else ("pass" if gate["passed"] else "fail"),
        "; ".join(f["message"] for f in gate["failures"]) if gate else "",
    ]


# --- check --------------------------------------------------------------------------------

_MARK = {"pass": "✅", "fail": "❌", "error": "⚠️"}
_STATUS = {"pass": "ok", "fail": "FAIL", "error": "ERROR"}
_CHECK_HEADER = ["model", "dims", "weights", "peak", "total", "params", "FLOPs", "status"]
_CHECK_RIGHT = {2, 3, 4, 5, 6}


def render_check(doc: Mapping[str, Any], fmt: str) -> str:
    """Render the ``graphmem check`` summary document."""
    check_format(fmt)
    if fmt == "json":
        return to_json(doc)
    entries = doc["models"]
    if fmt == "csv":
        rows = [[e["name"], e["path"], e["status"], e["error"], *_peak_cells(e["report"])]
                for e in entries]
        return _csv(["name", "path", "status", "error", *_PEAK_COLUMNS], rows)
    s = doc["summary"]
    tally = (
        f"{s['models']} models: {s['passed']} passed, {s['failed']} failed, {s['errors']} errors"
    )
    problems = [(e["name"], e["status"], msg) for e in entries for msg in _problems(e)]
    if fmt == "markdown":
        rows = [
            [f"`{e['name']}`", *_check_row(e)[1:-1], f"{_MARK[e['status']]} {_STATUS[e['status']]}"]
            for e in entries
        ]
        mark = "✅ passed" if doc["passed"] else "❌ failed"
        lines = [f"### graphmem check: {mark}", "", *_md(_CHECK_HEADER, rows, _CHECK_RIGHT)]
        lines += ["", tally]
        if problems:
            lines += ["", *[f"- {_MARK[st]} `{name}`: {msg}" for name, st, msg in problems]]
        return "\n".join(lines)
    rows = [_check_row(e) for e in entries]
    lines = [f"graphmem check: {doc['config']}", "", *_grid(_CHECK_HEADER, rows, _CHECK_RIGHT), ""]
    lines += [f"  {_STATUS[st]:<5} {name}: {msg}" for name, st, msg in problems]
    return "\n".join(lines + ([""] if problems else []) + [f"  {tally}"])


def _problems(entry: Mapping[str, Any]) -> list[str]:
    if entry["status"] == "error":
        return [entry["error"]]
    gate = (entry["report"] or {}).get("gate") or {"failures": []}
    return [f["message"] for f in gate["failures"]]


def _check_row(entry: Mapping[str, Any]) -> list[str]:
    report = entry["report"]
    status = _STATUS[entry["status"]]
    if report is None:
        dims = ",".join(f"{k}={v}" for k, v in entry["dims"].items())
        return [entry["name"], dims, "—", "—", "—", "—", "—", status]
    return [
        entry["name"],
        _dims(report),
        short_bytes(report["weights"]["bytes"]),
        short_bytes(report["activations"]["peak_bytes"]),
        short_bytes(report["total_bytes"]),
        short_count(report["weights"]["params"]),
        _fmt("count", lookup(report, ("flops", "total"))),
        status,
    ]


# --- diff ---------------------------------------------------------------------------------

_DIFF_STATUS = {"ok": "ok", "exceeded": "FAIL", "unavailable": "n/a"}
_DIFF_HEADER = ["metric", "old", "new", "change", "%", "limit", "status"]
_OPS_HEADER = ["op type", "count", "params", "weights", "outputs"]
_LAYERS_HEADER = ["layer", "op", "", "params", "weights", "outputs"]


def render_diff(doc: Mapping[str, Any], fmt: str, *, top: int | None = None) -> str:
    """Render the ``graphmem diff`` document (``top``: layers shown in table/markdown)."""
    check_format(fmt)
    if fmt == "json":
        return to_json(doc)
    if fmt == "csv":
        return _diff_csv(doc)
    layers = doc["layers"] if top is None else doc["layers"][:top]
    parts = _DiffParts(
        metrics=[_metric_row(r) for r in doc["metrics"]],
        ops=[_change_row(r["op_type"], r, count=True) for r in doc["op_types"]],
        layers=[[r["name"], r["op_type"], r["status"], *_change_row("", r)[1:]] for r in layers],
        shown=f"top {len(layers)} of {doc['layers_changed']}",
        paths=(doc["old"]["model"]["path"], doc["new"]["model"]["path"]),
        nodes=(doc["old"]["activations"]["peak_node"], doc["new"]["activations"]["peak_node"]),
        dims=_dims(doc["new"]) or "none",
    )
    if fmt == "markdown":
        return "\n".join(_diff_markdown(doc, parts))
    return "\n".join(_diff_table(doc, parts))


@dataclass(frozen=True, slots=True, kw_only=True)
class _DiffParts:
    """The cells both the text table and the markdown show."""

    metrics: list[list[str]]
    ops: list[list[str]]
    layers: list[list[str]]
    shown: str
    paths: tuple[str, str]
    nodes: tuple[str, str]
    dims: str


def _metric_row(r: Mapping[str, Any]) -> list[str]:
    return [
        r["label"],
        _fmt(r["unit"], r["old"]),
        _fmt(r["unit"], r["new"]),
        _signed(r["unit"], r["change"]),
        _pct(r["change_percent"], r["change"]),
        "" if r["limit_percent"] is None else f"{r['limit_percent']:g}%",
        "" if r["limit_percent"] is None and r["status"] == "ok" else _DIFF_STATUS[r["status"]],
    ]


def _exactness(side: Mapping[str, Any]) -> str:
    """:func:`graphmem.gate.diff.exactness`, imported when a diff is rendered (not by ``peak``)."""
    from graphmem.gate.diff import exactness

    return exactness(side)


def _diff_table(doc: Mapping[str, Any], p: _DiffParts) -> list[str]:
    lines = [f"graphmem diff: {p.paths[0]} → {p.paths[1]}", f"  dims: {p.dims}", ""]
    lines += _grid(_DIFF_HEADER, p.metrics, {1, 2, 3, 4, 5})
    lines += ["", f"  activations peak at node '{p.nodes[0]}' → '{p.nodes[1]}'"]
    lines += [f"  {side}: {_exactness(doc[side])}" for side in ("old", "new")]
    if p.ops:
        lines += ["", "  op types that changed:", *_grid(_OPS_HEADER, p.ops, {1, 2, 3, 4})]
    if p.layers:
        lines += ["", f"  layers that changed ({p.shown}):"]
        lines += _grid(_LAYERS_HEADER, p.layers, {3, 4, 5})
    if not p.ops and not p.layers:
        lines += ["", "  no op type or layer changed"]
    failures = [f"  FAIL  {f['message']}" for f in doc["gate"]["failures"]]
    return lines + ([""] + failures if failures else [])


def _diff_markdown(doc: Mapping[str, Any], p: _DiffParts) -> list[str]:
    mark = "✅ within limits" if doc["gate"]["passed"] else "❌ over the limits"
    metrics = [[f"**{r[0]}**" if r[-1] == "FAIL" else r[0], *r[1:]] for r in p.metrics]
    lines = [f"### graphmem diff: {mark}", ""]
    lines += [f"`{p.paths[0]}` → `{p.paths[1]}` · dims: {p.dims}"]
    lines += ["", *_md(_DIFF_HEADER, metrics, {1, 2, 3, 4, 5})]
    lines += ["", f"Activation peak at `{p.nodes[0]}` → `{p.nodes[1]}`."]
    lines += ["", *(f"- {side}: {_exactness(doc[side])}" for side in ("old", "new"))]
    if not doc["gate"]["passed"]:
        lines += _gate_markdown(doc["gate"], "thresholds")
    if p.ops:
        lines += ["", "<details><summary>Op types that changed</summary>", ""]
        lines += [*_md(_OPS_HEADER, p.ops, {1, 2, 3, 4}), "", "</details>"]
    if p.layers:
        rows = [[f"`{r[0]}`", *r[1:]] for r in p.layers]
        lines += ["", f"<details><summary>Layers that changed ({p.shown})</summary>", ""]
        lines += [*_md(_LAYERS_HEADER, rows, {3, 4, 5}), "", "</details>"]
    return lines


def _change_row(name: str, r: Mapping[str, Any], *, count: bool = False) -> list[str]:
    c = r["change"]
    cells = [name]
    if count:
        cells.append(f"{r['old']['count']} → {r['new']['count']}")
    cells.append(_signed("count", c["params"]))
    cells.append(_signed("bytes", c["weight_bytes"]))
    cells.append(_signed("bytes", c["output_bytes"]))
    return cells


_DIFF_CSV = (
    "section", "name", "op_type", "status", "old", "new", "change", "change_percent",
    "limit_percent", "params_change", "weight_bytes_change", "output_bytes_change",
)


def _diff_csv(doc: Mapping[str, Any]) -> str:
    """One row per figure (``metric``), per changed op type and per listed layer."""
    rows: list[list[Any]] = []
    for r in doc["metrics"]:
        figures = [r["old"], r["new"], r["change"], r["change_percent"], r["limit_percent"]]
        rows.append(["metric", r["metric"], "", r["status"], *figures, "", "", ""])
    for side in ("old", "new"):  # status: exact, or why not
        rows.append(["exact", side, "", _exactness(doc[side]), "", "", "", "", "", "", "", ""])
    for r in doc["op_types"]:
        c = r["change"]
        counts = [r["old"]["count"], r["new"]["count"], c["count"], "", ""]
        rows.append(["op_type", r["op_type"], r["op_type"], "changed", *counts,
                     c["params"], c["weight_bytes"], c["output_bytes"]])
    for r in doc["layers"]:
        c = r["change"]
        rows.append(["layer", r["name"], r["op_type"], r["status"], "", "", "", "", "",
                     c["params"], c["weight_bytes"], c["output_bytes"]])
    return _csv(_DIFF_CSV, rows)


# --- layers -------------------------------------------------------------------------------

_LAYERS_CSV = (
    "name", "op_type", "output_shape", "params", "flops", "macs", "flop_share", "output_bytes",
    "live_at_peak", "unsupported", "nodes",
)
_LAYERS_MD_HEADER = ["layer", "op", "output shape", "params", "FLOPs", "share", "output", "peak"]
_LAYERS_MD_OPEN = 25  # more rows than this: the markdown table goes into a <details> block


def render_layers(doc: Mapping[str, Any], fmt: str) -> str:
    """Render the ``graphmem layers`` document (rows as the document holds them)."""
    check_format(fmt)
    if fmt == "json":
        return to_json(doc)
    if fmt == "csv":
        rows = [
            [r["name"], r["op_type"], _shape(r["output_shape"], csv=True), r["params"], r["flops"],
             r["macs"], r["flop_share"], r["output_bytes"], str(r["live_at_peak"]).lower(),
             r["unsupported"], r["nodes"]]
            for r in doc["layers"]
        ]
        return _csv(_LAYERS_CSV, rows)
    if fmt == "markdown":
        return "\n".join(_layers_markdown(doc))
    return "\n".join(_layers_table(doc))


def _shape(shape: Sequence[Any] | None, *, csv: bool = False) -> str:
    """``1x16x64x64``; a dim of unknown size ``?``; an unknown shape ``?`` (csv: empty)."""
    if shape is None:
        return "" if csv else "?"
    if not shape:
        return "scalar"
    return "x".join("?" if d is None else str(d) for d in shape)


def rows_line(doc: Mapping[str, Any]) -> str:
    """Which rows a cut ``layers`` table shows ('' when it shows them all): the first N in graph
    order, or the N largest by the --sort key."""
    rows = doc.get("rows")
    if not rows or rows["shown"] >= rows["of"]:
        return ""
    if rows["sort"] == "order":
        return (f"first {rows['shown']} of {rows['of']} layers, in graph order (the order onnxruntime runs them; "
                "--sort flops|params|memory for the largest)")
    return f"top {rows['shown']} of {rows['of']} layers by {rows['sort']}"


def _layers_table(doc: Mapping[str, Any]) -> list[str]:
    """The aligned text table ``graphmem layers`` prints (three significant digits)."""
    from graphmem.units import format_bytes, format_count

    totals, act = doc["totals"], doc["activations"]
    lines = [rows_line(doc)] if rows_line(doc) else []
    lines += [
        f"{'layer':<44} {'op':<18} {'output shape':<20} {'params':>10} {'FLOPs':>10} "
        f"{'share':>6} {'output':>11} peak"
    ]
    for r in doc["layers"]:
        shape = _shape(r["output_shape"])
        unsup = f" +{r['unsupported']} unsupported" if r["unsupported"] else ""
        lines.append(
            f"{r['name'][-44:]:<44} {r['op_type'][:18]:<18} {shape[:20]:<20} "
            f"{format_count(r['params']):>10} {format_count(r['flops']):>10} "
            f"{r['flop_share']:>6.1%} {format_bytes(r['output_bytes']):>11} "
            f"{'*' if r['live_at_peak'] else ''}{unsup}"
        )
    lines.append(
        f"{'total':<44} {'':<18} {'':<20} {format_count(totals['params']):>10} "
        f"{format_count(totals['flops']):>10} {'100%':>6} {'':>11} peak "
        f"{format_bytes(act['peak_bytes'])} at '{act['peak_node']}'"
    )
    return lines


def _layers_markdown(doc: Mapping[str, Any]) -> list[str]:
    """GitHub-flavoured markdown for a pull-request comment; long tables fold into <details>."""
    model, totals, act, layers = doc["model"], doc["totals"], doc["activations"], doc["layers"]
    dims = ", ".join(f"{k}={v}" for k, v in model["dims"].items()) or "none"
    peak = f"{short_bytes(act['peak_bytes'])} at `{act['peak_node']}`"
    rows = [
        [f"`{r['name']}`", r["op_type"], _shape(r["output_shape"]), short_count(r["params"]),
         short_count(r["flops"]) + (f" (+{r['unsupported']} unsupported)" if r["unsupported"] else ""),
         f"{r['flop_share']:.1%}", short_bytes(r["output_bytes"]), "●" if r["live_at_peak"] else ""]
        for r in layers
    ]
    rows.append(["**total**", "", "", short_count(totals["params"]), short_count(totals["flops"]),
                 "100%", "", ""])
    table = _md(_LAYERS_MD_HEADER, rows, {3, 4, 5, 6})
    n = len(layers)
    lines = [
        f"### graphmem layers: `{model['path']}`",
        "",
        f"dims: {dims} · {n} layer{'s' if n != 1 else ''} · {short_count(totals['params'])} params "
        f"· {short_count(totals['flops'])} FLOPs ({short_count(totals['macs'])} MACs) "
        f"· activations peak {peak}",
        "",
        *([rows_line(doc), ""] if rows_line(doc) else []),
    ]
    if n > _LAYERS_MD_OPEN:
        lines += [f"<details><summary>{n} layers</summary>", "", *table, "", "</details>"]
    else:
        lines += table
    lines += ["", "● an output of the layer is held at the activation peak."]
    unsupported = sum(r["unsupported"] for r in layers)
    if unsupported:
        lines += ["", f"⚠️ {unsupported} nodes have no FLOP rule: the FLOPs are a lower bound."]
    return lines
