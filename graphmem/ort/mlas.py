"""Which MLAS kernels onnxruntime's CPU provider picks on this machine, as far as buffer sizes
depend on it (``core/mlas/lib/platform.cpp``, ``MLAS_PLATFORM::MLAS_PLATFORM``).

MLAS chooses its quantized kernels by CPU feature at start-up. The one choice that changes bytes
graphmem plans: the symmetric quantized convolution (``ConvSymU8S8Dispatch``: uint8 activations,
int8 weights with zero points 0; QLinearConv then packs its filter into an arena chunk and needs
no int32 GEMM output) exists from AVX2 on; its output-channel alignment is 4 with AVX-512 core
(``MlasConvSymDispatchAvx512Core``/``Avx512Vnni``) and 8 with AVX2 or AVX-VNNI
(``MlasConvSymDispatchAvx2``/``AvxVnni``, ``core/mlas/lib/convsym.cpp``). There is no
int8-activation dispatch on x86-64 (``ConvSymS8S8Dispatch`` is set on ARM64 only).

The features are the host profile's (:attr:`graphmem.host.HostProfile.cpu_flags`, as
``/proc/cpuinfo`` names them); a profile without flags (the machine did not say) is taken as AVX2.
"""

from __future__ import annotations

__all__ = ["conv_sym_output_alignment"]


def conv_sym_output_alignment(flags: frozenset[str]) -> int | None:
    """``KernelOutputChannelAlignment`` of the uint8 symmetric convolution on a CPU with ``flags``,
    None without AVX2 (no dispatch: the convolution takes the GEMM path)."""
    if flags and "avx2" not in flags:
        return None
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return 4
    return 8
