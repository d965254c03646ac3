"""Dim bindings: the one parser of ``--dim NAME=VALUE`` items and the check of a binding against
a model's symbolic input dims. The CLI, ``graphmem check`` configurations and the batch search
all parse with these functions."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from graphmem.errors import UnboundDimError, UnknownDimError, UsageError
from graphmem.model.loading import Model

__all__ = ["MAX_DIM", "INT64_MAX", "parse_dim_value", "split_dim_item", "parse_dims", "check_dims"]

#: Largest value a dim may take; larger ones are rejected as absurd.
MAX_DIM = 1 << 40
INT64_MAX = (1 << 63) - 1


def parse_dim_value(item: str, token: str) -> int:
    """One dim value of the ``--dim`` item ``item``: a positive integer up to :data:`MAX_DIM`."""
    token = token.strip()
    if not re.fullmatch(r"[+-]?[0-9]+", token):
        raise UsageError(f"--dim '{item}': '{token}' is not an integer")
    n = int(token)
    if n > INT64_MAX or n < -INT64_MAX - 1:
        raise UsageError(f"--dim '{item}': {token} overflows int64 (absurdly large; the limit is 2**40)")
    if n < 1:
        raise UsageError(f"--dim '{item}': a dim must be a positive integer")
    if n > MAX_DIM:
        raise UsageError(f"--dim '{item}': {n} is absurdly large (limit 2**40)")
    return n


def split_dim_item(item: str, *, example: str = "batch=8") -> tuple[str, str]:
    """``"NAME=TEXT"`` → (name, text); UsageError when either part is missing."""
    name, sep, text = item.partition("=")
    name, text = name.strip(), text.strip()
    if not sep or not name or not text:
        raise UsageError(f"--dim '{item}': expected NAME=VALUE, e.g. {example}")
    return name, text


def parse_dims(items: Iterable[str] | None) -> dict[str, int]:
    """``["batch=8", "seq=128"]`` → ``{"batch": 8, "seq": 128}``; a dim given twice is an error."""
    dims: dict[str, int] = {}
    for item in items or ():
        name, text = split_dim_item(item)
        if name in dims:
            raise UsageError(f"--dim {name} is given twice")
        dims[name] = parse_dim_value(item, text)
    return dims


def check_dims(model: Model, dims: Mapping[str, int]) -> dict[str, int]:
    """Validate ``--dim`` bindings against the model's symbolic input dims."""
    known = model.symbolic_dims
    for name, value in dims.items():
        if name not in known:
            have = ", ".join(known) if known else "none (all input shapes are fixed)"
            raise UnknownDimError(f"--dim {name}: the model has no dim '{name}'; its dims: {have}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value > MAX_DIM:
            raise UsageError(f"--dim {name}={value}: a dim must be an integer from 1 to {MAX_DIM}")
    missing = [d for d in known if d not in dims]
    if missing:
        hint = " ".join(f"--dim {d}=N" for d in missing)
        raise UnboundDimError(
            f"unbound symbolic dims: {', '.join(missing)} (bind them with {hint}, or ask for formulas "
            "with --symbolic)"
        )
    unnamed = [n for n, t in model.inputs.items() if t.shape is not None and None in t.shape]
    if unnamed:
        raise UnboundDimError(
            f"input '{unnamed[0]}' has a dim with neither a value nor a name; it cannot be bound"
        )
    return {d: dims[d] for d in known}
