#!/usr/bin/env python
"""Regenerate the CPU kernel table graphmem/ort/kernels.py reads (graphmem/ort/data/) from onnxruntime itself.

    python scripts/make_kernel_table.py [--python .cache/venvs/ortcpu/bin/python]

Writes ``graphmem/ort/data/cpu_kernels.txt`` (the kernel rows) and ``cpu_formals.txt`` (the
formal parameters of their ops' schemas), the package data ``graphmem.ort.kernels`` loads the
first time a command asks about a kernel. Takes a few seconds.

onnxruntime's pybind module lists every registered kernel definition
(``onnxruntime.capi._pybind_state.get_all_opkernel_def()``: op, domain, provider, since-version
range, type constraints) and every operator schema it knows (``get_all_operator_schema()``,
the ONNX ones and its contrib ones, every version). In onnxruntime-gpu the kernel listing
tries to create the CUDA provider and crashes where CUDA's libraries are missing, so the dump
runs in an interpreter with the plain CPU wheel of the same version (``python -m venv
.cache/venvs/ortcpu && .cache/venvs/ortcpu/bin/pip install onnxruntime==1.31.1``); the CPU
provider's registrations are the same source files in both wheels, which
``scripts/probes/probe_kernels.py`` checks on the installed onnxruntime-gpu.

Only ``CPUExecutionProvider`` rows are kept. Registrations of one op and version range that
differ in a single constraint (one per element type, as the typed kernel macros make them) are
merged into one row: the union is exactly the set of type combinations some kernel accepts.
Both files are replaced; ``probed`` marks already in the kernels file are kept for rows whose
text is unchanged.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "graphmem" / "ort" / "data"
KERNELS, FORMALS = DATA / "cpu_kernels.txt", DATA / "cpu_formals.txt"

_DUMP = r"""
import json, onnxruntime as ort
import onnxruntime.capi._pybind_state as C
kernels = [dict(domain=k.domain, op=k.op_name, lo=k.version_range[0], hi=k.version_range[1],
                tc={n: list(v) for n, v in k.type_constraints.items()})
           for k in C.get_all_opkernel_def() if k.provider == "CPUExecutionProvider"]
ops = {(k["domain"], k["op"]) for k in kernels}
schemas = [dict(domain=s.domain, op=s.name, since=s.since_version,
                inputs=[(p.typeStr, int(p.option)) for p in s.inputs],
                outputs=[(p.typeStr, int(p.option)) for p in s.outputs],
                params=sorted(c.type_param_str for c in s.type_constraints))
           for s in C.get_all_operator_schema() if (s.domain, s.name) in ops]
