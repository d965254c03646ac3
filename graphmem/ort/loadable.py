"""Would onnxruntime 1.31 load this model? The refusal that is onnxruntime's own, before shapes.

What ONNX itself refuses (unknown ops and attributes, types and shapes that do not infer, bad
payloads) is checked when the file is loaded (:mod:`graphmem.model.validate`); a default-domain
node without a CPU kernel for its types is refused by :func:`graphmem.ort.insert_cast.cpu_session`
(the kernel table of :mod:`graphmem.ort.kernels`). Checked here, before shape inference (which
asks onnx for schemas at the model's opset): an IR version or an opset onnxruntime does not
load (``core/graph/model.cc``: "Unsupported model IR version: 14, max supported IR version: 13";
``core/graph/model_load_utils.h`` ValidateOpsetForDomain: "Current official support for domain
ai.onnx is till opset 26", ai.onnx.ml till 5; measured with onnxruntime 1.31.1). Also here:
the attributes a CPU kernel's constructor enforces (``ORT_ENFORCE``, so session creation fails
although the model is valid ONNX; RNN sizes and layouts, Resize, Upsample and Pad modes):
:data:`CPU_KERNEL_ATTRIBUTES`; and the ONNX domains onnxruntime registers no op of
(:data:`UNREGISTERED_DOMAINS`).

:func:`check_nodes` refuses what depends on the machine the session is made on (measured on
onnx's node test cases, ``accuracy_nodes.py``): StringNormalizer whose locale (``en_US.UTF-8``
unless its ``locale`` attribute says otherwise) this machine does not have, when it changes case or compares stop words
case-insensitively
(``text/string_normalizer.cc`` builds it in the constructor then: "Failed to construct locale";
measured).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Callable, Iterable, Mapping

import onnx
from onnx import helper

from graphmem.errors import InvalidModelError
from graphmem.model.loading import Model
from graphmem.model.walk import all_nodes
from graphmem.optable import OpTable, domain_name, normalize_domain, op_key

__all__ = [
    "CPU_KERNEL_ATTRIBUTES",
    "CPU_KERNEL_NODE_CHECKS",
    "MAX_IR_VERSION",
    "MAX_OPSETS",
    "ORT_SCHEMA_GAPS",
    "UNREGISTERED_DOMAINS",
    "check_cpu_kernel_attributes",
    "check_domains",
    "check_nodes",
    "check_opsets",
]

#: Newest IR version onnxruntime 1.31 loads (model.cc; measured).
MAX_IR_VERSION = 13

#: Newest opset per domain onnxruntime 1.31 loads (ValidateOpsetForDomain; measured).
MAX_OPSETS = {"": 26, "ai.onnx.ml": 5}


#: ONNX domains none of whose ops onnxruntime 1.31 registers (graph resolve fails: "Fatal error:
#: ai.onnx.preview:FlexAttention(-1) is not a registered function/op"; measured on every node test
#: model of onnx 1.23 in these domains: FlexAttention, Adagrad, Adam, Momentum).
UNREGISTERED_DOMAINS = frozenset({"ai.onnx.preview", "ai.onnx.preview.training"})


def check_domains(path: str, nodes: Iterable[onnx.NodeProto], functions: Iterable[onnx.FunctionProto] = (),
                  opsets: Mapping[str, int] | None = None) -> None:
    """Raise :class:`InvalidModelError` for a node of a domain onnxruntime 1.31 has no ops of
    (:data:`UNREGISTERED_DOMAINS`), unless the model defines it as a local function, or with an
    attribute onnxruntime's schema of the op lacks at the model's opset (:data:`ORT_SCHEMA_GAPS`)."""
    local = {(f.domain, f.name) for f in functions}
    for node in all_nodes(nodes):
        domain = normalize_domain(node.domain)
        gap = ORT_SCHEMA_GAPS.get((domain, node.op_type))
        if gap is not None and opsets is not None and opsets.get(domain, 0) >= gap[0]:
            extra = sorted({a.name for a in node.attribute} & gap[1])
            if extra:
                raise InvalidModelError(
                    f"{path}: onnxruntime would refuse to load it: {node.op_type} node '{node.name}' has attribute "
                    f"{extra[0]}, which onnxruntime 1.31's {node.op_type} schema lacks (onnx's is newer)"
                )
        if node.domain in UNREGISTERED_DOMAINS and (node.domain, node.op_type) not in local:
            raise InvalidModelError(
                f"{path}: onnxruntime would refuse to load it: {node.op_type} node '{node.name}' is in domain "
                f"'{node.domain}', none of whose ops onnxruntime 1.31 registers"
            )


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
            name = domain_name(domain)
            raise InvalidModelError(
                f"{path}: onnxruntime would refuse to load it: {name} opset {version} "
                f"(onnxruntime 1.31 loads {name} opsets 1 to {top})"
            )


def _positive(value: object) -> bool:
    return isinstance(value, int) and value > 0


def _given(value: object) -> bool:
    return value is not None


def _zero(value: object) -> bool:
    return value is None or value == 0  # absent: the schema's default, 0


def _one_of(*allowed: str) -> Callable[[object], bool]:
    def test(value: object) -> bool:  # absent: the schema's default, which is allowed
        return value is None or (isinstance(value, bytes) and value.decode("utf-8", "replace") in allowed)

    return test


_RESIZE_MODES = ("nearest", "linear", "cubic")  # tensor/upsamplebase.h StringToUpsampleMode
_RESIZE = (
    ("mode", _one_of(*_RESIZE_MODES), "mode " + ", ".join(_RESIZE_MODES)),
    # tensor/upsamplebase.h StringToCoordinateTransformationMode
    ("coordinate_transformation_mode",
     _one_of("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
             "tf_half_pixel_for_nn", "tf_crop_and_resize"),
     "a coordinate_transformation_mode the ONNX spec lists"),
    # tensor/upsamplebase.h StringToNearestMode (an empty string is taken too; measured)
    ("nearest_mode", _one_of("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", ""),
     "nearest_mode round_prefer_floor, round_prefer_ceil, floor or ceil"),
)

def _zero_or_one(value: object) -> bool:
    return value is None or value in (0, 1)


def _clip_bounds(values: Mapping[str, object]) -> str | None:
    """Clip-6's ``min <= max`` (math/clip.h Clip_6Base; defaults -FLT_MAX and FLT_MAX; NaN fails)."""
    low, high = values.get("min"), values.get("max")
    if low is None and high is None:
        return None
    low = -3.4028234663852886e38 if low is None else low
    high = 3.4028234663852886e38 if high is None else high
    if isinstance(low, float) and isinstance(high, float) and low <= high:
        return None
    return f"min {low!r} and max {high!r} (its CPU kernel needs min <= max)"


