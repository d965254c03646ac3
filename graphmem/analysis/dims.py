"""The inputs of one analysis, as a user has them, and the one parser of each option:

* ``--dim NAME=VALUE`` binds a named (symbolic) dim of the graph inputs (:func:`parse_dims`);
* ``--shape INPUT=D0xD1x…`` sets an input's whole shape, overriding named, unnamed (neither value
  nor name), ``-1`` (``dim_value -1``, as paddle2onnx writes dynamic dims) and shared-name dims
  (one ``?`` for both height and width) (:func:`parse_shapes`); for an input that is a sequence of
  tensors, ``--shape INPUT=[D0xD1,…]`` gives the shape of each of its elements (``[]``: empty);
  an optional input takes the binding of what it holds, or ``--shape INPUT=none`` (no value);
* ``--value INPUT=V[,V…]`` gives the values of a small input (integers: sample rates, lengths,
  flags; numbers for a float input: a speed), used by shape and value inference and by ``verify``
  for its feeds (:func:`parse_values`).

A dim may be 0 where onnxruntime accepts it (an empty KV past); negative or absurd dims, unknown
names and values that do not fit the input are errors naming the input. :func:`resolve_inputs`
checks all of it against the model once; the CLI, ``graphmem check`` configurations and the
batch search all parse with these functions; :class:`graphmem.analysis.request.Bindings` carries
what they parsed to the stages."""

from __future__ import annotations

import ast
import math
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphmem.errors import UnboundDimError, UnknownDimError, UsageError
from graphmem.model.loading import Model
from graphmem.model.types import TensorType

__all__ = [
    "MAX_DIM", "INT64_MAX", "parse_dim_value", "split_dim_item", "parse_dims", "parse_shapes", "parse_values",
    "check_dims", "ResolvedInputs", "resolve_inputs", "open_dims", "fixing_input",
    "format_shape", "shape_json", "shape_hint", "inputs_text", "is_sequence_binding",
]

#: Largest value a dim may take; larger ones are rejected as absurd.
MAX_DIM = 1 << 40
INT64_MAX = (1 << 63) - 1


def parse_dim_value(item: str, token: str, *, option: str = "--dim", minimum: int = 0) -> int:
    """One dim value of the ``option`` item ``item``: an integer from ``minimum`` (0: an empty
    past is a valid input) up to :data:`MAX_DIM`."""
    token = token.strip()
    if not re.fullmatch(r"[+-]?[0-9]+", token):
        raise UsageError(f"{option} '{item}': '{token}' is not an integer")
    n = int(token)
    if n > INT64_MAX or n < -INT64_MAX - 1:
        raise UsageError(f"{option} '{item}': {token} overflows int64 (absurdly large; the limit is 2**40)")
    if n < minimum:
        least = "0 or more (0 for an empty past)" if minimum == 0 else f"at least {minimum}"
        raise UsageError(f"{option} '{item}': a dim must be {least}, got {n}")
    if n > MAX_DIM:
        raise UsageError(f"{option} '{item}': {n} is absurdly large (limit 2**40)")
    return n


def split_dim_item(item: str, *, example: str = "batch=8", option: str = "--dim") -> tuple[str, str]:
    """``"NAME=TEXT"`` → (name, text); UsageError when either part is missing. The name is what
    precedes the last ``=`` (names may hold spaces: ``past_sequence_length + sequence_length``)."""
    name, sep, text = item.rpartition("=")
    name, text = name.strip(), text.strip()
    if not sep or not name or not text:
        what = "NAME=VALUE" if option == "--dim" else "INPUT=" + ("D0xD1x..." if option == "--shape" else "V[,V...]")
        raise UsageError(f"{option} '{item}': expected {what}, e.g. {example}")
    return name, text


def parse_dims(items: Iterable[str] | None) -> dict[str, int]:
    """``["batch=8", "seq=128"]`` → ``{"batch": 8, "seq": 128}``; a dim given twice is an error."""
    dims: dict[str, int] = {}
    for item in items or ():
        name, text = split_dim_item(item)
        if name in dims:
            raise UsageError(f"--dim {name} is given twice")
        dims[name] = parse_dim_value(item, text)
    return dims


