"""GPU memory an onnxruntime CUDA session uses outside its arena.

The profiler fields read by ``graphmem.verify.measure`` describe the CUDA
provider's arena.  The CUDA context, the cuBLAS/cuDNN handles and their
workspaces are allocated by the driver and the libraries, outside that arena,
and only show up in device-wide or per-process figures.  This module reads
those figures and subtracts the arena:

- ``device_memory()`` reads total/free/used bytes of a GPU from NVML
  (``libnvidia-ml.so.1``), with this process's own bytes when NVML lists it,
  else from cudart's ``cudaMemGetInfo``; ``None`` (and a one-line reason from
  ``device_memory_problem()``) when neither works, as on machines without GPU.
- ``footprint()`` turns three readings (before the session, after creating it,
  after its runs) and the arena size into the bytes outside the arena.

Conventions: ``device`` is the CUDA ordinal, as onnxruntime's ``device_id``
(it honours ``CUDA_VISIBLE_DEVICES``); NVML numbers GPUs by PCI order instead,
so the ordinal is mapped to an NVML handle through its PCI bus id (driver API).
A cudart reading needs a CUDA context, so it creates the process's primary
context -- the one onnxruntime will use -- and a footprint whose first reading
came from cudart cannot contain the context.  The same holds whenever the
context already existed, e.g. after ``providers.cuda_problem()`` ran its probe
session: onnxruntime never destroys the primary context.

Everything goes through ctypes; libraries are loaded on first use, never at import.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path

from graphmem.errors import UsageError

__all__ = [
    "CudaFootprint",
    "DeviceMemory",
    "device_memory",
    "device_memory_problem",
    "footprint",
]

SOURCES = ("nvml", "cudart")
BASES = ("process", "device")

_NVML = "libnvidia-ml.so.1"
_DRIVER = "libcuda.so.1"
_CUDART_FALLBACKS = ("libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so")

_NVML_SUCCESS = 0
_NVML_ERROR_INSUFFICIENT_SIZE = 7
_NVML_VALUE_NOT_AVAILABLE = 2**64 - 1  # usedGpuMemory when the driver cannot tell (WDDM, MIG)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceMemory:
    """One reading of a GPU's memory, in bytes.

    ``used`` is NVML's figure (reserved + allocated) or ``total - free`` from
    cudart.  ``process_used`` is what NVML attributes to this process on the
    device; None when NVML does not list the process: it has no context yet,
    or NVML sees other PIDs (containers), or the source is cudart.
    ``context_active``: whether this process held the device's primary CUDA
    context at the reading (None if unknown; always True for cudart readings).
    """

    device: int  # CUDA ordinal
    total: int
    free: int
    used: int
    process_used: int | None
    context_active: bool | None
    source: str  # one of SOURCES


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaFootprint:
    """Device memory a CUDA session used, and the part outside its arena.

    ``basis`` "process": NVML's per-process figures (exact for this process);
    "device": device-wide ``used``, which also moves when other processes
    allocate or free.  ``session_bytes``/``run_bytes``: growth from the first
    reading to after session creation / after the runs.  ``outside_arena_bytes``
    = ``run_bytes - arena_bytes`` clamped at 0: context (if included), library
    handles and workspaces, plus cudaMalloc's rounding of the arena's regions.
    ``caveats``: one line each, why the figure may be off.
    """

    device: int
    basis: str  # one of BASES
    session_bytes: int
    run_bytes: int
    arena_bytes: int
    outside_arena_bytes: int
    context_included: bool | None  # None: unknown whether the context predates the first reading
    caveats: tuple[str, ...]


def device_memory(device: int = 0) -> DeviceMemory | None:
    """Memory of CUDA device ``device`` now, or None if neither NVML nor cudart can read it.

    Never raises for a missing GPU, driver or library; ``device_memory_problem``
    says why the answer is None.  UsageError for a ``device`` that is not an int >= 0.
    """
    return _read(device)[0]


def device_memory_problem(device: int = 0) -> str | None:
    """Why ``device_memory(device)`` is None, in one line; None when it reads."""
    return _read(device)[1]


def footprint(
    before: DeviceMemory, after_session: DeviceMemory, after_run: DeviceMemory, arena_bytes: int
) -> CudaFootprint:
    """Bytes a session took on the GPU outside its arena, from three readings.

    ``before``: before the session was created; ``after_session``: after;
    ``after_run``: after its runs, session still alive, outputs released;
    ``arena_bytes``: what the CUDA arena held at the end (``arena_held``).
    Per-process figures are used when NVML listed this process after the
    session was created (no listing before means no context yet: 0 bytes).

    >>> r = lambda used, mine: DeviceMemory(device=0, total=100, free=100 - used, used=used,
    ...                                     process_used=mine, context_active=mine is not None, source="nvml")
    >>> footprint(r(10, None), r(50, 30), r(60, 40), 15).outside_arena_bytes
    25
    """
    readings = (before, after_session, after_run)
    if any(not isinstance(reading, DeviceMemory) for reading in readings):
        raise UsageError("footprint needs three DeviceMemory readings")
    if len({reading.device for reading in readings}) != 1 or len({reading.source for reading in readings}) != 1:
        raise UsageError("footprint readings must come from the same device and the same source")
    if isinstance(arena_bytes, bool) or not isinstance(arena_bytes, int) or arena_bytes < 0:
        raise UsageError(f"arena_bytes must be an int >= 0, got {arena_bytes!r}")
    caveats = []
    if after_session.process_used is not None and after_run.process_used is not None:
        basis = "process"
        start = before.process_used or 0
        session_bytes = after_session.process_used - start
        run_bytes = after_run.process_used - start
    else:
        basis = "device"
        session_bytes = after_session.used - before.used
        run_bytes = after_run.used - before.used
        caveats.append(
            "device-wide figures: memory other processes allocated or freed on this GPU meanwhile is counted in"
        )
    if before.context_active is not None:
        context_included: bool | None = not before.context_active
    elif basis == "process":
        context_included = before.process_used is None
    else:
        context_included = None
    if context_included is False:
        caveats.append("the CUDA context existed before the first reading, so it is not included")
    elif context_included is None:
        caveats.append("unknown whether the CUDA context existed before the first reading")
    if run_bytes < arena_bytes:
        caveats.append("the arena exceeds the growth since the first reading, so outside_arena_bytes is clamped to 0")
    return CudaFootprint(
        device=before.device,
        basis=basis,
        session_bytes=session_bytes,
        run_bytes=run_bytes,
        arena_bytes=arena_bytes,
        outside_arena_bytes=max(0, run_bytes - arena_bytes),
        context_included=context_included,
        caveats=tuple(caveats),
    )


class _Unavailable(Exception):
    """A library or call failed; the message is one reason.  Never leaves this module."""


def _read(device: int) -> tuple[DeviceMemory | None, str | None]:
    """A reading from NVML, else cudart; or None with both reasons."""
    if isinstance(device, bool) or not isinstance(device, int) or device < 0:
        raise UsageError(f"device must be a CUDA ordinal (int >= 0), got {device!r}")
    reasons = []
    for source, reader in (("NVML", _read_nvml), ("cudart", _read_cudart)):
        try:
            return reader(device), None
        except _Unavailable as exc:
            reasons.append(f"{source}: {exc}")
    driver_problem = _driver()[1]
    prefix = f"no NVIDIA driver ({driver_problem}); " if driver_problem else ""
    return None, prefix + "; ".join(reasons)


def _read_nvml(device: int) -> DeviceMemory:
    """Device-wide memory from NVML plus this process's share of it."""
    nvml, problem = _nvml()
    if nvml is None:
        raise _Unavailable(problem)
    bus_id, context_active = _driver_device(device)
    handle = ctypes.c_void_p()
    if bus_id is not None:
        status = nvml.nvmlDeviceGetHandleByPciBusId_v2(bus_id, ctypes.byref(handle))
        _nvml_check(nvml, status, f"no NVML device at PCI {bus_id.decode()}")
    else:  # no driver API: assume the CUDA ordinal is NVML's index
        _nvml_check(nvml, nvml.nvmlDeviceGetHandleByIndex_v2(device, ctypes.byref(handle)), f"no NVML device {device}")
    info = _NvmlMemory()
    _nvml_check(nvml, nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(info)), "nvmlDeviceGetMemoryInfo failed")
    return DeviceMemory(
        device=device,
        total=int(info.total),
        free=int(info.free),
        used=int(info.used),
        process_used=_nvml_process_bytes(nvml, handle),
        context_active=context_active,
        source="nvml",
    )


