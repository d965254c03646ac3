"""Byte and count units: binary units (KiB, MiB, GiB) in tables, exact integers in JSON.

Budgets and memory sizes are parsed in both systems: "2GiB" is 2·2³⁰ bytes, "2GB" is 2·10⁹.
Plain counts ("25M", "4G") use decimal SI prefixes.
"""

from __future__ import annotations

import re
from fractions import Fraction

from graphmem.errors import UsageError

__all__ = ["format_bytes", "format_count", "parse_bytes", "parse_count", "byte_table", "short_bytes", "short_count"]

_BINARY = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))
_BYTE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
    "k": 1 << 10,
    "m": 1 << 20,
    "g": 1 << 30,
    "t": 1 << 40,
}
_COUNT_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "b": 10**9, "t": 10**12, "p": 10**15}
INT64_MAX = (1 << 63) - 1
_NUMBER = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*$")


def format_bytes(n: int | None) -> str:
    """``1536`` → ``"1.50 KiB"``; below 1 KiB, plain bytes; None → ``"unknown"``."""
    if n is None:
        return "unknown"
    for unit, size in _BINARY:
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def format_count(n: int | None) -> str:
    """``1_234_567`` → ``"1.23 M"`` (decimal prefixes, for params and FLOPs)."""
    if n is None:
        return "unknown"
    for unit, size in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return str(n)


def byte_table(rows: list[tuple[str, int, str]], *, width: int = 18) -> list[str]:
    """Aligned table lines: label, size in binary units, exact bytes, note (header first)."""
    lines = [f"  {'':<{width}} {'size':>12} {'bytes':>16}  note"]
    for label, n, note in rows:
        lines.append(f"  {label:<{width}} {format_bytes(n):>12} {n:>16,}  {note}".rstrip())
    return lines


def parse_bytes(text: str) -> int:
    """Parse "512MiB", "1.5GB", "4096" into bytes; bare K/M/G/T are binary (as memory sizes)."""
    return _parse(text, _BYTE_UNITS, "a byte size such as 512MiB, 1.5GB or 4096")


def parse_count(text: str) -> int:
    """Parse "25M", "4G", "1.2k", "1000" into an integer count (decimal prefixes)."""
    return _parse(text, _COUNT_UNITS, "a count such as 25M, 4G or 1000")


def _parse(text: str, units: dict[str, int], what: str) -> int:
    m = _NUMBER.match(text)
    if not m or m.group(2).lower() not in units:
        raise UsageError(f"'{text}' is not {what}")
    value = round(Fraction(m.group(1)) * units[m.group(2).lower()])  # exact: no float overflow
    if value > INT64_MAX:
        raise UsageError(f"'{text}' is absurdly large (more than 2**63 - 1)")
    return value


_BINARY_UNITS = tuple(("B KiB MiB GiB TiB PiB".split()[i], 1 << (10 * i)) for i in range(6))
_DECIMAL_UNITS = tuple((("", "k", "M", "G", "T", "P")[i], 10 ** (3 * i)) for i in range(6))


def short_bytes(n: int) -> str:
    """Three significant digits, binary units: 12897484 → "12.3 MiB", 10485760 → "10 MiB"."""
    return _short(n, _BINARY_UNITS, sep=" ")


def short_count(n: int) -> str:
    """Three significant digits, decimal prefixes: ``26_100_000`` → ``"26.1M"``."""
    return _short(n, _DECIMAL_UNITS, sep="")


def _short(n: int, units: tuple[tuple[str, int], ...], *, sep: str) -> str:
    if abs(n) < units[1][1]:
        return f"{n}{sep}{units[0][0]}".rstrip()
    i = max(i for i, (_, size) in enumerate(units) if abs(n) >= size)
    value = n / units[i][1]
    if abs(value) >= 999.5 and i + 1 < len(units):
        i += 1
        value = n / units[i][1]
    return f"{value:.3g}{sep}{units[i][0]}"