def parse_shapes(items: Iterable[str] | None) -> dict[str, tuple | None]:
    """``["x=1x3x48x192"]`` → ``{"x": (1, 3, 48, 192)}`` (``x=scalar`` for a rank-0 input);
    ``["s=[2x3,4]"]`` → ``{"s": ((2, 3), (4,))}``: a sequence input's element shapes, ``s=[]``
    an empty sequence; ``["o=none"]`` → ``{"o": None}``: an optional input without a value (an
    optional input with a value takes its tensor's shape or its sequence's element shapes)."""
    shapes: dict[str, tuple | None] = {}
    for item in items or ():
        name, text = split_dim_item(item, example="x=1x3x224x224", option="--shape")
        if name in shapes:
            raise UsageError(f"--shape {name} is given twice")
        if text.lower() == "none":
            shapes[name] = None  # an optional input without a value
        elif text.startswith("[") and text.endswith("]"):
            inner = text[1:-1].strip()
            shapes[name] = tuple(_parse_one_shape(item, e) for e in inner.split(",")) if inner else ()
        else:
            shapes[name] = _parse_one_shape(item, text)
    return shapes


def _parse_one_shape(item: str, text: str) -> tuple[int, ...]:
    text = text.strip()
    tokens = [] if text.lower() == "scalar" else text.lower().split("x")
    return tuple(parse_dim_value(item, t, option="--shape") for t in tokens)


def is_sequence_binding(shape: Sequence[object]) -> bool:
    """Whether a ``shapes`` entry gives a sequence's element shapes (a tuple of shapes)."""
    return bool(shape) and all(isinstance(e, (tuple, list)) for e in shape)


def parse_values(items: Iterable[str] | None) -> dict[str, tuple[int | float, ...]]:
    """``["sr=16000", "lens=3,4", "speed=1.0"]`` → ``{"sr": (16000,), "lens": (3, 4), "speed": (1.0,)}``
    (a token written as an integer stays an int; whether the input takes it is checked later)."""
    values: dict[str, tuple[int | float, ...]] = {}
    for item in items or ():
        name, text = split_dim_item(item, example="sr=16000", option="--value")
        if name in values:
            raise UsageError(f"--value {name} is given twice")
        out: list[int | float] = []
        for token in text.split(","):
            token = token.strip()
            if re.fullmatch(r"[+-]?[0-9]+", token):
                out.append(int(token))
            elif re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", token) and math.isfinite(
                float(token)
            ):
                out.append(float(token))
            else:
                raise UsageError(f"--value '{item}': '{token}' is not a number")
        values[name] = tuple(out)
    return values


def check_dims(model: Model, dims: Mapping[str, int]) -> dict[str, int]:
    """Validate ``--dim`` bindings against the model's inputs; the bound dims (see
    :func:`resolve_inputs`)."""
    return resolve_inputs(model.inputs, dims=dims).dims


#: onnx TensorProto element types --value accepts, with their numpy dtypes.
_INT_TYPES = {
    2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_,
    12: np.uint32, 13: np.uint64,
}
_FLOAT_TYPES = {1: np.float32, 10: np.float16, 11: np.float64}  # onnx.TensorProto FLOAT, FLOAT16, DOUBLE


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedInputs:
    """The checked inputs: every graph input's concrete shape for the run, the named dims that
    are bound (given, or implied by a ``--shape``), and the values given."""

    dims: dict[str, int]
    # every graph input -> its shape in the run (a sequence's: its elements' shapes; an optional
    # without a value: None)
    shapes: dict[str, tuple | None]
    given_shapes: dict[str, tuple | None] = field(default_factory=dict)  # from --shape
    values: dict[str, np.ndarray] = field(default_factory=dict)


