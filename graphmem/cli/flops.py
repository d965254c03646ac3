"""``graphmem layers`` (the per-layer table) and ``graphmem ops`` (FLOP rule coverage)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from graphmem.cli.common import (
    DimOption,
    HostOption,
    JsonOption,
    ModelArg,
    ShapeOption,
    ValueOption,
    handled,
    host_of,
    parse_bindings,
)
from graphmem.cli.gate import FormatOption, OutputOption
from graphmem.optable import domain_name, op_key

if TYPE_CHECKING:
    from graphmem.analysis.result import Analysis

__all__ = ["register", "layers_json"]

LAYERS_HELP = """Per-layer table: op type, output shape, parameters, FLOPs and share, output bytes,
and whether the layer's output is held at the activation peak ('*').

Rows are in graph order (the order onnxruntime runs the nodes) unless --sort ranks them; --top N
keeps the first N. --format json|markdown|csv (--json = --format json) for CI and pull-request
comments (csv: one row per layer); --output FILE writes the report atomically instead of
printing it.

FLOP conventions: a multiply-add is 1 MAC and 2 FLOPs; add/sub/mul/div/compare 1 FLOP per
output element; exp, log, sqrt, tanh, erf, pow 1 each; FLOPs are work per run, not FLOP/s.
Run `graphmem ops` for every rule."""


@handled
def layers_command(
    model: ModelArg,
    dim: DimOption = None,
    shape: ShapeOption = None,
    value: ValueOption = None,
    sort: Annotated[
        str, typer.Option(help="order (graph order: the order onnxruntime runs the nodes), flops, params or memory.")
    ] = "order",
    top: Annotated[
        int | None,
        typer.Option(help="Show only the first N rows: in graph order unless --sort ranks them (then the N largest).",
                     show_default=False),
    ] = None,
    group: Annotated[
        int | None, typer.Option(help="Group nodes by name scope to this depth (/layer1/... = 1).")
    ] = None,
    as_json: JsonOption = False,
    fmt: FormatOption = "table",
    output: OutputOption = None,
    host: HostOption = None,
) -> None:
    from graphmem.analysis.pipeline import analyze
    from graphmem.views.formats import render_layers, resolve_format
    from graphmem.views.output import deliver

    fmt = resolve_format(fmt, as_json=as_json)
    a = analyze(model, bindings=parse_bindings(dim, shape, value), host=host_of(host))
    doc = layers_json(a, str(model), sort=sort, top=top, group=group)
    deliver(render_layers(doc, fmt), fmt=fmt, output=output, failures=(), inputs=[model])


def layers_json(
    a: Analysis, path: str, *, sort: str = "order", top: int | None = None, group: int | None = None
) -> dict[str, Any]:
    """The ``graphmem layers --json`` document (``layers.schema.json``, schema_version 1)."""
    from graphmem.analysis.dims import shape_json
    from graphmem.views.layers import layer_rows
    from graphmem.views.report import SCHEMA_VERSION

    rows = layer_rows(a, sort=sort, top=top, group_depth=group)
    total = len(layer_rows(a, group_depth=group)) if top else len(rows)
    layers = []
    for r in rows:
        row = asdict(r)
        row["output_shape"] = None if r.output_shape is None else list(r.output_shape)
        layers.append(row)
    return {
        "schema_version": SCHEMA_VERSION,
        "model": {
            "path": path,
            "dims": dict(a.model.dims),
            "shapes": {k: shape_json(s) for k, s in a.model.shapes.items()},
            "values": {k: list(x) for k, x in a.model.values.items()},
        },
        "layers": layers,
        "rows": {"sort": sort, "shown": len(layers), "of": total},
        "totals": {"params": a.weights.params, "flops": a.flops.flops, "macs": a.flops.macs},
        "activations": {"peak_bytes": a.activations.peak_bytes, "peak_node": a.activations.peak_node},
        "host": a.host.to_dict(),
    }


@handled
def ops_command(
    model: Annotated[
        Path | None, typer.Argument(help="A model: list at its opset and count the nodes using each op.")
    ] = None,
    opset: Annotated[
        int | None, typer.Option(help="Default-domain opset to list (default 21, or the model's).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Every op graphmem knows and its FLOP rule: counted, zero (data movement) or unsupported."""
    from graphmem.flops import conventions_text, coverage, lookup

    used: dict[tuple[str, str], int] = {}
    if model is not None:
        from graphmem.model.loading import load_model

        loaded = load_model(model)
        opset = opset or loaded.opset
        for node in loaded.nodes:
            key = op_key(node)
            used[key] = used.get(key, 0) + 1
    opset = opset or 21
    rows = coverage(opset)
    listed = {(d, o) for d, o, _ in rows}
    for d, o in sorted(used):
        if (d, o) not in listed:  # e.g. an op of another opset or domain
            entry = lookup(d, o)
            rows.append((d, o, entry.outcome if entry else "unsupported"))
    if as_json:
        doc = {
            "schema_version": 1,
            "opset": opset,
            "ops": [
                {"domain": domain_name(d), "op_type": o, "outcome": k, "nodes": used.get((d, o), 0)}
                for d, o, k in rows
            ],
        }
        typer.echo(json.dumps(doc, indent=2))
        return
    counts: dict[str, int] = {}
    for _, _, kind in rows:
        counts[kind] = counts.get(kind, 0) + 1
    for d, o, k in rows:
        n = used.get((d, o), 0)
        typer.echo(f"{d or 'ai.onnx':<22} {o:<34} {k:<12} {f'{n} nodes' if n else ''}".rstrip())
    typer.echo(", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    typer.echo("")
    typer.echo(conventions_text())


def register(app: typer.Typer) -> None:
    """Add ``layers`` and ``ops`` to the CLI."""
    app.command("layers", help=LAYERS_HELP)(layers_command)
    app.command("ops")(ops_command)
