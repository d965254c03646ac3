"""graphmem.ort.runtime: the one lazy onnxruntime import and its version check."""

from __future__ import annotations

import subprocess
import sys

from builders import ROOT, CNN

from graphmem.ort.runtime import INSTALL_HINT, onnxruntime, version_problem


def test_known_good_versions() -> None:
    assert version_problem("1.31.1") is None and version_problem("1.32.0") is None
    assert version_problem("1.31.0.dev20260101") is None
    for other in ("1.30.0", "1.33.0", "2.31.0", ""):
        msg = version_problem(other)
        assert msg is not None and "1.31.x and 1.32.x" in msg


def test_installed_runtime_is_known_good() -> None:
    ort = onnxruntime()
    assert ort is onnxruntime() and version_problem(ort.__version__) is None


def _cli_without_onnxruntime(*args: str) -> subprocess.CompletedProcess[str]:
    # sys.modules[name] = None makes `import onnxruntime` fail as when it is not installed
    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "from graphmem.cli import main\n"
        f"sys.exit(main({list(args)!r}))\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)


def test_commands_that_run_a_session_say_how_to_install_one() -> None:
    for args in (["verify", str(CNN), "--dim", "batch=1"], ["peak", str(CNN), "--dim", "batch=1", "--graph-opt", "basic"]):
        done = _cli_without_onnxruntime(*args)
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith("graphmem: error: ") and INSTALL_HINT in line


def test_static_commands_run_without_onnxruntime() -> None:
    done = _cli_without_onnxruntime("peak", str(CNN), "--dim", "batch=1", "--json")
    assert done.returncode == 0, done.stderr
    assert '"peak_bytes"' in done.stdout