def format_shape(shape: Sequence[Any] | None) -> str:
    """``(1, 3, 48)`` -> ``1x3x48`` (a dim without a value prints as N); a sequence's element
    shapes ``((2, 3), (4,))`` -> ``[2x3,4]``; an optional without a value (None) -> ``none``."""
    if shape is None:
        return "none"
    if is_sequence_binding(shape):
        return "[" + ",".join(format_shape(tuple(e)) for e in shape) + "]"
    return "x".join(str(d) if isinstance(d, int) and d >= 0 else "N" for d in shape) or "scalar"


def shape_json(shape: Sequence[object] | None) -> list | None:
    """A ``--shape`` binding in a JSON document: a list (of element shapes for a sequence), null
    for an optional input without a value."""
    return None if shape is None else [list(e) if isinstance(e, (tuple, list)) else e for e in shape]


def inputs_text(shapes: Mapping[str, Sequence[Any] | None], values: Mapping[str, Sequence[int | float]]) -> str:
    """``; shapes x=1x3x48x192; values sr=16000`` for a report's dims line (empty without
    ``--shape``/``--value``)."""
    text = ""
    if shapes:
        text += "; shapes " + ", ".join(f"{k}={format_shape(v if v is None else tuple(v))}" for k, v in shapes.items())
    if values:
        text += "; values " + ", ".join(f"{k}={','.join(map(str, v))}" for k, v in values.items())
    return text


def shape_hint(name: str, declared: Sequence[object]) -> str:
    """A pasteable ``--shape`` option for an input (quoted for a shell where needed)."""
    return "--shape " + shlex.quote(f"{name}={format_shape(declared)}")


def _dim_hint(name: str) -> str:
    return "--dim " + shlex.quote(f"{name}=N")


def _check_dim(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) <= MAX_DIM:
        raise UsageError(f"{what}: a dim must be an integer from 0 to {MAX_DIM} (2**40), got {value!r}")
    return int(value)


