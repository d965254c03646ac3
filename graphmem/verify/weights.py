"""``--random-weights``: a runnable copy of a model whose weights are stripped or missing.

Memory does not depend on weight values, so initializers without data (external files absent,
payloads stripped) are synthesized with their dims and dtype. Integer tensors are never
synthesized: they may be shape constants (Reshape targets, Slice bounds), whose values decide
the shapes; a missing one is an error.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from graphmem.errors import ExternalDataError
from graphmem.model.dtypes import is_float
from graphmem.verify.feeds import check_allocation, check_seed, generation_bytes

__all__ = ["with_random_weights", "missing_weights"]


def missing_weights(path: Path) -> list[str]:
    """Names of initializers whose data is neither inline nor in a readable external file."""
    model = onnx.load(str(path), load_external_data=False)
    base = path.parent
    missing = []
    for t in model.graph.initializer:
        if t.data_location == TensorProto.EXTERNAL:
            info = {e.key: e.value for e in t.external_data}
            loc = base / info.get("location", "")
            need = int(info.get("offset", 0)) + int(info.get("length", 0) or 0)
            if not loc.is_file() or loc.stat().st_size < need:
                missing.append(t.name)
        elif math.prod(t.dims) > 0 and not _has_inline_data(t):
            missing.append(t.name)
    return missing


def with_random_weights(path: Path, out: Path, *, seed: int = 0) -> Path:
    """Write to ``out`` a copy of ``path`` with every missing float weight synthesized."""
    names = set(missing_weights(path))
    model = onnx.load(str(path), load_external_data=False)
    rng = np.random.default_rng(check_seed(seed))
    wanted = [t for t in model.graph.initializer if t.name in names and is_float(t.data_type)]
    check_allocation(
        sum(generation_bytes(np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)), tuple(t.dims)) for t in wanted),
        "random weights",
    )
    for k, t in enumerate(model.graph.initializer):
        if t.name not in names:
            if t.data_location == TensorProto.EXTERNAL:
                raise ExternalDataError(f"weight '{t.name}': external data present; copy not supported")
            continue
        if not is_float(t.data_type):
            raise ExternalDataError(
                f"weight '{t.name}' ({helper.tensor_dtype_to_np_dtype(t.data_type)}) has no data and "
                "may be a shape constant: integer weights are never synthesized"
            )
        dtype = helper.tensor_dtype_to_np_dtype(t.data_type)
        array = (rng.standard_normal(tuple(t.dims)) * 0.02).astype(dtype)
        model.graph.initializer[k].CopyFrom(numpy_helper.from_array(array, t.name))
    onnx.save(model, str(out), save_as_external_data=model.ByteSize() > (1 << 30), location=out.name + ".data")
    return out


def _has_inline_data(t: TensorProto) -> bool:
    return bool(
        t.raw_data or t.float_data or t.int32_data or t.int64_data or t.double_data or t.uint64_data
        or t.string_data
    )
