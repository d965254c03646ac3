"""oneDNN's brgemm RNN primitive for a reduced-precision (bfloat16) LSTM layer: what one
``mkldnn_rnn_layer`` call and its backward allocate beside PyTorch's tensors.

Under ``torch.autocast('cpu', dtype=torch.bfloat16)`` an LSTM layer runs oneDNN's
``brgemm:avx512_core_amx`` (or ``brgemm:avx512_core_bf16`` without AMX) implementation
(``src/cpu/rnn/ref_rnn.cpp``, ``pd_t::init_brgemm``; ONEDNN_VERBOSE shows it), not the ``ref``
one the fp32 LSTM runs. Its scratchpad (``pd_t::init_scratchpad``) holds:

* ``key_rnn_space``: ``set_offsets`` (``src/cpu/rnn/rnn_utils.cpp``) registers the scratch gates,
  the ``h`` scratch and the ``diff_h`` scratch, each at a page-aligned offset, with sizes from
  ``set_workspace_sizes`` (``rnn_utils.hpp``): the forward's gates are f32 (``scratch_type`` is
  the accumulation type forward, the source type backward: ``ref_rnn.hpp``), of every step when
  the layer GEMM is merged over the steps (``configure_brgemm``: minibatch 1, at least two
  steps), else of one;
* the weight- and bias-pointer arrays;
* ``rnn_brgemm_base_t::init_scratchpad`` (``src/cpu/x64/rnn/rnn_brgemm_utils.cpp``): with AMX a
  per-thread f32 tile buffer of ``m_block x n_block``, and per thread the brgemm batch
  (``brgemm_batch_element_t``, 40 bytes) of the most K blocks a kernel reduces;
* backward also the per-thread blocked diff gates and the transposed layer and iteration sources
  (``rnn_brgemm_t<backward>::init_scratchpad``).

Every entry is booked with its alignment added (``memory_tracking.hpp``, ``registry_t::book``).
The blocks follow ``configure_brgemm`` (forward and backward) and its ``brgemm_calc_*``
heuristics, which read the thread count, the CPU's AMX and the per-core L2 size: the host
profile's ``torch_threads``, ``cpu_flags`` and ``l2_per_core_bytes`` (:mod:`graphmem.host`).
"""

from __future__ import annotations

import numpy as np

from graphmem.training.saved import good_ld

__all__ = ["has_brgemm_bf16", "lstm_bf16_scratchpad", "lstm_bf16_weights"]

P4K = 4096  # register_space's page_size
BATCH_ELEMENT = 40  # sizeof(brgemm_batch_element_t) on x86-64
GATES = 4  # LSTM


def _booked(nbytes: int, alignment: int = 128) -> int:
    # oneDNN v3.12 src/common/memory_tracking.hpp, registry_t::book: capacity = size + max(alignment, 128); nothing for
    # 0 bytes
    return nbytes + max(alignment, 128) if nbytes else 0


