"""``graphmem report`` and the --plot options of peak, train and diff, through the CLI."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from builders import BERT, CNN, TRAIN_CNN, outcome


def test_report_writes_one_self_contained_page(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    code, stdout, err = outcome("report", str(BERT), "--dim", "batch=8", "--dim", "seq=128", "-o", str(out))
    assert code == 0, err
    page = out.read_text(encoding="utf-8")
    assert "4,980,808" in page and "http" not in page
    assert f"wrote {out}" in stdout and [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary left


def test_report_never_writes_over_its_model(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    shutil.copy(CNN, model)
    code, _, err = outcome("report", str(model), "--dim", "batch=1", "-o", str(model))
    assert code == 2 and "is an input of this command" in err
    assert model.read_bytes() == CNN.read_bytes()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--sweep", "seq=64"], "at least two values"),
        (["--sweep", "seq"], "expected NAME=VALUE"),
        (["--sweep", "width=1,2"], "has no dim 'width'"),
    ],
)
def test_report_rejects_a_bad_sweep(tmp_path: Path, args: list[str], message: str) -> None:
    code, _, err = outcome("report", str(BERT), "--dim", "batch=1", *args, "-o", str(tmp_path / "r.html"))
    assert code == 2 and message in err and err.startswith("graphmem: error:")
    assert not (tmp_path / "r.html").exists()


def test_report_needs_every_dim_bound(tmp_path: Path) -> None:
    code, _, err = outcome("report", str(BERT), "-o", str(tmp_path / "r.html"))
    assert code == 2 and "unbound symbolic dims" in err


def test_report_does_not_need_matplotlib(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    code, _, err = outcome("report", str(CNN), "--dim", "batch=1", "-o", str(tmp_path / "r.html"))
    assert code == 0, err


needs_matplotlib = pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is None, reason="matplotlib (the [plot] extra, also in [test]) is not installed"
)


@needs_matplotlib
@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_peak_plot_writes_the_picture_and_still_prints_the_table(tmp_path: Path, suffix: str, magic: bytes) -> None:
    out = tmp_path / f"peak{suffix}"
    code, stdout, err = outcome("peak", str(CNN), "--dim", "batch=8", "--plot", str(out))
    assert code == 0, err
    assert out.read_bytes().startswith(magic) and "activations peak" in stdout
    assert err.splitlines() == [f"graphmem peak: wrote {out} ({out.stat().st_size:,} bytes)"]  # as report says
    code, stdout, err = outcome("peak", str(CNN), "--dim", "batch=8", "--plot", str(out), "--json")
    assert code == 0 and json.loads(stdout)["activations"]["peak_bytes"] == 2_621_440  # stdout stays JSON
    assert err.splitlines() == [f"graphmem peak: wrote {out} ({out.stat().st_size:,} bytes)"]
    if suffix == ".svg":
        assert "2,621,440 B" in out.read_text()  # tiny_cnn's peak at batch 8, as text


@needs_matplotlib
def test_plot_options_reject_other_formats_before_analysing(tmp_path: Path) -> None:
    code, _, err = outcome("peak", str(CNN), "--dim", "batch=8", "--plot", str(tmp_path / "p.pdf"))
    assert code == 2 and "must end in .png or .svg" in err
    code, _, err = outcome("peak", str(CNN), "--symbolic", "--plot", str(tmp_path / "p.png"))
    assert code == 2 and "--symbolic" in err


@needs_matplotlib
def test_train_and_diff_plots(tmp_path: Path) -> None:
    code, _, err = outcome("train", str(TRAIN_CNN), "--dim", "batch=4", "--plot", str(tmp_path / "t.svg"))
    assert code == 0, err
    svg = (tmp_path / "t.svg").read_text()
    assert err.splitlines()[-1] == f"graphmem train: wrote {tmp_path / 't.svg'} ({(tmp_path / 't.svg').stat().st_size:,} bytes)"
    assert "saved for backward" in svg and "optimizer state" in svg and "step peak" in svg
    code, _, err = outcome("diff", str(CNN), str(BERT), "--dim", "batch=2", "--dim", "seq=16", "--plot", str(tmp_path / "d.png"))
    assert code == 2 and "has no dim 'seq'" in err  # both models take the same dims
    code, _, err = outcome("diff", str(CNN), str(CNN), "--dim", "batch=2", "--plot", str(tmp_path / "d.png"))
    assert code == 0, err
    assert (tmp_path / "d.png").read_bytes().startswith(b"\x89PNG")
    assert err.splitlines() == [f"graphmem diff: wrote {tmp_path / 'd.png'} ({(tmp_path / 'd.png').stat().st_size:,} bytes)"]
