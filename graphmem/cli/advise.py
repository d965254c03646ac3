"""``graphmem advise``: the session settings that change what an onnxruntime session holds."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from graphmem.cli.common import (
    DimOption,
    HostOption,
    JsonOption,
    ModelArg,
    SessionOptionOption,
    ShapeOption,
    ValueOption,
    handled,
    host_of,
    parse_bindings,
)

__all__ = ["register", "advise_command"]


@handled
def advise_command(
    model: ModelArg,
    dim: DimOption = None,
    shape: ShapeOption = None,
    value: ValueOption = None,
    graph_opt: Annotated[
        str,
        typer.Option("--graph-opt", help="The current level: none, basic, extended or all (see graphmem peak --help)."),
    ] = "none",
    session_option: SessionOptionOption = None,
    host: HostOption = None,
    as_json: JsonOption = False,
) -> None:
    """Which onnxruntime session settings change what the session holds, for this model and binding:
    enable_mem_pattern, arena_extend_strategy, enable_cpu_mem_arena, session.disable_prepacking,
    the graph level and intra_op_num_threads, each changed on its own from the current options
    (--session-option, --graph-opt; onnxruntime's defaults otherwise), with its predicted arena
    (steady state) and resident bytes and what it saves, ranked by resident saved. What a setting
    costs in speed is said where onnxruntime's sources say it; each line names the graphmem verify
    command that measures it. CPU provider.
    """
    from graphmem.batch.advice_report import advice_json, advice_table
    from graphmem.batch.advise import advise

    a = advise(
        model,
        bindings=parse_bindings(dim, shape, value),
        graph_opt=graph_opt,
        session_options=session_option or (),
        host=host_of(host),
    )
    typer.echo(json.dumps(advice_json(a), indent=2) if as_json else advice_table(a))


def register(app: typer.Typer) -> None:
    """Add ``advise`` to the CLI."""
    app.command("advise")(advise_command)
