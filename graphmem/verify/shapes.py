"""The shapes and dtypes onnxruntime really produces: every node output exposed and run once.

The reference the shape stage and the FLOP rules are checked against (``tests/test_shapes.py``,
``tests/test_flops_runtime.py``, ``scripts/shape_check.py``, ``scripts/flops_report.py``):
onnxruntime at ORT_DISABLE_ALL on CPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import onnx

    from graphmem.verify.feeds import Feed

__all__ = ["run_every_output", "runtime_types", "runtime_shapes"]


def run_every_output(model: onnx.ModelProto, feeds: Mapping[str, Feed]) -> dict[str, np.ndarray]:
    """Run ``model`` once with every node output exposed; tensor name -> value (a copy is run:
    ``model`` is not modified)."""
    import onnx

    from graphmem.ort.runtime import onnxruntime as _runtime

    ort = _runtime()

    from graphmem.ort.runtime import create_session, run_session

    proto = onnx.ModelProto()
    proto.CopyFrom(model)
    known = {o.name for o in proto.graph.output}
    for node in proto.graph.node:
        for out in node.output:
            if out and out not in known and node.op_type != "Constant":
                proto.graph.output.append(onnx.ValueInfoProto(name=out))
                known.add(out)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = create_session(proto.SerializeToString(), options, ["CPUExecutionProvider"])
    del proto
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, run_session(session, dict(feeds), names)))


def runtime_types(path: str | Path, dims: Mapping[str, int]) -> dict[str, tuple[tuple[int, ...], int]]:
    """Tensor name -> (shape, ONNX dtype) of every node output in one run on seeded random inputs."""
    import onnx

    from graphmem.verify.feeds import make_feeds

    model = onnx.load(str(path))
    values = run_every_output(model, make_feeds(model, dims))
    return {n: (tuple(v.shape), onnx.helper.np_dtype_to_tensor_dtype(v.dtype)) for n, v in values.items()}


def runtime_shapes(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    """Shape of every tensor a run of ``model`` on ``feeds`` sees: initializers (stored dims),
    the fed inputs, and every node output as onnxruntime produced it."""
    import numpy as np

    shapes: dict[str, tuple[int, ...]] = {t.name: tuple(int(d) for d in t.dims) for t in model.graph.initializer}
    shapes.update({k: tuple(v.shape) for k, v in feeds.items()})
    for name, value in run_every_output(model, feeds).items():
        if isinstance(value, np.ndarray):
            shapes[name] = tuple(int(d) for d in value.shape)
    return shapes
