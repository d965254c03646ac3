"""TorchScript exports with control flow: ``torch.jit.script`` modules whose ``if``/``for``/``while``
become ONNX If and Loop nodes (TorchScript exporter, ``torch.onnx.export(dynamo=False)``, opset 17).

    pip install torch==2.13.0
    python scripts/export_controlflow_torch.py [--out DIR]     # default .cache/controlflow/torch

Random weights (seeded); dynamic batch axes. Writes ``manifest.json`` with each model's bindings,
read by ``scripts/accuracy_controlflow.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

DEFAULT_OUT = Path(os.environ.get("GRAPHMEM_CONTROLFLOW", str(Path(__file__).resolve().parents[1] / ".cache" / "controlflow"))) / "torch"


def _modules():  # type: ignore[no-untyped-def]
    import torch
    from torch import nn

    class IfShape(nn.Module):
        """if batch > 2: wide MLP else: small layer (shape-derived condition)."""

        def __init__(self) -> None:
            super().__init__()
            self.small = nn.Linear(64, 64)
            self.wide = nn.Linear(64, 256)
            self.back = nn.Linear(256, 64)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.shape[0] > 2:
                y = self.back(torch.tanh(self.wide(x)))
            else:
                y = torch.relu(self.small(x))
            return y * 2.0

    class ForSeq(nn.Module):
        """An RNN cell unrolled over the sequence axis (Loop with M = seq, from a shape)."""

        def __init__(self) -> None:
            super().__init__()
            self.inp = nn.Linear(32, 64)
            self.rec = nn.Linear(64, 64)
            self.out = nn.Linear(64, 16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = torch.zeros(x.shape[0], 64)
            outs = []
            for t in range(x.shape[1]):
                h = torch.tanh(self.inp(x[:, t]) + self.rec(h))
                outs.append(h)
            return self.out(torch.stack(outs, 1))

    class ForValue(nn.Module):
        """A residual block applied ``steps`` times (Loop with M from an input value)."""

        def __init__(self) -> None:
            super().__init__()
            self.layer = nn.Linear(128, 128)

        def forward(self, x: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
            for _ in range(int(steps)):
                x = torch.relu(self.layer(x)) + x
            return x

    class While(nn.Module):
        """while i < limit (a computed condition, no trip count)."""

        def __init__(self) -> None:
            super().__init__()
            self.layer = nn.Linear(64, 64)

        def forward(self, x: torch.Tensor, limit: torch.Tensor) -> torch.Tensor:
            i = torch.zeros((), dtype=torch.long)
            while bool(i < limit):
                x = torch.sigmoid(self.layer(x))
                i = i + 1
            return x

    class NestedIf(nn.Module):
        """for i in range(4): if i % 2 == 0: linear+relu else: neg (If nested in a Loop)."""

        def __init__(self) -> None:
            super().__init__()
            self.layer = nn.Linear(64, 64)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for i in range(4):
                if i % 2 == 0:
                    x = torch.relu(self.layer(x))
                else:
                    x = -x
            return x

    return torch, [
        ("ts_if_shape", IfShape(), {"x": (["batch", 64], "float")}, [{"label": f"b{b}", "dims": {"batch": b}, "values": {}, "batch": b} for b in (1, 4)]),
        ("ts_for_seq", ForSeq(), {"x": (["batch", "seq", 32], "float")}, [{"label": f"b{b}", "dims": {"batch": b, "seq": 12}, "values": {}, "batch": b} for b in (1, 4)]),
        ("ts_for_value", ForValue(), {"x": (["batch", 128], "float"), "steps": ([], "int64")}, [{"label": f"b{b} steps=3", "dims": {"batch": b}, "values": {"steps": [3]}, "batch": b} for b in (1, 4)]),
        ("ts_while", While(), {"x": (["batch", 64], "float"), "limit": ([], "int64")}, [{"label": f"b{b} limit=5", "dims": {"batch": b}, "values": {"limit": [5]}, "batch": b} for b in (1, 4)]),
        ("ts_nested_if", NestedIf(), {"x": (["batch", 64], "float")}, [{"label": f"b{b}", "dims": {"batch": b}, "values": {}, "batch": b} for b in (1, 4)]),
    ]


def export_all(out: Path) -> list[dict]:  # type: ignore[type-arg]
    torch, modules = _modules()
    torch.manual_seed(0)
    out.mkdir(parents=True, exist_ok=True)
    manifest = []
    for name, module, inputs, bindings in modules:
        scripted = torch.jit.script(module.eval())
        args = []
        dynamic = {}
        for input_name, (shape, dtype) in inputs.items():
            concrete = [2 if isinstance(d, str) else d for d in shape]
            if dtype == "float":
                args.append(torch.randn(*concrete))
            else:
                args.append(torch.tensor(3, dtype=torch.long))
            named = {i: d for i, d in enumerate(shape) if isinstance(d, str)}
            if named:
                dynamic[input_name] = named
        path = out / f"{name}.onnx"
        torch.onnx.export(
            scripted, tuple(args), str(path), input_names=list(inputs), output_names=["y"],
            dynamic_axes=dynamic or None, opset_version=17, dynamo=False,
        )
        manifest.append({"name": name, "path": str(path), "bindings": bindings})
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    for entry in export_all(args.out):
        print(f"{entry['name']:<16} {entry['path']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
