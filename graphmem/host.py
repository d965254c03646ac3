"""The machine a prediction is for: one typed value, read once at the edge and passed to every
rule that depends on the machine.

A few choices of the runtimes depend on the CPU they run on, and so do the figures graphmem
derives from them. The fields of :class:`HostProfile` and the rules that read them:

* ``machine`` — the CPU kernel table and the MLAS rules are onnxruntime's x86-64 build
  (:func:`graphmem.ort.kernels.host_problem`);
* ``cpu_flags`` — MLAS's symmetric quantized convolution (AVX2, AVX-512: ``ort/mlas.py``);
  oneDNN's bf16 and f16 kernels (avx512_bf16, AMX, avx512_fp16: ``training/kernels/``);
* ``l2_bytes`` — onnxruntime's ``Env::GetL2CacheSize`` (``sysconf(_SC_LEVEL2_CACHE_SIZE)``, one L2
  cache): GroupQueryAttention's flash tiles (``ort/scratch.py``);
* ``l2_per_core_bytes`` — oneDNN's ``get_per_core_cache_size(2)`` (the L2 over the CPUs sharing
  it): its brgemm blocking (``training/kernels/``);
* ``physical_cores`` — oneDNN's AMX weight-gradient balance (``training/kernels/halfconv.py``);
* ``torch_threads`` — PyTorch's intra-op threads (``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, else the
  physical cores), which oneDNN sizes its per-thread scratchpads for (``training/kernels/``);
* ``ort_intra_op_threads`` — onnxruntime's default intra-op thread pool on that machine (one
  thread per physical core: ``PosixEnv::GetDefaultThreadAffinities``); the CPU rules model one
  thread, the setting ``verify`` measures with, and this is the figure for rules that model more;
* ``page_size``, ``l1d_bytes``, ``l3_bytes``, ``logical_cpus``, ``cpu_model`` — described for
  rules of resident memory and for people; no rule reads them yet.

:func:`read_host` is the only code in graphmem that reads the machine (``/proc/cpuinfo``,
``/sys/devices/system/cpu``, ``sysconf``, the thread variables), through the functions named in
:data:`MACHINE_READERS`. :func:`this_host` is what "this machine" means at an edge: the profile
in the file ``$GRAPHMEM_HOST`` when that is set (the test-suite pins its host so; a container whose
``/sys`` shows another machine's caches can too), else :func:`read_host`, once per process. The
command line reads ``--host FILE`` (a profile ``graphmem host --json`` wrote) or this machine
once and passes the value down; the library's ``host=None`` means :func:`this_host`; every JSON
document records the host it assumed (its ``host`` block reads back as a profile).
"""

from __future__ import annotations

import functools
import json
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from graphmem.errors import HostProfileError

__all__ = [
    "HostProfile",
    "HOST_ENV",
    "HOST_SCHEMA_VERSION",
    "MACHINE_READERS",
    "read_host",
    "this_host",
    "resolve_host",
    "load_host",
    "host_differences",
    "host_table",
    "host_line",
    "parse_cpuinfo",
    "torch_threads_from",
]

#: The environment variable naming a profile file that stands for this machine.
HOST_ENV = "GRAPHMEM_HOST"
HOST_SCHEMA_VERSION = 1
#: oneDNN's per-core L2 when it cannot read the cache (``src/cpu/platform.cpp``).
ONEDNN_DEFAULT_L2 = 512 * 1024
#: The functions of this module that touch the machine; nothing else in graphmem does (the
#: test-suite makes them raise, except in the test of :func:`read_host`).
MACHINE_READERS = ("_read_file", "_list_dir", "_sysconf", "_cpu_count", "_machine", "_environ")


