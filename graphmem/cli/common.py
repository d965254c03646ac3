"""Shared pieces of the command modules: error handling (the one error → exit-code map), option
types, and the one parser of ``--dim``, ``--shape`` and ``--value`` (:mod:`graphmem.analysis.dims`:
:func:`parse_bindings` gives the :class:`~graphmem.analysis.request.Bindings` every analysis takes).

Each command group lives in a small ``graphmem/cli/*.py`` module and is registered in
``graphmem/cli/__init__.py``; they all use :func:`handled`, the one place errors become exit codes.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ParamSpec, TypeVar

import typer

from graphmem.errors import EXIT_INPUT_ERROR, GraphmemError, Reported, one_line
from graphmem.ort.runtime import RuntimeVersionWarning
from graphmem.tempdirs import TERMINATING_SIGNALS, deliver

__all__ = [
    "SessionOptionOption",
    "handled", "fail", "internal_error", "parse_dims", "parse_bindings", "DimOption", "ShapeOption", "ValueOption",
    "JsonOption", "ModelArg", "PlotOption", "terminating_signals", "HostOption", "host_of",
]

if TYPE_CHECKING:
    from graphmem.analysis.request import Bindings
    from graphmem.host import HostProfile

P = ParamSpec("P")
R = TypeVar("R")

_PYTHON_SHOWWARNING = warnings.showwarning

DimOption = Annotated[
    list[str] | None,
    typer.Option(
        "--dim",
        "-d",
        help="Bind a symbolic dim: NAME=VALUE (repeatable), e.g. --dim batch=8. A value of 0 is an empty "
        "tensor (an empty KV-cache past), sized as onnxruntime runs it (0 bytes); a node that cannot "
        "take it is named as the cause of the tensors left without a size.",
        show_default=False,
    ),
]
ShapeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--shape",
        help="Set an input's whole shape: INPUT=D0xD1x... (repeatable), e.g. --shape x=1x3x48x192; "
        "overrides named, unnamed, -1 and shared-name dims; a sequence input's elements: s=[4x100,2x100]; "
        "an optional input: what it holds, or o=none.",
        show_default=False,
    ),
]
ValueOption = Annotated[
    list[str] | None,
    typer.Option(
        "--value",
        help="Values of a small input: INPUT=V[,V...] (repeatable), e.g. --value sr=16000, --value speed=1.0 "
        "(numbers only for a float input); "
        "used by shape inference and by verify's feeds.",
        show_default=False,
    ),
]
SessionOptionOption = Annotated[
    list[str] | None,
    typer.Option(
        "--session-option",
        help="An onnxruntime session option the session figures assume: KEY=VALUE (repeatable, onnxruntime's "
        "names), e.g. --session-option enable_mem_pattern=0, session.disable_prepacking=1, "
        "arena_extend_strategy=kSameAsRequested, intra_op_num_threads=1; with --provider cuda also "
        "gpu_mem_limit, cudnn_conv_algo_search, cudnn_conv_use_max_workspace. Unset: onnxruntime's defaults.",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print a JSON document (schema_version 1).")]
ModelArg = Annotated[Path, typer.Argument(help="The ONNX model file.", show_default=False)]
PlotOption = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        help="Also draw the memory timeline into FILE (.png or .svg, written atomically; needs "
        "matplotlib: pip install 'graphmem[plot]'); says where it wrote on stderr.",
        show_default=False,
    ),
]


def parse_dims(items: list[str] | None) -> dict[str, int]:
    """:func:`graphmem.analysis.dims.parse_dims` (imported when a command parses, not at start-up)."""
    from graphmem.analysis.dims import parse_dims as parse

    return parse(items)


def parse_bindings(dim: list[str] | None, shape: list[str] | None = None, value: list[str] | None = None) -> Bindings:
    """``--dim``, ``--shape`` and ``--value`` items as one :class:`Bindings`, checked for form
    (the analysis package is imported when a command parses, not at start-up)."""
    from graphmem.analysis.request import Bindings

    return Bindings.parse(dim, shape, value)


HostOption = Annotated[
    Path | None,
    typer.Option(
        "--host",
        metavar="FILE",
        help="Predict for the machine this profile describes (JSON written by `graphmem host --json`, "
        "or TOML with its keys): CPU flags, caches and threads decide some kernels' buffers. "
        "Default: this machine (or the profile $GRAPHMEM_HOST names).",
        show_default=False,
    ),
]


def host_of(option: Path | None) -> HostProfile:
    """The host profile a command passes down, read once here at the edge: the ``--host`` file,
    else this machine (:func:`graphmem.host.this_host`)."""
    from graphmem.host import resolve_host

    return resolve_host(option)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """graphmem's own warnings (an onnxruntime version the emulation is not proven against, an
    absent external-data file) as one ``graphmem: warning:`` line on stderr; others as Python
    shows them."""
    from graphmem.model.validate import ExternalDataWarning  # loaded by then: onnx is not a start-up import

    if issubclass(category, (RuntimeVersionWarning, ExternalDataWarning)):
        typer.echo(f"graphmem: warning: {message}", err=True)
    else:
        _PYTHON_SHOWWARNING(message, category, filename, lineno, file, line)


def handled(fn: Callable[P, R]) -> Callable[P, R]:
    """The one map from outcomes to exit codes: a GraphmemError becomes one line on stderr and
    its exit code (no traceback); a :class:`~graphmem.errors.Reported` outcome (a failed gate:
    1), whose report is written already, its exit code alone."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            with warnings.catch_warnings():
                warnings.showwarning = _show_warning
                return fn(*args, **kwargs)
        except GraphmemError as exc:
            raise typer.Exit(fail(str(exc), exc.exit_code)) from None
        except Reported as exc:
            raise typer.Exit(exc.exit_code) from None

    return wrapper


@contextlib.contextmanager
def terminating_signals() -> Iterator[None]:
    """While inside, SIGTERM, SIGINT and SIGHUP raise :class:`Terminated` where the program is, so
    that its temporary folders are removed as the stack unwinds (a signal's default action ends the
    process on the spot); a second signal during that unwinding is ignored. Forked workers (``check
    --jobs``) inherit the handlers. Python runs a handler between bytecodes: a signal that arrives
    inside onnxruntime's C++ (a session being built or run) takes effect when that call returns.
    Outside the main thread (where handlers cannot be set) this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def handler(signum: int, frame: object) -> None:
        if not received:
            received.append(signum)
            deliver(signum)  # raises Terminated, or at the end of a signals_held section

    previous = {s: signal.signal(s, handler) for s in TERMINATING_SIGNALS}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def fail(message: str, code: int = EXIT_INPUT_ERROR) -> int:
    """Print ``graphmem: error: MESSAGE`` as one line (control characters escaped) and return ``code``."""
    typer.echo(f"graphmem: error: {one_line(message)}", err=True)
    return code


def internal_error(exc: BaseException) -> str:
    """One line naming a bug: the exception and the innermost graphmem frame it was raised in."""
    import traceback

    where = ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = frame.filename.replace(os.sep, "/")
        if "/graphmem/" in path:
            where = f" at {path[path.rindex('/graphmem/') + 1 :]}:{frame.lineno} in {frame.name}"
            break
    text = str(exc).strip().splitlines()
    detail = text[0][:200] if text else ""
    return f"internal error: {type(exc).__name__}{where}: {detail} (a bug in graphmem: please report it)"
