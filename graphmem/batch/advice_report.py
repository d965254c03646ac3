"""The ``graphmem advise`` table and JSON document, and its table in the HTML report
(:class:`graphmem.batch.advise.Advice`). Tables use binary units and name them; JSON figures are
exact integers; a saving is positive when the setting holds less than the current options.
"""

from __future__ import annotations

import html
from typing import Any

from graphmem.batch.advise import Advice, AdviceLine
from graphmem.units import format_bytes
from graphmem.views.session import session_json

__all__ = ["advice_json", "advice_table", "advice_html", "RANKING"]

#: How the lines are ordered (the document states it).
RANKING = "resident_saving_bytes descending, then arena_saving_bytes descending"


def advice_json(a: Advice) -> dict[str, Any]:
    """The ``graphmem advise --json`` document (schema_version 1, ``advise.schema.json``)."""
    return {
        "schema_version": 1,
        "model": {"path": a.path},
        "dims": dict(a.dims),
        "provider": "cpu",
        "graph_opt": a.graph_opt,
        "session_options": list(a.pairs),
        "current": {"session": session_json(a.current), "verify_command": a.current_command},
        "ranking": RANKING,
        "advice": [_line_json(k, x) for k, x in enumerate(a.lines, 1)],
        "skipped": [{"setting": s.setting, "value": s.value, "reason": s.reason} for s in a.skipped],
        "host": a.host.to_dict(),
    }


def _line_json(rank: int, x: AdviceLine) -> dict[str, Any]:
    f = x.figures
    return {
        "rank": rank,
        "setting": x.setting,
        "value": x.value,
        "change": x.change,
        "graph_opt": x.graph_opt,
        "session_options": list(x.pairs),
        "arena_steady_bytes": f.arena_steady_bytes,
        "resident_bytes": f.resident_bytes,
        "arena_saving_bytes": x.arena_saving_bytes,
        "resident_saving_bytes": x.resident_saving_bytes,
        "speed": {"cost": x.speed, "source": x.speed_source},
        "verify_command": x.command,
        "session": session_json(f),
    }


def _saving(n: int | None) -> str:
    if n is None:
        return "n/a"
    if n == 0:
        return "0"
    return ("-" if n > 0 else "+") + format_bytes(abs(n))


def _held(x: Any) -> str:
    return format_bytes(x.arena_steady_bytes) if x.options.enable_cpu_mem_arena else "no arena"


def _exact_mark(f: Any) -> str:
    """'' when the arena figure is exact, '~' when an approximation concerns it."""
    return "" if f.exact_figure("arena_steady_bytes") else "~"


#: Reasons every resident figure carries (measured constants, glibc's heap): the 10% tolerance covers them.
_ALWAYS = frozenset({"measured_constant", "heap_fragmentation"})


def _resident_mark(f: Any) -> str:
    """'~' when the resident figure rests on more than the measured constants and the heap's
    two cases (e.g. no arena: the runs are not replayed through the C heap)."""
    return "~" if any("resident_bytes" in x.figures and x.kind not in _ALWAYS for x in f.approximations) else ""


def advice_table(a: Advice) -> str:
    """The ``graphmem advise`` table: the current figures, then one block per setting, ranked."""
    c = a.current
    dims = ", ".join(f"{k}={v}" for k, v in a.dims.items()) or "static shapes"
    lines = [
        f"graphmem advise: {a.path} ({dims}), CPU session, graph-opt {a.graph_opt}",
        f"  current options: {' '.join(a.pairs)} (others onnxruntime's defaults)",
        f"  held now: arena steady {_held(c)}{_exact_mark(c)} ({c.arena_steady_bytes:,} B), "
        f"resident {format_bytes(c.resident_bytes)} ({c.resident_bytes:,} B), "
        f"weights held {format_bytes(c.weights_held_bytes)}",
        f"  measure it: {a.current_command}",
        "",
        "  settings that change what the session holds, ranked by resident saved (Δ: - holds less, + more):",
        f"  {'#':>2}  {'change':<40} {'arena steady':>13} {'Δ arena':>11} {'resident':>11} {'Δ resident':>11}",
    ]
    for k, x in enumerate(a.lines, 1):
        f = x.figures
        lines.append(
            f"  {k:>2}  {x.change:<40} {_held(f) + _exact_mark(f):>13} {_saving(x.arena_saving_bytes):>11} "
            f"{format_bytes(f.resident_bytes) + _resident_mark(f):>11} {_saving(x.resident_saving_bytes):>11}"
        )
        lines.append(f"      speed: {x.speed} ({x.speed_source})")
        lines.append(f"      measure: {x.command}")
    for s in a.skipped:
        lines.append(f"  not predicted: {s.setting}={s.value}: {s.reason}")
    lines += [
        "",
        "  arena: the CPU arena's held bytes from run 2 on (~: an approximation concerns it, see peak --json);",
        "  resident: the process's VmRSS growth, session creation to run 5 (rests on measured constants: "
        "verify checks it at 10%; ~: an approximation beyond those concerns it, see peak --json).",
    ]
    return "\n".join(lines)


def advice_html(a: Advice) -> str:
    """The advice table for the HTML report (escaped; no script)."""
    e = html.escape
    rows = [
        "<tr><th>#</th><th>change</th><th>arena steady</th><th>Δ arena</th><th>resident</th>"
        "<th>Δ resident</th><th>speed (from the sources)</th></tr>"
    ]
    c = a.current
    rows.append(
        f"<tr class='current'><td></td><td>current: {e(' '.join(a.pairs))}</td><td class='n'>{e(_held(c))}</td>"
        f"<td></td><td class='n'>{e(format_bytes(c.resident_bytes))}</td><td></td><td></td></tr>"
    )
    for k, x in enumerate(a.lines, 1):
        f = x.figures
        rows.append(
            f"<tr><td>{k}</td><td><code>{e(x.change)}</code><br><small><code>{e(x.command)}</code></small></td>"
            f"<td class='n'>{e(_held(f) + _exact_mark(f))}</td><td class='n'>{e(_saving(x.arena_saving_bytes))}</td>"
            f"<td class='n'>{e(format_bytes(f.resident_bytes) + _resident_mark(f))}</td>"
            f"<td class='n'>{e(_saving(x.resident_saving_bytes))}</td>"
            f"<td>{e(x.speed)} <small>({e(x.speed_source)})</small></td></tr>"
        )
    skipped = "".join(f"<li>{e(s.setting)}={e(s.value)}: {e(s.reason)}</li>" for s in a.skipped)
    return (
        "<p>Each setting changed on its own from the current options, predicted, ranked by the resident "
        "memory it saves (− holds less, + more). Each line's command measures it.</p>"
        f"<table class='advice'>{''.join(rows)}</table>"
        + (f"<p>Not predicted:</p><ul>{skipped}</ul>" if skipped else "")
    )
