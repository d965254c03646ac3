"""GPU memory outside the CUDA arena (graphmem.verify.cuda).

Readings are checked by invariants, so the tests hold with and without a GPU;
``footprint`` is checked on hand-made readings with exact integers; the real
CUDA session test runs only where onnxruntime really obtains the CUDA provider.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from graphmem.errors import UsageError
from graphmem.verify import cuda, measure
from graphmem.verify.cuda import (
    BASES,
    SOURCES,
    CudaFootprint,
    DeviceMemory,
    device_memory,
    device_memory_problem,
    footprint,
)
from graphmem.verify.measure import NodeMemory, arena_held
from graphmem.verify.providers import CPU, CUDA, cuda_problem, session_providers

GIB = 2**30


def _reading(used: int, mine: int | None, *, context: bool | None, source: str = "nvml", device: int = 0) -> DeviceMemory:
    total = 16 * GIB
    return DeviceMemory(
        device=device, total=total, free=total - used, used=used, process_used=mine, context_active=context, source=source
    )


def _check_reading(reading: DeviceMemory, device: int) -> None:
    assert isinstance(reading, DeviceMemory)
    assert reading.device == device
    assert reading.total >= reading.used >= 0
    assert 0 <= reading.free <= reading.total
    assert reading.source in SOURCES
    if reading.process_used is not None:
        assert 0 <= reading.process_used <= reading.total
    if reading.source == "cudart":
        assert reading.context_active is True


# ---------------------------------------------------------------- readings


@pytest.mark.parametrize("device", [0, 99])
def test_reading_or_one_line_reason(device):
    # Without a GPU (this CI machine): None and why; with one: a consistent reading.
    reading = device_memory(device)
    problem = device_memory_problem(device)
    if reading is None:
        assert isinstance(problem, str) and problem
        assert "\n" not in problem
    else:
        assert problem is None
        _check_reading(reading, device)


def test_missing_device_is_none_not_an_exception():
    # No machine this runs on has a CUDA device 99: None and a reason, with or without a GPU.
    assert device_memory(99) is None
    assert device_memory_problem(99) is not None


@pytest.mark.parametrize("device", [-1, 1.0, True, "0"])
def test_bad_device_is_a_usage_error(device):
    with pytest.raises(UsageError, match="CUDA ordinal"):
        device_memory(device)


def test_nvml_preferred_then_cudart_then_both_reasons(monkeypatch):
    nvml_reading = _reading(GIB, None, context=False)
    cudart_reading = _reading(2 * GIB, None, context=True, source="cudart")

    def fail(reason):
        def reader(device):
            raise cuda._Unavailable(reason)

        return reader

    monkeypatch.setattr(cuda, "_driver", lambda: (None, "libcuda.so.1 not found"))
    monkeypatch.setattr(cuda, "_read_nvml", lambda device: nvml_reading)
    monkeypatch.setattr(cuda, "_read_cudart", lambda device: cudart_reading)
    assert device_memory() is nvml_reading
    monkeypatch.setattr(cuda, "_read_nvml", fail("libnvidia-ml.so.1 not found"))
    assert device_memory() is cudart_reading
    assert device_memory_problem() is None
    monkeypatch.setattr(cuda, "_read_cudart", fail("cudaMemGetInfo failed: cudaErrorNoDevice"))
    assert device_memory() is None
    assert device_memory_problem() == (
        "no NVIDIA driver (libcuda.so.1 not found); "
        "NVML: libnvidia-ml.so.1 not found; cudart: cudaMemGetInfo failed: cudaErrorNoDevice"
    )


def test_import_loads_no_gpu_library():
    code = (
        "import sys, graphmem.verify.cuda\n"
        "maps = open('/proc/self/maps').read()\n"
        "print('onnxruntime' in sys.modules, any(n in maps for n in ('libcudart', 'libnvidia-ml', 'libcuda.so')))\n"
    )
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/maps")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


FAKE_NVML = r"""
#include <string.h>
#include <unistd.h>
typedef struct { unsigned long long total, free, used; } memory_t;
typedef struct { unsigned int pid; unsigned long long used; unsigned int gi, ci; } process_t;  /* _v2/_v3 entry */
static int gpu;
int nvmlInit_v2(void) { return 0; }
const char *nvmlErrorString(int status) { return status == 2 ? "Invalid Argument" : "Unknown Error"; }
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **handle) {
    if (strcmp(bus, "0000:65:00.0") != 0) return 2;
    *handle = &gpu; return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **handle) { return 2; }  /* must map by PCI */
