"""GroupQueryAttention's CPU kernel scratch (``graphmem.ort.scratch``; group_query_attention.cc,
gqa_attention_base.h ApplyAttentionFlash, attention_utils.cc MaybeTransposeToBNSH), hand-computed,
and one real session."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from dataclasses import replace

import graphmem
from graphmem.model.types import TensorType
from graphmem.ort.scratch import KernelScratch, kernel_scratch
from graphmem.verify import measure

from builders import IR_VERSION, PINNED_HOST, save

F, I32 = TensorProto.FLOAT, TensorProto.INT32
L2 = PINNED_HOST.l2_bytes  # 2 MiB: the pinned host's sysconf(_SC_LEVEL2_CACHE_SIZE)


def tt(*dims: int, dtype: int = F) -> TensorType:
    return TensorType(dtype=dtype, shape=tuple(dims))


def gqa(b, s, past, total, *, heads=4, kv=2, head=32, packed=True, rotary=False, present=None, dtype=F,  # type: ignore[no-untyped-def]
        host=PINNED_HOST, **attrs):
    """kernel_scratch of a GroupQueryAttention node on ``host``; ``total`` is the value of input 6."""
    present = past if present is None else present
    names = ["q", "" if packed else "k", "" if packed else "v", "pk", "pv", "seqlens", "total"]
    ins = [tt(b, s, (heads + 2 * kv) * head if packed else heads * head, dtype=dtype)]
    ins += [None, None] if packed else [tt(b, s, kv * head), tt(b, s, kv * head)]
    ins += [tt(b, kv, past, head), tt(b, kv, past, head), tt(b, dtype=I32), tt(1, dtype=I32)]
    if rotary:
        names += ["cos", "sin"]
        ins += [tt(4096, head // 2), tt(4096, head // 2)]
    node = helper.make_node("GroupQueryAttention", names, ["y", "pres_k", "pres_v"], domain="com.microsoft",
                            num_heads=heads, kv_num_heads=kv, do_rotary=int(rotary), **attrs)
    outs = [tt(b, s, heads * head), tt(b, kv, present, head), tt(b, kv, present, head)]
    values = [None] * 6 + [None if total is None else np.array([total], np.int32)] + [None] * (len(ins) - 7)
    return kernel_scratch(node, ins, outs, values=values, host=host)


def test_prompt_packed_with_rotary() -> None:
    # B=1, S=128, N=4, KV=2, H=32, past 0, total 128. Q·K·V packed, transposed: 1·8·128·32 floats =
    # 131,072 B; RotaryQKV the same. Flash tiles: L2 / (4·4·2·32) = 2048, kv_block = min(2048, 128)
    # = 128, q_block = min(2048, 2·32, 128) = 64: (2·64 + 64·128 + 64·32)·4 = 41,472 B.
    assert gqa(1, 128, 0, 128, present=128, rotary=True) == KernelScratch(after=(131072, 131072, 41472))


def test_decode_unpacked_in_genais_shared_buffer() -> None:
    # B=4, S=1, past buffer 2048 = present, total 65: Q 4·4·1·32·4 = 2,048 B, K and V 4·2·1·32·4 =
    # 1,024 B each; one new token: (total + head)·4 = (65 + 32)·4 = 388 B (not the 2048 buffer).
    assert gqa(4, 1, 2048, 65, packed=False) == KernelScratch(after=(2048, 1024, 1024, 388))
    # RotaryQ and RotaryK after K and V: 2,048 and 1,024 B.
    assert gqa(4, 1, 2048, 65, packed=False, rotary=True) == KernelScratch(after=(2048, 1024, 1024, 2048, 1024, 388))


def test_flash_tiles_follow_the_l2_cache() -> None:
    # L2 256 KiB: 262,144 / 1024 = 256 -> kv_block 256 (of 512), q_block min(256, 64, 512) = 64:
    # (2·64 + 64·256 + 64·32)·4 = 74,240 B. Q packed: 1·8·512·32·4 = 524,288 B.
    small = replace(PINNED_HOST, l2_bytes=256 * 1024)
    assert gqa(1, 512, 0, 512, present=512, host=small) == KernelScratch(after=(524288, 74240))
    # L2 2 MiB: 2048 -> kv_block 512 (all of it): (2·64 + 64·512 + 64·32)·4 = 139,776 B
    assert gqa(1, 512, 0, 512, present=512) == KernelScratch(after=(524288, 139776))


def test_off_the_flash_path_the_attention_probabilities() -> None:
    # total 1 (one token, no past): B·N·S·present floats = 1·4·1·1·4 = 16 B after Q (1·8·1·32·4 = 1,024 B).
    assert gqa(1, 1, 0, 1, present=1) == KernelScratch(after=(1024, 16))
    # softcap: B=2, S=1, present 10: 2·4·1·10·4 = 320 B after Q 2·8·1·32·4 = 2,048 B.
    assert gqa(2, 1, 9, 10, present=10, softcap=30.0) == KernelScratch(after=(2048, 320))
    # smooth_softmax -1 is onnxruntime's "off" (the kernel tests == 1): still flash, (10 + 32)·4 = 168 B.
    assert gqa(2, 1, 9, 10, present=10, smooth_softmax=-1) == KernelScratch(after=(2048, 168))


def test_unknown_total_float16_and_quantized_caches_are_unmodelled() -> None:
    assert gqa(1, 128, 0, None, present=128) is None
    assert gqa(1, 128, 0, 128, present=128, dtype=TensorProto.FLOAT16) is None
    assert gqa(1, 1, 64, 65, k_quant_type="PER_TENSOR", v_quant_type="PER_TENSOR", kv_cache_bit_width=8) is None


def test_one_node_session_in_use_peak(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # B=1, S=16, past 0 (total 16 given with --value), N=4, KV=2, H=32, packed, rotary. Outputs:
    # y 1·16·128·4 = 8,192 B, present K and V 1·2·16·32·4 = 4,096 B each. Scratch: Q 1·8·16·32·4 =
    # 16,384 B, RotaryQKV 16,384 B, flash q_block = kv_block = 16: (32 + 256 + 512)·4 = 3,200 B,
    # a 3,328 B chunk. All held at once: 8,192 + 2·4,096 + 2·16,384 + 3,328 = 52,480 B.
    ins = [helper.make_tensor_value_info("q", F, [1, 16, 256]),
           helper.make_tensor_value_info("pk", F, [1, 2, 0, 32]), helper.make_tensor_value_info("pv", F, [1, 2, 0, 32]),
           helper.make_tensor_value_info("seqlens", I32, [1]), helper.make_tensor_value_info("total", I32, [1]),
           helper.make_tensor_value_info("cos", F, [64, 16]), helper.make_tensor_value_info("sin", F, [64, 16])]
    outs = [helper.make_tensor_value_info("y", F, [1, 16, 128]),
            helper.make_tensor_value_info("pres_k", F, [1, 2, 16, 32]), helper.make_tensor_value_info("pres_v", F, [1, 2, 16, 32])]
    node = helper.make_node("GroupQueryAttention", ["q", "", "", "pk", "pv", "seqlens", "total", "cos", "sin"],
                            ["y", "pres_k", "pres_v"], domain="com.microsoft", num_heads=4, kv_num_heads=2, do_rotary=1)
    m = helper.make_model(helper.make_graph([node], "gqa", ins, outs),
                          opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    path = save(m, tmp_path / "gqa.onnx")
    a = graphmem.analyze(path, values={"total": (16,), "seqlens": (15,)})
    assert a.activations.in_use_peak_bytes == 52480 and a.activations.exact
    rng = np.random.default_rng(0)
    feeds = {"q": rng.standard_normal((1, 16, 256), dtype=np.float32), "pk": np.zeros((1, 2, 0, 32), np.float32),
             "pv": np.zeros((1, 2, 0, 32), np.float32), "seqlens": np.array([15], np.int32),
             "total": np.array([16], np.int32), "cos": rng.standard_normal((64, 16), dtype=np.float32),
             "sin": rng.standard_normal((64, 16), dtype=np.float32)}
    assert measure(str(path), feeds, runs=1).runs[0].in_use_peak_bytes == 52480


def test_verify_feeds_attention_masks_all_ones() -> None:
    # GroupQueryAttention sizes its scratch by the mask's longest row (seqlens_k + 1): verify feeds
    # a full sequence, as a prediction assumes; the other inputs keep the values they always had.
    from graphmem.verify.feeds import make_feeds

    I64 = TensorProto.INT64
    g = helper.make_graph([helper.make_node("Add", ["ids", "attention_mask"], ["y"])], "m",
                          [helper.make_tensor_value_info("ids", I64, [2, 8]),
                           helper.make_tensor_value_info("attention_mask", I64, [2, 8])],
                          [helper.make_tensor_value_info("y", I64, [2, 8])])
    feeds = make_feeds(helper.make_model(g, ir_version=IR_VERSION), {}, seed=0)
    assert (feeds["attention_mask"] == 1).all() and feeds["attention_mask"].dtype == np.int64
    rng = np.random.default_rng(0)
    assert (feeds["ids"] == rng.integers(0, 2, (2, 8), dtype=np.int64)).all()  # drawn first, as before
