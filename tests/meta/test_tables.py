"""Every per-op rule table is one :class:`~graphmem.optable.OpTable`: keyed by (domain, op_type),
immutable, looked up with "ai.onnx" normalised to "", its values of the type its annotation says.

The tables are found, not listed: every module of the package is imported (``pkgutil``) and every
module-level OpTable collected, so a new table is checked the day it is written.
"""

from __future__ import annotations

import collections.abc
import importlib
import pkgutil
import types
import typing
from typing import Any

import pytest
from onnx import defs, helper

import graphmem
from graphmem.optable import (
    DEFAULT_DOMAIN_NAME, KNOWN_DOMAINS, VIEW_OPS, OpRule, OpTable, domain_name, normalize_domain,
    normalize_opsets, op_key,
)


def _modules() -> list[types.ModuleType]:
    names = [m.name for m in pkgutil.walk_packages(graphmem.__path__, "graphmem.")]
    return [importlib.import_module(n) for n in ["graphmem", *sorted(names)] if not n.endswith("__main__")]


def _tables() -> dict[str, tuple[OpTable[Any], str]]:
    """``module.NAME`` -> (table, its annotation) of every OpTable a module defines (an imported
    one is found again under its defining module, where the annotation is)."""
    found: dict[str, tuple[OpTable[Any], str]] = {}
    for module in _modules():
        annotations = vars(module).get("__annotations__", {})
        for name, value in vars(module).items():
            if isinstance(value, OpTable) and name in annotations:
                found[f"{module.__name__}.{name}"] = (value, annotations[name])
    return found


TABLES = _tables()


def _unannotated() -> list[str]:
    """OpTables held by a module under a name no module annotates (a table without a declared type)."""
    annotated = {id(t) for t, _ in TABLES.values()}
    return sorted(
        f"{m.__name__}.{name}"
        for m in _modules() for name, value in vars(m).items()
        if isinstance(value, OpTable) and id(value) not in annotated
    )


def _resolve(annotation: str, module_name: str) -> Any:
    """The annotation (a string under ``from __future__ import annotations``) as a type."""
    module = importlib.import_module(module_name)
    return eval(annotation, {**vars(typing), **vars(module)})  # noqa: S307 - the package's own annotations


def conforms(value: object, tp: Any) -> bool:
    """Whether ``value`` is of type ``tp`` (the subset of typing the tables' annotations use)."""
    if tp is Any or isinstance(tp, typing.TypeVar):
        return True
    if tp is None or tp is type(None):
        return value is None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if origin is collections.abc.Callable or tp is collections.abc.Callable:
        return callable(value)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(conforms(v, a) for v, a in zip(value, args))
    if origin in (frozenset, set, list):
        return isinstance(value, origin) and all(conforms(v, args[0]) for v in value)
    if origin is OpRule:
        return isinstance(value, OpRule) and conforms(value.rule, args[0]) and isinstance(value.outcome, str) \
            and bool(value.outcome)
    if origin is not None:
        return isinstance(value, origin)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(tp, type) and isinstance(value, tp)


def test_the_package_has_op_tables() -> None:
    # the tables of the layout issue: FLOP rules, saved tensors, scratch, buffer sharing, CUDA, ...
    assert len(TABLES) >= 30, sorted(TABLES)
    assert not _unannotated(), f"OpTables without a declared type: {_unannotated()}"


@pytest.mark.parametrize("name", sorted(TABLES))
def test_keys_are_normalised_op_keys(name: str) -> None:
    table, _ = TABLES[name]
    assert len(table) > 0
    for key in table:
        assert isinstance(key, tuple) and len(key) == 2, key
        domain, op = key
        assert isinstance(domain, str) and isinstance(op, str) and op, key
        assert domain == normalize_domain(domain), f"{key}: the default domain is spelled \"\""
        assert domain in KNOWN_DOMAINS, f"{key}: not a domain onnx or onnxruntime defines"
        assert op.isidentifier(), f"{key}: not an op type"
    assert len(set(table)) == len(table)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_values_are_of_the_declared_type(name: str) -> None:
    table, annotation = TABLES[name]
    tp = _resolve(annotation, name.rpartition(".")[0])
    assert typing.get_origin(tp) is OpTable, f"{name} is annotated {annotation}, not OpTable[...]"
    (value_type,) = typing.get_args(tp)
    bad = [key for key, value in table.items() if not conforms(value, value_type)]
    assert not bad, f"{name}: values of {bad[:5]} are not {annotation}"


