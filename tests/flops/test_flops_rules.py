"""Per-op FLOP rules against hand-computed integers, outcomes, control flow, and invariants.

Each case states its arithmetic in a comment: the expected numbers are computed by hand from the
conventions in ``graphmem.flops.conventions``, not by calling the code under test.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import graphmem
import graphmem.flops as flops
from graphmem.flops import Cost, NodeView, count_flops, coverage, evaluate, make_view
from graphmem.errors import UnboundDimError
from graphmem.model.graph import build_graph
from graphmem.model.loading import load_model
from graphmem.model.types import TensorType

from builders import IR_VERSION

MS = "com.microsoft"


def case(op, ins, outs, expect, *, id, **kw):
    """expect = (flops, macs, int_ops)."""
    return pytest.param(op, ins, outs, expect, kw, id=id)


CASES = [
    # ---- Conv in every form: MACs = N·Cout·prod(out)·(Cin/g)·prod(k); bias N·Cout·prod(out)
    # 1×3×32×32, 16 filters 3×3, pad 1: MACs 16·32·32·3·9 = 442368; bias 16·32·32 = 16384
    case("Conv", [(1, 3, 32, 32), (16, 3, 3, 3), (16,)], [(1, 16, 32, 32)],
         (2 * 442368 + 16384, 442368, 0), attrs={"pads": (1, 1, 1, 1)}, id="conv2d-bias"),
    case("Conv", [(1, 3, 32, 32), (16, 3, 3, 3)], [(1, 16, 32, 32)],
         (884736, 442368, 0), attrs={"pads": (1, 1, 1, 1)}, id="conv2d-nobias"),
    # grouped g=4: 2×8×16×16, W 16×2×3×3 → 2×16×14×14: MACs 2·16·196·2·9 = 112896
    case("Conv", [(2, 8, 16, 16), (16, 2, 3, 3)], [(2, 16, 14, 14)],
         (225792, 112896, 0), attrs={"group": 4}, id="conv-grouped"),
    # depthwise g=32: 1×32×28×28, W 32×1×3×3, pad 1: MACs 32·784·1·9 = 225792
    case("Conv", [(1, 32, 28, 28), (32, 1, 3, 3)], [(1, 32, 28, 28)],
         (451584, 225792, 0), attrs={"group": 32, "pads": (1, 1, 1, 1)}, id="conv-depthwise"),
    # dilation 2: 1×4×20×20, W 8×4×3×3 → 16×16 (20 - 2·2): MACs 8·256·4·9 = 73728
    case("Conv", [(1, 4, 20, 20), (8, 4, 3, 3)], [(1, 8, 16, 16)],
         (147456, 73728, 0), attrs={"dilations": (2, 2)}, id="conv-dilated"),
    # 1-D: 2×4×100, W 6×4×5 → 2×6×96: MACs 2·6·96·4·5 = 23040; bias 2·6·96 = 1152
    case("Conv", [(2, 4, 100), (6, 4, 5), (6,)], [(2, 6, 96)],
         (46080 + 1152, 23040, 0), id="conv1d"),
    # 3-D: 1×2×8×8×8, W 4×2×3×3×3, pad 1: MACs 4·512·2·27 = 110592
    case("Conv", [(1, 2, 8, 8, 8), (4, 2, 3, 3, 3)], [(1, 4, 8, 8, 8)],
         (221184, 110592, 0), attrs={"pads": (1,) * 6}, id="conv3d"),
    # stride 2 (ResNet stem): 1×3×224×224, W 64×3×7×7 → 112×112: MACs 64·12544·3·49 = 118013952
    case("Conv", [(1, 3, 224, 224), (64, 3, 7, 7)], [(1, 64, 112, 112)],
         (236027904, 118013952, 0), attrs={"strides": (2, 2), "pads": (3, 3, 3, 3)}, id="conv-strided"),
    # ConvTranspose: X 1×16×8×8, W 16×8×4×4, stride 2 → 1×8×16×16:
    # MACs numel(X)·(Cout/g)·prod(k) = 1024·8·16 = 131072; bias 8·256 = 2048
    case("ConvTranspose", [(1, 16, 8, 8), (16, 8, 4, 4), (8,)], [(1, 8, 16, 16)],
         (262144 + 2048, 131072, 0), attrs={"strides": (2, 2), "pads": (1, 1, 1, 1)}, id="convT"),
    # grouped ConvTranspose g=2: X 1×8×5×5, W 8×2×3×3 → 1×4×7×7: MACs 200·2·9 = 3600
    case("ConvTranspose", [(1, 8, 5, 5), (8, 2, 3, 3)], [(1, 4, 7, 7)],
         (7200, 3600, 0), attrs={"group": 2}, id="convT-grouped"),
    # DeformConv: X 1×2×6×6, W 4×2×3×3, offset, → 1×4×4×4: MACs 64·18 = 1152;
    # samples (64/4)·2·9 = 288 bilinear × 7 = 2016
    case("DeformConv", [(1, 2, 6, 6), (4, 2, 3, 3), (1, 18, 4, 4)], [(1, 4, 4, 4)],
         (2304 + 2016, 1152, 0), opset=19, id="deformconv"),
    # ---- Gemm: MACs M·N·K = 4·5·8 = 160
    case("Gemm", [(4, 8), (8, 5)], [(4, 5)], (320, 160, 0), id="gemm"),
    case("Gemm", [(8, 4), (8, 5)], [(4, 5)], (320, 160, 0), attrs={"transA": 1}, id="gemm-transA"),
    case("Gemm", [(4, 8), (5, 8)], [(4, 5)], (320, 160, 0), attrs={"transB": 1}, id="gemm-transB"),
    case("Gemm", [(8, 4), (5, 8)], [(4, 5)], (320, 160, 0),
         attrs={"transA": 1, "transB": 1}, id="gemm-transAB"),
    # alpha 0.5: + M·N = 20; C (5,) broadcast, beta 1: + 20 adds
    case("Gemm", [(4, 8), (8, 5), (5,)], [(4, 5)], (360, 160, 0), attrs={"alpha": 0.5}, id="gemm-alpha-C"),
    # beta 2: C add 20 + beta multiply 20
    case("Gemm", [(4, 8), (8, 5), (4, 5)], [(4, 5)], (360, 160, 0), attrs={"beta": 2.0}, id="gemm-beta"),
    # beta 0: C ignored
    case("Gemm", [(4, 8), (8, 5), (4, 5)], [(4, 5)], (320, 160, 0), attrs={"beta": 0.0}, id="gemm-beta0"),
    # ---- MatMul: batch·M·N·K
    # (2,3,4,5)@(5,6): batch 6 · 4·6·5 = 720
    case("MatMul", [(2, 3, 4, 5), (5, 6)], [(2, 3, 4, 6)], (1440, 720, 0), id="matmul-batch"),
    # (2,1,4,5)@(3,5,6): batch broadcast (2,3) = 6 → 720
    case("MatMul", [(2, 1, 4, 5), (3, 5, 6)], [(2, 3, 4, 6)], (1440, 720, 0), id="matmul-bcast"),
    # 1-D operands: (5)@(5,6) → 1·6·5 = 30; (4,5)@(5) → 4·1·5 = 20; (5)@(5) → 5
    case("MatMul", [(5,), (5, 6)], [(6,)], (60, 30, 0), id="matmul-1d-left"),
    case("MatMul", [(4, 5), (5,)], [(4,)], (40, 20, 0), id="matmul-1d-right"),
    case("MatMul", [(5,), (5,)], [()], (10, 5, 0), id="matmul-dot"),
    # ---- Einsum
    # ij,jk->ik: 4·5·6 = 120
    case("Einsum", [(4, 5), (5, 6)], [(4, 6)], (240, 120, 0), attrs={"equation": "ij,jk->ik"}, id="einsum-mm"),
    # implicit output (ik): same
    case("Einsum", [(4, 5), (5, 6)], [(4, 6)], (240, 120, 0), attrs={"equation": "ij,jk"}, id="einsum-implicit"),
    # attention scores bhqd,bhkd->bhqk: 2·3·4·8·5 = 960
    case("Einsum", [(2, 3, 4, 8), (2, 3, 5, 8)], [(2, 3, 4, 5)], (1920, 960, 0),
         attrs={"equation": "bhqd,bhkd->bhqk"}, id="einsum-attn"),
    # ellipsis: 7·4·5·6 = 840
    case("Einsum", [(7, 4, 5), (7, 5, 6)], [(7, 4, 6)], (1680, 840, 0),
         attrs={"equation": "...ij,...jk->...ik"}, id="einsum-ellipsis"),
    # 3 operands left to right: (ij,jk) 2·3·4 = 24 keeps ik; (ik,kl) 2·4·5 = 40 → 64
    case("Einsum", [(2, 3), (3, 4), (4, 5)], [(2, 5)], (128, 64, 0),
         attrs={"equation": "ij,jk,kl->il"}, id="einsum-3ops"),
    # one operand sum ij->i is a reduction: 3·4 - 3 = 9 adds, no MAC; trace ii-> : 4 - 1 = 3
    case("Einsum", [(3, 4)], [(3,)], (9, 0, 0), attrs={"equation": "ij->i"}, id="einsum-sum"),
    case("Einsum", [(4, 4)], [()], (3, 0, 0), attrs={"equation": "ii->"}, id="einsum-trace"),
    # ---- pooling: per output max K-1, avg K, Lp 3K
    # MaxPool 2×2/2: 1×16×16×16 = 4096 outputs · 3 = 12288
    case("MaxPool", [(1, 16, 32, 32)], [(1, 16, 16, 16)], (12288, 0, 0),
         attrs={"kernel_shape": (2, 2), "strides": (2, 2)}, id="maxpool"),
    # AveragePool 3×3 pad 1: 16384 outputs · 9 = 147456
    case("AveragePool", [(1, 16, 32, 32)], [(1, 16, 32, 32)], (147456, 0, 0),
         attrs={"kernel_shape": (3, 3), "pads": (1, 1, 1, 1)}, id="avgpool"),
    # LpPool 2×2/2: 4096 · 12 = 49152
    case("LpPool", [(1, 16, 32, 32)], [(1, 16, 16, 16)], (49152, 0, 0),
         attrs={"kernel_shape": (2, 2), "strides": (2, 2)}, id="lppool"),
    # GlobalAveragePool 1×16×7×7: 16·(48 adds + 1 div) = 784; GlobalMaxPool 784 - 16 = 768
    case("GlobalAveragePool", [(1, 16, 7, 7)], [(1, 16, 1, 1)], (784, 0, 0), id="gap"),
    case("GlobalMaxPool", [(1, 16, 7, 7)], [(1, 16, 1, 1)], (768, 0, 0), id="gmp"),
    # ---- normalizations (6/elem + 5/group + 1/elem per affine term)
    # BatchNorm inference 2×16×8×8 = 2048 elements · 2 = 4096
    case("BatchNormalization", [(2, 16, 8, 8), (16,), (16,), (16,), (16,)], [(2, 16, 8, 8)],
         (4096, 0, 0), opset=15, id="batchnorm"),
    # training mode: (2 + 4 statistics)·2048 = 12288
    case("BatchNormalization", [(2, 16, 8, 8), (16,), (16,), (16,), (16,)],
         [(2, 16, 8, 8), (16,), (16,)], (12288, 0, 0), opset=15, attrs={"training_mode": 1},
         id="batchnorm-training"),
    # LayerNorm 2×8×16 over last axis: 256 elem, 16 groups: 8·256 + 5·16 = 2128
    case("LayerNormalization", [(2, 8, 16), (16,), (16,)], [(2, 8, 16)], (2128, 0, 0), id="layernorm"),
    # no bias: 7·256 + 80 = 1872
    case("LayerNormalization", [(2, 8, 16), (16,)], [(2, 8, 16)], (1872, 0, 0), id="layernorm-nobias"),
    # axis 1: groups 2, elements 256: 8·256 + 10 = 2058
    case("LayerNormalization", [(2, 8, 16), (8, 16), (8, 16)], [(2, 8, 16)], (2058, 0, 0),
         attrs={"axis": 1}, id="layernorm-axis1"),
    # GroupNorm 2×8×4×4 (256), 4 groups → 8 groups: 8·256 + 40 = 2088
    case("GroupNormalization", [(2, 8, 4, 4), (8,), (8,)], [(2, 8, 4, 4)], (2088, 0, 0),
         attrs={"num_groups": 4}, id="groupnorm"),
    # InstanceNorm 2×8×4×4: 16 groups: 2048 + 80 = 2128
    case("InstanceNormalization", [(2, 8, 4, 4), (8,), (8,)], [(2, 8, 4, 4)], (2128, 0, 0), id="instancenorm"),
    # RMSNorm 2×8×16: 4·256 + 4·16 = 1088
    case("RMSNormalization", [(2, 8, 16), (16,)], [(2, 8, 16)], (1088, 0, 0), opset=23, id="rmsnorm"),
    # MeanVarianceNormalization 2×3×4×4 over (0,2,3): 96 elem, 3 groups: 6·96 + 15 = 591
    case("MeanVarianceNormalization", [(2, 3, 4, 4)], [(2, 3, 4, 4)], (591, 0, 0), id="mvn"),
    # LRN size 5 on 1×8×4×4 (128): (2·5 + 3)·128 = 1664
    case("LRN", [(1, 8, 4, 4)], [(1, 8, 4, 4)], (1664, 0, 0), attrs={"size": 5}, id="lrn"),
    # ---- softmax: 5/elem; LogSoftmax + 1 log per row
    case("Softmax", [(4, 10)], [(4, 10)], (200, 0, 0), opset=13, id="softmax"),
    case("LogSoftmax", [(4, 10)], [(4, 10)], (204, 0, 0), opset=13, id="logsoftmax"),
    # opset 11 flattens from axis 1: rows = 2 for a 2×3×4 input: 120 + 2
    case("LogSoftmax", [(2, 3, 4)], [(2, 3, 4)], (122, 0, 0), opset=11, id="logsoftmax-opset11"),
    # ---- reductions 4×10 → 4: combines 40 - 4 = 36
    case("ReduceSum", [(4, 10), (1,)], [(4, 1)], (36, 0, 0), opset=13, id="reducesum"),
    case("ReduceMean", [(4, 10)], [(4, 1)], (40, 0, 0), attrs={"axes": (1,)}, opset=13, id="reducemean"),
    case("ReduceMax", [(4, 10)], [(4, 1)], (36, 0, 0), attrs={"axes": (1,)}, opset=13, id="reducemax"),
    # SumSquare 40 squares + 36; L2 + 4 sqrt; LogSumExp 40 exp + 36 + 4 log
    case("ReduceSumSquare", [(4, 10)], [(4, 1)], (76, 0, 0), opset=13, id="reducesumsquare"),
    case("ReduceL2", [(4, 10)], [(4, 1)], (80, 0, 0), opset=13, id="reducel2"),
    case("ReduceLogSumExp", [(4, 10)], [(4, 1)], (80, 0, 0), opset=13, id="reducelogsumexp"),
    case("ArgMax", [(4, 10)], [(4, 1)], (36, 0, 0), id="argmax"),
    # ---- elementwise unary/binary with broadcasting (per output element)
    case("Add", [(2, 3, 4), (4,)], [(2, 3, 4)], (24, 0, 0), id="add-bcast"),
    case("Mul", [(2, 1, 4), (3, 1)], [(2, 3, 4)], (24, 0, 0), id="mul-bcast2"),
    case("Div", [(10,), ()], [(10,)], (10, 0, 0), id="div-scalar"),
    case("Pow", [(10,), ()], [(10,)], (10, 0, 0), id="pow"),
    case("Equal", [(10,), (10,)], [(10,)], (10, 0, 0), id="equal"),
    case("Exp", [(10,)], [(10,)], (10, 0, 0), id="exp"),
    case("Sqrt", [(10,)], [(10,)], (10, 0, 0), id="sqrt"),
    case("Erf", [(10,)], [(10,)], (10, 0, 0), id="erf"),
    case("Tanh", [(10,)], [(10,)], (10, 0, 0), id="tanh"),
    case("Sigmoid", [(10,)], [(10,)], (10, 0, 0), id="sigmoid"),
    # Sum of 3: 2 adds per output (20) = 40; Mean + 1 divide = 60; Max of 2 = 20
    case("Sum", [(4, 5), (4, 5), (4, 5)], [(4, 5)], (40, 0, 0), id="sum3"),
    case("Mean", [(4, 5), (4, 5), (4, 5)], [(4, 5)], (60, 0, 0), id="mean3"),
    case("Max", [(4, 5), (5,)], [(4, 5)], (20, 0, 0), id="max2"),
    # ---- activations (ELEMENT_COSTS per element, 10 elements)
    case("Relu", [(10,)], [(10,)], (10, 0, 0), id="relu"),
    case("LeakyRelu", [(10,)], [(10,)], (20, 0, 0), id="leakyrelu"),
    case("PRelu", [(2, 5), (5,)], [(2, 5)], (20, 0, 0), id="prelu"),
    case("Elu", [(10,)], [(10,)], (40, 0, 0), id="elu"),
    case("Selu", [(10,)], [(10,)], (50, 0, 0), id="selu"),
    case("HardSigmoid", [(10,)], [(10,)], (40, 0, 0), id="hardsigmoid"),
    case("HardSwish", [(10,)], [(10,)], (50, 0, 0), id="hardswish"),
    case("Softplus", [(10,)], [(10,)], (30, 0, 0), id="softplus"),
    case("Mish", [(10,)], [(10,)], (50, 0, 0), opset=18, id="mish"),
    case("Gelu", [(10,)], [(10,)], (50, 0, 0), opset=20, id="gelu-erf"),
    case("Gelu", [(10,)], [(10,)], (90, 0, 0), opset=20, attrs={"approximate": "tanh"}, id="gelu-tanh"),
    # Clip opset 13: one bound given → 1/elem; opset 6 attributes → 2/elem
    case("Clip", [(10,), (), None], [(10,)], (10, 0, 0), opset=13, id="clip-min"),
    case("Clip", [(10,)], [(10,)], (20, 0, 0), opset=6, id="clip-attrs"),
    # ---- resampling: linear over r changed axes = 2·2^r - 1 per output
    # 1×3×8×8 → 16×16 bilinear: 768 outputs · 7 = 5376; cubic 768·(2·16 - 1) = 23808
    case("Resize", [(1, 3, 8, 8), None, (4,)], [(1, 3, 16, 16)], (5376, 0, 0),
         attrs={"mode": "linear"}, opset=13, id="resize-linear"),
    case("Resize", [(1, 3, 8, 8), None, (4,)], [(1, 3, 16, 16)], (23808, 0, 0),
         attrs={"mode": "cubic"}, opset=13, id="resize-cubic"),
    case("Upsample", [(1, 3, 8, 8), (4,)], [(1, 3, 16, 16)], (5376, 0, 0),
         attrs={"mode": "linear"}, opset=9, id="upsample-linear"),
    # ---- recurrent (T steps × batch × directions)
    # LSTM T=5 B=2 I=3 H=4 bias: MACs 5·2·4·4·(3+4) = 1120; per step/row: gates 16·3 = 48,
    # sigmoid 12, tanh 4, C update 12, tanh(C) 4, o·h 4 = 84 → ·10 = 840; 2240 + 840 = 3080
    case("LSTM", [(5, 2, 3), (1, 16, 3), (1, 16, 4), (1, 32)], [None, (1, 2, 4)], (3080, 1120, 0),
         attrs={"hidden_size": 4}, id="lstm"),
    # bidirectional: everything ×2
    case("LSTM", [(5, 2, 3), (2, 16, 3), (2, 16, 4), (2, 32)], [None, (2, 2, 4)], (6160, 2240, 0),
         attrs={"hidden_size": 4, "direction": "bidirectional"}, id="lstm-bidir"),
    # no bias: gates 16·1 → 52 per step/row → 520; 2240 + 520 = 2760
    case("LSTM", [(5, 2, 3), (1, 16, 3), (1, 16, 4)], [None, (1, 2, 4)], (2760, 1120, 0),
         attrs={"hidden_size": 4}, id="lstm-nobias"),
    # layout 1 (batch first): X (B=2, T=5, I=3) → same as the first LSTM
    case("LSTM", [(2, 5, 3), (1, 16, 3), (1, 16, 4), (1, 32)], [None, (2, 1, 4)], (3080, 1120, 0),
         attrs={"hidden_size": 4, "layout": 1}, opset=14, id="lstm-layout1"),
    # GRU T=4 B=1 I=2 H=3 no bias: MACs 4·3·3·5 = 180; per step 9 + 6 + 3 + 3 + 12 = 33 → 132
    case("GRU", [(4, 1, 2), (1, 9, 2), (1, 9, 3)], [None, (1, 1, 3)], (492, 180, 0),
         attrs={"hidden_size": 3}, id="gru"),
    # RNN T=6 B=2 I=3 H=5 bias: MACs 6·2·5·8 = 480; per step 5·3 + 5 tanh = 20 → ·12 = 240
    case("RNN", [(6, 2, 3), (1, 5, 3), (1, 5, 5), (1, 10)], [None, (1, 2, 5)], (1200, 480, 0),
         attrs={"hidden_size": 5}, id="rnn"),
    # ---- ONNX Attention (opset 23): scores 2·4·8·10 = 640; MACs 640·(16 + 16) = 20480;
    # per score scale 1 + softmax 5 = 6 → 40960 + 3840 = 44800; causal + 640
    case("Attention", [(2, 4, 8, 16), (2, 4, 10, 16), (2, 4, 10, 16)], [(2, 4, 8, 16)],
         (44800, 20480, 0), opset=23, id="attention-4d"),
    case("Attention", [(2, 4, 8, 16), (2, 4, 10, 16), (2, 4, 10, 16)], [(2, 4, 8, 16)],
         (45440, 20480, 0), opset=23, attrs={"is_causal": 1}, id="attention-causal"),
    # 3-D GQA form: Q (2,8,64) 4 heads of 16; K/V (2,10,32) 2 heads: same 640 scores
    case("Attention", [(2, 8, 64), (2, 10, 32), (2, 10, 32)], [(2, 8, 64)], (44800, 20480, 0),
         opset=23, attrs={"q_num_heads": 4, "kv_num_heads": 2}, id="attention-3d-gqa"),
    # past_key (2,4,6,16): L = 4 + 6 = 10 → same numbers
    case("Attention", [(2, 4, 8, 16), (2, 4, 4, 16), (2, 4, 4, 16), None, (2, 4, 6, 16), (2, 4, 6, 16)],
         [(2, 4, 8, 16)], (44800, 20480, 0), opset=23, id="attention-past"),
    # RotaryEmbedding (ONNX) 4-D (2,4,8,16), rotary dim 8: 64 rows · 8 · 3 = 1536
    case("RotaryEmbedding", [(2, 4, 8, 16), (8, 4), (8, 4)], [(2, 4, 8, 16)], (1536, 0, 0),
         opset=23, attrs={"rotary_embedding_dim": 8}, id="rotary"),
    # LinearAttention "linear": q (1,2,8) 2 heads dk 4; v (1,2,6) 2 heads dv 3; per token
    # k⊗v 2·4·3 = 24 MACs + qᵀS 2·4·3 = 24 → ·2 tokens = 96 MACs; scale 2·2·3 = 12 → 204
    case("LinearAttention", [(1, 2, 8), (1, 2, 8), (1, 2, 6)], [(1, 2, 6)], (204, 96, 0), opset=27,
         attrs={"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "linear"}, id="linear-attention"),
    # CausalConvWithState: X (2,8,10), depthwise W (8,1,4): 160 outputs · 4 taps = 640 MACs
    case("CausalConvWithState", [(2, 8, 10), (8, 1, 4)], [(2, 8, 10), (2, 8, 3)], (1280, 640, 0),
         opset=27, id="causal-conv"),
    # SwiGLU: A·sigmoid(a·A)·B = 4/element · 10
    case("SwiGLU", [(2, 5), (2, 5)], [(2, 5)], (40, 0, 0), opset=28, id="swiglu"),
    # ---- signal, linear algebra, selection, resampling
    # DFT opset 20, real (2,16,1) along -2: 2 transforms · 5·16·log2(16)/2 = 2·160 = 320
    case("DFT", [(2, 16, 1)], [(2, 16, 2)], (320, 0, 0), opset=20, id="dft"),
    # Det of 3 matrices 4×4: 3·(2·64//3 + 3) = 3·45 = 135
    case("Det", [(3, 4, 4)], [(3,)], (135, 0, 0), id="det"),
    # TopK k=8 of 2×100: 200 · ceil(log2 8) = 600
    case("TopK", [(2, 100), (1,)], [(2, 8), (2, 8)], (600, 0, 0), id="topk"),
    case("CumSum", [(3, 4), ()], [(3, 4)], (12, 0, 0), id="cumsum"),
    # GridSample bilinear: Y (1,3,4,4) = 48 · 7, plus 16 locations · 2 coords · 3 = 96 → 432
    case("GridSample", [(1, 3, 8, 8), (1, 4, 4, 2)], [(1, 3, 4, 4)], (432, 0, 0), opset=16, id="gridsample"),
    # AffineGrid grid (2,4,5,2) = 80 coords · 2 MACs = 160; + 80 translation adds → 400
    case("AffineGrid", [(2, 2, 3), (4,)], [(2, 4, 5, 2)], (400, 160, 0), opset=20, id="affinegrid"),
    # Col2Im: each of the 1·12·9 = 108 column elements added once
    case("Col2Im", [(1, 12, 9), (2,), (2,)], [(1, 3, 5, 5)], (108, 0, 0), opset=18, id="col2im"),
    # ---- quantized (int_ops): conv 442368 MACs → 2·MACs + requant 5·16384
    case("QLinearConv", [(1, 3, 32, 32), (), (), (16, 3, 3, 3), (), (), (), ()], [(1, 16, 32, 32)],
         (0, 442368, 884736 + 81920), attrs={"pads": (1, 1, 1, 1)}, id="qlinearconv"),
    case("ConvInteger", [(1, 3, 32, 32), (16, 3, 3, 3)], [(1, 16, 32, 32)],
         (0, 442368, 884736), attrs={"pads": (1, 1, 1, 1)}, id="convinteger"),
    # QLinearMatMul (4,8)@(8,5): 160 MACs → 320 + 5·20 = 420
    case("QLinearMatMul", [(4, 8), (), (), (8, 5), (), (), (), ()], [(4, 5)], (0, 160, 420), id="qlinearmatmul"),
    case("MatMulInteger", [(4, 8), (8, 5)], [(4, 5)], (0, 160, 320), id="matmulinteger"),
    # Dequantize 2/elem, Quantize 5, DynamicQuantize 2 + 5
    case("DequantizeLinear", [(10,), ()], [(10,)], (0, 0, 20), id="dequantize"),
    case("QuantizeLinear", [(10,), ()], [(10,)], (0, 0, 50), id="quantize"),
    case("DynamicQuantizeLinear", [(10,)], [(10,), (), ()], (0, 0, 70), id="dynquantize"),
    # ---- com.microsoft contrib ops
    # FusedConv = conv-bias (901120) + Relu 16384
    case("FusedConv", [(1, 3, 32, 32), (16, 3, 3, 3), (16,)], [(1, 16, 32, 32)], (917504, 442368, 0),
         domain=MS, attrs={"pads": (1, 1, 1, 1), "activation": "Relu"}, id="ms-fusedconv"),
    # NhwcConv: numel(Y)·prod(W[1:]) = 16384·27 = 442368
    case("NhwcConv", [(1, 32, 32, 3), (16, 3, 3, 3)], [(1, 32, 32, 16)], (884736, 442368, 0),
         domain=MS, attrs={"pads": (1, 1, 1, 1)}, id="ms-nhwcconv"),
    # FusedGemm 4×8×5 + LeakyRelu 2·20
    case("FusedGemm", [(4, 8), (8, 5)], [(4, 5)], (360, 160, 0), domain=MS,
         attrs={"activation": "LeakyRelu"}, id="ms-fusedgemm"),
    # FusedMatMul transB: (2,4,5)@(2,6,5)ᵀ: 2·4·6·5 = 240; alpha 2 → + 48
    case("FusedMatMul", [(2, 4, 5), (2, 6, 5)], [(2, 4, 6)], (528, 240, 0), domain=MS,
         attrs={"transB": 1, "alpha": 2.0}, id="ms-fusedmatmul"),
    # transBatchA: A (4, 2, 5) → (2, 4, 5): same 2·4·6·5
    case("FusedMatMul", [(4, 2, 5), (2, 5, 6)], [(2, 4, 6)], (480, 240, 0), domain=MS,
         attrs={"transBatchA": 1}, id="ms-fusedmatmul-transbatch"),
    case("Gelu", [(10,)], [(10,)], (50, 0, 0), domain=MS, id="ms-gelu"),
    case("FastGelu", [(10,), (10,)], [(10,)], (100, 0, 0), domain=MS, id="ms-fastgelu-bias"),
    case("BiasGelu", [(10,), (10,)], [(10,)], (60, 0, 0), domain=MS, id="ms-biasgelu"),
    case("QuickGelu", [(10,)], [(10,)], (30, 0, 0), domain=MS, id="ms-quickgelu"),
    case("BiasAdd", [(2, 4, 8), (8,), (2, 4, 8)], [(2, 4, 8)], (128, 0, 0), domain=MS, id="ms-biasadd"),
    # LayerNormalization (contrib) as ONNX: 2128
    case("LayerNormalization", [(2, 8, 16), (16,), (16,)], [(2, 8, 16)], (2128, 0, 0), domain=MS,
         id="ms-layernorm"),
    # SkipLayerNorm: + skip 256 adds → 2384; + bias input → 2640
    case("SkipLayerNormalization", [(2, 8, 16), (2, 8, 16), (16,), (16,)], [(2, 8, 16)], (2384, 0, 0),
         domain=MS, id="ms-skiplayernorm"),
    case("SkipLayerNormalization", [(2, 8, 16), (2, 8, 16), (16,), (16,), (16,)], [(2, 8, 16)],
         (2640, 0, 0), domain=MS, id="ms-skiplayernorm-bias"),
    # SimplifiedLayerNormalization (RMS) 1088; SkipSimplified + 256 = 1344
    case("SimplifiedLayerNormalization", [(2, 8, 16), (16,)], [(2, 8, 16)], (1088, 0, 0), domain=MS,
         id="ms-simplifiedln"),
    case("SkipSimplifiedLayerNormalization", [(2, 8, 16), (2, 8, 16), (16,)], [(2, 8, 16)],
         (1344, 0, 0), domain=MS, id="ms-skipsimplifiedln"),
    # Attention: X (2,8,32), W (32,96): projection 2·8·32·96 = 49152 MACs, bias 1536;
    # 4 heads of 8: scores 2·4·8·8 = 512, MACs 512·16 = 8192, per score 6
    case("Attention", [(2, 8, 32), (32, 96), (96,)], [(2, 8, 32)],
         (2 * 49152 + 1536 + 2 * 8192 + 512 * 6, 49152 + 8192, 0),
         domain=MS, attrs={"num_heads": 4}, id="ms-attention"),
    # MultiHeadAttention: Q (2,8,32), K/V (2,10,32), 4 heads: 640 scores · 16 = 10240 MACs
    case("MultiHeadAttention", [(2, 8, 32), (2, 10, 32), (2, 10, 32)], [(2, 8, 32)],
         (20480 + 3840, 10240, 0), domain=MS, attrs={"num_heads": 4}, id="ms-mha"),
    # GroupQueryAttention: out (1,4,64), 4 heads of 16, present_key (1,2,12,16): scores 1·4·4·12
    # = 192, MACs 192·32 = 6144, per score scale + softmax + causal = 7
    case("GroupQueryAttention", [(1, 4, 64), (1, 4, 32), (1, 4, 32), None, None, (1,), ()],
         [(1, 4, 64), (1, 2, 12, 16), (1, 2, 12, 16)], (12288 + 1344, 6144, 0), domain=MS,
         attrs={"num_heads": 4, "kv_num_heads": 2}, id="ms-gqa"),
    # RotaryEmbedding contrib (2,8,64), 4 heads of 16, full rotation: 2·8·64 · 3 = 3072
    case("RotaryEmbedding", [(2, 8, 64), (2, 8), (16, 8), (16, 8)], [(2, 8, 64)], (3072, 0, 0),
         domain=MS, attrs={"num_heads": 4}, id="ms-rotary"),
    # MatMulNBits A (2,8,64), K 64, N 32: MACs 512·64 = 32768; dequant 2·32·64 = 4096
    case("MatMulNBits", [(2, 8, 64), (32, 2, 16), (64,)], [(2, 8, 32)], (65536, 32768, 4096),
         domain=MS, attrs={"K": 64, "N": 32, "bits": 4, "block_size": 32}, id="ms-matmulnbits"),
    # QLinearAveragePool 2×2/2 on (1,2,4,4): dequant 2·32 + (4 taps + 5 requant)·8 = 136
    case("QLinearAveragePool", [(1, 2, 4, 4), (), (), (), ()], [(1, 2, 2, 2)], (0, 0, 136), domain=MS,
         attrs={"kernel_shape": (2, 2), "strides": (2, 2)}, id="ms-qlinearavgpool"),
    # MatMulIntegerToFloat (4,8)@(8,5): 160 MACs, 320 int_ops, scale 20 FLOPs
    case("MatMulIntegerToFloat", [(4, 8), (8, 5), (), ()], [(4, 5)], (20, 160, 320), domain=MS,
         id="ms-matmulintegertofloat"),
    # DynamicQuantizeLSTM: the float LSTM case with its 2240 matmul FLOPs as int_ops
    case("DynamicQuantizeLSTM", [(5, 2, 3), (1, 3, 16), (1, 4, 16), (1, 32)], [None, (1, 2, 4)],
         (840, 1120, 2240), domain=MS, attrs={"hidden_size": 4}, id="ms-dynquantlstm"),
    # GroupNorm NHWC (2,4,4,8), 4 groups → 8: 8·256 + 40, SiLU 2·256 → 2600
    case("GroupNorm", [(2, 4, 4, 8), (8,), (8,)], [(2, 4, 4, 8)], (2600, 0, 0), domain=MS,
         attrs={"groups": 4, "activation": 1, "channels_last": 1}, id="ms-groupnorm"),
    # MoE: 4 tokens of 8, 3 experts, k 1, relu; FC1 8×16 + FC2 16×8 = 256 MACs/token → 1024;
    # relu 16 + combine 2·8 = 32/token → 128; router (4,3): softmax 5 + top-1 1 per element = 72
    case("MoE", [(4, 8), (4, 3), (3, 8, 16), None, (3, 16, 8)], [(4, 8)], (2048 + 128 + 72, 1024, 0),
         domain=MS, id="ms-moe"),
    # QLinearAdd: (2 + 2 + 1 + 5)·10 = 100
    case("QLinearAdd", [(10,), (), (), (10,), (), (), (), ()], [(10,)], (0, 0, 100), domain=MS,
         id="ms-qlinearadd"),
]


@pytest.mark.parametrize("op, ins, outs, expect, kw", CASES)
def test_rule(op, ins, outs, expect, kw):
    cost = evaluate(make_view(op, ins, outs, **kw))
    assert cost.outcome == "counted", cost.reason
    assert (cost.flops, cost.macs, cost.int_ops) == expect


@pytest.mark.parametrize(
    "op, ins, outs, kw",
    [
        ("Reshape", [(2, 3), (2,)], [(3, 2)], {}),
        ("Transpose", [(2, 3)], [(3, 2)], {}),
        ("Gather", [(10, 4), (3,)], [(3, 4)], {}),
        ("Concat", [(2, 3), (2, 3)], [(4, 3)], {}),
        ("Cast", [(2, 3)], [(2, 3)], {}),
        ("Pad", [(2, 3), (4,)], [(4, 5)], {}),
        ("Expand", [(1, 3), (2,)], [(4, 3)], {}),
        ("Dropout", [(2, 3)], [(2, 3)], {}),
        ("Identity", [(2, 3)], [(2, 3)], {}),
        ("ScatterND", [(4, 3), (2, 1), (2, 3)], [(4, 3)], {}),
        # Resize nearest is a gather; Einsum transpose moves data only
        ("Resize", [(1, 3, 8, 8), None, (4,)], [(1, 3, 16, 16)], {"attrs": {"mode": "nearest"}, "opset": 13}),
        ("Einsum", [(3, 4)], [(4, 3)], {"attrs": {"equation": "ij->ji"}}),
    ],
)
def test_explicit_zero(op, ins, outs, kw):
    assert evaluate(make_view(op, ins, outs, **kw)).outcome == "zero"


def test_scatter_with_reduction_counts_updates():
    # ScatterElements reduction="add": one add per update element (2·3 = 6)
    view = make_view("ScatterElements", [(4, 3), (2, 3), (2, 3)], [(4, 3)], opset=18,
                     attrs={"reduction": "add"})
    assert evaluate(view).flops == 6


def test_dropout_training_constant_counts_and_unknown_is_unsupported():
    x = [(2, 3), (), ()]
    trained = make_view("Dropout", x, [(2, 3)], opset=13, values={2: np.array(True)})
    assert evaluate(trained).flops == 12  # mask compare + scale, 2·6
    unknown = make_view("Dropout", x, [(2, 3)], opset=13)
    assert evaluate(unknown).outcome == "unsupported"


def test_integer_tensors_book_int_ops():
    # shape arithmetic: Add on int64 (3,) + (3,) → 3 integer ops, no FLOPs
    view = make_view("Add", [(3,), (3,)], [(3,)], dtype=TensorProto.INT64)
    assert (evaluate(view).flops, evaluate(view).int_ops) == (0, 3)


def test_where_with_bool_condition_is_float_work():
    # Where(cond: bool, x: float, y: float): 4 selects, floating point because x and y are
    f32 = TensorType(dtype=TensorProto.FLOAT, shape=(4,))
    cond = TensorType(dtype=TensorProto.BOOL, shape=(4,))
    view = NodeView(op_type="Where", opset=16, inputs=(cond, f32, f32), outputs=(f32,))
    assert evaluate(view) == Cost(flops=4)


# ---- unsupported: reported, never 0 -------------------------------------------------------


def test_op_without_rule_is_unsupported_with_reason():
    cost = evaluate(make_view("NoSuchOp", [(2,)], [(2,)], domain="example.custom"))
    assert cost.outcome == "unsupported"
    assert "no rule" in cost.reason
    assert cost.flops == cost.macs == cost.int_ops == 0


@pytest.mark.parametrize(
    "op, ins, outs",
    [
        ("Conv", [None, (4, 3, 3, 3)], [None]),
        ("MatMul", [None, (4, 5)], [(3, 5)]),
        ("Add", [None, None], [None]),
        ("LSTM", [None, (1, 16, 3), (1, 16, 4)], [None]),
    ],
)
def test_unknown_shape_is_unsupported(op, ins, outs):
    view = make_view(op, ins, outs, attrs={"hidden_size": 4})
    # make_view's None is an omitted tensor; an unknown one has a type without shape
    unknown = TensorType(dtype=TensorProto.FLOAT, shape=None)
    view = NodeView(
        op_type=view.op_type,
        opset=view.opset,
        attrs=view.attrs,
        inputs=tuple(t or unknown for t in view.inputs),
        outputs=tuple(t or unknown for t in view.outputs),
    )
    cost = evaluate(view)
    assert cost.outcome == "unsupported"
    assert cost.reason == "shape unknown"


def test_conv_output_by_conv_arithmetic_when_its_type_is_unknown():
    # FusedConv has no ONNX shape inference; X 1×3×32×32, W 16×3×3×3, pad 1 → 32×32 out:
    # MACs 16·1024·27 = 442368, as when Y is known
    view = make_view("FusedConv", [(1, 3, 32, 32), (16, 3, 3, 3)], [None], domain=MS,
                     attrs={"pads": (1, 1, 1, 1)})
    assert evaluate(view).macs == 442368
    # stride 2, SAME_UPPER on 224: ceil(224 / 2) = 112 → 64·12544·3·49 = 118013952
    same = make_view("Conv", [(1, 3, 224, 224), (64, 3, 7, 7)], [None],
                     attrs={"strides": (2, 2), "auto_pad": "SAME_UPPER"})
    assert evaluate(same).macs == 118013952


def test_symbolic_dim_is_shape_unknown():
    t = TensorType(dtype=TensorProto.FLOAT, shape=("batch", 4))
    w = TensorType(dtype=TensorProto.FLOAT, shape=(4, 5))
    view = NodeView(op_type="MatMul", opset=13, inputs=(t, w), outputs=(t,))
    assert evaluate(view).reason == "shape unknown"


def test_known_but_uncountable_ops_say_why():
    cost = evaluate(make_view("NonMaxSuppression", [(1, 10, 4), (1, 1, 10)], [(3, 3)]))
    assert cost.outcome == "unsupported" and "data-dependent" in cost.reason
    roi = make_view("RoiAlign", [(1, 8, 16, 16), (4, 4), (4,)], [(4, 8, 7, 7)])
    assert "sampling" in evaluate(roi).reason


# ---- control flow ---------------------------------------------------------------------------


def test_if_counts_larger_branch():
    view = make_view("If", [()], [(2,)], subgraphs={
        "then_branch": Cost(flops=100, macs=50), "else_branch": Cost(flops=30)})
    assert evaluate(view) == Cost(flops=100, macs=50)


def test_loop_multiplies_by_constant_trip_count_else_unsupported():
    body = {"body": Cost(flops=7, macs=3)}
    assert evaluate(make_view("Loop", [(), ()], [()], trip_count=10, subgraphs=body)) == Cost(flops=70, macs=30)
    unknown = evaluate(make_view("Loop", [None, ()], [()], subgraphs=body))
    assert (unknown.outcome, unknown.reason) == ("unsupported", "trip count unknown")


def test_scan_multiplies_by_scanned_length():
    # one state (4,), one scan input (5, 3) along axis 0 → 5 iterations of a 4-FLOP body
    view = make_view("Scan", [(4,), (5, 3)], [(4,), (5, 3)], opset=16,
                     attrs={"num_scan_inputs": 1}, subgraphs={"body": Cost(flops=4)})
    assert evaluate(view) == Cost(flops=20)


def test_unsupported_body_makes_control_flow_unsupported():
    body = {"body": Cost(outcome="unsupported", reason="body: MatMul: shape unknown")}
    cost = evaluate(make_view("Loop", [(), ()], [()], trip_count=3, subgraphs=body))
    assert cost.outcome == "unsupported" and "MatMul" in cost.reason


# ---- end to end on tiny inline models -------------------------------------------------------


def _save(tmp_path, graph, opset=17, name="m.onnx"):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)
    path = tmp_path / name
    onnx.save(model, str(path))
    return path


def _vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def _w(name, shape):
    return numpy_helper.from_array(np.zeros(shape, dtype=np.float32), name)


def test_bad_order_is_a_usage_error(tmp_path):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [_vi("x", [2])], [_vi("y", [2])])
    a = graphmem.analyze(_save(tmp_path, graph))
    with pytest.raises(graphmem.GraphmemError):
        count_flops(a.graph, a.types, order=(0, 99))


def test_tiny_cnn_end_to_end(tmp_path):
    # X 1×3×8×8 → Conv(4 filters 3×3, pad 1, bias) → Relu → GlobalAveragePool → Flatten → Gemm(4→2)
    # Conv MACs 4·64·3·9 = 6912, FLOPs 13824 + bias 256 = 14080; Relu 256; GAP 256;
    # Flatten 0; Gemm MACs 1·2·4 = 8, FLOPs 16 + C 2 = 18. Total 14610 FLOPs, 6920 MACs
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "gw", "gb"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "cnn", [_vi("x", [1, 3, 8, 8])], [_vi("y", [1, 2])],
        initializer=[_w("w", (4, 3, 3, 3)), _w("b", (4,)), _w("gw", (2, 4)), _w("gb", (2,))],
    )
    a = graphmem.analyze(_save(tmp_path, graph))
    r = count_flops(a.graph, a.types, a.order)
    assert (r.flops, r.macs, r.int_ops) == (14610, 6920, 0)
    assert r.by_op_type == {"Conv": 14080, "Relu": 256, "GlobalAveragePool": 256, "Gemm": 18}
    assert r.zero == ("Flatten",)
    assert r.unsupported == {}


def test_unknown_shape_after_nonzero_is_reported(tmp_path):
    # NonZero's output length is data: the MatMul after it has no shape → unsupported, and the
    # totals hold only what was counted: NonZero 6 compares on float x; Cast 0
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"]),
        helper.make_node("Cast", ["nz"], ["nzf"], to=TensorProto.FLOAT),
        helper.make_node("MatMul", ["nzf", "w"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "dyn", [_vi("x", [2, 3])], [_vi("y", None)], initializer=[_w("w", (2, 2))]
    )
    a = graphmem.analyze(_save(tmp_path, graph))
    r = count_flops(a.graph, a.types, a.order)
    assert r.unsupported == {"MatMul": 1}
    matmul = next(c for nid, c in r.costs.items() if a.graph.node(nid).op_type == "MatMul")
    assert matmul.reason == "shape unknown"
    assert (r.flops, r.macs) == (6, 0)


def test_loop_with_constant_trip_count(tmp_path):
    # Loop M=3 over body y = MatMul(x_in, W) with x (2,4), W (4,4): 3 · 2·4·4 = 96 MACs
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("MatMul", ["x_in", "W"], ["x_out"]),
        ],
        "body",
        [_vi("i", [], TensorProto.INT64), _vi("cond_in", [], TensorProto.BOOL), _vi("x_in", [2, 4])],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("x_out", [2, 4])],
    )
    loop = helper.make_node("Loop", ["M", "cond", "x"], ["y"], body=body)
    graph = helper.make_graph(
        [loop], "loop", [_vi("x", [2, 4])], [_vi("y", [2, 4])],
        initializer=[
            numpy_helper.from_array(np.array(3, dtype=np.int64), "M"),
            numpy_helper.from_array(np.array(True), "cond"),
            _w("W", (4, 4)),
        ],
    )
    a = graphmem.analyze(_save(tmp_path, graph))
    r = count_flops(a.graph, a.types, a.order)
    assert (r.macs, r.flops) == (96, 192)


def test_if_counts_larger_branch_end_to_end(tmp_path):
    # then: MatMul (2,4)@(4,4) = 32 MACs, 64 FLOPs; else: Add 8 FLOPs → 64
    then_g = helper.make_graph([helper.make_node("MatMul", ["a", "W"], ["t"])], "then", [], [_vi("t", [2, 4])])
    else_g = helper.make_graph([helper.make_node("Add", ["a", "a"], ["e"])], "else", [], [_vi("e", [2, 4])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)
    graph = helper.make_graph(
        [node], "if", [_vi("c", [], TensorProto.BOOL), _vi("a", [2, 4])], [_vi("y", [2, 4])],
        initializer=[_w("W", (4, 4))],
    )
    a = graphmem.analyze(_save(tmp_path, graph))
    r = count_flops(a.graph, a.types, a.order)
    assert (r.flops, r.macs) == (64, 32)


# ---- properties -------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(batch=st.integers(1, 64), c=st.integers(1, 32), h=st.integers(1, 32))
def test_add_scales_linearly_with_batch(batch, c, h):
    def add(b):
        return evaluate(make_view("Add", [(b, c, h), (c, h)], [(b, c, h)])).flops

    assert add(batch) == batch * add(1) == batch * c * h


@settings(max_examples=60, deadline=None)
@given(b=st.integers(1, 8), m=st.integers(1, 64), n=st.integers(1, 64), k=st.integers(1, 64))
def test_matmul_macs_are_mnk(b, m, n, k):
    cost = evaluate(make_view("MatMul", [(b, m, k), (k, n)], [(b, m, n)]))
    assert cost.macs == b * m * n * k and cost.flops == 2 * cost.macs


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 3), g=st.integers(1, 4), cin_g=st.integers(1, 4), cout_g=st.integers(1, 4),
    kh=st.integers(1, 5), kw=st.integers(1, 5), oh=st.integers(1, 16), ow=st.integers(1, 16),
)
def test_conv_macs_match_direct_loop_count(n, g, cin_g, cout_g, kh, kw, oh, ow):
    # count one MAC per (n, cout, oh, ow, cin in its group, kh, kw), as a direct loop would
    cin, cout = g * cin_g, g * cout_g
    direct = sum(cin_g * kh * kw for _ in range(n * cout * oh * ow))
    view = make_view("Conv", [(n, cin, oh + kh - 1, ow + kw - 1), (cout, cin_g, kh, kw)],
                     [(n, cout, oh, ow)], attrs={"group": g})
    assert evaluate(view).macs == direct


@settings(max_examples=40, deadline=None)
@given(i=st.integers(1, 6), j=st.integers(1, 6), k=st.integers(1, 6), l=st.integers(1, 6))
def test_einsum_matches_matmul(i, j, k, l):
    # a batched contraction written as Einsum costs what the MatMul costs
    e = evaluate(make_view("Einsum", [(i, j, k), (i, k, l)], [(i, j, l)], attrs={"equation": "bij,bjk->bik"}))
    m = evaluate(make_view("MatMul", [(i, j, k), (i, k, l)], [(i, j, l)]))
    assert (e.flops, e.macs) == (m.flops, m.macs)


# ---- surface and coverage -------------------------------------------------------------------


def test_public_surface():
    assert set(flops.__all__) == {
        "Cost", "NodeView", "Rule", "FlopReport", "count_flops", "node_view", "make_view",
        "evaluate", "lookup", "coverage", "REGISTRY", "Entry", "CONVENTIONS", "Convention",
        "ELEMENT_COSTS", "ACTIVATION_COSTS", "conventions_text",
    }
    for name in flops.__all__:
        assert hasattr(flops, name)


def test_conventions_table_prints():
    text = flops.conventions_text()
    assert "1 MAC = 2 FLOPs" in text and "unsupported" in text


ARITHMETIC_UNSUPPORTED = {"NonMaxSuppression", "MaxRoiPool", "TfIdfVectorizer", "ImageDecoder", "SequenceMap"}


@pytest.mark.parametrize("opset", [9, 13, 17, 21, 23, 28])
def test_coverage_has_only_known_gaps(opset):
    rows = coverage(opset)
    default = {op: kind for d, op, kind in rows if d == ""}
    assert default["Conv"] == "counted" and default["Reshape"] == "zero"
    assert {op for op, kind in default.items() if kind == "unsupported"} <= ARITHMETIC_UNSUPPORTED
    assert ("com.microsoft", "FusedConv", "counted") in rows
    assert all(kind in ("counted", "zero", "unsupported") for _, _, kind in rows)


def test_every_registered_rule_returns_a_cost_on_an_empty_view():
    # a rule that sees no shapes must answer (zero or unsupported), never raise
    for (domain, op), entry in flops.REGISTRY.items():
        cost = entry.rule(NodeView(op_type=op, domain=domain, opset=21))
        assert isinstance(cost, Cost)
        assert cost.outcome in ("zero", "unsupported") or cost.flops == cost.macs == 0, (domain, op)


def _bytecodes(fn) -> int:  # type: ignore[no-untyped-def]
    """Python bytecodes (and calls) ``fn()`` executes: a count of work that does not depend on how
    busy the machine is, where a wall-clock bound fails under load."""
    import sys

    executed = 0

    def trace(frame, event, arg):  # type: ignore[no-untyped-def]
        nonlocal executed
        frame.f_trace_opcodes = True
        executed += 1
        return trace

    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    return executed


def _matmul_add_chain(tmp_path, pairs: int):  # type: ignore[no-untyped-def]
    """``pairs`` (MatMul, Add) pairs on (8, 16) tensors, analysed."""
    nodes, inits = [], [_w("W", (16, 16)), _w("B", (16,))]
    prev = "x"
    for i in range(pairs):
        nodes.append(helper.make_node("MatMul", [prev, "W"], [f"m{i}"]))
        nodes.append(helper.make_node("Add", [f"m{i}", "B"], [f"a{i}"]))
        prev = f"a{i}"
    graph = helper.make_graph(nodes, f"chain{pairs}", [_vi("x", [8, 16])], [_vi(prev, [8, 16])], initializer=inits)
    folder = tmp_path / str(pairs)
    folder.mkdir()
    return graphmem.analyze(_save(folder, graph))


def test_count_grows_linearly_with_the_graph(tmp_path):
    # the work of counting a chain of 2N nodes over that of N nodes (bytecodes executed, not
    # seconds): about 2 when every node is costed once (a repeated node from the memo), 4 for
    # work quadratic in the nodes. Measured: 1.99 (about 75 bytecodes a node after the first of
    # each kind)
    small, large = _matmul_add_chain(tmp_path, 200), _matmul_add_chain(tmp_path, 400)
    count_flops(small.graph, small.types, small.order)  # the op tables built on first use
    r = count_flops(large.graph, large.types, large.order)
    assert r.macs == 400 * 8 * 16 * 16  # each MatMul (8,16)@(16,16): 8*16*16 MACs
    work_small = _bytecodes(lambda: count_flops(small.graph, small.types, small.order))
    work_large = _bytecodes(lambda: count_flops(large.graph, large.types, large.order))
    assert 1.5 < work_large / work_small < 2.3, (work_small, work_large)


def test_scan_body_slices_get_exact_shapes(tmp_path):
    # Scan over X (5, 3) along axis 0 with state s (4,): body s' = s + x_t @ W, W (3, 4).
    # The body declares x_t without a shape: its slice shape (3,) is exact.
    # per step: MatMul (3)@(3,4) = 12 MACs, 24 FLOPs; Add 4 → 28; 5 steps: 140 FLOPs, 60 MACs
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["x_t", "W"], ["p"]),
            helper.make_node("Add", ["s_in", "p"], ["s_out"]),
            helper.make_node("Identity", ["s_out"], ["y_t"]),
        ],
        "body",
        [_vi("s_in", [4]), helper.make_tensor_value_info("x_t", TensorProto.FLOAT, None)],
        [_vi("s_out", [4]), _vi("y_t", [4])],
    )
    scan = helper.make_node("Scan", ["s0", "X"], ["s", "Y"], body=body, num_scan_inputs=1)
    graph = helper.make_graph(
        [scan], "scan", [_vi("s0", [4]), _vi("X", [5, 3])], [_vi("s", [4]), _vi("Y", [5, 4])],
        initializer=[_w("W", (3, 4))],
    )
    a = graphmem.analyze(_save(tmp_path, graph))
    r = count_flops(a.graph, a.types, a.order)
    assert (r.flops, r.macs) == (140, 60)


def test_loop_without_trip_count_is_reported(tmp_path):
    # a while-loop (M omitted): its cost is unknown statically
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["x_in", "x_in"], ["x_out"])],
        "body",
        [_vi("i", [], TensorProto.INT64), _vi("cond_in", [], TensorProto.BOOL), _vi("x_in", [2])],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("x_out", [2])],
    )
    loop = helper.make_node("Loop", ["", "cond", "x"], ["y"], body=body)
    graph = helper.make_graph(
        [loop], "while", [_vi("cond", [], TensorProto.BOOL), _vi("x", [2])], [_vi("y", [2])]
    )
    path = _save(tmp_path, graph)
    with pytest.raises(UnboundDimError, match="Loop.*--value"):
        graphmem.analyze(path)  # the analysis cannot plan iterations it cannot count
    g = build_graph(load_model(path))
    r = count_flops(g, {"x": TensorType(dtype=TensorProto.FLOAT, shape=(2,))})
    assert r.unsupported == {"Loop": 1}
    assert r.costs[0].reason == "trip count unknown"
    assert r.flops == 0


def test_contrib_ops_with_declared_shapes(tmp_path):
    # com.microsoft ops have no ONNX schema: their output shapes come from the file's value_info.
    # FusedMatMul (2,8,16)@(16,32) alpha 1: MACs 2·8·32·16 = 8192, FLOPs 16384;
    # BiasGelu on (2,8,32) = 512 elements · 6 = 3072;
    # SkipLayerNormalization on (2,8,32) with gamma, beta: 512 skip adds + 8·512 + 5·16 = 4688
    ms = "com.microsoft"
    nodes = [
        helper.make_node("FusedMatMul", ["x", "W"], ["m"], domain=ms),
        helper.make_node("BiasGelu", ["m", "b"], ["g"], domain=ms),
        helper.make_node("SkipLayerNormalization", ["g", "m", "gamma", "beta"], ["y"], domain=ms),
    ]
    graph = helper.make_graph(
        nodes, "contrib", [_vi("x", [2, 8, 16])], [_vi("y", [2, 8, 32])],
        initializer=[_w("W", (16, 32)), _w("b", (32,)), _w("gamma", (32,)), _w("beta", (32,))],
        value_info=[_vi("m", [2, 8, 32]), _vi("g", [2, 8, 32])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)], ir_version=IR_VERSION
    )
    path = tmp_path / "contrib.onnx"
    onnx.save(model, str(path))
    a = graphmem.analyze(path)
    r = count_flops(a.graph, a.types, a.order)
    assert r.unsupported == {}
    assert r.by_op_type == {"FusedMatMul": 16384, "BiasGelu": 3072, "SkipLayerNormalization": 4688}
    assert r.macs == 8192
