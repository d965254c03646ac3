"""What-ifs: the same model sized as if its floating tensors had another dtype (``--as-dtype``).

Every floating tensor, weights included, is re-typed; integer shape tensors are untouched.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from graphmem.model.dtypes import is_float, tensor_bytes
from graphmem.model.loading import Weight
from graphmem.model.types import TensorType

__all__ = ["cast_floats", "cast_weights", "write_converted"]


def cast_floats(types: dict[str, TensorType], target: int) -> dict[str, TensorType]:
    """The same types with every floating tensor re-typed to ``target`` (shapes untouched)."""
    return {k: replace(t, dtype=target) if is_float(t.dtype) else t for k, t in types.items()}


def cast_weights(weights: dict[str, Weight], target: int) -> dict[str, Weight]:
    """The same weights with every floating one re-sized as ``target``."""
    out = {}
    for k, w in weights.items():
        if is_float(w.dtype):
            w = replace(w, dtype=target, nbytes=tensor_bytes(target, w.numel))
        out[k] = w
    return out


def write_converted(path: Path, target: int, out: Path) -> Path:
    """Write ``path`` with every floating tensor converted to ``target`` — initializers (values
    cast), graph inputs, outputs and value_info, Constant values, Cast/ConstantOfShape targets — for
    onnxruntime to build the session graph of the what-if (ops it runs as function bodies are
    expanded from the converted types). Reads the weights; writes only ``out``.

    Like the converter users run, the model first gets onnx's shape inference: onnxconverter-common
    ``convert_float_to_float16`` calls ``onnx.shape_inference.infer_shapes`` before retyping
    (``float16.py`` ``initial_checking``), so the converted file carries value_info with the
    ``unk__N`` dims it generates; onnxruntime's planner reuses buffers by those symbols
    (``allocation_planner.cc`` SameShape), which changes chunk placement (BERT-base float16 at
    graph-opt all, batch 1: in use 6,780,928 B with them, 6,424,064 B without). A model onnx's
    inference cannot take (over 2 GiB in one protobuf) is converted without it, as the converter
    cannot convert it either."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    from graphmem.model.validate import clear_invalid_dims

    model = onnx.load(str(path))
    clear_invalid_dims(model.graph)  # onnxruntime clears them too; onnx's inference would crash on them
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except (ValueError, onnx.shape_inference.InferenceError):
        pass  # over the protobuf limit: no value_info to add (see the docstring)
    np_target = helper.tensor_dtype_to_np_dtype(target)

    def convert(t: onnx.TensorProto) -> None:
        if is_float(t.data_type) and t.data_type != target:
            with np.errstate(over="ignore"):  # out-of-range weights saturate, as converters do
                t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np_target), t.name))

    def retype(vi: onnx.ValueInfoProto) -> None:
        tt = vi.type.tensor_type
        if vi.type.HasField("tensor_type") and is_float(tt.elem_type):
            tt.elem_type = target

    for t in model.graph.initializer:
        convert(t)
    for vi in (*model.graph.input, *model.graph.output, *model.graph.value_info):
        retype(vi)
    for node in model.graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                convert(a.t)
            elif a.name == "to" and node.op_type == "Cast" and is_float(a.i):
                a.i = target
    onnx.save(model, str(out))
    return out
