#!/usr/bin/env python
"""Regenerate the CPU kernel table in graphmem/ort/kernels.py from onnxruntime itself.

    python scripts/make_kernel_table.py [--python /work/venvs/ortcpu/bin/python]

onnxruntime's pybind module lists every registered kernel definition
(``onnxruntime.capi._pybind_state.get_all_opkernel_def()``: op, domain, provider, since-version
range, type constraints) and every operator schema it knows (``get_all_operator_schema()``,
the ONNX ones and its contrib ones, every version). In onnxruntime-gpu the kernel listing
tries to create the CUDA provider and crashes where CUDA's libraries are missing, so the dump
runs in an interpreter with the plain CPU wheel of the same version (``python -m venv
/work/venvs/ortcpu && /work/venvs/ortcpu/bin/pip install onnxruntime==1.31.1``); the CPU
provider's registrations are the same source files in both wheels, which
``scripts/probe_kernels.py`` checks on the installed onnxruntime-gpu.

Only ``CPUExecutionProvider`` rows are kept. Registrations of one op and version range that
differ in a single constraint (one per element type, as the typed kernel macros make them) are
merged into one row: the union is exactly the set of type combinations some kernel accepts.
The generated block between the ``BEGIN GENERATED`` / ``END GENERATED`` markers is replaced;
``probed`` marks already in the file are kept for rows whose text is unchanged.
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
TARGET = REPO / "graphmem" / "ort" / "kernels.py"
BEGIN, END = "# BEGIN GENERATED", "# END GENERATED"

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


def generated_block(dump: dict, probed: dict[str, str]) -> str:
    by_key: dict[tuple, list[dict[str, frozenset[str]]]] = defaultdict(list)
    for k in dump["kernels"]:
        tc = {n: frozenset(short(t) for t in v) for n, v in k["tc"].items()}
        by_key[(k["domain"], k["op"], k["lo"], k["hi"])].append(tc)
    rows = sorted(((d, op, lo, hi, merge(regs)) for (d, op, lo, hi), regs in by_key.items()),
                  key=lambda r: (list(SOURCES).index(r[0]) if r[0] in SOURCES else 9, r[0], r[1].lower(), r[2]))
    names = groups(rows)
    out = [BEGIN + f" by scripts/make_kernel_table.py from onnxruntime {dump['version']} (CPU wheel); do not edit",
           "", "#: Type lists that many rows share.", "_GROUPS = {"]
    for types, name in sorted(names.items(), key=lambda kv: kv[1]):
        out.append(f'    "{name}": "{",".join(sorted(types, key=type_order))}",')
    out += ["}", "", "#: One kernel (or merged typed kernels) per line: OP FIRST-LAST CONSTRAINT=TYPES ... [probed|partly]",
            "#: (LAST empty: open-ended, the kernel claims only FIRST exactly). A [DOMAIN] line starts the",
            "#: rows registered in SOURCE.", '_ROWS = """']
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
    out += ['"""', "", "#: Formal inputs and outputs of every schema version of those ops: DOMAIN OP SINCE | INPUTS | OUTPUTS",
            "#: (each a type parameter, '-' for a fixed type; '?' optional, '*' variadic).", '_FORMALS = """']
    for s in sorted(dump["schemas"], key=lambda s: (s["domain"], s["op"].lower(), s["since"])):
        params = set(s["params"])

        def one(p: tuple[str, int]) -> str:
            name = p[0] if p[0] in params else "-"
            return name + {0: "", 1: "?", 2: "*"}[p[1]]

        ins = " ".join(one(p) for p in s["inputs"]) or "."
        outs = " ".join(one(p) for p in s["outputs"]) or "."
        out.append(f"{s['domain'] or 'ai.onnx'} {s['op']} {s['since']} | {ins} | {outs}")
    out += ['"""', END]
    return "\n".join(out)


def existing_marks(text: str) -> dict[str, str]:
    marks = {}
    for line in text.splitlines():
        for mark in ("probed", "partly"):
            if line.endswith(" " + mark):
                marks[line[: -len(mark) - 1]] = mark
    return marks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default="/work/venvs/ortcpu/bin/python",
                    help="an interpreter with the plain onnxruntime CPU wheel of the emulated version")
    args = ap.parse_args(argv)
    dump = json.loads(subprocess.run([args.python, "-c", _DUMP], check=True, capture_output=True, text=True).stdout)
    text = TARGET.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    block = generated_block(dump, existing_marks(text[start:end]))
    TARGET.write_text(text[:start] + block + text[end:])
    rows = block.split('_ROWS = """')[1].split('"""')[0].strip().splitlines()
    print(f"onnxruntime {dump['version']}: {len(dump['kernels'])} CPU kernel definitions -> "
          f"{sum(not r.startswith('[') for r in rows)} rows, {len(dump['schemas'])} schemas -> {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
