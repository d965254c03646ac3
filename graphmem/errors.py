"""One error hierarchy for graphmem; the CLI maps it to exit codes in one place (``graphmem.cli``).

Every failure a user can cause (bad file, bad option, unsupported graph) is a ``GraphmemError``
subclass with a one-line message. Anything else reaching the CLI is a bug.
"""

from __future__ import annotations

__all__ = [
    "GraphmemError",
    "UsageError",
    "ModelLoadError",
    "ExternalDataError",
    "GraphStructureError",
    "UnboundDimError",
    "UnknownDimError",
    "ShapeInferenceError",
    "UnsupportedOpError",
    "RuntimeUnavailableError",
    "MeasureError",
    "CorruptProtobufError",
    "InvalidModelError",
    "TensorSizeError",
    "KernelRefusalError",
    "ConfigError",
    "HostProfileError",
    "UnknownDeviceError",
    "FlopsUnavailableError",
    "MissingExtraError",
    "SchemaError",
    "InvariantError",
    "PlanInvariantError",
    "ArenaLimitError",
    "Terminated",
    "Reported",
    "GateFailed",
    "one_line",
    "EXIT_OK",
    "EXIT_GATE_FAILED",
    "EXIT_INPUT_ERROR",
]

#: Exit codes, documented in docs/pages/exit-codes.md: 0 success, 1 a gate failed, 2 usage or input error.
EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_INPUT_ERROR = 2


class Terminated(BaseException):
    """A termination signal (SIGTERM, SIGINT, SIGHUP) arrived: raised where the program was, so
    that every ``with`` block unwinds (private temporary folders are removed) before the process
    exits with ``128 + signum``, the shell's convention. Not an :class:`Exception`: no
    ``except Exception`` swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class Reported(Exception):
    """A command has written its report and printed what failed; only its exit code is left
    (:attr:`exit_code`; ``graphmem check`` with models it could not analyse: 2). The CLI maps it,
    as it maps :class:`GraphmemError`, and prints nothing more. Not a :class:`GraphmemError`."""

    exit_code: int = EXIT_INPUT_ERROR


class GateFailed(Reported):
    """A gate failed: a budget, a ``diff`` threshold, ``verify``'s tolerance, a model that does
    not fit. The only source of exit code 1."""

    exit_code = EXIT_GATE_FAILED


class GraphmemError(Exception):
    """Root of every error graphmem raises on purpose; its message is shown as one line."""

    exit_code: int = EXIT_INPUT_ERROR


class UsageError(GraphmemError):
    """A command-line option or API argument is malformed (bad ``--dim``, bad budget, …)."""


class ModelLoadError(GraphmemError):
    """The path is missing, a directory, empty, not ONNX, or a truncated/corrupt protobuf."""


class ExternalDataError(ModelLoadError):
    """An external-data file is needed (to run the graph) but is missing or too short."""


class GraphStructureError(GraphmemError):
    """The graph is not a DAG, or a node reads a tensor nothing produces."""


class UnboundDimError(GraphmemError):
    """Symbolic dims are left unbound; the message names each and the ``--dim`` that binds it."""


class UnknownDimError(UsageError):
    """A ``--dim`` names a dim the model does not have."""


class ShapeInferenceError(GraphmemError):
    """Shapes could not be inferred (an op from an unknown domain without shapes in the file, …)."""


class UnsupportedOpError(GraphmemError):
    """An op graphmem cannot account for where an answer is required."""


class RuntimeUnavailableError(GraphmemError):
    """onnxruntime (or the requested execution provider) cannot be used on this machine."""


class MeasureError(GraphmemError):
    """onnxruntime ran, but its profile lacks the memory figures a measurement needs."""


class CorruptProtobufError(ModelLoadError):
    """The bytes are not a well-formed protobuf (truncated, or not protobuf at all)."""


class InvalidModelError(ModelLoadError):
    """The file is ONNX, but not a model onnxruntime would load: the checker's or onnxruntime's
    own reason (unknown op or attribute, types or shapes that do not infer, an opset onnxruntime
    does not support, a weight whose data does not match its dims, no CPU kernel for a node)."""


class TensorSizeError(GraphmemError):
    """A tensor (named in the message) would be larger than int64 bytes can count, or larger than
    any machine: its dims are absurd."""


class KernelRefusalError(GraphmemError):
    """onnxruntime's kernel refuses a node's inputs when the session runs, although their shapes
    infer (an index past its table, a window wider than its input, sizes that do not agree): the
    model cannot run at these dims. The message names the node, why, and the range of a bound
    dim it runs in when there is one."""


class ConfigError(UsageError):
    """The ``check`` configuration is missing, not TOML, or has a bad key or value."""


class HostProfileError(UsageError):
    """A host profile file (``--host``, ``GRAPHMEM_HOST``) is missing, not JSON/TOML, or has a bad
    key or value; the message names the file and the problem."""


class UnknownDeviceError(UsageError):
    """``--device`` names no device in the catalog, the devices file or the spec."""


class MissingExtraError(UsageError):
    """An optional dependency (an extra such as ``graphmem[plot]``) is needed and not installed;
    the message names the install command."""


class FlopsUnavailableError(UsageError):
    """A FLOP budget or threshold was given, but the document carries no FLOP count."""


class SchemaError(GraphmemError, ValueError):
    """A document does not match its schema; the message lists the problems with their paths."""


class InvariantError(GraphmemError, ValueError):
    """graphmem broke one of its own invariants (an op table given a key twice, a cost of an
    unknown outcome, a timeline whose parts do not add up to the figure it draws): a bug in
    graphmem, never a user error. A ValueError too, as the checks it replaces raised."""


class PlanInvariantError(InvariantError):
    """A plan broke an invariant: a bug in a planner, never a user error."""


class ArenaLimitError(GraphmemError):
    """The arena's ``max_mem`` (a session option) is too small for what the session allocates:
    onnxruntime would fail the same request."""


def one_line(text: str) -> str:
    """``text`` with every control or invisible formatting character escaped (a tensor named
    ``a\\nb`` is shown as ``a\\nb``, never as two lines; terminal escapes are shown, not run)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text.strip())
