"""The command line: a thin typer layer over the library.

Every command calls a library function and renders its result; errors from the
:class:`~graphmem.errors.GraphmemError` hierarchy are mapped to exit codes here and only here:
0 success, 1 a gate failed, 2 usage or input error.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from graphmem.cli_common import DimOption, JsonOption, ModelArg, handled, parse_dims
from graphmem.errors import EXIT_INPUT_ERROR

__all__ = ["app", "main", "run"]

app = typer.Typer(
    name="graphmem",
    help="Static memory and FLOP analysis of ONNX models, checked against onnxruntime.\n\n"
    "Exit codes: 0 success, 1 a gate failed, 2 usage or input error.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def _group() -> None:
    """Static memory and FLOP analysis of ONNX models, checked against onnxruntime."""


@app.command()
@handled
def peak(
    model: ModelArg,
    dim: DimOption = None,
    as_json: JsonOption = False,
    provider: Annotated[
        str, typer.Option(help="Runtime whose allocator is emulated (cpu).")
    ] = "cpu",
) -> None:
    """Weights, activation peak (as onnxruntime allocates it), bounds, inputs and outputs."""
    from graphmem.analysis import analyze
    from graphmem.report import peak_json, peak_table

    result = analyze(model, dims=parse_dims(dim), provider=provider)
    if as_json:
        typer.echo(json.dumps(peak_json(result), indent=2))
    else:
        typer.echo(peak_table(result))


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with ``argv``; return the exit code instead of exiting."""
    try:
        app(args=argv, prog_name="graphmem")
    except SystemExit as exc:
        if exc.code is None:
            return 0
        return exc.code if isinstance(exc.code, int) else EXIT_INPUT_ERROR
    return 0


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


#: Command modules; each has ``register(app)``. Imported here so that ``graphmem --help`` lists
#: them; each imports its heavy dependencies inside its commands, keeping start-up fast.
COMMAND_MODULES = (
    "graphmem.cli_flops",
    "graphmem.cli_verify",
    "graphmem.cli_batch",
    "graphmem.cli_gate",
    "graphmem.cli_train",
)


def _register_commands() -> None:
    import importlib
    import importlib.util

    for name in COMMAND_MODULES:
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name).register(app)


_register_commands()
