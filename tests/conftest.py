"""Shared fixtures: the committed models, the onnx wheel's third-party corpus, tiny graphs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
LIGHT = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"


@pytest.fixture(scope="session")
def models_dir() -> Path:
    return MODELS


@pytest.fixture(scope="session")
def light_dir() -> Path:
    return LIGHT


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
