"""The C allocator under onnxruntime, replayed for large blocks: where glibc's ``malloc`` puts a
buffer (its heap or a mapping of its own), and which pages of the process are resident after it.

onnxruntime takes every buffer of a CPU session from the C library (``CPUAllocator``:
``posix_memalign``/``aligned_alloc`` with 64-byte alignment; protobuf and the STL: ``malloc``), so
the process's resident memory (``VmRSS``) follows glibc's rules (``malloc/malloc.c``, glibc 2.36),
of which this keeps those that move large blocks:

* a request of at least the mmap threshold gets a mapping of its own (``sysmalloc``: header plus
  size, rounded up to a page), returned to the system when freed (``munmap_chunk``); freeing such a
  mapping raises the threshold to its size when that is at most 32 MiB
  (``DEFAULT_MMAP_THRESHOLD_MAX``), and the trim threshold to twice that (``free``, the dynamic
  threshold);
* a smaller one comes from the heap: the smallest free hole that fits (the large bins' best fit,
  lowest address among equals), else the top of the heap, which grows; a free hole merges with free
  neighbours, and a free block at the top lowers the top; when the free top exceeds the trim
  threshold the heap shrinks to it plus ``top_pad`` (``systrim``) and those pages leave the process;
* an aligned request (``_int_memalign``) asks ``_int_malloc`` for the size plus the alignment plus
  ``MINSIZE`` (32) and returns the aligned part; the slivers before and after it go back to the
  small bins (:attr:`Heap.keep_slivers`: whether they stay apart, never merging with a neighbour
  freed later — they sit in the thread cache — or merge).

A page is resident once something wrote it and until it leaves the process: a mapping's pages
when written (a fresh mapping is zero pages, not resident until touched), the heap's pages from
the first write until a trim returns them; a hole keeps its pages resident (glibc does not give
back the inside of its heap). Like every planner here it knows nothing of ONNX.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from graphmem.errors import PlanInvariantError

__all__ = ["Heap", "Block", "MMAP_THRESHOLD", "MMAP_THRESHOLD_MAX", "PAGE"]

#: ``DEFAULT_MMAP_THRESHOLD_MIN`` / ``DEFAULT_MMAP_THRESHOLD_MAX`` (64-bit): the threshold starts at
#: 128 KiB and follows freed mappings up to 32 MiB.
MMAP_THRESHOLD = 128 << 10
MMAP_THRESHOLD_MAX = 32 << 20
#: ``DEFAULT_TOP_PAD``... glibc's ``M_TOP_PAD`` default: what a trim leaves above the top.
TOP_PAD = 128 << 10
PAGE = 4096
_SIZE_SZ = 8
_MINSIZE = 32
_ALIGN = 16


@dataclass(frozen=True, slots=True)
class Block:
    """A buffer the heap handed out: ``mapped`` (a mapping of its own) or in the heap at ``addr``
    (its user address), ``size`` the bytes asked for, ``span`` the chunk's ``(start, end)``."""

    ident: int
    size: int
    mapped: bool
    addr: int
    span: tuple[int, int]


