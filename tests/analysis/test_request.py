"""What one analysis is asked (graphmem/analysis/request.py): Bindings parsed and checked once,
the request checked when built, and the public API's keywords and ``bindings=`` giving one result."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from builders import model, save, tensor
from onnx import helper

import graphmem
from graphmem.analysis.request import AnalysisRequest, Bindings, request_of
from graphmem.errors import UnboundDimError, UnknownDimError, UsageError
from graphmem.model.loading import load_model


def _exp(tmp_path: Path) -> Path:
    nodes = [helper.make_node("Exp", ["x"], ["t"], name="e0"), helper.make_node("Exp", ["t"], ["y"], name="e1")]
    return save(model(nodes, [tensor("x", ["batch", 256])], [tensor("y", ["batch", 256])]), tmp_path / "exp.onnx")


def test_parse_gives_the_three_bindings() -> None:
    b = Bindings.parse(["batch=8", "seq=0"], ["x=1x3x4x4", "s=[2x3,4]", "o=none"], ["sr=16000", "speed=1.5"])
    assert b == Bindings(
        dims={"batch": 8, "seq": 0},
        shapes={"x": (1, 3, 4, 4), "s": ((2, 3), (4,)), "o": None},
        values={"sr": (16000,), "speed": (1.5,)},
    )


@pytest.mark.parametrize(("dims", "shapes", "values"), [
    (["batch"], None, None), (["batch=-1"], None, None), (["batch=8", "batch=9"], None, None),
    (None, ["x=1xQ"], None), (None, None, ["sr=loud"]),
])
def test_malformed_items_are_usage_errors(dims, shapes, values) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UsageError):
        Bindings.parse(dims, shapes, values)


def test_of_copies_and_bind_makes_a_new_value() -> None:
    dims = {"batch": 2}
    b = Bindings.of(dims=dims, shapes={"x": [1, 4]}, values={"n": [3, 4]})
    dims["batch"] = 99  # the caller's mapping, not the binding's
    assert (b.dims, b.shapes, b.values) == ({"batch": 2}, {"x": (1, 4)}, {"n": (3, 4)})
    point = b.bind({"seq": 16})
    assert point.dims == {"batch": 2, "seq": 16} and b.dims == {"batch": 2}
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.dims = {}  # type: ignore[misc]
    with pytest.raises(UsageError):
        Bindings.of(dims=[("batch", 2)])  # type: ignore[arg-type]


def test_resolve_checks_against_the_model(tmp_path: Path) -> None:
    inputs = load_model(_exp(tmp_path)).inputs
    assert Bindings.of(dims={"batch": 2}).resolve(inputs).shapes == {"x": (2, 256)}
    assert Bindings.of(shapes={"x": (3, 256)}).resolve(inputs).dims == {"batch": 3}  # implied by the shape
    with pytest.raises(UnknownDimError):
        Bindings.of(dims={"seq": 2}).resolve(inputs)
    with pytest.raises(UnboundDimError):
        Bindings().resolve(inputs)


def test_request_is_checked_when_built() -> None:
    assert AnalysisRequest().cpu and AnalysisRequest().cpu_type_rules
    assert not AnalysisRequest(kernel_rules=False).cpu_type_rules
    assert not AnalysisRequest(provider="cuda").cpu_type_rules
    with pytest.raises(UsageError, match="provider 'tpu'"):
        AnalysisRequest(provider="tpu")
    with pytest.raises(UsageError, match="execution order 'random'"):
        AnalysisRequest(execution_order="random")
    with pytest.raises(UsageError, match="not both"):
        request_of(bindings=Bindings(), dims={"batch": 1})
    assert request_of(dims={"batch": 1}, provider="cuda") == AnalysisRequest(
        bindings=Bindings(dims={"batch": 1}), provider="cuda"
    )


def test_keywords_and_bindings_give_one_analysis(tmp_path: Path) -> None:
    # x [2,256] float = 2,048 B; e0: t 2,048 B; e1: y 2,048 B while t is still read: peak 4,096 B.
    path = _exp(tmp_path)
    by_keywords = graphmem.analyze(path, dims={"batch": 2})
    by_bindings = graphmem.analyze(path, bindings=Bindings.of(dims={"batch": 2}))
    assert by_keywords.activations.peak_bytes == by_bindings.activations.peak_bytes == 4_096
    assert by_bindings.model.dims == {"batch": 2}
    with pytest.raises(UsageError):
        graphmem.analyze(path, dims={"batch": 2}, bindings=Bindings.of(dims={"batch": 2}))
    with pytest.raises(UsageError, match="not both"):
        graphmem.analysis.analyze_model(load_model(path), AnalysisRequest(), provider="cpu")
