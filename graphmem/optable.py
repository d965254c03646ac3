"""The one kind of per-op table: immutable, keyed by ``(domain, op_type)``, "" the default domain.

Every rule table of graphmem is an :class:`OpTable` — FLOP rules, what autograd saves, kernel
scratch, contrib-op shapes, onnxruntime's buffer-sharing and function-body tables, the CUDA
provider's kernels. A table is built once from its entries (a duplicate key is an error, nothing
is added later) and looked up with the domain normalised by :func:`normalize_domain`, the one
place where ``"ai.onnx"`` becomes ``""`` (:func:`domain_name` writes it back for output). Tables
of rules hold :class:`OpRule` values: the rule and the outcome it has for the op in general (what
coverage listings report). Families of entries come from :func:`domain_ops`,
:func:`domain_table` and :func:`with_outcome`; a set of ops is an ``OpTable[bool]`` of True
values, asked with ``op_key(node) in table``. Every module-level table is annotated with its
value type, which ``tests/meta/test_tables.py`` (it finds the tables itself) checks.

>>> t = OpTable({("", "Relu"): 1})
>>> t.lookup("ai.onnx", "Relu"), t.lookup("", "Gelu"), ("ai.onnx", "Relu") in t
(1, None, True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from graphmem.errors import InvariantError

__all__ = [
    "OpKey",
    "OpRule",
    "OpTable",
    "DEFAULT_DOMAIN",
    "DEFAULT_DOMAIN_NAME",
    "MS_DOMAIN",
    "NCHWC_DOMAIN",
    "KNOWN_DOMAINS",
    "VIEW_OPS",
    "normalize_domain",
    "domain_name",
    "normalize_opsets",
    "op_key",
    "is_default_domain",
    "domain_ops",
    "default_domain_ops",
    "domain_table",
    "with_outcome",
]

OpKey = tuple[str, str]
V = TypeVar("V")
R = TypeVar("R", bound=Callable[..., Any])

DEFAULT_DOMAIN = ""
#: How a file may spell the default domain, and how JSON output names it.
DEFAULT_DOMAIN_NAME = "ai.onnx"
MS_DOMAIN = "com.microsoft"
NCHWC_DOMAIN = "com.microsoft.nchwc"

#: The domains whose ops onnx or onnxruntime define, however a file spells the default one.
KNOWN_DOMAINS = frozenset(
    {DEFAULT_DOMAIN, DEFAULT_DOMAIN_NAME, "ai.onnx.ml", "ai.onnx.preview.training", MS_DOMAIN, NCHWC_DOMAIN}
)

#: The ONNX ops whose output is a view of their input 0 (same bytes, another shape): no buffer of
#: their own in onnxruntime (``KernelDefBuilder::Alias``) nor in PyTorch (views share storage).
VIEW_OPS: tuple[str, ...] = ("Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity")


def normalize_domain(domain: str) -> str:
    """``"ai.onnx"`` and ``""`` are the same (default) domain."""
    return DEFAULT_DOMAIN if domain == DEFAULT_DOMAIN_NAME else domain


def domain_name(domain: str) -> str:
    """The domain as output names it: ``"ai.onnx"`` for the default one, however it was spelled."""
    return normalize_domain(domain) or DEFAULT_DOMAIN_NAME


def normalize_opsets(opsets: Mapping[str, int]) -> dict[str, int]:
    """``opsets`` (domain -> version, as a file lists them) with the default domain's version
    also under ``""`` when the file spells it ``"ai.onnx"`` only; an explicit ``""`` wins."""
    out = dict(opsets)
    if DEFAULT_DOMAIN_NAME in out and DEFAULT_DOMAIN not in out:
        out[DEFAULT_DOMAIN] = out[DEFAULT_DOMAIN_NAME]
    return out


def is_default_domain(domain: str) -> bool:
    """True for the default ONNX domain, however the file spells it."""
    return normalize_domain(domain) == DEFAULT_DOMAIN


def op_key(node: Any) -> OpKey:
    """``(domain, op_type)`` of a node (an ``onnx.NodeProto`` or anything with those fields)."""
    return normalize_domain(node.domain), node.op_type


def domain_ops(domain: str, ops: Iterable[str], value: V) -> dict[OpKey, V]:
    """``{(domain, op): value for op in ops}``: a family of ops of one domain sharing a value."""
    return {(normalize_domain(domain), op): value for op in ops}


def default_domain_ops(ops: Iterable[str], value: V) -> dict[OpKey, V]:
    """``{("", op): value for op in ops}``: the usual way to list a family of default-domain ops."""
    return domain_ops(DEFAULT_DOMAIN, ops, value)


def domain_table(domain: str, entries: Mapping[str, V]) -> dict[OpKey, V]:
    """``{(domain, op): value for op, value in entries.items()}``: one domain's entries by op type."""
    d = normalize_domain(domain)
    return {(d, op): value for op, value in entries.items()}


@dataclass(frozen=True, slots=True, kw_only=True)
class OpRule(Generic[R]):
    """A rule and the outcome it has for the op in general (e.g. "counted", "zero", "none")."""

    rule: R
    outcome: str


def with_outcome(outcome: str, rules: Mapping[OpKey, R]) -> dict[OpKey, OpRule[R]]:
    """The entries of a family of rules that share an outcome."""
    return {key: OpRule(rule=fn, outcome=outcome) for key, fn in rules.items()}


class OpTable(Mapping[OpKey, V]):
    """An immutable mapping ``(domain, op_type) -> V`` with domain-normalised lookups."""

    __slots__ = ("_entries",)

    def __init__(self, *parts: Mapping[OpKey, V] | Iterable[tuple[OpKey, V]]) -> None:
        entries: dict[OpKey, V] = {}
        for part in parts:
            for (domain, op), value in (part.items() if isinstance(part, Mapping) else part):
                key = (normalize_domain(domain), op)
                if key in entries:
                    raise InvariantError(f"op table: {key} is given twice")
                entries[key] = value
        self._entries: Mapping[OpKey, V] = MappingProxyType(entries)

    def __getitem__(self, key: OpKey) -> V:
        return self._entries[(normalize_domain(key[0]), key[1])]

    def __iter__(self) -> Iterator[OpKey]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        return (normalize_domain(key[0]), key[1]) in self._entries

    def lookup(self, domain: str, op_type: str, default: Any = None) -> Any:
        """The entry of ``(domain, op_type)``, or ``default``."""
        return self._entries.get((normalize_domain(domain), op_type), default)

    def of(self, node: Any, default: Any = None) -> Any:
        """The entry of a node (see :func:`op_key`), or ``default``."""
        return self._entries.get(op_key(node), default)

    def domain(self, domain: str) -> dict[str, V]:
        """The entries of one domain, by op type."""
        d = normalize_domain(domain)
        return {op: v for (dom, op), v in self._entries.items() if dom == d}

    def __repr__(self) -> str:
        return f"OpTable({len(self)} ops)"
