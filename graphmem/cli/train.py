"""``graphmem train``: memory of one training step of a training-mode ONNX export.

A thin layer over :func:`graphmem.training.estimate_training`; errors become exit codes in
:func:`graphmem.cli.common.handled` (2: bad model, bad option, nothing to train). Warnings (a
``--frozen`` pattern that matched nothing, a graph that looks like an inference export) go to
stderr and, with ``--json``, into ``training.warnings``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

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

__all__ = ["register", "train"]


@handled
def train(
    model: ModelArg,
    dim: DimOption = None,
    shape: ShapeOption = None,
    value: ValueOption = None,
    optimizer: Annotated[
        str, typer.Option(help="sgd | momentum | adam | adamw (state: none, 1x, 2x the weights).")
    ] = "adam",
    grads: Annotated[
        str,
        typer.Option(help="released (zero_grad(), PyTorch's default) | persistent (set_to_none=False)."),
    ] = "released",
    precision: Annotated[
        str, typer.Option(help="fp32 | mixed-fp16 | mixed-bf16 (half copies beside fp32 master weights).")
    ] = "fp32",
    frozen: Annotated[
        list[str] | None,
        typer.Option(
            "--frozen",
            help="Freeze parameters whose name matches this fnmatch pattern (repeatable), "
            "e.g. --frozen 'backbone.*'.",
            show_default=False,
        ),
    ] = None,
    foreach: Annotated[
        bool, typer.Option("--foreach", help="Optimizer with foreach=True (PyTorch's default on CUDA).")
    ] = False,
    as_json: JsonOption = False,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", show_default=False,
                     help="Also draw the step's phases into FILE (.png or .svg; needs pip install 'graphmem[plot]')."),
    ] = None,
    host: HostOption = None,
) -> None:
    """Weights, gradients, optimizer state, tensors saved for backward, and each phase's peak."""
    from graphmem.training import estimate_training
    from graphmem.training.report import training_json, training_table

    if plot is not None:
        from graphmem.views.plot import plot_format, require

        plot_format(plot)
        require()
    est = estimate_training(
        model,
        bindings=parse_bindings(dim, shape, value),
        optimizer=optimizer,
        grads=grads,
        precision=precision,
        frozen=tuple(frozen or ()),
        foreach=foreach,
        host=host_of(host),
    )
    plotted = None
    if plot is not None:
        from graphmem.views.plot import training_figure, write_plot, wrote

        plotted = wrote("train", plot, write_plot(training_figure(est), plot, inputs=[model]))
    for warning in est.warnings:
        typer.echo(f"graphmem: warning: {warning}", err=True)
    if as_json:
        typer.echo(json.dumps(training_json(est), indent=2))
    else:
        typer.echo(training_table(est))
    if plotted is not None:
        typer.echo(plotted, err=True)


def register(app: typer.Typer) -> None:
    """Add the ``train`` command to the graphmem app."""
    app.command(name="train")(train)
