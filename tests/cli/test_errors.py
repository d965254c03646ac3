"""Bad input: one line on stderr, exit code 2, no traceback, nothing written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from builders import init, model, run_graphmem, save, tensor
from onnx import helper


def relu_model(shape=("batch", 8)):  # type: ignore[no-untyped-def]
    return model([helper.make_node("Relu", ["X"], ["Y"])], [tensor("X", list(shape))], [tensor("Y", list(shape))])


def cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (arguments, a phrase the error line must contain)."""
    (tmp / "text.onnx").write_text("this is not a model\n" * 20)
    (tmp / "empty.onnx").write_bytes(b"")
    (tmp / "adir").mkdir()
    good = save(relu_model(), tmp / "good.onnx")
    full = save(
        model(
            [helper.make_node("MatMul", ["X", "W"], ["Y"])],
            [tensor("X", [1, 64])],
            [tensor("Y", [1, 64])],
            [init("W", np.ones((64, 64), np.float32))],
        ),
        tmp / "weights.onnx",
    )
    data = full.read_bytes()
    (tmp / "truncated.onnx").write_bytes(data[: len(data) // 2])
    cyc = model(
        [helper.make_node("Relu", ["X", "b"], ["a"]), helper.make_node("Relu", ["a"], ["b"])],
        [tensor("X", [4])],
        [tensor("b", [4])],
    )
    cyc.graph.node[0].op_type = "Add"
    save(cyc, tmp / "cycle.onnx")
    save(
        model([helper.make_node("Add", ["X", "ghost"], ["Y"])], [tensor("X", [4])], [tensor("Y", [4])]),
        tmp / "dangling.onnx",
    )
    odd = model([helper.make_node("Frobnicate", ["X"], ["Y"], domain="com.example")], [tensor("X", [4])], [tensor("Y", None)])
    odd.opset_import.append(helper.make_opsetid("com.example", 1))
    save(odd, tmp / "domain.onnx")
    return {
        "missing": (["peak", "nope.onnx"], "no such file"),
        "directory": (["peak", "adir"], "directory"),
        "empty": (["peak", "empty.onnx"], "empty"),
        "not onnx": (["peak", "text.onnx"], "not"),
        "truncated": (["peak", "truncated.onnx"], "truncated"),
        "cycle": (["peak", "cycle.onnx"], "cycle"),
        "dangling": (["peak", "dangling.onnx"], "dangling"),
        "unbound dim": (["peak", str(good.name)], "--dim batch=N"),
        "unknown dim": (["peak", "good.onnx", "--dim", "batch=2", "--dim", "seq=3"], "no dim 'seq'"),
        "negative dim": (["peak", "good.onnx", "--dim", "batch=-2"], "0 or more"),
        "negative shape dim": (["peak", "good.onnx", "--shape", "x=1x-3"], "0 or more"),
        "shape of an unknown input": (["peak", "good.onnx", "--shape", "nosuch=1x3"], "no input 'nosuch'"),
        "value not a number": (["peak", "good.onnx", "--value", "x=3,abc"], "'abc' is not a number"),
        "overflowing dim": (["peak", "good.onnx", "--dim", "batch=99999999999999999999"], "absurd"),
        "malformed dim": (["peak", "good.onnx", "--dim", "batch"], "NAME=VALUE"),
        "unknown domain": (["peak", "domain.onnx"], "unknown domain"),
    }


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[list[str], str]]]:
    tmp = tmp_path_factory.mktemp("bad")
    return tmp, cases(tmp)




@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "directory",
        "empty",
        "not onnx",
        "truncated",
        "cycle",
        "dangling",
        "unbound dim",
        "unknown dim",
        "negative dim",
        "overflowing dim",
        "malformed dim",
        "unknown domain",
    ],
)
def test_bad_input_is_one_line_exit_2(bad_inputs, case: str) -> None:  # type: ignore[no-untyped-def]
    tmp, table = bad_inputs
    args, phrase = table[case]
    before = sorted((p.name, p.stat().st_mtime_ns) for p in tmp.iterdir())
    done = run_graphmem(*args, cwd=tmp)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("graphmem: error:")
    assert phrase in lines[0], lines[0]
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert sorted((p.name, p.stat().st_mtime_ns) for p in tmp.iterdir()) == before
