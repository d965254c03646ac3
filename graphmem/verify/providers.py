"""Choose and configure the onnxruntime execution provider used for measurement.

onnxruntime-gpu advertises ``CUDAExecutionProvider`` in
``get_available_providers()`` whenever the CUDA provider library was *built*,
even on machines without a GPU, driver, cuBLAS or cuDNN.  Asking for it then
logs an error and silently falls back to CPU -- even when CUDA is the only
provider requested.  A measurement that believes it ran on CUDA while it ran on
CPU is worse than no measurement, so "usable" here means: a probe session
really got the CUDA provider (``session.get_providers()``).

onnxruntime is imported lazily inside functions so that importing graphmem
never loads the (large) runtime.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

from graphmem.errors import RuntimeUnavailableError, UsageError
from graphmem.ort.options import GRAPH_OPT_LEVELS, session_options  # noqa: F401  (re-exported: verify measures with them)

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"

REQUESTS = ("auto", "cpu", "cuda")

# The CUDA provider's options are the user's (``--session-option``, graphmem.analysis.cuda_held.CudaOptions):
# a measurement runs the session the user would run. Earlier versions forced kSameAsRequested
# (to keep arena_held near the requests) and HEURISTIC; the session block now predicts the arena
# as onnxruntime's defaults (kNextPowerOfTwo, EXHAUSTIVE) or the user's options grow it.

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderChoice:
    """The execution provider a measurement will use, and why."""

    name: str  # onnxruntime provider name, e.g. "CPUExecutionProvider"
    reason: str  # one human-readable line


def provider_options(name: str, user: Mapping[str, str] | None = None) -> dict[str, str]:
    """The provider options a measurement session of ``name`` gets: the user's (``user``, CUDA
    only: ``arena_extend_strategy``, ``gpu_mem_limit``, ``cudnn_conv_algo_search``, …), else
    onnxruntime's defaults (no option). The CPU provider takes none (its arena's options are an
    environment arena's, :mod:`graphmem.ort.held.options`).
    """
    if name == CUDA:
        return {str(k): str(v) for k, v in (user or {}).items()}
    if name == CPU:
        return {}
    raise UsageError(f"unknown execution provider {name!r}; expected {CPU!r} or {CUDA!r}")


def session_providers(name: str, user: Mapping[str, str] | None = None) -> list[tuple[str, dict[str, str]]]:
    """The ``providers=`` list for an InferenceSession whose main provider is ``name`` (``user``:
    the CUDA provider's options, :func:`provider_options`).

    CUDA sessions keep CPU as second provider: ORT places shape
    computations and unsupported ops there, as it would in production.
    """
    if name == CUDA:
        return [(CUDA, provider_options(CUDA, user)), (CPU, provider_options(CPU))]
    return [(name, provider_options(name))]


def choose_provider(requested: str) -> ProviderChoice:
    """Resolve "auto" | "cpu" | "cuda" to a provider onnxruntime can really use.

    "auto" picks CUDA only when a probe session actually obtains it, else CPU
    with the reason CUDA was rejected.  "cuda" raises RuntimeUnavailableError
    with a one-line reason when CUDA is unusable.
    """
    if requested not in REQUESTS:
        raise UsageError(f"unknown provider request {requested!r}; expected one of {', '.join(REQUESTS)}")
    if requested == "cpu":
        return ProviderChoice(name=CPU, reason="CPU requested")
    problem = cuda_problem()
    if problem is None:
        return ProviderChoice(name=CUDA, reason=f"CUDA requested ({requested}) and a probe session obtained it")
    if requested == "cuda":
        raise RuntimeUnavailableError(f"CUDA requested but onnxruntime cannot use it: {problem}")
    return ProviderChoice(name=CPU, reason=f"CUDA unusable, using CPU: {problem}")


@functools.cache
def cuda_problem() -> str | None:
    """Why onnxruntime cannot run on CUDA in this process, or None if it can.

    Cached: the answer does not change within a process and the probe costs
    a session (a few ms when CUDA fails, a CUDA context when it works).

    Cheaper checks were considered and rejected as unreliable:
    ``get_available_providers()`` and ``get_device() == "GPU"`` only describe the
    build; ``preload_dlls()`` only loads libraries and reports nothing; a
    ``cudaGetDeviceCount`` through libcudart can find a GPU while ORT still fails
    on a missing cuBLAS/cuDNN.  Only a probe session answers the real question.
    """
    from graphmem.ort.runtime import onnxruntime as _runtime

    ort = _runtime()

    if CUDA not in ort.get_available_providers():
        return "this onnxruntime build has no CUDA execution provider"
    providers, log = _probe_cuda_session()
    if providers and providers[0] == CUDA:
        return None
    return _first_error_line(log) or f"the probe session fell back to {providers}"


def _probe_cuda_session() -> tuple[list[str], str]:
    """Create a one-node session asking for CUDA; return its providers and ORT's log.

    ORT reports a failed CUDA load only on stderr (file descriptor 2, from C++),
    so fd 2 is redirected into a temporary file for the duration of the probe:
    the message becomes our reason instead of red noise on the user's terminal.
    """
    from graphmem.ort.runtime import onnxruntime as _runtime

    ort = _runtime()

    model = _probe_model_bytes()
    options = ort.SessionOptions()
    with tempfile.TemporaryFile() as captured:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(captured.fileno(), 2)
            try:
                session = ort.InferenceSession(model, options, providers=session_providers(CUDA))
                providers = list(session.get_providers())
            except Exception as exc:  # noqa: BLE001 - onnxruntime raises bare Exception subclasses
                providers = []
                os.write(2, f"[E:graphmem probe] {exc}\n".encode())
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        log = captured.read().decode("utf-8", errors="replace")
    return providers, log


def _probe_model_bytes() -> bytes:
    """A serialized one-Identity model, the cheapest thing a session can load."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "probe", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def _first_error_line(log: str) -> str | None:
    """The essential part of the first error line of an ORT log, or None.

    ORT lines look like ``[E:onnxruntime:Default, file.cc:12 fn] ... : FAIL : msg``;
    the text after the last status code is what a human needs.
    """
    for raw in log.splitlines():
        line = _ANSI.sub("", raw).strip()
        if "[E:" not in line:
            continue
        for marker in (" : FAIL : ", " : RUNTIME_EXCEPTION : ", " : INVALID_ARGUMENT : "):
            if marker in line:
                return _shorten_paths(line.rsplit(marker, 1)[1].strip())
        return _shorten_paths(line.split("] ", 1)[-1].strip())
    return None


def _shorten_paths(text: str) -> str:
    """Replace absolute library paths by their file name to keep one short line."""
    return re.sub(r"/\S+/([^/\s]+\.so[.\d]*)", r"\1", text)

