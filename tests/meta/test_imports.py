"""The package's import structure: no cycles between modules (imports inside functions and under
``TYPE_CHECKING`` count), the stages' boundaries, and few modules directly in ``graphmem/``."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[2] / "graphmem"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> nx.DiGraph:
    """Module → module it imports, for every ``import``/``from … import`` anywhere in a file.

    ``from graphmem.x import y`` counts as importing ``graphmem.x.y`` when that is a module, else
    ``graphmem.x``; importing a module also imports its packages' ``__init__``."""
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    g = nx.DiGraph()
    g.add_nodes_from(modules)
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target.startswith("graphmem") and target != name:
                    g.add_edge(name, target)
                    parent = target.rpartition(".")[0]
                    while parent.startswith("graphmem") and parent != name and not name.startswith(parent + "."):
                        g.add_edge(name, parent)
                        parent = parent.rpartition(".")[0]
    return g


def test_no_import_cycles() -> None:
    cycles = [c for c in nx.simple_cycles(import_graph()) if len(c) > 1]
    assert not cycles, "import cycles: " + "; ".join(" -> ".join([*c, c[0]]) for c in cycles[:10])


def test_few_modules_directly_in_the_package() -> None:
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(flat) <= 12, flat
