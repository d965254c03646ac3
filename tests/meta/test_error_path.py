"""One error path: exit codes are decided by the CLI's one map (``graphmem.cli.common.handled``,
and ``main`` for what happens outside a command) from the error hierarchy of
``graphmem/errors.py``; no ``assert`` checks anything in package code (it vanishes under
``python -O``); no bare ``ValueError`` is raised. Read from the sources (ast)."""

from __future__ import annotations

import ast
from pathlib import Path

import typer
from builders import invoke

from graphmem.cli.common import handled
from graphmem.errors import EXIT_GATE_FAILED, EXIT_INPUT_ERROR, GateFailed, GraphmemError, Reported, UsageError

PACKAGE = Path(__file__).resolve().parents[2] / "graphmem"


def _trees() -> dict[str, ast.AST]:
    return {str(p.relative_to(PACKAGE.parent)): ast.parse(p.read_text(), str(p)) for p in PACKAGE.rglob("*.py")}


def _names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
    }


def test_no_assert_in_package_code() -> None:
    found = [f"{path}:{n.lineno}" for path, tree in _trees().items() for n in ast.walk(tree) if isinstance(n, ast.Assert)]
    assert not found, found


def test_no_bare_value_error_raised() -> None:
    found = []
    for path, tree in _trees().items():
        for n in ast.walk(tree):
            if isinstance(n, ast.Raise) and n.exc is not None:
                called = n.exc.func if isinstance(n.exc, ast.Call) else n.exc
                if isinstance(called, ast.Name) and called.id == "ValueError":
                    found.append(f"{path}:{n.lineno}")
    assert not found, found


def test_exit_codes_are_decided_in_the_cli_map_only() -> None:
    # exit 1 is GateFailed's (graphmem/errors.py); typer.Exit is raised by handled alone
    uses = {path for path, tree in _trees().items() if "EXIT_GATE_FAILED" in _names(tree)}
    assert uses == {"graphmem/errors.py"}, uses
    exits = sorted(
        f"{path}:{n.lineno}" for path, tree in _trees().items() for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "Exit"
    )
    assert [e.split(":")[0] for e in exits] == ["graphmem/cli/common.py", "graphmem/cli/common.py"], exits


def test_handled_maps_each_outcome() -> None:
    def raises(exc: BaseException):  # type: ignore[no-untyped-def]
        @handled
        def command() -> None:
            raise exc
        try:
            command()
        except typer.Exit as out:
            return out.exit_code
        return None

    assert raises(GateFailed()) == EXIT_GATE_FAILED == 1
    assert raises(Reported()) == EXIT_INPUT_ERROR == 2
    assert raises(UsageError("bad option")) == EXIT_INPUT_ERROR
    assert not issubclass(Reported, GraphmemError)  # nothing more is printed for it


def test_a_failed_gate_exits_1_and_says_so_once(tmp_path: Path) -> None:
    # models/tiny_cnn.onnx at batch 1 has a peak far above 1 byte
    cnn = Path(__file__).resolve().parents[2] / "models" / "tiny_cnn.onnx"
    r = invoke("peak", str(cnn), "--dim", "batch=1", "--max-peak", "1")
    assert r.exit_code == 1
    assert r.stderr.count("graphmem: gate failed:") == 1 and "graphmem: error" not in r.stderr
