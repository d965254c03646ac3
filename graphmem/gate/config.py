"""``graphmem check``: which models to gate (the configuration), and gating them all.

Read from ``graphmem.toml`` (keys at the top level) or from ``[tool.graphmem]`` in
``pyproject.toml``. Without ``--config``, the first of these found in the working directory
or one of its parents is used. Example (``graphmem.toml``)::

    provider = "cpu"                 # defaults for every model (optional)
    max-total = "64MiB"
    dims = { batch = 1 }             # applied to the models that have these dims

    [[models]]
    path = "models/tiny_bert.onnx"   # relative to this file
    dims = { batch = 8, seq = 128 }  # every one must exist in the model
    max-peak = "10MiB"
    max-params = "25M"

    [[models]]
    path = "models/light_*.onnx"     # a glob: one entry per file, sorted

Keys (top level: ``models``, ``dims``, ``provider``, budgets; per model: ``path``, ``name``,
``dims``, ``provider``, budgets). Budgets are ``max-weights``, ``max-peak``, ``max-total``
(bytes: ``"512MiB"``, ``"1.5GB"`` or an integer), ``max-resident`` and ``max-arena`` (what the
session holds: ``session.resident_bytes``, ``session.arena_steady_bytes`` under onnxruntime's
default options; bytes too) and ``max-params``, ``max-flops`` (counts:
``"25M"``, ``"4G"``). A model's own keys override the defaults. Unknown keys, a model file
that does not exist, or a glob that matches nothing are errors (exit 2) that name the key
or the file.

:func:`run_check` analyzes and gates every configured model, in worker processes;
:func:`check_document` turns the outcomes into the ``graphmem check --json`` document.
"""

from __future__ import annotations

import difflib
import glob
import multiprocessing
import multiprocessing.context
import os
import sys
import time
import tomllib
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from graphmem.analysis.dims import MAX_DIM
from graphmem.errors import ConfigError, UsageError
from graphmem.gate.budgets import METRICS, Budgets, budgets_from_mapping
from graphmem.host import HostProfile, resolve_host

__all__ = [
    "ConfigError",
    "ModelSpec",
    "Config",
    "Outcome",
    "find_config",
    "load_config",
    "parse_config",
    "check_model",
    "run_check",
    "check_document",
]

CONFIG_NAMES = ("graphmem.toml", "pyproject.toml")
_BUDGET_KEYS = (*(m.option.removeprefix("--") for m in METRICS), "require-exact")
_TOP_KEYS = ("models", "dims", "provider", *_BUDGET_KEYS)
_MODEL_KEYS = ("path", "name", "dims", "shapes", "values", "provider", *_BUDGET_KEYS)
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """One model to check.

    ``dims`` must all exist in the model; ``default_dims`` (config-wide) apply only to the
    dims the model has. ``path`` is what is loaded (relative to the working directory when
    possible), ``name`` what is shown (relative to the config file, or the ``name`` key).
    """

    name: str
    path: str
    dims: dict[str, int] = field(default_factory=dict)
    default_dims: dict[str, int] = field(default_factory=dict)
    provider: str = "cpu"
    budgets: Budgets = field(default_factory=Budgets)
    where: str = ""
    # inputs' whole shapes (--shape): a sequence input's element shapes, None an optional without a value
    shapes: dict[str, tuple | None] = field(default_factory=dict)
    values: dict[str, tuple[int, ...]] = field(default_factory=dict)  # small integer inputs (--value)


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    path: Path
    models: tuple[ModelSpec, ...]


