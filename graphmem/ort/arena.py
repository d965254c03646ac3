"""onnxruntime's CPU arena (``core/framework/bfc_arena.cc``, ``bfc_arena.h``), replayed: which
chunks a sequence of requests and releases occupies, which regions the arena takes from the
system allocator, and the statistics the profiler reports (``mem_bytes_in_use``,
``mem_in_use_peak``, ``mem_bytes_requested_in_use``, ``mem_arena_held``). Like every planner
here it knows nothing of ONNX.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from graphmem.errors import ArenaLimitError, PlanInvariantError

__all__ = ["BfcArena", "Chunk", "Reserved", "ArenaRegion", "NEXT_POWER_OF_TWO", "SAME_AS_REQUESTED"]

NEXT_POWER_OF_TWO = "kNextPowerOfTwo"
SAME_AS_REQUESTED = "kSameAsRequested"

_SIZE_MAX = (1 << 64) - 1
#: glibc's ``M_MMAP_THRESHOLD`` default: a larger malloc is served by mmap (each new mapping below
#: the previous one), a smaller one from the heap (rising addresses, below every mapping).
MMAP_THRESHOLD = 128 << 10
#: What ``posix_memalign(64, n)`` asks glibc's ``_int_malloc`` for beyond ``n`` (alignment + MINSIZE).
MALLOC_OVERHEAD = 64 + 32


class Chunk:
    """One contiguous piece of an arena region: used or free, linked to its neighbours."""

    __slots__ = ("ptr", "size", "prev", "next", "used", "requested", "region")

    def __init__(self, ptr: int, size: int, region: ArenaRegion) -> None:
        self.ptr, self.size, self.region = ptr, size, region
        self.prev: Chunk | None = None
        self.next: Chunk | None = None
        self.used = False
        self.requested = 0


@dataclass(frozen=True, slots=True)
class Reserved:
    """A buffer taken with ``BFCArena::Reserve``: straight from the system allocator, exactly
    ``size`` bytes, outside every region, yet counted in the arena's statistics."""

    ident: int
    size: int


@dataclass(frozen=True, slots=True)
class ArenaRegion:
    """One region (``AllocationRegion``): ``ident`` counts regions in the order they were made;
    ``request`` is the rounded request that made the arena extend."""

    ident: int
    base: int
    size: int
    request: int


