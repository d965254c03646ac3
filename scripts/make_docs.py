#!/usr/bin/env python
"""Regenerate every command output and accuracy figure that README.md and docs/pages show.

    python scripts/make_docs.py [--check] [--only ID ...] [--list]
    python scripts/make_docs.py accuracy NAME [--from OUTPUT.txt] [--commit SHA] [--date YYYY-MM-DD]
                                              [-- SCRIPT-ARGS ...]

**Command outputs** (the default): each entry of :data:`OUTPUTS` is one ``graphmem`` command on a
model of ``models/`` or of the onnx wheel's ``backend/test/data/light`` folder (shown as
``$LIGHT``), run as ``python -m graphmem`` with this tree first on ``PYTHONPATH``. Its text — the
command line, stdout (and stderr unless the entry says otherwise), and the exit status when it is
not 0 — is written to ``docs/pages/generated/<ID>.txt``, which the pages include with
``pymdownx.snippets`` (``--8<-- "generated/<ID>.txt"``), and into README.md between the markers
``<!-- generated:<ID> -->`` and ``<!-- /generated:<ID> -->``. ``--check`` writes nothing: it
prints what is stale and exits 1 (``tests/meta/test_docs.py`` runs it), so the outputs shown are
the ones today's code prints. After a change of behaviour, rerun this and commit the result.

**Accuracy figures**: ``accuracy NAME`` runs the script of :data:`ACCURACY` ``NAME`` with its
documented arguments (or reads its saved output, ``--from``), and writes
``docs/pages/generated/accuracy/<NAME>.md``: a headline, where and when it ran (commit, date,
onnxruntime version) and the script's summary lines. docs/pages/accuracy.md includes these files
and README.md's ``<!-- generated:accuracy -->`` block is made of their headlines, so a figure is
stated in one file only. A record whose script was not rerun for the docs (it needs a corpus or a
machine that was not at hand) quotes the last published figure once, naming the commit; running
``accuracy NAME`` replaces it. The accuracy scripts print what they measured; this only files it.

Outputs depend on the code and on the onnx/onnxruntime versions, and on no other host fact for
the commands listed here (verify with ``--resident-processes 0``: a process's resident growth
depends on glibc and the interpreter, and is not shown) (``--graph-opt none``, one intra-op thread): no entry uses ``--graph-opt
all`` (NCHWc block size; ``peak``'s table and ``fit`` offer the figures at onnxruntime's default
level only for this machine, not for the example host's profile, and say so), quantized kernels, GroupQueryAttention (L2 size) or mixed-precision
training (CPU flags). ``--as-dtype float16`` follows the x86-64 kernel table (another architecture
is told it is not exact). When the host becomes an input of its own, pin it here.
"""

from __future__ import annotations

import argparse
import datetime
import difflib
import os
import re
import shlex
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = ROOT / "docs" / "pages"
GENERATED = PAGES / "generated"
ACCURACY_DIR = GENERATED / "accuracy"
MARK = re.compile(r"<!-- generated:(?P<id>[\w.-]+) -->\n.*?<!-- /generated:(?P=id) -->", re.DOTALL)


# ---------------------------------------------------------------- command outputs


@dataclass(frozen=True, slots=True, kw_only=True)
class Output:
    """One command whose output the docs show.

    ``args`` are graphmem's arguments; ``{light}`` is the onnx wheel's light-model folder (shown
    as ``$LIGHT``) and ``{work}`` a temporary folder that ``prepare`` writes files into first
    (shown by their names). The command runs in the repository, or in that folder when
    ``in_work``. ``head``/``tail`` keep only that many first/last lines of a long output, with a
    line saying how many were left out.
    """

    id: str
    args: tuple[str, ...]
    stderr: bool = True
    prepare: Callable[[Path], None] | None = None
    in_work: bool = False
    head: int | None = None
    tail: int | None = None


def _light() -> Path:
    import onnx

    return Path(onnx.__file__).resolve().parent / "backend" / "test" / "data" / "light"


CHECK_CONFIG = """\
# graphmem.toml — paths and globs are relative to this file
max-total = "1GiB"               # defaults for every model
dims = { batch = 1 }             # applied to the models that have these dims

[[models]]
path = "models/tiny_bert.onnx"
dims = { batch = 8, seq = 128 }  # every one must exist in the model
max-peak = "4MiB"
max-params = "25M"

[[models]]
path = "models/tiny_c*.onnx"     # one entry per matching file
max-peak = "512MiB"
"""


