"""Exact, or says why: ``activations.exact`` and ``activations.approximations``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper

import graphmem
from graphmem.analysis.result import APPROXIMATION_KINDS
from graphmem.schema import load_schema, validate

from builders import CNN, init, invoke, model, save, tensor


def test_a_cleanly_exported_model_is_exact() -> None:
    a = graphmem.analyze(CNN, dims={"batch": 1})
    assert a.activations.exact and a.activations.approximations == ()
    doc = json.loads(invoke("peak", str(CNN), "-d", "batch=1", "--json").stdout)
    assert doc["activations"]["exact"] is True and doc["activations"]["approximations"] == []


def test_an_unknown_if_condition_is_named_with_both_branch_peaks(tmp_path: Path) -> None:
    """An If whose condition is a graph input without --value: both branches are planned, the
    larger is assumed, and the figures are not presented as exact."""
    def branch(name: str, value: float):  # type: ignore[no-untyped-def]
        return helper.make_graph(
            [helper.make_node("Add", ["X", "c_" + name], ["y_" + name])], name, [],
            [tensor("y_" + name, [1024])], [init("c_" + name, np.full(1024, value, np.float32))],
        )
    m = model(
        [helper.make_node("If", ["cond"], ["Y"], then_branch=branch("then", 1.0), else_branch=branch("else", 2.0))],
        [tensor("cond", [], TensorProto.BOOL), tensor("X", [1024])], [tensor("Y", [1024])],
    )
    a = graphmem.analyze(save(m, tmp_path / "if.onnx"))
    assert not a.activations.exact
    kinds = [(x.kind, x.node) for x in a.activations.approximations]
    assert ("branch_assumed", "If_0") in kinds and not any(k == "unplanned_subgraph" for k, _ in kinds)
    # each branch: the If's 4,096 B output (allocated before the branch) and its Add writing into it
    assumed = next(x for x in a.activations.approximations if x.kind == "branch_assumed")
    assert "then 4,096 B" in assumed.detail and "else 4,096 B" in assumed.detail
    result = invoke("peak", str(tmp_path / "if.onnx"))
    assert result.exit_code == 0 and "NOT EXACT" in result.stdout and "branch_assumed ×1" in result.stdout
    bound = graphmem.analyze(tmp_path / "if.onnx", values={"cond": (1,)})
    assert not any(x.kind == "branch_assumed" for x in bound.activations.approximations)
    assert bound.activations.peak_bytes == 4096 and bound.activations.peak_node == "If_0"


def test_an_unresolved_tensor_makes_the_figures_inexact(tmp_path: Path) -> None:
    """NonZero's output length depends on the data: its tensor has no static size."""
    m = model(
        [helper.make_node("NonZero", ["X"], ["idx"]), helper.make_node("Cast", ["idx"], ["Y"], to=TensorProto.FLOAT)],
        [tensor("X", [8])], [tensor("Y", None)],
    )
    a = graphmem.analyze(save(m, tmp_path / "nz.onnx"))
    kinds = {x.kind for x in a.activations.approximations}
    assert not a.activations.exact and kinds == {"unresolved_tensor", "scratch_not_modelled"}  # NonZero: no scratch rule
    doc = json.loads(invoke("peak", str(tmp_path / "nz.onnx"), "--json").stdout)
    validate(doc, "peak")
    assert doc["activations"]["exact"] is False
    assert {x["kind"] for x in doc["activations"]["approximations"]} == kinds


def test_the_schema_lists_every_kind() -> None:
    items = load_schema("peak")["properties"]["activations"]["properties"]["approximations"]["items"]
    assert items["properties"]["kind"]["enum"] == list(APPROXIMATION_KINDS)
