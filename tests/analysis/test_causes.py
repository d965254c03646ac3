"""Unresolved tensors name their cause (graphmem.analysis.causes): the node that cannot take its
inputs, and the range of a bound dim its shapes resolve in. tiny_bert's token-type ids are a
slice of a [1, 512] table expanded to [batch, seq]: past seq = 512 the slice stays [1, 512] and
Expand cannot broadcast it to [1, seq]; a real onnxruntime session agrees at 512 and 513."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest
from builders import BERT, invoke

from graphmem.analysis import analyze
from graphmem.analysis.causes import MAX_PROBES, _working_range

EXPAND = "/model/embeddings/Expand_1"


def test_bert_past_its_table_names_the_expand_and_seq_le_512() -> None:
    a = analyze(BERT, dims={"batch": 1, "seq": 600})
    assert len(a.shapes.unresolved) == 137
    (cause,) = a.shapes.causes
    assert (cause.node, cause.op_type, cause.dim, cause.value, cause.resolves_for) == (EXPAND, "Expand", "seq", 600, "seq ≤ 512")
    assert cause.tensors == (f"{EXPAND}_output_0",)
    assert cause.inputs == "[1, 512], [2] = [1, 600]"  # the table's slice, and the target shape
    first = a.activations.approximations[0]
    assert first.kind == "unresolved_tensor" and "cannot take seq=600" in first.detail and "seq ≤ 512" in first.detail


def test_the_range_is_where_onnxruntime_runs() -> None:
    assert not analyze(BERT, dims={"batch": 1, "seq": 512}).shapes.unresolved
    assert analyze(BERT, dims={"batch": 1, "seq": 513}).shapes.causes[0].resolves_for == "seq ≤ 512"
    so = ort.SessionOptions()
    so.log_severity_level = 4
    session = ort.InferenceSession(str(BERT), so, providers=["CPUExecutionProvider"])

    def runs(seq: int) -> str:
        feeds = {"input_ids": np.zeros((1, seq), np.int64), "attention_mask": np.ones((1, seq), np.int64)}
        try:
            session.run(None, feeds)
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types
            return str(exc)
        return "ok"

    assert runs(512) == "ok"
    assert f"Name:'{EXPAND}' Status Message: invalid expand shape" in runs(513)


def test_cli_table_and_json_name_the_cause() -> None:
    result = invoke("peak", str(BERT), "-d", "batch=1", "-d", "seq=600")
    assert result.exit_code == 0, result.output
    assert (
        f"  cause: node '{EXPAND}' (Expand) cannot take seq=600 (its inputs: [1, 512], [2] = [1, 600]); "
        "its shapes resolve for seq ≤ 512"
    ) in result.stdout.splitlines()
    doc = json.loads(invoke("peak", str(BERT), "-d", "batch=1", "-d", "seq=600", "--json").stdout)
    (cause,) = doc["shapes"]["causes"]
    assert {k: cause[k] for k in ("node", "dim", "value", "resolves_for")} == {
        "node": EXPAND, "dim": "seq", "value": 600, "resolves_for": "seq ≤ 512"}


def test_resolved_models_have_no_causes() -> None:
    assert analyze(BERT, dims={"batch": 1, "seq": 8}).shapes.causes == ()


def test_working_range_by_bisection() -> None:
    # works up to 512, bound at 600: 1 works, then bisection of (1, 600)
    assert _working_range(lambda v: v <= 512, 600, [MAX_PROBES]) == (1, 512)
    # works from 37, bound at 3: 1 fails, 6 fails, 12, 24 fail, 48 works; bisection of (3, 48)
    assert _working_range(lambda v: v >= 37, 3, [MAX_PROBES]) == (37, None)
    # nothing works: no range
    assert _working_range(lambda v: False, 600, [MAX_PROBES]) == (None, None)
    # the budget of inferences runs out: no range (1 and the first bisection step only)
    budget = [2]
    assert _working_range(lambda v: v <= 512, 600, budget) == (None, None) and budget == [0]


def test_a_value_dependent_size_is_named_as_such(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # x [4] -> NonZero -> y [1, ?]: the count of non-zeros is known only when it runs; no dim to search
    import onnx
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("NonZero", ["x"], ["y"])], "nz",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    path = tmp_path / "nonzero.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8), str(path))
    (cause,) = analyze(path).shapes.causes
    assert (cause.kind, cause.dim, cause.tensors) == ("value_dependent", None, ("y",))
    assert cause.detail == "node 'NonZero_0' (NonZero): the size of its output depends on values not known before the run (its inputs: [4])"


def test_dim_zero_is_an_empty_tensor_as_onnxruntime_runs_it() -> None:
    # --dim batch=0: tiny_cnn's tensors are all empty (0 bytes), and a real session measures 0 too
    from builders import CNN

    result = invoke("verify", "--resident-processes", "0", str(CNN), "-d", "batch=0", "--json", "--tolerance", "0%")
    assert result.exit_code == 0, result.output
    v = json.loads(result.stdout)["verify"]
    assert (v["predicted_bytes"], v["measured_bytes"], v["passed"]) == (0, 0, True)
    # tiny_bert cannot take batch=0: the attention's Reshape infers a -1 from no elements, and
    # onnxruntime fails at that node too
    a = analyze(BERT, dims={"batch": 0, "seq": 8})
    first = a.shapes.causes[0]
    reshape = "/model/encoder/layer.0/attention/self/Reshape_1"
    assert (first.node, first.inputs, first.resolves_for) == (reshape, "[0, 8, 64], [4] = [0, 8, -1, 16]", "batch ≥ 1")
    session = ort.InferenceSession(str(BERT), providers=["CPUExecutionProvider"])
    try:
        session.run(None, {"input_ids": np.zeros((0, 8), np.int64), "attention_mask": np.ones((0, 8), np.int64)})
        raised = ""
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types
        raised = str(exc)
    assert f"Reshape node. Name:'{reshape}'" in raised


def test_a_range_is_claimed_only_where_the_values_around_its_end_work() -> None:
    # an equal split of n works at even n: from 3, 1 fails, 6 works, bisection (3, 6) gives 4; 5
    # fails, so "n ≥ 4" is not claimed
    assert _working_range(lambda v: v % 2 == 0, 3, [MAX_PROBES]) == (None, None)
    # a multiple of 4 (DepthToSpace): from 6, 12 works, bisection gives 8; 9 fails
    assert _working_range(lambda v: v % 4 == 0, 6, [MAX_PROBES]) == (None, None)


def test_equal_split_names_its_node_without_a_range(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Split-13(x [n]) into 2 outputs: onnx refuses an odd n, onnxruntime fails ("cannot be split evenly")
    import onnx
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Split", ["x"], ["a", "b"], name="split")], "s",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in "ab"])
    path = tmp_path / "split.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    (cause,) = analyze(path, dims={"n": 3}).shapes.causes
    assert (cause.kind, cause.dim, cause.detail) == ("refused", None, "node 'split' (Split) gives no shape for its inputs ([3])")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="Input cannot be split evenly on selected axis"):
        session.run(None, {"x": np.zeros(3, np.float32)})


def test_optimized_graph_refusal_is_a_refusal_with_its_range() -> None:
    # at --graph-opt all onnxruntime's file declares every tensor's rank: the Expand's output is
    # [?, ?], not rankless, yet its inference refused the inputs: a refusal (not a value-dependent size)
    from graphmem.analysis.graph_opt import analyze_graph_opt

    # (the mask's Ranges after it have limits computed from its output: value-dependent sizes)
    causes = analyze_graph_opt(BERT, graph_opt="all", dims={"batch": 1, "seq": 600}).shapes.causes
    assert [(c.node, c.kind, c.resolves_for) for c in causes] == [
        (EXPAND, "refused", "seq ≤ 512"), ("/model/Range", "value_dependent", ""), ("/model/Range_1", "value_dependent", "")]