def _check_project(work: Path) -> None:
    """A project folder for ``graphmem check``: the config above and the models it names."""
    (work / "models").mkdir()
    for name in ("tiny_bert.onnx", "tiny_cnn.onnx"):
        (work / "models" / name).write_bytes((ROOT / "models" / name).read_bytes())
    (work / "graphmem.toml").write_text(CHECK_CONFIG)


def _wide_mlp(work: Path) -> None:
    """``static_mlp_wide.onnx``: models/static_mlp.onnx with its hidden layer 1,024 wide (was 512)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(ROOT / "models" / "static_mlp.onnx"))
    rng = np.random.default_rng(0)
    wide = {"fc1.weight": (256, 1024), "fc1.bias": (1024,), "fc2.weight": (1024, 20)}
    for i, init in enumerate(model.graph.initializer):
        if init.name in wide:
            array = rng.standard_normal(wide[init.name]).astype(np.float32)
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(array, init.name))
    del model.graph.value_info[:]
    onnx.save(model, str(work / "static_mlp_wide.onnx"))


OUTPUTS: tuple[Output, ...] = (
    # README tour (also on the command pages)
    Output(id="peak-tiny-cnn", args=("peak", "models/tiny_cnn.onnx", "--dim", "batch=8")),
    Output(id="layers-tiny-cnn", args=("layers", "models/tiny_cnn.onnx", "--dim", "batch=8", "--sort", "flops", "--top", "5")),
    Output(id="verify-tiny-cnn", args=("verify", "models/tiny_cnn.onnx", "--dim", "batch=8", "--resident-processes", "0")),
    Output(id="fit-tiny-bert", args=("fit", "models/tiny_bert.onnx", "--memory", "64MiB", "--dim", "seq=128")),
    Output(id="fit-readme", args=("fit", "models/tiny_bert.onnx", "--memory", "64MiB", "--dim", "seq=128"), head=9),
    Output(id="train-tiny-cnn", args=("train", "models/train_cnn.onnx", "--dim", "batch=8")),
    # peak, layers, ops
    Output(id="peak-tiny-bert", args=("peak", "models/tiny_bert.onnx", "--dim", "batch=8", "--dim", "seq=128")),
    Output(id="peak-light-resnet50", args=("peak", "{light}/light_resnet50.onnx")),
    Output(id="peak-cuda-tiny-cnn", args=("peak", "models/tiny_cnn.onnx", "--dim", "batch=8", "--provider", "cuda")),
    Output(id="layers-tiny-bert-group", args=("layers", "models/tiny_bert.onnx", "--dim", "batch=8", "--dim", "seq=128", "--group", "2")),
    Output(id="ops-tiny-cnn", args=("ops", "models/tiny_cnn.onnx"), head=4, tail=19),
    # inputs
    Output(id="peak-unbound", args=("peak", "models/tiny_bert.onnx")),
    Output(id="peak-unresolved-cause", args=("peak", "models/tiny_bert.onnx", "--dim", "batch=1", "--dim", "seq=600")),
    Output(id="peak-refused-gpt2", args=("peak", "models/tiny_gpt2.onnx", "--dim", "batch=1", "--dim", "seq=200")),
    Output(id="peak-symbolic-gpt2", args=("peak", "models/tiny_gpt2.onnx", "--symbolic", "--dim", "batch=2")),
    Output(id="shape-fixed-dim", args=("peak", "models/tiny_cnn.onnx", "--shape", "input=2x3x32x32")),
    # verify
    Output(id="verify-tiny-bert", args=("verify", "models/tiny_bert.onnx", "--dim", "batch=8", "--dim", "seq=128",
                                        "--resident-processes", "0")),
    Output(id="verify-light-squeezenet", args=("verify", "{light}/light_squeezenet.onnx", "--resident-processes", "0")),
    # advise (README shows its head)
    Output(id="advise-readme", args=("advise", "models/tiny_cnn.onnx", "--dim", "batch=8", "--session-option",
                                     "intra_op_num_threads=1"), head=11),
    Output(id="advise-tiny-cnn", args=("advise", "models/tiny_cnn.onnx", "--dim", "batch=8", "--session-option",
                                       "intra_op_num_threads=1")),
    # sweep, fit, devices
    Output(id="sweep-tiny-bert", args=("sweep", "models/tiny_bert.onnx", "--dim", "batch=8", "--dim", "seq=16,32,64,128")),
    Output(id="fit-train-tiny-cnn", args=("fit", "models/train_cnn.onnx", "--memory", "64MiB", "--train")),
    Output(id="fit-gate-tiny-cnn", args=("fit", "models/tiny_cnn.onnx", "--device", "jetson-agx-orin-64gb", "--dim", "batch=64")),
    Output(id="devices", args=("devices",)),
    Output(id="peak-device-tiny-bert", args=("peak", "models/tiny_bert.onnx", "--dim", "batch=8", "--dim", "seq=128", "--device", "t4")),
    Output(id="peak-as-f16-tiny-cnn", args=("peak", "models/tiny_cnn.onnx", "--dim", "batch=8", "--as-dtype", "float16")),
    # check, diff, budgets
    Output(id="budget-tiny-cnn", args=("peak", "models/tiny_cnn.onnx", "--dim", "batch=8", "--max-peak", "2MiB", "--max-params", "25M")),
    # check's progress lines (stderr) carry timings: its verdicts are on stdout
    Output(id="check-project", args=("check", "--jobs", "1"), stderr=False, prepare=_check_project, in_work=True),
    Output(id="check-project-markdown", args=("check", "--jobs", "1", "--format", "markdown"), stderr=False,
           prepare=_check_project, in_work=True),
    Output(id="diff-wide-mlp", args=("diff", "models/static_mlp.onnx", "{work}/static_mlp_wide.onnx", "--max-increase-peak", "50%"),
           prepare=_wide_mlp),
    # train
    Output(id="train-bert-frozen", args=("train", "models/train_bert.onnx", "--dim", "batch=8", "--dim", "seq=64",
                                         "--optimizer", "sgd", "--grads", "persistent", "--frozen", "model.embeddings.*")),
    # JSON, exit codes
    Output(id="json-static-mlp", args=("peak", "models/static_mlp.onnx", "--json")),
    Output(id="error-missing", args=("peak", "models/missing.onnx")),
)


def _env() -> dict[str, str]:
    """The environment commands run in: this tree first on the path, no CI annotations, no colour."""
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GRAPHMEM_DEBUG", "FORCE_COLOR")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.update(NO_COLOR="1", TERM="dumb", COLUMNS="100", PYTHONIOENCODING="utf-8")
    # the outputs are for one example machine, whatever machine regenerates them (docs/pages/host.md)
    env["GRAPHMEM_HOST"] = str(ROOT / "docs" / "pages" / "example-host.json")
    return env


def _shown(arg: str) -> str:
    """An argument as the docs print it: ``$LIGHT/…`` for the light folder, files of ``{work}`` by name."""
    if arg.startswith("{light}/"):
        return "$LIGHT/" + shlex.quote(arg.removeprefix("{light}/"))
    return shlex.quote(arg.removeprefix("{work}/"))


def render(out: Output) -> str:
    """Run ``out`` and return its text as the docs show it."""
    light = _light()
    with tempfile.TemporaryDirectory(prefix="graphmem-docs-") as tmp:
        work = Path(tmp).resolve()
        if out.prepare is not None:
            out.prepare(work)
        cwd = work if out.in_work else ROOT
        args = [a.replace("{light}", str(light)).replace("{work}", str(work)) for a in out.args]
        done = subprocess.run([sys.executable, "-m", "graphmem", *args], cwd=cwd, env=_env(),
                              capture_output=True, text=True, timeout=600, check=False)
        text = done.stdout + (done.stderr if out.stderr else "")
        # where files are, as a reader's shell would name them: no machine-specific paths
        text = text.replace(str(work) + os.sep, "").replace(str(work), ".")
        text = text.replace(str(light), "$LIGHT").replace(str(ROOT) + os.sep, "")
    shown = " ".join(map(_shown, out.args))
    lines = [line.rstrip() for line in text.rstrip("\n").split("\n")]
    if out.head is not None or out.tail is not None:
        head, tail = out.head or 0, out.tail or 0
        if head + tail < len(lines):
            skipped = len(lines) - head - tail
            lines = lines[:head] + [f"[… {skipped} lines not shown …]"] + (lines[len(lines) - tail:] if tail else [])
    body = "\n".join(lines)
    status = f"\n[exit status {done.returncode}]" if done.returncode else ""
    return f"$ graphmem {shown}\n{body}{status}\n"


def file_texts() -> dict[str, str]:
    """Files the docs show beside the outputs (the check configuration)."""
    return {"check-config.toml.txt": CHECK_CONFIG}


def accuracy_block() -> str:
    """README's accuracy lines: the headline of every record in :data:`README_ACCURACY`."""
    lines = []
    for name in README_ACCURACY:
        record = read_record(name)
        item = f"- **{ACCURACY[name].label}**: {record['headline']} — {record['short']}"
        lines.append(textwrap.fill(item, width=100, subsequent_indent="  ", break_on_hyphens=False))
    return "\n".join(lines) + "\n"


