"""A termination signal (SIGTERM, SIGINT, SIGHUP) ends graphmem with 128 + the signal's number,
one error line, and without leaving its private temporary folders behind (fuzz case 4827:
``verify --random-weights`` killed by the fuzzer's timeout left ``graphmem-measure-*`` and
``graphmem-verify-*``). Real onnxruntime sessions in a real child process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from builders import ROOT, init, model, save, tensor
from onnx import helper

#: MatMuls of x [256, 1024] by 1024 x 1024 weights, one after the other: about 0.5 GFLOP each, so
#: that a run lasts long enough to be signalled while it measures
LAYERS = 8


def stripped_chain(tmp_path: Path) -> Path:
    """The weights lost their payloads: verify needs --random-weights, which writes a copy with
    weights into its temporary folder (``graphmem-verify-*``) before it measures in another
    (``graphmem-measure-*``)."""
    nodes = [helper.make_node("MatMul", [f"h{i}", f"w{i}"], [f"h{i + 1}"]) for i in range(LAYERS)]
    weights = [init(f"w{i}", np.ones((1024, 1024), np.float32)) for i in range(LAYERS)]
    for w in weights:
        w.ClearField("raw_data")
    m = model(nodes, [tensor("h0", [256, 1024])], [tensor(f"h{LAYERS}", [256, 1024])], weights)
    return save(m, tmp_path / "chain.onnx")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_removes_the_temporary_folders(tmp_path: Path, signum: int) -> None:
    path = stripped_chain(tmp_path)
    private = tmp_path / "tmp"
    private.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"} | {"TMPDIR": str(private)}
    proc = subprocess.Popen([sys.executable, "-m", "graphmem", "verify", str(path), "--random-weights"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not any(p.name.startswith("graphmem-measure-") for p in private.iterdir()):
        assert proc.poll() is None, f"verify ended before it measured: {proc.communicate()}"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert any(p.name.startswith("graphmem-verify-") for p in private.iterdir())
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum
    assert err == f"graphmem: error: terminated by {signal.Signals(signum).name}\n"
    assert out == ""
    # '.ses' (a number and a UUID) is onnxruntime's own: `import onnxruntime` writes it into
    # $TMPDIR (measured with onnxruntime-gpu 1.31.1, on a run that ends normally too)
    assert [p.name for p in private.iterdir() if p.name != ".ses"] == []
