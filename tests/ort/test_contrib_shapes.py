"""Shape rules of onnxruntime's contrib ops (``graphmem/ort/contrib_shapes.py``).

Each rule is checked against shapes computed by hand from onnxruntime's schema (comment beside
each case), in both views: concrete dims (the runtime view) and a symbolic batch (the static view,
where the symbol must pass through and nothing may be invented). A last test runs the ops in
onnxruntime and compares its output shapes with graphmem's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import graphmem
from graphmem.ort.contrib_shapes import MLAS_NCHWC_BLOCKS, RULES, infer_contrib, nchwc_block_sizes, reorder_input_channels
from graphmem.model.types import TensorType

F = TensorProto.FLOAT
U8 = TensorProto.UINT8
MS, NCHWC = "com.microsoft", "com.microsoft.nchwc"


def t(*dims, dtype=F) -> TensorType:  # type: ignore[no-untyped-def]
    return TensorType(dtype=dtype, shape=tuple(dims))


def infer(op: str, domain: str, ins: dict[str, TensorType], outs: int = 1, blocks=MLAS_NCHWC_BLOCKS, **attrs):  # type: ignore[no-untyped-def]
    """Output shapes (None where the rule gives none) of one node whose inputs are ``ins``
    (an empty name is an omitted optional input)."""
    names = list(ins)
    node = helper.make_node(op, names, [f"y{k}" for k in range(outs)], domain=domain, **attrs)
    got = infer_contrib(node, {n: v for n, v in ins.items() if n}, {}, block_sizes=blocks)
    assert got is not None, f"{domain}:{op} gave no result"
    return [got[f"y{k}"].shape if f"y{k}" in got else None for k in range(outs)]


# (id, op, domain, inputs, attrs, expected shapes) — the arithmetic is in the comments.
CASES = [
    # NCHWc Conv = convPoolShapeInference: 28 + 1 + 1 - 3 = 27, // 2 + 1 = 14; M from the filter.
    ("nchwc-conv", "Conv", NCHWC, {"x": t(1, 16, 28, 28), "w": t(32, 16, 3, 3), "b": t(32)},
     {"pads": [1, 1, 1, 1], "strides": [2, 2], "activation": "Relu"}, [(1, 32, 14, 14)]),
    # The fused Sum input (3) does not change the shape; bias omitted.
    ("nchwc-conv-sum", "Conv", NCHWC, {"x": t(2, 32, 7, 7), "w": t(64, 32, 1, 1), "": None, "s": t(2, 64, 7, 7)},
     {}, [(2, 64, 7, 7)]),
    # Depthwise NCHWc Conv: group = padded channels, filter [C, 1, 3, 3]; 10 + 2 - 3 + 1 = 10.
    ("nchwc-conv-dw", "Conv", NCHWC, {"x": t(1, 24, 10, 10), "w": t(24, 1, 3, 3)},
     {"group": 24, "pads": [1, 1, 1, 1]}, [(1, 24, 10, 10)]),
    # MaxPool 3x3/2 pad 1 on 28: (28 + 2 - 3) // 2 + 1 = 14; with ceil_mode on 27: ceil(24/2)+1 = 13.
    ("nchwc-maxpool", "MaxPool", NCHWC, {"x": t(1, 16, 28, 28)},
     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, [(1, 16, 14, 14)]),
    ("nchwc-maxpool-ceil", "MaxPool", NCHWC, {"x": t(1, 16, 27, 27)},
     {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, [(1, 16, 13, 13)]),
    # AveragePool 2x2/2 on 8: 4; count_include_pad is not a shape attribute.
    ("nchwc-avgpool", "AveragePool", NCHWC, {"x": t(4, 32, 8, 8)},
     {"kernel_shape": [2, 2], "strides": [2, 2], "count_include_pad": 0}, [(4, 32, 4, 4)]),
    ("nchwc-gap", "GlobalAveragePool", NCHWC, {"x": t(2, 32, 7, 7)}, {}, [(2, 32, 1, 1)]),
    ("nchwc-gmp", "GlobalMaxPool", NCHWC, {"x": t(2, 32, 7, 7)}, {}, [(2, 32, 1, 1)]),
    # ReorderInput of a block-aligned count keeps it; channels_last moves C from the end.
    ("reorder-input", "ReorderInput", NCHWC, {"x": t(1, 32, 5, 6)}, {}, [(1, 32, 5, 6)]),
    ("reorder-input-nhwc", "ReorderInput", NCHWC, {"x": t(1, 5, 6, 32)}, {"channels_last": 1}, [(1, 32, 5, 6)]),
    # ReorderOutput drops the padding: 32 blocked channels, 30 logical.
    ("reorder-output", "ReorderOutput", NCHWC, {"x": t(1, 32, 7, 7)}, {"channels": 30}, [(1, 30, 7, 7)]),
    ("reorder-output-nhwc", "ReorderOutput", NCHWC, {"x": t(1, 32, 7, 7)},
     {"channels": 30, "channels_last": 1}, [(1, 7, 7, 30)]),
    # Upsample by integer scales: 4 x 2 = 8.
    ("nchwc-upsample", "Upsample", NCHWC, {"x": t(1, 16, 4, 4)}, {"scales": [1, 1, 2, 2]}, [(1, 16, 8, 8)]),
    # FusedConv = Conv: 32 - 3 + 1 = 30.
    ("fusedconv", "FusedConv", MS, {"x": t(1, 3, 32, 32), "w": t(8, 3, 3, 3)}, {"activation": "Relu"}, [(1, 8, 30, 30)]),
    # FusedGemm: [A.dim(transA ? 1 : 0), B.dim(transB ? 0 : 1)].
    ("fusedgemm", "FusedGemm", MS, {"a": t(4, 8), "b": t(16, 8)}, {"transB": 1, "activation": "Relu"}, [(4, 16)]),
    ("fusedgemm-transA", "FusedGemm", MS, {"a": t(8, 4), "b": t(8, 16)}, {"transA": 1}, [(4, 16)]),
    # FusedMatMul: B^T of [2,3,6,5] is [2,3,5,6]; [2,3,4,5] @ [2,3,5,6] = [2,3,4,6].
    ("fusedmatmul-transB", "FusedMatMul", MS, {"a": t(2, 3, 4, 5), "b": t(2, 3, 6, 5)},
     {"transB": 1, "alpha": 0.125}, [(2, 3, 4, 6)]),
    # transBatchA: [4, 2, 5] reads as batch [2], rows 4, cols 5; @ [5, 6] = [2, 4, 6].
    ("fusedmatmul-transBatchA", "FusedMatMul", MS, {"a": t(4, 2, 5), "b": t(5, 6)}, {"transBatchA": 1}, [(2, 4, 6)]),
    # transA on a broadcast batch: [1,5,4]^T = [1,4,5]; @ [3,5,2] = [3,4,2].
    ("fusedmatmul-broadcast", "FusedMatMul", MS, {"a": t(1, 5, 4), "b": t(3, 5, 2)}, {"transA": 1}, [(3, 4, 2)]),
    ("biasgelu", "BiasGelu", MS, {"a": t(2, 8, 64), "b": t(64)}, {}, [(2, 8, 64)]),
    ("fastgelu", "FastGelu", MS, {"x": t(2, 8, 64)}, {}, [(2, 8, 64)]),
    ("gelu", "Gelu", MS, {"x": t(3, 5)}, {}, [(3, 5)]),
    ("quickgelu", "QuickGelu", MS, {"x": t(3, 5)}, {}, [(3, 5)]),
    ("biassoftmax", "BiasSoftmax", MS, {"x": t(2, 4, 8, 8), "m": t(2, 1, 8, 8)}, {"axis": 3}, [(2, 4, 8, 8)]),
    ("biasadd", "BiasAdd", MS, {"x": t(2, 8, 64), "b": t(64), "s": t(2, 8, 64)}, {}, [(2, 8, 64)]),
    # SkipLayerNormalization: output and input_skip_bias_sum like the input; mean and
    # inv_std_var get no shape from the schema.
    ("skiplayernorm", "SkipLayerNormalization", MS,
     {"x": t(2, 8, 32), "s": t(2, 8, 32), "g": t(32), "be": t(32)}, {}, [(2, 8, 32), None, None, (2, 8, 32)]),
    ("skipsimplifiedlayernorm", "SkipSimplifiedLayerNormalization", MS,
     {"x": t(2, 8, 32), "s": t(2, 8, 32), "g": t(32)}, {}, [(2, 8, 32)]),
    # Attention: hidden = bias / 3 = 32, or qkv_hidden_sizes[2]; present = past with S + P.
    ("attention", "Attention", MS, {"x": t(2, 8, 32), "w": t(32, 96), "b": t(96)}, {"num_heads": 4}, [(2, 8, 32)]),
    ("attention-qkv", "Attention", MS, {"x": t(2, 8, 32), "w": t(32, 80), "b": t(80)},
     {"num_heads": 4, "qkv_hidden_sizes": [32, 32, 16]}, [(2, 8, 16)]),
    ("attention-past", "Attention", MS,
     {"x": t(2, 8, 32), "w": t(32, 96), "b": t(96), "m": t(2, 8, dtype=TensorProto.INT32), "p": t(2, 2, 4, 3, 8)},
     {"num_heads": 4}, [(2, 8, 32), (2, 2, 4, 11, 8)]),
    # GroupQueryAttention, no total_sequence_length value: output like the query; present keeps
    # the past's length (64) — the static rule of bert_defs.cc.
    ("gqa", "GroupQueryAttention", MS,
     {"q": t(2, 1, 64), "k": t(2, 1, 32), "v": t(2, 1, 32), "pk": t(2, 2, 64, 16), "pv": t(2, 2, 64, 16)},
     {"num_heads": 4, "kv_num_heads": 2}, [(2, 1, 64), (2, 2, 64, 16), (2, 2, 64, 16)]),
    # LayerNormalization before opset 17 (onnxruntime's ONNX-domain kernel): stats [2, 8, 1].
    ("layernorm", "LayerNormalization", "", {"x": t(2, 8, 32), "g": t(32), "b": t(32)}, {"axis": -1},
     [(2, 8, 32), (2, 8, 1), (2, 8, 1)]),
    ("simplified-layernorm", "SimplifiedLayerNormalization", "", {"x": t(2, 8, 32), "g": t(32)}, {},
     [(2, 8, 32)]),
    # --- quantization (quantization_defs.cc, nhwc_schema_defs.cc); s/z: scale, zero point ---
    # QLinearAdd/Mul: broadcast of A (0) and B (3): [2,8,64] with [64] -> [2,8,64].
    ("qlinearadd", "QLinearAdd", MS, {"a": t(2, 8, 64, dtype=U8), "s": t(), "z": t(dtype=U8), "b": t(64, dtype=U8)},
     {}, [(2, 8, 64)]),
    ("qlinearmul", "QLinearMul", MS, {"a": t(2, 1, 64, dtype=U8), "s": t(), "z": t(dtype=U8), "b": t(2, 8, 1, dtype=U8)},
     {}, [(2, 8, 64)]),
    ("qlinearsigmoid", "QLinearSigmoid", MS, {"x": t(3, 5, dtype=U8)}, {}, [(3, 5)]),
    ("qlinearleakyrelu", "QLinearLeakyRelu", MS, {"x": t(3, 5, dtype=U8)}, {}, [(3, 5)]),
    ("qlinearsoftmax", "QLinearSoftmax", MS, {"x": t(2, 4, 8, dtype=U8)}, {"axis": -1}, [(2, 4, 8)]),
    # QLinearReduceMean axes [1] keepdims 0 of [2,8,64] -> [2,64]; keepdims 1 -> [2,1,64].
    ("qlinearreducemean", "QLinearReduceMean", MS, {"x": t(2, 8, 64, dtype=U8)}, {"axes": [1], "keepdims": 0}, [(2, 64)]),
    ("qlinearreducemean-keep", "QLinearReduceMean", MS, {"x": t(2, 8, 64, dtype=U8)}, {"axes": [1]}, [(2, 1, 64)]),
    # QLinearConcat on axis 1 of (tensor, scale, zp) triples: 3 + 5 = 8.
    ("qlinearconcat", "QLinearConcat", MS,
     {"ys": t(), "yz": t(dtype=U8), "a": t(2, 3, 4, dtype=U8), "as": t(), "az": t(dtype=U8),
      "b": t(2, 5, 4, dtype=U8), "bs": t(), "bz": t(dtype=U8)}, {"axis": 1}, [(2, 8, 4)]),
    # QLinearConv NCHW: (9 + 2 - 3) // 2 + 1 = 5, M = 16 from w [16,3,3,3]; NHWC: [1,9,9,3] -> [1,5,5,16].
    ("qlinearconv", "QLinearConv", MS,
     {"x": t(1, 3, 9, 9, dtype=U8), "xs": t(), "xz": t(dtype=U8), "w": t(16, 3, 3, 3, dtype=TensorProto.INT8),
      "ws": t(), "wz": t(dtype=TensorProto.INT8), "ys": t(), "yz": t(dtype=U8)},
     {"pads": [1, 1, 1, 1], "strides": [2, 2]}, [(1, 16, 5, 5)]),
    ("qlinearconv-nhwc", "QLinearConv", MS,
     {"x": t(1, 9, 9, 3, dtype=U8), "xs": t(), "xz": t(dtype=U8), "w": t(16, 3, 3, 3, dtype=TensorProto.INT8),
      "ws": t(), "wz": t(dtype=TensorProto.INT8), "ys": t(), "yz": t(dtype=U8)},
     {"pads": [1, 1, 1, 1], "strides": [2, 2], "channels_last": 1}, [(1, 5, 5, 16)]),
    # NhwcMaxPool 3x3/2 pad 1 on [1,28,28,8]: 14.
    ("nhwcmaxpool", "NhwcMaxPool", MS, {"x": t(1, 28, 28, 8, dtype=U8)},
     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, [(1, 14, 14, 8)]),
    # QLinearAveragePool 2x2/2: 8 -> 4, NCHW and NHWC.
    ("qlinearavgpool", "QLinearAveragePool", MS, {"x": t(1, 4, 8, 8, dtype=U8)},
     {"kernel_shape": [2, 2], "strides": [2, 2]}, [(1, 4, 4, 4)]),
    ("qlinearavgpool-nhwc", "QLinearAveragePool", MS, {"x": t(1, 8, 8, 4, dtype=U8)},
     {"kernel_shape": [2, 2], "strides": [2, 2], "channels_last": 1}, [(1, 4, 4, 4)]),
    # QLinearGlobalAveragePool: spatial dims -> 1; channels_last keeps C last.
    ("qlineargap", "QLinearGlobalAveragePool", MS, {"x": t(2, 16, 7, 7, dtype=U8)}, {}, [(2, 16, 1, 1)]),
    ("qlineargap-nhwc", "QLinearGlobalAveragePool", MS, {"x": t(2, 7, 7, 16, dtype=U8)}, {"channels_last": 1},
     [(2, 1, 1, 16)]),
    # QGemm: [A.dim(transA ? 1 : 0), B.dim(transB ? 0 : 1)] of A (0), B (3): [4,8] x [16,8]^T.
    ("qgemm", "QGemm", MS, {"a": t(4, 8, dtype=U8), "as": t(), "az": t(dtype=U8), "b": t(16, 8, dtype=TensorProto.INT8)},
     {"transB": 1}, [(4, 16)]),
    # DynamicQuantizeMatMul / MatMulIntegerToFloat: matmul of inputs 0 and 1: [2,8,32] @ [32,16].
    ("dynamicquantizematmul", "DynamicQuantizeMatMul", MS,
     {"a": t(2, 8, 32), "b": t(32, 16, dtype=TensorProto.INT8), "bs": t()}, {}, [(2, 8, 16)]),
    ("matmulintegertofloat", "MatMulIntegerToFloat", MS,
     {"a": t(2, 8, 32, dtype=U8), "b": t(32, 16, dtype=TensorProto.INT8), "as": t(), "bs": t()}, {}, [(2, 8, 16)]),
    # QAttention = Attention's rule with past at input 8: hidden = 96 / 3 = 32.
    ("qattention", "QAttention", MS,
     {"x": t(2, 8, 32, dtype=U8), "w": t(32, 96, dtype=U8), "b": t(96), "xs": t(), "ws": t()}, {"num_heads": 4},
     [(2, 8, 32)]),
    # DynamicQuantizeLSTM: Y [seq, directions, batch, hidden], Y_h/Y_c [directions, batch, hidden].
    ("dynamicquantizelstm", "DynamicQuantizeLSTM", MS,
     {"x": t(5, 2, 8), "w": t(2, 8, 64, dtype=TensorProto.INT8), "r": t(2, 16, 64, dtype=TensorProto.INT8)},
     {"hidden_size": 16, "direction": "bidirectional"}, [(5, 2, 2, 16), (2, 2, 16), (2, 2, 16)]),
    ("ms-quantizelinear", "QuantizeLinear", MS, {"x": t(2, 8), "s": t(), "z": t(dtype=U8)}, {}, [(2, 8)]),
    ("ms-dequantizelinear", "DequantizeLinear", MS, {"x": t(2, 8, dtype=U8), "s": t(), "z": t(dtype=U8)}, {}, [(2, 8)]),
]


@pytest.mark.parametrize(("op", "domain", "ins", "attrs", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule_concrete(op, domain, ins, attrs, expected) -> None:  # type: ignore[no-untyped-def]
    assert infer(op, domain, ins, outs=len(expected), **attrs) == expected


SYMBOLIC = [
    # (id, op, domain, inputs, attrs, expected): the batch symbol "N" passes through; a dim that
    # would need its value (Upsample of a symbolic height) stays unknown, never a new symbol.
    ("nchwc-conv", "Conv", NCHWC, {"x": t("N", 16, 28, 28), "w": t(32, 16, 3, 3)},
     {"pads": [1, 1, 1, 1], "strides": [2, 2]}, [("N", 32, 14, 14)]),
    ("nchwc-maxpool", "MaxPool", NCHWC, {"x": t("N", 16, 28, 28)}, {"kernel_shape": [2, 2], "strides": [2, 2]},
     [("N", 16, 14, 14)]),
    ("nchwc-gap", "GlobalAveragePool", NCHWC, {"x": t("N", 32, 7, 7)}, {}, [("N", 32, 1, 1)]),
    ("reorder-input", "ReorderInput", NCHWC, {"x": t("N", 16, "H", "W")}, {}, [("N", 16, "H", "W")]),
    ("reorder-output", "ReorderOutput", NCHWC, {"x": t("N", 16, "H", "W")}, {"channels": 12}, [("N", 12, "H", "W")]),
    ("nchwc-upsample", "Upsample", NCHWC, {"x": t("N", 16, "H", 4)}, {"scales": [1, 1, 2, 2]}, [(None, 16, None, 8)]),
    ("fusedgemm", "FusedGemm", MS, {"a": t("N", 8), "b": t(8, 16)}, {}, [("N", 16)]),
    ("fusedmatmul", "FusedMatMul", MS, {"a": t("N", "S", 64), "b": t(32, 64)}, {"transB": 1}, [("N", "S", 32)]),
    ("biasgelu", "BiasGelu", MS, {"a": t("N", "S", 64), "b": t(64)}, {}, [("N", "S", 64)]),
    ("attention", "Attention", MS, {"x": t("N", "S", 32), "w": t(32, 96), "b": t(96)}, {"num_heads": 4},
     [("N", "S", 32)]),
]


@pytest.mark.parametrize(("op", "domain", "ins", "attrs", "expected"), [c[1:] for c in SYMBOLIC], ids=[c[0] for c in SYMBOLIC])
def test_rule_symbolic(op, domain, ins, attrs, expected) -> None:  # type: ignore[no-untyped-def]
    assert infer(op, domain, ins, outs=len(expected), **attrs) == expected


@pytest.mark.parametrize(
    ("past", "total", "present"),
    [
        (64, 65, 65),  # decode step with a growing cache: total = past + 1
        (2048, 65, 2048),  # onnxruntime-genai's shared buffer: the buffer's length, not the total
        (0, 128, 128),  # prefill into an empty past
    ],
)
def test_gqa_present_is_max_of_past_and_total(past: int, total: int, present: int) -> None:
    # group_query_attention_helper.h: present_sequence_length = max(total, past_key dim 2);
    # packed QKV [1, S, (4 + 2·2)·16] -> head 16, output [1, S, 64].
    seq = 128 if past == 0 else 1
    names = ["qkv", "", "", "pk", "pv", "seqlens", "total"]
    node = helper.make_node("GroupQueryAttention", names, ["o", "pk_out", "pv_out"], domain=MS,
                            num_heads=4, kv_num_heads=2)
    types = {"qkv": t(1, seq, 128), "pk": t(1, 2, past, 16), "pv": t(1, 2, past, 16),
             "seqlens": t(1, dtype=TensorProto.INT32), "total": t(dtype=TensorProto.INT32)}
    got = infer_contrib(node, types, {"total": np.array(total, dtype=np.int32)})
    assert got is not None
    assert got["o"].shape == (1, seq, 64)
    assert got["pk_out"].shape == got["pv_out"].shape == (1, 2, present, 16)


def test_fused_matmul_of_one_tensor_with_itself() -> None:
    # scores = x @ x^T, one tensor feeding both operands: [2,24,32] @ [2,32,24] = [2,24,24].
    node = helper.make_node("FusedMatMul", ["x", "x"], ["y"], domain=MS, transB=1, alpha=0.125)
    assert infer_contrib(node, {"x": t(2, 24, 32)}, {}) == {"y": t(2, 24, 24)}
    assert infer_contrib(node, {"x": t("N", "S", 32)}, {}) == {"y": t("N", "S", "S")}


def test_every_rule_is_tested() -> None:
    tested = {(c[2], c[1]) for c in CASES} | {(NCHWC, "ReorderInput")}
    assert set(RULES) <= tested, sorted(set(RULES) - tested)


def test_reorder_input_block_size() -> None:
    # 20 channels (a depthwise Conv's input) pad to 24 with block 8, 32 with 16: only the file's
    # block tells; 12 pads to 16 under both; 32 is unpadded under both.
    assert infer("ReorderInput", NCHWC, {"x": t(1, 20, 4, 4)}) == [(1, None, 4, 4)]
    assert infer("ReorderInput", NCHWC, {"x": t(1, 20, 4, 4)}, blocks=(8,)) == [(1, 24, 4, 4)]
    assert infer("ReorderInput", NCHWC, {"x": t(1, 20, 4, 4)}, blocks=(16,)) == [(1, 32, 4, 4)]
    assert infer("ReorderInput", NCHWC, {"x": t(1, 12, 4, 4)}) == [(1, 16, 4, 4)]
    assert infer("ReorderInput", NCHWC, {"x": t(1, 136, 4, 4)}, blocks=(8,)) == [(1, 136, 4, 4)]
    assert infer("ReorderInput", NCHWC, {"x": t(1, 32, 4, 4)}) == [(1, 32, 4, 4)]


def test_reorder_input_padding_from_the_conv_reading_it() -> None:
    # NHWC [1,1,40,120] (channels_last): 120 under block 8, 128 under 16; a non-grouped NCHWc Conv
    # reading it has a [480,128,1,1] filter, so 128. A count neither block gives (136) or a
    # grouped Conv's filter tells nothing: the dim stays unknown.
    x = {"x": TensorType(dtype=F, shape=(1, 1, 40, 120))}
    node = helper.make_node("ReorderInput", ["x"], ["xr"], domain=NCHWC, channels_last=1)
    conv = helper.make_node("Conv", ["xr", "w"], ["y"], domain=NCHWC)
    padded = reorder_input_channels([node, conv], {"w": (480, 128, 1, 1)})
    assert padded == {"xr": 128}
    assert infer_contrib(node, x, {})["xr"].shape == (1, None, 1, 40)
    assert infer_contrib(node, x, {}, padded_channels=padded)["xr"].shape == (1, 128, 1, 40)
    assert infer_contrib(node, x, {}, padded_channels={"xr": 136})["xr"].shape == (1, None, 1, 40)
    grouped = helper.make_node("Conv", ["xr", "w"], ["y"], domain=NCHWC, group=2)
    assert reorder_input_channels([node, grouped], {"w": (480, 64, 1, 1)}) == {}


def test_nchwc_block_sizes_from_padded_filters() -> None:
    def conv(x: str, w: str, y: str, **attrs) -> onnx.NodeProto:  # type: ignore[no-untyped-def]
        return helper.make_node("Conv", [x, w], [y], domain=NCHWC, **attrs)

    def out(x: str, channels: int) -> onnx.NodeProto:
        return helper.make_node("ReorderOutput", [x], [x + "_nchw"], domain=NCHWC, channels=channels)

    reorder = helper.make_node("ReorderInput", ["x"], ["xr"], domain=NCHWC)
    plain = helper.make_node("Conv", ["x", "w0"], ["p"])  # not NCHWc: ignored
    dims = {"w0": (12, 3, 3, 3), "w1": (32, 16, 3, 3), "w2": (48, 32, 1, 1), "w3": (24, 16, 1, 1), "w4": (32, 24, 1, 1)}
    # Filters of 32 and 48 outputs: both blocks divide them, nothing else tells.
    assert nchwc_block_sizes([plain, conv("a", "w1", "b"), conv("b", "w2", "c")], dims) == (16, 8)
    # A filter of 24 outputs: only 8 divides it.
    assert nchwc_block_sizes([conv("a", "w1", "b"), conv("b", "w3", "c")], dims) == (8,)
    # 30 logical channels in a 32-channel filter: 16 pads 30 to 32, 8 would give 32 too;
    # 20 logical channels in 32: only 16 pads 20 to 32.
    assert nchwc_block_sizes([conv("a", "w1", "b"), out("b", 30)], dims) == (16, 8)
    assert nchwc_block_sizes([conv("a", "w1", "b"), out("b", 20)], dims) == (16,)
    # A non-grouped Conv reading a ReorderInput has a block-multiple of input channels: 24.
    assert nchwc_block_sizes([reorder, conv("xr", "w4", "y")], dims) == (8,)
    assert nchwc_block_sizes([plain], dims) == (16, 8)


def test_unknown_contrib_op_is_unresolved() -> None:
    node = helper.make_node("NoSuchOp", ["x"], ["y"], domain=MS)
    assert infer_contrib(node, {"x": t(2, 3)}, {}) is None


# --- against onnxruntime ---------------------------------------------------------------------


def _contrib_model(nodes, inputs, outputs, inits=()):  # type: ignore[no-untyped-def]
    graph = helper.make_graph(nodes, "contrib", inputs, outputs, list(inits))
    m = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1), helper.make_opsetid(NCHWC, 1)],
    )
    m.ir_version = 8
    return m


def test_rules_match_onnxruntime(tmp_path: Path) -> None:
    # One graph of contrib ops run as written (no optimization): each output shape onnxruntime
    # returns must be the shape graphmem infers, with the batch bound.
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    w = lambda name, *shape: onnx.numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)  # noqa: E731
    v = helper.make_tensor_value_info
    nodes = [
        helper.make_node("ReorderInput", ["x"], ["xr"], domain=NCHWC),
        helper.make_node("Conv", ["xr", "cw", "cb"], ["c1"], domain=NCHWC, pads=[1, 1, 1, 1], strides=[2, 2],
                         activation="Relu"),
        helper.make_node("MaxPool", ["c1"], ["p1"], domain=NCHWC, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Upsample", ["p1"], ["u1"], domain=NCHWC, scales=[1, 1, 2, 2]),
        helper.make_node("GlobalAveragePool", ["u1"], ["g1"], domain=NCHWC),
        helper.make_node("ReorderOutput", ["p1"], ["y_img"], domain=NCHWC, channels=16),
        helper.make_node("ReorderOutput", ["g1"], ["y_gap"], domain=NCHWC, channels=16),
        helper.make_node("FusedMatMul", ["a", "bm"], ["y_mm"], domain=MS, transB=1, transBatchA=1, alpha=0.5),
        helper.make_node("BiasGelu", ["y_mm", "bb"], ["y_bg"], domain=MS),
        helper.make_node("FastGelu", ["y_bg"], ["y_fg"], domain=MS),
        helper.make_node("FusedGemm", ["a2", "gw"], ["y_gemm"], domain=MS, transB=1, activation="Relu"),
        helper.make_node("SkipLayerNormalization", ["h", "h2", "lg", "lb"], ["y_sln", "", "", "y_sum"], domain=MS),
        helper.make_node("Attention", ["h", "aw", "ab"], ["y_att"], domain=MS, num_heads=4),
    ]
    inputs = [
        v("x", F, ["N", 16, 12, 12]),
        v("a", F, [5, "N", 8]),
        v("a2", F, ["N", 8]),
        v("h", F, ["N", 6, 32]),
        v("h2", F, ["N", 6, 32]),
    ]
    outs = ["y_img", "y_gap", "y_fg", "y_gemm", "y_sln", "y_sum", "y_att"]
    inits = [w("cw", 16, 16, 3, 3), w("cb", 16), w("bm", 1, 12, 8), w("bb", 12), w("gw", 7, 8), w("lg", 32),
             w("lb", 32), w("aw", 32, 96), w("ab", 96)]
    m = _contrib_model(nodes, inputs, [v(o, F, None) for o in outs], inits)
    path = tmp_path / "contrib.onnx"
    path.write_bytes(m.SerializeToString())
    feeds = {
        "x": rng.standard_normal((2, 16, 12, 12)).astype(np.float32),
        "a": rng.standard_normal((5, 2, 8)).astype(np.float32),
        "a2": rng.standard_normal((2, 8)).astype(np.float32),
        "h": rng.standard_normal((2, 6, 32)).astype(np.float32),
        "h2": rng.standard_normal((2, 6, 32)).astype(np.float32),
    }
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ran = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]).run(outs, feeds)
    result = graphmem.analyze(path, dims={"N": 2})
    assert result.shapes.unresolved == ()
    for name, value in zip(outs, ran):
        assert result.types[name].shape == value.shape, name