def expected(only: list[str] | None = None) -> tuple[dict[Path, str], dict[str, str]]:
    """(generated file -> text, README block id -> inner text), regenerated now: every output, or
    those ``only`` names (ids as ``--list`` prints them; ``accuracy`` for README's accuracy list)."""
    unknown = set(only or ()) - {out.id for out in OUTPUTS} - {"accuracy"}
    if unknown:
        raise SystemExit(f"make_docs: no output named {', '.join(sorted(unknown))} (see --list)")
    chosen = [out for out in OUTPUTS if not only or out.id in only]
    readme_ids = set(readme_blocks(README.read_text()))
    # one interpreter per command, as a user runs them, several at once (each mostly waits on start-up)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool:
        texts = list(pool.map(render, chosen))
    files: dict[Path, str] = {}
    blocks: dict[str, str] = {}
    for out, text in zip(chosen, texts, strict=True):
        files[GENERATED / f"{out.id}.txt"] = text
        if out.id in readme_ids:
            blocks[out.id] = f"```text\n{text}```\n"
    if not only:
        files.update((GENERATED / name, text) for name, text in file_texts().items())
    if "accuracy" in readme_ids and (not only or "accuracy" in only):
        blocks["accuracy"] = accuracy_block()
    return files, blocks


def readme_blocks(text: str) -> list[str]:
    """The ids of the generated blocks in ``text`` (README.md), in order."""
    return [m.group("id") for m in MARK.finditer(text)]


