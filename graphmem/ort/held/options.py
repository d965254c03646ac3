"""onnxruntime's session options that change what a CPU session holds, as a value.

:class:`SessionOptions` carries onnxruntime's names and defaults (onnxruntime 1.31, CPU provider)
for every option that moves the arena figures of :mod:`graphmem.ort.held`:

* ``SessionOptions`` attributes: ``enable_cpu_mem_arena`` (True), ``enable_mem_pattern`` (True),
  ``intra_op_num_threads`` (0: onnxruntime picks the machine's physical cores; resolved here from
  the host, see :func:`parse_session_options`), and the graph level, ``graph_optimization_level``,
  which graphmem takes from ``--graph-opt`` only;
* session config entries: ``session.disable_prepacking`` ("0"),
  ``session.use_device_allocator_for_initializers`` ("0");
* the CPU arena's configuration, ``OrtArenaCfg``'s keys (``core/framework/allocator.h``,
  ``BFCArena`` defaults in ``core/framework/bfc_arena.h``): ``arena_extend_strategy``
  (kNextPowerOfTwo), ``max_mem``, ``initial_chunk_size_bytes`` (1 MiB),
  ``max_dead_bytes_per_chunk`` (128 MiB), ``initial_growth_chunk_size_bytes`` (2 MiB),
  ``max_power_of_two_extend_bytes`` (1 GiB). A per-session CPU arena always has the defaults: a
  user changes them by registering an arena in the environment
  (``onnxruntime.create_and_register_allocator(OrtMemoryInfo("Cpu", ORT_ARENA_ALLOCATOR, 0,
  DEFAULT), OrtArenaCfg({...}))``) and setting the session config entry
  ``session.use_env_allocators`` to "1" — which is what ``graphmem verify`` and
  ``scripts/held_arena_check.py`` do when one of them differs from its default
  (:meth:`SessionOptions.uses_env_arena`).

Options onnxruntime has that change these figures in ways graphmem does not emulate
(``execution_mode=ORT_PARALLEL``, ``enable_mem_reuse=0``) are refused by name, never ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from graphmem.errors import UsageError

__all__ = [
    "SessionOptions",
    "parse_session_options",
    "GRAPH_OPT_LEVELS",
    "EXTEND_STRATEGIES",
    "ARENA_CFG_KEYS",
]

#: ``--graph-opt`` value → onnxruntime's ``GraphOptimizationLevel`` name.
GRAPH_OPT_LEVELS = {
    "none": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}

#: ``ArenaExtendStrategy`` (``core/framework/arena_extend_strategy.h``): name → OrtArenaCfg value.
EXTEND_STRATEGIES = {"kNextPowerOfTwo": 0, "kSameAsRequested": 1}

#: The option key onnxruntime uses for each field, in the order the document lists them.
_KEYS = {
    "enable_cpu_mem_arena": "enable_cpu_mem_arena",
    "enable_mem_pattern": "enable_mem_pattern",
    "disable_prepacking": "session.disable_prepacking",
    "use_device_allocator_for_initializers": "session.use_device_allocator_for_initializers",
    "intra_op_num_threads": "intra_op_num_threads",
    "graph_optimization_level": "graph_optimization_level",
    "arena_extend_strategy": "arena_extend_strategy",
    "max_mem": "max_mem",
    "initial_chunk_size_bytes": "initial_chunk_size_bytes",
    "max_dead_bytes_per_chunk": "max_dead_bytes_per_chunk",
    "initial_growth_chunk_size_bytes": "initial_growth_chunk_size_bytes",
    "max_power_of_two_extend_bytes": "max_power_of_two_extend_bytes",
}

#: The ``OrtArenaCfg`` keys (onnxruntime's spelling), all set through an environment arena.
ARENA_CFG_KEYS = (
    "arena_extend_strategy",
    "max_mem",
    "initial_chunk_size_bytes",
    "max_dead_bytes_per_chunk",
    "initial_growth_chunk_size_bytes",
    "max_power_of_two_extend_bytes",
)

#: onnxruntime options whose effect graphmem does not emulate: key → why.
_REFUSED = {
    "execution_mode": "the parallel executor disables the memory pattern and reorders nodes",
    "enable_mem_reuse": "without reuse every tensor gets its own buffer; the planner emulation assumes reuse",
    "session.use_env_allocators": "set by graphmem itself when an OrtArenaCfg key is given",
    "inter_op_num_threads": "used only by the parallel executor",
    "graph_optimization_level": "use --graph-opt (none, basic, extended, all)",
}

_MAX_SIZE_T = (1 << 64) - 1
_MAX_INT = (1 << 31) - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionOptions:
    """The session options a held-memory figure assumes (onnxruntime's names and defaults).

    ``intra_op_num_threads``: 0 is onnxruntime's default (the host's physical cores), which
    :func:`parse_session_options` resolves to a count; ``max_mem`` 0 means no limit (``SIZE_MAX``,
    onnxruntime's default)."""

    enable_cpu_mem_arena: bool = True
    enable_mem_pattern: bool = True
    disable_prepacking: bool = False
    use_device_allocator_for_initializers: bool = False
    intra_op_num_threads: int = 0
    graph_optimization_level: str = "ORT_DISABLE_ALL"
    arena_extend_strategy: str = "kNextPowerOfTwo"
    max_mem: int = 0
    initial_chunk_size_bytes: int = 1 << 20
    max_dead_bytes_per_chunk: int = 128 << 20
    initial_growth_chunk_size_bytes: int = 2 << 20
    max_power_of_two_extend_bytes: int = 1 << 30

    @property
    def graph_opt(self) -> str:
        """The ``--graph-opt`` spelling of the graph level."""
        return next(k for k, v in GRAPH_OPT_LEVELS.items() if v == self.graph_optimization_level)

    @property
    def memory_limit(self) -> int:
        """The arena's ``max_mem`` as ``BFCArena`` sees it (0 → ``SIZE_MAX``)."""
        return self.max_mem or _MAX_SIZE_T

    def arena_cfg(self) -> dict[str, int]:
        """The ``OrtArenaCfg`` entries that differ from onnxruntime's defaults (empty: a
        per-session arena with defaults is what the session gets)."""
        default = SessionOptions()
        out: dict[str, int] = {}
        for key in ARENA_CFG_KEYS:
            value = getattr(self, key)
            if value != getattr(default, key):
                out[key] = EXTEND_STRATEGIES[value] if key == "arena_extend_strategy" else value
        return out

    def uses_env_arena(self) -> bool:
        """Whether onnxruntime needs an environment arena to get these options (see module doc)."""
        return bool(self.arena_cfg())

    def session_config(self) -> dict[str, str]:
        """The session config entries to set on ``onnxruntime.SessionOptions``."""
        out = {
            "session.disable_prepacking": "1" if self.disable_prepacking else "0",
            "session.use_device_allocator_for_initializers": "1" if self.use_device_allocator_for_initializers else "0",
        }
        if self.uses_env_arena():
            out["session.use_env_allocators"] = "1"
        return out

    def as_dict(self) -> dict[str, object]:
        """Every option assumed, under onnxruntime's key, for the document."""
        out: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("disable_prepacking", "use_device_allocator_for_initializers"):
                value = "1" if value else "0"
            out[_KEYS[f.name]] = value
        out["execution_mode"] = "ORT_SEQUENTIAL"
        out["enable_mem_reuse"] = True
        return out


def parse_session_options(
    pairs: Iterable[str],
    *,
    graph_opt: str = "none",
    default_threads: int,
    base: SessionOptions | None = None,
) -> SessionOptions:
    """``KEY=VALUE`` strings (``--session-option``, repeatable) → :class:`SessionOptions`.

    ``graph_opt`` is ``--graph-opt``; ``default_threads`` is what onnxruntime uses for
    ``intra_op_num_threads=0`` (its default) on this host: its physical cores.

    Raises :class:`UsageError` (exit 2) with one line naming the bad key or value and the known
    ones; an option onnxruntime has but graphmem does not emulate is refused by name.
    """
    if graph_opt not in GRAPH_OPT_LEVELS:
        raise UsageError(f"--graph-opt {graph_opt!r}: expected one of {', '.join(GRAPH_OPT_LEVELS)}")
    if isinstance(default_threads, bool) or not isinstance(default_threads, int) or default_threads < 1:
        raise UsageError(f"default intra-op thread count must be an int >= 1, got {default_threads!r}")
    given: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = str(pair).partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise UsageError(f"--session-option {pair!r}: expected KEY=VALUE")
        given[key] = value
    return _apply(given, graph_opt=graph_opt, default_threads=default_threads, base=base or SessionOptions())


def _apply(given: Mapping[str, str], *, graph_opt: str, default_threads: int, base: SessionOptions) -> SessionOptions:
    by_key = {v: k for k, v in _KEYS.items() if k != "graph_optimization_level"}
    # each parsed by _value to its SessionOptions field's type
    changes: dict[str, Any] = {"graph_optimization_level": GRAPH_OPT_LEVELS[graph_opt]}
    for key, text in given.items():
        if key in _REFUSED:
            raise UsageError(f"--session-option {key}: not emulated ({_REFUSED[key]})")
        name = by_key.get(key)
        if name is None:
            known = ", ".join(sorted(by_key))
            raise UsageError(f"--session-option {key}: unknown option; known: {known}")
        changes[name] = _value(name, key, text)
    if changes.get("intra_op_num_threads", base.intra_op_num_threads) == 0:
        changes["intra_op_num_threads"] = default_threads
    return replace(base, **changes)


def _value(name: str, key: str, text: str) -> object:
    """The typed value of option ``key`` (field ``name``) from its text."""
    if name in (
        "enable_cpu_mem_arena",
        "enable_mem_pattern",
        "disable_prepacking",
        "use_device_allocator_for_initializers",
    ):
        flags = {"1": True, "0": False, "true": True, "false": False}
        if text.lower() not in flags:
            raise UsageError(f"--session-option {key}={text}: expected 0 or 1 (or true/false)")
        return flags[text.lower()]
    if name == "arena_extend_strategy":
        by_number = {str(v): k for k, v in EXTEND_STRATEGIES.items()}
        if text in EXTEND_STRATEGIES:
            return text
        if text in by_number:
            return by_number[text]
        raise UsageError(f"--session-option {key}={text}: expected one of {', '.join(EXTEND_STRATEGIES)} (or 0, 1)")
    limits = {
        "intra_op_num_threads": (0, 1 << 16),
        "max_mem": (0, _MAX_SIZE_T),
        "max_dead_bytes_per_chunk": (0, _MAX_INT),
        "max_power_of_two_extend_bytes": (256, 1 << 62),
    }
    low, high = limits.get(name, (256, _MAX_INT))
    try:
        number = int(text)
    except ValueError:
        raise UsageError(f"--session-option {key}={text}: expected an integer") from None
    if not low <= number <= high:
        raise UsageError(f"--session-option {key}={text}: expected an integer in [{low}, {high}]")
    return number
