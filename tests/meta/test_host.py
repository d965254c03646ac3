"""The host-dependent rules under two pinned hosts (builders.PINNED_HOST, an AMX Sapphire Rapids
with 2 MiB of L2 per core, and builders.AVX2_HOST, an AVX2 machine with 1 MiB): the predictions
differ exactly where a rule reads the host, and are byte-identical elsewhere. And no module but
graphmem/host.py reads the machine."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from graphmem.errors import EXIT_INPUT_ERROR
from graphmem.model.types import TensorType
from graphmem.training.kernels import backward_temporaries, halfconv
from graphmem.training.kernels.onednn_rnn import lstm_bf16_scratchpad
from graphmem.training.saved import OpView

from builders import AVX2_HOST, BERT, CNN, IR_VERSION, PINNED_HOST, ROOT, TRAIN_CNN, outcome

F, I32, U8, I8 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.UINT8, TensorProto.INT8


@pytest.fixture(scope="module")
def avx2_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("hosts") / "avx2.json"
    path.write_text(AVX2_HOST.to_json())
    return str(path)


def documents(avx2_file: str, *args: str) -> tuple[dict, dict]:
    """``graphmem ARGS --json`` for the pinned host (this machine in the tests) and for AVX2_HOST."""
    docs = []
    for extra in ((), ("--host", avx2_file)):
        code, out, err = outcome(*args, "--json", *extra)
        assert code == 0, err
        docs.append(json.loads(out))
    assert docs[0]["host"] == PINNED_HOST.to_dict() and docs[1]["host"] == AVX2_HOST.to_dict()
    return docs[0], docs[1]


def differing(a: object, b: object, path: str = "") -> list[str]:
    """The leaf paths where two JSON documents differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in sorted(set(a) | set(b)) for p in differing(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in differing(x, y, f"{path}[{i}]")]
    return [] if a == b else [path]


# --- no host-dependent op: the same document, the host block aside ---------------------------


@pytest.mark.parametrize("args", [
    ("peak", str(CNN), "-d", "batch=2"),
    ("peak", str(BERT), "-d", "batch=2", "-d", "seq=8"),
    ("layers", str(CNN), "-d", "batch=2"),
    ("sweep", str(CNN), "-d", "batch=1,2"),
    ("train", str(TRAIN_CNN), "-d", "batch=2"),  # fp32: oneDNN's avx512 fp32 rules, the same threads
], ids=lambda a: " ".join(Path(x).stem for x in a))
def test_no_host_dependent_op_same_document(avx2_file: str, args: tuple[str, ...]) -> None:
    pinned, avx2 = documents(avx2_file, *args)
    assert differing(pinned, avx2) and all(p.startswith(".host.") for p in differing(pinned, avx2))
    del pinned["host"], avx2["host"]
    assert json.dumps(pinned, sort_keys=True) == json.dumps(avx2, sort_keys=True)


# --- onnxruntime: GroupQueryAttention's flash tiles (L2), QLinearConv's MLAS dispatch (flags) ---