def _nvml_process_bytes(nvml: ctypes.CDLL, handle: ctypes.c_void_p) -> int | None:
    """Bytes NVML attributes to os.getpid() on ``handle``; None if not listed or unknown."""
    for symbol, entry in (
        ("nvmlDeviceGetComputeRunningProcesses_v3", _NvmlProcessInfoV2),
        ("nvmlDeviceGetComputeRunningProcesses_v2", _NvmlProcessInfoV2),
        ("nvmlDeviceGetComputeRunningProcesses", _NvmlProcessInfoV1),
    ):
        function = getattr(nvml, symbol, None)
        if function is None:
            continue
        count = ctypes.c_uint(0)
        status = function(handle, ctypes.byref(count), None)
        for _ in range(3):  # processes may start between the calls
            if status not in (_NVML_SUCCESS, _NVML_ERROR_INSUFFICIENT_SIZE):
                return None
            size = count.value + 8
            entries = (entry * size)()
            count = ctypes.c_uint(size)
            status = function(handle, ctypes.byref(count), entries)
            if status == _NVML_SUCCESS:
                mine = [int(e.usedGpuMemory) for e in entries[: count.value] if e.pid == os.getpid()]
                if not mine or _NVML_VALUE_NOT_AVAILABLE in mine:
                    return None
                return sum(mine)
        return None
    return None