def fill_readme(text: str, blocks: dict[str, str], *, every: bool = True) -> str:
    """README text with its generated blocks replaced by their regenerated text (``every``: each
    block must have one; else blocks not in ``blocks`` stay as they are)."""

    def sub(m: re.Match[str]) -> str:
        ident = m.group("id")
        if ident not in blocks:
            if every:
                raise SystemExit(f"make_docs: README names a generated block '{ident}' that no entry makes")
            return m.group(0)
        return f"<!-- generated:{ident} -->\n{blocks[ident]}<!-- /generated:{ident} -->"

    return MARK.sub(sub, text)


def stale(only: list[str] | None = None) -> list[str]:
    """Unified diffs of every generated file or README block that differs from today's output, and
    generated files no entry makes."""
    files, blocks = expected(only)
    problems: list[str] = []
    for path, text in files.items():
        old = path.read_text() if path.exists() else ""
        if old != text:
            problems.append(_diff(old, text, str(path.relative_to(ROOT))))
    readme = README.read_text()
    new = fill_readme(readme, blocks, every=not only)
    if new != readme:
        problems.append(_diff(readme, new, "README.md"))
    if not only:
        known = set(files) | {ACCURACY_DIR}
        problems += [f"{path.relative_to(ROOT)}: no entry of scripts/make_docs.py makes it (remove it)"
                     for path in sorted(GENERATED.glob("*")) if path not in known]
    return problems


def _diff(old: str, new: str, name: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"{name} (committed)",
                                        f"{name} (today's output)"))


def write(only: list[str] | None = None) -> None:
    files, blocks = expected(only)
    GENERATED.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    readme = README.read_text()
    new = fill_readme(readme, blocks, every=not only)
    if new != readme:
        README.write_text(new)
        print("wrote README.md (generated blocks)")


# ---------------------------------------------------------------- accuracy records


def _lines(text: str) -> list[str]:
    """The output's lines, without those of the shell's ``time`` when it was saved with them."""
    return [line.rstrip() for line in text.splitlines() if not line.startswith(("real\t", "user\t", "sys\t"))]


