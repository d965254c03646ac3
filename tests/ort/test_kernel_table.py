"""The CPU kernel table is package data (graphmem/ort/data/, written by scripts/make_kernel_table.py):
every line parses, the parse keeps every row, and nothing reads it until a kernel is asked about."""

from __future__ import annotations

import re
import subprocess
import sys

from builders import ROOT
from onnx import TensorProto

from graphmem.optable import KNOWN_DOMAINS
from graphmem.ort import kernels

DATA = ROOT / "graphmem" / "ort"
_TYPE_NAMES = {name.lower() for name in TensorProto.DataType.keys()}
_SPAN = re.compile(r"[0-9]+-([0-9]+)?")


def _element(t: str) -> bool:
    """'float', 'seq(int8)', 'optional(seq(float))', 'map(int64,float)', 'sparse_float': a type the
    table may name."""
    t = t.removeprefix("sparse_")
    while t.startswith(("seq(", "optional(")) and t.endswith(")"):
        t = t[t.index("(") + 1 : -1]
    if t.startswith("map(") and t.endswith(")"):
        return all(_element(k) for k in t[4:-1].split(","))
    return t in _TYPE_NAMES


def _type_list(listed: str) -> list[str]:
    """'float,map(int64,float)' -> ['float', 'map(int64,float)'] (commas inside parentheses kept)."""
    return re.findall(r"(?:[^,(]|\([^)]*\))+", listed)


def test_every_line_of_the_kernels_file_parses() -> None:
    groups: set[str] = set()
    rows = 0
    domain = None
    for line in kernels.data_lines(kernels.KERNELS_FILE):
        if line.startswith("$"):
            name, types = line.split(" ")
            assert all(_element(t) for t in _type_list(types)), line
            groups.add(name)
        elif line.startswith("["):
            head, source = line.split(" ", 1)
            domain = head[1:-1]
            assert domain in KNOWN_DOMAINS and source.startswith("onnxruntime/"), line
        else:
            assert domain is not None, f"a row before any [domain] line: {line}"
            fields = line.split()
            if fields[-1] in ("probed", "partly"):
                fields.pop()
            op, span, *constraints = fields
            assert op.isidentifier() and _SPAN.fullmatch(span), line
            for c in constraints:
                name, _, listed = c.partition("=")
                assert name and (listed in groups or all(_element(t) for t in _type_list(listed))), line
            rows += 1
    assert len(groups) >= 20 and rows >= 600  # onnxruntime 1.31.1: 26 shared lists, 665 rows
    assert sum(len(r) for r in kernels._table()[0].values()) == rows


def test_every_line_of_the_formals_file_parses() -> None:
    lines = list(kernels.data_lines(kernels.FORMALS_FILE))
    for line in lines:
        head, ins, outs = line.split(" | ")
        domain, op, since = head.split()
        assert domain in KNOWN_DOMAINS and op.isidentifier() and int(since) >= 1, line
        for p in (ins + " " + outs).split():
            assert p == "." or re.fullmatch(r"(-|[A-Za-z][A-Za-z0-9_]*)[?*]?", p), line
    assert sum(len(v) for v in kernels._table()[1].values()) == len(lines) >= 700  # 709 schema versions


def test_rows_and_their_schemas_agree() -> None:
    rows, _ = kernels._table()
    # every kernel's first version has a schema (the formals its type constraints bind to)
    assert all(kernels.formals(r.domain, r.op, r.first) is not None for rs in rows.values() for r in rs)
    (relu,) = [r for r in rows[("", "Relu")] if r.first == 14]
    # Relu 14- T=float,double,int8,int32,float16?: as the file lists it, with the table's probe mark
    assert relu.last is None and relu.probed == "probed" and TensorProto.FLOAT in relu.types["T"]
    f = kernels.formals("ai.onnx", "Resize", 13)  # Resize 13 | T1 T2? -? -? | T1
    assert f is not None and f.inputs == (("T1", ""), ("T2", "?"), (None, "?"), (None, "?"))
    assert f.outputs == (("T1", ""),)


def test_the_table_is_read_only_when_a_kernel_is_asked() -> None:
    code = (
        "import graphmem, graphmem.cli\n"
        "from graphmem.ort import insert_cast, kernels\n"
        "assert kernels._split.cache_info().currsize == 0, 'read at import'\n"
        "kernels.has_cpu_kernel('', 'Relu', 14, [1])\n"
        "assert kernels._split.cache_info().currsize == 1\n"
        "assert kernels._rows.cache_info().currsize == 1, 'only the rows of the op asked about are parsed'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_data_files_are_package_data() -> None:
    import tomllib
    from fnmatch import fnmatch

    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for path in sorted((ROOT / "graphmem").rglob("*")):
        if path.is_dir() or path.suffix in (".py", ".pyc"):
            continue
        rel = path.relative_to(ROOT)
        covered = any(
            fnmatch(str(rel.relative_to(package.replace(".", "/"))), pattern)
            for package, patterns in package_data.items()
            if rel.is_relative_to(package.replace(".", "/"))
            for pattern in patterns
        )
        assert covered, f"{rel} is not listed in [tool.setuptools.package-data]: a wheel would leave it out"