class Heap:
    """glibc's main arena for large blocks (see the module doc).

    ``threshold``: the mmap threshold the process starts with (128 KiB in a process that never
    freed a mapping); ``base``: the heap's first address (its residue modulo 64 decides where an
    aligned request can sit); ``keep_slivers``: aligned requests' slivers stay apart (see module doc).
    """

    def __init__(self, *, threshold: int = MMAP_THRESHOLD, base: int = 1 << 32, page: int = PAGE,
                 keep_slivers: bool = True) -> None:
        self.threshold = threshold
        self.trim_threshold = 2 * threshold if threshold > MMAP_THRESHOLD else MMAP_THRESHOLD
        self.page = page
        self.keep_slivers = keep_slivers
        self._base = base
        self._top = base  # first byte of the top chunk
        self._end = base  # the program break: end of the heap
        self._holes: list[tuple[int, int]] = []  # (start, end) free, sorted, merged
        self._resident: list[tuple[int, int]] = []  # heap page ranges resident, sorted, merged
        self._blocks: dict[int, Block] = {}
        self._mapped_resident: dict[int, int] = {}  # mapping ident -> its resident bytes
        self._mapped_pages: dict[int, list[tuple[int, int]]] = {}  # mapping ident -> its resident pages
        self._next = 0
        self.heap_high = 0  # most heap bytes resident at once

    # --- the calls -------------------------------------------------------------------------
    def malloc(self, size: int, *, align: int = _ALIGN, touch: int | None = None) -> Block:
        """``malloc(size)`` (``align`` 16) or ``posix_memalign(align, size)``; ``touch``: the
        bytes written at once from its start (``size`` when None; 0 for a buffer written later,
        :meth:`write`)."""
        if size < 0 or align < _ALIGN or align & (align - 1):
            raise PlanInvariantError(f"bad request: {size} bytes aligned to {align}")
        nb = _request2size(size)
        ask = nb if align <= _ALIGN else nb + align + _MINSIZE
        ident = self._next
        self._next += 1
        if ask >= self.threshold:
            mapped = -(-(nb + _SIZE_SZ) // self.page) * self.page
            block = Block(ident, size, True, 0, (0, mapped))
            self._blocks[ident] = block
            self._mapped_resident[ident] = 0
        else:
            start = self._fit(ask)
            lead = 0
            if align > _ALIGN:
                lead = (-(start + 2 * _SIZE_SZ)) % align
                if 0 < lead < _MINSIZE:
                    lead += align
            chunk = (start + lead, start + lead + nb)
            self._take(start, start + ask, chunk)
            block = Block(ident, size, False, chunk[0] + 2 * _SIZE_SZ, chunk)
            self._blocks[ident] = block
        self.write(block, 0, size if touch is None else touch)
        return block

    def write(self, block: Block, lo: int, hi: int) -> None:
        """The program wrote bytes ``[lo, hi)`` of ``block``: their pages become resident."""
        hi = min(hi, block.size)
        if hi <= lo:
            return
        if block.mapped:
            pages = self._mapped_pages.setdefault(block.ident, [])
            _cover(pages, (_SIZE_SZ * 2 + lo) // self.page, -(-(_SIZE_SZ * 2 + hi) // self.page))
            self._mapped_resident[block.ident] = sum(b - a for a, b in pages) * self.page
        else:
            a, b = block.addr + lo, block.addr + hi
            _cover(self._resident, a // self.page * self.page, -(-b // self.page) * self.page)
            self.heap_high = max(self.heap_high, self.heap_resident)

    def free(self, block: Block | None) -> None:
        """``free``: a mapping goes back to the system (and may raise the thresholds); a heap
        block becomes a hole, merged with its free neighbours, the top trimmed when large."""
        if block is None:
            return
        if self._blocks.pop(block.ident, None) is None:
            raise PlanInvariantError(f"block {block.ident} freed twice")
        if block.mapped:
            self._mapped_resident.pop(block.ident, None)
            self._mapped_pages.pop(block.ident, None)
            size = block.span[1]
            if size > self.threshold and size <= MMAP_THRESHOLD_MAX:
                self.threshold = size
                self.trim_threshold = 2 * size
            return
        self._release(*block.span)

    # --- what is resident -------------------------------------------------------------------
    @property
    def heap_resident(self) -> int:
        return sum(b - a for a, b in self._resident)

    @property
    def mapped_resident(self) -> int:
        return sum(self._mapped_resident.values())

    @property
    def resident(self) -> int:
        """Bytes of this heap's pages and mappings resident now."""
        return self.heap_resident + self.mapped_resident

    @property
    def heap_size(self) -> int:
        """Bytes between the heap's base and its break."""
        return self._end - self._base

    # --- the heap itself ---------------------------------------------------------------------
    def _fit(self, ask: int) -> int:
        """Start of the smallest hole of at least ``ask`` bytes (lowest address among equals), or
        of the top (extended as needed)."""
        best = None
        for start, end in self._holes:
            if end - start >= ask and (best is None or end - start < best[1] - best[0]):
                best = (start, end)
        if best is not None:
            return best[0]
        if self._top + ask > self._end:
            self._end = -(-(self._top + ask + TOP_PAD) // self.page) * self.page
        return self._top

    def _take(self, start: int, end: int, chunk: tuple[int, int]) -> None:
        """Use ``[start, end)`` (a hole's head or the top's) for ``chunk``; the rest stays free,
        the slivers around an aligned chunk apart when :attr:`keep_slivers`."""
        if start == self._top:
            self._top = end
        else:
            i = bisect.bisect_left(self._holes, (start, start))
            hs, he = self._holes.pop(i)
            if he > end:
                bisect.insort(self._holes, (end, he))
        for lo, hi in ((start, chunk[0]), (chunk[1], end)):
            if hi > lo and not self.keep_slivers:
                self._release(lo, hi)

    def _release(self, lo: int, hi: int) -> None:
        i = bisect.bisect_left(self._holes, (lo, lo))
        if i > 0 and self._holes[i - 1][1] == lo:
            lo = self._holes.pop(i - 1)[0]
            i -= 1
        if i < len(self._holes) and self._holes[i][0] == hi:
            hi = self._holes.pop(i)[1]
        if hi >= self._top:
            self._top = lo
            if self._end - self._top > self.trim_threshold:
                new_end = max(self._base, -(-(self._top + TOP_PAD) // self.page) * self.page)
                self._end = new_end
                _cut(self._resident, new_end)
            return
        bisect.insort(self._holes, (lo, hi))


def _request2size(n: int) -> int:
    """glibc's ``request2size``: the chunk size for ``n`` user bytes."""
    return max(_MINSIZE, (n + _SIZE_SZ + _ALIGN - 1) & ~(_ALIGN - 1))


def _cover(spans: list[tuple[int, int]], lo: int, hi: int) -> None:
    """Add ``[lo, hi)`` to ``spans`` (sorted, disjoint, merged in place)."""
    if hi <= lo:
        return
    i = bisect.bisect_left(spans, (lo, lo))
    if i > 0 and spans[i - 1][1] >= lo:
        i -= 1
    j = i
    while j < len(spans) and spans[j][0] <= hi:
        lo, hi = min(lo, spans[j][0]), max(hi, spans[j][1])
        j += 1
    spans[i:j] = [(lo, hi)]


def _cut(spans: list[tuple[int, int]], end: int) -> None:
    """Drop everything at or above ``end`` from ``spans``."""
    while spans and spans[-1][0] >= end:
        spans.pop()
    if spans and spans[-1][1] > end:
        spans[-1] = (spans[-1][0], end)