def last_line(text: str) -> str:
    return next(line.strip() for line in reversed(_lines(text)) if line.strip())


def tail(n: int) -> Callable[[str], str]:
    def keep(text: str) -> str:
        lines = _lines(text)
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(lines[-n:])

    return keep


def without_timings(text: str) -> str:
    """The whole output without its timing column (``0.73s``, headed ``analyze``) and ``time``'s
    lines: timings are noisy, and the figures filed are the measured bytes."""
    lines = [re.sub(r"\s+(\d+\.\d+s|analyze)$", "", line) for line in _lines(text)]
    return "\n".join(lines).strip("\n")


def _peak_table_headline(text: str) -> str:
    """'N of M measurements byte-exact' from a table whose rows end ``predicted measured ratio``."""
    rows = re.findall(r"^\S+\s+\S+\s+([\d,]+)\s+([\d,]+)\s+\d+\.\d{4}\b", text, re.MULTILINE)
    exact = sum(p == m for p, m in rows)
    worst = re.search(r"worst deviation ([\d.]+%)", text)
    return f"{exact} of {len(rows)} measurements byte-exact" + (f" (worst deviation {worst.group(1)})" if worst else "")


def _shape_headline(text: str) -> str:
    """shape_check.py: bindings compared and the tensors that disagree."""
    rows = re.findall(r"^\S+\s+\S+\s+(\d+)\s+(\d+)\s+(\d+)$", text, re.MULTILINE)
    tensors = sum(int(t) for t, _, _ in rows)
    bad = sum(int(m) + int(u) for _, m, u in rows)
    return f"{len(rows)} bindings, {tensors:,} tensors: {bad} mismatched or unresolved"


def _opt_headline(text: str) -> str:
    """accuracy_opt.py: requested and in-use (scratch) peaks, byte-exact counts."""
    rows = re.findall(r"^\S+\s+\S+\s+([\d,]+)\s+([\d,]+)\s+\d+\.\d{4}\s+([\d,]+)\s+([\d,]+)\s+\d+\.\d{4}", text, re.MULTILINE)
    req = sum(p == m for p, m, _, _ in rows)
    use = sum(p == m for _, _, p, m in rows)
    return f"{len(rows)} measurements: requested peak byte-exact on {req}, in-use (scratch) peak on {use}"


TAIL_12 = tail(12)


def from_line(prefix: str) -> Callable[[str], str]:
    """The output from its last line starting with ``prefix`` (a summary table's header) to the end."""

    def keep(text: str) -> str:
        lines = _lines(text)
        starts = [i for i, line in enumerate(lines) if line.startswith(prefix)]
        return "\n".join(lines[starts[-1] if starts else 0:]).strip("\n")

    return keep


def _function_headline(text: str) -> str:
    """function_check.py: its ``all`` row (cases, identical, …, not emulated)."""
    row = re.search(r"^all\s+" + r"\s+".join([r"(\d+)"] * 8) + r"\s*$", text, re.MULTILINE)
    if row is None:
        return last_line(text)
    cases, same, same_no_peak, different, unbuilt, *not_emulated = map(int, row.groups())
    return (f"{cases} cases: {same + same_no_peak} identical, {different} different, {unbuilt} onnxruntime "
            f"cannot build, {sum(not_emulated)} not emulated")


def _nodes_headline(text: str) -> str:
    """accuracy_nodes.py: its counts (a class it did not meet is not printed: 0)."""
    counts = {key: int(n.replace(",", "")) for n, key in re.findall(r"^\s*([\d,]+)  (\S.*)$", text, re.MULTILINE)}
    false = sum(n for key, n in counts.items() if "FALSE REFUSAL" in key)
    unloadable = counts.get("accepted by graphmem, onnxruntime cannot load it", 0)
    return (f"{counts.get('exact', 0):,} exact, {counts.get('off', 0)} off; {false} false refusals, "
            f"{unloadable} accepted that onnxruntime cannot load")


