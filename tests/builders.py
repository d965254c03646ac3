"""Shared test builders: paths of the committed and third-party models, tiny inline ONNX
graphs (onnx.helper), planner programs written by name, and CLI invocation helpers.

Test files import from here (``from builders import model, tensor``); fixtures built on these
live in ``conftest.py``. No test file imports another test file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from typer.testing import CliRunner, Result

from graphmem.host import HostProfile
from graphmem.planner.program import Key, Program, Step, Value

# --- paths ------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
LIGHT = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"
CNN = MODELS / "tiny_cnn.onnx"
BERT = MODELS / "tiny_bert.onnx"
TRAIN_CNN = MODELS / "train_cnn.onnx"
COMMITTED_MODELS = sorted(MODELS.glob("*.onnx"))

#: The IR version of every model the tests make. onnx 1.23's ``helper.make_model`` writes its own
#: newest IR (14), which onnxruntime 1.31 refuses to load (core/graph/model.cc: "max supported IR
#: version: 13"), and so does graphmem (graphmem/ort/loadable.py); 8 is the IR of opsets 17 and 18.
IR_VERSION = 8

# --- the host every test predicts for ---------------------------------------------------------

#: The machine the tests' expected figures were derived on, pinned so that no test depends on the
#: machine running it (tests/conftest.py makes graphmem's machine readers raise and points
#: $GRAPHMEM_HOST at this profile). Deduced from the tests and the code: an x86-64 Sapphire Rapids
#: guest with AVX-512, AVX512-BF16/FP16 and AMX (tests/training/test_halfconv.py's kernels), a
#: 2 MiB L2 per core (its brgemm blocking: "0.8 x 1572864" = 0.8 x 3/4 x 2 MiB; tests/ort/
#: test_gqa_scratch.py's sysconf L2), two physical cores and PyTorch's default of two threads
#: (test_halfconv's OMP_NUM_THREADS=2, _physical_cores 2; test_training's default thread count).
#: L1d and L3 are that CPU's (no rule reads them); the flags are a Sapphire Rapids guest's.
PINNED_HOST = HostProfile(
    machine="x86_64",
    cpu_model="Intel(R) Xeon(R) (Sapphire Rapids; graphmem's test host)",
    cpu_flags=frozenset("""
        fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss
        ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid
        tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt
        tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch ssbd ibrs ibpb
        stibp ibrs_enhanced fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx
        smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves
        avx_vnni avx512_bf16 wbnoinvd arat avx512vbmi umip pku ospke waitpkg avx512_vbmi2 gfni vaes
        vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid cldemote movdiri movdir64b md_clear
        serialize tsxldtrk amx_bf16 avx512_fp16 amx_tile amx_int8 flush_l1d arch_capabilities
    """.split()),
    physical_cores=2,
    logical_cpus=2,
    l1d_bytes=48 * 1024,
    l2_bytes=2 * 1024 * 1024,
    l2_per_core_bytes=2 * 1024 * 1024,
    l3_bytes=105 * 1024 * 1024,
    page_size=4096,
    ort_intra_op_threads=2,
    torch_threads=2,
)

#: An AVX2 machine without AVX-512 (no bf16/f16 oneDNN kernels, MLAS's AVX2 dispatch) with a
#: 1 MiB L2: :data:`PINNED_HOST`'s other side in the tests that compare two hosts.
AVX2_HOST = HostProfile(
    machine="x86_64",
    cpu_model="an AVX2 machine (graphmem's second test host)",
    cpu_flags=frozenset(f for f in PINNED_HOST.cpu_flags if not f.startswith(("avx512", "amx", "avx_vnni"))),
    physical_cores=2,
    logical_cpus=4,
    l1d_bytes=32 * 1024,
    l2_bytes=1024 * 1024,
    l2_per_core_bytes=1024 * 1024,
    l3_bytes=32 * 1024 * 1024,
    page_size=4096,
    ort_intra_op_threads=2,
    torch_threads=2,
)

# --- tiny inline graphs -----------------------------------------------------------------------


def model(nodes, inputs, outputs, initializers=(), opset=17, value_info=(), checked=False):  # type: ignore[no-untyped-def]
    """A one-graph model at ``opset`` (IR 8); ``checked``: run onnx's checker on it."""
    graph = helper.make_graph(
        list(nodes), "g", list(inputs), list(outputs), list(initializers), value_info=list(value_info)
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = IR_VERSION
    if checked:
        onnx.checker.check_model(m)
    return m


def tensor(name: str, shape, dtype=TensorProto.FLOAT):  # type: ignore[no-untyped-def]
    return helper.make_tensor_value_info(name, dtype, shape)


def init(name: str, array) -> onnx.TensorProto:  # type: ignore[no-untyped-def]
    return numpy_helper.from_array(np.asarray(array), name)


def save(m: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(m.SerializeToString())
    return path


LAYERS, HIDDEN, HEADS = 2, 32, 4
HEAD_DIM = HIDDEN // HEADS


def if_model(path: Path, x: Sequence[int] = (4, 100)) -> Path:
    """pre = Relu(x); y = If(c): then Neg(Neg(x0)), else Abs(x0); post = Relu(y), written to ``path``."""
    shape = list(x)
    then = helper.make_graph([helper.make_node("Neg", ["x0"], ["a"], name="t_neg"),
                              helper.make_node("Neg", ["a"], ["yt"], name="t_neg2")], "then", [], [tensor("yt", shape)])
    other = helper.make_graph([helper.make_node("Abs", ["x0"], ["ye"], name="e_abs")], "else", [], [tensor("ye", shape)])
    nodes = [helper.make_node("Relu", ["x"], ["x0"], name="pre"),
             helper.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=other),
             helper.make_node("Relu", ["y"], ["out"], name="post")]
    return save(model(nodes, [tensor("x", shape), tensor("c", [], TensorProto.BOOL)], [tensor("out", shape)]), path)


def tiny_decoder() -> onnx.ModelProto:
    """One decode step of a 2-layer attention decoder: x [batch, 1, 32] and, per layer,
    past_key_values.{i}.key/value [batch, 4, seq, 8] → present.{i}.key/value [batch, 4, seq+1, 8]
    (Concat of the past with the new token's K/V on axis 2)."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(np.array([0, 1, HEADS, HEAD_DIM], np.int64), "split_shape"),
        numpy_helper.from_array(np.array([0, 1, HIDDEN], np.int64), "merge_shape"),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, HIDDEN])]
    outputs = []
    nodes = []
    h = "x"
    for i in range(LAYERS):
        for w in "qkvo":
            w_init = rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32)
            inits.append(numpy_helper.from_array(w_init, f"w{w}{i}"))
        for kv in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(
                f"past_key_values.{i}.{kv}", TensorProto.FLOAT, ["batch", HEADS, "seq", HEAD_DIM]))
            outputs.append(helper.make_tensor_value_info(
                f"present.{i}.{kv}", TensorProto.FLOAT, ["batch", HEADS, "total", HEAD_DIM]))
        for w in "qkv":
            nodes += [
                helper.make_node("MatMul", [h, f"w{w}{i}"], [f"{w}{i}"]),
                helper.make_node("Reshape", [f"{w}{i}", "split_shape"], [f"{w}{i}_r"]),
                helper.make_node("Transpose", [f"{w}{i}_r"], [f"{w}{i}_t"], perm=[0, 2, 1, 3]),
            ]
        nodes += [
            helper.make_node("Concat", [f"past_key_values.{i}.key", f"k{i}_t"],
                             [f"present.{i}.key"], axis=2),
            helper.make_node("Concat", [f"past_key_values.{i}.value", f"v{i}_t"],
                             [f"present.{i}.value"], axis=2),
            helper.make_node("Transpose", [f"present.{i}.key"], [f"kT{i}"], perm=[0, 1, 3, 2]),
            helper.make_node("MatMul", [f"q{i}_t", f"kT{i}"], [f"s{i}"]),
            helper.make_node("Softmax", [f"s{i}"], [f"p{i}"], axis=-1),
            helper.make_node("MatMul", [f"p{i}", f"present.{i}.value"], [f"c{i}"]),
            helper.make_node("Transpose", [f"c{i}"], [f"c{i}_t"], perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", [f"c{i}_t", "merge_shape"], [f"c{i}_m"]),
            helper.make_node("MatMul", [f"c{i}_m", f"wo{i}"], [f"o{i}"]),
            helper.make_node("Add", [h, f"o{i}"], [f"h{i}"]),
        ]
        h = f"h{i}"
    outputs.insert(0, helper.make_tensor_value_info(h, TensorProto.FLOAT, ["batch", 1, HIDDEN]))
    graph = helper.make_graph(nodes, "tiny_decoder", inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = IR_VERSION
    onnx.checker.check_model(m)
    return m


MLP_WIDTH = 256


def mlp_model(width: int = MLP_WIDTH) -> onnx.ModelProto:
    """x [batch, width] → MatMul → Relu → MatMul: two 256 KiB weights. With Adam the optimizer
    step (weights, 2x state, gradients, 2x the largest weight of temporaries) sets the step peak
    up to batch ≈ 256, the backward pass above."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((width, width)).astype(np.float32),
                                     f"w{i}") for i in range(2)]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w1"], ["y"])]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)


