"""Memory planners. They know nothing about ONNX: their input is buffers and steps.

* :mod:`graphmem.planner.program` — the input: values (size, reuse key) and steps (reads,
  writes, alias and in-place requests), in execution order;
* :mod:`graphmem.ort.allocation` — an emulation of onnxruntime's sequential allocation planner;
* :mod:`graphmem.planner.liveness` — storages and their lifetimes, the lower bound and no-reuse sum;
* :mod:`graphmem.planner.greedy` — offset assignment (greedy by size, as TFLite) for the best arena;
* :mod:`graphmem.planner.check` — the invariant checker the tests run on every plan.
"""

from graphmem.planner.program import Program, Step, Value

__all__ = ["Program", "Step", "Value"]