def _kernels_headline(text: str) -> str:
    """probe_kernels.py: probes, agreements, disagreements, rows confirmed."""
    probes = re.search(r"([\d,]+) probes in \d+ s: ([\d,]+) agree", text)
    rows = re.search(r"rows probed: (\d+), partly: \d+, of (\d+)", text)
    if probes is None or rows is None:
        return last_line(text)
    disagree = len(re.findall(r"^\s+DISAGREE", text, re.MULTILINE))
    return (f"{int(probes.group(1)):,} probes: {int(probes.group(2)):,} agree, {disagree} disagree; "
            f"{rows.group(1)} of {rows.group(2)} rows confirmed")


def _kernels_summary(text: str) -> str:
    """probe_kernels.py's closing lines, without the seconds it took."""
    return re.sub(r" in \d+ s:", ":", tail(6)(text))


def _coverage_headline(text: str) -> str:
    """op_coverage.py: ops at the opset, outcomes, and the two lists it checks are empty."""
    ops = re.search(r"at opset (\d+): (\d+) ops", text)
    outcomes = dict((k, int(v)) for k, v in re.findall(r"(counted|unsupported|zero) (\d+)", text))
    gaps = re.findall(r"^ops .*: (.*)$", text, re.MULTILINE)
    if ops is None or not outcomes:
        return last_line(text)
    complete = "nothing missing from the FLOP table or RUNS_AS_FUNCTION" if gaps and set(gaps) == {"none"} else "GAPS LISTED"
    return (f"{ops.group(2)} ops at opset {ops.group(1)}: {outcomes.get('counted', 0)} counted, "
            f"{outcomes.get('zero', 0)} zero, {outcomes.get('unsupported', 0)} unsupported; {complete}")


def _bench_peak_headline(text: str) -> str:
    """bench_peak.py: the start-up ratio and, on GPT-2 small, onnxsim's and onnx-tool's CPU time
    over graphmem's."""
    parts = []
    startup = re.search(r"import numpy': ([\d.]+x) by best CPU time", text)
    if startup:
        parts.append(f"start-up {startup.group(1)} python -c 'import numpy'")
    gpt2 = text.partition("gpt2_small.onnx")[2].partition("\n\n")[0]
    peers = []
    for tool in ("onnxsim plan", "onnx-tool"):
        row = re.search(rf"^  {tool}\s.*?([\d.]+x)\s+([\d.]+x)$", gpt2, re.MULTILINE)
        if row:
            peers.append(f"{tool} {row.group(2)}")
    if peers:
        parts.append(f"on GPT-2 small the peers take {', '.join(peers)} graphmem's CPU time")
    return "; ".join(parts) or last_line(text)


def _bench_scale_headline(text: str) -> str:
    """bench_scale.py: graphmem's CPU seconds and peak RSS on the largest graph of each family."""
    parts = []
    for family in re.findall(r"^(\w+) \(", text, re.MULTILINE):
        block = text.partition(f"{family} (")[2].partition("\n\n")[0]
        rows = re.findall(r"^\s+(\d+) graphmem\s+[\d.]+\s+([\d.]+)\s+([\d.]+)\s+(\d+) MiB", block, re.MULTILINE)
        if rows:
            nodes, cpu, per_node, rss = rows[-1]
            parts.append(f"{family} of {int(nodes):,} nodes: {cpu} s CPU, {per_node} us/node, {rss} MiB")
    return "; ".join(parts) or last_line(text)


def _llm_headline(text: str) -> str:
    """llm23_check.py: rows ``model dims predicted measured exact ops``."""
    rows = re.findall(r"^\S+\s+\S+\s+([\d,]+)\s+([\d,]+)\s+(yes|no)\b", text, re.MULTILINE)
    same = sum(p == m for p, m, _ in rows)
    called = sum(e == "yes" for _, _, e in rows)
    return f"{same} of {len(rows)} measurements byte-exact ({called} called exact by graphmem)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Accuracy:
    """An accuracy script: how make_docs runs it and what of its output it files."""

    label: str  # what it compares, in a few words (README's list)
    script: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    headline: Callable[[str], str] = last_line
    summary: Callable[[str], str] = TAIL_12