def gemm_mlp(path: Path, hidden: int) -> Path:
    """x [batch, 16] → Gemm fc1 (16 x hidden) → Relu → Gemm fc2 (hidden x 8), saved at ``path``."""
    rng = np.random.default_rng(0)
    shapes = {"fc1.weight": (16, hidden), "fc1.bias": (hidden,), "fc2.weight": (hidden, 8), "fc2.bias": (8,)}
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n) for n, s in shapes.items()]
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["a"], name="relu"),
        helper.make_node("Gemm", ["a", "fc2.weight", "fc2.bias"], ["y"], name="fc2"),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path

# --- planner programs by name -----------------------------------------------------------------

A: Key = (32, (2, 3))  # 24 bytes
B: Key = (32, (6,))  # 24 bytes, another rank: what a Reshape of an A makes
T1: Key = (8, (1,))  # 1 byte
T2: Key = (8, (2,))  # 2 bytes
T3: Key = (8, (3,))  # 3 bytes
T5: Key = (8, (5,))  # 5 bytes


def val(
    name: str, size: int | None, key: Key = None, *, source: bool = False, output: bool = False
) -> Value:
    return Value(name=name, size=size, key=key, source=source, output=output)


def src(name: str = "in", size: int | None = 24, key: Key = A) -> Value:
    return val(name, size, key, source=True)