def resolve_inputs(
    inputs: Mapping[str, TensorType],
    *,
    dims: Mapping[str, int] | None = None,
    shapes: Mapping[str, Sequence[int] | None] | None = None,
    values: Mapping[str, Sequence[int | float]] | None = None,
) -> ResolvedInputs:
    """Check ``dims``, ``shapes`` and ``values`` against the graph inputs (name -> TensorType).

    Raises :class:`UnknownDimError` for a dim no input has, :class:`UsageError` for an unknown
    input, a shape of the wrong rank or against a fixed dim, a negative or absurd dim, a value
    for an input neither integer nor float, or of the wrong count; :class:`UnboundDimError` (with pasteable
    hints) when an input's shape is still not known.
    """
    dims, shapes, values = dict(dims or {}), dict(shapes or {}), dict(values or {})
    names = ", ".join(inputs) or "none"
    for option, given in (("--shape", shapes), ("--value", values)):
        for name in given:
            if name not in inputs:
                raise UsageError(f"{option} {name}: the model has no input '{name}'; its inputs: {names}")
    given_shapes: dict[str, tuple[int, ...]] = {}  # tensors' (sequences and optionals: below)
    sequences: dict[str, tuple | None] = {}
    for name, shape in shapes.items():
        if _kind(inputs[name]) == "optional_type":
            sequences[name] = _check_optional(name, shape, inputs[name])
            continue
        if shape is None:
            raise UsageError(
                f"--shape {name}=none: input '{name}' is not optional; 'none' is for an optional input without a value"
            )
        if _kind(inputs[name]) == "sequence_type":
            sequences[name] = _check_elements(name, shape, inputs[name].shape)
            continue
        _check_tensor(name, inputs[name], "--shape")
        if is_sequence_binding(shape):
            raise UsageError(
                f"--shape {name}={format_shape(shape)}: input '{name}' is a tensor; [..] is for a sequence input's "
                "elements"
            )
        given_shapes[name] = _check_shape(name, shape, inputs[name].shape)
    known = _named_dims(inputs)
    for name, value in dims.items():
        if name not in known:
            have = ", ".join(known) if known else "none (all input shapes are fixed)"
            raise UnknownDimError(f"--dim {name}: the model has no dim '{name}'; its dims: {have}")
        dims[name] = _check_dim(value, f"--dim {name}={value}")
    bound = dict(dims)
    for name, (dim, value) in _implied(inputs, given_shapes).items():
        if dim in dims and dims[dim] != value:
            raise UsageError(f"--shape {name}: dim '{dim}' is {value} there but --dim {dim}={dims[dim]}")
        bound.setdefault(dim, value)
    for name in known:
        if name not in bound:
            derived = _expression(name, bound)
            if derived is not None:
                bound[name] = _check_dim(derived, f"dim '{name}'")
    arrays = {name: _value_array(name, v, inputs[name], given_shapes, bound) for name, v in values.items()}
    for name, a in arrays.items():
        if name not in given_shapes and _bound(inputs[name].shape, bound) is None:
            given_shapes[name] = tuple(a.shape)
    run_shapes: dict[str, tuple | None] = dict(sequences)
    given_all: dict[str, tuple | None] = {**given_shapes, **sequences}
    missing: list[str] = []
    open_inputs: list[tuple[str, Sequence[object] | None]] = []
    for name, t in inputs.items():
        if name in given_all:
            run_shapes[name] = given_all[name]
            continue
        if _kind(t) != "tensor":
            continue  # a sequence, map or optional: no tensor shape to bind (its values stay unresolved)
        declared = t.shape
        if declared is None:
            open_inputs.append((name, None))
            continue
        if any(d is None or (isinstance(d, int) and d < 0) for d in declared):
            open_inputs.append((name, declared))
            continue
        missing += [d for d in declared if isinstance(d, str) and d not in bound and d not in missing]
        if all(not isinstance(d, str) or d in bound for d in declared):
            run_shapes[name] = tuple(bound[d] if isinstance(d, str) else d for d in declared)
    unbound = ""
    if missing:
        hint = " ".join(_dim_hint(d) for d in missing)
        unbound = f"unbound symbolic dims: {', '.join(missing)} (bind them with {hint}"
    if open_inputs:
        name, open_shape = open_inputs[0]
        what = "no shape" if open_shape is None else f"dims with neither a value nor a name {_declared(open_shape)}"
        hint = shape_hint(name, open_shape) if open_shape is not None else f"--shape {shlex.quote(name + '=D0xD1')}"
        more = f"; also {unbound})" if unbound else ""
        raise UnboundDimError(f"input '{name}' has {what}: set its whole shape with {hint}{more}")
    if unbound:
        raise UnboundDimError(f"{unbound}, or ask for formulas with --symbolic)")
    return ResolvedInputs(dims=bound, shapes=run_shapes, given_shapes=given_all, values=arrays)


def open_dims(
    inputs: Mapping[str, TensorType],
    *,
    dims: Mapping[str, int] | None = None,
    shapes: Mapping[str, Sequence[int] | None] | None = None,
    values: Mapping[str, Sequence[int | float]] | None = None,
) -> tuple[str, ...]:
    """The named dims still to bind: used by an input whose shape neither ``shapes`` nor
    ``values`` fixes, and neither given in ``dims`` nor implied by a ``--shape``. A dim named by
    arithmetic on other input dims (``past + seq``) is not listed: binding those derives it.
    Checks nothing else (:func:`resolve_inputs` does)."""
    shapes, values, dims = dict(shapes or {}), dict(values or {}), dict(dims or {})
    given = {n: tuple(s) for n, s in shapes.items() if n in inputs and s is not None}
    bound = dict(dims)
    for _, (dim, value) in _implied(inputs, given).items():
        bound.setdefault(dim, value)
    named = set(_named_dims(inputs))
    out: dict[str, None] = {}
    for name, t in inputs.items():
        if name in shapes or name in values:
            continue
        for d in t.shape or ():
            operands = _operands(d) if isinstance(d, str) else None
            if operands is not None and operands <= named:
                continue  # derived once its operands are bound (they are listed themselves)
            if isinstance(d, str) and d not in bound:
                out.setdefault(d)
    return tuple(out)


