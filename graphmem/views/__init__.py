"""What is derived from an :class:`~graphmem.analysis.pipeline.Analysis`: reports, layers, KV cache,
formulas, roofline, devices, output formats."""
