"""``graphmem verify``: run the model with onnxruntime and compare with the prediction."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer

from graphmem.cli.common import DimOption, JsonOption, ModelArg, handled, parse_dims
from graphmem.cli.gate import MaxFlopsOption, MaxParamsOption, MaxPeakOption, MaxTotalOption, MaxWeightsOption
from graphmem.errors import EXIT_GATE_FAILED, EXIT_OK, UsageError

__all__ = ["register", "verify_command"]


@handled
def verify_command(
    model: ModelArg,
    dim: DimOption = None,
    provider: Annotated[str, typer.Option(help="cpu, cuda, or auto (CUDA when usable, else CPU).")] = "cpu",
    graph_opt: Annotated[str, typer.Option("--graph-opt", help="none, basic, extended or all.")] = "none",
    tolerance: Annotated[str, typer.Option(help="Allowed |predicted/measured - 1|, e.g. 5%.")] = "5%",
    random_weights: Annotated[
        bool, typer.Option("--random-weights", help="Synthesize missing float weights (memory does not depend on values).")
    ] = False,
    input_range: Annotated[
        Optional[str], typer.Option("--input-range", help="LOW,HIGH for integer inputs (e.g. token ids).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random inputs.")] = 0,
    as_json: JsonOption = False,
    max_weights: MaxWeightsOption = None,
    max_peak: MaxPeakOption = None,
    max_total: MaxTotalOption = None,
    max_params: MaxParamsOption = None,
    max_flops: MaxFlopsOption = None,
) -> None:
    """Run the graph with onnxruntime, measure its activation peak, compare with the prediction.

    Exit 0 within tolerance (and budgets, --max-*, on the predicted figures), 1 outside, 2 on
    errors.
    """
    from graphmem.gate.budgets import evaluate, parse_budgets
    from graphmem.views.output import report_failures
    from graphmem.views.report import SCHEMA_VERSION, peak_json
    from graphmem.units import format_bytes
    from graphmem.verify.compare import parse_tolerance, verify

    int_range = _parse_range(input_range)
    budgets = parse_budgets(
        max_weights=max_weights, max_peak=max_peak, max_total=max_total, max_params=max_params, max_flops=max_flops
    )
    v = verify(
        model,
        dims=parse_dims(dim),
        provider=provider,
        graph_opt=graph_opt,
        tolerance=parse_tolerance(tolerance),
        random_weights=random_weights,
        int_range=int_range,
        seed=seed,
    )
    gate = evaluate(peak_json(v.analysis), budgets) if budgets.active else None
    passed = v.passed and (gate is None or gate.passed)
    if as_json:
        doc = {
            "schema_version": SCHEMA_VERSION,
            "model": {"path": str(model), "dims": parse_dims(dim)},
            "verify": {
                "provider": v.provider,
                "provider_reason": v.provider_reason,
                "graph_opt": v.graph_opt,
                "predicted_bytes": v.predicted_bytes,
                "measured_bytes": v.measured_bytes,
                "measured_run2_bytes": v.measured_run2_bytes,
                "measured_scratch_bytes": v.measured_scratch_bytes,
                "predicted_scratch_bytes": v.predicted_scratch_bytes,
                "weights_held_bytes": v.weights_held_bytes,
                "predicted_weights_bytes": v.analysis.weights.bytes,
                "weights_measured_bytes": v.weights_unpacked_bytes,
                "ratio": v.ratio,
                "tolerance": v.tolerance,
                "passed": v.passed,
                "first_divergence": None
                if v.divergence is None
                else {
                    "node": v.divergence.node,
                    "step": v.divergence.step,
                    "predicted_bytes": v.divergence.predicted_bytes,
                    "measured_bytes": v.divergence.measured_bytes,
                },
                "output_mismatches": list(v.output_mismatches),
                "cuda_outside_arena": _cuda_json(v),
            },
        }
        if gate is not None:
            doc["gate"] = gate.to_json()
        typer.echo(json.dumps(doc, indent=2))
    else:
        rows = [
            ("activation peak (run 1)", v.predicted_bytes, v.measured_bytes),
            *(
                [("CUDA outside arena", None, v.cuda_outside_arena.outside_arena_bytes)]
                if v.cuda_outside_arena is not None
                else []
            ),
            ("  run 2 (memory pattern)", None, v.measured_run2_bytes),
            ("  with kernel scratch", v.predicted_scratch_bytes, v.measured_scratch_bytes),
            ("weights (prepacking off)", v.analysis.weights.bytes, v.weights_unpacked_bytes),
            ("arena held before run 1", None, v.weights_held_bytes),
        ]
        typer.echo(f"graphmem verify: {model}  ({v.provider}: {v.provider_reason}; graph-opt {v.graph_opt})")
        typer.echo(f"  {'':<26} {'predicted':>14} {'measured':>14}")
        for label, p, m in rows:
            ps = "" if p is None else format_bytes(p)
            ms = "" if m is None else format_bytes(m)
            typer.echo(f"  {label:<26} {ps:>14} {ms:>14}")
        typer.echo(f"  ratio predicted/measured: {v.ratio:.4f} (tolerance {v.tolerance:.1%})")
        if v.divergence:
            d = v.divergence
            typer.echo(
                f"  first divergence at step {d.step}, node '{d.node}': predicted "
                f"{format_bytes(d.predicted_bytes)}, measured {format_bytes(d.measured_bytes)}"
            )
        for line in v.output_mismatches:
            typer.echo(f"  output shape mismatch: {line}")
        typer.echo("  prediction: PASS" if v.passed else "  prediction: FAIL")
        if gate is not None:
            typer.echo(f"  budgets: {'ok' if gate.passed else 'FAILED'}")
    if gate is not None and not gate.passed:
        report_failures([f.message for f in gate.failures], doc_on_stdout=as_json)
    raise typer.Exit(EXIT_OK if passed else EXIT_GATE_FAILED)


def _cuda_json(v) -> dict | None:  # type: ignore[no-untyped-def]
    """Device memory a CUDA session holds outside its arena (context, cuBLAS/cuDNN handles)."""
    f = v.cuda_outside_arena
    if f is None:
        return None if v.cuda_problem is None else {"unavailable": v.cuda_problem}
    return {
        "bytes": f.outside_arena_bytes,
        "basis": f.basis,
        "context_included": f.context_included,
        "caveats": list(f.caveats),
    }


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
