"""The command line: a thin typer layer over the library.

Every command calls a library function and renders its result; errors from the
:class:`~graphmem.errors.GraphmemError` hierarchy are mapped to exit codes here and only here:
0 success, 1 a gate failed, 2 usage or input error.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from graphmem.cli.batch import (
    AsDtypeOption,
    DeviceOption,
    DevicesFileOption,
    DeviceSpecOption,
    MemoryOption,
    OverheadOption,
)
from graphmem.cli.common import (
    DimOption,
    HostOption,
    JsonOption,
    ModelArg,
    PlotOption,
    SessionOptionOption,
    ShapeOption,
    ValueOption,
    fail,
    handled,
    host_of,
    internal_error,
    parse_bindings,
    parse_dims,
    terminating_signals,
)
from graphmem.cli.gate import (
    FormatOption,
    MaxArenaOption,
    MaxFlopsOption,
    MaxParamsOption,
    MaxPeakOption,
    MaxResidentOption,
    MaxTotalOption,
    MaxWeightsOption,
    OutputOption,
    RequireExactOption,
)
from graphmem.cli.helptext import MARKUP_MODE, Command, Group
from graphmem.errors import EXIT_INPUT_ERROR, GateFailed, GraphmemError, Reported, Terminated, UsageError

if TYPE_CHECKING:
    from graphmem.host import HostProfile

__all__ = ["app", "main", "run"]

app = typer.Typer(
    name="graphmem",
    help="Static memory and FLOP analysis of ONNX models, checked against onnxruntime.\n\n"
    "Exit codes: 0 success, 1 a gate failed, 2 usage or input error.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=MARKUP_MODE,
    cls=Group,
)


@app.callback()
def _group() -> None:
    """Static memory and FLOP analysis of ONNX models, checked against onnxruntime."""


@app.command()
@handled
def peak(
    model: ModelArg,
    dim: DimOption = None,
    shape: ShapeOption = None,
    value: ValueOption = None,
    as_json: JsonOption = False,
    provider: Annotated[
        str,
        typer.Option(
            help="Execution provider whose session is emulated: cpu (checked byte for byte) or cuda "
            "(partition, copies, two streams, CUDA arena; from onnxruntime's source, not checked on a GPU)."
        ),
    ] = "cpu",
    as_dtype: AsDtypeOption = None,
    device: DeviceOption = None,
    device_spec: DeviceSpecOption = None,
    devices_file: DevicesFileOption = None,
    memory: MemoryOption = None,
    overhead: OverheadOption = "0",
    fmt: FormatOption = "table",
    output: OutputOption = None,
    max_weights: MaxWeightsOption = None,
    max_peak: MaxPeakOption = None,
    max_total: MaxTotalOption = None,
    max_params: MaxParamsOption = None,
    max_flops: MaxFlopsOption = None,
    max_resident: MaxResidentOption = None,
    max_arena: MaxArenaOption = None,
    require_exact: RequireExactOption = False,
    symbolic: Annotated[
        bool,
        typer.Option(
            "--symbolic",
            help="Leave dims unbound: print each figure as a formula of them (fitted on exact "
            "analyses over a grid, checked at a held-out point).",
        ),
    ] = False,
    graph_opt: Annotated[
        str,
        typer.Option(
            "--graph-opt",
            help="none, basic, extended or all: analyse the graph onnxruntime runs at that "
            "optimization level (onnxruntime on this machine writes it; 'all' is machine-specific). none is "
            "graphmem's static default; onnxruntime's own default is all (ORT_ENABLE_ALL): at none the table "
            "shows the figures at all beside when onnxruntime is installed.",
        ),
    ] = "none",
    plot: PlotOption = None,
    host: HostOption = None,
    session_option: SessionOptionOption = None,
) -> None:
    """Weights, activation peak (as onnxruntime allocates it), bounds, inputs, outputs, FLOPs, and
    what the session holds (weights, arena, resident memory) under --session-option.

    With budgets (--max-*) it is a gate: exit 1 when one fails. With --device it says whether
    the model fits and gives a roofline latency bound.
    """
    from graphmem.analysis.graph_opt import analyze_graph_opt
    from graphmem.analysis.request import AnalysisRequest
    from graphmem.gate.budgets import parse_budgets
    from graphmem.units import parse_bytes
    from graphmem.views.formats import resolve_format
    from graphmem.views.output import finish
    from graphmem.views.report import peak_document

    if plot is not None:
        from graphmem.views.plot import plot_format, require

        plot_format(plot)
        require()  # before the analysis: a missing extra fails at once
    if symbolic:
        if plot is not None:
            raise UsageError("--symbolic gives formulas: --plot draws one binding, so bind every dim")
        if any(x is not None for x in (max_weights, max_peak, max_total, max_params, max_flops, max_resident,
                                       max_arena, device)):
            raise UsageError("--symbolic gives formulas: budgets and --device need every dim bound")
        if shape or value:
            raise UsageError("--symbolic leaves named dims free: give --shape and --value without it")
        if session_option:
            raise UsageError("--symbolic gives formulas: --session-option needs every dim bound")
        _symbolic(model, parse_dims(dim), as_json, host_of(host))
        return
    fmt = resolve_format(fmt, as_json=as_json)
    budgets = parse_budgets(
        max_weights=max_weights, max_peak=max_peak, max_total=max_total, max_params=max_params, max_flops=max_flops,
        max_resident=max_resident, max_arena=max_arena, require_exact=require_exact,
    )
    dev = None
    if any(x is not None for x in (device, device_spec, devices_file, memory)):  # the catalog loads only then
        from graphmem.views.devices import resolve_device

        dev = resolve_device(device, spec=device_spec, devices_file=devices_file, memory=memory)
    overhead_bytes = parse_bytes(overhead)
    request = AnalysisRequest(
        bindings=parse_bindings(dim, shape, value), provider=provider, as_dtype=as_dtype, host=host_of(host),
        session_options=tuple(session_option or ()),
    )
    result = analyze_graph_opt(model, graph_opt, request)
    plotted = None
    if plot is not None:
        from graphmem.views.plot import peak_plot, write_plot, wrote

        plotted = wrote("peak", plot, write_plot(peak_plot(result, result.session), plot, inputs=[model]))
    offer = None
    if fmt == "table" and graph_opt == "none" and provider == "cpu":  # onnxruntime's own default level, beside
        from graphmem.analysis.levels import default_level_figures

        offer = default_level_figures(model, bindings=request.bindings, as_dtype=as_dtype,
                                      session_options=tuple(session_option or ()),
                                      host=request.host if host is not None else None)
    doc, table = peak_document(result, as_dtype=as_dtype, device=dev, overhead_bytes=overhead_bytes,
                               default_level=offer)
    inputs = [model, *([devices_file] if devices_file else [])]
    failed = finish(doc, budgets=budgets, fmt=fmt, output=output, table=table, inputs=inputs)
    if plotted is not None:
        typer.echo(plotted, err=True)
    if failed:
        raise GateFailed()


def _symbolic(model: Path, dims: dict[str, int], as_json: bool, host: HostProfile) -> None:
    """``peak --symbolic``: the figures as formulas of the dims left unbound."""
    import json

    from graphmem.views.symbolic import symbolic_analysis, symbolic_json, symbolic_table

    s = symbolic_analysis(model, dims, host=host)
    if as_json:
        typer.echo(json.dumps(symbolic_json(s, path=str(model), dims=dims), indent=2))
    else:
        typer.echo(symbolic_table(s, path=str(model), dims=dims))


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with ``argv``; return the exit code instead of exiting.

    Every failure ends here as one line on stderr and exit 2: typer's usage errors (a bad option
    value, a missing argument), errors raised outside a command, and bugs — an uncaught exception
    is reported as ``graphmem: error: internal error: …`` naming where it was raised (set
    ``GRAPHMEM_DEBUG=1`` for the traceback), never exit 1, which only a failed gate returns.

    The cyclic garbage collector is off while it runs (the caller's setting is restored): the
    modules a command imports (numpy, onnx, networkx) and the analysis build objects that all
    live until it returns, and collections over them cost about a tenth of a run on a small model.
    """
    collector = gc.isenabled()
    gc.disable()  # module objects and the analysis live until the command ends: nothing to collect
    try:
        return _main(argv)
    finally:
        if collector:
            gc.enable()


