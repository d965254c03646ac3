"""``--help`` reads cleanly: no ``<bool>`` after a flag, no line broken before the terminal's edge.

The criterion for a broken line is greedy filling, what a text wrapper does: within one paragraph
(a block of the command's description, or one option's help cell in a panel), a line is broken
too early when the next line's first word would have fit on it. A docstring's hard line break in
the middle of a paragraph shows up exactly so (a line of 60 characters, then ``errors.`` alone).
A region's width is the terminal's (less rich's margins) for the description, and the longest
line of the panel's help column for an option's or a command's help.
"""

from __future__ import annotations

import re

import pytest
from builders import invoke

from graphmem.cli import app

COMMANDS = sorted(info.name or info.callback.__name__ for info in app.registered_commands)  # type: ignore[union-attr]
WIDTHS = (80, 120)

#: typer puts an option's default and "required" in their own items (rich Columns): not text.
_ITEMS = re.compile(r"^\[(default|required)")


def help_text(command: str | None, width: int, monkeypatch: pytest.MonkeyPatch) -> str:
    """``--help`` on a terminal ``width`` columns wide. typer reads TERMINAL_WIDTH once, when its
    rich module is imported (``MAX_WIDTH``), and rich reads COLUMNS when typer makes its console:
    both are set, so that the width holds whatever ran first."""
    from typer import rich_utils

    monkeypatch.setattr(rich_utils, "MAX_WIDTH", width)
    result = invoke(*([command] if command else []), "--help", env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout


def paragraphs(text: str) -> list[tuple[int, list[str]]]:
    """The help's paragraphs as (width, lines), text only, no box drawing: the description's
    blocks outside panels (their width: the terminal's, less rich's margin of one column each
    side) and each option's or command's help cell inside them (the width of the panel's help
    column: its longest line)."""
    out: list[tuple[int, list[str]]] = []
    lines = text.splitlines()
    width = max((len(line) for line in lines), default=0) - 2
    i = 0
    block: list[str] = []
    while i < len(lines):
        line = lines[i]
        if line.startswith("╭"):
            if block:
                out.append((width, block))
                block = []
            panel = []
            i += 1
            while i < len(lines) and not lines[i].startswith("╰"):
                panel.append(lines[i][1:-1])
                i += 1
            cells = _cells(panel)
            column = max((len(line) for cell in cells for line in cell), default=0)
            out.extend((column, cell) for cell in cells)
        elif line.strip() and not line.lstrip().startswith("Usage:"):
            block.append(line.strip())
        elif block:
            out.append((width, block))
            block = []
        i += 1
    if block:
        out.append((width, block))
    return out


def _cells(panel: list[str]) -> list[list[str]]:
    """The help cells of one panel: the help column starts where continuation lines start."""
    starts = [len(s) - len(s.lstrip()) for s in panel if s.strip()]
    x0 = min((x for x in starts if x > 6), default=None)
    if x0 is None:
        return []
    cells: list[list[str]] = []
    for s in panel:
        text = s[x0:].strip()
        new_row = bool(s[:x0].strip())
        if new_row or not cells or _ITEMS.match(text):
            cells.append([])
        if text and not _ITEMS.match(text):
            cells[-1].append(text)
    return [c for c in cells if c]


def early_breaks(text: str) -> list[str]:
    """Lines after which the next line's first word would still have fit (see module doc)."""
    found = []
    for width, block in paragraphs(text):
        for line, nxt in zip(block, block[1:]):
            if len(line) + 1 + len(nxt.split()[0]) <= width:
                found.append(f"{line!r} then {nxt!r}")
    return found


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_has_no_bool_and_no_early_breaks(command: str | None, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    text = help_text(command, width, monkeypatch)
    assert "<bool>" not in text
    assert early_breaks(text) == []
    assert max(len(line) for line in text.splitlines()) == width  # the panels span the terminal


def test_criterion_finds_a_hard_break() -> None:
    # the verify docstring as typer's "rich" mode showed it at 80 columns (a docstring line break
    # after "2 on"): "errors." fits after "2 on" on a line of 76 characters
    shown = (
        " Exit 0 within tolerance (and budgets, --max-*, on the predicted figures), 1    \n"
        " outside, 2 on                                                                  \n"
        " errors.                                                                        \n"
    )
    assert early_breaks(shown) == ["'outside, 2 on' then 'errors.'"]


def test_criterion_reads_help_cells() -> None:
    # an option's help cell with a hard break, and a default in its own item (not text)
    panel = (
        "╭─ Options ──────────────────────────────────────────────╮\n"
        "│ --tolerance   <str>  Allowed |predicted/measured - 1|, │\n"
        "│                      e.g.                              │\n"
        "│                      5%.                               │\n"
        "│                      [default: 5%]                     │\n"
        "│ --seed        <int>  Seed of the random inputs.        │\n"
        "╰────────────────────────────────────────────────────────╯\n"
    )
    assert paragraphs(panel) == [(33, ["Allowed |predicted/measured - 1|,", "e.g.", "5%."]), (33, ["Seed of the random inputs."])]
    assert early_breaks(panel) == ["'e.g.' then '5%.'"]
