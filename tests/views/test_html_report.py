"""The HTML report (graphmem.views.html_report): self-contained, and its charts are the planner's
figures (every hover column carries its step's exact bytes)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from onnx import TensorProto, helper

import graphmem
from builders import BERT, CNN, model, save, tensor
from graphmem.analysis.timeline import memory_timeline
from graphmem.views.chart import step_bins
from graphmem.batch.page import build_report
from graphmem.views.html_report import render_report
from graphmem.views.svg import timeline_svg


class _Elements(HTMLParser):
    """Every start tag with its attributes, in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


def _elements(page: str) -> list[tuple[str, dict[str, str]]]:
    p = _Elements()
    p.feed(page)
    return p.tags


def _columns(page: str, chart: int = 0) -> list[dict[str, str]]:
    """The hover columns of the ``chart``-th timeline."""
    charts, current = [], None
    for tag, attrs in _elements(page):
        if tag == "svg" and "timeline" in attrs.get("class", ""):
            current = []
            charts.append(current)
        elif tag == "rect" and "data-requested" in attrs and current is not None:
            current.append(attrs)
    return charts[chart]


@pytest.fixture(scope="module")
def bert():  # type: ignore[no-untyped-def]
    a = graphmem.analyze(BERT, dims={"batch": 8, "seq": 128})
    return a, render_report(a)


def test_the_report_is_self_contained(bert) -> None:  # type: ignore[no-untyped-def]
    _, page = bert
    assert not re.search(r"https?://", page)
    assert "<script" not in page and "<link" not in page and "@import" not in page and "url(" not in page
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not [attrs for _, attrs in _elements(page) if "src" in attrs or "href" in attrs]


def test_the_report_names_the_peak_node_and_its_exact_bytes(bert) -> None:  # type: ignore[no-untyped-def]
    a, page = bert
    assert "4,980,808" in page and a.activations.peak_node == "/model/encoder/layer.0/attention/self/Add"
    assert "peak 4.75 MiB (4,980,808 B) at step 104" in page  # the marker's hover text
    assert "Exact: every buffer was planned" in page
    assert "/model/encoder/layer.0/attention/self/Mul_output_0" in page  # a 2 MiB tensor live at the peak
    assert "MatMul" in page and "214,132,736" in page  # FLOPs


def test_every_hover_column_carries_its_steps_planner_figures(bert) -> None:  # type: ignore[no-untyped-def]
    a, page = bert
    t = memory_timeline(a)
    cols = _columns(page)
    assert [int(c["data-first"]) for c in cols] == list(range(len(t.requested)))
    assert [int(c["data-requested"]) for c in cols] == list(t.requested)
    assert [int(c["data-lower-bound"]) for c in cols] == list(t.lower_bound)
    assert [int(c["data-in-use"]) for c in cols] == list(t.in_use)
    peak = [attrs for tag, attrs in _elements(page) if tag == "circle" and "peak" in attrs.get("class", "")]
    assert peak[0]["data-bytes"] == "4980808" and peak[0]["data-step"] == str(a.activations.peak_step)


def test_binned_columns_hold_their_highest_step(bert) -> None:  # type: ignore[no-untyped-def]
    a, _ = bert
    t = memory_timeline(a)
    svg = timeline_svg(t, step_bins(t, 25), peak_bytes=a.activations.peak_bytes, peak_node=a.activations.peak_node)
    cols = _columns(svg)
    assert len(cols) == 23  # 183 steps in bins of 8
    for c in cols:
        first, last = int(c["data-first"]), int(c["data-last"])
        assert int(c["data-requested"]) == max(t.requested[first : last + 1])
        assert int(c["data-lower-bound"]) == max(t.lower_bound[first : last + 1])
    assert max(int(c["data-requested"]) for c in cols) == a.activations.peak_bytes


def test_a_sweep_adds_memory_against_the_dim(tmp_path: Path) -> None:
    page = build_report(BERT, dims={"batch": 2}, sweep="seq=16,32,64")
    points = [attrs for tag, attrs in _elements(page) if tag == "circle" and attrs.get("class") == "total"]
    totals = [graphmem.analyze(BERT, dims={"batch": 2, "seq": s}).total_bytes for s in (16, 32, 64)]
    assert [(int(p["data-value"]), int(p["data-bytes"])) for p in points] == list(zip((16, 32, 64), totals))
    assert "Memory against seq" in page and "seq=64" in page  # the page's own analysis: the largest value


def test_a_report_of_a_model_with_unresolved_sizes_says_not_exact(tmp_path: Path) -> None:
    m = model(
        [helper.make_node("NonZero", ["X"], ["idx"]), helper.make_node("Cast", ["idx"], ["Y"], to=TensorProto.FLOAT)],
        [tensor("X", [8])], [tensor("Y", None)],
    )
    page = build_report(save(m, tmp_path / "nz.onnx"))
    assert "NOT EXACT" in page and "unresolved_tensor ×2" in page


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and unfiltered RGB(A) rows of an 8-bit PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6)
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + left) & 255
            elif f == 2:
                line[i] = (line[i] + up) & 255
            elif f == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif f == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install -y chromium)")
def test_chromium_renders_the_report(tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    html.write_text(build_report(CNN, dims={"batch": 8}), encoding="utf-8")
    png = tmp_path / "shot.png"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--window-size=1000,900", f"--screenshot={png}", html.as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    width, height, rows = _png_pixels(png.read_bytes())
    assert (width, height) == (1000, 900)
    bpp = len(rows[0]) // width
    pixels = [row[i : i + 3] for row in rows[::4] for i in range(0, len(row), bpp * 4)]
    inked = sum(1 for p in pixels if min(p) < 200)  # text, curves and bands, against white
    assert inked > len(pixels) * 0.03, f"only {inked} of {len(pixels)} sampled pixels are not near white"
    assert len(set(pixels)) > 20  # not one flat colour
