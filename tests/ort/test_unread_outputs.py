"""Unread outputs and the free list, on graphs small enough to follow by hand, predicted by the
planner emulation and measured on a real onnxruntime session (run 1, profiler node events).

An output nothing reads goes to the free list right after its step (allocation_planner.cc
ComputeSingleStreamReusePlan); a later value may be planned into it. onnxruntime 1.31 then
requests a buffer of its own for a later value that nothing reads either (the 256 B per GRU
layer, 512 B per LSTM layer of issue 14), and shares the buffer with a value that is read.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import graphmem
from graphmem.verify import measure

F = TensorProto.FLOAT


def _save(tmp_path, name, nodes, inputs, outputs, inits=()):  # type: ignore[no-untyped-def]
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    path = tmp_path / f"{name}.onnx"
    onnx.save(m, str(path))
    return path


def _measured(path, feeds) -> list[int]:  # type: ignore[no-untyped-def]
    nodes = measure(str(path), feeds, runs=1).runs[0].nodes
    base = nodes[0].requested_in_use - nodes[0].requested_delta
    return [n.requested_in_use - base for n in nodes]


def _splits(tmp_path, read_second: bool):  # type: ignore[no-untyped-def]
    nodes = [
        helper.make_node("Split", ["x"], ["a1", "a2"], axis=1, num_outputs=2),
        helper.make_node("Relu", ["a1"], ["r1"]),
        helper.make_node("Concat", ["r1", "r1"], ["c1"], axis=1),
        helper.make_node("Split", ["c1"], ["b1", "b2"], axis=1, num_outputs=2),
    ]
    if read_second:
        nodes += [helper.make_node("Abs", ["b2"], ["d2"]), helper.make_node("Add", ["b1", "d2"], ["out"])]
    else:
        nodes += [helper.make_node("Relu", ["b1"], ["out"])]
    return _save(tmp_path, f"splits_{read_second}", nodes, [helper.make_tensor_value_info("x", F, [1, 64])],
                 [helper.make_tensor_value_info("out", F, [1, 32])])


@pytest.mark.parametrize(
    ("read_second", "expected"),
    [
        # a1, a2 128 B each (a2 unread: freed into the list, held); Relu in place on a1; c1 256;
        # b1 takes a1's slot (released after Concat: requested again, 128); b2, unread, is planned
        # into a2's slot but requests its own 128; out 128, c1 released.
        (False, [256, 256, 512, 640, 512]),
        # b2 is read (Abs): it shares a2's held slot; d2 128 (c1 released); out 128 (a2 released).
        (True, [256, 256, 512, 512, 384, 384]),
    ],
)
def test_an_unread_value_in_an_unread_values_buffer_requests_its_own(tmp_path, read_second, expected) -> None:  # type: ignore[no-untyped-def]
    path = _splits(tmp_path, read_second)
    a = graphmem.analyze(path)
    assert [held for _, held in a.activations.timeline] == expected
    assert _measured(path, {"x": np.ones((1, 64), np.float32)}) == expected


def test_two_gru_layers_hold_both_final_states(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # X [seq 5, batch 1, 8]; hidden 4. GRU_0: Y 5·1·1·4·4 = 80 B, Y_h (unread) 16 B -> 96;
    # Squeeze views Y; GRU_1: Y 80 + its unread Y_h 16 (its own, not GRU_0's) -> 192; the
    # output Squeeze is a graph output: its own 80 B copy, GRU_1's Y released after it -> 192.
    rng = np.random.default_rng(0)

    def w(name, *shape):  # type: ignore[no-untyped-def]
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    inits = [w("W1", 1, 12, 8), w("R1", 1, 12, 4), w("W2", 1, 12, 4), w("R2", 1, 12, 4),
             numpy_helper.from_array(np.array([1], np.int64), "ax1")]
    nodes = [
        helper.make_node("GRU", ["x", "W1", "R1"], ["y1", "yh1"], hidden_size=4),
        helper.make_node("Squeeze", ["y1", "ax1"], ["s1"]),
        helper.make_node("GRU", ["s1", "W2", "R2"], ["y2", "yh2"], hidden_size=4),
        helper.make_node("Squeeze", ["y2", "ax1"], ["out"]),
    ]
    path = _save(tmp_path, "gru2", nodes, [helper.make_tensor_value_info("x", F, [5, 1, 8])],
                 [helper.make_tensor_value_info("out", F, [5, 1, 4])], inits)
    a = graphmem.analyze(path)
    assert [held for _, held in a.activations.timeline] == [96, 96, 192, 192]
    assert _measured(path, {"x": np.ones((5, 1, 8), np.float32)}) == [96, 96, 192, 192]
