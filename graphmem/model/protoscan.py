"""Read an ONNX file's structure without reading its weight bytes.

``onnx.load`` parses every weight into the protobuf (hundreds of MB for a GPT-2). graphmem needs
only each weight's name, dtype and dims. This module walks the protobuf *wire format* of the
file (memory-mapped, so skipped pages are never read): it copies every field except the payloads
of large initializers (``raw_data`` and the typed ``*_data`` fields of TensorProto), then lets
protobuf parse the small remainder. Small initializers are kept whole: shape inference needs
their values (Reshape targets, Slice bounds).

Wire format: each field is a varint tag ``(number << 3) | wire_type``; wire type 0 is a varint,
1 a fixed 64-bit value, 2 a varint length and that many bytes, 5 a fixed 32-bit value.
"""

from __future__ import annotations

import math
import mmap
from pathlib import Path

import onnx

from graphmem.errors import CorruptProtobufError

__all__ = ["read_stripped"]

_MODEL_GRAPH = 7  # ModelProto.graph
_GRAPH_INITIALIZER = 5  # GraphProto.initializer
_TENSOR_DIMS = 1
_TENSOR_NAME = 8
_TENSOR_PAYLOADS = frozenset({4, 5, 6, 7, 9, 10, 11})  # float/int32/string/int64/raw/double/uint64


def read_stripped(
    path: Path, keep_elements: int, *, skipped: dict[bytes, tuple[int, int]] | None = None
) -> onnx.ModelProto:
    """Parse the model at ``path`` with payloads of initializers above ``keep_elements`` dropped.

    ``skipped``, when given, receives for each dropped payload the tensor's raw name (bytes, as
    in the file) -> (payload field number, payload bytes): what the tensor held, to check against
    its dims without reading it.
    """
    problem = None
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        data = memoryview(mm)
        try:
            stripped = _strip_model(data, keep_elements, {} if skipped is None else skipped)
        except CorruptProtobufError as exc:
            problem = str(exc)  # leave the except block: its traceback holds views of the map
        data.release()  # no view of the map is alive any more (the mmap can close)
    if problem is not None:
        raise CorruptProtobufError(problem)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(bytes(stripped))
    except Exception as exc:  # noqa: BLE001 - protobuf raises DecodeError and friends
        raise CorruptProtobufError(str(exc) or type(exc).__name__) from None
    return model


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise CorruptProtobufError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise CorruptProtobufError("varint too long")


def _fields(buf: memoryview):
    """Yield (field number, wire type, field start, value start, field end) for each field."""
    pos, n = 0, len(buf)
    while pos < n:
        start = pos
        tag = buf[pos]
        if tag < 0x80:  # a one-byte varint (fields 1 to 15): most tags, read inline
            pos += 1
        else:
            tag, pos = _varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise CorruptProtobufError("field number 0")
        if wire == 0:
            value = pos
            _, pos = _varint(buf, pos)
            yield number, wire, start, value, pos
            continue
        if wire == 1:
            value, end = pos, pos + 8
        elif wire == 5:
            value, end = pos, pos + 4
        elif wire == 2:
            if pos < n and buf[pos] < 0x80:  # a length below 128, read inline
                length, value = buf[pos], pos + 1
            else:
                length, value = _varint(buf, pos)
            end = value + length
        else:
            raise CorruptProtobufError(f"unsupported wire type {wire}")
        if end > n:
            raise CorruptProtobufError("truncated: a field runs past the end of the data")
        pos = end
        yield number, wire, start, value, end


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _length_delimited(number: int, payload: bytes | bytearray) -> bytes:
    return _encode_varint((number << 3) | 2) + _encode_varint(len(payload)) + bytes(payload)


def _strip_model(buf: memoryview, keep: int, skipped: dict[bytes, tuple[int, int]]) -> bytearray:
    out = bytearray()
    for number, wire, start, value, end in _fields(buf):
        if number == _MODEL_GRAPH and wire == 2:
            out += _length_delimited(number, _strip_graph(buf[value:end], keep, skipped))
        else:
            out += buf[start:end]
    return out


def _strip_graph(buf: memoryview, keep: int, skipped: dict[bytes, tuple[int, int]]) -> bytearray:
    out = bytearray()
    kept = 0  # fields from here to the current one are copied as they are, in one slice
    for number, wire, start, value, end in _fields(buf):
        if number == _GRAPH_INITIALIZER and wire == 2:
            tensor = buf[value:end]
            if _numel(tensor) > keep:
                out += buf[kept:start]
                out += _length_delimited(number, _strip_tensor(tensor, skipped))
                kept = end
    out += buf[kept:]
    return out


def _numel(tensor: memoryview) -> int:
    dims: list[int] = []
    for number, wire, _start, value, end in _fields(tensor):
        if number != _TENSOR_DIMS:
            continue
        if wire == 0:
            dims.append(_varint(tensor, value)[0])
        elif wire == 2:  # packed
            pos = value
            while pos < end:
                d, pos = _varint(tensor, pos)
                dims.append(d)
    return math.prod(dims)


def _strip_tensor(tensor: memoryview, skipped: dict[bytes, tuple[int, int]]) -> bytearray:
    out = bytearray()
    name = b""
    payload: tuple[int, int] | None = None
    for number, wire, start, value, end in _fields(tensor):
        if number not in _TENSOR_PAYLOADS:
            out += tensor[start:end]
            if number == _TENSOR_NAME and wire == 2:
                name = bytes(tensor[value:end])
        elif wire == 2:
            length = end - value
            payload = (number, length + (payload[1] if payload and payload[0] == number else 0))
    if payload is not None:
        skipped[name] = payload
    return out
