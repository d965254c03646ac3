"""onnxruntime's CPU arena (``core/framework/bfc_arena.cc``), replayed: which chunks a sequence
of requests and releases occupies, so the in-use figure (requests rounded to 256-byte chunks,
free chunks split only when at least twice the request) matches the profiler's
``mem_bytes_in_use`` / ``mem_in_use_peak``. Like every planner here it knows nothing of ONNX.
"""

from __future__ import annotations

import bisect

from graphmem.errors import PlanInvariantError

__all__ = ["BfcArena", "Chunk"]


class Chunk:
    """One contiguous piece of an arena region: used or free, linked to its neighbours."""

    __slots__ = ("ptr", "size", "prev", "next", "used")

    def __init__(self, ptr: int, size: int) -> None:
        self.ptr, self.size = ptr, size
        self.prev: Chunk | None = None
        self.next: Chunk | None = None
        self.used = False


class BfcArena:
    """onnxruntime's ``BFCArena`` (``core/framework/bfc_arena.cc``) with the CPU EP's defaults,
    tracking only what the statistics see: chunk sizes in use and their high-water mark.

    * a request is rounded up to 256 bytes; the search starts at its size's bin (bin *b* holds
      chunks of 256·2^b up to twice that, the last bin everything larger) and takes, bin by bin,
      the first free chunk that fits in (size, address) order;
    * the chunk is split only when it is at least twice the rounded request (or would waste
      ``max_dead_bytes`` = 128 MiB); otherwise the whole chunk is in use;
    * with no fit the arena extends by a new region of ``curr`` bytes, ``curr`` starting at 1 MiB
      and doubling until it covers the request, then doubling after a region of unchanged size
      (kNextPowerOfTwo);
    * a freed chunk merges with free neighbours of its region.

    Region addresses only break ties between equal-sized free chunks of different regions, but
    they come from the C allocator: a process's first session gets its regions from mmap, each
    below the previous (``descending=True``, the default); later sessions of a long-lived process
    may get them from the heap, in rising order (``descending=False``). Of the corpus' points
    (light models, models/, exported corpus at batch 1 and 8, four levels) only tiny_bert at
    batch 8, graph-opt none and basic, depends on it: 6.03 MB first-session vs 4.98 MB.
    """

    MIN_ALLOC = 256
    NUM_BINS = 21
    MAX_DEAD = 128 << 20

    def __init__(self, *, initial_region: int = 1 << 20, descending: bool = True) -> None:
        self._bins: list[list[tuple[int, int, Chunk]]] = [[] for _ in range(self.NUM_BINS)]
        self._curr = initial_region
        self._descending = descending
        self._next_base = 1 << 60 if descending else 1 << 40
        self.in_use = 0
        self.high = 0
        self.held = 0

    @classmethod
    def rounded(cls, n: int) -> int:
        return -(-n // cls.MIN_ALLOC) * cls.MIN_ALLOC

    def _bin(self, size: int) -> int:
        v = max(size, self.MIN_ALLOC) >> 8
        return min(self.NUM_BINS - 1, v.bit_length() - 1)

    def _insert(self, c: Chunk) -> None:
        bisect.insort(self._bins[self._bin(c.size)], (c.size, c.ptr, c))

    def _remove(self, c: Chunk) -> None:
        b = self._bins[self._bin(c.size)]
        del b[bisect.bisect_left(b, (c.size, c.ptr))]

    def alloc(self, nbytes: int) -> Chunk | None:
        """Take a chunk for a request of ``nbytes``; None for a zero-byte request."""
        if nbytes <= 0:
            return None
        size = self.rounded(nbytes)
        c = self._find(size)
        if c is None:
            self._extend(size)
            c = self._find(size)
        if c is None:  # the new region is at least ``size``: cannot happen
            raise PlanInvariantError(f"arena emulation found no chunk for {size} bytes after extending")
        c.used = True
        self.in_use += c.size
        self.high = max(self.high, self.in_use)
        return c

    def free(self, c: Chunk | None) -> None:
        if c is None:
            return
        c.used = False
        self.in_use -= c.size
        nxt = c.next
        if nxt is not None and not nxt.used:
            self._remove(nxt)
            _absorb(c, nxt)
        prv = c.prev
        if prv is not None and not prv.used:
            self._remove(prv)
            _absorb(prv, c)
            c = prv
        self._insert(c)

    def _find(self, size: int) -> Chunk | None:
        for b in range(self._bin(size), self.NUM_BINS):
            entries = self._bins[b]
            i = bisect.bisect_left(entries, (size, -1))
            if i < len(entries):
                c = entries.pop(i)[2]
                if c.size >= 2 * size or c.size - size >= self.MAX_DEAD:
                    rest = Chunk(c.ptr + size, c.size - size)
                    rest.prev, rest.next = c, c.next
                    if c.next is not None:
                        c.next.prev = rest
                    c.next, c.size = rest, size
                    self._insert(rest)
                return c
        return None

    def _extend(self, size: int) -> None:
        grew = False
        while size > self._curr:
            self._curr *= 2
            grew = True
        region = self._curr
        if not grew:
            self._curr *= 2
        if self._descending:
            self._next_base -= region + (1 << 20)
            base = self._next_base
        else:
            base = self._next_base
            self._next_base += region + (1 << 20)
        self.held += region
        self._insert(Chunk(base, region))


def _absorb(left: Chunk, right: Chunk) -> None:
    """Merge ``right`` (the chunk just after ``left``) into ``left``."""
    left.size += right.size
    left.next = right.next
    if right.next is not None:
        right.next.prev = left
