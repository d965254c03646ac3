"""Unresolved tensors name their cause (graphmem.analysis.causes): the node that cannot take its
inputs, and the range of a bound dim its shapes resolve in. tiny_bert's token-type ids are a
slice of a [1, 512] table expanded to [batch, seq]: past seq = 512 the slice stays [1, 512] and
Expand cannot broadcast it to [1, seq]; a real onnxruntime session agrees at 512 and 513."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
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