def _rnd_up(n: int, m: int) -> int:
    return -(-n // m) * m


def has_brgemm_bf16(flags: frozenset[str]) -> bool:
    """``init_brgemm`` accepts a bf16 LSTM only with ``avx512_core_bf16`` (``ref_rnn.cpp``:
    ``isa_dt_not_ok``) among the CPU's ``flags``; without it the reference RNN runs (not modelled)."""
    return "avx512_bf16" in flags


def _has_amx(flags: frozenset[str]) -> bool:
    # rnn_brgemm_utils.cpp has_amx_support: bf16 -> mayiuse(avx512_core_amx)
    return {"amx_tile", "amx_bf16"} <= flags


def _amx_k_block(k1: int, k2: int) -> int:
    # rnn_brgemm_utils.cpp brgemm_calc_k_block_amx: min(K, 32) each, then both the smaller
    return min(k1, k2, 32)


def _amx_blocks_ok(k1: int, k2: int) -> bool:
    """``brgemm_calc_isa``: AMX only when the K blocks and tails are whole VNNI pairs (bf16)."""
    kb = _amx_k_block(k1, k2)
    return not ((k1 % kb) % 2 or (k2 % kb) % 2 or kb % 2)


def _adjust_m_block_lstm(nthr: int, m: int, n_blocks: int, amx: bool) -> int:
    # rnn_brgemm_utils.cpp adjust_m_block_lstm
    max_m_blocks = (1 if amx else 4) * -(-nthr // n_blocks)
    max_m = min(64 if amx else 24, max(1, m // max_m_blocks))
    return next((b for b in range(max_m, 3, -1) if m % b == 0), m)


def _m_block_lstm(nthr: int, m: int, n_blocks: int, amx: bool, work_by_n: np.float32, a: int, c: int, l2: int) -> int:
    # rnn_brgemm_utils.cpp brgemm_calc_m_block_lstm (bf16: adj_by_l2 = As + Cs < 0.6 L2)
    if work_by_n > 2.0 or (work_by_n > 1.0 and float(a + c) < 0.6 * float(l2)):
        return m
    return _adjust_m_block_lstm(nthr, m, n_blocks, amx)


def _m_block_vanilla(nthr: int, m: int, n_blocks: int, amx: bool, work_by_n: np.float32, a: int, l2: int) -> int:
    # rnn_brgemm_utils.cpp brgemm_calc_m_block_vanilla_rnn (the LSTM backward's), in float32 like the C++
    f32 = np.float32
    decimal = f32(work_by_n - np.floor(work_by_n))
    if work_by_n < 1.0:
        return _adjust_m_block_lstm(nthr, m, n_blocks, amx)
    if not (decimal < f32(0.9) and decimal != 0):
        return m
    best, best_decimal = m // 2, f32(0)
    for b in range(m // 2, 7, -1):
        if m % b:
            continue
        work = f32(m // b * n_blocks) / f32(nthr)
        work_decimal = f32(work - np.floor(work))
        if work_decimal > best_decimal + f32(0.01):
            best, best_decimal = b, work_decimal
        if work_decimal >= f32(0.9) or work_decimal == 0:
            return b
    return best if decimal < best_decimal or float(a) > 0.5 * float(l2) else m


def _space(parts: tuple[int, ...]) -> int:
    """``key_rnn_space``: ``set_offsets``' page-aligned parts (the last, LSTM's empty
    ``scratch_cell``, still rounds up), booked with a page of alignment."""
    # oneDNN v3.12 src/cpu/rnn/rnn_utils.cpp, set_offsets register_space; ref_rnn.cpp init_scratchpad: perf_align 4096
    offset = 0
    for part in (*parts, 0):
        offset = _rnd_up(offset, P4K) + part
    # ref_rnn.cpp init_scratchpad: 3 x book<float *>(1) weight pointers, book<void *>(bias_dt_size = 2) bias pointers
    return _booked(offset, P4K) + 3 * _booked(8) + _booked(2 * 8)


def _forward(steps: int, batch: int, size: int, hidden: int, threads: int, amx_cpu: bool, l2: int) -> int:
    # oneDNN v3.12 src/cpu/x64/rnn/rnn_brgemm_utils.cpp, rnn_brgemm_t<forward>::configure_brgemm: M = mb, N = dhc, K1 =
    # slc, K2 = sic
    m, n, k1, k2 = batch, hidden, size, hidden
    amx = amx_cpu and _amx_blocks_ok(k1, k2)
    n_block = 64 if amx and n % 64 == 0 else 32  # brgemm_calc_n_block: 64 on AMX, else 2 * simd_w
    n_blocks = -(-n // n_block)
    work_by_n = np.float32(n_blocks) / np.float32(threads)
    a = 2 * m * max(k1, k2)  # As: bf16 source
    c = 4 * (GATES + 1) * m * n_block  # Cs: f32 scratch gates
    kb1, kb2 = (_amx_k_block(k1, k2),) * 2 if amx else (k1, k2)  # not AMX: whole K for an LSTM
    m_block = _m_block_lstm(threads, m, n_blocks, amx, work_by_n, a, c, l2)
    merged = m <= 1 and steps >= 2  # merged_layer_compute_applicable (one layer per call, trivial stride)
    merged_block = _m_block_lstm(threads, steps * m, n_blocks, amx, work_by_n, a, c, l2) if merged else 0
    fuse = k1 == k2 and not merged  # brgemm_fwd_iter_layer_fuse_possible
    # rnn_utils.hpp set_workspace_sizes: scratch gates f32 (T of them when merged), scratch_ht bf16, scratch_diff_ht f32
    total = _space(((steps if merged else 1) * m * good_ld(GATES * hidden) * 4,
                    m * good_ld(hidden, 2) * 2, m * good_ld(hidden) * 4))
    # rnn_brgemm_base_t::init_scratchpad: key_brgemm_primitive_buffer (AMX), key_brgemm_primitive_batch
    if amx:
        total += _booked(threads * max(m_block, merged_block) * n_block * 4)
    total += _booked((max(k1 // kb1, k2 // kb2) + 1) * (2 if fuse else 1) * threads * BATCH_ELEMENT)
    return total


def _backward(steps: int, batch: int, size: int, hidden: int, threads: int, amx_cpu: bool, l2: int) -> int:
    # oneDNN v3.12 src/cpu/x64/rnn/rnn_brgemm_utils.cpp, rnn_brgemm_t<backward>::configure_brgemm
    # diff_src: M = mb, N = max(sic, slc), K = dhc, n_block 32
    m, n, k = batch, max(size, hidden), hidden
    src_amx = amx_cpu and _amx_blocks_ok(k, k)
    n_blocks = -(-n // 32)
    src_k_blocks = k // (_amx_k_block(k, k) if src_amx else k) * GATES
    src_m_block = _m_block_vanilla(threads, m, n_blocks, src_amx, np.float32(n_blocks) / np.float32(threads),
                                   2 * m * k, l2)
    # diff_wei: M = max(sic, slc), N = 4 dhc, K = mb rounded up to a VNNI pair (bf16 scratch)
    wm, wn, wk = max(size, hidden), GATES * hidden, _rnd_up(batch, 2)
    wei_amx = amx_cpu and _amx_blocks_ok(wk, wk)
    w_block = 64 if wei_amx and wn % 64 == 0 else 32
    w_blocks = -(-wn // w_block)
    wei_k_blocks = wk // (_amx_k_block(wk, wk) if wei_amx else wk)
    if size != hidden:  # M_iter != M_layer
        wei_m_block = wm
    else:
        wei_m_block = _m_block_vanilla(threads, wm, w_blocks, wei_amx, np.float32(w_blocks) / np.float32(threads),
                                       2 * wm * wk, l2)
    # rnn_utils.hpp set_workspace_sizes: one step's scratch gates in bf16 (scratch_type = src_type backward)
    total = _space((m * good_ld(GATES * hidden, 2) * 2, m * good_ld(hidden, 2) * 2, m * good_ld(hidden) * 4))
    if wei_amx or src_amx:  # is_cell_amx: the brgemm isa is the greater of the two
        total += _booked(threads * max(wei_m_block, src_m_block) * max(w_block, 32) * 4)
    total += _booked((max(wei_k_blocks, src_k_blocks) + 1) * threads * BATCH_ELEMENT)
    # rnn_brgemm_t<backward>::init_scratchpad: key_rnn_gates_blocked, key_rnn_src_layer_trans, key_rnn_src_iter_trans
    # (bf16)
    total += _booked(threads * wk * w_block * 2)
    for rows in (size, hidden):  # global_transpose = mb > 1
        total += _booked((rows if batch > 1 else threads * min(wei_m_block, rows)) * wk * 2)
    return total


def lstm_bf16_scratchpad(steps: int, batch: int, size: int, hidden: int, *, forward: bool, threads: int,
                         flags: frozenset[str], l2: int) -> int:
    """Bytes of the brgemm scratchpad ideep allocates for one bf16 ``mkldnn_rnn_layer`` call
    (``forward``) or its backward: one layer, one direction, training (see module doc), on a CPU
    with ``flags`` and ``l2`` bytes of L2 per core (``platform::get_per_core_cache_size(2)``)."""
    run = _forward if forward else _backward
    return run(steps, batch, size, hidden, threads, _has_amx(flags), l2)


def lstm_bf16_weights(size: int, hidden: int, *, forward: bool, flags: frozenset[str]) -> int:
    """Bytes of both weights reordered into the brgemm kernel's bf16 layout (``set_expected_desc``,
    ``rnn_utils.cpp``): forward ``ldgOI{n_block}o2i`` (each gate's outputs padded to ``n_block``,
    the inputs to a pair), backward ``ldgIO32i2o`` (inputs padded to 32, outputs to a pair)."""
    amx = _has_amx(flags)
    total = 0
    for rows in (size, hidden):  # weights_layer [slc, 4, dhc], weights_iter [sic, 4, dhc]
        if forward:
            n_block = 64 if amx and _amx_blocks_ok(size, hidden) and hidden % 64 == 0 else 32
            total += _rnd_up(rows, 2) * GATES * _rnd_up(hidden, n_block) * 2
        else:
            total += _rnd_up(rows, 32) * GATES * _rnd_up(hidden, 2) * 2
    return total

