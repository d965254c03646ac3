"""What an onnxruntime session holds, not only what it requests: the CPU arena through the
session's life (creation, run 1, the memory pattern's runs), and the session options that move it.

* :mod:`graphmem.ort.held.options` — :class:`SessionOptions`, onnxruntime's names and defaults;
* :mod:`graphmem.ort.held.pattern` — the memory pattern planner (``mem_pattern_planner.h``);
* :mod:`graphmem.ort.held.prepack` — the weights kernels pre-pack at session creation;
* :mod:`graphmem.ort.held.life` — creation and runs replayed through the arena.

The arena itself is :class:`graphmem.ort.arena.BfcArena`. :func:`graphmem.analysis.held.arena_figures`
reads an :class:`~graphmem.analysis.Analysis` through these.
"""