_FLOAT8 = (onnx.TensorProto.FLOAT8E4M3FN, onnx.TensorProto.FLOAT8E4M3FNUZ, onnx.TensorProto.FLOAT8E5M2,
           onnx.TensorProto.FLOAT8E5M2FNUZ)


def _cast_saturate(values: Mapping[str, object]) -> str | None:
    """tensor/cast_op.cc Cast: "Attribute saturate is only used for cast to float 8 types" (saturate 0)."""
    if values.get("saturate", 1) == 0 and values.get("to") not in _FLOAT8:
        return (f"saturate 0 with to {values.get('to')!r} "
                "(its CPU kernel takes saturate 0 only for a cast to a float 8 type)")
    return None


#: generator/constant_of_shape_base.h SetValueFromTensorProto: the value types it reads (no float8, int4, string)
_CONSTANT_OF_SHAPE_TYPES = frozenset({
    onnx.TensorProto.BOOL, onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
    onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32, onnx.TensorProto.INT64,
    onnx.TensorProto.UINT8, onnx.TensorProto.UINT16, onnx.TensorProto.UINT32, onnx.TensorProto.UINT64,
    onnx.TensorProto.BFLOAT16,
})


def _constant_of_shape_value(values: Mapping[str, object]) -> str | None:
    """generator/constant_of_shape_base.h ConstantOfShapeBase: a value of one element ("must be a
    single-element tensor"; UnpackTensor reads exactly 1), of a type it reads, not external."""
    t = values.get("value")
    if not isinstance(t, onnx.TensorProto):
        return None
    numel = 1
    for d in t.dims:
        numel *= d
    if numel != 1:
        return f"a value of dims {list(t.dims)} (its CPU kernel needs a single-element tensor)"
    if t.data_type not in _CONSTANT_OF_SHAPE_TYPES:
        return f"a value of data type {t.data_type} (its CPU kernel does not read that type)"
    if t.data_location == onnx.TensorProto.EXTERNAL:
        return "a value in external data (its CPU kernel does not read it)"
    return None


