"""``graphmem verify``: run the model with onnxruntime and compare with the prediction."""

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
    parse_bindings,
)
from graphmem.cli.gate import (
    MaxFlopsOption,
    MaxParamsOption,
    MaxPeakOption,
    MaxTotalOption,
    MaxWeightsOption,
    RequireExactOption,
)
from graphmem.errors import GateFailed, UsageError

__all__ = ["register", "verify_command"]


@handled
def verify_command(
    model: ModelArg,
    dim: DimOption = None,
    shape: ShapeOption = None,
    value: ValueOption = None,
    provider: Annotated[str, typer.Option(help="cpu, cuda, or auto (CUDA when usable, else CPU).")] = "cpu",
    graph_opt: Annotated[str, typer.Option("--graph-opt", help="none, basic, extended or all.")] = "none",
    tolerance: Annotated[str, typer.Option(help="Allowed |predicted/measured - 1|, e.g. 5%.")] = "5%",
    random_weights: Annotated[
        bool,
        typer.Option("--random-weights", help="Synthesize missing float weights (memory does not depend on values)."),
    ] = False,
    input_range: Annotated[
        str | None, typer.Option("--input-range", help="LOW,HIGH for integer inputs (e.g. token ids).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random inputs.")] = 0,
    as_json: JsonOption = False,
    max_weights: MaxWeightsOption = None,
    max_peak: MaxPeakOption = None,
    max_total: MaxTotalOption = None,
    max_params: MaxParamsOption = None,
    max_flops: MaxFlopsOption = None,
    require_exact: RequireExactOption = False,
    host: HostOption = None,
    session_option: SessionOptionOption = None,
    resident_processes: Annotated[
        int,
        typer.Option(
            "--resident-processes",
            help="Fresh processes whose median VmRSS growth is compared with resident_bytes (0: not measured; "
            "each imports onnxruntime and creates the session once).",
            min=0,
        ),
    ] = 3,
) -> None:
    """Run the graph with onnxruntime, measure its activation peak and what the session holds (the
    arena before, over and after five runs from the profiler; the resident growth of three fresh
    processes), compare each with its prediction, under --session-option (one intra-op thread
    unless given).

    The run is on this machine, so the prediction is for this machine: a --host profile that
    differs from it is refused (exit 2). Exit 0 within tolerance (the arena's figures at
    --tolerance, resident at 10%; and budgets, --max-*, on the predicted figures), 1 outside, 2 on
    errors.
    """
    from graphmem.gate.budgets import evaluate, parse_budgets
    from graphmem.verify.compare import parse_tolerance, verify
    from graphmem.verify.report import verify_json, verify_table
    from graphmem.views.output import report_failures
    from graphmem.views.report import peak_json

    int_range = _parse_range(input_range)
    budgets = parse_budgets(
        max_weights=max_weights, max_peak=max_peak, max_total=max_total, max_params=max_params, max_flops=max_flops,
        require_exact=require_exact,
    )
    bindings = parse_bindings(dim, shape, value)
    v = verify(
        model,
        bindings=bindings,
        provider=provider,
        graph_opt=graph_opt,
        tolerance=parse_tolerance(tolerance),
        random_weights=random_weights,
        int_range=int_range,
        seed=seed,
        host=host,
        session_options=session_option,
        resident_processes=resident_processes,
    )
    gate = evaluate(peak_json(v.analysis), budgets) if budgets.active else None
    passed = v.passed and (gate is None or gate.passed)
    if as_json:
        typer.echo(json.dumps(verify_json(v, path=str(model), dims=bindings.dims, gate=gate), indent=2))
    else:
        typer.echo(verify_table(v, path=str(model), gate=gate))
    if gate is not None and not gate.passed:
        report_failures([f.message for f in gate.failures], doc_on_stdout=as_json)
    if not passed:
        raise GateFailed()


def _parse_range(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    lo, sep, hi = text.partition(",")
    try:
        low, high = int(lo), int(hi)
    except ValueError:
        raise UsageError(f"--input-range '{text}': expected LOW,HIGH integers") from None
    if not sep or high <= low:
        raise UsageError(f"--input-range '{text}': expected LOW,HIGH with LOW < HIGH")
    return low, high


def register(app: typer.Typer) -> None:
    """Add ``verify`` to the CLI."""
    app.command("verify")(verify_command)
