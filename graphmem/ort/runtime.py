"""The one place graphmem imports onnxruntime, lazily, and checks which one it got.

graphmem's static analysis needs no runtime: only the commands that run a session (``verify``,
``--graph-opt basic|extended|all``, the accuracy scripts) call :func:`onnxruntime`. Either
package provides the module — ``onnxruntime-gpu`` (``pip install 'graphmem[cuda]'``, also runs on
CPU-only machines) or the plain ``onnxruntime`` (``pip install 'graphmem[cpu]'``); never both
(they overwrite each other's files).

The emulation (``graphmem.ort``) is proven against the minor versions in :data:`KNOWN_GOOD`:
``scripts/accuracy.py`` and ``scripts/accuracy_opt.py --level all`` give byte-identical
predicted and measured peaks under onnxruntime-gpu 1.31.1 and onnxruntime 1.32.0. Another
version still runs, with one warning: its allocation planner, kernels or optimizers may differ.

onnxruntime is kept quiet: its log lines never reach the user's terminal. It logs to the
process's stderr (file descriptor 2, below Python): warnings when a model loads ("only
*guarantees* support for models stamped with opset version 7 or above"), an
``[E:onnxruntime:…]`` line before most exceptions, provider fallbacks. graphmem's contract is one
line per failure, its own. So its default logger is set to errors only when it is imported, and
sessions are created and run through :func:`create_session` and :func:`run_session`, which set the
session's logger to errors only and drop whatever onnxruntime still prints (captured at the
descriptor level); failures reach the user through graphmem's message, built from onnxruntime's
exception.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from graphmem.errors import RuntimeUnavailableError

__all__ = [
    "KNOWN_GOOD", "INSTALL_HINT", "RuntimeVersionWarning", "onnxruntime", "version_problem", "ERROR_SEVERITY",
    "quiet_native_stderr", "create_session", "run_session",
]

#: onnxruntime log severities: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal.
ERROR_SEVERITY = 3

#: (major, minor) series the emulation matches byte for byte (see module doc).
KNOWN_GOOD: tuple[tuple[int, int], ...] = ((1, 31), (1, 32))

INSTALL_HINT = "pip install 'graphmem[cpu]' (the onnxruntime package) or 'graphmem[cuda]' (onnxruntime-gpu)"


class RuntimeVersionWarning(UserWarning):
    """The installed onnxruntime is not a version the emulation is proven against."""


_checked: ModuleType | None = None


def onnxruntime() -> ModuleType:
    """The ``onnxruntime`` module, imported on first use.

    Raises :class:`RuntimeUnavailableError` (exit 2) with the install line when no onnxruntime
    is installed; warns once (:class:`RuntimeVersionWarning`) for a version outside
    :data:`KNOWN_GOOD`. (A host that is not x86-64 is named by the analysis of its profile:
    :func:`graphmem.ort.kernels.host_problem`.)
    """
    global _checked
    if _checked is not None:
        return _checked
    try:
        ort = importlib.import_module("onnxruntime")
    except ImportError as exc:
        raise RuntimeUnavailableError(
            f"this command runs onnxruntime, which is not installed ({exc}): {INSTALL_HINT}"
        ) from None
    ort.set_default_logger_severity(ERROR_SEVERITY)
    problem = version_problem(getattr(ort, "__version__", ""))
    if problem:
        warnings.warn(problem, RuntimeVersionWarning, stacklevel=2)
    _checked = ort
    return ort


def version_problem(version: str) -> str | None:
    """Why ``version`` is not a known-good onnxruntime, or None when it is."""
    m = re.match(r"(\d+)\.(\d+)", version)
    if m and (int(m.group(1)), int(m.group(2))) in KNOWN_GOOD:
        return None
    good = " and ".join(f"{a}.{b}.x" for a, b in KNOWN_GOOD)
    return (
        f"onnxruntime {version or '(unknown version)'}: graphmem's emulation is proven against "
        f"{good}; measured and predicted figures may differ"
    )


@contextlib.contextmanager
def quiet_native_stderr() -> Iterator[None]:
    """Send file descriptor 2 to a temporary file while the block runs, then drop it."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all: nothing to protect
        yield
        return
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def create_session(source: str | bytes, options: Any, providers: list[Any]) -> Any:
    """``InferenceSession(source, options, providers)``, logging errors only and quietly; raises
    what onnxruntime raises."""
    ort = onnxruntime()
    options.log_severity_level = max(options.log_severity_level, ERROR_SEVERITY)
    with quiet_native_stderr():
        return ort.InferenceSession(source, options, providers=providers)


def run_session(session: Any, feeds: dict[str, Any], outputs: list[str] | None = None) -> Any:
    """``session.run(outputs, feeds)`` with onnxruntime's own output captured."""
    with quiet_native_stderr():
        return session.run(outputs, feeds)