def _operands(name: str) -> set[str] | None:
    """The dim names an arithmetic dim name (``past + seq``) is made of; None for a plain name."""
    try:
        tree = ast.parse(name, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(tree, ast.BinOp):
        return None
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def fixing_input(
    inputs: Mapping[str, TensorType],
    dim: str,
    *,
    shapes: Mapping[str, Sequence[object] | None] | None = None,
    values: Mapping[str, Sequence[int | float]] | None = None,
) -> tuple[str, str] | None:
    """An input declaring the named dim ``dim`` whose shape ``--shape`` sets or whose values
    ``--value`` gives (so no binding of ``dim`` changes it): (input, the option as typed,
    ``--shape x=1x3x48x192``), or None."""
    for option, given in (("--shape", shapes or {}), ("--value", values or {})):
        for name, items in given.items():
            if dim in (getattr(inputs.get(name), "shape", None) or ()):
                text = (
                    format_shape(items if items is None else tuple(items))
                    if option == "--shape"
                    else ",".join(map(str, items or ()))
                )
                return name, f"{option} {name}={text}"
    return None


def _kind(t: TensorType) -> str:
    return getattr(t, "kind", "tensor")


def _check_tensor(name: str, t: TensorType, option: str) -> None:
    kind = _kind(t)
    if kind != "tensor":
        what = kind.removesuffix("_type")
        article = "an" if what[:1] in "aeiou" else "a"
        raise UsageError(
            f"{option} {name}: input '{name}' is {article} {what}, not a tensor; {option} is for tensor inputs"
        )


def _expression(name: str, dims: Mapping[str, int]) -> int | None:
    """The value of a dim named by arithmetic on other dims (optimum names the attention mask's
    length ``past_sequence_length + sequence_length``) once they are bound; None otherwise."""
    import ast

    try:
        tree = ast.parse(name, mode="eval").body
    except SyntaxError:
        return None
    ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.FloorDiv: lambda a, b: a // b if b else None}

    def value(node: ast.AST) -> int | None:
        if isinstance(node, ast.Name):
            return dims.get(node.id)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            a, b = value(node.left), value(node.right)
            return None if a is None or b is None else ops[type(node.op)](a, b)
        return None

    return value(tree) if isinstance(tree, ast.BinOp) else None


def _declared(shape: Sequence[object]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _named_dims(inputs: Mapping[str, TensorType]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for t in inputs.values():
        for d in t.shape or ():
            if isinstance(d, str):
                seen.setdefault(d)
    return tuple(seen)


def _check_elements(name: str, shape: Sequence[Any], declared: Sequence[object] | None) -> tuple[tuple[int, ...], ...]:
    """A sequence input's element shapes, each checked against the element shape the file declares."""
    if shape and not is_sequence_binding(shape):
        raise UsageError(f"--shape {name}: input '{name}' is a sequence of tensors: give its elements' shapes, "
                         f"e.g. --shape {name}=[2x3,4x3] (or {name}=[] for an empty one)")
    checked = []
    for k, e in enumerate(shape):
        try:
            checked.append(_check_shape(name, tuple(e), declared))
        except UsageError as exc:
            raise UsageError(f"{exc} (element {k} of --shape {name}={format_shape(shape)})") from None
    return tuple(checked)


def _check_optional(name: str, shape: Sequence[Any] | None, t: TensorType) -> tuple | None:
    """An optional input's binding: None (``o=none``: no value), the shape of the tensor it holds,
    or the element shapes of the sequence it holds."""
    if shape is None:
        return None
    holds = getattr(t, "holds", "")
    if holds == "sequence_type":
        return _check_elements(name, shape, t.shape)
    if holds != "tensor":
        raise UsageError(f"--shape {name}: input '{name}' is an optional of a type graphmem cannot bind (only none)")
    if is_sequence_binding(shape):
        raise UsageError(f"--shape {name}={format_shape(shape)}: input '{name}' is an optional tensor; give its shape "
                         f"(--shape {name}=D0xD1) or --shape {name}=none; [..] is for a sequence's elements")
    return _check_shape(name, shape, t.shape)


def _check_shape(name: str, shape: Sequence[object], declared: Sequence[object] | None) -> tuple[int, ...]:
    text = "x".join(str(d) for d in shape)
    dims = tuple(_check_dim(d, f"--shape {name}={text}") for d in shape)
    if declared is not None:
        if len(declared) != len(dims):
            raise UsageError(
                f"--shape {name}={text}: the input has {len(declared)} dims {_declared(declared)}, not {len(dims)}"
            )
        for axis, (d, v) in enumerate(zip(declared, dims)):
            if isinstance(d, int) and d >= 0 and d != v:
                raise UsageError(f"--shape {name}={text}: dim {axis} is fixed at {d} in the file")
    return dims


def _implied(inputs: Mapping[str, TensorType], given: Mapping[str, tuple[int, ...]]) -> dict[str, tuple[str, int]]:
    """Named dims that ``--shape`` gives one value everywhere (input -> (dim, value)); a name
    given two values (``?`` for height and width) binds nothing."""
    values: dict[str, set[int]] = {}
    where: dict[str, str] = {}
    for name, shape in given.items():
        if _kind(inputs[name]) != "tensor":
            continue  # a sequence's element shapes bind no dim
        for d, v in zip(inputs[name].shape or (), shape):
            if isinstance(d, str):
                values.setdefault(d, set()).add(v)
                where.setdefault(d, name)
    return {where[d]: (d, next(iter(vs))) for d, vs in values.items() if len(vs) == 1}


def _bound(shape: Sequence[object] | None, dims: Mapping[str, int]) -> tuple[int, ...] | None:
    """``shape`` with its named dims bound from ``dims``; None unless every dim is then known."""
    if shape is None:
        return None
    out: list[int] = []
    for d in shape:
        if isinstance(d, int) and d >= 0:
            out.append(d)
        elif isinstance(d, str) and d in dims:
            out.append(dims[d])
        else:
            return None
    return tuple(out)


def _value_array(
    name: str,
    value: Sequence[int | float],
    t: TensorType,
    given: Mapping[str, tuple[int, ...]],
    dims: Mapping[str, int],
) -> np.ndarray:
    _check_tensor(name, t, "--value")
    dtype = _INT_TYPES.get(t.dtype) or _FLOAT_TYPES.get(t.dtype)
    if dtype is None:
        raise UsageError(
            f"--value {name}: input '{name}' is not an integer or float tensor; --value is for integer and float inputs"
        )
    items = list(value)
    numbers = (int, np.integer) if dtype in _INT_TYPES.values() else (int, float, np.integer, np.floating)
    if not items or any(isinstance(v, bool) or not isinstance(v, numbers) for v in items):
        kind = "integers" if dtype in _INT_TYPES.values() else "numbers"
        raise UsageError(f"--value {name}: expected {kind}, e.g. --value {name}={16000 if kind == 'integers' else 1.0}")
    if dtype in _FLOAT_TYPES.values():
        top = float(np.finfo(dtype).max)
        if any(not math.isfinite(float(v)) or abs(float(v)) > top for v in items):
            raise UsageError(f"--value {name}: a value does not fit the input's {np.dtype(dtype).name}")
    declared = t.shape
    bound = _bound(declared, dims)
    if name in given:
        shape = given[name]
    elif bound is not None:
        shape = bound
    elif declared is not None and len(declared) == 1:
        shape = (len(items),)
    elif declared is None:
        shape = (len(items),) if len(items) > 1 else ()
    else:
        raise UsageError(f"--value {name}: give its shape too ({shape_hint(name, declared)})")
    if math.prod(shape) != len(items):
        raise UsageError(
            f"--value {name}: {len(items)} values for an input of shape {format_shape(shape)} ({math.prod(shape)} "
            "values)"
        )
    info = np.iinfo(dtype) if dtype in _INT_TYPES.values() and dtype is not np.bool_ else None
    if info is not None and any(not info.min <= v <= info.max for v in items):
        raise UsageError(f"--value {name}: a value does not fit the input's {np.dtype(dtype).name}")
    return np.asarray(items, dtype=dtype).reshape(shape)
