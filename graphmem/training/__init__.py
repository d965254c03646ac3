"""Training memory of an ONNX training-mode export: weights, gradients, optimizer state,
tensors autograd saves for backward, and the peak of each phase of one step.

The stages, in the order the estimate runs them:

* :mod:`~graphmem.training.classify` — trainable weights, weight preprocessing, requires-grad;
* :mod:`~graphmem.training.patterns` — the graph as PyTorch runs it (fused GELU, views);
* :mod:`~graphmem.training.saved` — the saved-tensor rules table, keyed by (domain, op_type);
* :mod:`~graphmem.training.kernels` — the CPU kernels' temporaries (oneDNN, ATen): one table,
  every rule reading the host profile (:mod:`graphmem.host`);
* :mod:`~graphmem.training.phases` — forward and backward passes as planner programs;
* :mod:`~graphmem.training.optimizer` — optimizer state, step temporaries, mixed precision;
* :mod:`~graphmem.training.estimate` — the pipeline and its typed result;
* :mod:`~graphmem.training.report` — table and JSON.

::

    from graphmem.training import estimate_training
    est = estimate_training("model.onnx", dims={"batch": 16}, optimizer="adamw")
    est.step_peak_bytes, est.peak_phase
"""

from graphmem.training.estimate import (
    LayerSaved,
    PhasePeak,
    SavedStorageInfo,
    TrainingConfig,
    TrainingEstimate,
    estimate_training,
    estimate_training_analysis,
)
from graphmem.training.optimizer import GRAD_MODES, OPTIMIZERS, PRECISIONS

__all__ = [
    "GRAD_MODES",
    "OPTIMIZERS",
    "PRECISIONS",
    "LayerSaved",
    "PhasePeak",
    "SavedStorageInfo",
    "TrainingConfig",
    "TrainingEstimate",
    "estimate_training",
    "estimate_training_analysis",
]
