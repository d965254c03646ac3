"""Stage 1–2: read the file (never its weight bytes), typed tensors, the op graph, the planner's
input. Runtime-independent: nothing here imports onnxruntime or knows its rules."""