@pytest.mark.parametrize("name", sorted(n for n, (_, a) in TABLES.items() if a == "OpTable[bool]"))
def test_op_sets_hold_only_true(name: str) -> None:
    # an OpTable[bool] is a set of ops, asked with `key in table`: a False entry would read as a member
    assert all(v is True for v in TABLES[name][0].values())


@pytest.mark.parametrize("name", sorted(TABLES))
def test_tables_are_immutable(name: str) -> None:
    table, _ = TABLES[name]
    with pytest.raises(TypeError):
        table[("", "Relu")] = None  # type: ignore[index]
    with pytest.raises(AttributeError):
        table.extra = 1  # type: ignore[attr-defined]


def test_the_conformance_check_can_fail() -> None:
    assert conforms(((0, 0),), tuple[tuple[int, int], ...])
    assert not conforms(((0, "0"),), tuple[tuple[int, int], ...])
    assert not conforms(True, int)
    assert not conforms(OpRule(rule=1, outcome="counted"), OpRule[collections.abc.Callable[..., int]])
    assert conforms(frozenset({1}), frozenset[int]) and not conforms({1}, frozenset[int])


def test_default_domain_ops_are_onnx_ops() -> None:
    # every default-domain key names an op onnx defines, or one onnxruntime registers in that domain
    # (Scale, DynamicSlice, MemcpyToHost, ...: model/validate.py's table, which
    # tests/model/test_validate_ort_ops.py compares with the installed onnxruntime's schemas)
    from graphmem.model.validate import ORT_ONNX_DOMAIN_OPS

    ort_only = {name for name, _ in ORT_ONNX_DOMAIN_OPS}
    assert "MemcpyToHost" in ort_only  # onnxruntime is there: the test is not vacuous
    known = {s.name for s in defs.get_all_schemas_with_history() if not s.domain} | ort_only
    # the one op of PyTorch's no ONNX file has: training.patterns fuses the exporter's Mul(x, Sigmoid(x)) into it
    known.add("Silu")
    unknown = {f"{name}: {op}" for name, (table, _) in TABLES.items() for d, op in table if d == "" and op not in known}
    assert not unknown, sorted(unknown)


def test_lookups_normalise_the_default_domain() -> None:
    from graphmem.ort.rules import ALIAS

    node = helper.make_node("Reshape", ["x", "s"], ["y"], domain="ai.onnx")
    assert op_key(node) == ("", "Reshape")
    assert ALIAS.of(node) == ALIAS.lookup("", "Reshape") == ALIAS[("ai.onnx", "Reshape")] == ((0, 0),)
    assert ("ai.onnx", "Reshape") in ALIAS and ALIAS.lookup("ai.onnx", "Relu") is None


def test_domain_names() -> None:
    assert normalize_domain(DEFAULT_DOMAIN_NAME) == "" and normalize_domain("com.microsoft") == "com.microsoft"
    assert domain_name("") == domain_name(DEFAULT_DOMAIN_NAME) == "ai.onnx"
    # a file naming the default domain "ai.onnx" has its version under "" too; an explicit "" wins
    assert normalize_opsets({"ai.onnx": 13, "com.microsoft": 1}) == {"ai.onnx": 13, "": 13, "com.microsoft": 1}
    assert normalize_opsets({"ai.onnx": 13, "": 17}) == {"ai.onnx": 13, "": 17}


def test_a_key_given_twice_is_an_error() -> None:
    with pytest.raises(ValueError, match="given twice"):
        OpTable({("", "Relu"): 1}, {("ai.onnx", "Relu"): 2})


def test_one_list_of_view_ops() -> None:
    from graphmem.ort.cuda.rules import CUDA_SHARING
    from graphmem.ort.rules import ALIAS

    # the CPU aliases: the views, and OptionalGetElement (the value an optional holds, not a view)
    assert set(ALIAS.domain("")) == set(VIEW_OPS) | {"OptionalGetElement"}
    assert {op for (_, op), (alias, _) in CUDA_SHARING.items() if alias} == set(VIEW_OPS)