def _read_cudart(device: int) -> DeviceMemory:
    """Device-wide memory from cudaMemGetInfo (creates the primary context if needed)."""
    cudart, name = _cudart()
    if cudart is None:
        raise _Unavailable(name)
    previous = ctypes.c_int(-1)
    had_device = cudart.cudaGetDevice(ctypes.byref(previous)) == 0
    _cudart_check(cudart, cudart.cudaSetDevice(device), f"{name}: cudaSetDevice({device})")
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    try:
        _cudart_check(cudart, cudart.cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total)), f"{name}: cudaMemGetInfo")
    finally:
        if had_device and previous.value != device:
            cudart.cudaSetDevice(previous.value)  # leave the caller's current device as it was
    return DeviceMemory(
        device=device,
        total=int(total.value),
        free=int(free.value),
        used=int(total.value - free.value),
        process_used=None,
        context_active=True,
        source="cudart",
    )


def _driver_device(device: int) -> tuple[bytes | None, bool | None]:
    """PCI bus id of CUDA ordinal ``device`` and whether its primary context is active.

    (None, None) without the driver API.  Neither query creates a context.
    """
    driver, _ = _driver()
    if driver is None:
        return None, None
    handle = ctypes.c_int()
    status = driver.cuDeviceGet(ctypes.byref(handle), device)
    if status != 0:
        count = ctypes.c_int(0)
        driver.cuDeviceGetCount(ctypes.byref(count))
        raise _Unavailable(f"no CUDA device {device} ({count.value} visible, {_cu_error(driver, status)})")
    bus_id = ctypes.create_string_buffer(32)
    if driver.cuDeviceGetPCIBusId(bus_id, len(bus_id), handle) != 0:
        return None, None
    flags, active = ctypes.c_uint(), ctypes.c_int()
    state = driver.cuDevicePrimaryCtxGetState(handle, ctypes.byref(flags), ctypes.byref(active))
    return bus_id.value, (bool(active.value) if state == 0 else None)


@functools.cache
def _nvml() -> tuple[ctypes.CDLL | None, str]:
    """NVML, initialized once per process; or None and why."""
    try:
        nvml = ctypes.CDLL(_NVML)
        nvml.nvmlErrorString.restype = ctypes.c_char_p
        nvml.nvmlDeviceGetHandleByPciBusId_v2.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        nvml.nvmlDeviceGetHandleByIndex_v2.argtypes = [ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p)]
        nvml.nvmlDeviceGetMemoryInfo.argtypes = [ctypes.c_void_p, ctypes.POINTER(_NvmlMemory)]
        status = nvml.nvmlInit_v2()
    except (OSError, AttributeError) as exc:
        return None, _short(exc)
    if status != _NVML_SUCCESS:
        return None, f"nvmlInit_v2 failed: {_nvml_error(nvml, status)}"
    return nvml, _NVML


