"""Which MLAS kernels onnxruntime's CPU provider picks on this machine, as far as buffer sizes
depend on it (``core/mlas/lib/platform.cpp``, ``MLAS_PLATFORM::MLAS_PLATFORM``).

MLAS chooses its quantized kernels by CPU feature at start-up. The one choice that changes bytes
graphmem plans: the symmetric quantized convolution (``ConvSymU8S8Dispatch``: uint8 activations,
int8 weights with zero points 0; QLinearConv then packs its filter into an arena chunk and needs
no int32 GEMM output) exists from AVX2 on; its output-channel alignment is 4 with AVX-512 core
(``MlasConvSymDispatchAvx512Core``/``Avx512Vnni``) and 8 with AVX2 or AVX-VNNI
(``MlasConvSymDispatchAvx2``/``AvxVnni``, ``core/mlas/lib/convsym.cpp``). There is no
int8-activation dispatch on x86-64 (``ConvSymS8S8Dispatch`` is set on ARM64 only).

The features are read from ``/proc/cpuinfo`` (Linux x86-64, the platform graphmem's figures are
measured on); elsewhere the AVX2 choices are assumed.
"""

from __future__ import annotations

import functools
from pathlib import Path

__all__ = ["cpu_flags", "conv_sym_output_alignment"]


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU feature flags of ``/proc/cpuinfo``'s first processor (empty when unreadable)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def conv_sym_output_alignment(flags: frozenset[str] | None = None) -> int | None:
    """``KernelOutputChannelAlignment`` of the uint8 symmetric convolution, None without AVX2
    (no dispatch: the convolution takes the GEMM path)."""
    flags = cpu_flags() if flags is None else flags
    if flags and "avx2" not in flags:
        return None
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return 4
    return 8
