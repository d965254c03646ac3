"""Accelerators: memory size, peak throughput per precision, memory bandwidth — with sources.

Units, stated once:

* **memory** is bytes. Vendors write "GB" for DRAM/HBM capacities that are built from
  power-of-two chips (24 GB GDDR6X is twelve 16-Gbit chips = 24 GiB), so each row keeps the
  vendor's words in ``vendor_memory`` and states the unit it is read in (``memory``, e.g.
  "24 GiB"). The memory a program can use is lower: ECC and the driver reserve some, and the CUDA
  context and cuBLAS/cuDNN handles live outside any arena — pass ``--overhead``.
* **peak** rates are operations per second for *dense* math (vendors' "with sparsity" figures
  halved), keyed by precision: ``fp32`` (CUDA cores), ``tf32``, ``fp16``, ``bf16``, ``fp8``
  (tensor cores), ``int8`` (ops/s). A precision the device has no fast path for is absent, never 0.
* **bandwidth** is bytes per second, decimal (GB/s = 10⁹ B/s), as vendors state it.

User devices come from a TOML file (:func:`load_devices_file`) or a one-line spec
(:func:`parse_device_spec`); an unknown name raises :class:`UnknownDeviceError` with the closest
names (difflib).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from graphmem.errors import UnknownDeviceError, UsageError
from graphmem.units import parse_bytes, parse_count

__all__ = [
    "Device",
    "UnknownDeviceError",
    "PRECISIONS",
    "CATALOG",
    "ALIASES",
    "catalog",
    "find_device",
    "resolve_device",
    "parse_device_spec",
    "load_devices_file",
    "parse_rate",
    "parse_bandwidth",
    "devices_json",
    "devices_table",
]

#: Precisions a device may state a peak for, in table order.
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")

_T = 1e12
_G = 1e9


@dataclass(frozen=True, slots=True, kw_only=True)
class Device:
    """One accelerator (or the host). ``memory_bytes`` None: not known until the user gives it."""

    name: str
    title: str
    memory_bytes: int | None
    memory: str  # the figure used, with its unit: "24 GiB"
    vendor_memory: str  # the vendor's words: "24 GB GDDR6X"
    peak: Mapping[str, float] = field(default_factory=dict)  # precision -> ops/s (dense)
    bandwidth: float | None = None  # bytes/s
    source: str = ""
    notes: str = ""

    def rate(self, precision: str) -> float | None:
        """Peak ops/s at ``precision``, None if the device states none."""
        return self.peak.get(precision)


def _gpu(
    name: str,
    title: str,
    memory: str,
    vendor_memory: str,
    bandwidth_gbs: float,
    source: str,
    notes: str = "",
    **tflops: float,
) -> Device:
    return Device(
        name=name,
        title=title,
        memory_bytes=parse_bytes(memory),
        memory=memory,
        vendor_memory=vendor_memory,
        peak={p: tflops[p] * _T for p in PRECISIONS if p in tflops},
        bandwidth=bandwidth_gbs * _G,
        source=source,
        notes=notes,
    )


#: The built-in catalog. Figures are the vendor's, dense (sparsity figures halved); a figure we
#: derived rather than read is marked in ``notes``.
CATALOG: tuple[Device, ...] = (
    _gpu("gtx-1080-ti", "NVIDIA GeForce GTX 1080 Ti", "11 GiB", "11 GB GDDR5X", 484,
         "NVIDIA GeForce GTX 1080 Ti specifications (nvidia.com) and launch brief (11.3 TFLOPS)",
         "int8 derived: DP4A at 4x the FP32 rate; FP16 arithmetic runs at 1/64 rate, so "
         "frameworks compute FP16 tensors in FP32 (no fp16 row)",
         fp32=11.3, int8=45.2),
    _gpu("titan-x-pascal", "NVIDIA TITAN X (Pascal)", "12 GiB", "12 GB GDDR5X", 480,
         "NVIDIA TITAN X (Pascal) specifications (nvidia.com): 11 TFLOPS FP32, 44 TOPS INT8",
         "FP16 arithmetic runs at 1/64 rate (no fp16 row)",
         fp32=11.0, int8=44.0),
    _gpu("k80", "NVIDIA Tesla K80 (one of the board's two GPUs)", "12 GiB",
         "12 GB GDDR5 per GPU", 240,
         "NVIDIA Tesla K80 datasheet: 8.73 TFLOPS FP32 (boost), 480 GB/s, 24 GB per board",
         "a K80 board is two GPUs; figures here are per GPU (half the board): a model must fit "
         "one GPU's 12 GB unless it is split. Kepler has no FP16/INT8 fast path",
         fp32=4.365),
    _gpu("t4", "NVIDIA T4", "16 GiB", "16 GB GDDR6", 320,
         "NVIDIA T4 Tensor Core GPU datasheet: 8.1 TFLOPS FP32, 65 TFLOPS FP16, 130 TOPS INT8",
         fp32=8.1, fp16=65.0, int8=130.0),
    _gpu("l4", "NVIDIA L4", "24 GiB", "24 GB GDDR6", 300,
         "NVIDIA L4 Tensor Core GPU datasheet: 30.3 TFLOPS FP32; TF32 120, FP16/BF16 242, "
         "FP8 485, INT8 485 (with sparsity)",
         fp32=30.3, tf32=60.0, fp16=121.0, bf16=121.0, fp8=242.5, int8=242.5),
    _gpu("a10", "NVIDIA A10", "24 GiB", "24 GB GDDR6", 600,
         "NVIDIA A10 Tensor Core GPU datasheet: 31.2 TFLOPS FP32; TF32 62.5, FP16/BF16 125, "
         "INT8 250 (dense)",
         fp32=31.2, tf32=62.5, fp16=125.0, bf16=125.0, int8=250.0),
    _gpu("a100-40gb", "NVIDIA A100 40GB (SXM)", "40 GiB", "40 GB HBM2", 1555,
         "NVIDIA A100 Tensor Core GPU datasheet: 19.5 TFLOPS FP32; TF32 156, FP16/BF16 312, "
         "INT8 624 (dense); 1,555 GB/s",
         fp32=19.5, tf32=156.0, fp16=312.0, bf16=312.0, int8=624.0),
    _gpu("a100-80gb", "NVIDIA A100 80GB (SXM)", "80 GiB", "80 GB HBM2e", 2039,
         "NVIDIA A100 Tensor Core GPU datasheet: 19.5 TFLOPS FP32; TF32 156, FP16/BF16 312, "
         "INT8 624 (dense); 2,039 GB/s (SXM)",
         fp32=19.5, tf32=156.0, fp16=312.0, bf16=312.0, int8=624.0),
    _gpu("h100-80gb", "NVIDIA H100 80GB SXM", "80 GiB", "80 GB HBM3", 3350,
         "NVIDIA H100 Tensor Core GPU datasheet (SXM): 67 TFLOPS FP32; TF32 989, FP16/BF16 "
         "1,979, FP8 3,958, INT8 3,958 (with sparsity); 3.35 TB/s",
         fp32=67.0, tf32=494.5, fp16=989.5, bf16=989.5, fp8=1979.0, int8=1979.0),
    _gpu("h200-141gb", "NVIDIA H200 141GB SXM", "141 GiB", "141 GB HBM3e", 4800,
         "NVIDIA H200 Tensor Core GPU datasheet (SXM): 67 TFLOPS FP32; TF32 989, FP16/BF16 "
         "1,979, FP8 3,958, INT8 3,958 (with sparsity); 4.8 TB/s",
         "the vendor's 141 GB read as GiB like the other HBM parts; CUDA reports slightly less",
         fp32=67.0, tf32=494.5, fp16=989.5, bf16=989.5, fp8=1979.0, int8=1979.0),
    _gpu("rtx-3090", "NVIDIA GeForce RTX 3090", "24 GiB", "24 GB GDDR6X", 936,
         "NVIDIA Ampere GA102 GPU architecture whitepaper, RTX 3090 column: 35.6 TFLOPS FP32; "
         "tensor TF32 35.6, FP16 142 (FP16 accumulate; 71 with FP32 accumulate), BF16 71, "
         "INT8 284 (dense)",
         "fp16 is the FP16-accumulate rate (the higher one, so roofline times stay a bound)",
         fp32=35.6, tf32=35.6, fp16=142.0, bf16=71.0, int8=284.0),
    _gpu("rtx-4090", "NVIDIA GeForce RTX 4090", "24 GiB", "24 GB GDDR6X", 1008,
         "NVIDIA Ada Lovelace GPU architecture whitepaper, RTX 4090 column: 82.6 TFLOPS FP32; "
         "tensor TF32 82.6, FP16 330.3 (FP16 accumulate; 165.2 with FP32 accumulate), BF16 165.2, "
         "FP8 660.6, INT8 660.6 (dense)",
         "fp16 is the FP16-accumulate rate (the higher one, so roofline times stay a bound)",
         fp32=82.6, tf32=82.6, fp16=330.3, bf16=165.2, fp8=660.6, int8=660.6),
    _gpu("jetson-agx-orin-64gb", "NVIDIA Jetson AGX Orin 64GB (GPU)", "64 GiB",
         "64 GB LPDDR5 (shared)", 204.8,
         "NVIDIA Jetson AGX Orin Series technical brief: GPU 5.3 TFLOPS FP32, 170 INT8 TOPS "
         "(sparse); 275 TOPS module total with the DLAs; 204.8 GB/s",
         "GPU only (DLAs excluded); int8 = 170/2 dense; fp16/bf16 derived as half the int8 rate "
         "and tf32 as half of fp16 (Ampere tensor-core ratios). Memory is shared with the CPU",
         fp32=5.3, tf32=21.25, fp16=42.5, bf16=42.5, int8=85.0),
    Device(
        name="host",
        title="host CPU",
        memory_bytes=None,
        memory="user-given (--memory)",
        vendor_memory="",
        source="user-given: --memory (and --device-spec for rates)",
        notes="memory and rates depend on the machine: give --memory",
    ),
)


def catalog(extra: Iterable[Device] = ()) -> tuple[Device, ...]:
    """The built-in catalog followed by ``extra`` devices (a user device replaces a built-in
    one of the same name)."""
    extra = tuple(extra)
    names = {d.name for d in extra}
    return tuple(d for d in CATALOG if d.name not in names) + extra


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


#: Other names for catalog devices (compared like names: case, spaces, '-' and '_' ignored).
ALIASES = {
    "tesla-k80": "k80", "tesla-t4": "t4", "h100": "h100-80gb", "h100-sxm": "h100-80gb",
    "h200": "h200-141gb", "titan-x": "titan-x-pascal", "titan-xp": "titan-x-pascal",
    "jetson-agx-orin": "jetson-agx-orin-64gb", "orin": "jetson-agx-orin-64gb",
    "a100-40gb-sxm": "a100-40gb", "a100-80gb-sxm": "a100-80gb", "cpu": "host",
}


def find_device(name: str, devices: Iterable[Device] | None = None) -> Device:
    """The device called ``name`` (case, spaces, '-' and '_' ignored: "A100 80GB" works), or
    named by one of :data:`ALIASES` ("h100", "tesla-t4").

    Raises:
        UnknownDeviceError: naming the closest known names (difflib over names and aliases).
    """
    devices = tuple(catalog() if devices is None else devices)
    by_key = {_key(d.name): d for d in devices}
    for alias, target in ALIASES.items():
        if target in {d.name for d in devices}:
            by_key.setdefault(_key(alias), next(d for d in devices if d.name == target))
    wanted = _key(name)
    if wanted in by_key:
        return by_key[wanted]
    close = [k for k in by_key if wanted and wanted in k]  # "a100" → both A100s first
    close += difflib.get_close_matches(wanted, list(by_key), n=6, cutoff=0.5)
    names = list(dict.fromkeys(by_key[k].name for k in close))[:3]
    hint = (
        "did you mean " + ", ".join(names) + "?"
        if names
        else "known: " + ", ".join(d.name for d in devices)
    )
    raise UnknownDeviceError(f"unknown device '{name}'; {hint} (graphmem devices lists them)")


def resolve_device(
    name: str | None = None,
    *,
    spec: str | None = None,
    devices_file: str | os.PathLike[str] | None = None,
    memory: str | None = None,
) -> Device | None:
    """The device the options ``--device``/``--device-spec``/``--devices-file``/``--memory``
    describe, or None when none was given.

    ``--device-spec`` alone is the device; with ``--device`` it is one more name to look up.
    ``--memory`` alone is an anonymous device with that memory; with a device it replaces the
    device's memory (the host, a MIG slice, a card shared with other jobs).
    """
    extra: list[Device] = []
    if devices_file is not None:
        extra.extend(load_devices_file(devices_file))
    spec_device = parse_device_spec(spec) if spec is not None else None
    if spec_device is not None:
        extra.append(spec_device)
    if name is not None:
        device: Device | None = find_device(name, catalog(extra))
    else:
        device = spec_device
    if memory is not None:
        size = parse_bytes(memory)
        if size <= 0:
            raise UsageError(f"--memory {memory}: must be more than 0 bytes")
        if device is None:
            device = Device(name="memory", title="--memory", memory_bytes=size, memory=memory,
                            vendor_memory="", source="user-given: --memory")
        else:
            device = replace(device, memory_bytes=size, memory=f"{memory} (--memory)")
    return device


_SPEC_KEYS = frozenset(PRECISIONS) | {"memory", "bandwidth", "name", "title", "source", "notes"}


def parse_device_spec(text: str) -> Device:
    """``"memory=24GiB,fp16=165T,bandwidth=1T"`` → a :class:`Device` (name ``custom`` unless
    ``name=`` is given). Rates take SI prefixes (165T = 165·10¹² ops/s); bandwidth "1T",
    "900GB/s" or "1TiB/s".

    Raises:
        UsageError: an item is not KEY=VALUE, a key is unknown, a value does not parse.
    """
    fields: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not sep or not key or not value:
            raise UsageError(f"--device-spec '{text}': expected KEY=VALUE items, e.g. "
                             "memory=24GiB,fp16=165T,bandwidth=1T")
        if key not in _SPEC_KEYS:
            raise UsageError(f"--device-spec: unknown key '{key}' (known: "
                             f"{', '.join(sorted(_SPEC_KEYS))})")
        fields[key] = value
    return _device_from_fields(fields, where="--device-spec", default_name="custom")


def load_devices_file(path: str | os.PathLike[str]) -> tuple[Device, ...]:
    """Read user devices from TOML: one table per device under ``[devices.NAME]``::

        [devices.my-gpu]
        memory = "24GiB"          # required unit: GB or GiB (or bytes as an integer)
        fp16 = "165T"              # dense ops/s per precision: fp32 tf32 fp16 bf16 fp8 int8
        bandwidth = "1TB/s"
        source = "my lab's measurement"

    Raises:
        UsageError: missing file, bad TOML, unknown key, unparsable value.
    """
    import tomllib

    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"--devices-file {p}: cannot read ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"--devices-file {p}: not valid TOML ({exc})") from None
    table = data.get("devices")
    if not isinstance(table, dict) or not table:
        raise UsageError(f"--devices-file {p}: expected [devices.NAME] tables")
    out = []
    for name, entry in table.items():
        if not isinstance(entry, dict):
            raise UsageError(f"--devices-file {p}: devices.{name} must be a table")
        unknown = set(entry) - _SPEC_KEYS
        if unknown:
            raise UsageError(f"--devices-file {p}: devices.{name}: unknown key "
                             f"'{sorted(unknown)[0]}'")
        fields = {k: str(v) for k, v in entry.items()}
        fields.setdefault("name", name)
        fields.setdefault("source", f"user file {p.name}")
        out.append(_device_from_fields(fields, where=f"{p}: devices.{name}", default_name=name))
    return tuple(out)


def _device_from_fields(fields: Mapping[str, str], *, where: str, default_name: str) -> Device:
    memory = fields.get("memory")
    size = None
    if memory is not None:
        size = parse_bytes(memory)
        if size <= 0:
            raise UsageError(f"{where}: memory must be more than 0 bytes")
    peak = {}
    for p in PRECISIONS:
        if p in fields:
            peak[p] = parse_rate(fields[p], what=f"{where}: {p}")
    bandwidth = fields.get("bandwidth")
    return Device(
        name=fields.get("name", default_name),
        title=fields.get("title", fields.get("name", default_name)),
        memory_bytes=size,
        memory=memory if memory is not None else "not given",
        vendor_memory="",
        peak=peak,
        bandwidth=parse_bandwidth(bandwidth, what=f"{where}: bandwidth") if bandwidth else None,
        source=fields.get("source", "user-given: --device-spec"),
        notes=fields.get("notes", ""),
    )


def parse_rate(text: str, *, what: str = "rate") -> float:
    """"165T", "165TFLOPS", "130TOPS", "8.1e12" → ops per second (decimal prefixes)."""
    t = re.sub(r"(?i)(flops|ops)(/s)?$", "", text.strip()).strip()
    value = _float_or_count(t, what=what, example="165T")
    if value <= 0:
        raise UsageError(f"{what} '{text}': must be more than 0")
    return value


def parse_bandwidth(text: str, *, what: str = "bandwidth") -> float:
    """"1T", "900GB/s", "1.5TiB/s", "3.35e12" → bytes per second ("GB" decimal, "GiB" binary)."""
    t = re.sub(r"(?i)/s$", "", text.strip()).strip()
    if re.search(r"(?i)ib$", t):
        value = float(parse_bytes(t))
    else:
        value = _float_or_count(re.sub(r"(?i)b$", "", t).strip(), what=what, example="900GB/s")
    if value <= 0:
        raise UsageError(f"{what} '{text}': must be more than 0")
    return value


def _float_or_count(t: str, *, what: str, example: str) -> float:
    try:
        return float(t)
    except ValueError:
        pass
    try:
        return float(parse_count(t))
    except UsageError:
        raise UsageError(f"{what} '{t}' is not a rate such as {example}") from None


def _tera(x: float | None) -> str:
    return "-" if x is None else f"{x / _T:g}"


def devices_json(devices: Iterable[Device]) -> dict[str, Any]:
    """The ``graphmem devices --json`` document (schema_version 1); rates in ops/s, bandwidth in
    bytes/s, memory in bytes (null: user-given)."""
    return {
        "schema_version": 1,
        "units": {"memory_bytes": "bytes", "peak": "ops/s, dense", "bandwidth": "bytes/s"},
        "devices": [device_json(d) for d in devices],
    }


def device_json(d: Device) -> dict[str, Any]:
    """One device as JSON."""
    return {
        "name": d.name,
        "title": d.title,
        "memory_bytes": d.memory_bytes,
        "memory": d.memory,
        "vendor_memory": d.vendor_memory,
        "peak": {p: d.peak[p] for p in PRECISIONS if p in d.peak},
        "bandwidth": d.bandwidth,
        "source": d.source,
        "notes": d.notes,
    }


def devices_table(devices: Iterable[Device]) -> str:
    """The ``graphmem devices`` table: TFLOPS (TOPS for int8), dense; GB/s; sources below."""
    devices = tuple(devices)
    head = (f"  {'name':<21} {'memory':<10} {'vendor states':<24} {'fp32':>6} {'tf32':>6} "
            f"{'fp16':>6} {'bf16':>6} {'fp8':>6} {'int8':>6} {'GB/s':>6}")
    lines = ["graphmem devices: peak dense TFLOPS (int8: TOPS), bandwidth GB/s (10^9 B/s)", "",
             head]
    for d in devices:
        mem = d.memory if d.memory_bytes is not None or d.name != "host" else "--memory"
        vendor = d.vendor_memory if len(d.vendor_memory) <= 24 else d.vendor_memory[:23] + "…"
        rates = " ".join(f"{_tera(d.rate(p)):>6}" for p in PRECISIONS)
        bw = "-" if d.bandwidth is None else f"{d.bandwidth / _G:g}"
        lines.append(f"  {d.name:<21} {mem:<10} {vendor:<24} {rates} {bw:>6}".rstrip())
    lines.append("")
    lines.append("  '-': the device states no such rate (not 0). Memory: the figure used, in the")
    lines.append("  unit shown; vendors write GB for binary DRAM capacities. Usable memory is")
    lines.append("  lower (ECC, driver, CUDA context): use --overhead. graphmem fit and peak --device")
    lines.append("  compare a model's predicted resident memory (session.resident_bytes) + --overhead")
    lines.append("  with the memory (fit --by arena|requested for the other figures). Sources:")
    for d in devices:
        lines.append(f"    {d.name}: {d.source}" + (f" — {d.notes}" if d.notes else ""))
    return "\n".join(lines)
