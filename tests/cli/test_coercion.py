"""The command line's option conversion without pydantic (:mod:`graphmem.cli.coercion`) gives what
typer's own gives: ``main()`` (light converters, only the invoked command built) and typer's runner
over the whole ``app`` (typer's adapters) agree on output and exit code, for good and bad values."""

from __future__ import annotations

import pytest
from builders import MODELS, invoke

from graphmem.cli import main

TINY = str(MODELS / "tiny_cnn.onnx")

CASES = [
    ["peak", TINY, "--dim", "batch=1", "--json"],  # a Path argument, a list[str] option, a flag
    ["peak", TINY, "--dim", "batch=1", "--max-peak", "1KiB"],  # a str option: the gate fails, exit 1
    ["peak", TINY, "--dim", "batch=2", "--format", "csv"],
    ["layers", TINY, "--dim", "batch=1", "--top", "3", "--sort", "bytes"],  # an int given: typer's adapter
    ["layers", TINY, "--dim", "batch=1", "--top", "x"],  # a bad int: typer's message, exit 2
    ["peak", str(MODELS / "no_such_model.onnx")],  # a path that does not exist: graphmem's message
    ["peek", TINY],  # an unknown command: every command is built, typer suggests one
]


@pytest.mark.parametrize("argv", CASES, ids=lambda a: " ".join(a[:1] + a[2:]))
def test_main_converts_options_as_typer_does(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(argv)
    out, err = capsys.readouterr()
    expected = invoke(*argv)
    assert code == expected.exit_code
    assert out == expected.stdout
    if err:  # main() prints typer's usage error as one line, the runner in a box: the same words
        message = err.removeprefix("graphmem: error: ").split()
        boxed = [w for w in expected.stderr.split() if w not in "│╭─╮╰╯" and not w.startswith(("╭", "╰", "─"))]
        assert " ".join(message) in " ".join(boxed)


def test_a_bad_int_is_named_as_typer_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    # typer's own adapter is built for a value the light converters do not take
    assert main(["layers", TINY, "--dim", "batch=1", "--top", "x"]) == 2
    assert "Invalid value for '--top'" in capsys.readouterr().err
