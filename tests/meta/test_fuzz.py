"""The fuzzer (``scripts/fuzz.py``), in the suite.

The short run: 300 seeded cases (damaged files, mutated protobufs, odd command lines over
``models/`` and the onnx wheel's test models) must find no traceback, crash, hang, overwritten
input, stray file, multi-line or unescaped error, onnxruntime log line, or schema-invalid or
negative document. fuzz.py runs each case in a child forked from one process that imported
graphmem once (the CLI entry point ``graphmem.cli.main``, not a new interpreter per case), so the
run takes ~25 s on two idle cores. The long run is the same script with ``--cases 25000``.

The oracle test runs the fuzzer's own case machinery (fork, snapshot, checks) on a stand-in
``graphmem.cli.main`` that misbehaves in each way the short run must catch, so that the short
run's zero counts mean something: a fuzzer that checked nothing would fail it."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CASES = 300

MUST_BE_ZERO = (
    "traceback", "memory", "crash", "timeout", "bad_exit", "exit1_not_gate", "multiline_error",
    "control_chars", "ort_log", "stray_stderr", "overwrite", "stray_write", "schema_invalid",
    "negative", "fuzzer_error",
)


def test_short_fuzz_run_finds_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "GRAPHMEM_FUZZ_CACHE": str(tmp_path / "cache")}
    env.pop("GITHUB_ACTIONS", None)
    run = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "fuzz.py"), "--seed", "1", "--cases", str(CASES), "--quick",
         "--jobs", "2", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    results = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert len(results) == CASES
    assert {r["class"] for r in results} == {"byte", "proto", "cli"}
    found = {p: [r["index"] for r in results if p in r["problems"]] for p in MUST_BE_ZERO}
    assert {p: cases for p, cases in found.items() if cases} == {}, run.stdout[-3000:]
    exit0 = [r for r in results if r["exit"] == 0]
    invalid = [r for r in exit0 if "accepted_invalid" in r["problems"]]
    assert exit0 and len(invalid) <= 0.15 * len(exit0), [r["problems"]["accepted_invalid"] for r in invalid]


# --- the oracle ---------------------------------------------------------------------------------
# The stand-ins write to the real standard streams, as graphmem does under fuzz.py; they run in a
# child of a fresh interpreter (run_oracle below, started by the fixture), as fuzz.py runs cases:
# forked from a process that never made an onnxruntime session, with its streams on files.


def _traceback(argv):  # type: ignore[no-untyped-def]
    raise KeyError("a bug")


def _internal_error_line(argv):  # type: ignore[no-untyped-def]
    print("graphmem: error: internal error: KeyError at graphmem/model/loading.py:12 in f: 'x'", file=sys.stderr)
    return 2


def _two_lines(argv):  # type: ignore[no-untyped-def]
    print("graphmem: error: bad model", file=sys.stderr)
    print("  more detail on a second line", file=sys.stderr)
    return 2


def _usage_box(argv):  # type: ignore[no-untyped-def]
    print("Usage: graphmem peak [OPTIONS] MODEL", file=sys.stderr)
    return 2


def _exit_3(argv):  # type: ignore[no-untyped-def]
    print("graphmem: error: odd", file=sys.stderr)
    return 3


def _exit_1_without_gate(argv):  # type: ignore[no-untyped-def]
    print("graphmem: error: not a gate", file=sys.stderr)
    return 1


def _overwrite_model(argv):  # type: ignore[no-untyped-def]
    Path("model.onnx").write_bytes(b"the report")
    print("graphmem: error: wrote over it", file=sys.stderr)
    return 2


def _stray_file(argv):  # type: ignore[no-untyped-def]
    Path("elsewhere.json").write_text("{}")
    print("graphmem: error: wrote elsewhere", file=sys.stderr)
    return 2


def _not_json(argv):  # type: ignore[no-untyped-def]
    print("peak: 12 MiB")
    return 0


def _schema_invalid(argv):  # type: ignore[no-untyped-def]
    print(json.dumps({"schema_version": 1, "unexpected": True}))
    return 0


def _negative(argv):  # type: ignore[no-untyped-def]
    # graphmem's real document with its peak made negative (which its schema refuses too)
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = REAL_MAIN[0](argv)
    doc = json.loads(buf.getvalue())
    doc["activations"]["peak_bytes"] *= -1
    print(json.dumps(doc))
    return code


def _control_chars(argv):  # type: ignore[no-untyped-def]
    print("graphmem: error: tensor 'a\x1b[2Jb' is bad", file=sys.stderr)
    return 2


def _ort_log(argv):  # type: ignore[no-untyped-def]
    print("graphmem: error: bad model", file=sys.stderr)
    print("2026-12-02 [E:onnxruntime:, inference_session.cc:1] load failed", file=sys.stderr)
    return 2


def _hang(argv):  # type: ignore[no-untyped-def]
    import time

    time.sleep(60)
    return 0


MISBEHAVIOURS = {
    "traceback": (_traceback, {"traceback"}),
    "internal_error_line": (_internal_error_line, {"traceback"}),
    "two_lines": (_two_lines, {"multiline_error"}),
    "usage_box": (_usage_box, {"multiline_error"}),
    "exit_3": (_exit_3, {"bad_exit"}),
    "exit_1_without_gate": (_exit_1_without_gate, {"exit1_not_gate"}),
    "overwrite_model": (_overwrite_model, {"overwrite"}),
    "stray_file": (_stray_file, {"stray_write"}),
    "not_json": (_not_json, {"schema_invalid"}),
    "schema_invalid": (_schema_invalid, {"schema_invalid"}),
    "negative": (_negative, {"negative", "schema_invalid"}),
    "control_chars": (_control_chars, {"control_chars"}),
    "ort_log": (_ort_log, {"ort_log", "multiline_error"}),
    "hang": (_hang, {"timeout"}),
    "sound": (None, set()),  # the real graphmem on a valid model: nothing to report
}


REAL_MAIN: list = []  # graphmem.cli.main, for the stand-ins that call it


def run_oracle(work: Path) -> dict[str, dict]:
    """In the fixture's interpreter: each stand-in through fuzz.py's run_case (fork, snapshot,
    checks); the real graphmem.cli.main for "sound"."""
    import graphmem.cli

    spec = importlib.util.spec_from_file_location("graphmem_fuzz", REPO / "scripts" / "fuzz.py")
    fuzz = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = fuzz  # its dataclasses look their module up
    spec.loader.exec_module(fuzz)  # type: ignore[union-attr]
    real = graphmem.cli.main
    REAL_MAIN.append(real)
    (work / "loadability").mkdir()
    out = {}
    for name, (stand_in, _) in MISBEHAVIOURS.items():
        graphmem.cli.main = stand_in or real  # the forked child calls graphmem.cli.main
        case = fuzz.Case(index=len(out), klass="cli", mutation=name, seed="models/tiny_cnn",
                         files={"model.onnx": (REPO / "models" / "tiny_cnn.onnx").read_bytes()},
                         argv=["peak", "model.onnx", "--dim", "batch=1", "--json"], doc=("peak", "-"),
                         models=["model.onnx"])
        out[name] = fuzz.run_case(case, work, work / "loadability", timeout=2.0 if name == "hang" else 60.0)
    return out


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):  # type: ignore[no-untyped-def]
    work = tmp_path_factory.mktemp("oracle")
    driver = (
        "import importlib.util, json, sys\n"
        "from pathlib import Path\n"
        "spec = importlib.util.spec_from_file_location('fuzz_oracle', sys.argv[1])\n"
        "m = importlib.util.module_from_spec(spec); sys.modules[spec.name] = m; spec.loader.exec_module(m)\n"
        "Path(sys.argv[2], 'results.json').write_text(json.dumps(m.run_oracle(Path(sys.argv[2]))))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    env.pop("GITHUB_ACTIONS", None)
    run = subprocess.run([sys.executable, "-c", driver, __file__, str(work)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads((work / "results.json").read_text())


@pytest.mark.parametrize("name", list(MISBEHAVIOURS))
def test_the_oracle_catches_each_misbehaviour(oracle, name: str) -> None:  # type: ignore[no-untyped-def]
    result = oracle[name]
    assert set(result["problems"]) == MISBEHAVIOURS[name][1], (result["problems"], result["stderr"])
    if name == "sound":
        assert result["exit"] == 0 and result["doc_valid"] is True
        assert result["verdicts"]["model.onnx"]["ort"] == "ok"
