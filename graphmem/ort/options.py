"""The SessionOptions of every onnxruntime session graphmem builds: the measurement sessions of
``verify`` and the session that writes the graph onnxruntime optimizes (``--graph-opt``,
:mod:`graphmem.ort.optimized`). One place, so that a prediction and its measurement are made
under the same options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphmem.errors import UsageError

if TYPE_CHECKING:
    import onnxruntime

__all__ = ["GRAPH_OPT_LEVELS", "session_options"]

#: ``--graph-opt`` levels, ORT_DISABLE_ALL .. ORT_ENABLE_ALL.
GRAPH_OPT_LEVELS = ("none", "basic", "extended", "all")


def session_options(
    graph_opt: str,
    threads: int,
    profile: bool,
    optimized_path: str | None,
    *,
    mem_pattern: bool = True,
) -> onnxruntime.SessionOptions:
    """SessionOptions for a measurement session.

    ``graph_opt`` is one of none|basic|extended|all (ORT_DISABLE_ALL ..
    ORT_ENABLE_ALL); ``threads`` is the intra-op thread count (0 = ORT's
    default); ``optimized_path`` makes ORT write the optimized model there;
    ``mem_pattern`` mirrors ``SessionOptions.enable_mem_pattern`` (ORT default
    True), which changes how runs after the first one allocate.
    """
    from graphmem.ort.runtime import onnxruntime as _runtime

    ort = _runtime()
    levels = {
        "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    if graph_opt not in levels:
        raise UsageError(
            f"unknown graph optimization level {graph_opt!r}; expected one of {', '.join(GRAPH_OPT_LEVELS)}"
        )
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise UsageError(f"threads must be an int >= 0 (0 = onnxruntime default), got {threads!r}")
    options = ort.SessionOptions()
    options.graph_optimization_level = levels[graph_opt]
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.enable_mem_pattern = mem_pattern
    options.enable_profiling = profile
    options.log_severity_level = 3  # errors only; graphmem.ort.runtime captures what is still printed
    if optimized_path is not None:
        options.optimized_model_filepath = str(optimized_path)
    return options
