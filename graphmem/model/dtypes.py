"""Element sizes of ONNX tensor types, stated once.

Sizes are in bits so that packed types are exact: int4/uint4/float4 take 4 bits per element and a
tensor of them takes ceil(n * 4 / 8) bytes, as ONNX stores them (two per byte). ``bool`` takes one
byte, as onnxruntime stores it. ``string`` has no fixed size in a file: a string weight's bytes
are *unknown*, never 0. A string *tensor* of a session is an array of ``std::string`` objects:
:data:`STRING_OBJECT_BYTES` each in the arena (``Tensor::CalculateTensorStorageSize`` with
``sizeof(std::string)``, ``core/framework/tensor.cc``), the characters of strings longer than the
small-string buffer (15 bytes) on the heap, outside the arena.
"""

from __future__ import annotations

from onnx import TensorProto

from graphmem.errors import UsageError

__all__ = [
    "STRING_OBJECT_BYTES",
    "element_bits",
    "tensor_bytes",
    "dtype_name",
    "is_float",
    "is_integer",
    "parse_dtype",
]

#: ``sizeof(std::string)`` in onnxruntime's x86-64 builds (libstdc++ and MSVC; libc++, macOS: 24).
STRING_OBJECT_BYTES = 32

_BITS: dict[int, int] = {
    TensorProto.FLOAT: 32,
    TensorProto.UINT8: 8,
    TensorProto.INT8: 8,
    TensorProto.UINT16: 16,
    TensorProto.INT16: 16,
    TensorProto.INT32: 32,
    TensorProto.INT64: 64,
    TensorProto.BOOL: 8,
    TensorProto.FLOAT16: 16,
    TensorProto.DOUBLE: 64,
    TensorProto.UINT32: 32,
    TensorProto.UINT64: 64,
    TensorProto.COMPLEX64: 64,
    TensorProto.COMPLEX128: 128,
    TensorProto.BFLOAT16: 16,
}
for _name, _bits in (
    ("FLOAT8E4M3FN", 8),
    ("FLOAT8E4M3FNUZ", 8),
    ("FLOAT8E5M2", 8),
    ("FLOAT8E5M2FNUZ", 8),
    ("FLOAT8E8M0", 8),
    ("UINT4", 4),
    ("INT4", 4),
    ("FLOAT4E2M1", 4),
    ("UINT2", 2),
    ("INT2", 2),
):
    if hasattr(TensorProto, _name):
        _BITS[getattr(TensorProto, _name)] = _bits

_FLOATS = {
    TensorProto.FLOAT,
    TensorProto.FLOAT16,
    TensorProto.DOUBLE,
    TensorProto.BFLOAT16,
}
_INTS = {
    TensorProto.UINT8,
    TensorProto.INT8,
    TensorProto.UINT16,
    TensorProto.INT16,
    TensorProto.INT32,
    TensorProto.INT64,
    TensorProto.UINT32,
    TensorProto.UINT64,
}


def element_bits(dtype: int) -> int | None:
    """Bits per element of an ONNX dtype, or None when the size is unknown (string, undefined)."""
    return _BITS.get(dtype)


def tensor_bytes(dtype: int, numel: int) -> int | None:
    """Exact bytes of ``numel`` elements of ``dtype`` (packed types rounded up), None if unknown."""
    bits = _BITS.get(dtype)
    if bits is None:
        return None
    return (numel * bits + 7) // 8


def dtype_name(dtype: int) -> str:
    """Lower-case ONNX name of a dtype ("float", "int64", …), "undefined" for 0."""
    try:
        return TensorProto.DataType.Name(dtype).lower()
    except ValueError:
        return f"dtype{dtype}"


def is_float(dtype: int) -> bool:
    """True for IEEE/bfloat floating types (the ones a precision what-if would cast)."""
    return dtype in _FLOATS


def is_integer(dtype: int) -> bool:
    """True for signed and unsigned integer types."""
    return dtype in _INTS


def parse_dtype(name: str) -> int:
    """"float16", "fp16", "bfloat16", "int8", "float32" … → the ONNX enum; UsageError otherwise."""
    aliases = {"fp16": "float16", "half": "float16", "bf16": "bfloat16", "fp32": "float",
               "float32": "float", "fp64": "double", "float64": "double", "fp8": "float8e4m3fn"}
    key = aliases.get(name.lower(), name.lower())
    for enum_name, value in TensorProto.DataType.items():
        if enum_name.lower() == key and value in _BITS:
            return value
    raise UsageError(f"'{name}' is not a tensor dtype (try float16, bfloat16, int8, float32)")
