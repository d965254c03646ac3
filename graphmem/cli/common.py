"""Shared pieces of the command modules: error handling, option types, ``--dim`` parsing.

Each command lives in a small ``graphmem/cli_*.py`` module and is registered in
``graphmem/cli/__init__.py``; they all use :func:`handled`, the one place errors become exit codes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional, TypeVar

import typer

from graphmem.errors import GraphmemError, UsageError

__all__ = ["handled", "parse_dims", "DimOption", "JsonOption", "ModelArg", "MAX_DIM_VALUE"]

MAX_DIM_VALUE = 1 << 40

F = TypeVar("F", bound=Callable[..., Any])

DimOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--dim",
        "-d",
        help="Bind a symbolic dim: NAME=VALUE (repeatable), e.g. --dim batch=8.",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print a JSON document (schema_version 1).")]
ModelArg = Annotated[Path, typer.Argument(help="The ONNX model file.", show_default=False)]


def handled(fn: F) -> F:
    """Turn a GraphmemError into one line on stderr and its exit code (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except GraphmemError as exc:
            typer.echo(f"graphmem: error: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None

    return wrapper  # type: ignore[return-value]


def parse_dims(items: list[str] | None) -> dict[str, int]:
    """Parse ``NAME=VALUE`` items; raise :class:`UsageError` on anything else."""
    dims: dict[str, int] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise UsageError(f"--dim '{item}': expected NAME=VALUE, e.g. batch=8")
        try:
            number = int(value)
        except ValueError:
            raise UsageError(f"--dim '{item}': '{value}' is not an integer") from None
        if number < 1:
            raise UsageError(f"--dim '{item}': a dim must be a positive integer")
        if number > MAX_DIM_VALUE:
            raise UsageError(f"--dim '{item}': {number} is absurdly large (limit 2**40)")
        dims[name] = number
    return dims