ACCURACY: dict[str, Accuracy] = {
    "accuracy": Accuracy(label="activation peak, graph-opt none (onnx's light models, models/, 4 exported nets)",
                         script="accuracy.py", headline=_peak_table_headline, summary=without_timings),
    "accuracy_pytorch_converted": Accuracy(label="the onnx wheel's converted PyTorch modules", script="accuracy.py",
                                           args=("--pytorch-converted",), headline=_peak_table_headline,
                                           summary=tail(3)),
    "shape_check": Accuracy(label="every intermediate's shape and dtype vs onnxruntime's run", script="shape_check.py",
                            headline=_shape_headline, summary=without_timings),
    "accuracy_opt_all": Accuracy(label="activation peak at --graph-opt all", script="accuracy_opt.py",
                                 args=("--level", "all"), headline=_opt_headline, summary=without_timings),
    "accuracy_opt_basic": Accuracy(label="activation peak at --graph-opt basic", script="accuracy_opt.py",
                                   args=("--level", "basic"), headline=_opt_headline, summary=without_timings),
    "accuracy_nodes": Accuracy(label="onnx's single-op node tests", script="accuracy_nodes.py",
                               headline=_nodes_headline, summary=without_timings),
    "accuracy_controlflow": Accuracy(label="models with If/Loop/Scan", script="accuracy_controlflow.py", summary=tail(8)),
    "accuracy_inputs": Accuracy(label="inputs as users have them (-1 dims, decoders with past, genai)",
                                script="accuracy_inputs.py", summary=tail(4)),
    "accuracy_types": Accuracy(label="float16 and quantized models", script="accuracy_types.py", summary=tail(6)),
    "realworld": Accuracy(label="real-world corpus (models we did not make)", script="realworld.py", summary=tail(16)),
    "train_check": Accuracy(label="training memory vs PyTorch steps", script="train_check.py", summary=tail(60)),
    "function_check": Accuracy(label="ops onnxruntime runs as function bodies", script="function_check.py",
                               headline=_function_headline, summary=from_line("op (runs as function)")),
    "probe_kernels": Accuracy(label="the CPU kernel table vs one-node sessions", script="probes/probe_kernels.py",
                              headline=_kernels_headline, summary=_kernels_summary),
    "probe_inplace": Accuracy(label="in-place unary kernels", script="probes/probe_inplace.py", summary=tail(4)),
    "op_coverage": Accuracy(label="FLOP rule for every default-domain op", script="op_coverage.py",
                            headline=_coverage_headline, summary=without_timings),
    "llm23_check": Accuracy(label="opset-23/24 decoders", script="llm23_check.py", headline=_llm_headline,
                            summary=from_line("model ")),
    "flops_report": Accuracy(label="FLOP/MAC counts vs run-time shapes and onnx-tool", script="flops_report.py",
                             summary=tail(30)),
    "sweep_demo": Accuracy(label="sweep/fit vs peak", script="sweep_demo.py", summary=without_timings),
    "bench_check": Accuracy(label="check --jobs 2 vs --jobs 1", script="bench_check.py", summary=tail(6)),
    "bench_peak": Accuracy(label="speed of graphmem peak vs onnxsim's planner, onnx-tool and onnx.load",
                           script="bench_peak.py", headline=_bench_peak_headline, summary=tail(80)),
    "bench_scale": Accuracy(label="graphmem peak's time and memory from 1k to 100k nodes, beside onnxsim's planner",
                            script="bench_scale.py", headline=_bench_scale_headline, summary=tail(30)),
}

#: The records README.md's accuracy block lists, in order.
README_ACCURACY = ("accuracy", "accuracy_opt_all", "accuracy_nodes", "accuracy_controlflow", "accuracy_types",
                   "realworld", "train_check")


def read_record(name: str) -> dict[str, str]:
    """The headline and source of ``generated/accuracy/NAME.md`` (from its header comments)."""
    path = ACCURACY_DIR / f"{name}.md"
    if not path.exists():
        raise SystemExit(f"make_docs: {path.relative_to(ROOT)} is missing: run python scripts/make_docs.py accuracy {name}")
    text = path.read_text()
    found = dict(re.findall(r"^<!-- (headline|short): (.*?) -->$", text, re.MULTILINE))
    for key in ("headline", "short"):
        if key not in found:
            raise SystemExit(f"make_docs: {path.relative_to(ROOT)} has no '<!-- {key}: … -->' line")
    return found


def _runtime_version() -> str:
    from importlib import metadata

    for dist in ("onnxruntime-gpu", "onnxruntime"):
        try:
            return f"{dist} {metadata.version(dist)}"
        except metadata.PackageNotFoundError:
            continue
    return "no onnxruntime"