int nvmlDeviceGetMemoryInfo(void *handle, memory_t *m) {
    if (handle != &gpu) return 999;
    m->total = 17179869184ULL; m->free = 15032385536ULL; m->used = 2147483648ULL; return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void *handle, unsigned *count, process_t *p) {
    if (*count < 3) { *count = 3; return 7; }  /* NVML_ERROR_INSUFFICIENT_SIZE */
    p[0].pid = 1; p[0].used = 500000000ULL;    /* another process */
    p[1].pid = getpid(); p[1].used = 123456789ULL;
    p[2].pid = getpid(); p[2].used = 1000ULL;  /* this process again (a second instance) */
    *count = 3; return 0;
}
"""

FAKE_DRIVER = r"""
#include <string.h>
int cuInit(unsigned flags) { return 0; }
int cuDeviceGetCount(int *count) { *count = 1; return 0; }
int cuDeviceGet(int *device, int ordinal) { if (ordinal != 0) return 101; *device = 7; return 0; }
int cuDeviceGetPCIBusId(char *bus, int len, int device) { strncpy(bus, "0000:65:00.0", len); return 0; }
int cuDevicePrimaryCtxGetState(int device, unsigned *flags, int *active) { *flags = 0; *active = 0; return 0; }
int cuGetErrorName(int status, const char **name) { *name = "CUDA_ERROR_INVALID_DEVICE"; return 0; }
"""


@pytest.fixture(scope="module")
def fake_gpu_libs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with C stand-ins for libnvidia-ml.so.1 and libcuda.so.1: one GPU at PCI 0000:65:00.0."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None or not sys.platform.startswith("linux"):
        pytest.skip("needs a C compiler on Linux to build the fake NVML and driver")
    folder = tmp_path_factory.mktemp("fakegpu")
    for name, source in (("libnvidia-ml.so.1", FAKE_NVML), ("libcuda.so.1", FAKE_DRIVER)):
        (folder / f"{name}.c").write_text(source)
        subprocess.run([compiler, "-shared", "-fPIC", "-o", str(folder / name), str(folder / f"{name}.c")], check=True)
    return folder


def test_nvml_reading_through_fake_libraries(fake_gpu_libs):
    # Exercises the ctypes path end to end: ordinal 0 -> PCI bus id (driver) -> NVML handle,
    # memory info, the process list (sized by a first INSUFFICIENT_SIZE call), this PID summed.
    code = (
        "from graphmem.verify.cuda import device_memory, device_memory_problem\n"
        "r = device_memory(0)\n"
        "print(r.total, r.free, r.used, r.process_used, r.context_active, r.source)\n"
        "print(device_memory_problem(1).split('; ')[0])\n"
    )
    env = {**os.environ, "LD_LIBRARY_PATH": str(fake_gpu_libs)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["17179869184", "15032385536", "2147483648", "123457789", "False", "nvml"]
    assert lines[1] == "NVML: no CUDA device 1 (1 visible, CUDA_ERROR_INVALID_DEVICE)"


FAKE_CUDART = r"""
static int current = 1;  /* the caller's current device, which a reading must restore */
int cudaGetDevice(int *device) { *device = current; return 0; }
int cudaSetDevice(int device) { if (device > 1) return 101; current = device; return 0; }
int cudaMemGetInfo(unsigned long *free, unsigned long *total) {
    if (current != 0) return 999;
    *free = 6000000000UL; *total = 8000000000UL; return 0;
}
const char *cudaGetErrorName(int status) { return status == 101 ? "cudaErrorInvalidDevice" : "cudaErrorUnknown"; }
const char *cudaGetErrorString(int status) { return "invalid device ordinal"; }
int fake_current(void) { return current; }
"""


def test_cudart_reading_through_a_fake_library(tmp_path):
    # No NVML, no driver: cudaMemGetInfo on device 0, and the caller's device (1) is restored.
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None or not sys.platform.startswith("linux"):
        pytest.skip("needs a C compiler on Linux to build the fake cudart")
    (tmp_path / "cudart.c").write_text(FAKE_CUDART)
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(tmp_path / "libcudart.so.13"), str(tmp_path / "cudart.c")], check=True)
    code = (
        "import ctypes, sys\n"
        "from graphmem.verify.cuda import _nvml, device_memory, device_memory_problem\n"
        "if _nvml()[0] is not None: sys.exit('real NVML')\n"
        "r = device_memory(0)\n"
        "print(r.total, r.free, r.used, r.process_used, r.context_active, r.source)\n"
        "print(ctypes.CDLL('libcudart.so.13').fake_current())\n"
        "print(device_memory_problem(2).split('; ')[-1])\n"
    )
    env = {**os.environ, "LD_LIBRARY_PATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if done.stderr.strip() == "real NVML":  # a GPU machine: NVML would answer before cudart
        pytest.skip("a real NVML is installed")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["8000000000", "6000000000", "2000000000", "None", "True", "cudart"]
    assert lines[1] == "1"
    assert lines[2] == "cudart: libcudart.so.13: cudaSetDevice(2) failed: cudaErrorInvalidDevice (invalid device ordinal)"


# ---------------------------------------------------------------- footprint


def test_footprint_per_process_with_context():
    # No context before (process not listed); another process grows by 40 MB
    # meanwhile, which the device-wide figure would wrongly count.
    before = _reading(1_000_000_000, None, context=False)
    after_session = _reading(1_450_000_000, 410_000_000, context=True)  # context + handles + initializers
    after_run = _reading(1_520_000_000, 480_000_000, context=True)
    fp = footprint(before, after_session, after_run, 50_000_000)

    assert fp == CudaFootprint(
        device=0,
        basis="process",
        session_bytes=410_000_000,
        run_bytes=480_000_000,
        arena_bytes=50_000_000,
        outside_arena_bytes=430_000_000,  # 480M - 50M
        context_included=True,
        caveats=(),
    )


def test_footprint_per_process_context_already_there():
    # The probe session of cuda_problem() left the primary context: 300 MB listed before.
    before = _reading(2_000_000_000, 300_000_000, context=True)
    after_session = _reading(2_100_000_000, 400_000_000, context=True)
    after_run = _reading(2_120_000_000, 420_000_000, context=True)
    fp = footprint(before, after_session, after_run, 8_388_608)

    assert (fp.basis, fp.session_bytes, fp.run_bytes) == ("process", 100_000_000, 120_000_000)
    assert fp.outside_arena_bytes == 111_611_392  # 120_000_000 - 8_388_608
    assert fp.context_included is False
    assert fp.caveats == ("the CUDA context existed before the first reading, so it is not included",)


def test_footprint_device_wide_from_cudart():
    # cudart readings: no per-process figure, and the first one created the context.
    before = _reading(2_000_000_000, None, context=True, source="cudart")
    after_session = _reading(2_100_000_000, None, context=True, source="cudart")
    after_run = _reading(2_160_000_000, None, context=True, source="cudart")
    fp = footprint(before, after_session, after_run, 58_720_256)

    assert (fp.basis, fp.session_bytes, fp.run_bytes, fp.arena_bytes) == ("device", 100_000_000, 160_000_000, 58_720_256)
    assert fp.outside_arena_bytes == 101_279_744  # 160_000_000 - 58_720_256
    assert fp.context_included is False
    assert len(fp.caveats) == 2 and fp.caveats[0].startswith("device-wide figures")


def test_footprint_unknown_context_and_clamp():
    # NVML without the driver API nor a process listing: context unknown.
    # Another process freed 20 MB, so the growth (10 MB) is below the arena (16 MB).
    before = _reading(3_000_000_000, None, context=None)
    after_session = _reading(3_004_000_000, None, context=None)
    after_run = _reading(3_010_000_000, None, context=None)
    fp = footprint(before, after_session, after_run, 16_000_000)

    assert (fp.basis, fp.run_bytes, fp.outside_arena_bytes, fp.context_included) == ("device", 10_000_000, 0, None)
    assert [c.split()[0] for c in fp.caveats] == ["device-wide", "unknown", "the"]
    assert "clamped to 0" in fp.caveats[2]


def test_footprint_rejects_mixed_readings_and_bad_arena():
    a = _reading(GIB, None, context=False)
    with pytest.raises(UsageError, match="same device"):
        footprint(a, a, _reading(GIB, None, context=False, device=1), 0)
    with pytest.raises(UsageError, match="same source"):
        footprint(a, a, _reading(GIB, None, context=True, source="cudart"), 0)
    for bad in (-1, 1.5, True):
        with pytest.raises(UsageError, match="arena_bytes"):
            footprint(a, a, a, bad)
    with pytest.raises(UsageError, match="DeviceMemory"):
        footprint(a, a, None, 0)


def test_arena_held_takes_the_provider_max():
    def node(provider, held):
        return NodeMemory(
            name="n", op_type="Relu", provider=provider, requested_in_use=0, requested_delta=0,
            in_use=0, in_use_delta=0, in_use_peak=0, arena_held=held, arena_held_delta=0,
        )

    nodes = [node(CUDA, 2_097_152), node(CPU, 9_999_999), node(CUDA, 4_194_304), node(CUDA, 4_194_304)]
    assert arena_held(nodes) == 4_194_304
    assert arena_held(nodes, CPU) == 9_999_999
    assert arena_held([node(CPU, 256)]) == 0


# ---------------------------------------------------------------- real CUDA

CUDA_PROBLEM = cuda_problem()


def _matmul_relu() -> onnx.ModelProto:
    """X[64,64] @ W[64,64] -> Relu -> Y: cuBLAS runs, every tensor is 16384 bytes."""
    w = numpy_helper.from_array(np.full((64, 64), 0.5, np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["A"], name="mm"), helper.make_node("Relu", ["A"], ["Y"], name="relu")],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [64, 64])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [64, 64])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


@pytest.mark.skipif(CUDA_PROBLEM is not None, reason=f"no usable CUDA device: {CUDA_PROBLEM}")
def test_real_cuda_session_and_device_memory():
    model, feeds = _matmul_relu(), {"X": np.ones((64, 64), np.float32)}
    before = device_memory()
    assert before is not None, device_memory_problem()  # onnxruntime runs on CUDA, so cudart loads
    _check_reading(before, 0)

    measured = measure(model, feeds, provider="cuda")
    assert measured.providers[0] == CUDA
    assert measured.runs[0].primary.provider == CUDA
    assert measured.requested_peak > 0
    after = device_memory()
    assert after is not None
    _check_reading(after, 0)
    assert after.source == before.source

    # The same model in a session we hold, to read the device while it is alive.
    first = device_memory()
    session = ort.InferenceSession(model.SerializeToString(), providers=session_providers(CUDA))
    assert session.get_providers()[0] == CUDA
    after_session = device_memory()
    for _ in range(2):
        session.run(None, feeds)
    after_run = device_memory()
    fp = footprint(first, after_session, after_run, 2**20)
    del session

    assert fp.basis in BASES
    assert fp.outside_arena_bytes == max(0, fp.run_bytes - 2**20)
    assert after_run.context_active in (True, None)  # the session's context is alive
    assert fp.context_included in (False, None)  # cuda_problem()'s probe created it earlier
    if fp.basis == "process":
        assert after_run.process_used > 0