print(json.dumps(dict(version=ort.__version__, kernels=kernels, schemas=schemas)))
"""

SOURCES = {
    "": "onnxruntime/core/providers/cpu/cpu_execution_provider.cc (RegisterOnnxOperatorKernels)",
    "ai.onnx.ml": "onnxruntime/core/providers/cpu/cpu_execution_provider.cc (RegisterOnnxMLOperatorKernels)",
    "com.microsoft": "onnxruntime/contrib_ops/cpu/cpu_contrib_kernels.cc (RegisterCpuContribKernels)",
    "com.microsoft.nchwc": "onnxruntime/contrib_ops/cpu/cpu_contrib_kernels.cc (RegisterNchwcKernels)",
}
INT_MAX = 2147483647


def short(t: str) -> str:
    """'tensor(float)' -> 'float', 'seq(tensor(int8))' -> 'seq(int8)'."""
    return re.sub(r"tensor\(([^()]*)\)", r"\1", t)


def merge(regs: list[dict[str, frozenset[str]]]) -> list[dict[str, frozenset[str]]]:
    """Union registrations that differ in exactly one constraint, until none do."""
    regs = [dict(r) for r in regs]
    changed = True
    while changed:
        changed = False
        for i in range(len(regs)):
            for j in range(i + 1, len(regs)):
                a, b = regs[i], regs[j]
                if a.keys() != b.keys():
                    continue
                diff = [k for k in a if a[k] != b[k]]
                if len(diff) <= 1:
                    for k in diff:
                        a[k] = a[k] | b[k]
                    del regs[j]
                    changed = True
                    break
            if changed:
                break
    return regs


def groups(rows: list[tuple]) -> dict[frozenset[str], str]:
    """Names ($A, $B, ...) for long type lists used more than once."""
    count: dict[frozenset[str], int] = defaultdict(int)
    for *_, regs in rows:
        for reg in regs:
            for types in reg.values():
                if len(types) >= 8:
                    count[types] += 1
    common = sorted((t for t, n in count.items() if n >= 2), key=lambda t: (-len(t), sorted(t)))
    return {t: f"${chr(ord('A') + i)}" for i, t in enumerate(common)}


def type_order(t: str) -> tuple:
    base = ["float", "double", "float16", "bfloat16", "int8", "uint8", "int16", "uint16", "int32", "uint32",
            "int64", "uint64", "bool", "string"]
    inner = t[4:-1] if t.startswith("seq(") else t[4:-1] if t.startswith("opt(") else t
    return (t.startswith("seq("), t.startswith("opt") or t.startswith("optional"),
            base.index(inner) if inner in base else len(base), inner)


def fmt_types(types: frozenset[str], names: dict[frozenset[str], str]) -> str:
    return names.get(types) or ",".join(sorted(types, key=type_order))


def kernels_text(dump: dict, probed: dict[str, str]) -> str:
    """The kernels file: the shared type lists, then the rows of each domain."""
    by_key: dict[tuple, list[dict[str, frozenset[str]]]] = defaultdict(list)
    for k in dump["kernels"]:
        tc = {n: frozenset(short(t) for t in v) for n, v in k["tc"].items()}
        by_key[(k["domain"], k["op"], k["lo"], k["hi"])].append(tc)
    rows = sorted(((d, op, lo, hi, merge(regs)) for (d, op, lo, hi), regs in by_key.items()),
                  key=lambda r: (list(SOURCES).index(r[0]) if r[0] in SOURCES else 9, r[0], r[1].lower(), r[2]))
    names = groups(rows)
    out = [
        f"# Every CPU kernel definition onnxruntime {dump['version']} registers (CPU wheel), written by",
        "# scripts/make_kernel_table.py; do not edit. Rows scripts/probes/probe_kernels.py --write confirmed",
        "# with one-node sessions end in 'probed' (every type of the row tried) or 'partly'.",
        "#",
        "# $NAME TYPES: a type list many rows share.",
        "# [DOMAIN] SOURCE: the rows registered in SOURCE follow.",
        "# OP FIRST-LAST CONSTRAINT=TYPES ... [probed|partly]: one kernel (or merged typed kernels);",
        "# LAST empty: open-ended, the kernel claims only FIRST exactly.",
    ]
    for types, name in sorted(names.items(), key=lambda kv: kv[1]):
        out.append(f"{name} {','.join(sorted(types, key=type_order))}")
    domain = None
    for d, op, lo, hi, regs in rows:
        if d != domain:
            domain = d
            out.append(f"[{d or 'ai.onnx'}] {SOURCES.get(d, '?')}")
        span = f"{lo}-" if hi == INT_MAX else f"{lo}-{hi}"
        for reg in regs:
            text = f"{op} {span} " + " ".join(f"{n}={fmt_types(t, names)}" for n, t in sorted(reg.items()))
            text = text.rstrip()
            mark = probed.get(text)
            out.append(f"{text} {mark}" if mark else text)
    return "\n".join(out) + "\n"


def formals_text(dump: dict) -> str:
    """The formals file: every schema version of the ops that have a CPU kernel."""
    out = [
        f"# The formal inputs and outputs of every schema version (onnxruntime {dump['version']}'s schemas) of",
        "# the ops of cpu_kernels.txt, written by scripts/make_kernel_table.py; do not edit.",
        "# DOMAIN OP SINCE | INPUTS | OUTPUTS: each a type parameter, '-' for a fixed type; '?' optional,",
        "# '*' variadic; '.' none.",
    ]
    for s in sorted(dump["schemas"], key=lambda s: (s["domain"], s["op"].lower(), s["since"])):
        params = set(s["params"])

        def one(p: tuple[str, int]) -> str:
            name = p[0] if p[0] in params else "-"
            return name + {0: "", 1: "?", 2: "*"}[p[1]]

        ins = " ".join(one(p) for p in s["inputs"]) or "."
        outs = " ".join(one(p) for p in s["outputs"]) or "."
        out.append(f"{s['domain'] or 'ai.onnx'} {s['op']} {s['since']} | {ins} | {outs}")
    return "\n".join(out) + "\n"


def existing_marks(text: str) -> dict[str, str]:
    marks = {}
    for line in text.splitlines():
        for mark in ("probed", "partly"):
            if line.endswith(" " + mark):
                marks[line[: -len(mark) - 1]] = mark
    return marks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=str(Path(__file__).resolve().parents[1] / ".cache" / "venvs" / "ortcpu" / "bin" / "python"),
                    help="an interpreter with the plain onnxruntime CPU wheel of the emulated version")
    args = ap.parse_args(argv)
    dump = json.loads(subprocess.run([args.python, "-c", _DUMP], check=True, capture_output=True, text=True).stdout)
    kernels = kernels_text(dump, existing_marks(KERNELS.read_text() if KERNELS.exists() else ""))
    DATA.mkdir(exist_ok=True)
    KERNELS.write_text(kernels)
    FORMALS.write_text(formals_text(dump))
    rows = [r for r in kernels.splitlines() if r and r[0] not in "#$["]
    print(f"onnxruntime {dump['version']}: {len(dump['kernels'])} CPU kernel definitions -> {len(rows)} rows "
          f"in {KERNELS.relative_to(REPO)}, {len(dump['schemas'])} schemas in {FORMALS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