def _main(argv: list[str] | None) -> int:
    from typer import _click as click
    from typer.main import get_command

    from graphmem.cli.coercion import light_coercion

    try:
        with terminating_signals():
            command = light_coercion(get_command(_app_for(argv)))  # what app(...) runs, lighter
            code = command(args=argv, prog_name="graphmem", standalone_mode=False)
    except Terminated as exc:  # the with blocks have unwound: temporary folders are gone
        return fail(f"terminated by {signal.Signals(exc.signum).name}", exc.exit_code)
    except click.exceptions.NoArgsIsHelpError:
        return fail("no command given (graphmem --help lists them)")
    except click.ClickException as exc:
        return fail(exc.format_message())
    except KeyboardInterrupt:
        return fail("interrupted")
    except SystemExit as exc:
        if exc.code is None:
            return 0
        return exc.code if isinstance(exc.code, int) else EXIT_INPUT_ERROR
    except GraphmemError as exc:
        return fail(str(exc), exc.exit_code)
    except Reported as exc:  # a failed gate (1), its report written: nothing more to print
        return exc.exit_code
    except MemoryError:
        return fail("out of memory (the model or the options need more memory than this machine lets graphmem have)")
    except Exception as exc:
        if os.environ.get("GRAPHMEM_DEBUG"):
            raise
        return fail(internal_error(exc))
    return code if isinstance(code, int) else 0


def _app_for(argv: list[str] | None) -> typer.Typer:
    """``app`` with only the command ``argv`` names registered: typer builds the click command of
    every registered command on each call (signatures, annotations, help texts), as long as the
    analysis of a small model; the group's help, no command and an unknown name get them all."""
    import copy

    from typer.main import get_command_name

    args = sys.argv[1:] if argv is None else argv
    name = next((a for a in args if not a.startswith("-")), None)
    chosen = [
        c for c in app.registered_commands
        if (c.name or (get_command_name(c.callback.__name__) if c.callback is not None else None)) == name
    ]
    if len(chosen) != 1:
        return app
    one = copy.copy(app)
    one.registered_commands = chosen
    return one


def run() -> None:
    """Run the command line and exit (:func:`graphmem.__main__.run`, the console script, also
    turns the collector off before this module's imports)."""
    gc.disable()  # to the end: Python's last collection at exit walks every object the run made
    sys.exit(main())


#: Command modules; each has ``register(app)``. Imported here so that ``graphmem --help`` lists
#: them; each imports its heavy dependencies inside its commands, keeping start-up fast.
COMMAND_MODULES = (
    "graphmem.cli.host",
    "graphmem.cli.flops",
    "graphmem.cli.verify",
    "graphmem.cli.advise",
    "graphmem.cli.batch",
    "graphmem.cli.gate",
    "graphmem.cli.train",
    "graphmem.cli.report",
)


def _register_commands() -> None:
    import importlib
    import importlib.util

    from typer.core import TyperCommand

    for name in COMMAND_MODULES:
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name).register(app)
    for info in app.registered_commands:  # every command's --help reads the same (cli/helptext.py)
        if info.cls in (None, TyperCommand):
            info.cls = Command


_register_commands()
