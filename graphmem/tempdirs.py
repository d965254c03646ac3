"""Private temporary folders that a terminating signal cannot leave behind.

``tempfile.TemporaryDirectory`` creates its folder in ``__init__`` and removes it in ``__exit__``: a
signal whose handler raises (:func:`graphmem.cli.common.terminating_signals`) between the folder's
creation and the ``with`` block's start, or in the middle of the removal, leaves the folder behind
(seen under load: ``verify`` signalled just as it made ``graphmem-measure-*``). Here the creation
and the removal are sections in which the handler only records the signal (:func:`deliver`); it
is raised when the section ends, once the folder is registered for removal or gone. (Blocking the
signal with ``pthread_sigmask`` is not enough: a process-directed signal goes to another thread —
onnxruntime's pools — whose Python-level handler still runs in the main thread at once.)
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

from graphmem.errors import Terminated

__all__ = ["TERMINATING_SIGNALS", "deliver", "private_dir", "signals_held"]

#: The signals that end graphmem cleanly (:class:`graphmem.errors.Terminated`).
TERMINATING_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, n))


class _Hold:
    """How deep the program is in :func:`signals_held` sections, and the signal held meanwhile."""

    depth = 0
    pending: int | None = None


def deliver(signum: int) -> None:
    """What a terminating signal's handler does: raise :class:`Terminated` where the program is,
    or, inside a :func:`signals_held` section, record it for the section's end."""
    if _Hold.depth:
        _Hold.pending = signum
        return
    raise Terminated(signum)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """A section that a terminating signal does not interrupt: it is raised when the section ends."""
    _Hold.depth += 1
    try:
        yield
    finally:
        _Hold.depth -= 1
        if _Hold.depth == 0 and _Hold.pending is not None:
            signum, _Hold.pending = _Hold.pending, None
            raise Terminated(signum)


@contextlib.contextmanager
def private_dir(prefix: str) -> Iterator[Path]:
    """A new private folder in the system's temporary directory, removed when the block ends,
    however it ends (an exception, :class:`graphmem.errors.Terminated`)."""
    path: str | None = None
    try:
        with signals_held():
            path = tempfile.mkdtemp(prefix=prefix)
        yield Path(path)
    finally:
        if path is not None:
            with signals_held():
                shutil.rmtree(path, ignore_errors=True)
