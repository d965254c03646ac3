"""Session creation's arena calls (graphmem.ort.held.prepack): hand-computed packed sizes, and the
arena a real session holds before run 1."""

from __future__ import annotations

import numpy as np
import pytest
from builders import arena_held, init, model, save, tensor
from onnx import TensorProto, helper

from graphmem.analysis.held import arena_figures
from graphmem.analysis.graph_opt import analyze_graph_opt
from graphmem.model.graph import build_graph
from graphmem.model.loading import model_from_proto
from graphmem.ort.held.options import parse_session_options
from graphmem.ort.held.prepack import mlas_pack_b_size, session_creation

F = np.float32


def test_mlas_pack_b_size() -> None:
    assert mlas_pack_b_size(1000, 2048) == 1008 * 2048 * 4  # N to 16: ResNet-50's fc, 8,257,536
    assert mlas_pack_b_size(3, 4) == 256  # 16 x 4 floats = 256 bytes
    assert mlas_pack_b_size(5, 3) == 192  # 16 x 3 x 4 = 192, a multiple of 64
    assert mlas_pack_b_size(0, 8) == 0


def packing_model():  # type: ignore[no-untyped-def]
    r = np.random.default_rng(0)
    H, D, I = 24, 2, 20  # recurrent hidden, directions, input
    nodes = [
        helper.make_node("Gemm", ["x", "wg"], ["g"], transB=1),  # wg [6, 40]: N 6, K 40
        helper.make_node("MatMul", ["x", "wm"], ["m"]),  # wm [40, 3]: N 3, K 40
        helper.make_node("MatMul", ["s", "ws"], ["ms"]),  # ws [4, 3] = 48 B: reserved, then released
        helper.make_node("MatMul", ["s", "wk"], ["mk"]),  # wk [4, 3]: also read by the Add below: kept
        helper.make_node("Add", ["wk", "wk"], ["ak"]),
        helper.make_node("GRU", ["seq", "gw", "gr"], ["gy"], hidden_size=H, direction="bidirectional"),
        helper.make_node("LSTM", ["seq", "lw", "lr"], ["ly"], hidden_size=H, direction="forward"),
        helper.make_node("Attention", ["att", "aw", "ab"], ["ay"], domain="com.microsoft", num_heads=4),
        helper.make_node("ConvTranspose", ["img", "ct"], ["cy"]),
        helper.make_node("MatMul", ["x3", "w3"], ["m3"]),  # a 3-D B: not packed
    ]
    weights = [
        init("wg", r.random((6, 40), F)), init("wm", r.random((40, 3), F)), init("ws", r.random((4, 3), F)),
        init("wk", r.random((4, 3), F)), init("gw", r.random((D, 3 * H, I), F)), init("gr", r.random((D, 3 * H, H), F)),
        init("lw", r.random((1, 4 * H, I), F)), init("lr", r.random((1, 4 * H, H), F)),
        init("aw", r.random((24, 96), F)), init("ab", r.random(96, F)), init("ct", r.random((3, 2, 3, 3), F)), init("w3", r.random((2, 40, 5), F)),
    ]
    inputs = [tensor("x", [2, 40]), tensor("s", [2, 4]), tensor("seq", [5, 1, I]), tensor("att", [1, 7, 24]),
              tensor("img", [1, 3, 4, 4]), tensor("x3", [2, 3, 40])]
    outputs = [tensor("g", [2, 6]), tensor("m", [2, 3]), tensor("ms", [2, 3]), tensor("mk", [2, 3]), tensor("ak", [4, 3]),
               tensor("gy", [5, D, 1, H]), tensor("ly", [5, 1, 1, H]), tensor("ay", [1, 7, 32]),
               tensor("cy", [1, 2, 6, 6]), tensor("m3", [2, 3, 5])]
    m = model(nodes, inputs, outputs, weights)
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


