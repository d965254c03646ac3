"""What onnxruntime 1.31 refuses that depends on the machine (StringNormalizer's locale,
``graphmem.ort.loadable.check_nodes``), and a function op the checker alone would refuse
(MeanVarianceNormalization without axes, ``graphmem.model.validate``): each case checked against a
real onnxruntime session, both ways."""

from __future__ import annotations

from pathlib import Path

import pytest
from onnx import TensorProto, helper

import graphmem
from graphmem.errors import InvalidModelError
from graphmem.ort.loadable import _has_locale

from builders import model, ort_loads, save, tensor


def _refused(path: Path, phrase: str) -> None:
    with pytest.raises(InvalidModelError, match=phrase):
        graphmem.analyze(path)
    assert not ort_loads(path)


@pytest.mark.skipif(_has_locale("en_US.UTF-8") is not False, reason="this machine has the en_US.UTF-8 locale")
def test_string_normalizer_locale_this_machine_lacks(tmp_path: Path) -> None:
    def one(**attrs) -> Path:  # type: ignore[no-untyped-def]
        node = helper.make_node("StringNormalizer", ["x"], ["y"], **attrs)
        name = "_".join(f"{k}{v}" for k, v in attrs.items())
        return save(model([node], [tensor("x", [3], TensorProto.STRING)], [tensor("y", [3], TensorProto.STRING)]),
                    tmp_path / f"{name}.onnx")

    # the constructor builds the locale to change case or to compare stop words case-insensitively
    _refused(one(is_case_sensitive=1, case_change_action="LOWER"), "has no such locale")
    _refused(one(is_case_sensitive=0, stopwords=["a"]), "has no such locale")
    for fine in (one(is_case_sensitive=0), one(is_case_sensitive=1, stopwords=["a"]),
                 one(is_case_sensitive=1, case_change_action="LOWER", locale="C")):
        assert graphmem.analyze(fine).activations.peak_bytes == 96 and ort_loads(fine)  # 3 strings x 32 B


def test_has_locale_knows_c() -> None:
    assert _has_locale("C") in (True, None)
    assert _has_locale("xx_NOT.A-LOCALE") in (False, None)


def test_function_attribute_left_at_its_default(tmp_path: Path) -> None:
    # MeanVarianceNormalization without axes: onnx's checker expands the body's
    # Constant(value_ints=@axes) without the default and fails; onnxruntime loads it (its kernel).
    # Run 1 (one thread): Y, 2x3x4x5 floats = 480 B, the only arena tensor.
    node = helper.make_node("MeanVarianceNormalization", ["X"], ["Y"])
    path = save(model([node], [tensor("X", [2, 3, 4, 5])], [tensor("Y", [2, 3, 4, 5])], opset=13), tmp_path / "mvn.onnx")
    assert graphmem.analyze(path).activations.peak_bytes == 480
    assert ort_loads(path)
