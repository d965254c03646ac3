"""The figures of a session's resident memory that graphmem measured once instead of deriving:
one named table, :data:`RESIDENT_CONSTANTS`, written by ``scripts/held_constants.py`` (rerun it
to check them on another machine or runtime; it prints the table to paste here).

Everything else in ``resident_bytes`` is replayed from onnxruntime's and glibc's rules
(:mod:`graphmem.ort.held.loading`, :mod:`graphmem.ort.held.heap`); these are what the replay
cannot see: pages of onnxruntime's own code run for the first time, the buffers below 64 KiB it
keeps (graph, kernels, plans), an intra-op thread's stack and buffers, and the state of the C
allocator in the process the session is created in. A figure resting on them is never called
exact (``session.approximations``, kind ``measured_constant``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ResidentConstants", "RESIDENT_CONSTANTS"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ResidentConstants:
    """Measured by ``script`` on ``date`` with ``runtime`` (see the module doc):

    * ``creation_bytes`` + ``node_bytes`` per node of the graph the session runs: what creating a
      session adds beyond the buffers replayed (onnxruntime's code pages; the graph's nodes, its
      kernels and plans, in blocks below 64 KiB): fitted over the committed and the wheel's light
      models to the measured growth at creation minus the replayed heap's;
    * ``runs_bytes``: what five runs add beyond the regions replayed (kernels' code pages, the
      frame's small buffers): the median of the growth over the runs minus the replayed regions';
    * ``thread_bytes``: what each intra-op thread beyond the first adds (its stack's touched pages,
      its malloc arena, MLAS's per-thread buffers): the slope of the growth over 1, 2 and 4 threads;
    * ``mmap_threshold``: glibc's mmap threshold in the process when the session is created (a
      fresh Python process that imported numpy and onnxruntime and made its inputs: importing
      them freed a mapping, which raised it from 128 KiB);
    * ``sample``: the models the medians were taken over, and the spread of each figure.
    """

    script: str
    date: str
    runtime: str
    creation_bytes: int
    node_bytes: int
    runs_bytes: int
    thread_bytes: int
    mmap_threshold: int
    sample: str


#: The one table (``scripts/held_constants.py``, see :class:`ResidentConstants`).
RESIDENT_CONSTANTS = ResidentConstants(
    script="scripts/held_constants.py",
    date="2026-12-07",
    runtime="onnxruntime 1.31.1 (CPU provider), Python 3.11",
    creation_bytes=8_617_984,
    node_bytes=5_477,
    runs_bytes=1_126_400,
    thread_bytes=143_360,
    mmap_threshold=266_240,
    sample=(
        "creation fit within 206,804 B over 5..1746 nodes, runs 606,208..2,244,608 B, thread 102,400..182,954 B "
        "over static_mlp, tiny_bert, tiny_cnn, tiny_gpt2, tiny_lstm, tiny_unet, light_bvlc_alexnet, "
        "light_densenet121, light_inception_v1, light_inception_v2, light_resnet50, light_shufflenet, "
        "light_squeezenet, light_vgg19, light_zfnet512"
    ),
)
