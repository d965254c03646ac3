"""Private folders survive no terminating signal: one that arrives while the folder is made or
removed is held (``pthread_sigmask``) and delivered once the folder is registered or gone."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest

from graphmem.cli.common import terminating_signals
from graphmem.errors import Terminated
from graphmem.tempdirs import private_dir, signals_held


def _made(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir())


@pytest.fixture
def tmpdir_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_a_signal_while_the_folder_is_made_is_delivered_inside_the_block(tmpdir_here: Path) -> None:
    real = tempfile.mkdtemp

    def mkdtemp_signalled(**kw: object) -> str:
        path = real(**kw)  # type: ignore[arg-type]
        os.kill(os.getpid(), signal.SIGTERM)  # held: the handler has not run yet
        return path

    with terminating_signals(), pytest.raises(Terminated):
        tempfile.mkdtemp, saved = mkdtemp_signalled, tempfile.mkdtemp
        try:
            with private_dir("graphmem-test-") as path:
                assert path.is_dir()  # the signal is delivered here, after registration
                raise AssertionError("unreachable: the held signal ends the block")  # pragma: no cover
        finally:
            tempfile.mkdtemp = saved
    assert _made(tmpdir_here) == []


def test_the_folder_goes_however_the_block_ends(tmpdir_here: Path) -> None:
    with pytest.raises(ValueError), private_dir("graphmem-test-") as path:
        (path / "f").write_text("x")
        raise ValueError
    with private_dir("graphmem-test-") as path:
        assert path.parent == tmpdir_here
    assert _made(tmpdir_here) == []


def test_signals_held_delays_delivery_to_the_end_of_the_block() -> None:
    seen: list[str] = []
    with terminating_signals(), pytest.raises(Terminated):
        try:
            with signals_held():
                os.kill(os.getpid(), signal.SIGTERM)
                seen.append("still inside")
        finally:
            seen.append("after")
    assert seen == ["still inside", "after"]
