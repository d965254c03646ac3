"""Delivering a document: ``--output`` written atomically (never over an input), stdout
otherwise, and failures reported on stderr (and as GitHub Actions annotations when
``GITHUB_ACTIONS`` is set). :func:`finish` is the tail every gating command shares: evaluate the
budgets, render in the requested format, write, report, return the exit code.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from graphmem.errors import UsageError, one_line
from graphmem.gate.budgets import Budgets, apply_gate, evaluate, lookup
from graphmem.tempdirs import signals_held
from graphmem.views.formats import check_format, render_peak

#: Control characters other than newline and tab, and the invisible bidirectional controls.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")

__all__ = ["annotation", "report_failures", "write_atomic", "deliver", "finish"]


def annotation(message: str, *, title: str = "graphmem") -> str:
    """A GitHub Actions ``::error`` workflow command for ``message`` (properly escaped)."""
    data = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    prop = title.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    prop = prop.replace(":", "%3A").replace(",", "%2C")
    return f"::error title={prop}::{data}"


def report_failures(
    messages: Iterable[str], *, doc_on_stdout: bool, kind: Literal["gate", "error"] = "gate"
) -> None:
    """Print each message on stderr; under GitHub Actions also as an ``::error`` annotation.

    Annotations go to stdout (where GitHub documents workflow commands) unless stdout carries a
    json/markdown/csv document that they would corrupt; then they go to stderr.
    """
    messages = list(messages)
    head = "gate failed" if kind == "gate" else "error"
    for m in messages:
        print(f"graphmem: {head}: {one_line(m)}", file=sys.stderr)
    if os.environ.get("GITHUB_ACTIONS"):
        stream = sys.stderr if doc_on_stdout else sys.stdout
        for m in messages:
            print(annotation(m), file=stream)
    sys.stdout.flush()
    sys.stderr.flush()


def write_atomic(
    path: Path, data: str | bytes, *, option: str = "--output", inputs: Iterable[str | os.PathLike[str]] = ()
) -> None:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` via a temporary file in the same
    directory and ``os.replace``.

    A reader never sees a half-written file. A symlink is followed; a device or pipe
    (``/dev/stdout``) is written directly. ``option`` names the flag in messages; a ``path`` that
    is one of ``inputs`` (the models, the configuration read), or a symbolic or hard link to one,
    is refused: a report never replaces what it reports on. Raises :class:`UsageError` when it
    cannot write.
    """
    for source in inputs:
        if _same_file(path, source):
            raise UsageError(
                f"{option} {path}: is an input of this command ('{source}', or a link to it); it is never written over"
            )
    path = Path(os.path.realpath(path))
    if any(path == Path(os.path.realpath(x)) for x in inputs):
        raise UsageError(f"{option} {path}: is an input of this command; it is never written over")
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a directory")
    binary = isinstance(data, bytes)
    if path.exists() and not path.is_file():
        try:
            with _open(path, binary) as fh:
                fh.write(data)
        except OSError as exc:
            raise UsageError(f"{option} {path}: cannot write ({exc.strerror})") from None
        return
    if not path.parent.is_dir():
        raise UsageError(f"{option} {path}: directory '{path.parent}' does not exist")
    try:
        with signals_held():  # a terminating signal right after mkstemp would leave the .tmp file
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot write ({exc.strerror})") from None
    try:
        with _open(fd, binary) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise UsageError(f"{option} {path}: cannot write ({exc.strerror})") from None
    except BaseException:  # Terminated, KeyboardInterrupt: nothing left beside the user's file
        Path(tmp).unlink(missing_ok=True)
        raise


def _open(target: Path | int, binary: bool):
    return open(target, "wb") if binary else open(target, "w", encoding="utf-8", newline="")


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    try:
        return os.path.samefile(a, b)  # follows symbolic links; hard links share the inode
    except (OSError, ValueError):
        return False


def _mode_for(path: Path) -> int:
    """The replaced file's permissions, or what ``open`` would give a new file (0o666 − umask)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def deliver(
    text: str, *, fmt: str, output: Path | None, failures: Iterable[str], inputs: Iterable[str | os.PathLike[str]] = ()
) -> bool:
    """Write ``text`` to ``output`` (atomically; never over one of ``inputs``) or stdout, report
    ``failures``; whether there were any (a gate failed: the CLI raises
    :class:`~graphmem.errors.GateFailed`)."""
    if fmt in ("table", "markdown"):  # names from the file may hold terminal escapes: show them, never run them
        text = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
    if not text.endswith("\n"):
        text += "\n"
    if output is not None:
        write_atomic(output, text, inputs=inputs)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    failures = list(failures)
    report_failures(failures, doc_on_stdout=output is None and fmt != "table")
    return bool(failures)


def finish(
    doc: Mapping[str, Any], *, budgets: Budgets, fmt: str, output: Path | None, table: str,
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> bool:
    """The end of ``graphmem peak``: gate ``doc``, render it as ``fmt``, write it; whether a
    budget failed.

    Parameters
    ----------
    doc: the peak document (:func:`graphmem.analysis.document.peak_json`).
    budgets: from :func:`parse_budgets`; without any budget there is no ``gate`` key.
    fmt: ``table`` (``table`` plus the budget lines), ``json``, ``markdown`` or ``csv``.
    output: write there atomically instead of stdout.
    table: the human-readable text for ``fmt == "table"`` (:func:`graphmem.views.report.peak_table`).

    Raises
    ------
    UsageError: unknown format, unwritable output, FLOP budget without FLOPs (exit 2).
    """
    check_format(fmt)
    if budgets.active:
        result = evaluate(doc, budgets)
        doc = apply_gate(doc, result)
        messages = [_located(doc, f.message) for f in result.failures]
    else:
        messages = []
    return deliver(render_peak(doc, fmt, table=table), fmt=fmt, output=output, failures=messages, inputs=inputs)


def _located(doc: Mapping[str, Any], message: str) -> str:
    path = lookup(doc, ("model", "path"))
    return f"{path}: {message}" if path else message