def _gqa(path: Path) -> Path:
    vi = helper.make_tensor_value_info
    node = helper.make_node("GroupQueryAttention", ["q", "", "", "pk", "pv", "seqlens", "total"], ["y", "pk2", "pv2"],
                            domain="com.microsoft", num_heads=4, kv_num_heads=2)
    graph = helper.make_graph([node], "gqa", [vi("q", F, [1, 2048, 256]), vi("pk", F, [1, 2, 0, 32]), vi("pv", F, [1, 2, 0, 32]),
                                              vi("seqlens", I32, [1]), vi("total", I32, [1])],
                              [vi("y", F, [1, 2048, 128]), vi("pk2", F, [1, 2, 2048, 32]), vi("pv2", F, [1, 2, 2048, 32])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = IR_VERSION
    onnx.save(m, str(path))
    return path


def test_gqa_flash_tiles_follow_the_l2(tmp_path: Path, avx2_file: str) -> None:
    # packed QKV of 4 heads + 2·2 KV heads of 32: Q transposed 1·8·2048·32·4 = 2,097,152 B; flash
    # tiles kv_block = min(L2 / (4·4·2·32), total 2048), q_block = min(that, 2·32, 2048) = 64:
    # 2 MiB: kv_block 2048, (2·64 + 64·2048 + 64·32)·4 = 532,992 B -> largest scratch 2,630,144
    # 1 MiB: kv_block 1024, (2·64 + 64·1024 + 64·32)·4 = 270,848 B -> largest scratch 2,368,000
    path = str(_gqa(tmp_path / "gqa.onnx"))
    pinned, avx2 = documents(avx2_file, "peak", path, "--value", "total=2048", "--value", "seqlens=2047")
    assert (pinned["activations"]["scratch_bytes"], avx2["activations"]["scratch_bytes"]) == (2630144, 2368000)
    # the session block: the same arena regions (powers of two), fewer of their pages written
    held = [".session.resident_bytes", ".session.resident_parts.arena"]
    assert differing(pinned, avx2) == [".activations.in_use_peak_bytes", ".activations.scratch_bytes"] + [
        p for p in differing(pinned, avx2) if p.startswith(".host.")] + held


def _qlinear_conv(path: Path) -> Path:
    w = (np.arange(20 * 16 * 9) % 7 - 3).astype(np.int8).reshape(20, 16, 3, 3)
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(np.array(128, np.uint8), "z"),
             numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(0, np.int8), "wz")]
    node = helper.make_node("QLinearConv", ["x", "s", "z", "w", "s", "wz", "s", "z"], ["y"], pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "q", [helper.make_tensor_value_info("x", U8, [1, 16, 32, 32])],
                              [helper.make_tensor_value_info("y", U8, [1, 20, 32, 32])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = IR_VERSION
    onnx.save(m, str(path))
    return path


def test_mlas_symmetric_convolution_needs_avx512_for_20_channels(tmp_path: Path, avx2_file: str) -> None:
    # 16 -> 20 channels, 3x3 pad 1 on 32x32, int8 filter with zero point 0 (graphmem/ort/mlas.py):
    # AVX-512 aligns output channels by 4: symmetric convolution, the filter packed at session
    # creation (rnd_up(20, 16)·16·9 = 4,608 B kept) and scratch: the image transposed 16·1,024 =
    # 16,384 B, the output 20·1,024 = 20,480 B, the indirection buffer 8·9·1,024 = 73,728 B:
    # 110,592 B. AVX2 aligns by 8: 20 does not divide, the GEMM path: int32 output 20·1,024·4 =
    # 81,920 B, the transposes and im2col 16·9·1,024 = 147,456 B: 266,240 B.
    path = str(_qlinear_conv(tmp_path / "qconv.onnx"))
    pinned, avx2 = documents(avx2_file, "peak", path)
    assert (pinned["activations"]["scratch_bytes"], avx2["activations"]["scratch_bytes"]) == (110592, 266240)
    moved = [p for p in differing(pinned, avx2) if not p.startswith(".host.")]
    # the session block: the same arena regions, another count of their pages written
    assert moved == [".activations.in_use_peak_bytes", ".activations.scratch_bytes",
                     ".session.resident_bytes", ".session.resident_parts.arena"]


# --- PyTorch/oneDNN: the bf16 kernels (flags), the brgemm blocking (L2), the threads ----------


def _conv(w, x, y, dtype=TensorProto.BFLOAT16, **attrs) -> OpView:  # type: ignore[no-untyped-def]
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], name="c", **attrs)
    t = lambda shape: TensorType(dtype=dtype, shape=tuple(shape))  # noqa: E731
    return OpView(op_type="Conv", node=node, inputs=("x", "W", "B"), outputs=("y",),
                  types={"x": t(x), "W": t(w), "B": t((w[0],)), "y": t(y)},
                  needs_grad=frozenset({"W", "B"}), weights=frozenset({"W", "B"}))


def test_brgemm_weight_gradient_blocking_follows_the_l2() -> None:
    # tests/training/test_halfconv.py's 32 -> 16 3x3 on 128x128 (2 MiB: oh_block 32, 1,050,384 B).
    # 1 MiB: 0.8 x 3/4 x 1 MiB = 629,145.6, minus 3 input rows of 20,480, over 28,672 B a row:
    # 19 rows, 128 split evenly: oh_block 19, ih_block 21:
    #   tr_src (2 x 2 x 160 x 16 x 21 + 32) x 2 = 430,144 (+128); tr_ddst (2 x 128 x 16 x 19
    #   + 160 x 16) x 2 = 160,768 (+128); the rest as at 2 MiB: 86,480 -> 677,648
    op = _conv((16, 32, 3, 3), (1, 32, 128, 128), (1, 16, 128, 128), pads=[1] * 4)
    small = replace(PINNED_HOST, l2_per_core_bytes=1 << 20)
    assert halfconv.brgemm_bwd_w_scratchpad(op, PINNED_HOST) == 1050384
    assert halfconv.brgemm_bwd_w_scratchpad(op, small) == 677648
    assert backward_temporaries(op, PINNED_HOST) - backward_temporaries(op, small) == 1050384 - 677648


