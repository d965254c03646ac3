"""``graphmem check`` and ``graphmem diff``: gate models in CI (exit 1 when a limit is crossed).

Thin typer commands over :mod:`graphmem.gate.config` (check), :mod:`graphmem.gate.budgets` (budgets, diff)
and :mod:`graphmem.views.formats` (rendering). The option types below are shared with
``graphmem peak`` (``--format``, ``--output``, ``--max-*``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from graphmem.cli.common import (
    DimOption,
    HostOption,
    JsonOption,
    ShapeOption,
    ValueOption,
    handled,
    host_of,
    parse_bindings,
)
from graphmem.errors import GateFailed, Reported, one_line

__all__ = [
    "register",
    "check",
    "diff",
    "FormatOption",
    "OutputOption",
    "MaxWeightsOption",
    "MaxPeakOption",
    "MaxTotalOption",
    "MaxParamsOption",
    "MaxFlopsOption",
    "MaxResidentOption",
    "MaxArenaOption",
    "RequireExactOption",
]

FormatOption = Annotated[
    str, typer.Option("--format", "-f", help="Output format: table, json, markdown or csv.")
]
OutputOption = Annotated[
    Path | None,
    typer.Option(
        "--output", "-o", help="Write the report to FILE (atomically) instead of stdout.",
        show_default=False,
    ),
]


def _budget(option: str, what: str, example: str) -> Any:
    return Annotated[
        str | None,
        typer.Option(option, help=f"Fail (exit 1) if {what} exceeds this, e.g. {example}.",
                     show_default=False),
    ]


MaxWeightsOption = _budget("--max-weights", "the weights' bytes", "512MiB")
MaxPeakOption = _budget("--max-peak", "the activation peak", "64MiB")
MaxTotalOption = _budget("--max-total", "weights + activation peak + inputs", "1.5GB")
MaxParamsOption = _budget("--max-params", "the parameter count", "25M")
MaxFlopsOption = _budget("--max-flops", "the FLOP count", "4G")
MaxResidentOption = _budget("--max-resident", "the predicted resident memory (session.resident_bytes: the "
                            "process's growth, session creation to steady state)", "1GiB")
MaxArenaOption = _budget("--max-arena", "the CPU arena held in steady state (session.arena_steady_bytes)", "512MiB")
RequireExactOption = Annotated[
    bool,
    typer.Option(
        "--require-exact",
        help="Fail (exit 1) when a gated figure is approximate (activations.exact false; for --max-resident "
        "and --max-arena also session.approximations naming the figure, resident's measured constants aside).",
    ),
]


def _increase(metric: str) -> Any:
    return typer.Option(f"--max-increase-{metric}", show_default=False,
                        help=f"Largest allowed increase of {metric}, e.g. 2% (overrides --max-increase).")


MaxIncreaseWeights = Annotated[str | None, _increase("weights")]
MaxIncreasePeak = Annotated[str | None, _increase("peak")]
MaxIncreaseTotal = Annotated[str | None, _increase("total")]
MaxIncreaseParams = Annotated[str | None, _increase("params")]
MaxIncreaseFlops = Annotated[str | None, _increase("flops")]
MaxIncreaseResident = Annotated[str | None, _increase("resident")]
MaxIncreaseArena = Annotated[str | None, _increase("arena")]


def register(app: typer.Typer) -> None:
    """Add ``check`` and ``diff`` to the graphmem app."""
    app.command()(check)
    app.command()(diff)


@handled
def check(
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", show_default=False,
                     help="graphmem.toml or pyproject.toml ([tool.graphmem]); default: the "
                          "nearest one in this directory or a parent."),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", show_default=False,
                     help="Worker processes (default: the number of CPUs)."),
    ] = None,
    fmt: FormatOption = "table",
    as_json: JsonOption = False,
    output: OutputOption = None,
    require_exact: RequireExactOption = False,
    host: HostOption = None,
) -> None:
    """Analyze every configured model and check its budgets; exit 1 if any is over budget.

    Exit 2 if the configuration is bad or a model cannot be analyzed.
    """
    from graphmem.gate.config import check_document, load_config, run_check
    from graphmem.views.formats import render_check, resolve_format
    from graphmem.views.output import deliver, report_failures

    fmt = resolve_format(fmt, as_json=as_json)
    profile = host_of(host)
    cfg = load_config(config)
    if require_exact:
        from dataclasses import replace

        cfg = replace(cfg, models=tuple(replace(m, budgets=replace(m.budgets, require_exact=True)) for m in cfg.models))
    progress = _Progress(len(cfg.models))
    try:
        outcomes = run_check(cfg, jobs=jobs, on_done=progress.update, host=profile)
    finally:
        progress.close()
    doc = check_document(cfg, outcomes, profile)
    errors = [f"{o.spec.name}: {o.error}" for o in outcomes if o.status == "error"]
    failures = [f"{o.spec.name}: {m}" for o in outcomes for m in o.messages]
    inputs: list[Path | str] = [cfg.path, *(spec.path for spec in cfg.models)]
    failed = deliver(render_check(doc, fmt), fmt=fmt, output=output, failures=failures, inputs=inputs)
    if errors:
        report_failures(errors, doc_on_stdout=output is None and fmt != "table", kind="error")
        raise Reported()  # models that could not be analysed: an input error, over any failed gate
    if failed:
        raise GateFailed()


class _Progress:
    """One updating line on a terminal (stderr), one plain line per model otherwise."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.tty = sys.stderr.isatty()

    def update(self, outcome: Any, done: int, total: int) -> None:
        status = {"pass": "ok", "fail": "FAIL", "error": "ERROR"}[outcome.status]
        text = f"[{done}/{total}] {status:<5} {one_line(outcome.spec.name)} ({outcome.seconds:.2f} s)"
        if self.tty:
            sys.stderr.write(f"\r\x1b[Kgraphmem check: {text}")
        else:
            sys.stderr.write(f"graphmem check: {text}\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


@handled
def diff(
    old: Annotated[Path, typer.Argument(help="The baseline ONNX model.", show_default=False)],
    new: Annotated[Path, typer.Argument(help="The changed ONNX model.", show_default=False)],
    dim: DimOption = None,
    shape: ShapeOption = None,
    value: ValueOption = None,
    provider: Annotated[
        str, typer.Option(help="Execution provider whose session is emulated: cpu or cuda (see graphmem peak --help).")
    ] = "cpu",
    max_increase: Annotated[
        str | None,
        typer.Option("--max-increase", show_default=False, help="Largest allowed increase of every figure, e.g. 5%."),
    ] = None,
    max_increase_weights: MaxIncreaseWeights = None,
    max_increase_peak: MaxIncreasePeak = None,
    max_increase_total: MaxIncreaseTotal = None,
    max_increase_params: MaxIncreaseParams = None,
    max_increase_flops: MaxIncreaseFlops = None,
    max_increase_resident: MaxIncreaseResident = None,
    max_increase_arena: MaxIncreaseArena = None,
    top: Annotated[int, typer.Option(help="How many changed layers to list.")] = 10,
    fmt: FormatOption = "table",
    as_json: JsonOption = False,
    output: OutputOption = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            show_default=False,
            help="Also draw both timelines overlaid into FILE (.png or .svg; needs pip install 'graphmem[plot]').",
        ),
    ] = None,
    require_exact: Annotated[
        bool,
        typer.Option("--require-exact", help="Fail (exit 1) when either side's activation figures are approximate."),
    ] = False,
    host: HostOption = None,
) -> None:
    """Compare two models: weights, params, peak, total, what the session holds (resident, arena),
    FLOPs, nodes, and which layers changed.

    Exit 1 when an increase is over its --max-increase* threshold, or with --require-exact when
    either side is not exact. Each side's exactness is shown; a side with tensors of no static
    size is warned about on stderr (its figures are lower estimates).
    """
    from graphmem.analysis.pipeline import analyze
    from graphmem.gate.diff import compare, diff_warnings, parse_thresholds
    from graphmem.views.formats import render_diff, resolve_format
    from graphmem.views.output import deliver

    fmt = resolve_format(fmt, as_json=as_json)
    thresholds = parse_thresholds(
        max_increase=max_increase,
        weights=max_increase_weights,
        peak=max_increase_peak,
        total=max_increase_total,
        params=max_increase_params,
        flops=max_increase_flops,
        resident=max_increase_resident,
        arena=max_increase_arena,
    )
    if plot is not None:
        from graphmem.views.plot import plot_format, require

        plot_format(plot)
        require()
    bindings = parse_bindings(dim, shape, value)
    profile = host_of(host)
    before = analyze(old, bindings=bindings, provider=provider, host=profile)
    after = analyze(new, bindings=bindings, provider=provider, host=profile)
    plotted = None
    if plot is not None:
        from graphmem.views.plot import diff_plot, write_plot, wrote

        plotted = wrote("diff", plot, write_plot(diff_plot(before, after), plot, inputs=[old, new]))
    doc = compare(before, after, thresholds=thresholds, top=top, require_exact=require_exact, host=profile)
    for warning in diff_warnings(doc):
        typer.echo(f"graphmem: warning: {one_line(warning)}", err=True)
    failures = [f["message"] for f in doc["gate"]["failures"]]
    failed = deliver(render_diff(doc, fmt), fmt=fmt, output=output, failures=failures, inputs=[old, new])
    if plotted is not None:
        typer.echo(plotted, err=True)
    if failed:
        raise GateFailed()
