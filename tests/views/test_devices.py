"""The device catalog, user devices, name lookup (graphmem.views.devices) and the roofline
(graphmem.views.roofline), on a one-MatMul graph whose costs are computed by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import graphmem
from graphmem.views.devices import (
    CATALOG,
    PRECISIONS,
    Device,
    UnknownDeviceError,
    catalog,
    devices_json,
    devices_table,
    find_device,
    load_devices_file,
    parse_bandwidth,
    parse_device_spec,
    parse_rate,
    resolve_device,
)
from graphmem.errors import UsageError
from graphmem.views.roofline import device_lines, device_section, precision_of, roofline

REQUIRED = {
    "gtx-1080-ti", "titan-x-pascal", "k80", "t4", "l4", "a10", "a100-40gb", "a100-80gb",
    "h100-80gb", "h200-141gb", "rtx-3090", "rtx-4090", "jetson-agx-orin-64gb", "host",
}


def test_catalog_rows_have_sources_and_units() -> None:
    names = [d.name for d in CATALOG]
    assert len(names) == len(set(names))
    assert REQUIRED <= set(names)
    for d in CATALOG:
        assert d.source.strip(), d.name
        assert set(d.peak) <= set(PRECISIONS)
        if d.name == "host":
            assert d.memory_bytes is None and not d.peak
            continue
        assert d.memory_bytes and d.memory_bytes > 0
        assert d.memory.endswith(("GiB", "GB")), d.memory  # the unit is explicit
        assert "GB" in d.vendor_memory  # the vendor's words, kept verbatim
        assert d.bandwidth and d.bandwidth > 1e10
        assert all(v > 1e11 for v in d.peak.values())
        assert "fp32" in d.peak
    k80 = find_device("k80")
    assert "two GPUs" in k80.notes and k80.memory_bytes == 12 << 30
    assert find_device("a100-80gb").memory_bytes == 80 << 30
    assert find_device("h100-80gb").peak["fp16"] == pytest.approx(989.5e12)
    assert find_device("t4").bandwidth == pytest.approx(320e9)
    doc = devices_json(CATALOG)
    assert all(row["source"] for row in doc["devices"])
    table = devices_table(CATALOG)
    assert "k80" in table and "Sources" in table


@pytest.mark.parametrize("name, expected", [
    ("A100 80GB", "a100-80gb"), ("RTX_4090", "rtx-4090"), ("h100", "h100-80gb"),
    ("orin", "jetson-agx-orin-64gb"), ("T4", "t4"), ("a10", "a10"), ("Tesla T4", "t4"),
])
def test_find_device_normalizes(name: str, expected: str) -> None:
    assert find_device(name).name == expected


@pytest.mark.parametrize("name, suggested", [
    ("a100", ("a100-80gb", "a100-40gb")),  # ambiguous prefix
    ("rtx-4080", ("rtx-4090",)),
    ("tesla-t4x", ("t4",)),
    ("h20", ("h200-141gb",)),
])
def test_unknown_device_suggests_closest(name: str, suggested: tuple[str, ...]) -> None:
    with pytest.raises(UnknownDeviceError) as info:
        find_device(name)
    message = str(info.value)
    assert f"unknown device '{name}'" in message and "did you mean" in message
    for s in suggested:
        assert s in message
    assert isinstance(info.value, UsageError)


def test_device_spec() -> None:
    d = parse_device_spec("memory=24GiB,fp16=165T,bandwidth=1T")
    assert d.memory_bytes == 24 << 30 and d.peak == {"fp16": 165e12} and d.bandwidth == 1e12
    d = parse_device_spec("name=lab,memory=24GB,fp32=8.1TFLOPS,int8=130TOPS,bandwidth=900GB/s")
    assert (d.name, d.memory_bytes, d.rate("fp32"), d.rate("int8"), d.bandwidth) == (
        "lab", 24 * 10**9, 8.1e12, 130e12, 900e9)
    for bad in ("memory", "memory=", "colour=red", "fp16=fast", "memory=0", "bandwidth=-1T",
                "memory=24GiB,,fp16=1T"):
        with pytest.raises(UsageError):
            parse_device_spec(bad)


def test_units() -> None:
    assert parse_rate("65T") == 65e12 and parse_rate("3.5e12") == 3.5e12
    assert parse_bandwidth("1TiB/s") == float(1 << 40) and parse_bandwidth("204.8GB/s") == 204.8e9


def test_devices_file(tmp_path: Path) -> None:
    f = tmp_path / "devices.toml"
    f.write_text('[devices.my-gpu]\nmemory = "48GiB"\nfp16 = "200T"\nbandwidth = "2TB/s"\n'
                 'source = "lab measurement"\n\n[devices.t4]\nmemory = "15GiB"\n')
    devices = load_devices_file(f)
    assert [d.name for d in devices] == ["my-gpu", "t4"]
    d = resolve_device("my gpu", devices_file=f)
    assert d is not None and d.memory_bytes == 48 << 30 and d.source == "lab measurement"
    # a user device replaces the built-in one of the same name
    t4 = resolve_device("t4", devices_file=f)
    assert t4 is not None and t4.memory_bytes == 15 << 30
    assert len(catalog(devices)) == len(CATALOG) + 1
    bad = tmp_path / "bad.toml"
    for text in ("not toml [", "[devices.x]\ncolour = 1\n", "[other]\n"):
        bad.write_text(text)
        with pytest.raises(UsageError):
            load_devices_file(bad)
    with pytest.raises(UsageError):
        load_devices_file(tmp_path / "missing.toml")


def test_resolve_device_memory() -> None:
    host = resolve_device("host", memory="64GiB")
    assert host is not None and host.name == "host" and host.memory_bytes == 64 << 30
    bare = resolve_device(memory="24GB")
    assert bare is not None and bare.memory_bytes == 24 * 10**9
    assert resolve_device() is None
    spec = resolve_device(spec="name=x,memory=1GiB")
    assert spec is not None and spec.name == "x"
    with pytest.raises(UnknownDeviceError):
        resolve_device("nope-9000")


# --- roofline --------------------------------------------------------------------------------

M, K, N = 64, 128, 32


@pytest.fixture(scope="module")
def matmul(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """y[M, N] = x[M, K] @ w[K, N], float32 (w a weight)."""
    w = numpy_helper.from_array(np.ones((K, N), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [M, K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [M, N])], [w])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path_factory.mktemp("mm") / "mm.onnx"
    onnx.save(m, str(path))
    return path


def _device(**peak: float) -> Device:
    return Device(name="toy", title="toy", memory_bytes=1 << 30, memory="1 GiB",
                  vendor_memory="", peak=peak, bandwidth=1e9, source="test")


def test_roofline_by_hand(matmul: Path) -> None:
    a = graphmem.analyze(matmul)
    flops = 2 * M * K * N  # 524,288
    moved = 4 * (M * K + K * N + M * N)  # 57,344 bytes
    # compute-bound: 1e9 ops/s vs 1e9 B/s → compute 524 µs > memory 57 µs
    r = roofline(a, _device(fp32=1e9))
    node = r.nodes[0]
    assert (node.work, node.bytes, node.precision) == (flops, moved, "fp32")
    assert node.compute_s == pytest.approx(flops / 1e9)
    assert node.memory_s == pytest.approx(moved / 1e9)
    assert node.bound == "compute" and r.bound_s == pytest.approx(flops / 1e9)
    assert r.by_op[0].bound == "compute" and r.by_op[0].intensity == pytest.approx(flops / moved)
    # memory-bound once the rate is high; tf32 is used for a float32 contraction when present
    r = roofline(a, _device(fp32=1e9, tf32=1e12))
    assert r.nodes[0].precision == "tf32" and r.nodes[0].bound == "memory"
    assert r.bound_s == pytest.approx(moved / 1e9)
    assert roofline(a, _device(fp32=1e9, tf32=1e12), tf32=False).nodes[0].precision == "fp32"
    # the fused floor moves weights + inputs + outputs once: the same bytes for one node
    assert r.floor_s == pytest.approx(moved / 1e9)


def test_roofline_without_flop_counter(matmul: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import graphmem.views.roofline as rl

    monkeypatch.setattr(rl, "flop_report", lambda a: None)
    r = roofline(graphmem.analyze(matmul), _device(fp32=1e9))
    assert not r.flops_available and r.nodes[0].work is None and r.nodes[0].compute_s is None
    assert r.bound_s == pytest.approx(4 * (M * K + K * N + M * N) / 1e9)
    assert any("FLOPs unavailable" in line for line in rl.roofline_lines(r))


def test_precision_fallbacks() -> None:
    pascal = find_device("gtx-1080-ti")  # no fp16 fast path: fp16 tensors run at the fp32 rate
    assert precision_of(TensorProto.FLOAT16, contraction=True, device=pascal) == "fp32"
    assert precision_of(TensorProto.INT8, contraction=True, device=pascal) == "int8"
    a100 = find_device("a100-80gb")
    assert precision_of(TensorProto.FLOAT8E4M3FN, contraction=True, device=a100) == "fp16"
    assert precision_of(TensorProto.BFLOAT16, contraction=False, device=a100) == "bf16"
    assert precision_of(TensorProto.FLOAT, contraction=False, device=a100) == "fp32"


def test_device_section_and_lines(matmul: Path) -> None:
    a = graphmem.analyze(matmul)
    t4 = find_device("t4")
    doc = device_section(a, t4, overhead_bytes=1000)
    assert doc["device"]["name"] == "t4"
    assert doc["memory"]["needed_bytes"] == a.total_bytes + 1000 and doc["memory"]["fits"]
    assert doc["roofline"]["bound_s"] > 0
    lines = device_lines(a, t4)
    assert any("fits" in line for line in lines) and any("roofline" in line for line in lines)
    host = find_device("host")
    assert device_section(a, host)["memory"] is None and device_section(a, host)["roofline"] is None


def test_traffic_rules(tmp_path: Path) -> None:
    """Gather reads its 4 rows, not the 1000-row table; Reshape is a view and moves nothing.

    Gather: table 4·16·4 = 256 B read (of 64,000), ids 4·8 = 32 B, output 256 B written → 544 B.
    """
    table = numpy_helper.from_array(np.zeros((1000, 16), np.float32), "table")
    shape = numpy_helper.from_array(np.array([64], np.int64), "shape")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["rows"], name="g"),
         helper.make_node("Reshape", ["rows", "shape"], ["flat"], name="r")], "emb",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("flat", TensorProto.FLOAT, [64])], [table, shape])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "emb.onnx"
    onnx.save(m, str(path))
    r = roofline(graphmem.analyze(path), _device(fp32=1e12))
    by_name = {n.node: n for n in r.nodes}
    assert by_name["g"].bytes == 544 and by_name["r"].bytes == 0
    assert r.floor_s == pytest.approx(544 / 1e9)
