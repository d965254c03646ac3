"""``graphmem layers`` (the per-layer table) and ``graphmem ops`` (FLOP rule coverage)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Optional

import typer

from graphmem.cli_common import DimOption, JsonOption, ModelArg, handled, parse_dims

__all__ = ["register"]

LAYERS_HELP = """Per-layer table: op type, output shape, parameters, FLOPs and share, output bytes,
and whether the layer's output is held at the activation peak ('*').

FLOP conventions: a multiply-add is 1 MAC and 2 FLOPs; add/sub/mul/div/compare 1 FLOP per
output element; exp, log, sqrt, tanh, erf, pow 1 each; FLOPs are work per run, not FLOP/s.
Run `graphmem ops` for every rule."""


@handled
def layers_command(
    model: ModelArg,
    dim: DimOption = None,
    sort: Annotated[str, typer.Option(help="order, flops, params or memory.")] = "order",
    top: Annotated[Optional[int], typer.Option(help="Show only the first N rows.")] = None,
    group: Annotated[
        Optional[int], typer.Option(help="Group nodes by name scope to this depth (/layer1/... = 1).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    from graphmem.analysis import analyze
    from graphmem.layers import layer_rows
    from graphmem.report import SCHEMA_VERSION
    from graphmem.units import format_bytes, format_count

    a = analyze(model, dims=parse_dims(dim))
    rows = layer_rows(a, sort=sort, top=top, group_depth=group)
    if as_json:
        doc = {
            "schema_version": SCHEMA_VERSION,
            "model": {"path": str(model), "dims": a.model.dims},
            "layers": [asdict(r) for r in rows],
            "totals": {"params": a.weights.params, "flops": a.flops.flops, "macs": a.flops.macs},
        }
        typer.echo(json.dumps(doc, indent=2, default=list))
        return
    typer.echo(f"{'layer':<44} {'op':<18} {'output shape':<20} {'params':>10} {'FLOPs':>10} {'share':>6} {'output':>11} peak")
    for r in rows:
        shape = "x".join(str(d) for d in r.output_shape) if r.output_shape else "?"
        unsup = f" +{r.unsupported} unsupported" if r.unsupported else ""
        typer.echo(
            f"{r.name[-44:]:<44} {r.op_type[:18]:<18} {shape[:20]:<20} {format_count(r.params):>10} "
            f"{format_count(r.flops):>10} {r.flop_share:>6.1%} {format_bytes(r.output_bytes):>11} "
            f"{'*' if r.live_at_peak else ''}{unsup}"
        )
    typer.echo(
        f"{'total':<44} {'':<18} {'':<20} {format_count(a.weights.params):>10} {format_count(a.flops.flops):>10} "
        f"{'100%':>6} {'':>11} peak {format_bytes(a.activations.peak_bytes)} at '{a.activations.peak_node}'"
    )


@handled
def ops_command(
    model: Annotated[
        Optional[Path], typer.Argument(help="A model: list at its opset and count the nodes using each op.")
    ] = None,
    opset: Annotated[Optional[int], typer.Option(help="Default-domain opset to list (default 21, or the model's).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Every op graphmem knows and its FLOP rule: counted, zero (data movement) or unsupported."""
    from graphmem.flops import conventions_text, coverage, lookup

    used: dict[tuple[str, str], int] = {}
    if model is not None:
        from graphmem.loading import load_model

        loaded = load_model(model)
        opset = opset or loaded.opset
        for node in loaded.nodes:
            key = ("" if node.domain == "ai.onnx" else node.domain, node.op_type)
            used[key] = used.get(key, 0) + 1
    opset = opset or 21
    rows = coverage(opset)
    listed = {(d, o) for d, o, _ in rows}
    for d, o in sorted(used):
        if (d, o) not in listed:  # e.g. an op of another opset or domain
            entry = lookup(d, o)
            rows.append((d, o, entry.kind if entry else "unsupported"))
    if as_json:
        doc = {
            "schema_version": 1,
            "opset": opset,
            "ops": [
                {"domain": d or "ai.onnx", "op_type": o, "outcome": k, "nodes": used.get((d, o), 0)}
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