class BfcArena:
    """onnxruntime's ``BFCArena`` with its configuration (``OrtArenaCfg``; the CPU provider's
    defaults when not given). Each rule cites ``core/framework/bfc_arena.cc`` unless said:

    * ``alloc``: a request is rounded up to 256 bytes (``RoundedBytes``); the search starts at its
      size's bin (bin *b* holds chunks of 256·2^b up to twice that, the last bin everything
      larger; ``BinNumForSize``) and takes, bin by bin, the first free chunk that fits in
      (size, address) order (``FindChunkPtr``, ``Bin::ChunkComparator``);
    * the chunk is split only when it is at least twice the rounded request or would waste
      ``max_dead_bytes_per_chunk`` (``SplitFreeChunkFromBin``); otherwise the whole chunk is used;
    * with no fit the arena extends (``Extend``) by a new region: kNextPowerOfTwo doubles
      ``curr_region_allocation_bytes_`` (from ``initial_chunk_size_bytes``) until it covers the
      request, takes a region of that size, and doubles it after a region of unchanged size, up
      to ``max_power_of_two_extend_bytes`` (1 GiB; ``OrtArenaCfg``, ``core/framework/allocator.h``;
      measured with a 4 MiB cap set through an environment arena);
      kSameAsRequested takes the rounded request; a request above ``max_mem`` minus what the
      arena holds fails (:class:`graphmem.errors.ArenaLimitError`);
    * ``free`` merges a chunk with its free neighbours of the same region (``Coalesce``);
    * ``reserve`` (``Reserve``) takes exactly the bytes from the system allocator, outside the
      regions, but counts them in ``in_use`` and ``held``; freeing returns them at once;
    * ``shrink`` (``Shrink``) returns every region without a used chunk (under kNextPowerOfTwo
      not the first region) and restarts growth at ``initial_growth_chunk_size_bytes``; no
      session option calls it on the CPU arena (``memory.enable_memory_arena_shrinkage`` is a
      run option), so the session figures never do.

    ``held`` is the profiler's ``mem_arena_held`` (``total_allocated_bytes``: regions plus
    reserved buffers); ``in_use``/``high`` are ``bytes_in_use``/``max_bytes_in_use`` (chunk
    sizes, reserved bytes included); ``requested`` sums the live requests' exact bytes.

    Region addresses only break ties between equal-sized free chunks of different regions, but
    they come from the C allocator: a process's first session gets its regions from mmap, each
    below the previous (``descending=True``, the default); later sessions of a long-lived process
    may get them from the heap, in rising order (``descending=False``). Of the corpus' points
    (light models, models/, exported corpus at batch 1 and 8, four levels) only tiny_bert at
    batch 8, graph-opt none and basic, depends on it: 6.03 MB first-session vs 4.98 MB.
    """

    MIN_ALLOC = 256  # kMinAllocationSize
    NUM_BINS = 21  # kNumBins
    MAX_DEAD = 128 << 20  # DEFAULT_MAX_DEAD_BYTES_PER_CHUNK

    def __init__(
        self,
        *,
        strategy: str = NEXT_POWER_OF_TWO,
        memory_limit: int = _SIZE_MAX,
        initial_region: int = 1 << 20,
        max_dead_bytes: int = 128 << 20,
        initial_growth: int = 2 << 20,
        max_power_of_two_extend: int = 1 << 30,
        descending: bool = True,
    ) -> None:
        if strategy not in (NEXT_POWER_OF_TWO, SAME_AS_REQUESTED):
            raise PlanInvariantError(f"unknown arena extend strategy {strategy!r}")
        self.strategy = strategy
        self.memory_limit = memory_limit
        self.max_dead = max_dead_bytes
        self.initial_growth = initial_growth
        self.max_extend = max_power_of_two_extend
        self._bins: list[list[tuple[int, int, Chunk]]] = [[] for _ in range(self.NUM_BINS)]
        self._curr = self.rounded(min(memory_limit, initial_region))
        self._descending = descending
        self._next_base = 1 << 60 if descending else 1 << 40
        self._next_heap = 1 << 30  # below every mmap'd region
        self._reserved: dict[int, Reserved] = {}
        self._next_ident = 0
        self.regions: list[ArenaRegion] = []
        # region ident -> the byte ranges (offsets in the region, merged) its chunks ever covered
        # with requested bytes: the pages a session writes, which become resident (``touched``)
        self._touched: dict[int, list[tuple[int, int]]] = {}
        self.in_use = 0
        self.high = 0
        self.held = 0
        self.requested = 0

    @classmethod
    def rounded(cls, n: int) -> int:
        return -(-n // cls.MIN_ALLOC) * cls.MIN_ALLOC

    @property
    def reserved_bytes(self) -> int:
        """Bytes held in reserved buffers (the part of ``held`` outside the regions)."""
        return sum(r.size for r in self._reserved.values())

    def touched(self, region: ArenaRegion, page: int = 4096) -> int:
        """Bytes of ``region``'s pages that a request ever covered (whole pages of ``page`` bytes,
        the region's first byte at a page start): what of it becomes resident once the session
        writes its tensors there. A region is fresh from the system allocator, so a page no
        request reached is never touched."""
        pages: set[int] = set()
        for lo, hi in self._touched.get(region.ident, ()):
            pages.update(range(lo // page, -(-hi // page)))
        return min(region.size, len(pages) * page)

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
        c.requested = nbytes
        _cover(self._touched.setdefault(c.region.ident, []), c.ptr - c.region.base, c.ptr - c.region.base + nbytes)
        self.in_use += c.size
        self.requested += nbytes
        self.high = max(self.high, self.in_use)
        return c

    def reserve(self, nbytes: int) -> Reserved | None:
        """``Reserve``: ``nbytes`` straight from the system allocator; None for zero bytes."""
        if nbytes <= 0:
            return None
        r = Reserved(self._next_ident, nbytes)
        self._next_ident += 1
        self._reserved[r.ident] = r
        self.in_use += nbytes
        self.requested += nbytes
        self.held += nbytes
        self.high = max(self.high, self.in_use)
        return r

    def free(self, c: Chunk | Reserved | None) -> None:
        if c is None:
            return
        if isinstance(c, Reserved):
            del self._reserved[c.ident]
            self.in_use -= c.size
            self.requested -= c.size
            self.held -= c.size
            return
        c.used = False
        self.in_use -= c.size
        self.requested -= c.requested
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

    def shrink(self) -> int:
        """``Shrink``: return the regions without a used chunk; the bytes returned."""
        returned = 0
        for region in list(self.regions):
            if self.strategy == NEXT_POWER_OF_TWO and region.ident == 0:
                continue  # consider_first_allocation_region_for_shrinkage_ is false
            entries = [e for b in self._bins for e in b if e[2].region is region]
            if len(entries) != 1 or entries[0][0] != region.size:
                continue  # a used chunk splits the region's free space
            self._remove(entries[0][2])
            self.regions.remove(region)
            self.held -= region.size
            returned += region.size
        self._curr = self.initial_growth
        return returned

    def _find(self, size: int) -> Chunk | None:
        for b in range(self._bin(size), self.NUM_BINS):
            entries = self._bins[b]
            i = bisect.bisect_left(entries, (size, -1))
            if i < len(entries):
                c = entries.pop(i)[2]
                if c.size >= 2 * size or c.size - size >= self.max_dead:
                    rest = Chunk(c.ptr + size, c.size - size, c.region)
                    rest.prev, rest.next = c, c.next
                    if c.next is not None:
                        c.next.prev = rest
                    c.next, c.size = rest, size
                    self._insert(rest)
                return c
        return None

    def _extend(self, size: int) -> None:
        available = (self.memory_limit - self.held) // self.MIN_ALLOC * self.MIN_ALLOC
        if size > available:
            raise ArenaLimitError(
                f"the arena's max_mem leaves {available} bytes, smaller than a request of {size} bytes"
            )
        if self.strategy == SAME_AS_REQUESTED:
            region = size
        else:
            grew = False
            while size > self._curr:
                self._curr *= 2
                grew = True
            region = min(self._curr, available)
            if not grew:
                self._curr = self._curr * 2 if self._curr < self.max_extend // 2 else self.max_extend
        if self._descending and region + MALLOC_OVERHEAD < MMAP_THRESHOLD:
            base = self._next_heap  # glibc serves it from the heap, rising
            self._next_heap += region + (1 << 20)
        elif self._descending:
            self._next_base -= region + (1 << 20)
            base = self._next_base
        else:
            base = self._next_base
            self._next_base += region + (1 << 20)
        r = ArenaRegion(len(self.regions), base, region, size)  # id: num_arena_extensions
        self.regions.append(r)
        self.held += region
        self._insert(Chunk(base, region, r))


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


def _absorb(left: Chunk, right: Chunk) -> None:
    """Merge ``right`` (the chunk just after ``left``) into ``left``."""
    left.size += right.size
    left.next = right.next
    if right.next is not None:
        right.next.prev = left
