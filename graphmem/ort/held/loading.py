"""What creating and running a CPU session asks of the C allocator, in order: the calls glibc sees
for large buffers (:class:`SystemCall`), which :class:`graphmem.ort.held.heap.Heap` replays into
the process's resident memory.

Traced on onnxruntime 1.31.1 (``malloc``/``free``/``aligned_alloc`` interposed, every buffer of
64 KiB or more; ``scripts/held_constants.py --trace`` reproduces the trace), from the sources
named per phase:

1. **reading the file** (``Model::Load``, protobuf's parser): a read buffer of the file's size up
   to 4 MiB; each initializer's data as a string of its bytes plus one (a string beyond
   50,000,000 bytes grows from that by doubling, each step a new string, the old one freed);
   the read buffer is freed when parsing ends;
2. **the graph takes the initializers** (``Graph::Graph``, ``utils::TensorProtoWithExternalDataToTensorProto``:
   in-memory external data): in the file's order, each initializer above 127 bytes is copied into a
   buffer of its own (``aligned_alloc(64, bytes)``) and its string freed; external data stays in
   its file (mapped when the session state reads it);
3. **the optimizers** (level above ``none``): an initializer a pass makes (a name the optimized
   graph has and the file has not: NCHWc re-laid-out filters, fused weights) costs four buffers of
   its size, in the order the pass makes them (``Initializer`` unpacks into an aligned buffer, the
   new data and its ``TensorProto`` string are two plain ones, the graph's copy an aligned one,
   ``graph_utils::AddInitializer``), the first three freed at once; before them constant folding
   (``constant_folding.cc``) computes each node whose inputs are all constant with its kernel,
   into an aligned buffer that becomes the initializer; the initializers the optimized graph no
   longer has (the file's, and folded ones a later pass rewrote) are freed when the graph drops
   them, after the passes;
4. **the session state** (``SessionState::FinalizeSessionStateImpl``): with the memory pattern
   and ``session.disable_prepacking``, one block for every initializer is reserved but never
   written (the tensors keep the graph's buffers: one page of it is resident); each weight a
   kernel pre-packs gets its packed buffers (``Reserve``: ``aligned_alloc(64, bytes)``), and an
   initializer every use of which was pre-packed is freed
   (:func:`graphmem.ort.held.prepack.session_creation` gives both, in order);
5. **the runs**: each region the arena adds (``BFCArena::Extend``: ``aligned_alloc(64, size)``),
   then its chunk handles (``RegionManager``, one 8-byte handle per 256 bytes: ``size / 32`` bytes,
   all written); a region's pages become resident as tensors are written into them
   (:meth:`graphmem.ort.arena.BfcArena.touched`).

Buffers below 64 KiB (the graph's nodes, kernels, shapes) are not replayed: what they add is
measured once (:data:`graphmem.ort.held.constants.RESIDENT_CONSTANTS`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from graphmem.ort.held.heap import Block, Heap

__all__ = [
    "SystemCall",
    "Weight",
    "READ_BUFFER_MAX",
    "STRING_STEP",
    "SMALL_INITIALIZER_MAX",
    "parse_calls",
    "graph_calls",
    "rewrite_calls",
    "session_calls",
    "region_calls",
    "replay",
]

#: The read buffer of ``Model::Load`` (traced: the file's size, at most 4 MiB).
READ_BUFFER_MAX = 4 << 20
#: A string field of more than this many bytes is read in steps (traced: 50,000,000 bytes, then doubled).
STRING_STEP = 50_000_000
#: ``utils::kSmallTensorExternalDataThreshold``: initializers up to this many bytes are not copied
#: into a buffer of their own (:mod:`graphmem.ort.held.prepack`).
SMALL_INITIALIZER_MAX = 127
_ALIGNED = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemCall:
    """One call to the C allocator: ``malloc`` (``align`` 16, else ``aligned_alloc``) of ``size``
    bytes under ``key``, ``touch`` of them written at once; or ``free`` of ``key``."""

    kind: str  # "malloc" | "free"
    key: str
    size: int = 0
    align: int = 16
    touch: int | None = None  # None: all of it


@dataclass(frozen=True, slots=True, kw_only=True)
class Weight:
    """An initializer as loading sees it: its name, bytes, and whether its data is external."""

    name: str
    nbytes: int
    external: bool = False


def _string_steps(nbytes: int) -> list[int]:
    """The sizes protobuf allocates, in turn, to read a string of ``nbytes`` (each step's string
    replaces the last)."""
    if nbytes <= STRING_STEP:
        return [nbytes + 1]
    steps, cap = [], STRING_STEP
    while True:
        steps.append(cap + 1)
        if cap >= nbytes:
            return steps
        cap *= 2


def parse_calls(weights: Sequence[Weight], file_size: int) -> list[SystemCall]:
    """Phase 1: the read buffer and each initializer's string (freed later by :func:`graph_calls`)."""
    calls = [SystemCall(kind="malloc", key="read-buffer", size=min(file_size, READ_BUFFER_MAX))]
    for w in weights:
        if w.external or w.nbytes <= 0:
            continue
        steps = _string_steps(w.nbytes)
        for i, size in enumerate(steps):
            calls.append(SystemCall(kind="malloc", key=f"string:{w.name}:{i}", size=size))
            if i:
                calls.append(SystemCall(kind="free", key=f"string:{w.name}:{i - 1}"))
    calls.append(SystemCall(kind="free", key="read-buffer"))
    return calls


