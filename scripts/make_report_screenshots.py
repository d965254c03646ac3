#!/usr/bin/env python
"""Render `graphmem report` pages and `peak --plot` pictures, and screenshot the pages.

    python scripts/make_report_screenshots.py [--out docs/pages/images] [--work .cache/plots]

For three models — a CNN (``models/tiny_cnn.onnx``), BERT (``models/tiny_bert.onnx``, with a
``--sweep seq=…`` chart) and a 25,000-node Llama-shaped decoder (``scripts/make_llama7b.py
--layers 490``, weights never written) — it runs ``graphmem report`` and ``graphmem peak --plot``
through the CLI, opens each report in headless Chromium (Debian's ``chromium``) and writes
``OUT/report_<name>.png`` (the top of the page) and ``OUT/peak_<name>.png``. It prints, per
model, the analysis and rendering times and the sizes, and checks that each page names the peak
node and its exact bytes and holds no network reference. Needs matplotlib (``graphmem[plot]``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
)


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screenshot(html: Path, png: Path, *, width: int = 1100, height: int = 2000) -> float:
    exe = chromium()
    if exe is None:
        raise SystemExit("chromium is not installed (apt-get install -y chromium)")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
             f"--screenshot={png}", html.resolve().as_uri()],
            check=True, capture_output=True, timeout=120,
        )
    return time.perf_counter() - start


def graphmem(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "graphmem", *args], check=True, cwd=ROOT, capture_output=True)
    return time.perf_counter() - start


def decoder(work: Path) -> Path:
    path = work / "llama_490.onnx"
    if not path.exists():
        subprocess.run([sys.executable, str(ROOT / "scripts/make_llama7b.py"), "--out", str(work),
                        "--layers", "490", "--name", path.name], check=True, capture_output=True)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "pages" / "images")
    ap.add_argument("--work", type=Path, default=Path(__file__).resolve().parents[1] / ".cache" / "plots")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    models = [
        ("cnn", Path("models/tiny_cnn.onnx"), ["--dim", "batch=8"], [], 2000),
        ("bert", Path("models/tiny_bert.onnx"), ["--dim", "batch=8", "--dim", "seq=128"], ["--sweep", "seq=32,64,128,256,384,512"], 2700),
        ("decoder25k", decoder(args.work), ["--dim", "batch=1", "--dim", "seq=512"], [], 2000),
    ]
    print(f"{'model':<11} {'nodes':>7} {'report':>8} {'plot':>7} {'shot':>6} {'html':>10}  peak")
    for name, model, dims, extra, height in models:
        html = args.work / f"report_{name}.html"
        t_report = graphmem("report", str(model), *dims, *extra, "-o", str(html))
        t_plot = graphmem("peak", str(model), *dims, "--plot", str(args.out / f"peak_{name}.png"))
        t_shot = screenshot(html, args.out / f"report_{name}.png", height=height)
        page = html.read_text(encoding="utf-8")
        peak = subprocess.run([sys.executable, "-m", "graphmem", "peak", str(model), *dims, "--json"],
                              check=True, capture_output=True, text=True, cwd=ROOT).stdout
        import json

        doc = json.loads(peak)
        node, nbytes = doc["activations"]["peak_node"], doc["activations"]["peak_bytes"]
        nodes = doc["model"]["nodes"]
        problems = []
        if f"{nbytes:,}" not in page:
            problems.append("peak bytes missing")
        if node not in page:
            problems.append("peak node missing")
        if re.search(r"https?://", page):
            problems.append("network reference")
        status = "ok" if not problems else "PROBLEM: " + ", ".join(problems)
        print(f"{name:<11} {nodes:>7,} {t_report:>7.2f}s {t_plot:>6.2f}s {t_shot:>5.2f}s {len(page):>10,}  "
              f"{nbytes:,} B at {node} — {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