def find_config(start: Path | None = None) -> Path:
    """The nearest ``graphmem.toml``, or ``pyproject.toml`` with ``[tool.graphmem]``, upwards."""
    here = Path(start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / "graphmem.toml"
        if candidate.is_file():
            return candidate
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file() and "graphmem" in _read_toml(pyproject).get("tool", {}):
            return pyproject
    raise ConfigError(
        "no configuration found: pass --config FILE, or create graphmem.toml "
        "(or a [tool.graphmem] table in pyproject.toml)"
    )


def load_config(path: Path | None = None) -> Config:
    """Read and validate the configuration at ``path`` (found with :func:`find_config` if None)."""
    path = Path(path) if path is not None else find_config()
    if not path.exists():
        raise ConfigError(f"--config {path}: no such file")
    if not path.is_file():
        raise ConfigError(f"--config {path}: not a file")
    data = _read_toml(path)
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        if not isinstance(tool, dict) or "graphmem" not in tool:
            raise ConfigError(f"{path}: has no [tool.graphmem] table")
        data = tool["graphmem"]
    return parse_config(data, path=path)


def parse_config(data: Any, *, path: Path) -> Config:
    """Validate the config table ``data`` read from ``path``; raise :class:`ConfigError`."""
    prefix = f"{path}: "
    table = _table(data, "the configuration", prefix)
    _known(table, _TOP_KEYS, "", prefix)
    default_budgets = _budgets(table, "", prefix)
    default_dims = _dims(table.get("dims", {}), "dims", prefix)
    default_provider = _string(table.get("provider", "cpu"), "provider", prefix)
    models = table.get("models")
    if not isinstance(models, list) or not models:
        raise ConfigError(f"{prefix}'models' must be a non-empty array of tables ([[models]])")
    specs: list[ModelSpec] = []
    base = path.resolve().parent
    for i, entry in enumerate(models):
        where = f"models[{i}]"
        entry = _table(entry, where, prefix)
        _known(entry, _MODEL_KEYS, f"{where}.", prefix)
        if "path" not in entry:
            raise ConfigError(f"{prefix}{where}: missing key 'path'")
        pattern = _string(entry["path"], f"{where}.path", prefix)
        name = _string(entry["name"], f"{where}.name", prefix) if "name" in entry else None
        dims = _dims(entry.get("dims", {}), f"{where}.dims", prefix)
        shapes = _int_lists(entry.get("shapes", {}), f"{where}.shapes", prefix, minimum=0, nested=True)
        values = {k: v for k, v in _int_lists(entry.get("values", {}), f"{where}.values", prefix, minimum=None).items()
                  if v is not None}  # not nested: no None
        provider = _string(entry.get("provider", default_provider), f"{where}.provider", prefix)
        budgets = default_budgets.over(_budgets(entry, f"{where}.", prefix))
        files = _expand(base, pattern, where, prefix)
        if name is not None and len(files) > 1:
            raise ConfigError(f"{prefix}{where}.name: a name needs a path that is one file")
        for file in files:
            shown = name or (str(file) if os.path.isabs(pattern) else _relative(file, base))
            specs.append(ModelSpec(name=shown, path=_relative(file, Path.cwd()), dims=dims, shapes=shapes,
                                   values=values, default_dims=default_dims, provider=provider, budgets=budgets,
                                   where=where))
    return Config(path=path, models=tuple(specs))


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None


def _table(value: Any, what: str, prefix: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{prefix}{what} must be a table")
    return value


def _known(table: dict[str, Any], keys: tuple[str, ...], where: str, prefix: str) -> None:
    for key in table:
        if key not in keys:
            close = difflib.get_close_matches(key, keys, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f" (known keys: {', '.join(keys)})"
            raise ConfigError(f"{prefix}unknown key '{where}{key}'{hint}")


def _string(value: Any, what: str, prefix: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{prefix}{what} must be a non-empty string")
    return value


def _dims(value: Any, what: str, prefix: str) -> dict[str, int]:
    table = _table(value, what, prefix)
    for name, n in table.items():
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_DIM:
            raise ConfigError(
                f"{prefix}{what}.{name} = {n!r}: a dim must be an integer from 0 to 2**40"
            )
    return dict(table)


def _int_lists(
    value: Any, what: str, prefix: str, *, minimum: int | None, nested: bool = False
) -> dict[str, tuple | None]:
    """``shapes = { x = [1, 3, 48, 192] }`` / ``values = { sr = [16000] }`` (a bare int is one value);
    ``nested``: ``shapes = { s = [[4, 100], [2, 100]] }``, a sequence input's element shapes, and
    ``o = "none"``, an optional input without a value."""
    table = _table(value, what, prefix)
    out: dict[str, tuple | None] = {}
    for name, items in table.items():
        if nested and isinstance(items, str) and items.strip().lower() == "none":
            out[name] = None  # an optional input without a value
            continue
        if nested and isinstance(items, list) and items and all(isinstance(e, list) for e in items):
            out[name] = tuple(_int_lists({name: e}, what, prefix, minimum=minimum)[name] for e in items)
            continue
        items = [items] if isinstance(items, int) and not isinstance(items, bool) else items
        if not isinstance(items, list) or any(isinstance(n, bool) or not isinstance(n, int) for n in items):
            raise ConfigError(f"{prefix}{what}.{name} = {items!r}: expected an array of integers")
        if minimum is not None and any(not minimum <= n <= MAX_DIM for n in items):
            raise ConfigError(f"{prefix}{what}.{name} = {items!r}: a dim must be an integer from 0 to 2**40")
        out[name] = tuple(items)
    return out


def _budgets(table: dict[str, Any], where: str, prefix: str) -> Budgets:
    values = {k: v for k, v in table.items() if k in _BUDGET_KEYS}
    try:
        return budgets_from_mapping(values)
    except UsageError as exc:
        raise ConfigError(f"{prefix}{where}{str(exc).removeprefix('--')}") from None


def _expand(base: Path, pattern: str, where: str, prefix: str) -> list[Path]:
    full = os.path.join(base, os.path.expanduser(pattern))
    if _GLOB_CHARS & set(pattern):
        files = sorted(Path(p) for p in glob.glob(full, recursive=True) if os.path.isfile(p))
        if not files:
            raise ConfigError(f"{prefix}{where}.path: '{pattern}' matches no model file")
        return files
    file = Path(full)
    if not file.exists():
        raise ConfigError(f"{prefix}{where}.path: model file '{pattern}' does not exist ({file})")
    if not file.is_file():
        raise ConfigError(f"{prefix}{where}.path: '{pattern}' is not a file")
    return [file]


def _relative(file: Path, base: Path) -> str:
    try:
        return Path(os.path.relpath(file, base)).as_posix()
    except ValueError:  # another drive (Windows)
        return str(file)


# --- running the configured models (``graphmem check``) ------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """One model's result: ``pass``/``fail`` with its gated peak report, or ``error``."""

    spec: ModelSpec
    status: Literal["pass", "fail", "error"]
    report: dict[str, Any] | None
    error: str | None
    seconds: float

    @property
    def messages(self) -> list[str]:
        """The gate failure messages (empty unless ``status == "fail"``)."""
        gate = (self.report or {}).get("gate") or {"failures": []}
        return [f["message"] for f in gate["failures"]]


def check_model(spec: ModelSpec, host: HostProfile) -> Outcome:
    """Analyze one configured model for a run on ``host`` and gate it; input errors become an
    ``error`` outcome."""
    from graphmem.analysis.document import peak_json
    from graphmem.analysis.pipeline import analyze_model
    from graphmem.analysis.request import AnalysisRequest, Bindings
    from graphmem.errors import GraphmemError
    from graphmem.gate.budgets import apply_gate, evaluate
    from graphmem.model.loading import load_model

    start = time.perf_counter()
    try:
        model = load_model(spec.path)
        own = set(model.symbolic_dims)
        dims = {k: v for k, v in spec.default_dims.items() if k in own} | spec.dims
        analysis = analyze_model(model, AnalysisRequest(
            bindings=Bindings.of(dims=dims, shapes=spec.shapes, values=spec.values), provider=spec.provider,
            host=host,
        ))
        doc = peak_json(analysis)
        if spec.budgets.session:  # max-resident, max-arena: what the session holds
            from graphmem.gate.diff import with_session

            doc = with_session(doc, analysis, host)
        status: Literal["pass", "fail"] = "pass"
        if spec.budgets.active:
            result = evaluate(doc, spec.budgets)
            doc = apply_gate(doc, result)
            status = "pass" if result.passed else "fail"
    except GraphmemError as exc:
        return Outcome(
            spec=spec, status="error", report=None, error=str(exc), seconds=_since(start)
        )
    return Outcome(spec=spec, status=status, report=doc, error=None, seconds=_since(start))


def _since(start: float) -> float:
    return time.perf_counter() - start


def run_check(
    config: Config,
    *,
    jobs: int | None = None,
    on_done: Callable[[Outcome, int, int], None] | None = None,
    host: HostProfile | None = None,
) -> list[Outcome]:
    """Check every configured model for a run on ``host`` (None: this machine); return the
    outcomes in configuration order.

    ``jobs`` worker processes (default ``os.cpu_count()``; 1 runs in this process). The
    largest files are started first so that the workers finish together. ``on_done(outcome,
    done, total)`` is called as each model finishes, in completion order.
    """
    specs = config.models
    host = resolve_host(host)
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    if jobs < 1:
        raise UsageError(f"--jobs {jobs}: must be at least 1")
    total = len(specs)
    results: dict[int, Outcome] = {}

    def record(i: int, outcome: Outcome) -> None:
        results[i] = outcome
        if on_done is not None:
            on_done(outcome, len(results), total)

    if jobs == 1 or total == 1:
        for i, spec in enumerate(specs):
            record(i, check_model(spec, host))
    else:
        order = sorted(range(total), key=lambda i: -_size(specs[i].path))
        _preload()
        with ProcessPoolExecutor(max_workers=min(jobs, total), mp_context=_context()) as pool:
            try:
                futures = {pool.submit(check_model, specs[i], host): i for i in order}
                for future in as_completed(futures):
                    record(futures[future], future.result())
            except BaseException:  # a signal (errors.Terminated) or a failure: the workers end too,
                # removing their temporary folders as they unwind (they inherit the CLI's handlers)
                for child in multiprocessing.active_children():
                    child.terminate()
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    return [results[i] for i in range(total)]


def _context() -> multiprocessing.context.BaseContext | None:
    """Fork on Linux, so workers start with the parent's modules already imported."""
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return None  # the platform default (spawn on macOS and Windows)


def _preload() -> None:
    """Import what analyses import lazily (the shape evaluator), once, before forking."""
    import graphmem.analysis.pipeline  # noqa: F401

    try:
        import onnx.reference  # noqa: F401
    except ImportError:
        pass


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def check_document(config: Config, outcomes: list[Outcome], host: HostProfile) -> dict[str, Any]:
    """The ``graphmem check --json`` document (``schema_version`` 1) of the models checked for a
    run on ``host``."""
    counts = {s: sum(o.status == s for o in outcomes) for s in ("pass", "fail", "error")}
    return {
        "schema_version": 1,
        "host": host.to_dict(),
        "config": str(config.path),
        "passed": counts["fail"] == 0 and counts["error"] == 0,
        "summary": {
            "models": len(outcomes),
            "passed": counts["pass"],
            "failed": counts["fail"],
            "errors": counts["error"],
        },
        "models": [
            {
                "name": o.spec.name,
                "path": o.spec.path,
                "dims": (o.report or {}).get("model", {}).get("dims", o.spec.dims),
                "provider": o.spec.provider,
                "status": o.status,
                "error": o.error,
                "report": o.report,
            }
            for o in outcomes
        ],
    }
