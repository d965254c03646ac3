"""GRU and LSTM under ``--precision mixed-bf16`` (torch.autocast('cpu')): hand-computed figures.

The GRU follows ``aten/src/ATen/native/RNN.cpp`` (GRUCell's ``at::linear`` calls are autocast's);
the LSTM's brgemm scratchpad follows oneDNN v3.12 (``graphmem.training.kernels.onednn_rnn``), checked here
with explicit CPU flags so the figures do not depend on the machine running the tests.
"""

from __future__ import annotations

from graphmem.training.kernels.onednn_rnn import lstm_bf16_scratchpad, lstm_bf16_weights
from test_training import estimate, rnn, vi


def test_gru_under_autocast_saves_half_gates_and_state_casts() -> None:
    # h = x + b f32[3,2,4] (96); GRU T=3, B=2, I=4, H=5 under bf16. Cached half casts of Wx
    # [1,15,4] (120) and Rh [1,15,5] (150), held to the end of the forward, both saved (addmm's
    # mat2). Saved per step (6 = T·B rows): the half cast of h (5·2), the half hidden gates (15·2),
    # the clone of the new-gate chunk and the new gate (2 x 5·2), the f32 clone of h - n (5·4):
    # 6 x 80 = 480; with the half input cast 3·2·4·2 = 48: 120 + 150 + 48 + 480 = 798
    nodes, inits = rnn("GRU", [3, 2, 4], 5, linear_before_reset=1)
    est = estimate(nodes, [vi("x", [3, 2, 4])], [vi("Yh", [1, 2, 5])], inits, precision="mixed-bf16")
    assert est.saved_bytes == 798
    # forward: h 96, + Wx' 120 = 216, + Rh' 150 = 366; GRU: + Y f32 [3,1,2,5] 120 + Yh 40 + its
    # saved buffers 528 + temporaries: half input gates [3,2,15] 180, the f32 step outputs
    # [3,2,5] 120 waiting for the stack, nn.GRU's f32 zero h0 [1,2,5] 40 = 1394; h is freed
    # (its cast is saved, not h): 528 + 270 + Yh 40 = 838 at the end
    assert est.forward is not None and est.forward.live_bytes == (96, 216, 366, 1394, 838)
    assert not any("not modelled: the GRU" in x for x in est.warnings)
    assert any("GRU 'GRU' (autocast) saves a half cast of its input" in x for x in est.warnings)
    # fp32: no such note (h itself is saved)
    fp32 = estimate(nodes, [vi("x", [3, 2, 4])], [vi("Yh", [1, 2, 5])], inits)
    assert fp32.saved_bytes == 936 and fp32.warnings == ()


AMX = frozenset({"avx512_bf16", "amx_tile", "amx_bf16"})
AVX512_BF16 = frozenset({"avx512_bf16"})


def test_lstm_bf16_forward_scratchpad_by_hand() -> None:
    # T=5, B=3, I=8, H=16, 2 threads, AMX: K blocks min(8, 16, 32) = 8 (whole VNNI pairs: AMX);
    # n_block 32 (H is no multiple of 64), 1 N block, work 0.5 -> m_block: adjust_m_block_lstm
    # finds no divisor in [4, 1]: M = 3. Not merged (mb 3 > 1), no fusion (I != H).
    # key_rnn_space: gates 3 x good_ld(64)=64 x 4 = 768 at 0, h 3 x 32 x 2 = 192 at 4096, diff_h
    # 3 x 16 x 4 = 192 at 8192, rounded: 12288 + 4096 = 16384; pointers 3 x (8+128) + (16+128):
    # 16936; AMX tile buffer 2 x 3 x 32 x 4 + 128 = 896; batch (max(1, 2) + 1) x 2 x 40 + 128
    # = 368: 18200 (measured on torch 2.13, AMX: 18200)
    assert lstm_bf16_scratchpad(5, 3, 8, 16, forward=True, threads=2, flags=AMX, l2=1 << 21) == 18200
    # without AMX (avx512_core_bf16): whole-K blocks (1 each), no tile buffer: 16936 + (1+1) x 2
    # x 40 + 128 = 17224
    assert lstm_bf16_scratchpad(5, 3, 8, 16, forward=True, threads=2, flags=AVX512_BF16, l2=1 << 21) == 17224
    # minibatch 1: the layer GEMM merged over the 5 steps: gates 5 x 64 x 4 = 1280, h 64, diff_h
    # 64 -> 16384 + 552 = 16936; the merged m_block over M = 5 (no divisor in [4, 2]) = 5: tile
    # buffer 2 x 5 x 32 x 4 + 128 = 1408; batch 368: 18712
    assert lstm_bf16_scratchpad(5, 1, 8, 16, forward=True, threads=2, flags=AMX, l2=1 << 21) == 18712


