"""Shared fixtures: the pinned host, the committed models, the onnx wheel's third-party corpus,
models built once per session. Plain builders (paths, inline graphs, planner programs, CLI
helpers) are in ``builders.py``; pytest advises against importing conftest, so fixtures live here
and builders there.

No test depends on the machine running it: every analysis is for :data:`builders.PINNED_HOST`
(``$GRAPHMEM_HOST`` names a file holding it, so graphmem's edges, subprocesses included, take it
for "this machine"), and graphmem's machine readers (:data:`graphmem.host.MACHINE_READERS`) raise
in every test but those marked ``reads_machine`` (the test of ``read_host`` itself).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest

import graphmem.host
from builders import LIGHT, MODELS, PINNED_HOST, ROOT, tiny_decoder


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "reads_machine: the test reads the machine running it (graphmem.host.read_host)")


@pytest.fixture(scope="session", autouse=True)
def pinned_host_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``$GRAPHMEM_HOST`` → a file holding :data:`builders.PINNED_HOST`, for the whole session."""
    path = tmp_path_factory.mktemp("host") / "pinned_host.json"
    path.write_text(PINNED_HOST.to_json())
    before = os.environ.get(graphmem.host.HOST_ENV)
    os.environ[graphmem.host.HOST_ENV] = str(path)
    yield path
    if before is None:
        os.environ.pop(graphmem.host.HOST_ENV, None)
    else:
        os.environ[graphmem.host.HOST_ENV] = before


class MachineRead(AssertionError):
    """A test reached one of graphmem's machine readers."""


@pytest.fixture(autouse=True)
def _machine_unread(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every machine reader of :mod:`graphmem.host` raises (and nothing is cached from an earlier
    read), unless the test is marked ``reads_machine``."""
    if request.node.get_closest_marker("reads_machine") is not None:
        return

    def refuse(name: str):  # type: ignore[no-untyped-def]
        def reader(*args: object, **kwargs: object) -> object:
            raise MachineRead(f"a test read the machine (graphmem.host.{name}{args!r}): pin the host instead")
        return reader

    for name in graphmem.host.MACHINE_READERS:
        monkeypatch.setattr(graphmem.host, name, refuse(name))
    monkeypatch.setattr(graphmem.host, "_read_once", graphmem.host.read_host)


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
