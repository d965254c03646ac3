"""JSON schemas of the documents the CLI emits, and a small validator for them.

One file per document, all ``schema_version`` 1 (draft 2020-12):

* ``peak.schema.json`` — ``graphmem peak --json`` (``--format json``);
* ``symbolic.schema.json`` — ``graphmem peak --symbolic --json``;
* ``check.schema.json`` — ``graphmem check --format json``;
* ``diff.schema.json`` — ``graphmem diff --format json``;
* ``layers.schema.json`` — ``graphmem layers --json`` (``--format json``);
* ``ops.schema.json`` — ``graphmem ops --json``;
* ``verify.schema.json`` — ``graphmem verify --json``;
* ``sweep.schema.json`` — ``graphmem sweep --json``;
* ``fit.schema.json`` — ``graphmem fit --json`` (modes "check" and "solve", with or without
  ``--train``, with or without ``--device``);
* ``devices.schema.json`` — ``graphmem devices --json``;
* ``train.schema.json`` — ``graphmem train --json``;
* ``advise.schema.json`` — ``graphmem advise --json``;
* ``host.schema.json`` — ``graphmem host --json``, and the ``host`` block every document built
  from an analysis records (the machine its figures are for).

Later versions add keys, never rename or remove them; ``schema_version`` changes only with a
documented migration.

The validator implements exactly the subset of JSON Schema these files use — ``type``,
``const``, ``enum``, ``properties``, ``required``, ``additionalProperties``, ``items``,
``minimum``, ``anyOf``, ``allOf``, ``not``, ``$ref`` (``#/…`` and a sibling file such as
``peak.schema.json#/$defs/gate``) — and rejects any other keyword, so a schema can never
silently ask for more than is checked. No third-party dependency.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from graphmem.errors import SchemaError

__all__ = ["SCHEMAS", "SchemaError", "load_schema", "schema_errors", "validate"]

SCHEMAS = (
    "peak", "check", "diff", "symbolic", "layers", "ops", "verify", "sweep", "fit", "devices",
    "train", "host", "advise",
)

_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description"})
_CHECKED = frozenset(
    {"type", "const", "enum", "properties", "required", "additionalProperties", "items",
     "minimum", "anyOf", "allOf", "not", "$ref"}
)
_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """The schema ``name`` (one of :data:`SCHEMAS`, or a file name) as a dict."""
    file = name if name.endswith(".json") else f"{name}.schema.json"
    try:
        text = resources.files(__name__).joinpath(file).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KeyError(f"no schema '{name}' (have: {', '.join(SCHEMAS)})") from None
    return json.loads(text)


def validate(doc: Any, name: str) -> None:
    """Raise :class:`SchemaError` unless ``doc`` matches schema ``name``."""
    problems = schema_errors(doc, name)
    if problems:
        more = f"; … ({len(problems)} in all)" if len(problems) > 10 else ""
        shown = "; ".join(problems[:10]) + more
        raise SchemaError(f"document does not match {name}.schema.json: {shown}")


def schema_errors(doc: Any, name: str) -> list[str]:
    """Every mismatch of ``doc`` against schema ``name``, as ``"$.a.b: problem"`` strings."""
    root = load_schema(name)
    out: list[str] = []
    _check(doc, root, root, "$", out)
    return out


def _check(
    value: Any, schema: dict[str, Any], root: dict[str, Any], path: str, out: list[str]
) -> None:
    unknown = set(schema) - _CHECKED - _ANNOTATIONS
    if unknown:
        raise KeyError(f"schema keyword(s) {sorted(unknown)} at {path} are not supported")
    if "$ref" in schema:
        target, target_root = _resolve(schema["$ref"], root)
        _check(value, target, target_root, path, out)
    if "allOf" in schema:
        for part in schema["allOf"]:
            _check(value, part, root, path, out)
    if "anyOf" in schema:
        trials: list[list[str]] = []
        for option in schema["anyOf"]:
            trial: list[str] = []
            _check(value, option, root, path, trial)
            if not trial:
                break
            trials.append(trial)
        else:
            closest = min(trials, key=len) if trials else []
            hint = f" (closest: {'; '.join(closest[:3])})" if closest else ""
            out.append(f"{path}: matches none of the allowed forms{hint}")
    if "not" in schema:
        banned: list[str] = []
        _check(value, schema["not"], root, path, banned)
        if not banned:
            out.append(f"{path}: matches a form that is not allowed")
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            out.append(f"{path}: expected {' or '.join(types)}, got {type(value).__name__}")
            return
    if "const" in schema and not _same(value, schema["const"]):
        out.append(f"{path}: must be {schema['const']!r}")
    if "enum" in schema and not any(_same(value, e) for e in schema["enum"]):
        out.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and _TYPES["number"](value) and value < schema["minimum"]:
        out.append(f"{path}: {value} is below the minimum {schema['minimum']}")
    if isinstance(value, dict):
        _check_object(value, schema, root, path, out)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(item, schema["items"], root, f"{path}[{i}]", out)


def _check_object(
    value: dict[str, Any], schema: dict[str, Any], root: dict[str, Any], path: str, out: list[str]
) -> None:
    props = schema.get("properties", {})
    for key in schema.get("required", ()):
        if key not in value:
            out.append(f"{path}: missing key '{key}'")
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in props:
            _check(item, props[key], root, f"{path}.{key}", out)
        elif extra is False:
            out.append(f"{path}: key '{key}' is not in the schema")
        elif isinstance(extra, dict):
            _check(item, extra, root, f"{path}.{key}", out)


def _resolve(ref: str, root: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    file, _, pointer = ref.partition("#")
    target_root = load_schema(file) if file else root
    node: Any = target_root
    for part in (p for p in pointer.split("/") if p):
        node = node[part]
    return node, target_root


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``True`` is not ``1``."""
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b