def _positive_or_nan(value: object) -> bool:
    return value is None or (isinstance(value, float) and (value > 0 or value != value))


#: (domain, op) -> a check of all its attributes at once (name -> value): the phrase of the
#: problem, or None.
CPU_KERNEL_NODE_CHECKS: OpTable[Callable[[Mapping[str, object]], str | None]] = OpTable({
    ("", "Clip"): _clip_bounds,
    ("", "Cast"): _cast_saturate,
    ("", "ConstantOfShape"): _constant_of_shape_value,
})

#: (domain, op) -> (attribute, test of its value (None when absent), what the kernel needs): the
#: attribute checks of the CPU kernels' constructors (measured with onnxruntime 1.31.1: the
#: session fails with "... was false"; onnx's checker accepts these models).
CPU_KERNEL_ATTRIBUTES: OpTable[tuple[tuple[str, Callable[[object], bool], str], ...]] = OpTable({
    # rnn/deep_cpu_gru.h DeepCpuGruOp: hidden_size > 0, layout_ == 0
    ("", "GRU"): (("hidden_size", _positive, "a positive hidden_size"), ("layout", _zero, "layout 0")),
    # rnn/lstm_base.h LSTMBase: hidden_size > 0, layout_ == 0
    ("", "LSTM"): (("hidden_size", _positive, "a positive hidden_size"), ("layout", _zero, "layout 0")),
    # rnn/rnn.h RNN<T>: hidden_size given (any value: a non-positive one fails only when it runs), layout_ == 0
    ("", "RNN"): (("hidden_size", _given, "a hidden_size"), ("layout", _zero, "layout 0")),
    ("", "Resize"): _RESIZE,
    ("", "Upsample"): _RESIZE[:1],
    # tensor/padbase.h PadBase: constant, reflect, edge or wrap
    ("", "Pad"): (("mode", _one_of("constant", "reflect", "edge", "wrap"), "mode constant, reflect, edge or wrap"),),
    # math/cumsum.cc CumSum<T>, math/cumprod.cc CumProd<T>: exclusive and reverse 0 or 1
    ("", "CumSum"): (("exclusive", _zero_or_one, "exclusive 0 or 1"), ("reverse", _zero_or_one, "reverse 0 or 1")),
    ("", "CumProd"): (("exclusive", _zero_or_one, "exclusive 0 or 1"), ("reverse", _zero_or_one, "reverse 0 or 1")),
    # llm/attention.cc Attention<T>: "scale_ > 0 || std::isnan(scale_)" (absent: NaN, 1/sqrt(head size))
    ("", "Attention"): (("scale", _positive_or_nan, "a positive scale"),),
    # tensor/grid_sample.h GridSample<T>: mode bilinear|nearest|bicubic below opset 20, linear|nearest|cubic
    # from it (checked here as the union: the opset is not known here), padding_mode zeros|border|reflection
    ("", "GridSample"): (
        ("mode", _one_of("bilinear", "nearest", "bicubic", "linear", "cubic"), "mode linear, nearest or cubic "
         "(bilinear, nearest or bicubic below opset 20)"),
        ("padding_mode", _one_of("zeros", "border", "reflection"), "padding_mode zeros, border or reflection"),
    ),
    # llm/tensorscatter.cc TensorScatter: mode == "linear" || mode == "circular"
    ("", "TensorScatter"): (("mode", _one_of("linear", "circular"), "mode linear or circular"),),
})

#: (domain, op) -> (first opset, attributes): attributes of onnx 1.23's newer schema that
#: onnxruntime 1.31's own schema of the op lacks (it has Attention only up to version 24, which it
#: uses at opsets 25 and 26: "Unrecognized attribute: left_window_size for operator Attention").
#: The whole difference between the two schema sets at the opsets onnxruntime loads, printed by
#: ``scripts/probes/ort_schema_gap.py``.
ORT_SCHEMA_GAPS: OpTable[tuple[int, frozenset[str]]] = OpTable({
    ("", "Attention"): (25, frozenset({"left_window_size", "right_window_size"})),
})


