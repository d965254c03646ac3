"""Output formats of the gating commands: ``--format table|json|markdown|csv``.

Every renderer takes a JSON document (peak, check or diff; ``schema_version`` 1) and returns
text, so what the table, the markdown and the CSV show is exactly what the JSON holds:

* **table** — aligned text for a terminal (binary units, three significant digits);
* **json** — the document, indented; exact integers;
* **markdown** — GitHub-flavoured, for a pull-request comment (✅/❌ marks, details blocks);
* **csv** — one row per model (peak, check) or per changed figure (diff), exact integers.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from graphmem.errors import UsageError
from graphmem.gate import METRICS, lookup, short_bytes, short_count

__all__ = [
    "FORMATS",
    "check_format",
    "resolve_format",
    "render_peak",
    "render_check",
    "render_diff",
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
    return json.dumps(doc, indent=2, ensure_ascii=False)


# --- shared helpers -----------------------------------------------------------------------


def _fmt(unit: str, n: int | None) -> str:
    if n is None:
        return "—"
    return short_bytes(n) if unit == "bytes" else short_count(n)


def _signed(unit: str, n: int | None) -> str:
    if n is None:
        return "—"
    return ("+" if n > 0 else "") + _fmt(unit, n) if n else "0"


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
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
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


def render_peak(doc: Mapping[str, Any], fmt: str, *, table: str = "") -> str:
    """Render a peak document; ``table`` is the text of :func:`graphmem.report.peak_table`."""
    check_format(fmt)
    if fmt == "json":
        return to_json(doc)
    if fmt == "csv":
        return _csv(["path", *_PEAK_COLUMNS], [[lookup(doc, ("model", "path")), *_peak_cells(doc)]])
    if fmt == "markdown":
        return "\n".join(_peak_markdown(doc))
    return "\n".join([table.rstrip("\n"), *_gate_lines(doc)])


def _gate_lines(doc: Mapping[str, Any]) -> list[str]:
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
        limit = gate["budgets"][m.option]
        if m.option in failed:
            lines.append(f"    FAIL  {failed[m.option]['message']}")
        else:
            actual = lookup(doc, m.path)
            lines.append(f"    ok    {m.label} {_fmt(m.unit, actual)} within {m.option} {_fmt(m.unit, limit)}")
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
    lines = [
        f"### graphmem peak: `{model['path']}`",
        "",
        f"opset {model['opset']} · {model['nodes']} nodes · dims: {dims}",
        "",
        *_md(["", "size", "bytes", "note"], [(a, short_bytes(b), f"{b:,}", c) for a, b, c in rows], {1, 2}),
    ]
    flops = lookup(doc, ("flops", "total"))
    if flops is not None:
        lines += ["", f"FLOPs: {short_count(flops)} ({flops:,})"]
    unresolved = lookup(doc, ("shapes", "unresolved")) or []
    if unresolved:
        lines += ["", f"⚠️ {len(unresolved)} tensors have no static size: the figures are lower estimates."]
    lines += _gate_markdown(doc.get("gate"))
    return lines


def _gate_markdown(gate: Mapping[str, Any] | None) -> list[str]:
    if not gate:
        return []
    if gate["passed"]:
        return ["", f"**Gate: ✅ passed** ({len(gate.get('budgets', gate.get('thresholds', {})))} limits)"]
    return ["", "**Gate: ❌ failed**", "", *[f"- ❌ {f['message']}" for f in gate["failures"]]]


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

_STATUS_MARK = {"pass": "✅", "fail": "❌", "error": "⚠️"}


def render_check(doc: Mapping[str, Any], fmt: str) -> str:
    """Render the ``graphmem check`` summary document."""
    check_format(fmt)
    if fmt == "json":
        return to_json(doc)
    entries = doc["models"]
    if fmt == "csv":
        rows = [[e["name"], e["path"], e["status"], e["error"], *_peak_cells(e["report"])] for e in entries]
        return _csv(["name", "path", "status", "error", *_PEAK_COLUMNS], rows)
    header = ["model", "dims", "weights", "peak", "total", "params", "FLOPs", "status"]
    rows = [_check_row(e) for e in entries]
    s = doc["summary"]
    tally = f"{s['models']} models: {s['passed']} passed, {s['failed']} failed, {s['errors']} errors"
    problems = [
        (e["name"], e["error"] or f["message"], e["status"])
        for e in entries
        if e["status"] != "pass"
        for f in (e["report"]["gate"]["failures"] if e["status"] == "fail" else [{"message": ""}])
    ]
    if fmt == "markdown":
        mark = "✅ passed" if doc["passed"] else "❌ failed"
        rows = [[f"`{r[0]}`", *r[1:-1], f"{_STATUS_MARK[e['status']]} {r[-1]}"] for r, e in zip(rows, entries)]
        lines = [f"### graphmem check: {mark}", "", *_md(header, rows, {2, 3, 4, 5, 6}), "", tally]
        if problems:
            lines += ["", *[f"- {_STATUS_MARK[st]} `{name}`: {msg}" for name, msg, st in problems]]
        return "\n".join(lines)
    lines = [f"graphmem check: {doc['config']}", "", *_grid(header, rows, {2, 3, 4, 5, 6}), ""]
    lines += [f"  {st.upper():<5} {name}: {msg}" for name, msg, st in problems]
    lines += ([""] if problems else []) + [f"  {tally}"]
    return "\n".join(lines)


def _check_row(entry: Mapping[str, Any]) -> list[str]:
    report = entry["report"]
    status = {"pass": "ok", "fail": "FAIL", "error": "ERROR"}[entry["status"]]
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

def render_diff(doc: Mapping[str, Any], fmt: str, *, top: int | None = None) -> str:
    """Render the ``graphmem diff`` document (``top``: layers shown in table/markdown)."""
    check_format(fmt)
    if fmt == "json":
        return to_json(doc)
    if fmt == "csv":
        return _diff_csv(doc)
    layers = doc["layers"] if top is None else doc["layers"][:top]
    header = ["metric", "old", "new", "change", "%", "limit", "status"]
    rows = [
        [
            r["label"],
            _fmt(r["unit"], r["old"]),
            _fmt(r["unit"], r["new"]),
            _signed(r["unit"], r["change"]),
            _pct(r["change_percent"], r["change"]),
            "" if r["limit_percent"] is None else f"{r['limit_percent']:g}%",
            {"ok": "ok", "exceeded": "FAIL", "unavailable": "n/a"}[r["status"]],
        ]
        for r in doc["metrics"]
    ]
    old_path, new_path = doc["old"]["model"]["path"], doc["new"]["model"]["path"]
    old_node, new_node = doc["old"]["activations"]["peak_node"], doc["new"]["activations"]["peak_node"]
    op_rows = [_change_row(r["op_type"], r, count=True) for r in doc["op_types"]]
    layer_rows = [[r["name"], r["op_type"], r["status"], *_change_row("", r)[1:]] for r in layers]
    shown = f"top {len(layers)} of {doc['layers_changed']}"
    if fmt == "markdown":
        mark = "✅ within limits" if doc["gate"]["passed"] else "❌ over the limits"
        lines = [f"### graphmem diff: {mark}", "", f"`{old_path}` → `{new_path}` · dims: {_dims(doc['new']) or 'none'}", ""]
        lines += _md(header, [[f"**{r[0]}**" if r[-1] == "FAIL" else r[0], *r[1:]] for r in rows], {1, 2, 3, 4, 5})
        lines += ["", f"Activation peak at `{old_node}` → `{new_node}`."]
        lines += _gate_markdown(doc["gate"]) if not doc["gate"]["passed"] else []
        if op_rows:
            lines += ["", "<details><summary>Op types that changed</summary>", ""]
            lines += _md(["op type", "count", "params", "weights", "outputs"], op_rows, {1, 2, 3, 4})
            lines += ["", "</details>"]
        if layer_rows:
            lines += ["", f"<details><summary>Layers that changed ({shown})</summary>", ""]
            hdr = ["layer", "op", "", "params", "weights", "outputs"]
            lines += _md(hdr, [[f"`{r[0]}`", *r[1:]] for r in layer_rows], {3, 4, 5})
            lines += ["", "</details>"]
        return "\n".join(lines)
    lines = [f"graphmem diff: {old_path} → {new_path}", f"  dims: {_dims(doc['new']) or 'none'}", ""]
    lines += _grid(header, rows, {1, 2, 3, 4, 5})
    lines += ["", f"  activations peak at node '{old_node}' → '{new_node}'"]
    if op_rows:
        lines += ["", "  op types that changed:"]
        lines += _grid(["op type", "count", "params", "weights", "outputs"], op_rows, {1, 2, 3, 4})
    if layer_rows:
        lines += ["", f"  layers that changed ({shown}):"]
        lines += _grid(["layer", "op", "", "params", "weights", "outputs"], layer_rows, {3, 4, 5})
    if not op_rows and not layer_rows:
        lines += ["", "  no op type or layer changed"]
    for f in doc["gate"]["failures"]:
        lines += [f"  FAIL  {f['message']}"]
    return "\n".join(lines)


def _change_row(name: str, r: Mapping[str, Any], *, count: bool = False) -> list[str]:
    c = r["change"]
    cells = [name]
    if count:
        cells.append(f"{r['old']['count']} → {r['new']['count']}")
    cells += [_signed("count", c["params"]), _signed("bytes", c["weight_bytes"]), _signed("bytes", c["output_bytes"])]
    return cells


def _diff_csv(doc: Mapping[str, Any]) -> str:
    header = ["section", "name", "op_type", "status", "old", "new", "change", "change_percent",
              "limit_percent", "params_change", "weight_bytes_change", "output_bytes_change"]
    rows: list[list[Any]] = []
    for r in doc["metrics"]:
        rows.append(["metric", r["metric"], "", r["status"], r["old"], r["new"], r["change"],
                     r["change_percent"], r["limit_percent"], "", "", ""])
    for r in doc["op_types"]:
        c = r["change"]
        rows.append(["op_type", r["op_type"], r["op_type"], "changed", r["old"]["count"], r["new"]["count"],
                     c["count"], "", "", c["params"], c["weight_bytes"], c["output_bytes"]])
    for r in doc["layers"]:
        c = r["change"]
        rows.append(["layer", r["name"], r["op_type"], r["status"], "", "", "", "", "",
                     c["params"], c["weight_bytes"], c["output_bytes"]])
    return _csv(header, rows)