@functools.cache
def _driver() -> tuple[ctypes.CDLL | None, str | None]:
    """The CUDA driver API after cuInit, or None and why."""
    try:
        driver = ctypes.CDLL(_DRIVER)
        status = driver.cuInit(0)
    except (OSError, AttributeError) as exc:
        return None, _short(exc)
    if status != 0:
        return None, f"cuInit failed: {_cu_error(driver, status)}"
    return driver, None


@functools.cache
def _cudart() -> tuple[ctypes.CDLL | None, str]:
    """A CUDA runtime library and its file name, or None and why.

    The soname onnxruntime-gpu was built for comes first; each name is tried
    through the dynamic loader (which returns a copy already loaded by
    onnxruntime), then in the ``nvidia/*/lib`` folders of pip's CUDA wheels.
    """
    names = list(dict.fromkeys([*_ort_cudart_names(), *_CUDART_FALLBACKS]))
    folders = _nvidia_lib_folders()
    for name in names:
        for candidate in [name, *(str(folder / name) for folder in folders if (folder / name).is_file())]:
            try:
                cudart = ctypes.CDLL(candidate)
            except OSError:
                continue
            cudart.cudaGetErrorName.restype = ctypes.c_char_p
            cudart.cudaGetErrorString.restype = ctypes.c_char_p
            return cudart, Path(candidate).name
    return None, f"none of {', '.join(names)} found (loader path, nvidia/*/lib)"


def _ort_cudart_names() -> list[str]:
    """``libcudart.so.<major>`` for the CUDA onnxruntime-gpu was built with, read without importing it."""
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or spec.origin is None:
        return []
    info = Path(spec.origin).parent / "capi" / "build_and_package_info.py"
    try:
        match = re.search(r"cuda_version\s*=\s*['\"](\d+)", info.read_text(encoding="utf-8"))
    except OSError:
        return []
    return [f"libcudart.so.{match.group(1)}"] if match else []


def _nvidia_lib_folders() -> list[Path]:
    """``nvidia/<package>/lib`` folders of installed NVIDIA wheels (a namespace package)."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    return sorted(folder for root in roots for folder in Path(root).glob("*/lib") if folder.is_dir())


class _NvmlMemory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class _NvmlProcessInfoV1(ctypes.Structure):  # nvmlProcessInfo_v1_t
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]


class _NvmlProcessInfoV2(ctypes.Structure):  # nvmlProcessInfo_v2_t, also the _v3 entry point's
    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
    ]


def _nvml_check(nvml: ctypes.CDLL, status: int, what: str) -> None:
    if status != _NVML_SUCCESS:
        raise _Unavailable(f"{what}: {_nvml_error(nvml, status)}")


def _nvml_error(nvml: ctypes.CDLL, status: int) -> str:
    message = nvml.nvmlErrorString(status)
    return message.decode(errors="replace") if message else f"NVML error {status}"


def _cudart_check(cudart: ctypes.CDLL, status: int, what: str) -> None:
    if status != 0:
        name = (cudart.cudaGetErrorName(status) or b"").decode(errors="replace")
        text = (cudart.cudaGetErrorString(status) or b"").decode(errors="replace")
        raise _Unavailable(f"{what} failed: {name or status} ({text})")


def _cu_error(driver: ctypes.CDLL, status: int) -> str:
    name = ctypes.c_char_p()
    if driver.cuGetErrorName(status, ctypes.byref(name)) == 0 and name.value:
        return name.value.decode(errors="replace")
    return f"CUresult {status}"


def _short(exc: BaseException) -> str:
    """A loader error on one line, library paths reduced to file names."""
    text = " ".join(str(exc).split()).replace(
        ": cannot open shared object file: No such file or directory", " not found"
    )
    return re.sub(r"/\S+/([^/\s:]+\.so[.\d]*)", r"\1", text)
