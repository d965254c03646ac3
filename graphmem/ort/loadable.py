"""Would onnxruntime 1.31 load this model? The refusal that is onnxruntime's own, before shapes.

What ONNX itself refuses (unknown ops and attributes, types and shapes that do not infer, bad
payloads) is checked when the file is loaded (:mod:`graphmem.model.validate`); a default-domain
node without a CPU kernel for its types is refused by :func:`graphmem.ort.insert_cast.cpu_session`
(the kernel table of :mod:`graphmem.ort.kernels`). Checked here, before shape inference (which
asks onnx for schemas at the model's opset): an IR version or an opset onnxruntime does not
load (``core/graph/model.cc``: "Unsupported model IR version: 14, max supported IR version: 13";
``core/graph/model_load_utils.h`` ValidateOpsetForDomain: "Current official support for domain
ai.onnx is till opset 26", ai.onnx.ml till 5; measured with onnxruntime 1.31.1).
"""

from __future__ import annotations

from collections.abc import Mapping

from graphmem.errors import InvalidModelError

__all__ = ["MAX_IR_VERSION", "MAX_OPSETS", "check_opsets"]

#: Newest IR version onnxruntime 1.31 loads (model.cc; measured).
MAX_IR_VERSION = 13

#: Newest opset per domain onnxruntime 1.31 loads (ValidateOpsetForDomain; measured).
MAX_OPSETS = {"": 26, "ai.onnx.ml": 5}


def check_opsets(path: str, opsets: Mapping[str, int], ir_version: int = 0) -> None:
    """Raise :class:`InvalidModelError` for an IR version or an opset onnxruntime 1.31 would refuse."""
    if ir_version > MAX_IR_VERSION:
        raise InvalidModelError(
            f"{path}: onnxruntime would refuse to load it: IR version {ir_version} "
            f"(onnxruntime 1.31 loads IR versions up to {MAX_IR_VERSION})"
        )
    for domain, version in opsets.items():
        top = MAX_OPSETS.get(domain)
        if top is not None and not 1 <= version <= top:
            name = domain or "ai.onnx"
            raise InvalidModelError(
                f"{path}: onnxruntime would refuse to load it: {name} opset {version} "
                f"(onnxruntime 1.31 loads {name} opsets 1 to {top})"
            )