def test_lstm_bf16_backward_scratchpad_by_hand() -> None:
    # T=5, B=3, I=8, H=16, 2 threads, AMX. diff_src: K = 16 (AMX), 4 x 16/16 = 4 K blocks,
    # m_block 3; diff_wei: K = rnd_up(3, 2) = 4 (AMX), N = 64 (n_block 64), 1 K block, I != H:
    # m_block = max(I, H) = 16. key_rnn_space: bf16 gates 3 x 64 x 2 = 384, h 192, diff_h 192:
    # 16384; pointers 552; tile buffer 2 x 16 x 64 x 4 + 128 = 8320; batch (4+1) x 2 x 40 + 128
    # = 528; blocked gates 2 x 4 x 64 x 2 + 128 = 1152; transposed sources (global: mb > 1)
    # 8 x 4 x 2 + 128 = 192 and 16 x 4 x 2 + 128 = 256: 27384 (measured: 27384)
    assert lstm_bf16_scratchpad(5, 3, 8, 16, forward=False, threads=2, flags=AMX, l2=1 << 21) == 27384
    # without AMX: no tile buffer, diff_wei n_block 32: blocked gates 2 x 4 x 32 x 2 + 128 = 640:
    # 16936 + 528 + 640 + 192 + 256 = 18552
    assert lstm_bf16_scratchpad(5, 3, 8, 16, forward=False, threads=2, flags=AVX512_BF16, l2=1 << 21) == 18552


def test_lstm_bf16_weight_layouts_by_hand() -> None:
    # forward ldgOI32o2i (H = 20: n_block 32): I 33 -> 34 x 4 x 32 x 2 = 8704, H 20 x 4 x 32 x 2
    # = 5120; backward ldgIO32i2o: 64 x 4 x 20 x 2 = 10240 and 32 x 4 x 20 x 2 = 5120 (measured)
    assert lstm_bf16_weights(33, 20, forward=True, flags=AMX) == 8704 + 5120
    assert lstm_bf16_weights(33, 20, forward=False, flags=AMX) == 10240 + 5120
    # H = 256 on AMX: n_block 64, no padding: (128 + 256) x 4 x 256 x 2
    assert lstm_bf16_weights(128, 256, forward=True, flags=AMX) == 786432


def test_gru_autocast_backward_temporaries_by_hand() -> None:
    from onnx import TensorProto, helper

    from graphmem.model.types import TensorType
    from graphmem.training.saved import OpView
    from builders import PINNED_HOST
    from graphmem.training.kernels import backward_temporaries

    # T=3, B=2, I=4, H=5, no bias; X f32, W and R autocast's bf16 casts: W_ih' grad 15x4x2 = 120,
    # W_hh' grad 15x5x2 = 150, dX f32 3x2x4x4 = 96, half input-gate grads [3,2,15] = 180, saved
    # per direction 3x2x(5x5x2 + 5x4) + 3x2x5x2 = 480. Loop: W_hh's half per-step gradients, the
    # second out of place: 3 x 150 = 450. Stack: -480 + 2 x 180 + W_hh's f32 .grad 300 (released;
    # 0 persistent) = 180; linear_ih: -480 + max(180 + half dX 48, 48 + 96) + 120 + 300 = 168.
    # Busiest 450; the step counts 96 + 120 + 150 = 366: 84 in both gradient modes
    bf16, f32 = TensorProto.BFLOAT16, TensorProto.FLOAT
    shapes = {"x": (f32, (3, 2, 4)), "W'": (bf16, (1, 15, 4)), "R'": (bf16, (1, 15, 5)), "Y": (f32, (3, 1, 2, 5)),
              "Yh": (f32, (1, 2, 5))}
    types = {name: TensorType(dtype=dtype, shape=shape) for name, (dtype, shape) in shapes.items()}
    node = helper.make_node("GRU", ["x", "W'", "R'"], ["Y", "Yh"], hidden_size=5, linear_before_reset=1)
    for kept in (True, False):
        view = OpView(op_type="GRU", node=node, inputs=tuple(node.input), outputs=tuple(node.output), types=types,
                      needs_grad=frozenset({"x", "W'", "R'"}), weights=frozenset(), weight_grads_kept=kept)
        assert backward_temporaries(view, PINNED_HOST) == 84, kept
