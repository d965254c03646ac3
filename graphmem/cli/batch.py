"""``graphmem sweep``, ``graphmem fit`` and ``graphmem devices``: thin typer commands over
:mod:`graphmem.batch.search`, :mod:`graphmem.views.devices` and :mod:`graphmem.views.kvcache`.

The option types below (``DeviceOption``, ``AsDtypeOption``, …) are shared with ``peak``.
Exit codes: 0 success (``fit``: it fits), 1 ``fit`` found nothing that fits / the bound model
does not fit, 2 usage or input error. ``fit --train`` measures the training step peak instead of
the inference total (:func:`graphmem.batch.search.search_largest_training`), with the same exit codes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from graphmem.cli.common import (
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
from graphmem.errors import GateFailed

if TYPE_CHECKING:
    from graphmem.batch.search import TrainingFit

__all__ = [
    "register",
    "sweep_command",
    "fit_command",
    "devices_command",
    "AsDtypeOption",
    "DeviceOption",
    "DeviceSpecOption",
    "DevicesFileOption",
    "MemoryOption",
    "OverheadOption",
]

SweepDimOption = Annotated[
    list[str] | None,
    typer.Option(
        "--dim", "-d", show_default=False,
        help="NAME=VALUE, or for the one swept dim NAME=V1,V2,… or LO..HI[:STEP|:xFACTOR] "
        "(repeatable), e.g. --dim batch=1,2,4,8 --dim seq=128.",
    ),
]
FitDimOption = Annotated[
    list[str] | None,
    typer.Option("--dim", "-d", show_default=False,
                 help="Bind a dim: NAME=VALUE (repeatable). All bound and no --solve: a gate."),
]
AsDtypeOption = Annotated[
    str | None,
    typer.Option("--as-dtype", show_default=False,
                 help="What-if: size every floating tensor, weights included, as this dtype "
                 "(float16, bfloat16, int8, …)."),
]
DeviceOption = Annotated[
    str | None,
    typer.Option("--device", show_default=False,
                 help="An accelerator from `graphmem devices` (or --devices-file/--device-spec)."),
]
DeviceSpecOption = Annotated[
    str | None,
    typer.Option("--device-spec", show_default=False,
                 help='A device of your own: "memory=24GiB,fp16=165T,bandwidth=1T" '
                 "(keys: name memory fp32 tf32 fp16 bf16 fp8 int8 bandwidth)."),
]
DevicesFileOption = Annotated[
    Path | None,
    typer.Option("--devices-file", show_default=False,
                 help="TOML file of more devices, one devices.NAME table each."),
]
MemoryOption = Annotated[
    str | None,
    typer.Option("--memory", show_default=False,
                 help="Memory budget, e.g. 24GiB (binary) or 24GB (decimal); with --device it "
                 "replaces the device's memory (needed for --device host)."),
]
OverheadOption = Annotated[
    str,
    typer.Option("--overhead",
                 help="Memory reserved outside the model (CUDA context, workspace), e.g. 500MiB."),
]
TrainOption = Annotated[
    bool,
    typer.Option("--train",
                 help="Fit one training step: compare the step peak (largest of forward, "
                 "backward, optimizer step; see `graphmem train`) with the budget."),
]
OptimizerOption = Annotated[
    str | None,
    typer.Option("--optimizer", show_default=False,
                 help="With --train: sgd | momentum | adam | adamw (default adam)."),
]
GradsOption = Annotated[
    str | None,
    typer.Option("--grads", show_default=False,
                 help="With --train: released (zero_grad(), default) | persistent."),
]
PrecisionOption = Annotated[
    str | None,
    typer.Option("--precision", show_default=False,
                 help="With --train: fp32 (default) | mixed-fp16 | mixed-bf16."),
]
FrozenOption = Annotated[
    list[str] | None,
    typer.Option("--frozen", show_default=False,
                 help="With --train: freeze parameters matching this fnmatch pattern "
                 "(repeatable)."),
]
ForeachOption = Annotated[
    bool,
    typer.Option("--foreach", help="With --train: optimizer with foreach=True (CUDA default)."),
]
ByOption = Annotated[
    str | None,
    typer.Option("--by", show_default=False,
                 help="The figure compared with the memory: resident (default: the process's predicted "
                 "growth, session.resident_bytes), arena (the CPU arena held in steady state) or requested "
                 "(total_bytes: weights + activation peak + inputs)."),
]
GraphOptOption = Annotated[
    str,
    typer.Option("--graph-opt",
                 help="none, basic, extended or all: analyse the graph onnxruntime runs at that level. none is "
                 "graphmem's static default; onnxruntime's own default is all (ORT_ENABLE_ALL), whose figures "
                 "are shown beside when onnxruntime is installed."),
]
SolveOption = Annotated[
    str | None,
    typer.Option("--solve", show_default=False,
                 help="The dim to solve for: the largest value that fits (default: the one "
                 "dim left unbound, if exactly one)."),
]


@handled
def sweep_command(
    model: ModelArg,
    dim: SweepDimOption = None,
    shape: ShapeOption = None,
    value: ValueOption = None,
    as_json: JsonOption = False,
    as_dtype: AsDtypeOption = None,
    host: HostOption = None,
    session_option: SessionOptionOption = None,
    graph_opt: GraphOptOption = "none",
) -> None:
    """Memory at each value of one dim: requested and resident side by side, a fitted requested
    total ≈ fixed + per_unit × dim, and the steps of the held figures (the arena grows by
    power-of-two regions: no line is fitted through them).

    --shape/--value apply to every row; the swept dim must not be a dim of an input they fix.
    """
    from graphmem.batch.report import sweep_json, sweep_table
    from graphmem.batch.search import parse_sweep_dims, sweep

    spec = parse_sweep_dims(dim)
    result = sweep(model, spec, bindings=parse_bindings(None, shape, value), as_dtype=as_dtype, host=host_of(host),
                   graph_opt=_level(graph_opt), session_options=tuple(session_option or ()))
    typer.echo(json.dumps(sweep_json(result), indent=2) if as_json else sweep_table(result))


@handled
def fit_command(
    model: ModelArg,
    device: DeviceOption = None,
    memory: MemoryOption = None,
    dim: FitDimOption = None,
    shape: ShapeOption = None,
    value: ValueOption = None,
    solve: SolveOption = None,
    overhead: OverheadOption = "0",
    device_spec: DeviceSpecOption = None,
    devices_file: DevicesFileOption = None,
    as_dtype: AsDtypeOption = None,
    as_json: JsonOption = False,
    train: TrainOption = False,
    optimizer: OptimizerOption = None,
    grads: GradsOption = None,
    precision: PrecisionOption = None,
    frozen: FrozenOption = None,
    foreach: ForeachOption = False,
    host: HostOption = None,
    by: ByOption = None,
    session_option: SessionOptionOption = None,
    graph_opt: GraphOptOption = "none",
) -> None:
    """Largest value of a dim whose predicted resident memory (--by) + --overhead fits a memory
    budget, or whether a fully bound model fits.

    Exact search on real analyses, never extrapolated: resident is a step function of the dim
    (power-of-two arena regions), so values are analysed, not fitted. The output names the
    figure used. With --train, of one training step. Exit 0 fits, 1 does not (or nothing fits).
    """
    from graphmem.analysis.dims import check_dims, open_dims
    from graphmem.analysis.request import Bindings
    from graphmem.batch.report import fit_json, fit_table
    from graphmem.batch.search import (
        check_fit_training,
        check_held,
        genai_past_buffer,
        parse_bound_dims,
        search_held,
        search_largest_training,
        training_config,
    )
    from graphmem.errors import UnboundDimError, UsageError
    from graphmem.model.loading import load_model
    from graphmem.units import parse_bytes
    from graphmem.views.devices import resolve_device

    given = [name for name, value in (("--optimizer", optimizer), ("--grads", grads),
                                      ("--precision", precision), ("--frozen", frozen),
                                      ("--foreach", foreach or None)) if value is not None]
    config = None
    if train:
        if as_dtype is not None:
            raise UsageError("--as-dtype does not apply with --train: use --precision "
                             "mixed-fp16 or mixed-bf16")
        config = training_config(
            optimizer="adam" if optimizer is None else optimizer,
            grads="released" if grads is None else grads,
            precision="fp32" if precision is None else precision,
            frozen=tuple(frozen or ()), foreach=foreach,
        )
    elif given:
        raise UsageError(f"{', '.join(given)} need{'s' if len(given) == 1 else ''} --train")
    if train and (by is not None or session_option or graph_opt != "none"):
        raise UsageError("--by, --session-option and --graph-opt are about an onnxruntime session; "
                         "--train measures the PyTorch training step")
    from graphmem.batch import held as held_fit

    by = held_fit.check_by("resident" if by is None else by)
    level = _level(graph_opt)
    if by == "requested" and session_option:
        raise UsageError("--session-option changes what the session holds: it needs --by resident or arena")
    session: dict[str, Any] = {"by": by, "session_options": tuple(session_option or ()), "graph_opt": level}
    dev = resolve_device(device, spec=device_spec, devices_file=devices_file, memory=memory)
    if dev is None:
        raise UsageError("fit needs a budget: --device NAME or --memory SIZE (e.g. 24GiB)")
    if dev.memory_bytes is None:
        raise UsageError(f"device '{dev.name}' has no fixed memory: give --memory SIZE")
    overhead_bytes = parse_bytes(overhead)
    profile = host_of(host)
    dims = parse_bound_dims(dim)
    inputs = parse_bindings(None, shape, value)
    m = load_model(model)
    buffer = genai_past_buffer(model)
    if buffer is not None and solve != "past_sequence_length" \
            and "past_sequence_length" in open_dims(m.inputs, dims=dims, shapes=inputs.shapes, values=inputs.values):
        dims["past_sequence_length"] = buffer
        typer.echo(f"graphmem: genai_config.json beside the model: past_present_share_buffer, so the past "
                   f"inputs are onnxruntime-genai's buffer of max_length {buffer} "
                   f"(--dim past_sequence_length={buffer})", err=True)
    if any(n not in m.symbolic_dims for n in dims):
        check_dims(m, dims)  # raises UnknownDimError naming the model's dims
    if solve is None:
        unbound = open_dims(m.inputs, dims=dims, shapes=inputs.shapes, values=inputs.values)
        if len(unbound) > 1:
            raise UnboundDimError(
                f"unbound dims {', '.join(unbound)}: bind all but one with --dim and name "
                "that one with --solve"
            )
        solve = unbound[0] if unbound else None
    bindings = Bindings.of(dims=dims, shapes=inputs.shapes, values=inputs.values)
    shown: dict[str, Any] = {"device": dev if device or device_spec else None}  # fit_json's and fit_table's keywords
    if solve is None:
        if config is not None:
            check = check_fit_training(m, bindings=bindings, budget_bytes=dev.memory_bytes,
                                       overhead_bytes=overhead_bytes, config=config, host=profile)
        else:
            check = check_held(m, bindings=bindings, budget_bytes=dev.memory_bytes,
                               overhead_bytes=overhead_bytes, as_dtype=as_dtype, host=profile, **session)
            shown["default_level"] = _offer(m.path, level, bindings, as_dtype, session,
                                            profile if host is not None else None)
        _warn(check.training)
        _emit(fit_json(check, **shown) if as_json else fit_table(check, **shown), as_json)
        if not check.fits:
            raise GateFailed()
        return
    if config is not None:
        found = search_largest_training(m, solve=solve, bindings=bindings, budget_bytes=dev.memory_bytes,
                                        overhead_bytes=overhead_bytes, config=config, host=profile)
    else:
        found = search_held(m, solve=solve, bindings=bindings, budget_bytes=dev.memory_bytes,
                            overhead_bytes=overhead_bytes, as_dtype=as_dtype, host=profile, **session)
        if found.largest:
            shown["default_level"] = _offer(m.path, level, bindings.bind({solve: found.largest}), as_dtype,
                                            session, profile if host is not None else None)
    _warn(found.training)
    _emit(fit_json(found, **shown) if as_json else fit_table(found, path=m.path, **shown),
          as_json)
    if found.largest == 0:
        raise GateFailed()


def _level(graph_opt: str) -> str:
    from graphmem.errors import UsageError

    level = graph_opt.strip().lower()
    if level not in ("none", "basic", "extended", "all"):
        raise UsageError(f"--graph-opt {graph_opt}: expected none, basic, extended or all")
    return level


def _offer(path: str, level: str, bindings: Any, as_dtype: str | None, session: dict[str, Any], host: Any) -> Any:
    """The figures at onnxruntime's default level (``all``) beside an answer at ``none``, when
    onnxruntime is installed (None otherwise, or when the user chose a level; ``host``: the --host
    profile, None for this machine)."""
    if level != "none":
        return None
    from graphmem.analysis.levels import default_level_figures

    return default_level_figures(path, bindings=bindings, as_dtype=as_dtype,
                                 session_options=session["session_options"], host=host)


def _warn(training: TrainingFit | None) -> None:
    """The training estimate's warnings on stderr (as ``graphmem train`` prints them)."""
    for warning in training.warnings if training is not None else ():
        typer.echo(f"graphmem: warning: {warning}", err=True)


def _emit(doc: object, as_json: bool) -> None:
    typer.echo(json.dumps(doc, indent=2) if as_json else str(doc))


@handled
def devices_command(
    as_json: JsonOption = False,
    devices_file: DevicesFileOption = None,
    device_spec: DeviceSpecOption = None,
) -> None:
    """The accelerator catalog: memory, peak dense rates per precision, bandwidth, sources."""
    from graphmem.views.devices import catalog, devices_json, devices_table, load_devices_file, parse_device_spec

    extra = list(load_devices_file(devices_file)) if devices_file is not None else []
    if device_spec is not None:
        extra.append(parse_device_spec(device_spec))
    rows = catalog(extra)
    typer.echo(json.dumps(devices_json(rows), indent=2) if as_json else devices_table(rows))


def register(app: typer.Typer) -> None:
    """Add ``sweep``, ``fit`` and ``devices`` to the graphmem app."""
    app.command("sweep")(sweep_command)
    app.command("fit")(fit_command)
    app.command("devices")(devices_command)
