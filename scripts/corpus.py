"""The model corpus shared by the accuracy and benchmark scripts (and the slow tests).

* ``light``: the onnx wheel's ``backend/test/data/light`` models (third-party, fixed shapes);
* ``models``: the small models committed in ``models/`` (see ``scripts/make_models.py``);
* ``exported``: ResNet-50, MobileNetV2, BERT-base, GPT-2 small exported by
  ``scripts/export_corpus.py`` into ``.cache/corpus`` (needs torch; run it once).
"""

from __future__ import annotations

import os
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parent.parent
LIGHT = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"
MODELS = ROOT / "models"
EXPORTED = Path(os.environ.get("GRAPHMEM_CORPUS", ROOT / ".cache" / "corpus"))
EXPORTED_NAMES = ("resnet50", "mobilenetv2", "bert_base", "gpt2_small")


PYTORCH_CONVERTED = LIGHT.parent / "pytorch-converted"


def pytorch_converted_models() -> list[Path]:
    """The onnx wheel's 82 small converted PyTorch modules (fixed shapes, old opsets)."""
    return sorted(PYTORCH_CONVERTED.glob("*/model.onnx"))


def light_models() -> list[Path]:
    return sorted(LIGHT.glob("*.onnx"))


def committed_models() -> list[Path]:
    return sorted(MODELS.glob("*.onnx"))


def exported_models() -> tuple[list[Path], list[str]]:
    """(present files, missing names) of the exported corpus."""
    present = [EXPORTED / f"{n}.onnx" for n in EXPORTED_NAMES if (EXPORTED / f"{n}.onnx").exists()]
    missing = [n for n in EXPORTED_NAMES if not (EXPORTED / f"{n}.onnx").exists()]
    return present, missing


def select(*, pytorch_converted: bool = False, only: list[str] | None = None) -> tuple[list[Path], list[str]]:
    """(model files, missing exported names): light, committed, exported, optionally the
    pytorch-converted ones, kept to those whose name contains one of ``only``."""
    exported, missing = exported_models()
    paths = light_models() + committed_models() + exported
    if pytorch_converted:
        paths += pytorch_converted_models()
    if only:
        paths = [p for p in paths if any(s in name(p) for s in only)]
    return paths, missing


def name(path: Path) -> str:
    """A model's display name (its folder for the pytorch-converted ``*/model.onnx``)."""
    return path.parent.name if path.stem == "model" else path.stem


def bindings(path: Path, batches: tuple[int, ...] = (1, 8), seq: int = 128) -> list[dict[str, int]]:
    """Dim bindings to test a model at: each batch size; every other symbolic dim = ``seq``."""
    import graphmem.model.loading as loading

    names = loading.load_model(path).symbolic_dims
    if not names:
        return [{}]
    return [{n: (b if n == "batch" else seq) for n in names} for b in batches]
