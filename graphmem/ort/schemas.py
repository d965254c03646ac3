"""The op schemas onnxruntime registers beyond onnx's own, read from the installed onnxruntime
(imported lazily through :mod:`graphmem.ort.runtime`)."""

from __future__ import annotations

import functools

import onnx
import onnx.defs

from graphmem.optable import is_default_domain

__all__ = ["onnx_domain_contrib_ops"]


@functools.cache
def onnx_domain_contrib_ops() -> frozenset[tuple[str, int]]:
    """(op_type, since_version) of the ops onnxruntime registers in the ONNX domain beyond onnx's
    own schemas (``core/graph/contrib_ops/onnx_deprecated_operators.cc`` and ``contrib_defs.cc``:
    LayerNormalization-1 and SimplifiedLayerNormalization-1, which onnxruntime-genai's builder
    writes, ScaledTanh, Crop, …); empty without onnxruntime. Read from the installed onnxruntime's
    schema registry (``get_all_operator_schema``)."""
    from graphmem.errors import RuntimeUnavailableError
    from graphmem.ort.runtime import onnxruntime

    try:
        schemas = onnxruntime().capi.onnxruntime_pybind11_state.get_all_operator_schema()
    except (RuntimeUnavailableError, AttributeError):
        return frozenset()
    out = set()
    for schema in schemas:
        if is_default_domain(schema.domain):
            try:
                known = onnx.defs.get_schema(schema.name, schema.since_version, "").since_version == schema.since_version
            except onnx.defs.SchemaError:
                known = False
            if not known:
                out.add((schema.name, schema.since_version))
    return frozenset(out)