def _commit(script: str) -> str:
    """HEAD, and whether the code that makes the figures (graphmem/, the script) differs from it."""
    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "graphmem", f"scripts/{script}", "scripts/corpus.py"],
                           cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()
    return sha + (" with uncommitted changes" if dirty else "")


def neutral_paths(text: str) -> str:
    """``text`` with the paths of this machine's checkout and corpora as a reader names them."""
    corpus = Path(os.environ.get("GRAPHMEM_CORPUS", ROOT / ".cache" / "corpus"))
    for path, shown in ((corpus.resolve(), ".cache/corpus"), (corpus, ".cache/corpus"), (_light(), "$LIGHT"),
                        (ROOT, ".")):
        text = text.replace(str(path) + os.sep, shown + "/").replace(str(path), shown)
    if os.environ.get("GRAPHMEM_REALWORLD"):
        text = text.replace(os.environ["GRAPHMEM_REALWORLD"], "$GRAPHMEM_REALWORLD")
    return text


def record_text(name: str, output: str, *, commit: str, date: str, args: tuple[str, ...]) -> str:
    """The record file of one accuracy run."""
    spec = ACCURACY[name]
    output = neutral_paths(output)
    command = " ".join(["python", f"scripts/{spec.script}", *map(shlex.quote, args)])
    headline = spec.headline(output)
    short = f"`{command}`, commit {commit.split()[0]}, {date}"
    return (
        f"<!-- generated by `python scripts/make_docs.py accuracy {name}`: do not edit -->\n"
        f"<!-- headline: {headline} -->\n<!-- short: {short} -->\n"
        f"**{headline}** — `{command}`, run at commit {commit} on {date} ({_runtime_version()}).\n\n"
        f"```text\n{spec.summary(output)}\n```\n"
    )


def run_accuracy(name: str, source: Path | None, extra: list[str], commit: str | None, date: str | None) -> None:
    spec = ACCURACY[name]
    args = tuple(extra) if extra else spec.args
    if source is not None:
        output = source.read_text()
    else:
        command = [sys.executable, str(ROOT / "scripts" / spec.script), *args]
        print("running", " ".join(command[1:]), flush=True)
        done = subprocess.run(command, cwd=ROOT, env={**os.environ, **spec.env}, capture_output=True, text=True,
                              check=False)
        output = done.stdout + done.stderr
        saved = Path(tempfile.gettempdir()) / f"graphmem-docs-{name}.txt"
        saved.write_text(output)
        print(f"{spec.script} exited {done.returncode}; its output is in {saved}")
    ACCURACY_DIR.mkdir(parents=True, exist_ok=True)
    path = ACCURACY_DIR / f"{name}.md"
    path.write_text(record_text(name, output, commit=commit or _commit(spec.script),
                                date=date or datetime.date.today().isoformat(), args=args))
    print(f"wrote {path.relative_to(ROOT)}; rerun python scripts/make_docs.py to refresh README.md")


# ---------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["accuracy"]:
        extra: list[str] = []
        if "--" in argv:
            extra = argv[argv.index("--") + 1:]
            argv = argv[:argv.index("--")]
        ap = argparse.ArgumentParser(prog="make_docs.py accuracy")
        ap.add_argument("name", choices=sorted(ACCURACY))
        ap.add_argument("--from", dest="source", type=Path, help="the script's saved output instead of running it")
        ap.add_argument("--commit", help="the commit the output came from (default: HEAD)")
        ap.add_argument("--date", help="the day it ran (default: today)")
        args = ap.parse_args(argv[1:])
        run_accuracy(args.name, args.source, extra, args.commit, args.date)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a generated text is stale")
    ap.add_argument("--only", nargs="+", metavar="ID", help="only these outputs (ids as --list prints them)")
    ap.add_argument("--list", action="store_true", help="list the outputs and accuracy records")
    args = ap.parse_args(argv)
    if args.list:
        for out in OUTPUTS:
            print(f"{out.id:<26} graphmem {' '.join(out.args)}")
        for name, spec in ACCURACY.items():
            print(f"accuracy {name:<17} python scripts/{spec.script} {' '.join(spec.args)}")
        return 0
    if args.check:
        problems = stale(args.only)
        for problem in problems:
            print(problem)
        if problems:
            print(f"\n{len(problems)} stale: run python scripts/make_docs.py and commit the result")
        return 1 if problems else 0
    write(args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