def step(
    label: str,
    inputs: str,
    outputs: str,
    *,
    alias: Sequence[tuple[int, int]] = (),
    inplace: Sequence[tuple[int, int]] = (),
) -> tuple[str, str, str, tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """A step by value names: ``step("relu", "x", "y", inplace=[(0, 0)])``."""
    return (label, inputs, outputs, tuple(alias), tuple(inplace))


def program(values: Sequence[Value], *steps: tuple) -> Program:  # type: ignore[type-arg]
    index = {v.name: i for i, v in enumerate(values)}
    return Program(
        values=tuple(values),
        steps=tuple(
            Step(
                label=label,
                inputs=tuple(index[n] for n in ins.split()),
                outputs=tuple(index[n] for n in outs.split()),
                alias=alias,
                inplace=inplace,
            )
            for label, ins, outs, alias, inplace in steps
        ),
    )


# --- the command line -------------------------------------------------------------------------


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    """``graphmem ARGS`` in this process (typer's CliRunner), outside GitHub Actions."""
    from graphmem.cli import app

    return CliRunner().invoke(app, list(args), env={"GITHUB_ACTIONS": "", **(env or {})})


def outcome(*args: str) -> tuple[int, str, str]:
    """:func:`invoke` as (exit code, stdout, stderr)."""
    result = invoke(*args)
    return result.exit_code, result.stdout, result.stderr


def run_graphmem(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m graphmem ARGS`` in a fresh process (what a user's shell runs), outside GitHub
    Actions."""
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    return subprocess.run([sys.executable, "-m", "graphmem", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=env, timeout=timeout)


def ort_loads(path: Path) -> bool:
    """Whether a real onnxruntime session (CPU, ORT_DISABLE_ALL) loads ``path``."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001  (onnxruntime raises its own Fail/InvalidGraph types)
        return False
    return True


# --- the arena a real session holds -----------------------------------------------------------

_ARENA_HELD = """
import json, sys, tempfile
from pathlib import Path
import numpy as np, onnxruntime as ort
spec = json.loads(sys.argv[1])
with np.load(spec["feeds"]) as saved:
    feeds = {k: saved[k] for k in saved.files}
if spec["arena_cfg"]:
    info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
    ort.create_and_register_allocator(info, ort.OrtArenaCfg(spec["arena_cfg"]))
so = ort.SessionOptions()
so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, spec["level"])
so.intra_op_num_threads = spec["threads"]
so.enable_mem_pattern = spec["pattern"]
so.enable_profiling = True
so.log_severity_level = 3
for k, v in spec["config"].items():
    so.add_session_config_entry(k, v)
with tempfile.TemporaryDirectory() as tmp:
    so.profile_file_prefix = tmp + "/p"
    s = ort.InferenceSession(spec["path"], so, providers=["CPUExecutionProvider"])
    for _ in range(spec["runs"]):
        out = s.run(None, feeds)
        del out
    events = json.loads(Path(s.end_profiling()).read_text())
spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "Session" and e["name"] == "model_run")
nodes = sorted((e for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")), key=lambda e: e["ts"])
runs = [[e["args"] for e in nodes if a <= e["ts"] <= b] for a, b in spans]
first = runs[0][0]
held = [int(first["mem_arena_held"]) - int(first["mem_arena_held_delta"])]
print(json.dumps(held + [max(int(n["mem_arena_held"]) for n in r) for r in runs]))
"""


def arena_held(path: Path, options, dims=None, feeds=None, runs: int = 4) -> list[int]:  # type: ignore[no-untyped-def]
    """The profiler's ``mem_arena_held`` before run 1 and at the end of each of ``runs`` runs of a
    real session of ``path`` under ``options`` (a :class:`graphmem.ort.held.options.SessionOptions`),
    in a fresh process that only creates the session and runs it (its regions' addresses, which
    break ties between equal free chunks, are those of a process's first session; freeing a
    loaded model there would move them). ``feeds``: name -> numpy array (else random, bound by ``dims``)."""
    import json
    import tempfile

    from graphmem.verify import make_feeds

    if feeds is None:
        feeds = make_feeds(onnx.load(str(path), load_external_data=False), dims or {}, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(Path(tmp) / "feeds.npz", **feeds)
        spec = {
            "path": str(path), "feeds": str(Path(tmp) / "feeds.npz"), "level": options.graph_optimization_level,
            "threads": options.intra_op_num_threads or 1, "pattern": options.enable_mem_pattern,
            "config": options.session_config(), "arena_cfg": options.arena_cfg(), "runs": runs,
        }
        done = subprocess.run([sys.executable, "-c", _ARENA_HELD, json.dumps(spec)], capture_output=True, text=True,
                              check=True, timeout=300)
    return json.loads(done.stdout.strip().splitlines()[-1])
