"""The shapes and dtypes onnxruntime really produces: every node output exposed and run once.

The reference the shape stage is checked against (``tests/test_shapes.py``,
``scripts/shape_check.py``): onnxruntime at ORT_DISABLE_ALL on CPU, seeded random inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["runtime_types"]


def runtime_types(path: str | Path, dims: Mapping[str, int]) -> dict[str, tuple[tuple[int, ...], int]]:
    """Tensor name -> (shape, ONNX dtype) of every node output in one run of ``path``."""
    import onnx
    import onnxruntime as ort

    from graphmem.verify.feeds import make_feeds

    proto = onnx.load(str(path))
    known = {o.name for o in proto.graph.output}
    for node in proto.graph.node:
        for out in node.output:
            if out and out not in known and node.op_type != "Constant":
                proto.graph.output.append(onnx.ValueInfoProto(name=out))
                known.add(out)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    values = session.run(names, make_feeds(proto, dims))
    return {n: (tuple(v.shape), onnx.helper.np_dtype_to_tensor_dtype(v.dtype)) for n, v in zip(names, values)}
