"""The host profile (graphmem/host.py): reading this machine (the one test allowed to), reading a
machine from a fake /proc and /sys, the JSON/TOML files ``--host`` reads and their errors, and the
``graphmem host`` command."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import graphmem.host as host_module
from graphmem.errors import EXIT_INPUT_ERROR, HostProfileError
from graphmem.host import (
    HOST_ENV,
    HostProfile,
    host_differences,
    load_host,
    parse_cpuinfo,
    read_host,
    this_host,
    torch_threads_from,
)
from graphmem.schema import validate

from builders import AVX2_HOST, CNN, PINNED_HOST, outcome


@pytest.mark.reads_machine
def test_read_host_reads_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import platform

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    h = read_host()
    assert h.machine == platform.machine().lower() and h.logical_cpus == os.cpu_count()
    assert 1 <= h.physical_cores <= h.logical_cpus
    assert h.torch_threads == h.ort_intra_op_threads == h.physical_cores  # no thread variable set
    assert h.page_size >= 4096 and h.l2_per_core_bytes > 0
    if Path("/proc/cpuinfo").is_file():
        assert h.cpu_flags and h.cpu_model
    assert HostProfile.from_json(h.to_json()) == h
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert read_host().torch_threads == 3


def test_the_machine_is_not_read_in_tests() -> None:
    # the autouse fixture of tests/conftest.py: every reader raises, so nothing below reads the
    # machine unseen; "this machine" is the pinned profile $GRAPHMEM_HOST names
    with pytest.raises(AssertionError, match="a test read the machine"):
        read_host()
    assert this_host() == PINNED_HOST


def _fake_machine(monkeypatch: pytest.MonkeyPatch, files: dict[str, str], sysconf: dict[str, int],
                  env: dict[str, str] | None = None) -> None:
    """graphmem.host's readers over a fake file system (a 2-core, 4-thread machine)."""
    def list_dir(path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted({f[len(prefix):].split("/")[0] for f in files if f.startswith(prefix)})

    monkeypatch.setattr(host_module, "_read_file", files.get)
    monkeypatch.setattr(host_module, "_list_dir", list_dir)
    monkeypatch.setattr(host_module, "_sysconf", lambda name, number: sysconf.get(name))
    monkeypatch.setattr(host_module, "_cpu_count", lambda: 4)
    monkeypatch.setattr(host_module, "_machine", lambda: "X86_64")
    monkeypatch.setattr(host_module, "_environ", lambda name: (env or {}).get(name, ""))


def test_read_host_from_proc_and_sys(monkeypatch: pytest.MonkeyPatch) -> None:
    # 4 logical CPUs on 2 cores (hyper-threads 0,2 and 1,3); CPU 0's L2 is 2048K shared by CPUs 0
    # and 2: oneDNN's per-core L2 = 2 MiB / 2 = 1 MiB; sysconf reports the whole cache (2 MiB)
    cpu = "/sys/devices/system/cpu"
    files = {"/proc/cpuinfo": "processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu avx2 avx512f\n\n"
                              "processor\t: 1\nflags\t\t: fpu\n"}
    for i, core in enumerate((0, 1, 0, 1)):
        files[f"{cpu}/cpu{i}/topology/physical_package_id"] = "0\n"
        files[f"{cpu}/cpu{i}/topology/core_id"] = f"{core}\n"
    for index, (level, kind, size, shared) in enumerate(
            [("1", "Data", "48K", "0,2"), ("1", "Instruction", "32K", "0,2"), ("2", "Unified", "2048K", "0,2"),
             ("3", "Unified", "105M", "0-3")]):
        for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
            files[f"{cpu}/cpu0/cache/index{index}/{name}"] = value + "\n"
    sysconf = {"SC_LEVEL1_DCACHE_SIZE": 49152, "SC_LEVEL2_CACHE_SIZE": 2 << 20, "SC_LEVEL3_CACHE_SIZE": 105 << 20,
               "SC_PAGESIZE": 4096}
    _fake_machine(monkeypatch, files, sysconf, {"OMP_NUM_THREADS": "8", "MKL_NUM_THREADS": "6"})
    assert read_host() == HostProfile(
        machine="x86_64", cpu_model="Test CPU", cpu_flags=frozenset({"fpu", "avx2", "avx512f"}), physical_cores=2,
        logical_cpus=4, l1d_bytes=49152, l2_bytes=2 << 20, l2_per_core_bytes=1 << 20, l3_bytes=105 << 20,
        page_size=4096, ort_intra_op_threads=2, torch_threads=6)
    # a machine that says nothing: no flags, cores = logical CPUs, caches 0 (onnxruntime's 0),
    # oneDNN's per-core L2 guess of 512 KiB
    _fake_machine(monkeypatch, {}, {})
    bare = read_host()
    assert (bare.cpu_flags, bare.physical_cores, bare.l2_bytes, bare.l2_per_core_bytes, bare.torch_threads) == (
        frozenset(), 4, 0, 512 * 1024, 4)


def test_cpuinfo_and_thread_variables() -> None:
    assert parse_cpuinfo("model name : X\nflags : a b\nflags : c\n") == (frozenset({"a", "b"}), "X")
    assert parse_cpuinfo("") == (frozenset(), "")
    # PyTorch: OMP_NUM_THREADS, MKL_NUM_THREADS read after it (it wins), each a positive integer
    assert torch_threads_from({}, 4) == 4
    assert torch_threads_from({"OMP_NUM_THREADS": "3"}, 4) == 3
    assert torch_threads_from({"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "5"}, 4) == 5
    assert torch_threads_from({"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "x"}, 4) == 3
    assert torch_threads_from({"OMP_NUM_THREADS": "0"}, 4) == 4


def test_profile_files_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text(AVX2_HOST.to_json())
    assert load_host(path) == AVX2_HOST
    validate(json.loads(path.read_text()), "host")
    toml = tmp_path / "h.toml"
    d = AVX2_HOST.to_dict()
    toml.write_text("\n".join(f"{k} = {json.dumps(v)}" for k, v in d.items()) + "\n")
    assert load_host(toml) == AVX2_HOST
    assert host_differences(PINNED_HOST, PINNED_HOST) == ()
    diff = host_differences(PINNED_HOST, replace(PINNED_HOST, l2_bytes=1024))
    assert diff == ("l2_bytes 2097152 != 1024",)


@pytest.mark.parametrize(("text", "problem"), [
    (None, "no such file"),
    ("{", "not JSON"),
    ("[]", "expected a JSON object"),
    ('{"schema_version": 2}', "schema_version 2, expected 1"),
    ("UNKNOWN", "unknown key 'cores'"),
    ("MISSING", "missing key 'torch_threads'"),
    ("BADTYPE", "'l2_bytes' must be an integer >= 0"),
    ("ZERO", "'physical_cores' must be an integer >= 1"),
    ("FLAGS", "'cpu_flags' must be a list"),
])
def test_bad_profile_files_are_one_line_errors(tmp_path: Path, text: str | None, problem: str) -> None:
    good = PINNED_HOST.to_dict()
    docs = {"UNKNOWN": {**good, "cores": 2}, "MISSING": {k: v for k, v in good.items() if k != "torch_threads"},
            "BADTYPE": {**good, "l2_bytes": "2MiB"}, "ZERO": {**good, "physical_cores": 0},
            "FLAGS": {**good, "cpu_flags": "avx2"}}
    path = tmp_path / "host.json"
    if text is not None:
        path.write_text(json.dumps(docs[text]) if text in docs else text)
    with pytest.raises(HostProfileError, match=problem) as info:
        load_host(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    code, out, err = outcome("peak", str(CNN), "-d", "batch=1", "--host", str(path))
    assert code == EXIT_INPUT_ERROR and out == ""
    assert err.count("\n") == 1 and err.startswith("graphmem: error: host profile") and problem in err


def test_host_command(tmp_path: Path) -> None:
    code, out, _ = outcome("host", "--json")
    assert code == 0 and HostProfile.from_json(out) == PINNED_HOST  # this machine, pinned
    validate(json.loads(out), "host")
    path = tmp_path / "avx2.json"
    path.write_text(AVX2_HOST.to_json())
    code, out, _ = outcome("host", "--host", str(path))
    assert code == 0
    assert out.splitlines()[1].split() == ["CPU", "flags", "rules", "read", "avx2"]
    assert "1 MiB (onnxruntime), 1 MiB per core (oneDNN)" in out


def test_environment_variable_names_a_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "avx2.json"
    path.write_text(AVX2_HOST.to_json())
    monkeypatch.setenv(HOST_ENV, str(path))
    assert this_host() == AVX2_HOST
    code, out, _ = outcome("peak", str(CNN), "-d", "batch=1", "--json")
    assert code == 0 and json.loads(out)["host"] == AVX2_HOST.to_dict()