def test_bf16_rules_need_amx_else_the_fp32_fallback(avx2_file: str) -> None:
    # AMX: the autocast convolutions' backward by halfconv's rules; without it, the fp32 kernels'
    # figures and a warning per convolution naming the missing AMX-BF16
    op = _conv((16, 32, 3, 3), (1, 32, 128, 128), (1, 16, 128, 128), pads=[1] * 4)
    assert halfconv.half_conv_backward(op, PINNED_HOST) is not None
    assert halfconv.half_conv_backward(op, AVX2_HOST) is None
    pinned, avx2 = documents(avx2_file, "train", str(TRAIN_CNN), "-d", "batch=2", "--precision", "mixed-bf16")
    lacks = [w for w in avx2["training"]["warnings"] if "lacks AMX-BF16" in w]
    assert lacks and not any("lacks AMX-BF16" in w for w in pinned["training"]["warnings"])
    assert pinned["training"]["backward_peak_bytes"] != avx2["training"]["backward_peak_bytes"]
    # the forward and what autograd saves follow no host rule
    for key in ("saved_bytes", "activation_peak_bytes", "weights_bytes", "optimizer_state_bytes"):
        assert pinned["training"][key] == avx2["training"][key], key


def test_bf16_lstm_scratchpad_follows_amx_and_threads() -> None:
    # tests/training/test_rnn_autocast.py's T=5, B=3, I=8, H=16 forward: 18,200 B with AMX, 17,224
    # without (avx512_core_bf16 brgemm); more threads, more per-thread buffers
    run = lambda h: lstm_bf16_scratchpad(5, 3, 8, 16, forward=True, threads=h.torch_threads,  # noqa: E731
                                         flags=h.cpu_flags, l2=h.l2_per_core_bytes)
    no_amx = replace(PINNED_HOST, cpu_flags=PINNED_HOST.cpu_flags - {"amx_tile", "amx_int8", "amx_bf16"})
    assert (run(PINNED_HOST), run(no_amx)) == (18200, 17224)
    assert run(replace(PINNED_HOST, torch_threads=4)) > run(PINNED_HOST)


# --- where the host comes from ------------------------------------------------------------------


def test_verify_refuses_another_host(avx2_file: str) -> None:
    # verify measures on this machine: a prediction for another one cannot be checked here
    code, out, err = outcome("verify", "--resident-processes", "0", str(CNN), "-d", "batch=1", "--host", avx2_file)
    assert code == EXIT_INPUT_ERROR and out == "" and err.count("\n") == 1
    assert "verify measures on this machine" in err and "l2_bytes 1048576 != 2097152" in err


def test_graph_opt_all_refuses_a_host_of_another_nchwc_layout(avx2_file: str) -> None:
    code, _, err = outcome("peak", str(CNN), "-d", "batch=1", "--graph-opt", "all", "--host", avx2_file)
    assert code == EXIT_INPUT_ERROR and "NCHWc blocks of 16" in err and "NCHWc blocks of 8" in err


#: Reading the machine: what graphmem/host.py alone may do. The exceptions read the running
#: process's environment for the process itself, not for a prediction.
MACHINE_READS = re.compile(r"/proc/|/sys/devices|sysconf|cpu_count|sched_getaffinity|platform\.machine|"
                           r"OMP_NUM_THREADS|MKL_NUM_THREADS")
ALLOWED = {
    "graphmem/host.py": "the one reader",
    "graphmem/verify/feeds.py": "memory_limit: this process's own memory, before making feeds",
    "graphmem/gate/config.py": "os.cpu_count: how many worker processes check starts",
    "graphmem/verify/_rss_child.py": "VmRSS: the resident memory of verify's own fresh measuring process",
}


def test_only_graphmem_host_reads_the_machine() -> None:
    readers = {}
    for path in sorted((ROOT / "graphmem").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        code = "\n".join(line.split("#", 1)[0] for line in path.read_text().splitlines())
        code = re.sub(r'"""(.*?)"""', "", code, flags=re.S)  # docstrings may name the sources
        found = sorted(set(MACHINE_READS.findall(code)))
        if found:
            readers[name] = found
    assert set(readers) == set(ALLOWED), readers