def check_cpu_kernel_attributes(path: str, nodes: Iterable[onnx.NodeProto]) -> None:
    """Raise :class:`InvalidModelError` for a node whose CPU kernel refuses its attributes
    (:data:`CPU_KERNEL_ATTRIBUTES`), naming the node and the attribute."""
    for node in all_nodes(nodes):
        key = op_key(node)
        checks = CPU_KERNEL_ATTRIBUTES.get(key, ())
        if not checks and key not in CPU_KERNEL_NODE_CHECKS:
            continue
        given = {a.name: a for a in node.attribute}
        node_check = CPU_KERNEL_NODE_CHECKS.get(key)
        if node_check is not None:
            problem = node_check({name: helper.get_attribute_value(a) for name, a in given.items()})
            if problem is not None:
                raise InvalidModelError(
                    f"{path}: onnxruntime would refuse to load it: {node.op_type} node '{node.name}' has {problem}"
                )
        for name, test, needed in checks:
            value = helper.get_attribute_value(given[name]) if name in given else None
            if not test(value):
                if isinstance(value, bytes):
                    value = value.decode("utf-8", "replace")
                shown = f"no {name}" if value is None else f"{name} {value!r}"
                raise InvalidModelError(
                    f"{path}: onnxruntime would refuse to load it: {node.op_type} node '{node.name}' has "
                    f"{shown} (its CPU kernel needs {needed})"
                )


def check_nodes(model: Model, *, cpu: bool = True) -> None:
    """Raise :class:`InvalidModelError` for the first node onnxruntime 1.31 refuses that the
    checks above do not cover (module doc: :func:`check_nodes`), bodies of control-flow nodes
    included; ``cpu``: the kernels are the CPU provider's (only theirs are checked)."""
    if not cpu:
        return
    for node in all_nodes(model.graph.node):
        domain = normalize_domain(node.domain)
        where = f"node '{node.name or node.op_type}' ({(domain + ':') if domain else ''}{node.op_type})"
        _check_kernel_construction(node, domain, model.path, where)


def _int_attr(node: onnx.NodeProto, name: str, default: int) -> int:
    return next((a.i for a in node.attribute if a.name == name), default)


def _check_kernel_construction(node: onnx.NodeProto, domain: str, path: str, where: str) -> None:
    """StringNormalizer's constructor without its locale (module doc); the attribute checks of
    the other constructors are :data:`CPU_KERNEL_ATTRIBUTES`."""
    if domain == "" and node.op_type == "StringNormalizer" and _builds_locale(node):
        name = next((a.s.decode("utf-8", "replace") for a in node.attribute if a.name == "locale"), "en_US.UTF-8")
        if _has_locale(name) is False:
            raise InvalidModelError(
                f"{path}: onnxruntime cannot load it on this machine: {where}: its CPU kernel builds the "
                f"locale '{name}' when the session is created and this machine has no such locale "
                "(text/string_normalizer.cc: 'Failed to construct locale'; install it, e.g. locale-gen)"
            )


def _builds_locale(node: onnx.NodeProto) -> bool:
    """StringNormalizer's constructor builds its locale when it changes case, or compares stop
    words case-insensitively (measured on onnxruntime 1.31.1 with one-node models)."""
    action = next((a.s for a in node.attribute if a.name == "case_change_action"), b"NONE")
    stopwords = any(a.name == "stopwords" and len(a.strings) for a in node.attribute)
    return action != b"NONE" or (_int_attr(node, "is_case_sensitive", 0) == 0 and stopwords)


@functools.cache
def _has_locale(name: str) -> bool | None:
    """Whether the C library knows the locale ``name`` (as ``std::locale(name)`` asks it), None
    when that cannot be asked here (not Linux/glibc-like)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        newlocale, freelocale = libc.newlocale, libc.freelocale
    except (OSError, AttributeError):
        return None
    newlocale.restype, newlocale.argtypes = ctypes.c_void_p, [ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p]
    freelocale.argtypes = [ctypes.c_void_p]
    lc_all_mask = 8127  # glibc's LC_ALL_MASK (every category but LC_ALL)
    handle = newlocale(lc_all_mask, name.encode(), None)
    if not handle:
        return False
    freelocale(handle)
    return True
