"""Shared fixtures: the committed models, the onnx wheel's third-party corpus, models built once
per session. Plain builders (paths, inline graphs, planner programs, CLI helpers) are in
``builders.py``; pytest advises against importing conftest, so fixtures live here and builders there.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from builders import LIGHT, MODELS, ROOT, tiny_decoder


@pytest.fixture(scope="session")
def models_dir() -> Path:
    return MODELS


@pytest.fixture(scope="session")
def light_dir() -> Path:
    return LIGHT


@pytest.fixture(scope="session")
def decoder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The path of :func:`builders.tiny_decoder` (a 2-layer KV-cache decoder step), saved once."""
    path = tmp_path_factory.mktemp("kv") / "tiny_decoder.onnx"
    onnx.save(tiny_decoder(), str(path))
    return str(path)


@pytest.fixture(scope="session")
def llama_tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer Llama-shaped decoder whose weights are external-data references to a file
    that does not exist (made by scripts/make_llama7b.py)."""
    out = tmp_path_factory.mktemp("llama")
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "make_llama7b.py"),
            "--out",
            str(out),
            "--layers",
            "2",
            "--hidden",
            "64",
            "--heads",
            "4",
            "--intermediate",
            "128",
            "--vocab",
            "100",
            "--name",
            "llama_tiny.onnx",
        ],
        check=True,
        capture_output=True,
    )
    return out / "llama_tiny.onnx"
