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
"""

from __future__ import annotations

import importlib
import re
import warnings
from types import ModuleType

from graphmem.errors import RuntimeUnavailableError

__all__ = ["KNOWN_GOOD", "INSTALL_HINT", "RuntimeVersionWarning", "onnxruntime", "version_problem"]

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
    :data:`KNOWN_GOOD`.
    """
    global _checked
    if _checked is not None:
        return _checked
    try:
        ort = importlib.import_module("onnxruntime")
    except ImportError as exc:
        raise RuntimeUnavailableError(f"this command runs onnxruntime, which is not installed ({exc}): {INSTALL_HINT}") from None
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
