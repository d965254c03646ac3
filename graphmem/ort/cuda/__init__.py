"""onnxruntime-gpu 1.31's CUDA execution provider: partition, copies, stream order, kernel rules."""