def graph_calls(weights: Sequence[Weight]) -> list[SystemCall]:
    """Phase 2: each initializer above 127 bytes copied into its own aligned buffer, its string freed."""
    calls: list[SystemCall] = []
    for w in weights:
        if w.external or w.nbytes <= 0:
            continue
        last = f"string:{w.name}:{len(_string_steps(w.nbytes)) - 1}"
        if w.nbytes > SMALL_INITIALIZER_MAX:
            calls.append(SystemCall(kind="malloc", key=f"init:{w.name}", size=w.nbytes, align=_ALIGNED))
        calls.append(SystemCall(kind="free", key=last))
    return calls


def rewrite_calls(
    made: Sequence[Weight], dropped: Iterable[Weight], folded: Sequence[Weight] = (),
) -> list[SystemCall]:
    """Phase 3: constant folding's outputs (``folded``, in the file's node order: each computed by
    its kernel into an aligned buffer that becomes the initializer), the initializers the other
    passes make (``made``: four buffers each, one kept), then the initializers the optimized graph
    no longer has (``dropped``: the file's, and folded ones a later pass replaced) freed."""
    calls: list[SystemCall] = [
        SystemCall(kind="malloc", key=f"init:{w.name}", size=w.nbytes, align=_ALIGNED)
        for w in folded if w.nbytes > SMALL_INITIALIZER_MAX
    ]
    for w in made:
        if w.nbytes <= SMALL_INITIALIZER_MAX:
            continue
        n = w.nbytes
        calls += [
            SystemCall(kind="malloc", key=f"unpack:{w.name}", size=n, align=_ALIGNED),
            SystemCall(kind="malloc", key=f"data:{w.name}", size=n),
            SystemCall(kind="malloc", key=f"proto:{w.name}", size=n + 1),
            SystemCall(kind="malloc", key=f"init:{w.name}", size=n, align=_ALIGNED),
            SystemCall(kind="free", key=f"proto:{w.name}"),
            SystemCall(kind="free", key=f"data:{w.name}"),
            SystemCall(kind="free", key=f"unpack:{w.name}"),
        ]
    calls += [SystemCall(kind="free", key=f"init:{w.name}") for w in dropped
              if not w.external and w.nbytes > SMALL_INITIALIZER_MAX]
    return calls


def session_calls(
    packed: Sequence[tuple[str, int, str]], released: Iterable[str], *, initializer_block: int = 0,
    sizes: Mapping[str, int] | None = None,
) -> list[SystemCall]:
    """Phase 4: the unwritten initializer block (``initializer_block`` bytes, 0 for none), then in
    the kernels' order each packed buffer (key, bytes, the weight packed) kept, an initializer
    every use of which was pre-packed (``released``) freed right after its last packing (only one
    above 127 bytes has a buffer of its own, by ``sizes``)."""
    calls: list[SystemCall] = []
    if initializer_block:
        calls.append(
            SystemCall(kind="malloc", key="initializer-block", size=initializer_block, align=_ALIGNED, touch=0)
        )
    known = sizes or {}
    gone = set(released)
    last = {weight: i for i, (_, _, weight) in enumerate(packed)}
    for i, (key, n, weight) in enumerate(packed):
        if n > 0:
            calls.append(SystemCall(kind="malloc", key=key, size=n, align=_ALIGNED))
        if (
            last[weight] == i
            and weight in gone
            and known.get(weight, SMALL_INITIALIZER_MAX + 1) > SMALL_INITIALIZER_MAX
        ):
            calls.append(SystemCall(kind="free", key=f"init:{weight}"))
    return calls


def region_calls(regions: Sequence[tuple[int, int]]) -> list[SystemCall]:
    """Phase 5: each arena region (size, bytes of its pages written) and its chunk handles."""
    calls: list[SystemCall] = []
    for i, (size, touched) in enumerate(regions):
        calls.append(SystemCall(kind="malloc", key=f"region:{i}", size=size, align=_ALIGNED, touch=touched))
        calls.append(SystemCall(kind="malloc", key=f"handles:{i}", size=size // 32))
    return calls


def replay(heap: Heap, calls: Iterable[SystemCall], blocks: dict[str, Block] | None = None) -> dict[str, Block]:
    """Make each call on ``heap`` (a ``free`` of a key never taken does nothing: a small
    initializer has no buffer of its own); ``blocks``: what earlier calls took, by key (updated
    and returned, so that phases replay one after another)."""
    blocks = {} if blocks is None else blocks
    for c in calls:
        if c.kind == "malloc":
            blocks[c.key] = heap.malloc(c.size, align=c.align, touch=c.touch)
        else:
            heap.free(blocks.pop(c.key, None))
    return blocks
