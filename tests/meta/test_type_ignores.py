"""``type: ignore`` in package code only where a third-party stub lacks a name, each one saying so.

mypy (``.ci/run``, ``warn_unused_ignores``) removes the ignores that silence nothing; this test
keeps the ones that do silence something few and explained: each names its error code and has a
reason, after it on the same line or in a comment on the line above (``onnx's defs.pyi``,
``typeshed's ChainMap``). A wrong type of graphmem's own is fixed, not ignored."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "graphmem"
IGNORE = re.compile(r"#\s*type:\s*ignore(\[[^\]]*\])?(.*)$")


def _ignores() -> list[tuple[str, int, str, str, str]]:
    """(file, line number, codes, what follows the ignore on its line, the line above)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            m = IGNORE.search(line)
            if m:
                above = lines[i - 1].strip() if i else ""
                found.append((str(path.relative_to(PACKAGE.parent)), i + 1, m[1] or "", m[2], above))
    return found


def test_every_type_ignore_names_its_code_and_why() -> None:
    bad = [
        f"{path}:{n}"
        for path, n, codes, after, above in _ignores()
        if not codes or not (after.strip().startswith("#") or above.startswith("#"))
    ]
    assert not bad, "a type: ignore without [code] and a reason beside it: " + ", ".join(bad)


def test_type_ignores_stay_few() -> None:
    # 11 at the time of writing: 9 names onnx's defs.pyi lacks, 2 ChainMaps over read-only maps
    # (typeshed wants MutableMappings). Raise the bound only for another third-party stub gap.
    found = _ignores()
    assert len(found) <= 12, "\n".join(f"{p}:{n}" for p, n, *_ in found)
