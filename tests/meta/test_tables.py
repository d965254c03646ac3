"""Every per-op rule table is one :class:`~graphmem.optable.OpTable`: keyed by (domain, op_type),
immutable, looked up with "ai.onnx" normalised to ""."""

from __future__ import annotations

import pytest
from onnx import helper

from graphmem.flops.registry import REGISTRY
from graphmem.optable import VIEW_OPS, OpRule, OpTable, op_key
from graphmem.ort.contrib_shapes import RULES as CONTRIB_SHAPES
from graphmem.ort.cuda.rules import CPU_INPUTS, CPU_OUTPUTS, CUDA_KERNELS, CUDA_SHARING
from graphmem.ort.rules import ALIAS, MAY_INPLACE, RUNS_AS_FUNCTION, UNWRITTEN_OUTPUTS
from graphmem.ort.scratch import SCRATCH_RULES
from graphmem.shapes.refusals import CHECKS as KERNEL_CHECKS
from graphmem.training.saved import RULES as SAVED

TABLES = {
    "flops": REGISTRY, "saved": SAVED, "scratch": SCRATCH_RULES, "contrib shapes": CONTRIB_SHAPES,
    "alias": ALIAS, "may-inplace": MAY_INPLACE, "unwritten": UNWRITTEN_OUTPUTS,
    "as function": RUNS_AS_FUNCTION, "cuda kernels": CUDA_KERNELS, "cuda cpu inputs": CPU_INPUTS,
    "cuda cpu outputs": CPU_OUTPUTS, "cuda sharing": CUDA_SHARING, "kernel checks": KERNEL_CHECKS,
}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_rule_table_is_an_op_table(name: str) -> None:
    table = TABLES[name]
    assert isinstance(table, OpTable)
    assert all(isinstance(k, tuple) and len(k) == 2 and k[0] != "ai.onnx" for k in table)
    with pytest.raises(TypeError):
        table[("", "Relu")] = None  # type: ignore[index]


@pytest.mark.parametrize("name", ["flops", "saved", "scratch"])
def test_rule_tables_give_a_rule_and_an_outcome(name: str) -> None:
    assert all(isinstance(e, OpRule) and callable(e.rule) and e.outcome for e in TABLES[name].values())


def test_lookups_normalise_the_default_domain() -> None:
    node = helper.make_node("Reshape", ["x", "s"], ["y"], domain="ai.onnx")
    assert op_key(node) == ("", "Reshape")
    assert ALIAS.of(node) == ALIAS.lookup("", "Reshape") == ALIAS[("ai.onnx", "Reshape")] == ((0, 0),)
    assert ("ai.onnx", "Reshape") in ALIAS and ALIAS.lookup("ai.onnx", "Relu") is None


def test_a_key_given_twice_is_an_error() -> None:
    with pytest.raises(ValueError, match="given twice"):
        OpTable({("", "Relu"): 1}, {("ai.onnx", "Relu"): 2})


def test_one_list_of_view_ops() -> None:
    # the CPU aliases: the views, and OptionalGetElement (the value an optional holds, not a view)
    assert set(ALIAS.domain("")) == set(VIEW_OPS) | {"OptionalGetElement"}
    assert {op for (_, op), (alias, _) in CUDA_SHARING.items() if alias} == set(VIEW_OPS)
