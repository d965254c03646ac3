"""The package's import structure: the stages import one way only (a declared layer order, checked
on every import, module-level, inside functions and under ``TYPE_CHECKING``), no cycles between
modules, and few modules directly in ``graphmem/``."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "graphmem"

#: The stages in the pipeline's direction, written once. A module may import modules of its own
#: layer and of the layers before it, never of a later one:
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "units", "optable", "schema", "host", "tempdirs"),  # errors, units, op tables, schemas, host, private dirs
    ("planner",),  # buffers with sizes and lifetimes -> offsets and bounds; knows no ONNX
    ("model",),  # loading and validating a file, the op graph, types, the program a planner plans
    ("shapes",),  # shape and value inference; a runtime's contrib-op rules are given by the caller
    ("ort",),  # onnxruntime's rules: loadability, function bodies, Casts, order, allocation, scratch, sessions
    ("flops",),  # FLOP rules per op
    ("analysis",),  # the stages wired, the Analysis and its peak document
    ("training",),  # the training estimate, from an analysis
    ("gate",),  # budgets, check configurations and diffs, on peak documents
    ("views",),  # tables, charts, pages, devices: what is drawn from an analysis
    ("batch",),  # many analyses: sweeps, fits, the report page with a sweep
    ("verify",),  # a prediction against a real onnxruntime session
    ("cli", "__main__", ""),  # the command line and the package's own API ("": graphmem/__init__.py)
)


def _module(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = PACKAGE) -> nx.DiGraph:
    """Module → module it imports, for every ``import``/``from … import`` anywhere in a file.

    ``from graphmem.x import y`` counts as importing ``graphmem.x.y`` when that is a module, else
    ``graphmem.x``; importing a module also imports its packages' ``__init__``."""
    top = root.name
    modules = {_module(p, root): p for p in root.rglob("*.py")}
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
                if target.startswith(top) and target != name:
                    g.add_edge(name, target)
                    parent = target.rpartition(".")[0]
                    while parent.startswith(top) and parent != name and not name.startswith(parent + "."):
                        g.add_edge(name, parent)
                        parent = parent.rpartition(".")[0]
    return g


def layer_of(module: str, layers: Sequence[Sequence[str]] = LAYERS) -> int:
    """The index of ``module``'s layer (by its first package below the top one)."""
    parts = module.split(".")
    stage = parts[1] if len(parts) > 1 else ""
    for k, names in enumerate(layers):
        if stage in names:
            return k
    raise AssertionError(f"{module}: its package '{stage}' is in no layer of LAYERS")


def backward_imports(edges: Iterable[tuple[str, str]], layers: Sequence[Sequence[str]] = LAYERS) -> list[str]:
    """Every import of a later layer by an earlier one, as ``importer -> imported``."""
    return sorted(f"{a} -> {b}" for a, b in edges if layer_of(b, layers) > layer_of(a, layers))


def test_layers_form_a_dag_over_every_package() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    packages |= {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    declared = [name for layer in LAYERS for name in layer]
    assert len(declared) == len(set(declared))
    assert packages <= set(declared), sorted(packages - set(declared))
    order = nx.DiGraph((a, b) for lo, hi in zip(LAYERS, LAYERS[1:]) for a in lo for b in hi)
    assert nx.is_directed_acyclic_graph(order)


def test_no_import_runs_against_the_stage_order() -> None:
    backward = backward_imports(import_graph().edges)
    assert not backward, "imports against the stage order (LAYERS): " + "; ".join(backward)


def test_the_check_catches_a_backward_import() -> None:
    edges = [("graphmem.analysis.pipeline", "graphmem.ort.allocation"), ("graphmem.planner.check", "graphmem.ort.allocation")]
    assert backward_imports(edges) == ["graphmem.planner.check -> graphmem.ort.allocation"]
    with pytest.raises(AssertionError, match="in no layer"):
        backward_imports([("graphmem.nowhere.x", "graphmem.errors")])


def test_the_check_reads_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    # a package laid out like graphmem whose lower stage imports a higher one three ways
    root = tmp_path / "graphmem"
    for folder in ("planner", "ort"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "ort" / "allocation.py").write_text("X = 1\n")
    (root / "planner" / "lazy.py").write_text("def f():\n    from graphmem.ort.allocation import X\n    return X\n")
    (root / "planner" / "typed.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from graphmem.ort import allocation\n"
    )
    (root / "planner" / "relative.py").write_text("from ..ort import allocation\n")
    (root / "ort" / "fine.py").write_text("from graphmem.planner import lazy\n")
    backward = backward_imports(import_graph(root).edges)
    assert backward == [
        "graphmem.planner.lazy -> graphmem.ort", "graphmem.planner.lazy -> graphmem.ort.allocation",
        "graphmem.planner.relative -> graphmem.ort", "graphmem.planner.relative -> graphmem.ort.allocation",
        "graphmem.planner.typed -> graphmem.ort", "graphmem.planner.typed -> graphmem.ort.allocation",
    ]


def test_no_import_cycles() -> None:
    cycles = [c for c in nx.simple_cycles(import_graph()) if len(c) > 1]
    assert not cycles, "import cycles: " + "; ".join(" -> ".join([*c, c[0]]) for c in cycles[:10])


def test_few_modules_directly_in_the_package() -> None:
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(flat) <= 12, flat