#: The packed buffers, by hand (MlasGemmPackBSize(N, K) = ceil16(N) * K * 4, to 64 bytes):
PACKED = {
    "wg": 16 * 40 * 4,  # Gemm transB: N 6, K 40 -> 2560
    "wm": 16 * 40 * 4,  # MatMul: N 3, K 40 -> 2560
    "ws": 16 * 4 * 4,  # N 3, K 4 -> 256
    "wk": 256,
    "gw": 2 * 80 * 20 * 4,  # GRU W: D x pack(3H = 72 -> 80, I = 20) = 12,800
    "gr": 2 * (48 * 24 * 4 + 32 * 24 * 4),  # GRU R: D x (pack(2H, H) + pack(H, H)) = 15,360
    "lw": 96 * 20 * 4,  # LSTM W: pack(4H = 96, 20) = 7680
    "lr": 96 * 24 * 4,  # LSTM R: pack(96, 24) = 9216
    "aw": 3 * 4 * 16 * 24 * 4,  # Attention: 3 x heads x pack(head 8 -> 16, input hidden 24) = 18,432
    "ct": 4 * 3 * 18,  # ConvTranspose: 4 x K (3) x N (2*3*3) x group 1 = 216, an arena chunk
}


def test_creation_events_by_hand() -> None:
    g = build_graph(model_from_proto(packing_model()))
    c = session_creation(g)
    small = {e.weight for e in c.events if e.key.startswith("init:") and e.kind == "reserve"}
    assert small == {"ws", "wk"}  # 48 bytes each; every other weight is larger than 127 bytes
    packed: dict[str, int] = {}
    for e in c.events:
        if e.node and e.kind != "free":
            packed[e.weight] = packed.get(e.weight, 0) + e.nbytes
    assert packed == PACKED
    assert [e.kind for e in c.events if e.weight == "ct"] == ["alloc"]
    assert c.released == ("wg", "wm", "ws", "gw", "gr", "lw", "lr", "aw", "ct")  # wk is still read by Add
    assert [e.kind for e in c.events if e.key == "init:ws"] == ["reserve", "free"]
    assert c.unmodelled == ()
    assert session_creation(g, disable_prepacking=True, mem_pattern=False).events == tuple(
        e for e in c.events if e.key.startswith("init:") and e.kind == "reserve"
    )


@pytest.mark.parametrize("pairs", [(), ("session.disable_prepacking=1",)])
def test_before_run_as_onnxruntime_holds_it(tmp_path, pairs) -> None:  # type: ignore[no-untyped-def]
    path = save(packing_model(), tmp_path / "packing.onnx")
    options = parse_session_options([*pairs, "intra_op_num_threads=1"], graph_opt="none", default_threads=1)
    f = arena_figures(analyze_graph_opt(path, "none"), options)
    # prepacking: wk's 48 reserved bytes, every packed buffer reserved but ConvTranspose's (216 B,
    # a chunk of the 1M first region); without: the two small weights reserved, and the block of
    # every weight rounded to 256 (TensorAllocatorWithMemPattern)
    if pairs:
        # blocks of 256: wg 960 B -> 4, wm 480 -> 2, ws 48 -> 1, wk 48 -> 1, gw 11,520 -> 45,
        # gr 13,824 -> 54, lw 7680 -> 30, lr 9216 -> 36, aw 9216 -> 36, ab 384 -> 2, ct 216 -> 1,
        # w3 1600 -> 7
        assert f.before_run_bytes == 48 + 48 + 256 * (4 + 2 + 1 + 1 + 45 + 54 + 30 + 36 + 36 + 2 + 1 + 7)
    else:
        assert f.before_run_bytes == 48 + sum(v for k, v in PACKED.items() if k != "ct") + (1 << 20)
    assert arena_held(path, f.options, runs=1)[0] == f.before_run_bytes


def test_quantized_kernels_are_named_not_counted(tmp_path) -> None:  # type: ignore[no-untyped-def]
    nodes = [helper.make_node("MatMulInteger", ["x", "w"], ["y"])]
    m = model(nodes, [tensor("x", [2, 40], TensorProto.UINT8)], [tensor("y", [2, 8], TensorProto.INT32)],
              [init("w", np.ones((40, 8), np.uint8))])
    f = arena_figures(analyze_graph_opt(save(m, tmp_path / "q.onnx"), "none"),
                      parse_session_options(["intra_op_num_threads=1"], default_threads=1))
    assert not f.exact and [a.kind for a in f.approximations] == ["prepack_not_modelled"]
