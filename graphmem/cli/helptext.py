"""How ``graphmem --help`` and ``graphmem CMD --help`` read.

Two typer habits are undone here, for every command at once:

* typer 0.27 and later print each option's type in its rich help, a flag's too: ``--json <bool>``
  reads as if the flag took a value. A flag gets an empty metavar (``--help`` included, which typer
  makes lazily), so its type column is blank, as click's plain help leaves it.
* The help is rendered as Markdown (``rich_markup_mode="markdown"``, set on the app): a paragraph
  of a docstring or an option's help is re-wrapped to the terminal's width. typer's default
  ("rich") keeps a docstring's hard line breaks after the first paragraph, so a paragraph wrapped
  at 100 columns in the source came out as alternating long and short lines at 80.
"""

from __future__ import annotations

from typing import Any, Final

from typer.core import TyperCommand, TyperGroup

__all__ = ["MARKUP_MODE", "Command", "Group", "blank_flag_types"]

#: typer's ``rich_markup_mode`` for the app (see module doc).
MARKUP_MODE: Final = "markdown"


def blank_flag_types(params: Any) -> None:
    """Give each flag among ``params`` (click parameters) an empty metavar, unless it has one."""
    for p in params:
        if getattr(p, "is_flag", False) and getattr(p, "metavar", "") is None:
            p.metavar = ""


def _blank_help(option: Any) -> Any:
    blank_flag_types([option] if option is not None else [])
    return option


class Command(TyperCommand):
    """A typer command whose flags (``--help`` too) show no type in ``--help``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        blank_flag_types(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        return _blank_help(super().get_help_option(ctx))


class Group(TyperGroup):
    """The typer group (``graphmem``) whose flags (``--help`` too) show no type in ``--help``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        blank_flag_types(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        return _blank_help(super().get_help_option(ctx))