@dataclass(frozen=True, slots=True, kw_only=True)
class HostProfile:
    """What graphmem's rules read about the machine a model runs on (module doc: which rule reads
    which field). Sizes in bytes; 0 where the machine does not say (onnxruntime then uses 0 too)."""

    machine: str  # platform.machine(), lower case: "x86_64", "aarch64"
    cpu_model: str  # /proc/cpuinfo "model name" (for people; no rule reads it)
    cpu_flags: frozenset[str]  # /proc/cpuinfo "flags" of the first processor
    physical_cores: int  # distinct (package, core) pairs, as cpuinfo_get_cores_count counts them
    logical_cpus: int  # os.cpu_count()
    l1d_bytes: int  # sysconf(_SC_LEVEL1_DCACHE_SIZE)
    l2_bytes: int  # sysconf(_SC_LEVEL2_CACHE_SIZE): onnxruntime's Env::GetL2CacheSize
    l2_per_core_bytes: int  # oneDNN's get_per_core_cache_size(2)
    l3_bytes: int  # sysconf(_SC_LEVEL3_CACHE_SIZE)
    page_size: int  # sysconf(_SC_PAGESIZE)
    ort_intra_op_threads: int  # onnxruntime's default intra-op pool: the physical cores
    torch_threads: int  # PyTorch's intra-op threads: OMP_NUM_THREADS, MKL_NUM_THREADS, else the cores

    def has(self, *flags: str) -> bool:
        """Whether the CPU has every one of ``flags`` (``/proc/cpuinfo`` names)."""
        return set(flags) <= self.cpu_flags

    @property
    def nchwc_block(self) -> int:
        """MLAS's NCHWc block size (``MlasNchwcGetBlockSize``): 16 with AVX-512F, else 8."""
        return 16 if "avx512f" in self.cpu_flags else 8

    def to_dict(self) -> dict[str, Any]:
        """The profile as JSON data (``graphmem host --json``; the ``host`` block of documents)."""
        out: dict[str, Any] = {"schema_version": HOST_SCHEMA_VERSION}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = sorted(value) if isinstance(value, frozenset) else value
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_dict(cls, data: Any, source: str = "host profile") -> HostProfile:
        """The profile of :meth:`to_dict`'s data; :class:`HostProfileError` naming ``source`` and the
        first problem (a missing, unknown or mistyped key, a count below 1)."""
        if not isinstance(data, Mapping):
            raise HostProfileError(f"{source}: expected a JSON object of host facts (graphmem host --json writes one)")
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - {*names, "schema_version"})
        if unknown:
            raise HostProfileError(f"{source}: unknown key '{unknown[0]}' (keys: {', '.join(names)})")
        if data.get("schema_version") != HOST_SCHEMA_VERSION:
            raise HostProfileError(
                f"{source}: schema_version {data.get('schema_version')!r}, expected {HOST_SCHEMA_VERSION}"
            )
        missing = [n for n in names if n not in data]
        if missing:
            raise HostProfileError(f"{source}: missing key '{missing[0]}'")
        values: dict[str, Any] = {}
        for name in names:
            values[name] = _checked(name, data[name], source)
        return cls(**values)

    @classmethod
    def from_json(cls, text: str, source: str = "host profile") -> HostProfile:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise HostProfileError(f"{source}: not JSON ({exc.msg} at line {exc.lineno})") from None
        return cls.from_dict(data, source)


_COUNTS = frozenset({"physical_cores", "logical_cpus", "page_size", "ort_intra_op_threads", "torch_threads"})


def _checked(name: str, value: Any, source: str) -> Any:
    """One field of a profile file, type-checked: strings, a list of flag strings, counts >= 1,
    sizes >= 0."""
    if name in ("machine", "cpu_model"):
        if not isinstance(value, str):
            raise HostProfileError(f"{source}: '{name}' must be a string, not {value!r}")
        return value
    if name == "cpu_flags":
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise HostProfileError(f"{source}: 'cpu_flags' must be a list of flag names (as /proc/cpuinfo spells them)")
        return frozenset(value)
    low = 1 if name in _COUNTS else 0
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise HostProfileError(f"{source}: '{name}' must be an integer >= {low}, not {value!r}")
    return value


