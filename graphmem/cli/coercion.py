"""Option values converted without pydantic where typer's conversion is ``str`` or ``Path``.

From 0.28 typer converts every option of the command that runs — given or left at its default,
``--help`` included — through a pydantic ``TypeAdapter`` built for it
(``typer._coercion.build_runtime_param``): the first one imports pydantic (about as long as
``import numpy``), each one costs a schema build. graphmem's options are strings, paths, lists
of strings, flags and a few ints; for the values typer's adapters return unchanged or wrap (a
``str`` option's string, a ``list[str]`` option's strings as a list, a ``Path`` option's string
as a ``Path``, then typer's own path checks; an unconstrained int option's int default)
:func:`light_coercion` gives each parameter a converter that does that directly; any other
value (an int option given on the command line) still goes through typer's adapter, built when
needed, so messages for bad values stay typer's. Typer versions without this machinery
(before 0.28) are left alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args, get_origin

__all__ = ["light_coercion"]


def light_coercion(command: Any) -> Any:
    """Give the parameters of ``command`` (a typer-built click group or command) and of its
    subcommands the direct converters described in the module doc; return ``command``."""
    try:
        from typer._coercion import RuntimeParam, build_runtime_param
        from typer._param_types import coerce_cli_path
    except ImportError:  # typer < 0.28: no pydantic on this path
        return command
    if not _same_machinery(RuntimeParam, coerce_cli_path):  # a later typer changed it: typer's own path
        return command

    class Direct(RuntimeParam):
        """typer's conversion of the values it returns unchanged or wraps, else typer's own."""

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            kind: Any = self.annotation  # a type or a generic alias (list[str]); typer's stubs say otherwise
            info = self.parameter_info
            if kind is str and isinstance(value, str):
                return value  # typer: str(value)
            if get_origin(kind) is list and get_args(kind) == (str,) and isinstance(value, (list, tuple)) \
                    and all(isinstance(v, str) for v in value):
                return list(value)  # typer: [str(v) for v in value]
            if kind is Path and info.path_type is None and isinstance(value, (str, Path)):
                # typer: Path(value), then its checks
                return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
            if kind in (int, float, bool) and type(value) is kind and info.min is None and info.max is None:
                return value
            return build_runtime_param(param.type_descriptor)._coerce_value(value, param, ctx)

    def direct(param: Any) -> Any:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is not None and getattr(param, "_runtime_param", False) is None \
                and descriptor.file_annotation is None and descriptor.parameter_info.parser is None:
            param._runtime_param = Direct(annotation=descriptor.annotation, parameter_info=descriptor.parameter_info)
        return param

    for cmd in (command, *getattr(command, "commands", {}).values()):
        for param in cmd.params:
            direct(param)
        cmd.get_help_option = _then(cmd.get_help_option, direct)  # made on first use, from the context
    return command


def _same_machinery(runtime_param: Any, coerce_cli_path: Any) -> bool:
    """Whether typer's internals are those this module was written against (typer 0.28 to 0.29)."""
    import dataclasses
    import inspect

    try:
        fields = {f.name for f in dataclasses.fields(runtime_param)}
        parameters = set(inspect.signature(coerce_cli_path).parameters)
    except (TypeError, ValueError):
        return False
    return fields == {"parameter_info", "annotation"} and {"path_type", "param", "ctx"} <= parameters \
        and hasattr(runtime_param, "_coerce_value")


def _then(make: Any, direct: Any) -> Any:
    """``make`` (a command's ``get_help_option``) with ``direct`` applied to the option it makes."""

    def get_help_option(ctx: Any) -> Any:
        option = make(ctx)
        return None if option is None else direct(option)

    return get_help_option
