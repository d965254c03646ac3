"""``graphmem report``: one self-contained HTML page about a model's memory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from graphmem.cli.common import (
    DimOption,
    HostOption,
    ModelArg,
    SessionOptionOption,
    ShapeOption,
    ValueOption,
    handled,
    host_of,
    parse_bindings,
)

__all__ = ["register", "report"]


@handled
def report(
    model: ModelArg,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The HTML file to write (atomically).", show_default=False)
    ],
    dim: DimOption = None,
    shape: ShapeOption = None,
    value: ValueOption = None,
    graph_opt: Annotated[
        str, typer.Option("--graph-opt", help="none, basic, extended or all (see graphmem peak --help).")
    ] = "none",
    provider: Annotated[str, typer.Option(help="cpu or cuda (see graphmem peak --help).")] = "cpu",
    sweep: Annotated[
        str | None,
        typer.Option(
            "--sweep", show_default=False,
            help="Add memory against one dim: NAME=VALUES (1,2,4,8 or 1..64:x2, as graphmem sweep), "
            "analysed on the file as given (CPU, graph-opt none).",
        ),
    ] = None,
    host: HostOption = None,
    session_option: SessionOptionOption = None,
) -> None:
    """Write a self-contained HTML report: figures, exactness, the memory timeline (hover for the
    node and exact bytes), the tensors live at the peak, FLOPs by op type, the layers and, with
    --sweep, memory against a dim. No network reference, no script; matplotlib is not needed."""
    from graphmem.batch.page import build_report
    from graphmem.views.output import write_atomic

    page = build_report(model, bindings=parse_bindings(dim, shape, value), graph_opt=graph_opt, provider=provider,
                        sweep=sweep, host=host_of(host), session_options=session_option)
    write_atomic(output, page, inputs=[model])
    typer.echo(f"graphmem report: wrote {output} ({len(page.encode('utf-8')):,} bytes)")


def register(app: typer.Typer) -> None:
    """Add the ``report`` command to the graphmem app."""
    app.command(name="report")(report)