def load_host(path: str | os.PathLike[str]) -> HostProfile:
    """The profile in the file at ``path``: JSON (``graphmem host --json``), or TOML with the same
    keys when the name ends in ``.toml``. :class:`HostProfileError` (exit 2) names the file and
    what is wrong with it."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HostProfileError(f"host profile {p}: no such file (graphmem host --json > {p.name} writes one)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HostProfileError(f"host profile {p}: cannot be read ({exc.__class__.__name__})") from None
    source = f"host profile {p}"
    if p.suffix.lower() == ".toml":
        import tomllib

        try:
            return HostProfile.from_dict(tomllib.loads(text), source)
        except tomllib.TOMLDecodeError as exc:
            raise HostProfileError(f"{source}: not TOML ({exc})") from None
    return HostProfile.from_json(text, source)


def resolve_host(host: HostProfile | str | os.PathLike[str] | None) -> HostProfile:
    """The profile an edge passes down: ``host`` itself, the file it names, or (None)
    :func:`this_host`."""
    if host is None:
        return this_host()
    if isinstance(host, HostProfile):
        return host
    return load_host(host)


def this_host() -> HostProfile:
    """This machine: the profile in ``$GRAPHMEM_HOST`` when set, else :func:`read_host` (read
    once per process)."""
    pinned = os.environ.get(HOST_ENV, "")
    return load_host(pinned) if pinned else _read_once()


@functools.cache
def _read_once() -> HostProfile:
    return read_host()


def host_differences(a: HostProfile, b: HostProfile) -> tuple[str, ...]:
    """The facts where ``a`` and ``b`` differ, as ``name a-value != b-value`` (flags: the ones only
    one side has); ``cpu_model``, which no rule reads, is not compared."""
    out = []
    for f in fields(HostProfile):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x == y or f.name == "cpu_model":
            continue
        if isinstance(x, frozenset):
            only = sorted(x ^ y)
            out.append(f"{f.name} ({', '.join(only[:6])}{', ...' if len(only) > 6 else ''} on one side only)")
        else:
            out.append(f"{f.name} {x!r} != {y!r}")
    return tuple(out)


#: Flags some rule reads (shown by :func:`host_table`).
RULE_FLAGS = ("avx2", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16",
              "amx_tile", "amx_int8", "amx_bf16")


def host_line(h: HostProfile) -> str:
    """The profile in one line: ``x86_64 (AMD EPYC), avx2, L2 512 KiB, 2 cores``."""
    from graphmem.units import short_bytes

    read = [f for f in RULE_FLAGS if f in h.cpu_flags]
    model = f" ({h.cpu_model})" if h.cpu_model else ""
    return (f"{h.machine}{model}, {' '.join(read) or 'no AVX2'}, L2 {short_bytes(h.l2_bytes)}, "
            f"{h.physical_cores} cores")


def host_table(h: HostProfile) -> str:
    """``graphmem host``: the profile as aligned lines."""
    from graphmem.units import short_bytes

    def format_bytes(n: int) -> str:
        return short_bytes(n) if n else "unknown (0)"

    read = [f for f in RULE_FLAGS if f in h.cpu_flags]
    rows = [
        ("machine", f"{h.machine}" + (f" ({h.cpu_model})" if h.cpu_model else "")),
        ("CPU flags rules read", " ".join(read) or "none of " + ", ".join(RULE_FLAGS[:2]) + ", ..."),
        ("CPU flags", f"{len(h.cpu_flags)} (graphmem host --json lists them)"),
        ("physical cores", str(h.physical_cores)),
        ("logical CPUs", str(h.logical_cpus)),
        ("L1d cache", format_bytes(h.l1d_bytes)),
        (
            "L2 cache",
            f"{format_bytes(h.l2_bytes)} (onnxruntime), {format_bytes(h.l2_per_core_bytes)} per core (oneDNN)",
        ),
        ("L3 cache", format_bytes(h.l3_bytes)),
        ("page size", format_bytes(h.page_size)),
        ("onnxruntime threads", f"{h.ort_intra_op_threads} (default intra-op pool)"),
        ("PyTorch threads", f"{h.torch_threads} (OMP_NUM_THREADS, MKL_NUM_THREADS, else physical cores)"),
    ]
    return "\n".join(f"{name:<22}{value}" for name, value in rows)


# --- reading this machine: the only code that does -------------------------------------------


def read_host() -> HostProfile:
    """This machine's profile, read from Linux's ``/proc`` and ``/sys``, ``sysconf`` and the
    thread variables. Where the machine does not say: no flags, cores = logical CPUs, cache
    sizes 0 (as onnxruntime then reads them), oneDNN's per-core L2 guess of 512 KiB."""
    flags, model = parse_cpuinfo(_read_file("/proc/cpuinfo") or "")
    logical = _cpu_count() or 1
    cores = _physical_cores() or logical
    env = {name: _environ(name) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    return HostProfile(
        machine=_machine().lower(),
        cpu_model=model,
        cpu_flags=flags,
        physical_cores=cores,
        logical_cpus=logical,
        l1d_bytes=_sysconf("SC_LEVEL1_DCACHE_SIZE", 188) or 0,
        l2_bytes=_sysconf("SC_LEVEL2_CACHE_SIZE", 191) or 0,
        l2_per_core_bytes=_l2_per_core() or ONEDNN_DEFAULT_L2,
        l3_bytes=_sysconf("SC_LEVEL3_CACHE_SIZE", 194) or 0,
        page_size=_sysconf("SC_PAGESIZE", 30) or 4096,
        ort_intra_op_threads=cores,
        torch_threads=torch_threads_from(env, cores),
    )


def parse_cpuinfo(text: str) -> tuple[frozenset[str], str]:
    """The flags and model name of the first processor of a ``/proc/cpuinfo`` text."""
    flags: frozenset[str] | None = None
    model = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "flags" and flags is None:
            flags = frozenset(value.split())
        elif key == "model name" and not model:
            model = value.strip()
        if flags is not None and model:
            break
    return flags or frozenset(), model


def torch_threads_from(env: Mapping[str, str], physical_cores: int) -> int:
    """PyTorch's intra-op threads (``aten/src/ATen/ParallelCommon.cpp`` ``intraop_default_num_threads``,
    ``c10/core/thread_pool.cpp`` ``defaultNumThreads``): ``OMP_NUM_THREADS``, overridden by
    ``MKL_NUM_THREADS``, each only when a positive integer; else the physical cores."""
    threads = 0
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        value = env.get(var, "").strip()
        if value.isdigit() and int(value) > 0:
            threads = int(value)
    return threads or physical_cores


def _cpu_list_size(text: str) -> int:
    """CPUs in a Linux CPU list such as ``0-3,8``."""
    count = 0
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        if lo.strip().isdigit():
            count += int(hi) - int(lo) + 1 if hi.strip().isdigit() else 1
    return count


def _cache_size(text: str) -> int | None:
    """``512K`` / ``2048K`` / ``8M`` of ``/sys/.../cache/index*/size`` in bytes."""
    text = text.strip()
    scale = {"K": 1024, "M": 1024 * 1024, "G": 1024**3}.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale > 1 else text
    return int(digits) * scale if digits.isdigit() else None


def _physical_cores() -> int:
    """Distinct (package, core) pairs of Linux's CPU topology (``cpuinfo_get_cores_count``); 0
    when there is none."""
    base = "/sys/devices/system/cpu"
    cores = set()
    for name in _list_dir(base):
        if not (name.startswith("cpu") and name[3:].isdigit()):
            continue
        package = _read_file(f"{base}/{name}/topology/physical_package_id")
        core = _read_file(f"{base}/{name}/topology/core_id")
        if package is not None and core is not None:
            cores.add((package.strip(), core.strip()))
    return len(cores)


def _l2_per_core() -> int:
    """oneDNN's ``platform::get_per_core_cache_size(2)``: the first L2 data cache of CPU 0 over
    the CPUs sharing it (``getDataCacheSize(l) / getCoresSharingDataCache(l)``); 0 when unreadable."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    for index in sorted(n for n in _list_dir(base) if n.startswith("index")):
        level, kind = _read_file(f"{base}/{index}/level"), _read_file(f"{base}/{index}/type")
        if level is None or kind is None or level.strip() != "2" or kind.strip() not in ("Data", "Unified"):
            continue
        size, shared = _read_file(f"{base}/{index}/size"), _read_file(f"{base}/{index}/shared_cpu_list")
        nbytes = _cache_size(size or "")
        if nbytes is None:
            continue
        return nbytes // max(_cpu_list_size(shared or ""), 1)
    return 0


def _read_file(path: str) -> str | None:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return None


def _list_dir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _sysconf(name: str, number: int) -> int | None:
    """``sysconf`` by name, or by glibc's number where Python's table has no name for it."""
    try:
        value = int(os.sysconf(os.sysconf_names.get(name, number)))
    except (OSError, ValueError, AttributeError):
        return None
    return value if value > 0 else None


def _cpu_count() -> int | None:
    return os.cpu_count()


def _machine() -> str:
    return platform.machine()


def _environ(name: str) -> str:
    return os.environ.get(name, "")
