"""Packaging metadata (read from pyproject.toml, nothing installed): the base install brings no
runtime, the extras bring one each, the tests bring the one CI measures with; the pre-commit
hook graphmem publishes runs the console script the package installs."""

from __future__ import annotations

import re
import tomllib

import yaml
from builders import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(requirements: list[str]) -> dict[str, str]:
    """requirement name (normalised) -> its version specifier."""
    out = {}
    for req in requirements:
        m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(.*)", req)
        assert m is not None, req
        out[m.group(1).lower().replace("_", "-")] = m.group(2).strip()
    return out


def test_base_install_has_no_runtime() -> None:
    base = _names(PROJECT["dependencies"])
    assert not [name for name in base if name.startswith("onnxruntime")]
    assert {"onnx", "numpy", "networkx", "typer"} <= set(base)
    assert base["ml-dtypes"] == "<0.7"  # the start-up regression of 0.7.0 (see pyproject's comment)


def test_extras_bring_one_runtime_each() -> None:
    extras = {name: _names(reqs) for name, reqs in PROJECT["optional-dependencies"].items()}
    assert [n for n in extras["cuda"] if n.startswith("onnxruntime")] == ["onnxruntime-gpu"]
    assert [n for n in extras["cpu"] if n.startswith("onnxruntime")] == ["onnxruntime"]
    assert extras["cuda"]["onnxruntime-gpu"] == extras["cpu"]["onnxruntime"] == ">=1.31,<1.33"
    # CI installs '.[test]': the runtime the accuracy figures were measured with
    assert extras["test"]["onnxruntime-gpu"] == "==1.31.1"
    assert "onnxruntime" not in extras["test"]


def test_pre_commit_hook_runs_the_installed_console_script() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "graphmem-check"]
    assert hook["entry"] == "graphmem check" and hook["language"] == "python"
    assert hook["pass_filenames"] is False and re.search(hook["files"], "models/model.onnx")
    assert "graphmem" in PROJECT["scripts"]
